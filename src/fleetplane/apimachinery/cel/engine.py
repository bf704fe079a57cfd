"""The CEL engine import, in one place.

The engine (common-expression-language, Rust cel crate bindings) is used by the CEL compiler and
library and, for RE2-only syntax, by the Go regex translation. ``_cel`` is None if it is missing.
"""

from __future__ import annotations

import logging

__all__ = ["_cel", "_cel_stdlib"]

try:  # the CEL engine: common-expression-language (Rust cel crate bindings)
    import cel as _cel
    from cel import stdlib as _cel_stdlib

    # The bindings log every failing Python callback at WARNING on the "cel" logger; without a
    # handler Python's last-resort handler would print each one to stderr. Failures are reported
    # as field errors instead, so keep that logger quiet unless the application configures it.
    logging.getLogger("cel").addHandler(logging.NullHandler())
except ImportError:  # pragma: no cover - the dependency is pinned in pyproject.toml
    # mypy's idiom for an optional import: the modules' names are None only without the engine
    _cel = None  # type: ignore[assignment]
    _cel_stdlib = None  # type: ignore[assignment]

"""A controller's settings as one dataclass, with the command-line flags derived from it.

Kopf keeps every setting of an operator in one settings object; kube components register their
flags from their options structs. Here a controller declares its options once, each field with
:func:`option` (default, help text, and how it looks on a command line), and both its own
``__main__`` and ``fleetplane start`` get their flags from it with :func:`add_arguments` and
read them back with :func:`from_args`: one definition, however many command lines.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = ["add_arguments", "from_args", "option", "split_list"]

T = TypeVar("T")


def option(default: Any, help: str, *, metavar: str | None = None, type: Callable[[str], Any] | None = None,
           flag: str | None = None, prefixed: bool = True) -> Any:
    """A dataclass field that is also a flag: ``--<prefix><flag>`` (``flag`` defaults to the field
    name with dashes; ``prefixed=False`` leaves the prefix off, for a flag shared by several
    controllers); ``type`` parses the flag's text (default: the type of ``default``)."""
    meta = {"help": help, "metavar": metavar, "type": type, "flag": flag, "prefixed": prefixed}
    if isinstance(default, (list, dict, set)):
        return dataclasses.field(default_factory=lambda: copy.copy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def split_list(text: str) -> tuple[str, ...] | None:
    """``"a, b,,c"`` -> ``("a", "b", "c")``; None when nothing is left (the default applies)."""
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    return items or None


def _flag_fields(cls: type, only: Iterable[str] | None) -> list[dataclasses.Field[Any]]:
    fields = [f for f in dataclasses.fields(cls) if "help" in f.metadata]
    if only is None:
        return fields
    wanted = set(only)
    unknown = wanted - {f.name for f in fields}
    if unknown:
        raise ValueError(f"{cls.__name__} has no flag fields {sorted(unknown)}")
    return [f for f in fields if f.name in wanted]


def _dest(prefix: str, f: dataclasses.Field[Any]) -> str:
    name = f.metadata.get("flag") or f.name.replace("_", "-")
    return (prefix if f.metadata.get("prefixed", True) else "") + name


def add_arguments(parser: argparse.ArgumentParser | Any, cls: type, *, prefix: str = "",
                  only: Iterable[str] | None = None) -> None:
    """Add a flag for each :func:`option` field of dataclass ``cls`` (or those named in ``only``)."""
    for f in _flag_fields(cls, only):
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        parse = f.metadata.get("type") or (type(default) if default is not None else str)
        kwargs: dict[str, Any] = {"default": default, "type": parse, "help": f.metadata["help"],
                                  "dest": _dest(prefix, f).replace("-", "_")}
        if isinstance(default, bool):  # --name and --no-name
            kwargs["action"] = argparse.BooleanOptionalAction
            del kwargs["type"]
        if f.metadata.get("metavar"):
            kwargs["metavar"] = f.metadata["metavar"]
        parser.add_argument("--" + _dest(prefix, f), **kwargs)


def from_args(cls: type[T], args: argparse.Namespace, *, prefix: str = "", only: Iterable[str] | None = None,
              **overrides: Any) -> T:
    """An instance of ``cls`` from the flags :func:`add_arguments` added (plus ``overrides``)."""
    values = {f.name: getattr(args, _dest(prefix, f).replace("-", "_")) for f in _flag_fields(cls, only)}
    return cls(**{**values, **overrides})

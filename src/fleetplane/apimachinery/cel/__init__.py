"""Compiling CEL expressions (``x-kubernetes-validations`` rules and message expressions).

Checks names against what kube declares, binds only the library functions an expression uses,
maps engine failures to cel-go's wording, and knows kube's property-name escaping and which parts
of ``self``/``oldSelf`` an expression reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .engine import _cel
from .library import _CEL_LIBRARY, _rewrite_size_calls

_CEL_NAMESPACES = frozenset(name.split(".", 1)[0] for name in _CEL_LIBRARY if "." in name) | {"optional"}
_CEL_LIBRARY_SHORT_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in _CEL_LIBRARY)
_CEL_BUILTIN_FUNCTIONS = frozenset(
    (
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "bool",
        "duration",
        "timestamp",
        "dyn",
        "type",
        "has",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
        "hasValue",
        "value",
        "orValue",
        "or",
        "of",
        "none",
        "ofNonZeroValue",
        "max",
        "min",
    )
)
_CEL_TYPE_IDENTS = frozenset(
    ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn", "google")
)
_RX_COMPREHENSION_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")


#: the variables of an ``x-kubernetes-validations`` rule
CRD_RULE_VARIABLES = frozenset(("self", "oldSelf"))


class _Program:
    """One compiled CEL expression plus what it needs at evaluation time.

    ``declared`` names the variables the expression may use (a CRD rule's ``self`` and
    ``oldSelf``; an admission policy's ``object``, ``request``, ...), ``bound`` the functions
    the caller binds at each evaluation (:meth:`run`'s ``functions``), beyond the library's."""

    __slots__ = ("source", "prog", "funcs", "uses_old_self", "error", "variables")

    def __init__(self, source: str, declared: frozenset[str] = CRD_RULE_VARIABLES,
                 bound: frozenset[str] = frozenset()) -> None:
        self.source = source
        self.variables: frozenset[str] = frozenset()
        self.prog: Any = None
        self.funcs: dict[str, Callable[..., Any]] | None = None
        self.uses_old_self = False
        self.error: str | None = None
        if _cel is None:  # pragma: no cover
            self.error = "CEL is not available: install common-expression-language"
            return
        try:
            prog = _cel.compile(_rewrite_size_calls(source))
        except Exception as e:  # noqa: BLE001 - parse errors come back as ValueError
            msg = str(e)
            m = re.match(r"Failed to parse expression '.*?': (ERROR: .*)", msg, re.S)
            self.error = m.group(1) if m else msg
            return
        variables = prog.variables()
        functions = prog.functions()
        comprehension_vars = set(_RX_COMPREHENSION_VAR.findall(source))
        for v in variables:
            if (
                v in declared
                or v in comprehension_vars
                or v in _CEL_NAMESPACES
                or v in _CEL_TYPE_IDENTS
            ):
                continue
            self.error = f"ERROR: <input>:1:1: undeclared reference to '{v}' (in container '')"
            return
        needed: dict[str, Callable[..., Any]] = {}
        for f in functions:
            fn = _CEL_LIBRARY.get(f)
            if fn is not None:
                needed[f] = fn
            elif f in bound:
                continue
            elif f[:1] in ("_", "@", "!", "-"):
                continue  # operators
            elif f not in _CEL_BUILTIN_FUNCTIONS and f not in _CEL_LIBRARY_SHORT_NAMES:
                self.error = f"ERROR: <input>:1:1: undeclared reference to '{f}' (in container '')"
                return
        for v in variables:
            if v in _CEL_NAMESPACES:
                prefix = v + "."
                needed.update({k: fn for k, fn in _CEL_LIBRARY.items() if k.startswith(prefix)})
        self.prog = prog
        self.funcs = needed or None
        self.uses_old_self = "oldSelf" in variables
        self.variables = frozenset(variables) & declared

    def execute(self, context: Any) -> Any:
        """Run in a ``cel.Context`` the caller built (and reuses: converting values into it is
        what costs, so one context serves every expression of one evaluation)."""
        return self.prog.execute(context)

    def run(self, variables: dict[str, Any], functions: dict[str, Callable[..., Any]] | None = None) -> Any:
        funcs = self.funcs if not functions else {**(self.funcs or {}), **functions}
        if funcs is None:
            return self.prog.execute(variables)
        return self.prog.execute(_cel.Context(variables, funcs))


@lru_cache(maxsize=8192)
def _compile_cel(source: str) -> _Program:
    """A compiled CRD validation rule (cached)."""
    return _Program(source, CRD_RULE_VARIABLES)


@lru_cache(maxsize=8192)
def compile_expression(source: str, declared: frozenset[str], bound: frozenset[str] = frozenset()) -> _Program:
    """A CEL expression over ``declared`` variables, calling the library and the ``bound``
    functions (cached; ``error`` says why it did not compile, in cel-go's words)."""
    return _Program(source, declared, bound)


def _cel_error_text(e: BaseException) -> tuple[str, bool]:
    """(message, is_overload) for a CEL runtime failure, in cel-go's wording."""
    if isinstance(e, KeyError):
        key = e.args[0] if e.args else ""
        return f"no such key: {key}", False
    msg = str(e)
    if isinstance(e, ZeroDivisionError):
        return ("modulus by zero" if "modulus" in msg else "division by zero"), False
    if isinstance(e, OverflowError):
        return "integer overflow", False
    if isinstance(e, IndexError):
        return msg or "index out of bounds", False
    if isinstance(e, TypeError):
        return "no such overload", True
    m = re.search(
        r"Python function call failed: \w+: (.*?)(?:\. Check function arguments and their types\.)?$",
        msg,
        re.S,
    )
    if m:
        return m.group(1), False
    m = re.match(
        r"Function '(\w+)' error: (.*?)(?:\. Check function arguments and their types\.)?$", msg, re.S
    )
    if m:
        return " ".join(f"{m.group(1)}: {m.group(2)}".split()), False
    m = re.match(r"Undefined variable or function: '([^']*)'", msg)
    if m:
        return f"no such overload: {m.group(1)}", True
    return " ".join(msg.split()) if msg else type(e).__name__, False


# ---------------------------------------------------------------------------------------------
# CEL property-name escaping and projections
# ---------------------------------------------------------------------------------------------


_CEL_RESERVED = frozenset(
    (
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    )
)
_RX_ESCAPABLE = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*\Z")
_RX_ESCAPE = re.compile(r"__|[./\-]")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape_cel_property(name: str) -> str | None:
    """The CEL identifier kube uses for an object property, or None if it cannot be accessed."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not _RX_ESCAPABLE.match(name):
        return None
    return _RX_ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], name)


_RX_DOT_IDENT = re.compile(r"\s*\.\s*([A-Za-z_]\w*)")
_RX_CALL = re.compile(r"\s*\(")


def _projection(source: str, var: str) -> dict[str, Any] | None:
    """The parts of ``var`` an expression reads (``None`` = the whole value).

    A conservative scan of ``var.a.b`` chains: anything other than plain field selection
    (indexing, method calls on the value, passing it to a function) needs the whole value.
    Used only to avoid converting fields the rule never looks at.
    """
    tree: dict[str, Any] = {}
    found = False
    for m in re.finditer(rf"(?<![\w.]){var}\b", source):
        found = True
        pos = m.end()
        chain: list[str] = []
        while True:
            mm = _RX_DOT_IDENT.match(source, pos)
            if not mm:
                break
            chain.append(mm.group(1))
            pos = mm.end()
        if chain and _RX_CALL.match(source, pos):
            chain.pop()
        if not chain:
            return None
        node = tree
        for i, name in enumerate(chain):
            if name in node and node[name] is None:
                break
            if i == len(chain) - 1:
                node[name] = None
            else:
                node = node.setdefault(name, {})
    return tree if found else {}

"""Kubernetes JSONPath (k8s.io/client-go/util/jsonpath) as CRD ``additionalPrinterColumns`` and
kubectl's custom columns use it: compile once, find every match, print a match as Go does.

Supports dotted fields (``\\.`` escapes), ``['quoted']`` keys, ``[0]``/``[-1]``/``[1:3]``/``[*]``/
``.*``, ``..`` recursive descent and ``[?(@.type=="Ready")]`` filters (``== != < <= > >=`` or
plain existence). A filter comparing values of different types fails the whole evaluation, as
kube's ``FindResults`` does: no matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import orjson

from .gofmt import sprint_float

__all__ = ["JSONPathError", "compile_jsonpath", "go_print"]


class JSONPathError(ValueError):
    pass


class _EvalError(Exception):
    """A comparison of incompatible types: kube's FindResults fails and the cell is null."""


Step = Callable[[list[Any]], list[Any]]


class _Field:
    """A field step; consecutive ones are merged into one walk (see :func:`_chain`)."""

    __slots__ = ("names",)

    def __init__(self, *names: str) -> None:
        self.names = names

    def __call__(self, values: list[Any]) -> list[Any]:
        names = self.names
        out: list[Any] = []
        for v in values:
            for n in names:
                if isinstance(v, dict) and n in v:
                    v = v[n]
                else:
                    break
            else:
                out.append(v)
        return out


def _field(name: str) -> Step:
    return _Field(name)


def _wildcard(values: list[Any]) -> list[Any]:
    """``.*``: the values of maps (kube's evalWildcard; ``[*]`` is the full slice of a list)."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, dict):
            out.extend(v.values())
    return out


def _descendants(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    stack = list(reversed(values))
    while stack:
        v = stack.pop()
        out.append(v)
        if isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def _index(indices: list[Any]) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if not isinstance(v, list):
                continue
            n = len(v)
            for item in indices:
                if isinstance(item, slice):
                    out.extend(v[item])
                else:
                    i = item + n if item < 0 else item
                    if 0 <= i < n:
                        out.append(v[i])
        return out
    return step


def _keys(names: list[str]) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if isinstance(v, dict):
                out.extend(v[n] for n in names if n in v)
        return out
    return step


def _compare(op: str, left: Any, right: Any) -> bool:
    lnum = isinstance(left, int | float) and not isinstance(left, bool)
    rnum = isinstance(right, int | float) and not isinstance(right, bool)
    if not ((lnum and rnum) or type(left) is type(right)):
        raise _EvalError(op)
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if isinstance(left, bool) or isinstance(left, dict | list) or left is None:
        raise _EvalError(op)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


_FILTER_OPS = ("==", "!=", "<=", ">=", "<", ">")


def _filter(expr: str) -> Step:
    expr = expr.strip()
    op_at, op = _find_operator(expr)
    if op is None:
        left = _relative(expr)

        def exists(values: list[Any]) -> list[Any]:
            out: list[Any] = []
            for v in values:
                for item in (v if isinstance(v, list) else ()):
                    if left([item]):
                        out.append(item)
            return out
        return exists
    left = _relative(expr[:op_at].strip())
    right_expr = expr[op_at + len(op):].strip()
    right = _operand(right_expr)
    names = _plain_names(expr[:op_at].strip())
    if names is not None and not right_expr.startswith("@"):
        # the common case, [?(@.type=="Ready")]: walk the fields directly
        literal = right([])[0]

        def fast(values: list[Any]) -> list[Any]:
            out: list[Any] = []
            for v in values:
                for item in (v if isinstance(v, list) else ()):
                    x = item
                    for n in names:
                        if isinstance(x, dict) and n in x:
                            x = x[n]
                        else:
                            break
                    else:
                        if (x == literal if op == "==" and type(x) is type(literal) else _compare(op, x, literal)):
                            out.append(item)
            return out
        return fast

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            for item in (v if isinstance(v, list) else ()):
                lefts = left([item])
                if not lefts:
                    continue
                rights = right([item])
                if not rights:
                    continue
                if _compare(op, lefts[0], rights[0]):
                    out.append(item)
        return out
    return step


def _plain_names(expr: str) -> tuple[str, ...] | None:
    """``@.a.b`` -> ("a", "b"); None for anything but plain fields."""
    if expr.startswith("@") and _PLAIN_PATH.fullmatch(expr[1:]):
        return tuple(expr[2:].split("."))
    return None


def _outside_quotes(s: str, start: int = 0) -> Iterator[int]:
    """The indices of ``s`` (from ``start``) outside '...' and "..." (which may escape with ``\\``)."""
    quote = ""
    i = start
    while i < len(s):
        ch = s[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            yield i
        i += 1


def _find_operator(expr: str) -> tuple[int, str | None]:
    for i in _outside_quotes(expr):
        for op in _FILTER_OPS:
            if expr.startswith(op, i):
                return i, op
    return -1, None


def _relative(expr: str) -> Step:
    if expr.startswith("@"):
        steps = _parse_steps(expr[1:])
        return _chain(steps)
    raise JSONPathError(f"unrecognized filter operand {expr!r}")


def _operand(expr: str) -> Step:
    if expr.startswith("@"):
        return _relative(expr)
    value: Any
    if len(expr) >= 2 and expr[0] == expr[-1] and expr[0] in "'\"":
        value = _unquote(expr)
    elif expr in ("true", "false"):
        value = expr == "true"
    else:
        try:
            value = int(expr)
        except ValueError:
            try:
                value = float(expr)
            except ValueError as exc:
                raise JSONPathError(f"unrecognized filter operand {expr!r}") from exc
    return lambda values: [value]


def _unquote(s: str) -> str:
    body = s[1:-1]
    return re.sub(r"\\(.)", r"\1", body) if "\\" in body else body


def _split_top(content: str, sep: str) -> list[str]:
    """``content`` split at each ``sep`` outside quotes, parentheses and brackets."""
    parts, depth, begin = [], 0, 0
    for i in _outside_quotes(content):
        ch = content[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(content[begin:i])
            begin = i + 1
    parts.append(content[begin:])
    return parts


def _bracket(content: str) -> Step:
    content = content.strip()
    if content == "*":
        return _index([slice(None)])
    if content.startswith("?(") and content.endswith(")"):
        return _filter(content[2:-1])
    parts = [p.strip() for p in _split_top(content, ",")]
    if all(len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"" for p in parts):
        return _keys([_unquote(p) for p in parts])
    indices: list[Any] = []
    for p in parts:
        try:
            if ":" in p:
                bounds = [int(b) if b.strip() else None for b in p.split(":")]
                if len(bounds) > 3:
                    raise ValueError
                if len(bounds) == 3 and bounds[2] == 0:
                    raise ValueError
                indices.append(slice(*bounds))
            else:
                indices.append(int(p))
        except ValueError as exc:
            raise JSONPathError(f"unrecognized array index {p!r}") from exc
    return _index(indices)


_NAME_END = ".[ \t\n,)"


def _read_name(s: str, i: int) -> tuple[str, int]:
    out: list[Any] = []
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            out.append(s[i + 1])
            i += 2
            continue
        if ch in _NAME_END:
            break
        out.append(ch)
        i += 1
    return "".join(out), i


def _matching_bracket(s: str, i: int) -> int:
    """Index of the ``]`` closing the ``[`` at ``i``, skipping quotes and nested brackets."""
    depth = 0
    for j in _outside_quotes(s, i):
        ch = s[j]
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0:
                return j
    raise JSONPathError(f"unclosed bracket in {s!r}")


def _parse_steps(s: str) -> list[Step]:
    steps: list[Step] = []
    i = 0
    s = s.strip()
    while i < len(s):
        ch = s[i]
        if s.startswith("..", i):
            steps.append(_descendants)
            i += 2
            if i < len(s) and s[i] == "[":
                continue
            if i < len(s) and s[i] == "*":
                steps.append(_wildcard)
                i += 1
                continue
            name, i = _read_name(s, i)
            if not name:
                raise JSONPathError(f"missing field name after '..' in {s!r}")
            steps.append(_field(name))
        elif ch == ".":
            i += 1
            if i < len(s) and s[i] == "*":
                steps.append(_wildcard)
                i += 1
                continue
            name, i = _read_name(s, i)
            if name:
                steps.append(_field(name))
        elif ch == "[":
            end = _matching_bracket(s, i)
            steps.append(_bracket(s[i + 1:end]))
            i = end + 1
        elif ch in " \t\n":
            i += 1
        else:
            name, i2 = _read_name(s, i)
            if not name:
                raise JSONPathError(f"unexpected {ch!r} in {s!r}")
            steps.append(_field(name))
            i = i2
    return steps


def _chain(steps: list[Step]) -> Step:
    merged: list[Step] = []
    for step in steps:
        if isinstance(step, _Field) and merged and isinstance(merged[-1], _Field):
            merged[-1] = _Field(*merged[-1].names, *step.names)
        else:
            merged.append(step)

    def run(values: list[Any]) -> list[Any]:
        for step in merged:
            if not values:
                return values
            values = step(values)
        return values
    return run


_PLAIN_PATH = re.compile(r"(\.[A-Za-z0-9_\-/]+)+")


@lru_cache(maxsize=1024)
def compile_jsonpath(expr: str) -> Callable[[Any], list[Any]]:
    """Compile a Kubernetes JSONPath (``{.spec.replicas}`` or ``.spec.replicas``) to a function
    returning all matches in an object, [] when none. Supports dotted fields (``\\.`` escapes),
    ``['quoted']`` keys, ``[0]``/``[-1]``/``[1:3]``/``[*]``/``.*``, ``..`` recursive descent and
    ``[?(@.type=="Ready")]`` filters (``== != < <= > >=`` or plain existence)."""
    s = expr.strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    if s.startswith("$"):
        s = s[1:]
    if _PLAIN_PATH.fullmatch(s):
        names = s[1:].split(".")

        def get(obj: Any) -> list[Any]:
            for n in names:
                if not isinstance(obj, dict) or n not in obj:
                    return []
                obj = obj[n]
            return [obj]
        return get
    run = _chain(_parse_steps(s))

    def find(obj: Any) -> list[Any]:
        try:
            return run([obj])
        except _EvalError:
            return []
    return find


# -- printing results (kube's jsonpath printer, as string columns show them) ----------------------


def _go_json(value: Any) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def go_print(value: Any) -> str | None:
    """How kube's jsonpath prints one value: strings as is, maps and lists as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return sprint_float(value)
    return _go_json(value)

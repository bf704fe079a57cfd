"""``meta.k8s.io/v1`` Table responses (``kubectl get`` human output), as kube-apiserver makes them.

* Built-in kinds use their ``ResourceType.printer`` (declared with the kind in
  :mod:`fleetplane.apis`, like kube's ``pkg/printers/internalversion/printers.go``). The
  server always prints the wide (``priority: 1``) columns too; kubectl hides them without
  ``-o wide``.
* Custom resources follow apiextensions-apiserver's ``tableconvertor``: ``Name`` and then one
  column per ``additionalPrinterColumns`` entry, evaluated with Kubernetes JSONPath (first
  match, missing -> ``null``), or ``Age`` when the CRD has none.
* Other kinds (CRDs among them) get the default table: ``Name`` and ``Created At``.

Rows carry the object as ``includeObject`` asks: ``Metadata`` (a PartialObjectMetadata with
the full metadata, the default), ``Object`` (the object itself) or ``None`` (no object).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

import orjson

from ..apis import known_type
from ..registry.definitions import OBJECT_META
from ..registry.printers import NAME, Clock, Column, Printer, meta, string
from ..registry.types import PrinterColumn, ResourceType

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("Metadata", "Object", "None")

# -- durations and timestamps ------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ~2-3 significant figures ("5s", "3m2s", "4h5m", "12d")."""
    ns = int(seconds * 1e9)
    secs = int(ns / 1e9)  # truncates toward zero, like int(d.Seconds())
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60 * 2:
        return f"{secs}s"
    minutes = ns // 60_000_000_000
    if minutes < 10:
        s = (ns // 1_000_000_000) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


_ZERO = object()


def _parse_time(value: Any) -> float | object | None:
    """An RFC 3339 timestamp as epoch seconds; ``_ZERO`` for Go's zero time; None if invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        return None
    if dt.year <= 1:
        return _ZERO
    return dt.timestamp()


class _Clock:
    """``time.Since`` for one table: parses each distinct timestamp once."""

    __slots__ = ("now", "_ages", "_dates")

    def __init__(self, now: float | None) -> None:
        self.now = time.time() if now is None else now
        self._ages: dict[Any, str] = {}
        self._dates: dict[Any, str] = {}

    def since(self, value: Any) -> str:
        """kube's translateTimestampSince: "<unknown>" for a missing or zero time."""
        got = self._ages.get(value)
        if got is None:
            t = _parse_time(value)
            got = "<unknown>" if t is None or t is _ZERO else human_duration(self.now - t)  # type: ignore[operator]
            self._ages[value] = got
        return got

    def epoch(self, value: Any) -> float | None:
        """An RFC 3339 timestamp as epoch seconds; None if missing, zero or invalid."""
        t = _parse_time(value)
        return None if t is None or t is _ZERO else t  # type: ignore[return-value]

    def elapsed(self, since: float) -> str:
        """The human duration from epoch seconds ``since`` to now."""
        return human_duration(self.now - since)

    def date_cell(self, value: Any) -> str:
        """A CRD ``date`` column: "<invalid>" when not a timestamp (metatable.ConvertToHumanReadableDateType)."""
        got = self._dates.get(value)
        if got is None:
            t = _parse_time(value)
            if t is None:
                got = "<invalid>"
            elif t is _ZERO:
                got = "<unknown>"
            else:
                got = human_duration(self.now - t)  # type: ignore[operator]
            self._dates[value] = got
        return got


def _rfc3339(value: Any) -> str:
    """The default table's ``Created At``: the timestamp in UTC RFC 3339, Go's zero time when unset."""
    t = _parse_time(value)
    if t is None or t is _ZERO:
        return "0001-01-01T00:00:00Z"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # type: ignore[arg-type]


# -- Kubernetes JSONPath -----------------------------------------------------------------------


class JSONPathError(ValueError):
    pass


class _EvalError(Exception):
    """A comparison of incompatible types: kube's FindResults fails and the cell is null."""


Step = Callable[[list], list]


class _Field:
    """A field step; consecutive ones are merged into one walk (see :func:`_chain`)."""

    __slots__ = ("names",)

    def __init__(self, *names: str) -> None:
        self.names = names

    def __call__(self, values: list) -> list:
        names = self.names
        out = []
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


def _wildcard(values: list) -> list:
    """``.*``: the values of maps (kube's evalWildcard; ``[*]`` is the full slice of a list)."""
    out: list = []
    for v in values:
        if isinstance(v, dict):
            out.extend(v.values())
    return out


def _descendants(values: list) -> list:
    out: list = []
    stack = list(reversed(values))
    while stack:
        v = stack.pop()
        out.append(v)
        if isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def _index(indices: list) -> Step:
    def step(values: list) -> list:
        out: list = []
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
    def step(values: list) -> list:
        out = []
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
        return left == right
    if op == "!=":
        return left != right
    if isinstance(left, bool) or isinstance(left, dict | list) or left is None:
        raise _EvalError(op)
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


_FILTER_OPS = ("==", "!=", "<=", ">=", "<", ">")


def _filter(expr: str) -> Step:
    expr = expr.strip()
    op_at, op = _find_operator(expr)
    if op is None:
        left = _relative(expr)

        def exists(values: list) -> list:
            out = []
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

        def fast(values: list) -> list:
            out = []
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

    def step(values: list) -> list:
        out = []
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


def _find_operator(expr: str) -> tuple[int, str | None]:
    quote = ""
    i = 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            for op in _FILTER_OPS:
                if expr.startswith(op, i):
                    return i, op
        i += 1
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
    parts, depth, quote, cur = [], 0, "", []
    i = 0
    while i < len(content):
        ch = content[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(content):
                cur.append(content[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch in "([":
            depth += 1
            cur.append(ch)
        elif ch in ")]":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
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
    indices: list = []
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
    out = []
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
    depth, quote = 0, ""
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
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0:
                return i
        i += 1
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

    def run(values: list) -> list:
        for step in merged:
            if not values:
                return values
            values = step(values)
        return values
    return run


_PLAIN_PATH = re.compile(r"(\.[A-Za-z0-9_\-/]+)+")


@lru_cache(maxsize=1024)
def compile_jsonpath(expr: str) -> Callable[[Any], list]:
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

        def get(obj: Any) -> list:
            for n in names:
                if not isinstance(obj, dict) or n not in obj:
                    return []
                obj = obj[n]
            return [obj]
        return get
    run = _chain(_parse_steps(s))

    def find(obj: Any) -> list:
        try:
            return run([obj])
        except _EvalError:
            return []
    return find


# -- Go-style printing of JSON values (the jsonpath printer of string columns) -------------------


def _go_float(f: float) -> str:
    """``fmt.Sprint(float64)``: strconv 'g', shortest digits, exponent form if it is < -4 or >= 6."""
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if str(f).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(f)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp = len(digits) + int(exponent) - 1
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{neg}0.{'0' * (-exp - 1)}{ds}"
    if len(ds) <= exp + 1:
        return neg + ds + "0" * (exp + 1 - len(ds))
    return f"{neg}{ds[:exp + 1]}.{ds[exp + 1:]}"


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
        return _go_float(value)
    return _go_json(value)


# -- helpers for printers --------------------------------------------------------------------------


def format_label_selector(selector: Any, empty: str = "<none>") -> str:
    """metav1.FormatLabelSelector: requirements sorted by key; ``empty`` when there are none."""
    if not isinstance(selector, dict):
        return empty
    reqs: list[tuple[str, str]] = []
    for k, v in (selector.get("matchLabels") or {}).items():
        reqs.append((k, f"{k}={v}"))
    for e in selector.get("matchExpressions") or []:
        if not isinstance(e, dict):
            continue
        key, op = string(e.get("key")), e.get("operator")
        values = sorted(str(x) for x in e.get("values") or [])
        if op == "In":
            reqs.append((key, f"{key} in ({','.join(values)})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({','.join(values)})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, "!" + key))
        else:
            return "<error>"
    if not reqs:
        return empty
    return ",".join(r for _, r in sorted(reqs, key=lambda r: r[0]))


def _default_cells(o: dict, clock: Clock) -> list:
    return [meta(o).get("name"), _rfc3339(meta(o).get("creationTimestamp"))]


DEFAULT_PRINTER = Printer((NAME, Column("Created At", "date", description=(OBJECT_META, "creationTimestamp"))),
                          _default_cells)

# -- custom resources ---------------------------------------------------------------------------

#: apiextensions' serveDefaultColumnsIfEmpty: a CRD version without printer columns shows Age
DEFAULT_CR_COLUMNS = (PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)


def _cr_cell(col_type: str, find: Callable[[Any], list]) -> Callable[[dict, Clock], Any]:
    """tableconvertor's cell: the first match, typed by the column (cellForJSONValue)."""
    def cell(o: dict, clock: Clock) -> Any:
        results = find(o)
        if not results:
            return None
        value = results[0]
        if value is None:
            return None
        if col_type == "string":
            return go_print(value)
        if isinstance(value, bool):
            return value if col_type == "boolean" else None
        if col_type == "integer":
            return value if isinstance(value, int) else int(value) if isinstance(value, float) else None
        if col_type == "number":
            return float(value) if isinstance(value, int | float) else None
        if col_type == "date":
            return clock.date_cell(value) if isinstance(value, str) else None
        return None
    return cell


@lru_cache(maxsize=512)
def _custom_printer(columns: tuple[PrinterColumn, ...], default_age: bool = False) -> Printer:
    cell_fns = [_cr_cell(c.type, compile_jsonpath(c.json_path)) for c in columns]
    defs = [Column(c.name, c.type, c.description, c.format, c.priority) for c in columns]
    if default_age:
        defs = [Column("Age", "date", (OBJECT_META, "creationTimestamp"))]

    def cells(o: dict, clock: Clock) -> list:
        return [meta(o).get("name"), *[fn(o, clock) for fn in cell_fns]]

    return Printer((NAME, *defs), cells)


def printer_for(rt: ResourceType) -> Printer:
    """The printer a type's tables use: its own. A cluster's built-in kind imported as a CRD
    (apps/v1 Deployment) prints like the built-in, so READY shows ready/desired as kube-apiserver does."""
    if rt.custom:
        builtin = known_type(rt.group, rt.kind)
        if builtin is not None and builtin.printer is not None:
            return builtin.printer
    if rt.printer_columns:
        return _custom_printer(tuple(rt.printer_columns))
    if rt.custom:
        return _custom_printer(DEFAULT_CR_COLUMNS, True)
    return rt.printer or DEFAULT_PRINTER


# -- the table -----------------------------------------------------------------------------------


def to_table(rt: ResourceType, objects: list[dict], *, include_object: str = "Metadata",
             list_metadata: dict | None = None, no_headers: bool = False, now: float | None = None) -> dict:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (one for a GET or a watch event).

    ``list_metadata`` is the list's metadata (``resourceVersion``, ``continue``,
    ``remainingItemCount``); without it a single object's resourceVersion is used, as kube
    does for a GET. ``no_headers`` leaves the column definitions empty (watch events after
    the first). ``now`` (epoch seconds) fixes the clock for ages.
    """
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f"includeObject must be one of {', '.join(INCLUDE_OBJECT_VALUES)}")
    printer = printer_for(rt)
    clock = _Clock(now)
    cells_fn = printer.cells
    conditions_fn = printer.conditions
    rows = []
    append = rows.append
    if include_object == "Metadata":
        for o in objects:
            row = {"cells": cells_fn(o, clock),
                   "object": {"kind": "PartialObjectMetadata", "apiVersion": TABLE_API_VERSION,
                              "metadata": o.get("metadata") or {}}}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    elif include_object == "Object":
        for o in objects:
            row = {"cells": cells_fn(o, clock), "object": o}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    else:
        for o in objects:
            row = {"cells": cells_fn(o, clock)}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    meta: dict = {}
    if list_metadata is not None:
        for k in ("resourceVersion", "continue", "remainingItemCount"):
            v = list_metadata.get(k)
            if v is not None and v != "":
                meta[k] = v
    elif len(objects) == 1:
        rv = (objects[0].get("metadata") or {}).get("resourceVersion")
        if rv:
            meta["resourceVersion"] = rv
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": meta,
        "columnDefinitions": [] if no_headers else printer.column_definitions(),
        "rows": rows,
    }

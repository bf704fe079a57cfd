"""The CEL environment of admission policies (kube's ``admission/plugin/cel``), on the hub's one
CEL compiler (``apimachinery.cel``).

An expression sees ``object``, ``oldObject``, ``request``, ``namespaceObject``, ``params`` (when
the policy has a ``paramKind``), ``variables`` and ``authorizer`` (not in message expressions).
``variables.<name>`` is evaluated lazily and once per evaluation, as kube's composition does:
the compiler turns it into a call that evaluates the variable's own program on first use, so a
variable that fails only matters to the expressions that read it. ``authorizer`` is kube's
authorizer library (``authorizer.group(g).resource(r).namespace(ns).name(n).check(verb)
.allowed()``, ``.path(p)``, ``.serviceAccount(ns, name)``, ``authorizer.requestResource``),
answered by the hub's authorizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...apimachinery.cel import _cel_error_text, _Program, _projection, compile_expression
from ...apimachinery.cel.engine import _cel
from ...apimachinery.cel.library import code_segments
from ..authorization.attributes import Attributes, Result
from ..user import UserInfo, service_account_user

OBJECT, OLD_OBJECT, PARAMS, REQUEST, NAMESPACE_OBJECT = "object", "oldObject", "params", "request", "namespaceObject"
AUTHORIZER, VARIABLES = "authorizer", "variables"
_BASE = frozenset((OBJECT, OLD_OBJECT, REQUEST, NAMESPACE_OBJECT, VARIABLES))
VARIABLE_FUNCTION = "__k_variable"
_AUTHZ_FUNCTIONS = ("group", "resource", "subresource", "namespace", "name", "path", "serviceAccount", "check",
                    "allowed", "reason", "errored", "error")
_BOUND = frozenset((VARIABLE_FUNCTION, *_AUTHZ_FUNCTIONS))
_RX_VARIABLE = re.compile(r"(?<![\w.])variables\s*(\.)\s*([A-Za-z_]\w*)")
_RX_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*\Z")
_CEL_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"))


def is_cel_identifier(name: str) -> bool:
    """kube's isCELIdentifier: a variable's name."""
    return bool(_RX_CEL_IDENT.match(name)) and name not in _CEL_RESERVED


def line_col(source: str, offset: int) -> tuple[int, int]:
    """1-based line and 0-based column of ``offset``, as cel-go locates an issue."""
    line = source.count("\n", 0, offset) + 1
    return line, offset - (source.rfind("\n", 0, offset) + 1)


def issue(source: str, offset: int, message: str) -> str:
    """One cel-go issue, rendered as ``Issues.String()`` does: location, message, snippet, caret."""
    line, col = line_col(source, offset)
    snippet = source.split("\n")[line - 1].replace("\t", " ")
    return f"ERROR: <input>:{line}:{col + 1}: {message}\n | {snippet}\n | {'.' * min(col, len(snippet))}^"


@dataclass(frozen=True)
class Compiled:
    """An expression compiled for one environment; ``error`` is kube's ``compilation failed: ...``.
    ``reads`` holds, per variable it uses, the part of the value it reads (None: all of it)."""

    source: str
    program: _Program | None
    error: str | None = None
    reads: dict[str, Any] = field(default_factory=dict)


def _rewrite_variables(source: str, known: tuple[str, ...]) -> tuple[str, str | None]:
    """``variables.x`` as a lazy call; an unknown name is cel-go's ``undefined field``."""
    if "variables" not in source:
        return source, None
    out: list[str] = []
    pos = 0
    for is_code, text in code_segments(source):
        if is_code:
            for m in _RX_VARIABLE.finditer(text):
                if m.group(2) not in known:
                    return source, issue(source, pos + m.start(1), f"undefined field '{m.group(2)}'")
            out.append(_RX_VARIABLE.sub(lambda m: f'{VARIABLE_FUNCTION}("{m.group(2)}")', text))
        else:
            out.append(text)
        pos += len(text)
    return "".join(out), None


def compile_admission(source: str, *, params: bool, authorizer: bool, variables: tuple[str, ...] = ()) -> Compiled:
    """Compile ``source`` in the admission environment (the variables named so far are known)."""
    rewritten, err = _rewrite_variables(source, variables)
    if err is not None:
        return Compiled(source, None, f"compilation failed: {err}")
    declared = _BASE | ({PARAMS} if params else frozenset()) | ({AUTHORIZER} if authorizer else frozenset())
    prog = compile_expression(rewritten, declared, _BOUND)
    if prog.error is not None:  # cel-go indents the snippet lines by one space
        return Compiled(source, None, "compilation failed: " + prog.error.replace("\n| ", "\n | "))
    reads = {v: _projection(rewritten, v) for v in prog.variables}
    if rewritten != source:
        reads[VARIABLES] = None
    return Compiled(source, prog, reads=reads)


class EvaluationError(Exception):
    """An expression failed at run time; the message is kube's ``expression '...' resulted in error: ...``."""


AuthorizeFn = Callable[[Attributes], Result]


def _merge_reads(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge_reads(out[k], v) if k in out else v
    return out


def _project(value: Any, reads: Any) -> Any:
    """Only the parts of ``value`` that are read (converting a value into CEL is what costs)."""
    if reads is None or not isinstance(value, dict):
        return value
    return {k: _project(value[k], sub) for k, sub in reads.items() if k in value}


class Environment:
    """What a set of expressions (one policy's) needs at evaluation: the variables they read and
    how much of each, the library functions they call, whether they use the authorizer."""

    def __init__(self, expressions: list[Compiled]) -> None:
        self.reads: dict[str, Any] = {}
        self.library: dict[str, Callable[..., Any]] = {}
        for c in expressions:
            if c.program is None:
                continue
            for var, reads in c.reads.items():
                self.reads[var] = _merge_reads(self.reads[var], reads) if var in self.reads else reads
            self.library.update(c.program.funcs or {})
        self.authorizer = AUTHORIZER in self.reads
        self.variables = VARIABLES in self.reads


@dataclass
class Activation:
    """The values one evaluation sees, in one CEL context shared by its expressions, with the
    lazily evaluated variables and the authorizer."""

    values: dict[str, Any]
    variable_programs: dict[str, Compiled] = field(default_factory=dict)
    authorize: AuthorizeFn | None = None
    user: UserInfo | None = None
    cluster: str = ""
    environment: Environment | None = None
    _memo: dict[str, Any] = field(default_factory=dict)
    _failed: list[str] = field(default_factory=list)
    _context: Any = None
    _decisions: dict[Attributes, Result] = field(default_factory=dict)

    def context(self) -> Any:
        if self._context is None:
            env = self.environment or Environment([*self.variable_programs.values()])
            functions: dict[str, Callable[..., Any]] = dict(env.library)
            if self.environment is None or env.variables:
                functions[VARIABLE_FUNCTION] = self._variable
            if self.environment is None or env.authorizer:
                functions.update(self._authorizer_functions())
            if self.environment is None:
                values = self.values
            else:
                values = {k: _project(v, env.reads[k]) for k, v in self.values.items() if k in env.reads}
            self._context = _cel.Context(values, functions)
        return self._context

    def _variable(self, name: str) -> Any:
        if name in self._memo:
            return self._memo[name]
        compiled = self.variable_programs.get(name)
        if compiled is None or compiled.program is None:
            msg = (compiled.error if compiled is not None else None) or f"undefined variable '{name}'"
            self._failed.append(msg)
            raise ValueError(msg)
        try:
            value = compiled.program.execute(self.context())
        except Exception as exc:  # noqa: BLE001 - reported as the reading expression's error
            msg = self._failed[-1] if self._failed else _cel_error_text(exc)[0]
            self._failed.append(msg)
            raise ValueError(msg) from None
        self._memo[name] = value
        return value

    def evaluate(self, compiled: Compiled) -> Any:
        """The expression's value; ``EvaluationError`` with kube's message if it fails."""
        if compiled.program is None:
            raise EvaluationError(f"compilation error: {compiled.error}")
        self._failed.clear()
        try:
            return compiled.program.execute(self.context())
        except Exception as exc:  # noqa: BLE001 - every engine failure is an evaluation error
            detail = self._failed[0] if self._failed else _cel_error_text(exc)[0]
            raise EvaluationError(f"expression '{compiled.source}' resulted in error: {detail}") from None

    # -- kube's authorizer library (k8s.io/apiserver/pkg/cel/library/authz.go) ----------------

    def _authorizer_functions(self) -> dict[str, Callable[..., Any]]:
        def with_field(key: str) -> Callable[[dict[str, Any], str], dict[str, Any]]:
            return lambda target, value: {**target, key: value}

        return {
            "group": with_field("group"), "resource": with_field("resource"),
            "subresource": with_field("subresource"), "namespace": with_field("namespace"),
            "name": with_field("name"), "path": with_field("path"),
            "serviceAccount": lambda target, ns, name: {**target, "serviceAccount": [ns, name]},
            "check": self._check,
            "allowed": lambda d: bool(d.get("allowed")), "reason": lambda d: str(d.get("reason", "")),
            "errored": lambda d: bool(d.get("error")), "error": lambda d: str(d.get("error", "")),
        }

    def _check(self, target: dict[str, Any], verb: str) -> dict[str, Any]:
        if self.authorize is None or self.user is None:
            return {"allowed": False, "reason": "", "error": "no authorizer"}
        user = self.user
        if "serviceAccount" in target:  # authorizer.serviceAccount(ns, name)
            user = service_account_user(*target["serviceAccount"]).with_authenticated_group()
        if "path" in target:
            attrs = Attributes(user, verb, self.cluster, resource_request=False, path=target["path"])
        else:
            attrs = Attributes(user, verb, self.cluster, group=target.get("group", ""),
                               resource=target.get("resource", ""), subresource=target.get("subresource", ""),
                               namespace=target.get("namespace", ""), name=target.get("name", ""),
                               version=target.get("version", ""))
        result = self._decisions.get(attrs)
        if result is None:  # kube's caching authorizer: one decision per attributes and request
            result = self._decisions[attrs] = self.authorize(attrs)
        return {"allowed": result.allowed, "reason": result.reason, "error": ""}


def authorizer_value(req_group: str, req_version: str, resource: str, subresource: str, namespace: str,
                     name: str) -> dict[str, Any]:
    """``authorizer``, with ``authorizer.requestResource`` (the request's own resource)."""
    return {"requestResource": {"group": req_group, "version": req_version, "resource": resource,
                                "subresource": subresource, "namespace": namespace, "name": name}}

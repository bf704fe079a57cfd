"""What a simulated container says: ``pods/log``, ``pods/exec``, ``pods/attach`` and
``pods/portforward``, served the way KWOK serves them, with scripted answers instead of processes.

- log: a few synthetic lines per container (its start, its image, its readiness), honouring
  ``container``, ``tailLines``, ``timestamps``, ``limitBytes`` and ``follow`` (which then stays open
  until the client hangs up);
- exec: a small scripted shell: ``echo``, ``hostname``, ``env``/``printenv``, ``cat`` (stdin back),
  ``true``, ``false``, ``exit N``, ``sleep`` and ``sh -c '<one of those>'``; anything else is
  "command not found" with exit code 127;
- attach: the container's log lines on stdout, then (with stdin) what it is sent, until the client
  closes;
- portforward: each forwarded port is an echo server.

The kube wording of the refusals is kept (``container X is not valid for pod Y``, ``a container
name must be specified``...). The server side (the WebSocket channel protocols) is
``server/streaming.py``; this module only knows the Pod.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from ..apimachinery import errors as e
from .util import now

STDIN, STDOUT, STDERR = 0, 1, 2
#: what a connection runs once the client has upgraded: (channels) -> exit code or None
Session = Callable[[Any], Awaitable["int | None"]]


def _param(options: Mapping[str, list[str]], name: str, default: str = "") -> str:
    values = options.get(name)
    return values[-1] if values else default


def _flag(options: Mapping[str, list[str]], name: str) -> bool:
    return _param(options, name).lower() in ("true", "1", "t")


def _container(pod: dict[str, Any], options: Mapping[str, list[str]]) -> dict[str, Any]:
    """The container a request names (or the only one), as kube's kubelet client picks it."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    names = [c.get("name") for c in containers]
    wanted = _param(options, "container")
    if not wanted:
        if len(spec.get("containers") or []) != 1:
            raise e.bad_request(f'a container name must be specified for pod {meta["name"]}, '
                                f'choose one of: [{" ".join(str(c.get("name")) for c in spec.get("containers") or [])}]')
        wanted = str(names[0])
    for c in containers:
        if c.get("name") == wanted:
            status = next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == wanted), None)
            waiting = ((status or {}).get("state") or {}).get("waiting")
            if status is None or waiting is not None:
                reason = (waiting or {}).get("reason") or "ContainerCreating"
                raise e.bad_request(f'container "{wanted}" in pod "{meta["name"]}" is waiting to start: {reason}')
            return c
    raise e.bad_request(f'container {wanted} is not valid for pod {meta["name"]}')


def _log_lines(pod: dict[str, Any], c: dict[str, Any]) -> list[tuple[str, str]]:
    status: dict[str, Any] = next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == c.get("name")), {})
    started = ((status.get("state") or {}).get("running") or {}).get("startedAt") or now()
    meta = pod["metadata"]
    return [(started, f'fleetplane-sim: container {c.get("name")} of pod {meta["namespace"]}/{meta["name"]} started'),
            (started, f'fleetplane-sim: image {c.get("image")}'),
            (started, f'fleetplane-sim: listening on {(pod.get("status") or {}).get("podIP") or "0.0.0.0"}'),
            (started, "fleetplane-sim: ready")]


class PodLogs:
    """``GET pods/<name>/log``."""

    async def stream(self, ctx: Any, pod: dict[str, Any], options: Mapping[str, list[str]]) -> AsyncIterator[bytes]:
        c = _container(pod, options)
        if _flag(options, "previous"):
            raise e.bad_request(f'previous terminated container "{c.get("name")}" in pod "{pod["metadata"]["name"]}" not found')
        lines = _log_lines(pod, c)
        tail = _param(options, "tailLines")
        if tail:
            try:
                lines = lines[-int(tail):] if int(tail) > 0 else []
            except ValueError:
                raise e.bad_request(f'invalid value for tailLines: "{tail}"') from None
        stamps = _flag(options, "timestamps")
        text = "".join((f"{at.replace('Z', '.000000000Z')} " if stamps else "") + line + "\n" for at, line in lines).encode()
        limit = _param(options, "limitBytes")
        if limit.isdigit():
            text = text[: int(limit)]
        yield text
        if _flag(options, "follow"):
            await asyncio.Event().wait()  # nothing more is ever written; the client hangs up


def _script(argv: list[str], pod: dict[str, Any], c: dict[str, Any]) -> tuple[str, str, int] | None:
    """(stdout, stderr, exit code) of a scripted command; None for ``cat`` (which echoes stdin)."""
    if not argv:
        return "", "fleetplane-sim: no command\n", 126
    name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    if name in ("sh", "bash", "ash") and len(args) >= 2 and args[0] == "-c":
        try:
            return _script(shlex.split(args[1]), pod, c)
        except ValueError as exc:
            return "", f"{name}: syntax error: {exc}\n", 2
    if name == "echo":
        return " ".join(args) + "\n", "", 0
    if name == "hostname":
        return pod["metadata"]["name"] + "\n", "", 0
    if name in ("env", "printenv"):
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": pod["metadata"]["name"]}
        env |= {str(v.get("name")): str(v.get("value", "")) for v in c.get("env") or [] if "value" in v}
        if name == "printenv" and args:
            found = [env[a] for a in args if a in env]
            return "".join(f"{v}\n" for v in found), "", 0 if len(found) == len(args) else 1
        return "".join(f"{k}={v}\n" for k, v in env.items()), "", 0
    if name == "true" or name == "sleep":
        return "", "", 0
    if name == "false":
        return "", "", 1
    if name == "exit":
        return "", "", int(args[0]) if args and args[0].isdigit() else 0
    if name == "cat" and not args:
        return None
    return "", f"fleetplane-sim: {name}: command not found\n", 127


async def _echo_stdin(channels: Any) -> int:
    """What the client writes on stdin, back on stdout, until it closes stdin or hangs up."""
    while (frame := await channels.read()) is not None:
        channel, data = frame
        if channel == STDIN and not data:
            break
        if channel == STDIN:
            await channels.write(STDOUT, data)
    return 0


class PodExec:
    """``pods/<name>/exec``: one scripted command per connection."""

    async def connect(self, ctx: Any, pod: dict[str, Any], options: Mapping[str, list[str]]) -> Session:
        c = _container(pod, options)
        result = _script(list(options.get("command") or []), pod, c)
        if result is None:  # cat: stdin back on stdout until the client closes stdin
            return _echo_stdin
        out, err, code = result

        async def run(channels: Any) -> int:
            if out and _flag(options, "stdout"):
                await channels.write(STDOUT, out.encode())
            if err and _flag(options, "stderr"):
                await channels.write(STDERR, err.encode())
            return code

        return run


class PodAttach:
    """``pods/<name>/attach``: the container's output so far, then its stdin echoed until the end."""

    async def connect(self, ctx: Any, pod: dict[str, Any], options: Mapping[str, list[str]]) -> Session:
        output = "".join(line + "\n" for _, line in _log_lines(pod, _container(pod, options))).encode()

        async def run(channels: Any) -> int:
            if _flag(options, "stdout"):
                await channels.write(STDOUT, output)
            return await _echo_stdin(channels)

        return run


class PodPortForward:
    """``pods/<name>/portforward``: each port an echo server (kube's v4 WebSocket framing: per port a
    data and an error channel, each opened by the port number, two bytes little-endian)."""

    async def connect(self, ctx: Any, pod: dict[str, Any], options: Mapping[str, list[str]]) -> Session:
        ports: list[int] = []
        for value in options.get("ports") or []:
            for p in value.split(","):
                if not p.strip().isdigit() or not 0 < int(p) < 65536:
                    raise e.bad_request(f'unable to parse "{p}" as a port: must be between 1 and 65535')
                ports.append(int(p))
        if not ports:
            raise e.bad_request("query parameter \"port\" is required")

        async def run(channels: Any) -> None:
            for i, port in enumerate(ports):
                for channel in (2 * i, 2 * i + 1):
                    await channels.write(channel, port.to_bytes(2, "little"))
            while (frame := await channels.read()) is not None:
                channel, data = frame
                if channel % 2 == 0 and channel // 2 < len(ports) and data:
                    await channels.write(channel, data)

        return run


def add_pod_streams(pod_type: Any) -> None:
    """Serve the streams on the simulated cluster's Pod type."""
    streams = {"log": PodLogs(), "exec": PodExec(), "attach": PodAttach(), "portforward": PodPortForward()}
    pod_type.subresources = (*pod_type.subresources, *streams)
    pod_type.subresource_rest.update(streams)

"""ValidatingAdmissionPolicy on the write path: what one policy costs a create.

Two measures, each beside its baseline from the same run:

- over HTTPS: sequential ConfigMap creates (one client, so the latency is the request's own) in a
  logical cluster with one policy and binding matching them (params from a ConfigMap, a variable,
  two validations, a match condition) and in one without, alternating rounds on one hub;
- in process: the admission plugin's own time for the same request (matching, params, CEL),
  one policy against none, which is what the policy adds to a write.

kube's guidance is that a policy adds well under a millisecond.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import orjson

from .hub import HubProcess, payload, percentiles

WITH, WITHOUT = "bench-policy", "bench-nopolicy"

POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "bench"},
    "spec": {
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
        "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels)"}],
        "variables": [{"name": "size", "expression": "size(object.data)"}],
        "validations": [
            {"expression": "variables.size <= int(params.data.maxKeys)", "messageExpression": "'too many keys'"},
            {"expression": "object.metadata.labels.bench == 'yes'"},
        ],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "bench"},
    "spec": {"policyName": "bench", "validationActions": ["Deny"],
             "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}},
}
LIMITS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"}, "data": {"maxKeys": "10"}}


async def _setup(hub: HubProcess) -> None:
    async with hub.session() as s:
        for path, body in ((f"/clusters/{WITH}/api/v1/namespaces/default/configmaps", LIMITS),
                           (f"/clusters/{WITH}/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", POLICY),
                           (f"/clusters/{WITH}/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", BINDING),
                           (f"/clusters/{WITHOUT}/api/v1/namespaces/default/configmaps", LIMITS)):
            async with s.post(hub.url + path, data=orjson.dumps(body)) as r:
                assert r.status == 201, await r.text()


CPU_BLOCK = 250


def _cpu_seconds(hub: HubProcess) -> float:
    """The hub process's user and system CPU time (``/proc/<pid>/stat``)."""
    with open(f"/proc/{hub.proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def over_http(n: int) -> dict[str, Any]:
    """``n`` pairs of sequential creates, one in each logical cluster, the pair's order alternating:
    the load of a shared machine drifts more than a policy costs, and a pair sees the same load."""
    hub = HubProcess("--no-cluster-controller", "--no-splitter")
    lat: dict[str, list[float]] = {WITH: [], WITHOUT: []}
    try:
        await _setup(hub)
        async with hub.session(limit=1) as s:

            async def create(cluster: str, i: int) -> float:
                body = orjson.dumps(payload(i))
                t0 = time.perf_counter()
                async with s.post(f"{hub.url}/clusters/{cluster}/api/v1/namespaces/default/configmaps", data=body) as r:
                    assert r.status == 201, await r.text()
                    await r.read()
                return time.perf_counter() - t0

            for i in range(-50, n):  # the first 50 pairs warm both paths (compiled policy, connection)
                for cluster in ((WITH, WITHOUT) if i % 2 == 0 else (WITHOUT, WITH)):
                    t = await create(cluster, i + 50)
                    if i >= 0:
                        lat[cluster].append(t)
            # the hub's own CPU per create, in blocks: what load on the machine does not stretch
            cpu: dict[str, float] = {WITH: 0.0, WITHOUT: 0.0}
            for block in range(8):
                for cluster in ((WITH, WITHOUT) if block % 2 == 0 else (WITHOUT, WITH)):
                    before = _cpu_seconds(hub)
                    for i in range(CPU_BLOCK):
                        await create(cluster, 1_000_000 + block * CPU_BLOCK + i)
                    cpu[cluster] += _cpu_seconds(hub) - before
    finally:
        hub.stop()
    with_p, without_p = percentiles(lat[WITH]), percentiles(lat[WITHOUT])  # seconds in, milliseconds out
    diffs = [(a - b) * 1000 for a, b in zip(lat[WITH], lat[WITHOUT], strict=True)]
    per_create = {k: v / (8 * CPU_BLOCK) * 1000 for k, v in cpu.items()}
    return {"creates_each": n, "with_ms": with_p, "without_ms": without_p,
            "cpu_ms_with": round(per_create[WITH], 3), "cpu_ms_without": round(per_create[WITHOUT], 3),
            "cpu_added_ms": round(per_create[WITH] - per_create[WITHOUT], 3),
            "added_p50_ms": round(statistics.median(diffs), 3),
            "ratio_p50": round(with_p["p50"] / without_p["p50"], 3) if without_p["p50"] else None}


async def in_process(n: int) -> dict[str, Any]:
    """The plugin's own time per request, one policy and none, over an in-memory source."""
    from fleetplane.apis.admissionregistration.policies import default_binding, default_policy
    from fleetplane.apis.core import resource_types as core_types
    from fleetplane.pipeline.admission.chain import CREATE, Request
    from fleetplane.pipeline.admission.policies import ServedType, ValidatingAdmissionPolicyPlugin
    from fleetplane.pipeline.admission.policies_source import MemorySource
    from fleetplane.pipeline.authorization.attributes import Decision, Result
    from fleetplane.pipeline.user import UserInfo

    policy, binding = orjson.loads(orjson.dumps(POLICY)), orjson.loads(orjson.dumps(BINDING))
    default_policy(policy)
    default_binding(binding)
    configmaps = next(rt for rt in core_types() if rt.plural == "configmaps")
    served = ServedType("", "v1", "ConfigMap", "configmaps", True)
    limits = {**LIMITS, "metadata": {"name": "limits", "namespace": "default"}}

    user = UserInfo("bench", groups=("system:authenticated",))

    async def measure(with_policy: bool) -> list[float]:
        source = MemorySource([policy], [binding], [limits], [served]) if with_policy else MemorySource([], [])
        plugin = ValidatingAdmissionPolicyPlugin(source, lambda attrs: Result(Decision.ALLOW))
        out = []
        for i in range(n):
            req = Request(CREATE, configmaps, "root", "default", f"cm-{i}", payload(i), user=user)
            t0 = time.perf_counter()
            await plugin.validate(req)
            out.append(time.perf_counter() - t0)
        return out

    await measure(True)  # compile once
    with_ms = [x * 1000 for x in await measure(True)]  # percentiles() scales by 1000: milliseconds in, µs out
    without_ms = [x * 1000 for x in await measure(False)]
    return {"requests": n, "with_us": percentiles(with_ms), "without_us": percentiles(without_ms),
            "added_p50_us": round((statistics.median(with_ms) - statistics.median(without_ms)) * 1000, 1)}


async def run(quick: bool = False) -> dict[str, Any]:
    return {"http": await over_http(300 if quick else 1200),
            "in_process": await in_process(2000 if quick else 20000)}


def render(r: dict[str, Any]) -> list[str]:
    h, p = r["http"], r["in_process"]
    return [
        "## ValidatingAdmissionPolicy on the write path", "",
        f"One policy (ConfigMap params, a match condition, a variable, two validations) and its binding matching"
        f" every ConfigMap create, against a logical cluster without one, same hub: {h['creates_each']} pairs of"
        f" sequential creates over HTTPS, one in each, the order alternating; and the admission plugin's own time per"
        f" request in process ({p['requests']} requests). kube's guidance: well under a millisecond added.", "",
        "| measure | with the policy | without | added | ratio |", "|---|---|---|---|---|",
        f"| create latency p50 / p99 over HTTPS (ms) | {h['with_ms']['p50']:.2f} / {h['with_ms']['p99']:.2f} |"
        f" {h['without_ms']['p50']:.2f} / {h['without_ms']['p99']:.2f} | {h['added_p50_ms']:.3f} ms (median of pairs) |"
        f" {h['ratio_p50']} |",
        f"| the hub's CPU per create over HTTPS (ms; {8 * CPU_BLOCK} creates each, in blocks) | {h['cpu_ms_with']:.3f} |"
        f" {h['cpu_ms_without']:.3f} | {h['cpu_added_ms']:.3f} ms |"
        f" {round(h['cpu_ms_with'] / h['cpu_ms_without'], 3) if h['cpu_ms_without'] else 'n/a'} |",
        f"| admission plugin per request p50 / p99 (µs) | {p['with_us']['p50']:.1f} / {p['with_us']['p99']:.1f} |"
        f" {p['without_us']['p50']:.1f} / {p['without_us']['p99']:.1f} | {p['added_p50_us']:.1f} µs at p50 | |",
    ]

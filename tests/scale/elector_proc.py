"""A controller process for the leader-election tests: it elects itself with a Lease on the
hub and, while leading, marks work items (ConfigMaps) done and ticks a log.

python -m tests.scale.elector_proc KUBECONFIG IDENTITY NAMESPACE LOGFILE
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from fleetplane.kube.leaderelection import LeaderElectionConfig, LeaderElector


async def main(kubeconfig: str, identity: str, namespace: str, logfile: str) -> None:
    out = open(logfile, "a", buffering=1)  # noqa: SIM115, ASYNC230 - one write() per line: survives kill -9

    def log(*words: object) -> None:
        out.write(" ".join(str(w) for w in (time.time(), identity, *words)) + "\n")

    cfg = client.Configuration()
    await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        core = client.CoreV1Api(api)
        elector = LeaderElector(api, LeaderElectionConfig("test-controller", namespace=namespace, identity=identity,
                                                          lease_duration=2.0, renew_deadline=1.5, retry_period=0.25))

        async def work() -> None:
            log("started")
            while True:
                log("tick")
                items = await core.list_namespaced_config_map(namespace, label_selector="todo=yes")
                for item in items.items:
                    if (item.metadata.annotations or {}).get("done-by"):
                        continue
                    item.metadata.annotations = {**(item.metadata.annotations or {}), "done-by": identity}
                    try:
                        await core.replace_namespaced_config_map(item.metadata.name, namespace, item)
                        log("did", item.metadata.name)
                    except ApiException as exc:
                        if exc.status != 409:
                            raise
                await asyncio.sleep(0.1)

        log("candidate")
        await elector.run(work, on_stopped_leading=lambda: log("stopped"))


async def run(args: list[str]) -> None:
    task = asyncio.create_task(main(*args))
    # SIGTERM: stop cleanly, which releases the Lease for the next candidate
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1:5]))

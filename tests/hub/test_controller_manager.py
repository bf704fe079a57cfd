"""`fleetplane start` runs the plugins' controllers in a controller-manager process beside the
server: each controller as its own identity (RBAC still applies), restarted after it dies while the
server keeps serving, stopped before the server on SIGTERM, its connections counted against the
server's connection cap like any client's."""

from __future__ import annotations

import os
import select
import signal
import socket
import ssl
import stat
import time
import urllib.request
from pathlib import Path

import pytest

from ..harness import Hub, Kubectl, wait_for

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
#: the Leases of the controllers `fleetplane start` runs (their holders name the process: host_pid_random)
CONTROLLER_LEASES = ("fleetplane-cluster-controller", "fleetplane-splitter", "fleetplane-service-controller",
                     "fleetplane-hpa-controller", "fleetplane-cronjob-controller", "fleetplane-placement-decisions")


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def controller_manager(hub: Hub) -> int | None:
    """The pid of the hub's controller-manager process, if one runs."""
    assert hub.proc is not None
    found = [p for p in children(hub.proc.pid) if "controller-manager" in cmdline(p)]
    return found[0] if found else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
    return ") Z " not in status  # a zombie has exited


def holders(hub: Hub) -> dict[str, str]:
    code, leases = hub.json("GET", LEASES)
    assert code == 200, leases
    return {item["metadata"]["name"]: item["spec"].get("holderIdentity") or "" for item in leases["items"]}


def held_by(hub: Hub, pid: int) -> bool:
    """Every controller's Lease is held by process ``pid``."""
    got = holders(hub)
    return all(got.get(name, "").split("_")[1:2] == [str(pid)] for name in CONTROLLER_LEASES)


def connections_to(pid: int, port: int) -> int:
    """Established TCP connections process ``pid`` holds to ``port`` on this machine."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def hub_metrics(hub: Hub) -> str:
    code, _, body = hub.request("GET", "/metrics")
    assert code == 200
    return body.decode()


@pytest.fixture
def started(tmp_path: Path):
    hub = Hub(tmp_path / "hub", extra=["--controllers=separate"]).start()
    try:
        yield hub
    finally:
        if hub.proc is not None and hub.proc.poll() is None:
            hub.stop()


def test_the_controllers_run_in_a_process_of_their_own_each_as_its_identity(started: Hub) -> None:
    hub = started
    assert hub.proc is not None
    pid = wait_for(lambda: controller_manager(hub), 60, what="the controller-manager process")
    # a process group of its own (a terminal's Ctrl-C reaches the server only), the server's
    # session (one autogroup for the scheduler: a shard gets no more CPU than the server)
    assert os.getpgid(pid) == pid != os.getpgid(hub.proc.pid) and os.getsid(pid) == os.getsid(hub.proc.pid)
    # every controller of the hub runs there: its Leases name that process, not the server's
    wait_for(lambda: held_by(hub, pid), 90, interval=0.5, what="the controllers' Leases held by the controller-manager")
    assert not any(f"_{hub.proc.pid}_" in h for h in holders(hub).values())
    # its kubeconfigs: one per identity, private (0600 in a 0700 directory), and on its command line
    # only as paths
    identities = hub.data_dir / "identities"
    assert stat.S_IMODE(identities.stat().st_mode) == 0o700
    files = sorted(identities.glob("*.kubeconfig"))
    assert {f.name for f in files} >= {"splitter.kubeconfig", "cluster-controller.kubeconfig"}
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    args = cmdline(pid)
    assert f"--controller-kubeconfig=splitter={identities / 'splitter.kubeconfig'}" in args
    assert not any("BEGIN" in a or "client-key-data" in a for a in args)
    # RBAC still bites: the splitter's identity may read ClusterProfiles but no Secrets
    splitter = Kubectl(identities / "splitter.kubeconfig")
    assert splitter("auth", "can-i", "list", "clusterprofiles.multicluster.x-k8s.io", "-A").out.strip() == "yes"
    assert splitter("auth", "can-i", "get", "secrets", "-A", check=False).out.strip() == "no"
    denied = splitter.fail("get", "secrets", "-n", "default")
    assert "Forbidden" in denied.err and "system:fleetplane:splitter" in denied.err
    # in the controllers' group, which API Priority and Fairness serves as kube serves its own
    # controllers (their Lease renewals in leader-election)
    me = splitter("auth", "whoami", "-o", "json").json()["status"]["userInfo"]
    assert me["username"] == "system:fleetplane:splitter"
    assert "system:fleetplane:controllers" in me["groups"]
    # the hub reports its controller-manager; the controller-manager serves its own metrics
    assert metric(hub_metrics(hub), "fleetplane_controller_manager_up") == 1.0
    address = wait_for(lambda: (hub.data_dir / "controller-manager-metrics-address").exists()
                       and (hub.data_dir / "controller-manager-metrics-address").read_text().strip(), 30,
                       what="the controller-manager's metrics address")
    assert stat.S_IMODE((hub.data_dir / "controller-manager-metrics-address").stat().st_mode) == 0o600
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as resp:
        own = resp.read().decode()
    assert metric(own, "process_cpu_seconds_total") is not None
    # its log lines say which process wrote them
    log = hub.log.read_text()
    assert "component=controller-manager" in log and "component=hub" in log  # the harness logs as console


def test_a_killed_controller_manager_is_restarted_while_the_hub_keeps_serving(started: Hub) -> None:
    hub = started
    first = wait_for(lambda: controller_manager(hub), 60, what="the controller-manager process")
    wait_for(lambda: held_by(hub, first), 90, interval=0.5, what="the Leases held by the first controller-manager")
    os.kill(first, signal.SIGKILL)
    # the hub serves meanwhile, and starts another one (after a backoff)
    assert hub.request("GET", "/version")[0] == 200
    second = wait_for(lambda: (p := controller_manager(hub)) not in (None, first) and p, 60,
                      what="a new controller-manager process")
    assert hub.request("GET", "/api/v1/namespaces")[0] == 200
    # its controllers take the Leases over once the killed holder's run out (15 s)
    wait_for(lambda: held_by(hub, second), 120, interval=0.5, what="the Leases held by the new controller-manager")
    text = hub_metrics(hub)
    assert metric(text, "fleetplane_controller_manager_restarts_total") == 1.0
    assert metric(text, "fleetplane_controller_manager_up") == 1.0
    assert f"controller-manager (pid {first}) exited with signal SIGKILL" in hub.log.read_text()


def test_sigterm_stops_the_controller_manager_first_then_the_server(started: Hub) -> None:
    hub = started
    pid = wait_for(lambda: controller_manager(hub), 60, what="the controller-manager process")
    wait_for(lambda: held_by(hub, pid), 90, interval=0.5, what="the Leases held by the controller-manager")
    assert hub.stop(signal.SIGTERM, timeout=30) == 0
    assert not alive(pid)
    log = hub.log.read_text()
    # the controllers released their Leases (a write the server answered: it still served), and the
    # controller-manager ended on its own within its grace, not killed
    for name in CONTROLLER_LEASES:
        assert f"released lease kube-system/{name}" in log, name
    assert f"controller-manager (pid {pid}) stopped: status 0" in log
    assert "killed: not stopped" not in log


def test_the_controller_manager_stops_when_the_hub_is_killed(started: Hub) -> None:
    hub = started
    pid = wait_for(lambda: controller_manager(hub), 60, what="the controller-manager process")
    hub.stop(signal.SIGKILL)
    # its stdin (a pipe from the hub) closes: it does not outlive the hub
    wait_for(lambda: not alive(pid), 30, interval=0.2, what="the controller-manager to exit")


def test_in_process_controllers_run_in_the_servers_process(tmp_path: Path) -> None:
    hub = Hub(tmp_path / "in-process", extra=["--controllers=in-process"]).start()
    try:
        assert hub.proc is not None
        wait_for(lambda: held_by(hub, hub.proc.pid), 90, interval=0.5,  # type: ignore[union-attr]
                 what="the Leases held by the server's process")
        assert controller_manager(hub) is None
    finally:
        assert hub.stop() == 0


def test_the_controller_managers_connections_count_against_the_servers_cap(tmp_path: Path) -> None:
    """As kube-controller-manager's to kube-apiserver: it is a client like any other (only
    system:masters is exempt, from flow control, not from connection limits)."""
    cap = 80
    hub = Hub(tmp_path / "capped", extra=["--controllers=separate", "--max-connections", str(cap)]).start()
    held: list[socket.socket] = []
    try:
        pid = wait_for(lambda: controller_manager(hub), 60, what="the controller-manager process")
        wait_for(lambda: held_by(hub, pid), 90, interval=0.5, what="the controllers running")
        # few connections: one pool per identity, kept alive (watches hold one each)
        theirs = connections_to(pid, hub.port)
        assert 0 < theirs < cap - 5, theirs

        # open more connections than the cap leaves, all at once; each refused one is answered 503
        # at once, each accepted one waits for a request (it holds a place)
        opened: list[socket.socket] = []
        for _ in range(cap + 10):
            raw = socket.create_connection(("127.0.0.1", hub.port), timeout=30)
            opened.append(hub.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1"))
        refused = 0
        deadline = time.monotonic() + 30
        while not refused and time.monotonic() < deadline:
            for sock in select.select(opened, [], [], 2)[0]:
                sock.setblocking(False)  # readable may be only a TLS 1.3 session ticket, no answer
                try:
                    answer = sock.recv(65536)
                except ssl.SSLWantReadError:
                    continue
                finally:
                    sock.setblocking(True)
                    sock.settimeout(30)
                refused += answer.startswith(b"HTTP/1.1 503")
                opened.remove(sock)
                sock.close()
        assert refused, "no connection over the cap was refused"
        held.extend(opened)
        # which of those the server really holds a place for: it serves a request on them (a busy
        # server may have answered a late one 503 after the test counted it as waiting)
        served = sum(1 for sock in held if _served(sock))
        now = connections_to(pid, hub.port)
        # the places the test got are the cap less the controller-manager's (a few of whose may
        # still wait in the listen backlog, uncounted yet)
        assert served + now <= cap + 3, (served, now)
        assert served <= cap - 10, (served, theirs, now)
    finally:
        for s in held:
            s.close()
        hub.stop()


def _served(sock: socket.socket) -> bool:
    sock.settimeout(30)
    try:
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = sock.recv(65536)
    except OSError:
        return False
    return answer.startswith(b"HTTP/1.1 200")


def test_clients_of_one_identity_share_one_pool_of_kept_alive_connections(hub: Hub) -> None:
    """The controllers' client: a controller's Clients (its own, its leader election's) reuse one
    identity's connections, kept alive between requests, instead of a TLS handshake each."""
    import asyncio

    from fleetplane.kube.client import Client
    from fleetplane.kube.kubeconfig import ApiTarget

    async def go() -> tuple[int, int, int]:
        target = ApiTarget.from_kubeconfig(hub.kubeconfig)
        first, second = Client(target, "test-a"), Client(target, "test-b", pool=4)
        for _ in range(20):
            assert (await first.request("GET", "/version"))["gitVersion"]
            assert (await second.request("GET", "/version"))["gitVersion"]
        both = connections_to(os.getpid(), hub.port)
        await asyncio.gather(*(first.request("GET", "/api/v1/namespaces") for _ in range(8)))
        burst = connections_to(os.getpid(), hub.port)
        await first.close()
        await second.request("GET", "/version")  # the pool outlives the first Client
        await second.close()
        return both, burst, connections_to(os.getpid(), hub.port)

    sequential, burst, closed = asyncio.run(go())
    assert sequential == 1, sequential  # 40 requests of two Clients, one connection
    assert 1 <= burst <= 8
    assert closed == 0


def test_a_new_clients_concurrent_first_requests_share_one_session(hub: Hub) -> None:
    """A Client's first requests, sent at once (a controller's informers starting together), make
    one HTTP session between them: before, each made its own and all but the last were left for the
    collector ("Unclosed client session" errors in the controller-manager's log at every start)."""
    import asyncio
    import gc

    from fleetplane.kube.client import Client
    from fleetplane.kube.kubeconfig import ApiTarget

    async def go() -> list[str]:
        reported: list[str] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx["message"]))
        client = Client(ApiTarget.from_kubeconfig(hub.kubeconfig), "test-first-requests")
        answers = await asyncio.gather(*(client.request("GET", "/version") for _ in range(10)))
        assert all(a["gitVersion"] for a in answers)
        await client.close()
        gc.collect()
        await asyncio.sleep(0)  # a session's __del__ reports through the loop
        return reported

    assert asyncio.run(go()) == []
    assert connections_to(os.getpid(), hub.port) == 0  # and nothing is left open


def test_controller_manager_shards_divide_the_clusters_and_their_syncers(tmp_path: Path) -> None:
    """`--controller-manager-shards 2`: two processes, each its own Cluster controller (its own
    Lease) for the Clusters that hash to it, with their Syncers; the other controllers only in the
    first. A Deployment split over all four clusters runs in each, whichever shard syncs it."""
    from fleetplane.cli.main import metrics_address_file
    from fleetplane.fleet.cluster.options import shard_of
    from fleetplane.lab import Lab

    names = [f"s-{i}" for i in range(4)]
    mine = {i: [n for n in names if shard_of("root", n, 2) == i] for i in (0, 1)}
    assert mine[0] and mine[1], mine  # the hash is stable: both shards have some of these names
    with Lab(tmp_path / "lab") as lab:
        hub = lab.start_hub("--controller-manager-shards", "2", "--splitter-join-grace", "1")
        lab.simulate_many("s", len(names), "--nodes", "1", "--kubelet-delay", "0.2", timeout=120)
        lab.attach(*names)
        lab.wait_attached(names, timeout=180)

        def shards() -> dict[int, int] | None:
            found = {}
            for pid in children(hub.pid or 0):
                args = cmdline(pid)
                if "controller-manager" in args:
                    found[int(next(a for a in args if a.startswith("--shard=")).split("=", 1)[1])] = pid
            return found if len(found) == 2 else None

        pids = wait_for(shards, 30, what="two controller-manager processes")
        assert "--shards=2" in cmdline(pids[1])
        # each shard's Cluster controller holds a Lease of its own; the other controllers' are the first's
        leases = (hub.get(LEASES) or {}).get("items") or []
        holder = {o["metadata"]["name"]: (o["spec"].get("holderIdentity") or "").split("_")[1:2] for o in leases}
        assert holder["fleetplane-cluster-controller-shard-0"] == [str(pids[0])]
        assert holder["fleetplane-cluster-controller-shard-1"] == [str(pids[1])]
        assert "fleetplane-cluster-controller" not in holder
        for name in CONTROLLER_LEASES[1:]:
            assert holder[name] == [str(pids[0])], name
        # and renews it (its identity may: RBAC names every shard's Lease)
        first = {o["metadata"]["name"]: o["spec"]["renewTime"] for o in leases}

        def renewed() -> bool:
            now = {o["metadata"]["name"]: o["spec"]["renewTime"] for o in (hub.get(LEASES) or {}).get("items") or []}
            return all(now[f"fleetplane-cluster-controller-shard-{i}"] > first[f"fleetplane-cluster-controller-shard-{i}"]
                       for i in (0, 1))

        wait_for(renewed, 30, interval=0.5, what="both shards' Leases renewed")
        # each reconciles its own part (its metrics say how many) and runs those clusters' Syncers
        for i in (0, 1):
            address = (hub.data_dir / metrics_address_file(i)).read_text().strip()
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as resp:
                own = resp.read().decode()
            assert metric(own, f'fleetplane_cluster_controller_clusters{{shard="{i}"}}') == len(mine[i]), own
            assert connections_to(pids[i], lab["s"].port) > 0, i
        req = urllib.request.Request(hub.url + "/metrics", headers={"Authorization": f"Bearer {hub.token}"})
        with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(hub.ca)), timeout=10) as resp:
            assert metric(resp.read().decode(), "fleetplane_controller_manager_up") == 2.0
        # the work flows through both: a Deployment split one replica per cluster is ready in all
        lab.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=4", check=True)

        def ready() -> bool:
            d = hub.get("/apis/apps/v1/namespaces/default/deployments/web") or {}
            return (d.get("status") or {}).get("readyReplicas") == 4

        lab.wait_until("the split Deployment 4/4 ready", ready, 120)
        for n in names:  # its part, synced by that cluster's shard, runs there
            out = Kubectl(lab.cluster(n).kubeconfig, namespace="default")(
                "get", "deployments", "-o", "jsonpath={.items[*].status.readyReplicas}").out
            assert out == "1", n

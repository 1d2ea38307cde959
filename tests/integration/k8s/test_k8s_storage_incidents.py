"""The EDA event source volfence.csi.storage_incidents against the API (emulator, or the cluster
KUBECONFIG names): it lists and watches, and tells each incident once, as it happens.

The source runs in-process, loaded as ansible-rulebook loads it (runpy, from the installed
collection's path); its events are collected from the queue it is given.
"""

import asyncio
import json
import os
import runpy
import signal
import subprocess
import threading

import pytest

from k8s_helpers import COLLECTIONS, EMULATOR_ONLY, Builder, stamp, wait_until
from labtools import REPO, ansible_env

RULEBOOK_BIN = os.path.join(REPO, ".venv", "bin", "ansible-rulebook")

SOURCE = os.path.join(COLLECTIONS, "ansible_collections", "volfence", "csi", "extensions", "eda", "plugins",
                      "event_source", "storage_incidents.py")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


class SourceRun(object):
    """The source's main(queue, args) on an event loop of its own thread; `events` as they come."""

    def __init__(self, kubeconfig, **args):
        self.module = runpy.run_path(SOURCE)
        self.args = dict(kubeconfig=kubeconfig, **args)
        self.events = []
        self.error = None
        self.loop = None
        self.task = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        events = self.events

        class Collect(object):
            async def put(self, event):
                events.append(event)

        async def body():
            self.task = asyncio.ensure_future(self.module["main"](Collect(), self.args))
            try:
                await self.task
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # noqa: BLE001 (reported to the test)
                self.error = exc

        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(body())
        self.loop.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.loop is not None and self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(10)

    def incidents(self, kind=None, node=None):
        return [e["incident"] for e in list(self.events)
                if (kind is None or e["incident"]["kind"] == kind) and (node is None or e["incident"]["node"] == node)]

    def wait(self, kind, node, timeout=30):
        assert wait_until(lambda: self.incidents(kind, node) or self.error, timeout), (
            "no %s incident for %s in %s s; got %s" % (kind, node, timeout, self.incidents()))
        assert self.error is None, self.error
        return self.incidents(kind, node)


@pytest.fixture
def build(kube, label, cleanup):
    return Builder(kube, label, cleanup)


def lease(kube, cleanup, node, renewed_ago):
    cleanup.append(LEASES + "/" + node)
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": node},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": stamp(renewed_ago)
                     .replace("Z", ".000000Z")}}
    if kube.get(LEASES + "/" + node) is None:
        kube.create(LEASES, body)
    else:
        kube.patch(LEASES + "/" + node, {"spec": body["spec"]})


def test_a_lost_node_is_told_once_and_the_failover_budget_holds(kube, target, build, label, cleanup):
    first, second = "vft-%s-a" % label, "vft-%s-b" % label
    lease(kube, cleanup, first, 900)
    lease(kube, cleanup, second, 600)
    build.node(first, "198.51.100.21", ready="Unknown", not_ready_for=900)
    build.node(second, "198.51.100.22", ready="Unknown", not_ready_for=900)
    with SourceRun(target["kubeconfig"], node_lost_after=120, max_failovers=1, failover_window=3600) as run:
        lost_first = run.wait("node-lost", first)[0]
        lost_second = run.wait("node-lost", second)[0]
        # the node whose Lease is older goes first; the budget of one lets only it through
        assert lost_first["failover"]["allowed"] is True, lost_first
        assert lost_second["failover"]["allowed"] is False
        assert "max_failovers=1" in lost_second["failover"]["reason"]
        assert lost_first["next"] == {"playbook": "volfence.csi.node_failover", "extra_vars": {"failed_node": first}}
        assert any("Lease not renewed" in line for line in lost_first["evidence"])
        # a change to the node that does not end the incident tells nothing new
        kube.patch("/api/v1/nodes/" + first, {"metadata": {"labels": {"touched": "yes"}}})
        assert wait_until(lambda: kube.get("/api/v1/nodes/" + first)["metadata"]["labels"].get("touched"), 60)
        run.wait("node-lost", second)
        assert len(run.incidents("node-lost", first)) == 1


def test_a_node_back_before_node_lost_after_and_an_excluded_node(kube, target, build, label, cleanup):
    coming_back, excluded = "vft-%s-c" % label, "vft-%s-x" % label
    lease(kube, cleanup, coming_back, 0)
    build.node(coming_back, "198.51.100.23", ready="Unknown", not_ready_for=5)
    build.node(excluded, "198.51.100.24", ready="Unknown", not_ready_for=900)
    kube.patch("/api/v1/nodes/" + excluded, {"metadata": {"labels": {"volfence.csi/no-auto-failover": ""}}})
    lease(kube, cleanup, excluded, 900)
    # 15 s: ample time for the test to bring the node back once the source is in sync
    with SourceRun(target["kubeconfig"], node_lost_after=15, max_failovers=10) as run:
        held = run.wait("node-lost", excluded)[0]
        assert held["failover"]["allowed"] is False
        assert "volfence.csi/no-auto-failover" in held["failover"]["reason"]
        # the node is Ready again (its kubelet renews its Lease) before its Lease is 15 s old
        lease(kube, cleanup, coming_back, 0)
        kube.status("/api/v1/nodes/" + coming_back, {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": stamp(0),
             "lastTransitionTime": stamp(0)}]})
        # then its Lease is not renewed: still Ready, so never lost. Wait for a later incident
        # (another node, lost 15 s after it was made) to know the source evaluated past the threshold.
        later = "vft-%s-d" % label
        lease(kube, cleanup, later, 0)
        build.node(later, "198.51.100.25", ready="Unknown", not_ready_for=900)
        run.wait("node-lost", later, timeout=60)
        assert run.incidents("node-lost", coming_back) == []


def test_a_stuck_pod_is_classified_as_diagnose_does(kube, target, build, label, cleanup):
    node = build.node("vft-%s-n" % label, "198.51.100.31")
    build.pv("vft-%s-pv" % label, "rbd.csi.ceph.com", "0001-0009-rook-ceph-0000000000000002-%s" % label,
             claim="vft-%s-pvc" % label, attributes={"pool": "rbd", "imageName": "csi-vol-%s" % label})
    build.pvc("vft-%s-pvc" % label, "vft-%s-pv" % label)
    pod = build.pod("vft-%s-pod" % label, node, "vft-%s-pvc" % label)
    event = "vft-%s-event" % label
    cleanup.append("/api/v1/namespaces/default/events/" + event)
    kube.create("/api/v1/namespaces/default/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": event, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod["metadata"]["name"],
                           "uid": pod["metadata"]["uid"]},
        "reason": "FailedMount", "type": "Warning", "firstTimestamp": stamp(0), "lastTimestamp": stamp(0),
        "message": "MountVolume.MountDevice failed for volume \"pvc\" : rpc error: code = Internal desc = rbd "
                   "image rbd/csi-vol-%s is still being used" % label})
    with SourceRun(target["kubeconfig"], stuck_after=0) as run:
        found = run.wait("stale-rbd-watcher", node)[0]
    assert found["pods"] == ["default/vft-%s-pod" % label]
    assert found["claims"] == ["default/vft-%s-pvc" % label]
    assert any("is still being used" in line for line in found["evidence"])
    assert found["next"]["playbook"] == "volfence.csi.node_failover" or found["next"]["extra_vars"] == {
        "pod_namespace": "default", "pod_name": "vft-%s-pod" % label}


def test_bad_options_are_named_before_connecting(target):
    module = runpy.run_path(SOURCE)
    with pytest.raises(ValueError) as error:
        asyncio.run(module["main"](None, dict(kubeconfig=target["kubeconfig"], node_lost_afer=10)))
    assert "unknown option(s) node_lost_afer" in str(error.value)
    with pytest.raises(ValueError) as error:
        asyncio.run(module["main"](None, dict(kubeconfig=target["kubeconfig"], max_failovers=-1,
                                              stuck_after="soon")))
    assert "max_failovers must be between 0 and 10000, not -1" in str(error.value)
    assert "stuck_after must be a whole number, not 'soon'" in str(error.value)


def test_an_expired_watch_and_a_restarted_api_server_lose_and_repeat_nothing(tmp_path):
    """Emulator-only: its history is compacted (the next resume gets 410 Gone) and it is restarted
    on the same port from its saved state, while the source watches."""
    if os.environ.get("KUBECONFIG"):
        pytest.skip(EMULATOR_ONLY)
    from kubeemu.client import Admin, KubeClient
    from kubeemu.server import EmulatorServer
    state = str(tmp_path / "state.json")
    server = EmulatorServer(port=0, state_file=state).start()
    port = server.port
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    kube = KubeClient.from_kubeconfig(kubeconfig, timeout=30)
    admin = Admin(server.url)

    def lost_node(name):
        kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        kube.request("PATCH", "/api/v1/nodes/%s/status" % name, {"status": {"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "lastHeartbeatTime": stamp(900),
             "lastTransitionTime": stamp(900)}]}}, content_type="application/merge-patch+json")
        kube.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                             "spec": {"holderIdentity": name, "renewTime": stamp(900).replace("Z", ".000000Z")}})

    try:
        lost_node("before")
        with SourceRun(kubeconfig, node_lost_after=120, max_failovers=10, watch_timeout=1) as run:
            run.wait("node-lost", "before")
            admin.call("POST", "compact")
            lost_node("after-compaction")
            run.wait("node-lost", "after-compaction")
            server.requested_port = port
            server.stop()
            server.start()
            lost_node("after-restart")
            run.wait("node-lost", "after-restart", timeout=60)
            kube.request("PATCH", "/api/v1/nodes/before", {"metadata": {"labels": {"seen": "again"}}},
                         content_type="application/merge-patch+json")
            lost_node("last")
            run.wait("node-lost", "last", timeout=60)
            ids = [i["id"] for i in run.incidents()]
        assert sorted(i.split(":")[1] for i in ids) == ["after-compaction", "after-restart", "before", "last"], ids
    finally:
        server.stop()



RULEBOOK = """
- name: Watch until a node is lost (volfence.csi.storage_incidents)
  hosts: all
  sources:
    - volfence.csi.storage_incidents:
        kubeconfig: {kubeconfig}
        watch_timeout: 3600
  rules:
    - name: Stop at the first lost node, as an activation is stopped
      condition: event.incident.kind == "node-lost"
      action:
        shutdown:
          message: a node was lost
"""


class RulebookRun(object):
    """The real ansible-rulebook running RULEBOOK against an emulator of its own; `active()` is the number of
    watches the emulator has open."""

    def __init__(self, tmp_path):
        from kubeemu.client import Admin, KubeClient
        from kubeemu.server import EmulatorServer
        self.tmp_path = tmp_path
        self.server = EmulatorServer(port=0).start()
        self.admin = Admin(self.server.url)
        kubeconfig = self.server.write_kubeconfig(str(tmp_path / "kubeconfig"))
        self.kube = KubeClient.from_kubeconfig(kubeconfig, timeout=30)
        (tmp_path / "rulebook.yml").write_text(RULEBOOK.format(kubeconfig=json.dumps(kubeconfig)))
        (tmp_path / "inventory.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
        self.log = open(str(tmp_path / "rulebook.log"), "w")
        self.proc = subprocess.Popen([RULEBOOK_BIN, "-r", str(tmp_path / "rulebook.yml"), "-i",
                                      str(tmp_path / "inventory.yml"), "-v"], cwd=str(tmp_path),
                                     env=ansible_env({"ANSIBLE_STDOUT_CALLBACK": "default"}), stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def active(self):
        return self.admin.call("GET", "watches")["active"]

    def output(self):
        return (self.tmp_path / "rulebook.log").read_text()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.log.close()
        self.server.stop()


@pytest.fixture
def rulebook_run(tmp_path):
    if os.environ.get("KUBECONFIG"):
        pytest.skip(EMULATOR_ONLY)
    run = RulebookRun(tmp_path)
    yield run
    run.close()


def watching(run):
    """Wait until the source watches every kind it watches (or ansible-rulebook ended)."""
    watched = len(runpy.run_path(SOURCE)["_collection_imports"]()[0].WATCHED)
    assert wait_until(lambda: run.active() >= watched or run.proc.poll() is not None, 180), "the source never watched"
    assert run.proc.poll() is None, run.output()[-3000:]
    return watched


def test_stopped_by_ansible_rulebook_the_source_closes_its_watches_itself(rulebook_run):
    """The real ansible-rulebook stops its sources by cancelling them (here at a rule's `shutdown`): the
    source's watches (3600 s each) are closed by the source, which says so, and the API server sees them end."""
    run = rulebook_run
    watched = watching(run)
    run.kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lost"}})
    run.kube.request("PATCH", "/api/v1/nodes/lost/status", {"status": {"conditions": [
        {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "lastHeartbeatTime": stamp(900),
         "lastTransitionTime": stamp(900)}]}}, content_type="application/merge-patch+json")
    run.kube.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lost"},
                             "spec": {"holderIdentity": "lost", "renewTime": stamp(900).replace("Z", ".000000Z")}})
    assert run.proc.wait(120) == 0, run.output()[-3000:]
    output = run.output()
    assert "stopped: %d watch(es) closed, 0 thread(s) still ending" % watched in output, output[-3000:]
    assert wait_until(lambda: run.active() == 0, 30), "%d watches still open" % run.active()
    assert "Traceback" not in output, output[-3000:]


def test_a_terminated_ansible_rulebook_leaves_no_watch_open(rulebook_run):
    """SIGTERM, as an EDA controller stops an activation's container: this ansible-rulebook (its JVM's signal
    handling) ends at once, without cancelling its sources; its watches end with the process."""
    run = rulebook_run
    watching(run)
    run.proc.send_signal(signal.SIGTERM)
    run.proc.wait(120)
    assert wait_until(lambda: run.active() == 0, 30), "%d watches still open" % run.active()


def test_cancelled_the_source_closes_its_watches_while_its_process_lives_on(tmp_path):
    """Emulator-only (its count of open watches). In one process that goes on (as ansible-rulebook's does until
    every source has ended), a cancelled source's watches end at once, not after watch_timeout (3600 s)."""
    if os.environ.get("KUBECONFIG"):
        pytest.skip(EMULATOR_ONLY)
    from kubeemu.client import Admin
    from kubeemu.server import EmulatorServer
    server = EmulatorServer(port=0).start()
    try:
        admin = Admin(server.url)
        kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
        watched = len(runpy.run_path(SOURCE)["_collection_imports"]()[0].WATCHED)
        with SourceRun(kubeconfig, watch_timeout=3600) as run:
            assert wait_until(lambda: admin.call("GET", "watches")["active"] >= watched or run.error, 60), run.error
        assert not run.thread.is_alive() and run.error is None, run.error
        assert wait_until(lambda: admin.call("GET", "watches")["active"] == 0, 30), (
            "%d watches still open" % admin.call("GET", "watches")["active"])
    finally:
        server.stop()

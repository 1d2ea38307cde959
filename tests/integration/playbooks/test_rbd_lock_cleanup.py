"""playbooks/rbd_lock_cleanup.yml on the lab's stale-rbd-lock scenario (real in-tree style locks)."""

import json
import os

import pytest

from failing_hosts import UNREACHABLE, inventory_with_failing_hosts, stopped_with_report
from labtools import REPO, run_playbook, told, volfence_events, wait_until

PLAYBOOK = os.path.join(REPO, "playbooks", "rbd_lock_cleanup.yml")


@pytest.fixture
def stale_rbd_lock(clean_lab, kube, incident):
    return clean_lab, incident("stale-rbd-lock"), kube


def node_down(kube, name):
    node = kube.get("nodes", name)
    return [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]["status"] != "True"


def test_check_mode_then_cleanup(stale_rbd_lock, lab_inventory, tmp_path):
    lab, state, kube = stale_rbd_lock
    extra = {"pod_namespace": "default", "pod_name": state["stuck_pod"], "report_path": str(tmp_path / "r.json"),
             "wait_timeout": 60, "lease_grace_seconds": 3}
    before_locks = lab.locks(state["image"])
    before_blocklist = lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout

    # I4 (issue 11 item 3): the holder node-b is Ready: its lock is live as far as anyone can prove.
    live = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert live.rc == 0, live.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stale_locks"] == [] and report["pod_restarted"] is False
    assert [(k["id"], k["invariant"]) for k in report["kept_locks"]] == [("kubelet_lock_magic_node-b", "I4")]
    assert "node node-b is Ready" in report["kept_locks"][0]["reason"]
    assert lab.locks(state["image"]) == before_locks
    assert lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout == before_blocklist

    # node-b dies (kubelet gone, its Ceph client alive): now the lock is provably stale.
    lab.lab("kill-node", "node-b")
    assert wait_until(lambda: node_down(kube, "node-b"), timeout=30)

    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert [l["id"] for l in report["stale_locks"]] == ["kubelet_lock_magic_node-b"]
    assert report["stale_locks"][0]["node"] == "node-b"
    assert lab.locks(state["image"]) == before_locks
    assert lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout == before_blocklist
    assert kube.find("pods", state["stuck_pod"], "default") is not None

    events_before = volfence_events(kube)
    run = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    # issue 35: the lock broken is told on its PersistentVolume, the restart on the pod
    story = told(kube, events_before)
    # The exact client of the stale lock was fenced before its lock was broken, and its node's address, whole: the
    # in-tree lock's locker is not the client that maps and writes (issue 43)
    assert sorted(b["entry"] for b in report["blocklisted"]) == sorted(
        [state["locker_address"], lab.nodes[state["lock_node"]] + ":0/0"])
    assert report["pod_restarted"] is True
    running = [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
               if p["status"].get("phase") == "Running"]
    assert len(running) == 1
    assert [(reason, kind, name) for reason, kind, name, _m in story] == [
        ("RbdLockBroken", "PersistentVolume", state["pv"]), ("PodRestarted", "Pod", "default/" + state["stuck_pod"]),
        ("ReplacementRunning", "Pod", "default/" + running[0]["metadata"]["name"])], story
    assert "kubelet_lock_magic_node-b" in story[0][3] and "allowed by I4" in story[0][3], story
    assert "replaces pod default/%s" % state["stuck_pod"] in story[2][3], story
    # The new pod's node took the in-tree lock for itself.
    assert [l["id"] for l in lab.locks(state["image"])] == ["kubelet_lock_magic_" + running[0]["spec"]["nodeName"]]

    # Re-launched with the same answers (issue 18): the pod it was given is gone; the re-run follows
    # it to its replacement, finds nothing to do, and changes nothing.
    after_locks, after_blocklist = lab.locks(state["image"]), lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout
    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0, again.stdout[-3000:]
    assert sum(host["changed"] for host in again.data["stats"].values()) == 0, again.data["stats"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["pod"]["replaced"] is True and report["pod"]["name"] == running[0]["metadata"]["name"]
    assert report["pod"]["requested"] == state["stuck_pod"]
    assert report["stale_locks"] == [] and report["pod_restarted"] is False
    assert lab.locks(state["image"]) == after_locks
    assert lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout == after_blocklist


def test_a_lock_of_the_pods_own_node_is_left_alone(stale_rbd_lock, lab_inventory, tmp_path):
    lab, state, kube = stale_rbd_lock
    # node-b's lock goes: the stuck pod's kubelet (the in-tree plugin) takes the image's lock from the
    # pod's own node on its next mount retry. The test waits for that lock as Ceph lists it (a lock of
    # its own, taken meanwhile, would race that retry: ImageBusy). Nothing is provably stale then.
    lab.release("node-b")
    lab.rbd("lock", "rm", state["image"], state["lock_id"], state["locker"])
    own = wait_until(lambda: lab.locks(state["image"]), timeout=30, what="a lock of the pod's own node")
    assert [(l["id"], l["address"].split(":")[0]) for l in own] == [
        ("kubelet_lock_magic_" + state["stuck_node"], lab.nodes[state["stuck_node"]])], own
    locker = own[0]["locker"]
    run = run_playbook(lab_inventory, PLAYBOOK, {"pod_namespace": "default", "pod_name": state["stuck_pod"],
                                                 "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stale_locks"] == [] and [l["locker"] for l in report["kept_locks"]] == [locker]
    assert report["blocklisted"] == [] and report["pod_restarted"] is False
    assert [l["locker"] for l in lab.locks(state["image"])] == [locker]


def test_missing_pod_is_a_clear_error(lab, lab_inventory, tmp_path):
    run = run_playbook(lab_inventory, PLAYBOOK, {"pod_namespace": "default", "pod_name": "no-such-pod",
                                                 "report_path": str(tmp_path / "r.json")})
    assert run.rc != 0
    assert "no pod no-such-pod in namespace default" in run.stdout
    run = run_playbook(lab_inventory, PLAYBOOK, {"report_path": str(tmp_path / "r.json")})
    assert run.rc != 0 and "pod_name: required (the stuck pod)" in run.stdout and "pod_namespace: required" in run.stdout


def test_an_unreachable_ceph_host_is_named_in_the_report_and_nothing_is_done_after_it(stale_rbd_lock, lab_inventory,
                                                                                      tmp_path):
    """The lock is provably stale (its holder node-b is dead), but the Ceph admin host cannot be reached at
    the fence step: the run ends with its report naming the host, the step and why, breaks no lock,
    restarts no pod, and fails."""
    lab, state, kube = stale_rbd_lock
    lab.lab("kill-node", "node-b")
    assert wait_until(lambda: node_down(kube, "node-b"), timeout=30)
    before_locks = lab.locks(state["image"])
    before_blocklist = lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout
    inventory = inventory_with_failing_hosts(lab_inventory, tmp_path, unreachable=["ceph-admin"])
    extra = {"pod_namespace": "default", "pod_name": state["stuck_pod"], "report_path": str(tmp_path / "r.json"),
             "wait_timeout": 60, "lease_grace_seconds": 3}

    run = run_playbook(inventory, PLAYBOOK, extra)
    report = stopped_with_report(run, tmp_path / "r.json", "ceph-admin", UNREACHABLE,
                                 "Lock cleanup | fence and break the stale locks")
    assert report["pod"]["node"] == state["stuck_node"] and report["images"] == [state["image"]]
    assert report["stale_locks"] == [] and report["blocklisted"] == [] and report["pod_restarted"] is False
    # nothing was done after the failure: the lock, the blocklist and the stuck pod are as they were
    assert lab.locks(state["image"]) == before_locks
    assert lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout == before_blocklist
    assert kube.find("pods", state["stuck_pod"], "default") is not None

"""playbooks/node_failover.yml on the lab's seed-000 scenario."""

import json
import os

import pytest

from labtools import REPO, run_playbook

PLAYBOOK = os.path.join(REPO, "playbooks", "node_failover.yml")


@pytest.fixture
def seed_000(clean_lab, kube, incident):
    yield clean_lab, incident("seed-000"), kube
    for fence in kube.list("networkfences") if kube.find("customresourcedefinitions", "networkfences.csiaddons.openshift.io") else []:
        kube.delete("networkfences", fence["metadata"]["name"])


def blocklist(lab):
    return lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout


def stuck_phase(kube, state):
    pod = kube.find("pods", state["stuck_pod"], "default")
    return pod and pod["status"].get("phase")


def test_check_mode_changes_nothing_then_failover_and_rerun(seed_000, lab_inventory, tmp_path):
    lab, state, kube = seed_000
    extra = {"failed_node": "node-b", "lease_grace_seconds": 3, "report_path": str(tmp_path / "r.json"),
             "wait_timeout": 60}
    before = blocklist(lab)
    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["check_mode"] is True and report["fence_plan"]["fence"] == state["watchers"]
    assert blocklist(lab) == before
    assert lab.watchers(state["image"]) != []
    assert kube.find("pods", state["old_pod"], "default") is not None
    assert stuck_phase(kube, state) == "Pending"

    run = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    # Exactly the dead node's client was fenced: its address with its nonce, nothing wider.
    assert report["fence_plan"]["fence"] == state["watchers"]
    assert [a["entry"] for a in report["blocklist_actions"]] == state["watchers"]
    assert state["watchers"][0] in blocklist(lab)
    assert report["pods_force_deleted"] == [state["old_pod"]]
    assert kube.find("pods", state["old_pod"], "default") is None
    assert stuck_phase(kube, state) == "Running"
    assert [w["address"].split(":")[0] for w in lab.watchers(state["image"])] == [lab.nodes[state["stuck_node"]]]

    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0, again.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["fence_plan"]["fence"] == [] and report["pods_force_deleted"] == []
    changed = [r["_task"] for host in ("k8s-api", "ceph-admin") for r in again.results(host)
               if r.get("changed") and "report" not in r["_task"]]
    assert changed == []


def test_refuses_a_ready_node_and_changes_nothing(clean_lab, lab_inventory, tmp_path):
    lab = clean_lab
    for node in lab.nodes:
        lab.lab("revive-node", node)
    before = blocklist(lab)
    run = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-c", "report_path": str(tmp_path / "r.json")})
    assert run.rc != 0
    assert "refusing to fence node-c: it is Ready" in run.stdout
    assert blocklist(lab) == before
    missing = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-z", "report_path": str(tmp_path / "r.json")})
    assert missing.rc != 0 and "node node-z not found" in missing.stdout
    unset = run_playbook(lab_inventory, PLAYBOOK, {"report_path": str(tmp_path / "r.json")})
    assert unset.rc != 0 and "set -e failed_node=<node>" in unset.stdout


def test_failover_with_a_networkfence(seed_000, lab_inventory, tmp_path):
    lab, state, kube = seed_000
    run = run_playbook(lab_inventory, PLAYBOOK, {
        "failed_node": "node-b", "fence_method": "networkfence", "lease_grace_seconds": 3, "wait_timeout": 60,
        "networkfence_secret": {"name": "csi-rbd-secret", "namespace": "ceph-csi"}, "networkfence_cluster_id": "lab",
        "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["networkfences"] == ["volfence-node-b"]
    fence = kube.get("networkfences", "volfence-node-b")
    assert fence["spec"]["cidrs"] == [lab.nodes["node-b"] + "/32"] and fence["status"]["result"] == "Succeeded"
    assert lab.nodes["node-b"] + ":0/0" in blocklist(lab)  # the CSI-Addons stand-in blocklisted the CIDR
    assert stuck_phase(kube, state) == "Running"


def test_I6_rbd_released_and_another_drivers_volume_left_attached(clean_lab, kube, incident, lab_inventory, tmp_path):
    """Issue 11 item 6 (I6) and issue 17's first case: node-b holds a csi-unity volume (no fence the
    collection can set) beside the seed-000 RBD volume. The RBD pod is recovered; the other
    volume's attachment stays, and the report says why."""
    unity = incident("seed-001")  # a csi-unity VolumeAttachment on node-b
    state = incident("seed-000")  # then node-b dies with its RBD client alive
    run = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-b", "lease_grace_seconds": 3, "wait_timeout": 60,
                                                 "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    volumes = dict((v["pv_name"], v) for v in report["volumes"])
    assert volumes[unity["pv"]]["safe"] is False and "cannot fence it" in volumes[unity["pv"]]["how"]
    assert volumes[unity["pv"]]["invariant"] == "I6"
    assert report["volumeattachments_kept"] == [unity["volumeattachment"]]
    assert kube.find("volumeattachments", unity["volumeattachment"]) is not None
    rbd = [v for v in report["volumes"] if v["image"]]
    assert len(rbd) == 1 and rbd[0]["safe"] is True and rbd[0]["how"].startswith("fenced (blocklist)")
    assert stuck_phase(kube, state) == "Running"


def test_I6_nothing_released_when_the_watcher_is_kept(seed_000, lab_inventory, tmp_path):
    """Issue 11 item 6 (I6): when the fence plan keeps node-b's watcher (here: another node lists
    node-b's address too, so it cannot be tied to one node: I1), nothing of node-b is released."""
    lab, state, kube = seed_000
    ip = lab.nodes["node-b"]
    node_c = kube.get("nodes", "node-c")
    addresses = node_c["status"]["addresses"]
    kube.patch("nodes", "node-c", {"status": {"addresses": addresses + [{"type": "ExternalIP", "address": ip}]}},
               subresource="status")
    try:
        run = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                     "wait_timeout": 60, "report_path": str(tmp_path / "r.json")})
        assert run.rc == 0, run.stdout[-3000:]
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["fence_plan"]["fence"] == []
        assert "node-c" in report["fence_plan"]["kept"][0]["reason"]
        assert report["pods_force_deleted"] == [] and report["volumeattachments_removed"] == []
        assert report["pods_kept"][0]["invariant"] == "I6"
        assert state["watchers"][0] not in blocklist(lab)
        assert kube.find("pods", state["old_pod"], "default") is not None
    finally:
        kube.patch("nodes", "node-c", {"status": {"addresses": addresses}}, subresource="status")

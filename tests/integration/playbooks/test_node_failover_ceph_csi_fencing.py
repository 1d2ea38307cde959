"""node_failover and node_recover beside ceph-csi's own fencing: the lab's ceph-csi controller plugin runs with
--enable-fencing (ceph-csi 3.15+), so detaching a volume from a node that carries the out-of-service taint
blocklists the client address the node recorded at NodeStage, as a one-host range for three years, and only
CSI-Addons would lift it, five minutes after the node is back at the earliest. Kubernetes' own eviction and
force detach never come (clocks `never`). After the node's reboot no entry of either kind may cover its new
clients, and the reports say whose entries were lifted."""

import json
import os

import pytest

from labtools import REPO, blocklist_entries, declare_shut_down, run_playbook, running_elsewhere, wait_until, node_fence
from volfence_lab import scenarios
from volfence_lab.kubesim import node_ready

FAILOVER = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")

pytestmark = pytest.mark.usefixtures("kubernetes_never_releases")


@pytest.fixture
def ceph_csi_fences_on_detach(kube):
    scenarios.set_csi_fencing(kube, True)
    yield
    scenarios.set_csi_fencing(kube, False)


def run(playbook, lab_inventory, path, **extra):
    result = run_playbook(lab_inventory, playbook, dict(extra, report_path=str(path)))
    return result, json.loads(path.read_text()) if path.exists() else None


def covering(lab, ip):
    """The blocklist entries that cut off every new client at `ip`: its one-host range, its whole address."""
    return [e for e in blocklist_entries(lab) if e in ("cidr:%s:0/32" % ip, "%s:0/0" % ip)]


@pytest.mark.parametrize("administrators_taint", [True, False], ids=["administrators-taint", "failover-taint"])
def test_beside_ceph_csis_fencing_the_node_is_usable_after_its_reboot(ceph_csi_fences_on_detach, incident, kube,
                                                                      lab, lab_inventory, tmp_path,
                                                                      administrators_taint):
    state = incident("stale-rbd-watcher")
    ip = state["failed_node_ip"]
    if administrators_taint:
        # Rook's documented way: the administrator declares node-b shut down. Kubernetes evicts and detaches at
        # once, and ceph-csi fences node-b's recorded address on ControllerUnpublish: its live client is cut
        # off without volfence.csi, and the replacement runs.
        declare_shut_down(kube, "node-b")
        assert wait_until(lambda: covering(lab, ip), timeout=60), blocklist_entries(lab)
        assert wait_until(lambda: running_elsewhere(kube, state["deployment"]), timeout=90)
    failover, report = run(FAILOVER, lab_inventory, tmp_path / "failover.json", failed_node="node-b",
                           lease_grace_seconds=3, wait_timeout=60)
    assert failover.rc == 0, failover.stdout[-3000:]
    assert running_elsewhere(kube, state["deployment"])
    if not administrators_taint:
        # volfence.csi fenced node-b's client and removed the VolumeAttachment before it tainted the node: ceph-csi
        # saw no out-of-service taint on detach and fenced nothing of its own
        assert report["fence_plan"]["fence"] == node_fence(state)
        assert report["out_of_service_taint_added"] == ["node-b"]
        assert covering(lab, ip) == node_fence(state)  # volfence.csi's entry (node-b whole), no range of ceph-csi's
    entries_before = set(blocklist_entries(lab))
    assert entries_before, "something must cover node-b's old client before the recovery"

    lab.lab("revive-node", "node-b")  # back as after a reboot: a new bootID, its old clients gone
    assert wait_until(lambda: node_ready(kube.get("nodes", "node-b")), timeout=60)
    recover, recovered = run(RECOVER, lab_inventory, tmp_path / "recover.json", node="node-b")
    assert recover.rc == 0, recover.stdout[-3000:]
    lifted = dict((item["entry"], item["added_by"]) for item in recovered["blocklist_lifted"])
    if administrators_taint:
        assert lifted["cidr:%s:0/32" % ip] == "ceph-csi", lifted
    else:
        assert set(lifted.values()) == {"failover"}, lifted
    assert set(lifted) == entries_before  # nothing else was on the blocklist: all of it was node-b's
    assert blocklist_entries(lab) == []
    # node-b's new clients reach Ceph again: it opens an image and watches it
    image = lab.new_image("after-reboot")
    lab.hold("node-b", image)
    assert [w["address"].split(":")[0] for w in lab.watchers(image)] == [ip]

    again, rerun = run(RECOVER, lab_inventory, tmp_path / "again.json", node="node-b")
    assert again.rc == 0, again.stdout[-3000:]
    assert rerun["blocklist_lifted"] == [] and rerun["blocklist_removed"] == []

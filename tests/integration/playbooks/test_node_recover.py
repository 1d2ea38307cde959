"""playbooks/node_recover.yml after node_failover on the lab's stale-rbd-watcher scenario."""

import json
import os

import pytest

from kubeemu.client import Admin

from failing_hosts import FAILED, UNREACHABLE, inventory_with_failing_hosts, stopped_with_report
from labtools import (REPO, blocklist_entries, node_fence, revive_node, run_playbook, running_elsewhere, told,
                      volfence_events, wait_until)

# Kubernetes' own eviction and force detach never come (clocks `never`): no test here passes by
# waiting for Kubernetes.
pytestmark = pytest.mark.usefixtures("kubernetes_never_releases")

FAILOVER = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")


@pytest.fixture
def failed_over(clean_lab, kube, incident, lab_inventory, tmp_path):
    lab = clean_lab
    state = incident("stale-rbd-watcher")
    assert_not_evicted(kube, state)
    report = tmp_path / "failover.json"
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                 "out_of_service_taint": True, "report_path": str(report)})
    assert run.rc == 0, run.stdout[-3000:]
    assert_replaced(kube, state, json.loads(report.read_text()))
    return lab, state, kube, report


def assert_not_evicted(kube, state):
    """Kubernetes did nothing (clocks `never`): node-b's pod is still there, not Terminating, and not replaced."""
    old = kube.get("pods", state["old_pod"], "default")
    assert old["spec"]["nodeName"] == "node-b" and not old["metadata"].get("deletionTimestamp")
    assert state["stuck_pod"] is None and running_elsewhere(kube, state["deployment"]) == []


def assert_replaced(kube, state, report):
    """After the failover: node-b's pod gone, its replacement Running on another node, as the report says. The run
    force-deleted the pod, or, with out_of_service_taint=true (its taint set before the release), Kubernetes
    removed it first (taint eviction, then the pod GC of a node out of service) and the report says it was gone."""
    gone = report["pods_force_deleted"] + [p["name"] for p in report["pods_absent"]]
    assert gone == [state["old_pod"]] and report["failed_steps"] == []
    assert kube.find("pods", state["old_pod"], "default") is None
    [new] = running_elsewhere(kube, state["deployment"])
    assert report["replacements_running"] == [{"claim": "default/" + state["pvc"], "node": new["spec"]["nodeName"],
                                               "pod": "default/" + new["metadata"]["name"]}]


def test_refuses_while_the_node_is_still_down_then_recovers(failed_over, lab_inventory, tmp_path):
    lab, state, kube, failover_report = failed_over
    fenced = node_fence(state)[0]
    assert fenced in blocklist_entries(lab)
    extra = {"node": "node-b", "failover_report": str(failover_report), "report_path": str(tmp_path / "r.json")}

    refused = run_playbook(lab_inventory, RECOVER, extra)
    assert refused.rc != 0 and "refusing to unfence node-b: node node-b is not Ready" in refused.stdout
    assert fenced in blocklist_entries(lab)

    revive_node(lab, kube, "node-b")  # power-cycled: old clients gone, kubelet back

    events_before = volfence_events(kube)
    check = run_playbook(lab_inventory, RECOVER, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert fenced in blocklist_entries(lab)
    assert any(t["key"] == "node.kubernetes.io/out-of-service" for t in kube.get("nodes", "node-b")["spec"].get("taints", []))

    run = run_playbook(lab_inventory, RECOVER, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert fenced in report["blocklist_removed"]
    assert fenced not in blocklist_entries(lab)
    assert report["taint_removed"] is True
    assert not any(t["key"] == "node.kubernetes.io/out-of-service" for t in kube.get("nodes", "node-b")["spec"].get("taints", []))
    # issue 35: the node tells its recovery (the check run before posted nothing)
    story = told(kube, events_before)
    assert [(reason, kind, name) for reason, kind, name, _m in story] == [
        ("NodeUnfenced", "Node", "node-b"), ("OutOfServiceTaintRemoved", "Node", "node-b")], story
    assert fenced in story[0][3] and "allowed by I2" in story[0][3], story
    events_after = volfence_events(kube)

    again = run_playbook(lab_inventory, RECOVER, extra)
    assert again.rc == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["blocklist_removed"] == [] and report["taint_removed"] is False
    assert told(kube, events_after) == []


def test_I3_refuses_a_node_back_without_a_reboot_unless_forced(failed_over, lab_inventory, tmp_path):
    """Issue 11 item 2/I3: Ready again with the bootID it had when fenced (a kubelet restart, not a
    reboot) is no proof that its old clients are gone."""
    lab, state, kube, _report = failed_over
    fenced = node_fence(state)[0]
    revive_node(lab, kube, "node-b")
    record = json.loads(kube.get("nodes", "node-b")["metadata"]["annotations"]["volfence.csi/failover"])
    assert record["blocklist"] == [fenced]
    # The kubelet came back on the same boot: the node reports the bootID the failover recorded.
    record["boot_id"] = kube.get("nodes", "node-b")["status"]["nodeInfo"]["bootID"]
    kube.patch("nodes", "node-b", {"metadata": {"annotations": {"volfence.csi/failover": json.dumps(record)}}})
    extra = {"node": "node-b", "report_path": str(tmp_path / "r.json")}
    refused = run_playbook(lab_inventory, RECOVER, extra)
    assert refused.rc != 0 and "has not rebooted since it was fenced" in refused.stdout
    assert fenced in blocklist_entries(lab)
    forced = run_playbook(lab_inventory, RECOVER, dict(extra, force=True))
    assert forced.rc == 0, forced.stdout[-3000:]
    assert fenced not in blocklist_entries(lab)
    assert "volfence.csi/failover" not in (kube.get("nodes", "node-b")["metadata"].get("annotations") or {})


def test_I2_a_node_whose_networkfences_cannot_be_read_is_held_with_its_fence_and_record(
        clean_lab, kube, incident, lab_inventory, tmp_path):
    """A refused NetworkFence read (403, as a role without networkfences get/list gets) is not a cluster without
    CSI-Addons: node_recover lifts nothing of the node, force or not, and keeps the record that names its fence;
    once the read is allowed again, the fence is lifted."""
    lab = clean_lab
    incident("stale-rbd-watcher")
    failover = run_playbook(lab_inventory, FAILOVER, {
        "failed_node": "node-b", "fence_method": "networkfence", "lease_grace_seconds": 3, "wait_timeout": 60,
        "networkfence_secret": {"name": "csi-rbd-secret", "namespace": "ceph-csi"}, "networkfence_cluster_id": "lab",
        "report_path": str(tmp_path / "failover.json")})
    assert failover.rc == 0, failover.stdout[-3000:]
    assert kube.get("networkfences", "volfence-node-b")["spec"]["fenceState"] == "Fenced"
    revive_node(lab, kube, "node-b")
    admin = Admin(kube.server)
    message = ('networkfences.csiaddons.openshift.io is forbidden: User "system:serviceaccount:volfence:recover" '
               'cannot list resource "networkfences" in API group "csiaddons.openshift.io" at the cluster scope')
    admin.fault(method="GET", path_regex="/networkfences$", status=403, message=message, count=0)  # the LIST
    try:
        extra = {"node": "node-b", "report_path": str(tmp_path / "r.json")}
        for force in (False, True):
            held = run_playbook(lab_inventory, RECOVER, dict(extra, force=force))
            assert held.rc != 0, held.stdout[-3000:]
            # the refusal quotes the API server's (in the JSON of the run's output)
            assert "could not be read" in held.stdout and json.dumps(message)[1:-1] in held.stdout
            assert kube.get("networkfences", "volfence-node-b")["spec"]["fenceState"] == "Fenced"
            assert "volfence.csi/failover" in kube.get("nodes", "node-b")["metadata"]["annotations"]
    finally:
        admin.clear_faults()
    run = run_playbook(lab_inventory, RECOVER, extra)
    assert run.rc == 0, run.stdout[-3000:]
    assert kube.get("networkfences", "volfence-node-b")["spec"]["fenceState"] == "Unfenced"
    assert "volfence.csi/failover" not in (kube.get("nodes", "node-b")["metadata"].get("annotations") or {})


def test_I2_keeps_what_also_covers_another_dead_node(failed_over, lab_inventory, tmp_path):
    """Issue 11 item 2/I2: a range over node-b and node-c, and node-c's own entry, stay when node-b
    recovers; node-b's entry goes."""
    lab, state, kube, _report = failed_over
    fenced = node_fence(state)[0]
    subnet = lab.nodes["node-c"].rsplit(".", 1)[0] + ".0/24"
    node_c = lab.nodes["node-c"] + ":0/0"
    lab.ceph("osd", "blocklist", "range", "add", subnet, "3600")
    lab.ceph("osd", "blocklist", "add", node_c, "3600")
    try:
        revive_node(lab, kube, "node-b")
        run = run_playbook(lab_inventory, RECOVER, {"node": "node-b", "report_path": str(tmp_path / "r.json")})
        assert run.rc == 0, run.stdout[-3000:]
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["blocklist_removed"] == [fenced]
        assert fenced not in blocklist_entries(lab)
        assert node_c in blocklist_entries(lab)
        the_range = "cidr:%s:0/24" % subnet.split("/")[0]
        assert the_range in blocklist_entries(lab)
        kept = dict((k.get("entry"), k["reason"]) for k in report["kept"])
        assert "node-c" in kept[the_range]
    finally:
        lab.ceph("osd", "blocklist", "range", "rm", subnet)


@pytest.fixture
def mixed_failed_over(clean_lab, kube, incident, lab_inventory, tmp_path):
    state = incident("stale-rbd-watcher-mixed")
    assert_not_evicted(kube, state)
    report = tmp_path / "failover.json"
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                 "wait_timeout": 60, "report_path": str(report)})
    assert run.rc == 0, run.stdout[-3000:]
    assert_replaced(kube, state, json.loads(report.read_text()))
    yield clean_lab, state, kube
    for name in state["deployments"]:
        kube.delete("deployments", name, "default")


def test_mixed_node_recovers_and_reports_the_volumes_it_did_not_touch(mixed_failed_over, lab_inventory, tmp_path):
    """Issue 17: after a failover of a node that also held an EBS-like CSI volume and an attachment
    of a PV that does not exist, node_recover lifts the RBD fence and reports those volumes (still
    attached, what volfence.csi did for them: nothing, and why) without failing."""
    lab, state, kube = mixed_failed_over
    fenced = node_fence(state)[0]
    other, orphan = state["other"], state["orphan"]
    revive_node(lab, kube, "node-b")
    run = run_playbook(lab_inventory, RECOVER, {"node": "node-b", "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["blocklist_removed"] == [fenced] and fenced not in blocklist_entries(lab)
    assert report["volumes_not_read"] == []
    volumes = dict((v["name"], v) for v in report["volumes"])
    ebs = volumes[other["pv"]]
    assert (ebs["rbd"], ebs["driver"], ebs["attachments"]) == (False, state["other_driver"], [other["volumeattachment"]])
    assert "neither fenced nor detached it" in ebs["note"] and "its driver detaches it" in ebs["note"]
    gone = volumes[orphan["pv"]]
    assert gone["attachments"] == [orphan["volumeattachment"]] and "cannot name the volume" in gone["note"]
    assert kube.find("volumeattachments", other["volumeattachment"]) is not None
    assert kube.find("volumeattachments", orphan["volumeattachment"]) is not None
    lines = [r for r in run.results("k8s-api") if r["_task"] == "Recover | print the report"][0]["msg"]
    assert any(other["pv"] in line and "neither fenced nor detached" in line for line in lines)


OTHER_REMEDIATORS = {"medik8s.io/remediation", "node.kubernetes.io/out-of-service"}


@pytest.fixture
def others_taints_removed(kube):
    """After the test, node-b without the other remediators' taints it added: a NoExecute taint left there would
    keep every later test's pod off node-b (the lab, as the scheduler, places no pod on such a node)."""
    yield
    taints = kube.get("nodes", "node-b")["spec"].get("taints") or []
    kube.patch("nodes", "node-b", {"spec": {"taints": [t for t in taints if t.get("key") not in OTHER_REMEDIATORS]}})


def test_someone_elses_out_of_service_taint_is_reported_and_left_unless_told(clean_lab, kube, incident, lab_inventory,
                                                                            tmp_path, others_taints_removed):
    """Self Node Remediation is at work on node-b when the failover runs: the report names its taint. After the
    fence a person declares node-b shut down (out-of-service taint). node_recover lifts the fence, leaves the
    person's taint and the remediator's, and says whose they are; remove_others_taint=true removes the
    out-of-service taint only."""
    lab = clean_lab
    state = incident("stale-rbd-watcher")
    snr = {"key": "medik8s.io/remediation", "value": "self-node-remediation", "effect": "NoExecute"}
    theirs = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}

    def add_taint(taint):
        kube.patch("nodes", "node-b", {"spec": {"taints": (kube.get("nodes", "node-b")["spec"].get("taints") or [])
                                                + [taint]}})

    def taint_keys():
        return [t["key"] for t in kube.get("nodes", "node-b")["spec"].get("taints") or []]

    assert_not_evicted(kube, state)
    add_taint(snr)  # which node-b's pod does not tolerate: Kubernetes' taint eviction makes it Terminating at once
    assert wait_until(lambda: kube.get("pods", state["old_pod"], "default")["metadata"].get("deletionTimestamp"), 60)
    failover = tmp_path / "failover.json"
    # the failover adds no taint here (a person declares node-b shut down afterwards)
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                 "out_of_service_taint": False, "report_path": str(failover)})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads(failover.read_text())
    assert [m["by"] for m in report["other_remediators"]["node-b"]] == ["medik8s Self Node Remediation"]
    assert node_fence(state)[0] in blocklist_entries(lab)
    assert_replaced(kube, state, report)
    assert report["out_of_service_taint_added"] == []

    add_taint(theirs)
    revive_node(lab, kube, "node-b")
    extra = {"node": "node-b", "failover_report": str(failover), "report_path": str(tmp_path / "r.json")}
    recovered = run_playbook(lab_inventory, RECOVER, extra)
    assert recovered.rc == 0, recovered.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert node_fence(state)[0] in report["blocklist_removed"]
    assert report["taint_removed"] is False and report["others_taint_kept"] == ["node-b"]
    assert [m["by"] for m in report["other_remediators"]["node-b"]] == [
        "medik8s Self Node Remediation", "not volfence.csi (a remediation operator, a cloud controller or a person)"]
    assert theirs["key"] in taint_keys() and snr["key"] in taint_keys()

    told = run_playbook(lab_inventory, RECOVER, dict(extra, remove_others_taint=True))
    assert told.rc == 0, told.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["taint_removed"] is True and report["others_taint_kept"] == []
    assert theirs["key"] not in taint_keys() and snr["key"] in taint_keys()  # medik8s lifts its own


def test_a_failing_or_unreachable_host_is_named_in_the_report_and_nothing_is_lifted(failed_over, lab_inventory,
                                                                                   tmp_path):
    """node-b is back (rebooted), but the Ceph admin host cannot be reached, then the Kubernetes API host has no
    usable Python: each run ends with its report naming the host, the step and why, lifts nothing (the blocklist
    entry, the out-of-service taint and the record stay), and fails."""
    lab, state, kube, failover_report = failed_over
    fenced = node_fence(state)[0]
    revive_node(lab, kube, "node-b")
    extra = {"node": "node-b", "failover_report": str(failover_report), "report_path": str(tmp_path / "r.json")}

    def held():
        node = kube.get("nodes", "node-b")
        return (fenced in blocklist_entries(lab),
                "node.kubernetes.io/out-of-service" in [t["key"] for t in node["spec"].get("taints") or []],
                "volfence.csi/failover" in (node["metadata"].get("annotations") or {}))

    assert held() == (True, True, True)
    for host, kind, step in (("ceph-admin", UNREACHABLE, "Recover | 1. read"), ("k8s-api", FAILED, "Recover | 1. read")):
        run = run_playbook(inventory_with_failing_hosts(lab_inventory, tmp_path, **{
            "broken" if kind == FAILED else "unreachable": [host]}), RECOVER, extra)
        report = stopped_with_report(run, tmp_path / "r.json", host, kind, step)
        assert report["blocklist_removed"] == [] and report["recovered"] == [] and report["unfenced"] == []
        assert report["taint_removed"] is False and report["record_removed"] is False
        assert held() == (True, True, True)  # nothing lifted

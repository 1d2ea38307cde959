"""playbooks/node_failover.yml on the lab's stale-rbd-watcher scenario."""

import json
import os

import pytest

from failing_hosts import FAILED, UNREACHABLE, inventory_with_failing_hosts, stopped_with_report
from labtools import REPO, kubectl, run_playbook, running_elsewhere, told, volfence_events, node_fence

# Kubernetes' own eviction and force detach never come (clocks `never`): no test here passes by
# waiting for Kubernetes.
pytestmark = pytest.mark.usefixtures("kubernetes_never_releases")

PLAYBOOK = os.path.join(REPO, "playbooks", "node_failover.yml")


@pytest.fixture
def stale_rbd_watcher(clean_lab, kube, incident):
    yield clean_lab, incident("stale-rbd-watcher"), kube   # (incident removes the failover's NetworkFences)


def blocklist(lab):
    return lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout


def assert_left_by_kubernetes(kube, state):
    """Kubernetes did nothing (clocks `never`): node-b's pod is still there, not evicted, and no replacement exists."""
    assert state["stuck_pod"] is None
    old = kube.get("pods", state["old_pod"], "default")
    assert old["spec"]["nodeName"] == "node-b" and not old["metadata"].get("deletionTimestamp")
    pods = kube.list("pods", "default", label_selector="app=" + state["deployment"])
    assert [p["metadata"]["name"] for p in pods] == [state["old_pod"]]


def replacement(kube, state, report):
    """The Deployment's one replacement pod, Running away from node-b, as the report names it."""
    [new] = running_elsewhere(kube, state["deployment"])
    assert new["metadata"]["name"] != state["old_pod"]
    assert report["replacements_running"] == [{"claim": "default/" + state["pvc"], "node": new["spec"]["nodeName"],
                                               "pod": "default/" + new["metadata"]["name"]}]
    return new


def test_check_mode_changes_nothing_then_failover_and_rerun(stale_rbd_watcher, lab_inventory, tmp_path):
    lab, state, kube = stale_rbd_watcher
    extra = {"failed_node": "node-b", "lease_grace_seconds": 3, "report_path": str(tmp_path / "r.json"),
             "wait_timeout": 60}
    assert_left_by_kubernetes(kube, state)
    before = blocklist(lab)
    events_before = volfence_events(kube)
    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert told(kube, events_before) == []   # a check run posts nothing
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["check_mode"] is True and report["fence_plan"]["fence"] == node_fence(state)
    assert blocklist(lab) == before
    assert lab.watchers(state["image"]) != []
    assert_left_by_kubernetes(kube, state)  # the pod neither deleted nor replaced, node-b not tainted
    assert "node.kubernetes.io/out-of-service" not in [t["key"] for t in kube.get("nodes", "node-b")["spec"].get("taints") or []]

    run = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    # Exactly the dead node's client was fenced: its address with its nonce, nothing wider.
    assert report["fence_plan"]["fence"] == node_fence(state)
    assert [a["entry"] for a in report["blocklist_actions"]] == node_fence(state)
    assert node_fence(state)[0] in blocklist(lab)
    assert report["pods_force_deleted"] == [state["old_pod"]]
    assert report["out_of_service_taint_added"] == ["node-b"] and report["failed_steps"] == []
    assert kube.find("pods", state["old_pod"], "default") is None
    new = replacement(kube, state, report)
    assert [w["address"].split(":")[0] for w in lab.watchers(state["image"])] == [lab.nodes[new["spec"]["nodeName"]]]
    # issue 35: the cluster tells the story, one Event per action on its object, with the report and the invariant
    story = told(kube, events_before)
    removed = report["volumeattachments_removed"]
    assert len(removed) == 1, report
    assert [(reason, kind, name) for reason, kind, name, _m in story] == [
        ("NodeFenced", "Node", "node-b"), ("OutOfServiceTaintAdded", "Node", "node-b"),
        ("PodForceDeleted", "Pod", "default/" + state["old_pod"]),
        ("VolumeAttachmentDeleted", "VolumeAttachment", removed[0]),
        ("ReplacementRunning", "PersistentVolumeClaim", "default/" + state["pvc"]),
        ("ReplacementRunning", "Pod", "default/" + new["metadata"]["name"])], story
    for _reason, _kind, _name, message in story:
        assert "report: %s" % extra["report_path"] in message and "docs/safety.md" in message, message
    assert node_fence(state)[0] in story[0][3] and new["metadata"]["name"] in story[4][3]
    described = kubectl(lab, "describe", "pvc", state["pvc"], "-n", "default") + kubectl(lab, "describe", "node", "node-b")
    assert "ReplacementRunning" in described and "NodeFenced" in described and "volfence.csi" in described
    # the new pod's own describe tells which pod it replaces (the old one is gone: its Events are listed by
    # `kubectl get events`, with its uid)
    old_uid = [e["involvedObject"]["uid"] for e in volfence_events(kube) if e["reason"] == "PodForceDeleted"
               and e["involvedObject"]["name"] == state["old_pod"]]
    described = kubectl(lab, "describe", "pod", new["metadata"]["name"], "-n", "default")
    assert "ReplacementRunning" in described and "replaces pod default/%s (uid %s)" % (state["old_pod"], old_uid[-1]) \
        in " ".join(described.split()), described
    # ... and diagnose shows what the failover did, newest first, from the cluster's Events
    diagnosed = run_playbook(lab_inventory, os.path.join(REPO, "playbooks", "diagnose.yml"),
                             {"report_path": str(tmp_path / "d.json"), "diagnose_namespaces": ["default"]})
    assert diagnosed.rc == 0, diagnosed.stdout[-3000:]
    shown = json.loads((tmp_path / "d.json").read_text())["volfence_events"]
    assert [(e["reason"], e["object"]) for e in shown[:len(story)]] == [
        (reason, "%s %s" % (kind, name)) for reason, kind, name, _m in reversed(story)], shown
    assert "volfence.csi's Events, newest first" in diagnosed.stdout and "NodeFenced on Node node-b" in diagnosed.stdout
    events_after = volfence_events(kube)

    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0, again.stdout[-3000:]
    assert told(kube, events_after) == []   # nothing done again, nothing told again
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
    assert missing.rc != 0 and "no node named node-z (the cluster's nodes: node-a, node-b, node-c)" in missing.stdout
    unset = run_playbook(lab_inventory, PLAYBOOK, {"report_path": str(tmp_path / "r.json")})
    assert unset.rc != 0 and "failed_node: required (the node that died)" in unset.stdout


def test_an_extra_var_that_is_no_input_is_named_and_nothing_is_done(stale_rbd_watcher, lab_inventory, tmp_path):
    """-e backend=cli reads like a module option; the playbook would ignore it: refused before anything is read
    or written."""
    lab, state, kube = stale_rbd_watcher
    before = blocklist(lab)
    run = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-b", "report_path": str(tmp_path / "r.json"),
                                                 "backend": "cli", "wait_timout": 60})
    assert run.rc != 0
    assert "backend: given as an extra var, but not an input of node_failover: the playbook would ignore it" in run.stdout
    assert "wait_timout: given as an extra var, but not an input of node_failover: the playbook would ignore it; " \
        "did you mean wait_timeout?" in run.stdout
    assert blocklist(lab) == before and lab.watchers(state["image"]) != []
    assert_left_by_kubernetes(kube, state)
    assert "node.kubernetes.io/out-of-service" not in [t["key"] for t in kube.get("nodes", "node-b")["spec"].get("taints") or []]


def test_failover_with_a_networkfence(stale_rbd_watcher, lab_inventory, tmp_path):
    lab, state, kube = stale_rbd_watcher
    assert_left_by_kubernetes(kube, state)
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
    assert report["pods_force_deleted"] == [state["old_pod"]]
    replacement(kube, state, report)


def test_I6_rbd_released_and_another_drivers_volume_left_attached(clean_lab, kube, incident, lab_inventory, tmp_path):
    """Issue 11 item 6 (I6) and issue 17's first case: node-b holds a csi-unity volume (no fence the
    collection can set) beside the stale-rbd-watcher RBD volume. The RBD pod is recovered; the other
    volume's attachment stays, and the report says why."""
    unity = incident("stale-volumeattachment")  # a csi-unity VolumeAttachment on node-b
    state = incident("stale-rbd-watcher")  # then node-b dies with its RBD client alive
    assert_left_by_kubernetes(kube, state)
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
    assert report["pods_force_deleted"] == [state["old_pod"]]
    # not every volume of node-b made safe: no out-of-service taint (Kubernetes would detach the csi-unity volume)
    assert report["out_of_service"]["taint"] is False and report["out_of_service_taint_added"] == []
    replacement(kube, state, report)


def test_I6_nothing_released_when_the_watcher_is_kept(stale_rbd_watcher, lab_inventory, tmp_path):
    """Issue 11 item 6 (I6): when the fence plan keeps node-b's watcher (here: another node lists
    node-b's address too, so it cannot be tied to one node: I1), nothing of node-b is released, and
    the run fails naming the pod it could not fail over (Kubernetes evicted nothing: no replacement waits
    yet, node-b's pod is still there) and why."""
    lab, state, kube = stale_rbd_watcher
    assert_left_by_kubernetes(kube, state)
    ip = lab.nodes["node-b"]
    node_c = kube.get("nodes", "node-c")
    addresses = node_c["status"]["addresses"]
    kube.patch("nodes", "node-c", {"status": {"addresses": addresses + [{"type": "ExternalIP", "address": ip}]}},
               subresource="status")
    try:
        run = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                     "wait_timeout": 60, "report_path": str(tmp_path / "r.json")})
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["fence_plan"]["fence"] == []
        assert "node-c" in report["fence_plan"]["kept"][0]["reason"]
        [rbd] = [v for v in report["volumes"] if v["image"] == state["image"]]
        assert rbd["safe"] is False and rbd["action"] == "kept attached"
        assert report["pods_force_deleted"] == [] and report["volumeattachments_removed"] == []
        assert report["pods_kept"] == [{"pod": "default/" + state["old_pod"], "invariant": "I6",
                                        "reason": "claim(s) default/%s not made safe" % state["pvc"]}]
        assert report["out_of_service"]["taint"] is False and report["out_of_service_taint_added"] == []
        assert state["watchers"][0] not in blocklist(lab)
        assert_left_by_kubernetes(kube, state)  # node-b's pod still there, not deleted, nothing replaces it
        # the run fails, naming the pod it left on node-b, the image and why
        assert run.rc == 2, run.stdout[-3000:]
        [line] = report["failed_steps"]
        assert line.startswith("pod default/%s" % state["old_pod"]) and state["image"] in line
        assert "NOT made safe" in line and "an address of Ready node node-c" in line
    finally:
        kube.patch("nodes", "node-c", {"status": {"addresses": addresses}}, subresource="status")


@pytest.fixture
def stale_rbd_watcher_mixed(clean_lab, kube, incident):
    state = incident("stale-rbd-watcher-mixed")
    yield clean_lab, state, kube
    for name in state["deployments"]:
        kube.delete("deployments", name, "default")


def test_mixed_node_rbd_recovered_other_volumes_reported_and_left_alone(stale_rbd_watcher_mixed, lab_inventory, tmp_path):
    """Issue 17: node-b holds, beside stale-rbd-watcher's RBD volume, a volume of another CSI driver (attached,
    EBS-like), an in-tree NFS volume and a VolumeAttachment of a PV that does not exist. The RBD pod
    is recovered on another node; every other volume is in the report with what was done and why,
    the other driver's attachments are untouched, and nothing makes the run fail."""
    lab, state, kube = stale_rbd_watcher_mixed
    assert_left_by_kubernetes(kube, state)
    other, nfs, orphan = state["other"], state["nfs"], state["orphan"]
    other_va = kube.get("volumeattachments", other["volumeattachment"])
    orphan_va = kube.get("volumeattachments", orphan["volumeattachment"])
    extra = {"failed_node": "node-b", "lease_grace_seconds": 3, "wait_timeout": 60,
             "report_path": str(tmp_path / "r.json")}

    before = blocklist(lab)
    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert blocklist(lab) == before
    assert_left_by_kubernetes(kube, state)

    run = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    volumes = dict((v["pv_name"], v) for v in report["volumes"] if v["pv_name"])

    # RBD: fenced and released; the pod runs on another node.
    rbd = volumes[state["pv"]]
    assert rbd["rbd"] is True and rbd["safe"] is True and rbd["action"] == "released"
    # node-b's client by node-b's address, whole: ceph-csi recorded it there, and node-b staged the image (a
    # frozen second client of node-b would show nowhere; issue 43)
    whole = state["failed_node_ip"] + ":0/0"
    assert state["watchers"][0].startswith(state["failed_node_ip"] + ":")
    assert rbd["how"].startswith("fenced (blocklist): %s (" % whole) and "watcher" in rbd["how"], rbd["how"]
    assert report["fence_plan"]["fence"] == [whole] and whole in blocklist(lab)
    assert report["pods_force_deleted"] == [state["old_pod"]]
    replacement(kube, state, report)

    # The other CSI driver's volume: reported, kept attached, its attachment untouched.
    ebs = volumes[other["pv"]]
    assert (ebs["rbd"], ebs["safe"], ebs["action"], ebs["driver"]) == (False, False, "kept attached", state["other_driver"])
    assert ebs["attachments"] == [other["volumeattachment"]] and ebs["claims"] == ["default/" + other["pvc"]]
    assert "not an RBD volume (CSI driver %s)" % state["other_driver"] in ebs["how"]
    assert "its driver must detach it" in ebs["how"] and "out_of_service_taint=true" in ebs["how"]
    after = kube.get("volumeattachments", other["volumeattachment"])
    assert after["metadata"]["resourceVersion"] == other_va["metadata"]["resourceVersion"]
    assert not after["metadata"].get("deletionTimestamp")

    # The in-tree NFS volume: nothing attached, left alone, its pod not force-deleted.
    nfs_volume = volumes[nfs["pv"]]
    assert (nfs_volume["rbd"], nfs_volume["safe"], nfs_volume["action"]) == (False, False, "left alone")
    assert nfs_volume["volume"] == "in-tree nfs" and "with no VolumeAttachment" in nfs_volume["how"]

    # The attachment of a PV that does not exist: named, kept, untouched.
    gone = volumes[orphan["pv"]]
    assert (gone["pv"], gone["safe"], gone["action"]) == (None, False, "kept attached")
    assert "was not found" in gone["how"] and orphan["volumeattachment"] in gone["how"]
    assert kube.get("volumeattachments", orphan["volumeattachment"])["metadata"]["resourceVersion"] == \
        orphan_va["metadata"]["resourceVersion"]

    # The report's list of what is not RBD, the kept attachments, the pods kept.
    not_rbd = dict((v["name"], v) for v in report["volumes_not_rbd"])
    assert {other["pv"], nfs["pv"], orphan["pv"]} <= set(not_rbd)
    assert sorted(not_rbd) == sorted(v["name"] for v in report["volumes"] if not v["rbd"])
    assert not_rbd[other["pv"]]["action"] == "kept attached" and not_rbd[other["pv"]]["how"] == ebs["how"]
    assert {other["volumeattachment"], orphan["volumeattachment"]} <= set(report["volumeattachments_kept"])
    # only the RBD volume's attachment was removed (its volume fenced); Kubernetes would not detach it (clocks `never`)
    assert report["volumeattachments_removed"] == rbd["attachments"] != []
    assert [kube.find("volumeattachments", va) for va in rbd["attachments"]] == [None]
    # the pods of the volumes not made safe stay on node-b, as Kubernetes left them (not evicted: no taint)
    assert report["out_of_service"]["taint"] is False and report["out_of_service_taint_added"] == []
    assert sorted(p["pod"] for p in report["pods_kept"]) == sorted("default/" + state[v]["pod"] for v in ("other", "nfs"))
    on_b = kube.list("pods", "default", field_selector="spec.nodeName=node-b")
    assert sorted(p["metadata"]["name"] for p in on_b) == sorted(state[v]["pod"] for v in ("other", "nfs"))
    assert not [p for p in on_b if p["metadata"].get("deletionTimestamp")]
    # The debug report names each volume with what was done.
    lines = [r for r in run.results("k8s-api") if r["_task"] == "Failover | print the report"][0]["msg"]
    text = "\n".join(lines)
    for name in (state["pv"], other["pv"], nfs["pv"], orphan["pv"]):
        assert name in text
    assert "kept attached: not an RBD volume (CSI driver %s)" % state["other_driver"] in text


def _node_b_state(lab, kube, state):
    """What a failover changes: the blocklist, node-b's pods and attachments, its taints and the watchers."""
    node = kube.get("nodes", "node-b")
    return dict(blocklist=blocklist(lab),
                pods=sorted((p["metadata"]["name"], bool(p["metadata"].get("deletionTimestamp")))
                            for p in kube.list("pods", "default", field_selector="spec.nodeName=node-b")),
                attachments=sorted(va["metadata"]["name"] for va in kube.list("volumeattachments")
                                   if va["spec"].get("nodeName") == "node-b"),
                taints=[t["key"] for t in node["spec"].get("taints") or []],
                record="volfence.csi/failover" in (node["metadata"].get("annotations") or {}),
                watchers=[w["address"] for w in lab.watchers(state["image"])])


def test_a_failing_or_unreachable_host_is_named_in_the_report_and_nothing_is_done_after_it(
        stale_rbd_watcher, lab_inventory, tmp_path):
    """The Kubernetes API host without a usable Python fails the first step; the Ceph admin host, unreachable, fails
    the fence step (after the preflight marked node-b's start). Each run ends with its report naming the host,
    the step and why, fences, deletes, detaches and taints nothing, and fails."""
    lab, state, kube = stale_rbd_watcher
    assert_left_by_kubernetes(kube, state)
    extra = {"failed_node": "node-b", "lease_grace_seconds": 3, "wait_timeout": 60,
             "report_path": str(tmp_path / "r.json")}
    before = _node_b_state(lab, kube, state)
    assert before["watchers"] and before["attachments"] and before["pods"]
    for host, kind, step in (("k8s-api", FAILED, "Failover | 1. preflight"),
                             ("ceph-admin", UNREACHABLE, "Failover | 2. fence")):
        run = run_playbook(inventory_with_failing_hosts(lab_inventory, tmp_path, **{
            "broken" if kind == FAILED else "unreachable": [host]}), PLAYBOOK, extra)
        report = stopped_with_report(run, tmp_path / "r.json", host, kind, step)
        assert report["fence_plan"] == {} and report["blocklist_actions"] == [] and report["pods_force_deleted"] == []
        assert report["volumeattachments_removed"] == [] and report["out_of_service_taint_added"] == []
        assert report["markers"] == {} and report["marker_recorded"] is False
        assert _node_b_state(lab, kube, state) == before  # nothing fenced, deleted, detached, tainted or recorded
        assert_left_by_kubernetes(kube, state)

"""playbooks/diagnose.yml on the lab with all four incidents present at once."""

import json
import os

import pytest

from failing_hosts import UNREACHABLE, inventory_with_failing_hosts, stopped_with_report
from labtools import REPO, clear_foreign_attachments, remove_incident, run_playbook

PLAYBOOK = os.path.join(REPO, "playbooks", "diagnose.yml")


@pytest.fixture(scope="module")
def incidents(lab):
    if not os.path.exists(os.path.join(lab.dir, "kubeconfig")):
        pytest.skip("the lab has no Kubernetes side")
    for node in lab.nodes:
        lab.lab("revive-node", node)
    lab.unblock_all()
    built = dict((name, json.loads(lab.lab("scenario", name))) for name in ("stale-rbd-watcher", "stale-volumeattachment", "dead-fuse-mount", "stale-rbd-lock"))
    yield built
    from kubeemu.client import KubeClient, server_from_kubeconfig
    kube = KubeClient(server_from_kubeconfig(os.path.join(lab.dir, "kubeconfig")))
    for state in built.values():
        remove_incident(kube, state)
    clear_foreign_attachments(kube)
    for node in lab.nodes:
        lab.lab("revive-node", node)
    lab.unblock_all()


def blocklist_and_objects(lab):
    return lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout


def test_diagnose_classifies_every_seed_and_writes_a_report(incidents, lab, lab_inventory, tmp_path):
    report = tmp_path / "report.json"
    before = blocklist_and_objects(lab)
    run = run_playbook(lab_inventory, PLAYBOOK, {"stuck_threshold_seconds": 1, "report_path": str(report)})
    assert run.rc == 0, run.stdout[-3000:]
    data = json.loads(report.read_text())
    by_pod = dict((p["pod"], p) for p in data["pods"])
    expected = {
        incidents["stale-rbd-watcher"]["stuck_pod"]: ("stale-rbd-watcher", "playbooks/node_failover.yml", {"failed_node": "node-b"}),
        incidents["stale-volumeattachment"]["stuck_pod"]: ("stale-volumeattachment", "playbooks/volumeattachment_cleanup.yml", None),
        incidents["dead-fuse-mount"]["pod"]: ("dead-fuse-mount", "playbooks/fuse_mount_recovery.yml", None),
        incidents["stale-rbd-lock"]["stuck_pod"]: ("stale-rbd-lock", "playbooks/rbd_lock_cleanup.yml", None),
    }
    for pod, (incident, playbook, extra) in expected.items():
        assert pod in by_pod, "%s not diagnosed; got %s" % (pod, sorted(by_pod))
        assert by_pod[pod]["incident"] == incident
        assert by_pod[pod]["next"]["file"] == playbook
        if extra:
            assert by_pod[pod]["next"]["extra_vars"] == extra
    watcher = incidents["stale-rbd-watcher"]["watchers"][0]
    assert any(watcher in e for e in by_pod[incidents["stale-rbd-watcher"]["stuck_pod"]]["evidence"])
    assert any("kubelet_lock_magic_node-b" in e for e in by_pod[incidents["stale-rbd-lock"]["stuck_pod"]]["evidence"])
    assert data["cluster_version"].startswith("v1.")
    # The table names the playbook of each stuck pod.
    table = [r for r in run.results("k8s-api") if r["_task"] == "Diagnose | print the report"][0]["msg"]
    assert any("stale-rbd-watcher" in line and "failed_node=node-b" in line for line in table)
    # Read-only: the blocklist is as it was.
    assert blocklist_and_objects(lab) == before


def test_diagnose_ties_blocklist_entries_to_their_owners(incidents, lab, lab_inventory, tmp_path):
    """Entries of each kind next to the stuck pods: the dead node-b's own address (its node), a Ready node's
    address (flagged: its clients are cut off) and an address nothing known has."""
    stuck = incidents["stale-rbd-watcher"]["stuck_pod"]
    entries = [lab.nodes["node-b"] + ":0/4242", lab.nodes["node-a"] + ":0/4343", "192.0.2.77:0/1"]
    report = tmp_path / "report.json"
    try:
        for entry in entries:
            lab.ceph("osd", "blocklist", "add", entry, "600")
        run = run_playbook(lab_inventory, PLAYBOOK, {"stuck_threshold_seconds": 1, "report_path": str(report)})
    finally:
        for entry in entries:
            lab.ceph("osd", "blocklist", "rm", entry)
    assert run.rc == 0, run.stdout[-3000:]
    data = json.loads(report.read_text())
    owned = dict((o["entry"], o) for o in data["blocklist_owners"])
    # node-b's address. ceph-csi recorded it when node-b staged the image, and forgot it when Kubernetes detached
    # the volume from node-b so that the replacement could attach (every ControllerUnpublish removes the record,
    # ceph-csi #5828): the entry is the node's only
    assert [(w["kind"], w["name"]) for w in owned[entries[0]]["owners"]] == [("node", "node-b")]
    assert owned[entries[0]]["flags"] == []
    assert [f["flag"] for f in owned[entries[1]]["flags"]] == ["covers-ready-node"]
    assert owned[entries[2]]["owners"] == [] and [f["flag"] for f in owned[entries[2]]["flags"]] == ["unknown-owner"]
    pod = [p for p in data["pods"] if p["pod"] == stuck][0]
    assert entries[0] in [o["entry"] for o in pod["blocklist"]]  # the holder's, next to the stuck pod
    table = [r for r in run.results("k8s-api") if r["_task"] == "Diagnose | print the report"][0]["msg"]
    assert "  - 192.0.2.77:0/1 (nobody known); unknown-owner" in table


def test_diagnose_in_check_mode_changes_nothing(incidents, lab, lab_inventory, tmp_path):
    from kubeemu.client import KubeClient, server_from_kubeconfig
    kube = KubeClient(server_from_kubeconfig(os.path.join(lab.dir, "kubeconfig")))
    since = max([r["seq"] for r in kube.request("GET", "/_emulator/requests").get("items", [])] or [0])
    before = blocklist_and_objects(lab)
    run = run_playbook(lab_inventory, PLAYBOOK, {"stuck_threshold_seconds": 1,
                                                 "report_path": str(tmp_path / "r.json")}, check=True)
    assert run.rc == 0, run.stdout[-3000:]
    changed = [r["_task"] for host in ("k8s-api", "ceph-admin") for r in run.results(host)
               if r.get("changed") and r["_task"] != "Diagnose | write the JSON report"]
    assert changed == []
    # The lab's own agents (urllib) keep writing; the collection (the kubernetes client) did not.
    log = kube.request("GET", "/_emulator/requests", query={"since": since}).get("items", [])
    ours = [r for r in log if "urllib" not in (r.get("user_agent") or "")]
    assert ours, "the playbook's reads are in the log"
    assert [r for r in ours if r["method"] not in ("GET", "HEAD")] == []
    assert blocklist_and_objects(lab) == before


def test_diagnose_reports_every_volume_of_a_dead_node_with_volumes_of_other_drivers(clean_lab, kube, incident,
                                                                                     lab_inventory, tmp_path):
    """Issue 17: node-b is down holding an RBD volume, an EBS-like CSI volume, an in-tree NFS volume
    and an attachment of a PV that does not exist. diagnose does not fail, still sends the stuck RBD
    pod to node_failover, and lists each of node-b's volumes with what node_failover would do."""
    state = incident("stale-rbd-watcher-mixed")
    try:
        before = blocklist_and_objects(clean_lab)
        run = run_playbook(lab_inventory, PLAYBOOK, {"stuck_threshold_seconds": 1,
                                                     "report_path": str(tmp_path / "r.json")})
        assert run.rc == 0, run.stdout[-3000:]
        data = json.loads((tmp_path / "r.json").read_text())
        by_pod = dict((p["pod"], p) for p in data["pods"])
        assert by_pod[state["stuck_pod"]]["incident"] == "stale-rbd-watcher"
        assert by_pod[state["stuck_pod"]]["next"]["extra_vars"] == {"failed_node": "node-b"}
        node_b = [n for n in data["nodes_not_ready"] if n["node"] == "node-b"][0]
        volumes = dict((v["name"], v) for v in node_b["volumes"])
        assert volumes[state["pv"]]["rbd"] is True and "fences node-b's clients" in volumes[state["pv"]]["note"]
        ebs = volumes[state["other"]["pv"]]
        assert ebs["rbd"] is False and ebs["attachments"] == [state["other"]["volumeattachment"]]
        assert "node_failover cannot fence it and leaves it attached" in ebs["note"]
        assert "does not force-delete the pods using it" in volumes[state["nfs"]["pv"]]["note"]
        assert "cannot name the volume" in volumes[state["orphan"]["pv"]]["note"]
        table = [r for r in run.results("k8s-api") if r["_task"] == "Diagnose | print the report"][0]["msg"]
        assert any(line.startswith("node node-b (Ready=") for line in table)
        assert any(state["other"]["pv"] in line and "cannot fence it" in line for line in table)
        assert blocklist_and_objects(clean_lab) == before
    finally:
        for name in state["deployments"]:
            kube.delete("deployments", name, "default")


def test_an_unreachable_ceph_host_is_named_in_the_report_and_the_kubernetes_side_still_classified(
        incidents, lab, lab_inventory, tmp_path):
    """The Ceph admin host cannot be reached: the run ends with its report, which names the host, the step and
    why, still classifies the stuck pods from the Kubernetes side (without watchers and locks), and fails."""
    before = blocklist_and_objects(lab)
    inventory = inventory_with_failing_hosts(lab_inventory, tmp_path, unreachable=["ceph-admin"])
    run = run_playbook(inventory, PLAYBOOK, {"stuck_threshold_seconds": 1, "report_path": str(tmp_path / "r.json")})
    data = stopped_with_report(run, tmp_path / "r.json", "ceph-admin", UNREACHABLE, "Diagnose | read the Ceph side")
    assert data["blocklist"] == [] and data["cluster_version"].startswith("v1.")
    by_pod = dict((p["pod"], p) for p in data["pods"])
    # its event names the lock: classified from the Kubernetes side alone
    assert by_pod[incidents["stale-rbd-lock"]["stuck_pod"]]["incident"] == "stale-rbd-lock"
    table = [r for r in run.results("k8s-api") if r["_task"] == "Diagnose | print the report"][0]["msg"]
    assert any(line.startswith("Diagnose | read the Ceph side failed on ceph-admin") for line in table)
    assert blocklist_and_objects(lab) == before

"""playbooks/readiness.yml on the lab: a lab set up for fencing passes every check; a Ceph user that may not
fence fails the run after the report names the check and its fix; fail_on decides the run's status."""

import json
import os

import pytest

from failing_hosts import UNREACHABLE, inventory_with_failing_hosts
from labtools import REPO, blocklist_entries, run_module, run_playbook
from volfence_lab.scenarios import base_objects

PLAYBOOK = os.path.join(REPO, "playbooks", "readiness.yml")
DRIVER = "rbd.csi.ceph.com"
SET = "vft-readiness"
PREFIX = "vft-ready-"
PROBE = "192.0.2.1:0/3735928559"


@pytest.fixture
def fencing_ready(clean_lab, kube, lab_inventory):
    """The lab with what fencing needs besides the CSIAddonsNodes it has: ceph-csi's own objects (CSIDriver,
    StorageClass with the controller-publish secret, the controller plugin with fencing on: the lab's scenarios
    make them), a NetworkFenceClass for the lab's driver and the node_fences role's fences (the module call the
    role makes), the last two removed afterwards."""
    base_objects(kube, fencing=True)
    if kube.find("networkfenceclasses", "vft-readiness") is None:  # left by an interrupted run
        kube.create("networkfenceclasses", {"apiVersion": "csiaddons.openshift.io/v1alpha1",
                                            "kind": "NetworkFenceClass", "metadata": {"name": "vft-readiness"},
                                            "spec": {"provisioner": DRIVER, "parameters": {"clusterID": "lab"}}})
    fences = {"set": SET, "name_prefix": PREFIX}
    kubeconfig = os.path.join(clean_lab.dir, "kubeconfig")
    try:
        made = run_module(lab_inventory, "k8s-api", "volfence.csi.networkfence",
                          {"node_fences": fences, "network_fence_class": "vft-readiness", "wait": False,
                           "kubeconfig": kubeconfig})
        assert not made.get("failed"), made
        yield clean_lab
    finally:
        gone = run_module(lab_inventory, "k8s-api", "volfence.csi.networkfence",
                          {"node_fences": dict(fences, state="absent"), "network_fence_class": "vft-readiness",
                           "kubeconfig": kubeconfig})
        kube.delete("networkfenceclasses", "vft-readiness")
        base_objects(kube, fencing=False)  # the lab's default, ceph-csi's own
    assert not gone.get("failed"), gone


def readiness(lab_inventory, tmp_path, **extra):
    path = tmp_path / "readiness.json"
    run = run_playbook(lab_inventory, PLAYBOOK, dict({"node_fences_set": SET, "node_fences_name_prefix": PREFIX,
                                                      "report_path": str(path)}, **extra))
    report = json.loads(path.read_text()) if path.exists() else None
    return run, report, dict((c["check"], c) for c in (report or {}).get("checks", []))


def test_a_lab_ready_for_fencing_passes_every_check(fencing_ready, lab_inventory, tmp_path):
    run, report, checks = readiness(lab_inventory, tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert report["verdict"] == "pass", [c for c in report["checks"] if c["verdict"] != "pass"]
    assert set(checks) == {"kubernetes-version", "node-addresses", "node-address-sharing", "csidriver",
                           "controller-publish-secret", "ceph-csi-fencing", "csi-addons",
                           "networkfence-class", "csiaddonsnode", "csiaddonsnode-controller", "csiaddonsnode-nodes",
                           "node-fences", "kubernetes-rights", "ceph-connection", "ceph-versions", "ceph-range-fence",
                           "ceph-fence-permission"}
    assert "fencing readiness: PASS, 17 pass, 0 warn, 0 fail" in run.stdout
    assert checks["ceph-csi-fencing"]["fences"] == ["volfence.csi node_failover",
                                                    "ceph-csi on detach (out-of-service taint)"]
    assert PROBE not in blocklist_entries(fencing_ready)  # the probe entry is gone again


def test_a_user_that_may_not_fence_fails_the_run_with_the_fix(fencing_ready, lab_inventory, tmp_path):
    lab = fencing_ready
    keyring = str(tmp_path / "ceph.client.vft-nofence.keyring")
    lab.ceph("auth", "get-or-create", "client.vft-nofence", "mon", "allow r", "osd", "allow r", "-o", keyring)
    try:
        extra = {"volfence_ceph_user": "vft-nofence", "volfence_ceph_keyring": keyring}
        run, report, checks = readiness(lab_inventory, tmp_path, **extra)
        assert run.rc != 0 and "fencing readiness: fail" in run.stdout, run.stdout[-3000:]
        permission = checks["ceph-fence-permission"]
        assert permission["verdict"] == "fail" and "may not add a blocklist entry" in permission["detail"]
        assert "osd blocklist" in permission["fix"]
        assert checks["ceph-connection"]["verdict"] == "pass"  # it reads, it may not fence
        assert report["verdict"] == "fail" and PROBE not in blocklist_entries(lab)

        told = run_playbook(lab_inventory, PLAYBOOK, dict(extra, node_fences_set=SET, node_fences_name_prefix=PREFIX,
                                                          fail_on="never", report_path=str(tmp_path / "r2.json")))
        assert told.rc == 0, told.stdout[-3000:]
    finally:
        lab.ceph("auth", "rm", "client.vft-nofence")


def test_check_mode_does_not_probe(fencing_ready, lab_inventory, tmp_path):
    path = tmp_path / "readiness.json"
    run = run_playbook(lab_inventory, PLAYBOOK, {"node_fences_set": SET, "node_fences_name_prefix": PREFIX,
                                                 "report_path": str(path)}, check=True)
    assert run.rc == 0, run.stdout[-3000:]
    checks = dict((c["check"], c) for c in json.loads(path.read_text())["checks"])
    assert checks["ceph-fence-permission"]["verdict"] == "warn" and "not probed" in checks["ceph-fence-permission"]["detail"]


def test_an_unreachable_ceph_host_is_a_failed_check_named_in_the_report_and_fails_the_run(fencing_ready, lab_inventory,
                                                                                          tmp_path):
    """The Ceph admin host cannot be reached: the report names it (a failed-step check with the step and why, no
    Ceph check made), no probe entry is added, and the run fails even with fail_on=never."""
    lab = fencing_ready
    before = blocklist_entries(lab)
    inventory = inventory_with_failing_hosts(lab_inventory, tmp_path, unreachable=["ceph-admin"])
    run, report, checks = readiness(inventory, tmp_path, fail_on="never")
    assert run.rc == 2, run.stdout[-3000:]
    for internal in ("Error rendering template", "object has no attribute", "Traceback"):
        assert internal not in run.stdout + run.stderr, run.stdout[-3000:]
    failed = report["failed_step"]
    assert failed["host"] == "ceph-admin" and failed["step"] == "Readiness | the Ceph side"
    assert failed["reason"].startswith(UNREACHABLE), failed
    assert checks["failed-step"]["verdict"] == "fail" and "ceph-admin" in checks["failed-step"]["detail"]
    assert report["verdict"] == "fail" and "ceph-connection" not in checks and "ceph" not in checks
    assert checks["kubernetes-version"]["verdict"] == "pass"  # the Kubernetes side was checked
    assert blocklist_entries(lab) == before and PROBE not in blocklist_entries(lab)

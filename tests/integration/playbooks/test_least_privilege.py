"""The playbooks under the RBAC the collection ships (rbac/kubernetes/, issue 45): the lab's API server authorizes
a ServiceAccount's token as kube-apiserver does (docs/lab.md, "Identities and RBAC"), so a right the code needs
and the files do not grant fails these tests with the API server's 403."""

import json
import os

import pytest

from labtools import (REPO, apply_objects, blocklist_entries, delete_objects, revive_node, run_playbook,
                      service_account_kubeconfig, shipped_rbac)

# For the failovers: Kubernetes' own eviction and force detach never come (clocks `never`), the playbooks do
# the work.
never_releases = pytest.mark.usefixtures("kubernetes_never_releases")

NAMESPACE = "volfence"


def playbook(name):
    return os.path.join(REPO, "playbooks", name + ".yml")


@pytest.fixture
def shipped(clean_lab, kube, tmp_path):
    """{"read": kubeconfig, "failover": kubeconfig}: the shipped files applied as they are, and a kubeconfig with
    a token of each of their ServiceAccounts; the objects are deleted after the test."""
    objects = shipped_rbac("volfence-read") + shipped_rbac("volfence-failover")
    apply_objects(kube, objects)
    yield dict((duty, service_account_kubeconfig(clean_lab, kube, NAMESPACE, "volfence-" + duty,
                                                 tmp_path / ("kubeconfig-" + duty)))
               for duty in ("read", "failover"))
    delete_objects(kube, objects)


def test_diagnose_and_readiness_run_under_the_read_only_role(shipped, incident, lab_inventory, tmp_path):
    state = incident("stale-rbd-watcher")
    report = tmp_path / "diagnose.json"
    run = run_playbook(lab_inventory, playbook("diagnose"), {
        "volfence_kubeconfig": shipped["read"], "stuck_threshold_seconds": 1, "report_path": str(report)})
    assert run.rc == 0, run.stdout[-3000:]
    pods = dict((p["pod"], p) for p in json.loads(report.read_text())["pods"])
    assert pods[state["stuck_pod"]]["incident"] == "stale-rbd-watcher"
    for rights in ("read", "failover"):
        readiness = run_playbook(lab_inventory, playbook("readiness"), {
            "volfence_kubeconfig": shipped["read"], "rights": rights, "report_path": str(tmp_path / "readiness.json")})
        assert "forbidden" not in readiness.stdout.lower(), readiness.stdout[-3000:]
        data = json.loads((tmp_path / "readiness.json").read_text())
        checks = dict((c["check"], c) for c in data["checks"])
        assert data["failed_step"] is None
        assert [checks[c]["verdict"] for c in ("csidriver", "csi-addons", "csiaddonsnode")] == ["pass"] * 3, checks
        if rights == "read":   # the read-only token holds what the read-only playbooks need
            assert checks["kubernetes-rights"]["verdict"] == "pass", checks["kubernetes-rights"]
        else:                  # and readiness names, before an outage, what a failover would be refused
            assert readiness.rc != 0 and checks["kubernetes-rights"]["verdict"] == "fail"
            assert "kubectl auth can-i patch nodes --all-namespaces" in checks["kubernetes-rights"]["detail"]
            assert "kubectl auth can-i create events.events.k8s.io --all-namespaces" in \
                checks["kubernetes-rights"]["detail"]


@never_releases
def test_the_read_only_role_cannot_fail_over_and_the_run_says_which_right_is_missing(
        shipped, incident, kube, lab, lab_inventory, tmp_path):
    state = incident("stale-rbd-watcher")
    before = blocklist_entries(lab)
    run = run_playbook(lab_inventory, playbook("node_failover"), {
        "volfence_kubeconfig": shipped["read"], "failed_node": "node-b", "lease_grace_seconds": 3,
        "report_path": str(tmp_path / "r.json")})
    assert run.rc != 0
    failed = json.loads((tmp_path / "r.json").read_text())["failed_step"]
    assert failed["step"] == "Failover | 1. preflight, and the failover's start on each node"
    assert ('nodes "node-b" is forbidden: User "system:serviceaccount:volfence:volfence-read" cannot patch resource '
            '"nodes" in API group "" at the cluster scope') in failed["reason"], failed
    assert blocklist_entries(lab) == before
    assert kube.find("pods", state["old_pod"], "default") is not None  # nothing released


@never_releases
def test_failover_and_recovery_with_a_networkfence_run_under_the_failover_role(
        shipped, incident, kube, lab, lab_inventory, tmp_path):
    state = incident("stale-rbd-watcher")
    failover = run_playbook(lab_inventory, playbook("node_failover"), {
        "volfence_kubeconfig": shipped["failover"], "failed_node": "node-b", "fence_method": "networkfence",
        "lease_grace_seconds": 3, "wait_timeout": 60, "networkfence_cluster_id": "lab", "out_of_service_taint": True,
        "networkfence_secret": {"name": "csi-rbd-secret", "namespace": "ceph-csi"},
        "report_path": str(tmp_path / "failover.json")})
    assert failover.rc == 0, failover.stdout[-3000:]
    report = json.loads((tmp_path / "failover.json").read_text())
    # force-deleted, or removed by Kubernetes first once the out-of-service taint was set
    gone = report["pods_force_deleted"] + [p["name"] for p in report["pods_absent"]]
    assert report["failed_steps"] == [] and gone == [state["old_pod"]]
    assert "could not be posted" not in failover.stdout  # its Events too
    assert kube.get("networkfences", "volfence-node-b")["spec"]["fenceState"] == "Fenced"
    revive_node(lab, kube, "node-b")
    recover = run_playbook(lab_inventory, playbook("node_recover"), {
        "volfence_kubeconfig": shipped["failover"], "node": "node-b", "report_path": str(tmp_path / "recover.json")})
    assert recover.rc == 0, recover.stdout[-3000:]
    assert "could not be posted" not in recover.stdout
    assert kube.get("networkfences", "volfence-node-b")["spec"]["fenceState"] == "Unfenced"
    node_b = kube.get("nodes", "node-b")
    assert "volfence.csi/failover" not in (node_b["metadata"].get("annotations") or {})
    assert not any(t["key"] == "node.kubernetes.io/out-of-service" for t in node_b["spec"].get("taints") or [])

"""The csi_addons role: its molecule scenario on the lab (URL mirror served locally), and the paths
the scenario does not take, on an isolated API emulator: the directory mirror, check mode, removal
of the CRDs (refused while NetworkFences exist), the ceph-csi-operator sidecar switch, unreadable
manifests and a missing Rook ConfigMap (clear errors, nothing changed)."""

import os
import re

import pytest

from roles_helpers import (
    CSI_ADDONS_FIXTURE,
    NF_API,
    Cluster,
    FixtureServer,
    RoleRunner,
    build_release_mirror,
    molecule_failure,
    run_molecule,
)

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEPLOYMENT = "/apis/apps/v1/namespaces/csi-addons-system/deployments/csi-addons-controller-manager"
CSI_ADDONS_CRDS = ["csiaddonsnodes.csiaddons.openshift.io", "networkfenceclasses.csiaddons.openshift.io",
                   "networkfences.csiaddons.openshift.io", "reclaimspacejobs.csiaddons.openshift.io"]
DRIVER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "drivers.csi.ceph.io"},
    "spec": {"group": "csi.ceph.io", "scope": "Namespaced",
             "names": {"plural": "drivers", "singular": "driver", "kind": "Driver", "listKind": "DriverList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


@pytest.fixture
def role(tmp_path, cluster):
    return RoleRunner(tmp_path, "csi_addons", cluster.kubeconfig)


@pytest.fixture
def mirror(tmp_path):
    """The root of a release mirror built from tests/roles/fixtures (see roles_helpers.build_release_mirror)."""
    root = tmp_path / "mirror"
    build_release_mirror(root)
    return root


def test_molecule_scenario_on_the_lab(lab, lab_inventory, tmp_path, mirror):
    """molecule test -s csi_addons: converge (URL mirror, image overrides, Rook sidecar switch, every lab
    node Connected), idempotence, verify, side effects (bad input refused, removal keeping the CRDs)."""
    with FixtureServer(mirror) as fixtures:
        rc, output = run_molecule("csi_addons", tmp_path, {
            "VOLFENCE_LAB_INVENTORY": lab_inventory,
            "VOLFENCE_CSI_ADDONS_SOURCE": "%s/%s" % (fixtures.url, CSI_ADDONS_FIXTURE)})
        served = list(fixtures.paths)
    assert rc == 0, molecule_failure(output)
    for action in ("syntax", "prepare", "converge", "idempotence", "verify", "side_effect", "cleanup"):
        assert re.search(r"csi_addons (➜|>) %s: Executed: Successful" % action, output), action
    assert "/%s/setup-controller.yaml" % CSI_ADDONS_FIXTURE in served


def test_directory_mirror_check_mode_install_and_idempotence(cluster, role, mirror):
    source = str(mirror / CSI_ADDONS_FIXTURE)
    seq = cluster.last_seq()
    check = role.run(check=True, diff=True, csi_addons_manifest_source=source)
    assert not check.failed, check.msg
    assert check.changed_tasks, "check mode reports what it would do"
    assert cluster.writes_since(seq) == [], "check mode wrote to the cluster"
    assert cluster.get(DEPLOYMENT) is None

    first = role.run(csi_addons_manifest_source=source)
    assert not first.failed, first.msg
    assert cluster.names(CRDS) == CSI_ADDONS_CRDS
    dep = cluster.get(DEPLOYMENT)
    assert [c["image"] for c in dep["spec"]["template"]["spec"]["containers"]] == [
        "gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0", "quay.io/csiaddons/k8s-controller:v0.14.0"]
    report = first.facts["csi_addons_report"]
    assert report["available"] is True and report["csiaddonsnode_crd_served"] is True

    second = role.run(csi_addons_manifest_source=source)
    assert not second.failed and second.changed_tasks == []


def test_namespace_and_images_are_rewritten(cluster, role, mirror):
    source = str(mirror / CSI_ADDONS_FIXTURE)
    run = role.run(csi_addons_manifest_source=source, csi_addons_namespace="storage-addons",
                   csi_addons_image_registry="mirror.example.internal/csi", csi_addons_image_tag="v0.14.0-1")
    assert not run.failed, run.msg
    dep = cluster.get("/apis/apps/v1/namespaces/storage-addons/deployments/csi-addons-controller-manager")
    assert [c["image"] for c in dep["spec"]["template"]["spec"]["containers"]] == [
        "mirror.example.internal/csi/kubebuilder/kube-rbac-proxy:v0.8.0",
        "mirror.example.internal/csi/csiaddons/k8s-controller:v0.14.0-1"]
    binding = cluster.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/csi-addons-manager-rolebinding")
    assert binding["subjects"][0]["namespace"] == "storage-addons"
    assert cluster.get("/api/v1/namespaces/csi-addons-system") is None


def test_removal_of_the_crds_is_refused_while_fences_exist(cluster, role, mirror):
    source = str(mirror / CSI_ADDONS_FIXTURE)
    assert not role.run(csi_addons_manifest_source=source).failed
    cluster.store([{"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFence",
                    "metadata": {"name": "fence-worker-3"},
                    "spec": {"fenceState": "Fenced", "cidrs": ["192.0.2.3/32"], "networkFenceClassName": "rbd"}}])
    seq = cluster.last_seq()
    refused = role.run(csi_addons_manifest_source=source, csi_addons_state="absent", csi_addons_remove_crds=True)
    assert refused.failed
    assert "1 NetworkFence object(s) exist (fence-worker-3; Fenced: fence-worker-3)" in refused.msg
    assert "nothing was changed" in refused.msg
    assert cluster.writes_since(seq) == []
    assert cluster.get(DEPLOYMENT) is not None

    # Without remove_crds the controller goes and the CRDs (and the fence) stay; a second removal changes nothing.
    kept = role.run(csi_addons_manifest_source=source, csi_addons_state="absent")
    assert not kept.failed, kept.msg
    assert cluster.get(DEPLOYMENT) is None and cluster.get("/api/v1/namespaces/csi-addons-system") is None
    assert cluster.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/csi-addons-manager-role") is None
    assert cluster.names(NF_API + "/networkfences") == ["fence-worker-3"]
    again = role.run(csi_addons_manifest_source=source, csi_addons_state="absent")
    assert not again.failed and again.changed_tasks == []

    forced = role.run(csi_addons_manifest_source=source, csi_addons_state="absent", csi_addons_remove_crds=True,
                      csi_addons_force=True)
    assert not forced.failed, forced.msg
    assert cluster.names(CRDS) == []


def test_ceph_csi_operator_sidecar_switch(cluster, role, mirror):
    cluster.create(CRDS, DRIVER_CRD)
    cluster.store([{"apiVersion": "csi.ceph.io/v1", "kind": "Driver",
                    "metadata": {"name": "rook-ceph.rbd.csi.ceph.com", "namespace": "rook-ceph"},
                    "spec": {"deployCsiAddons": False, "enableMetadata": True}}])
    source = str(mirror / CSI_ADDONS_FIXTURE)
    driver = "/apis/csi.ceph.io/v1/namespaces/rook-ceph/drivers/rook-ceph.rbd.csi.ceph.com"
    on = role.run(csi_addons_manifest_source=source, csi_addons_sidecar="ceph_csi_operator")
    assert not on.failed, on.msg
    assert cluster.get(driver)["spec"] == {"deployCsiAddons": True, "enableMetadata": True}
    off = role.run(csi_addons_manifest_source=source, csi_addons_sidecar="ceph_csi_operator", csi_addons_state="absent")
    assert not off.failed, off.msg
    assert cluster.get(driver)["spec"]["deployCsiAddons"] is False


def test_missing_operator_object_is_a_clear_error_before_any_change(cluster, role, mirror):
    source = str(mirror / CSI_ADDONS_FIXTURE)
    seq = cluster.last_seq()
    run = role.run(csi_addons_manifest_source=source, csi_addons_sidecar="rook")
    assert run.failed
    assert "ConfigMap rook-ceph/rook-ceph-operator-config (v1) does not exist" in run.msg
    assert "csi_addons_sidecar=ceph_csi_operator" in run.msg
    assert cluster.writes_since(seq) == []
    run = role.run(csi_addons_manifest_source=source, csi_addons_sidecar="ceph_csi_operator")
    assert "cannot exist: the cluster does not serve csi.ceph.io/v1 Driver" in run.msg
    assert cluster.writes_since(seq) == []


def test_unreadable_manifests_are_a_clear_error(cluster, role, tmp_path, mirror):
    with FixtureServer(mirror) as fixtures:
        run = role.run(csi_addons_manifest_source=fixtures.url + "/csi-addons/v9.9.9")
    assert run.failed
    assert "cannot read the CSI-Addons manifests, nothing was changed: crds.yaml: Status code was 404" in run.msg
    assert cluster.names(CRDS) == []
    run = role.run(csi_addons_manifest_source=str(tmp_path / "no-such-dir"))
    assert run.failed and "crds.yaml:" in run.msg and "nothing was changed" in run.msg


BAD_INPUT = [
    ({"csi_addons_state": "gone"}, "csi_addons_state"),
    ({"csi_addons_manifest_source": "ftp://mirror/x"}, "csi_addons_manifest_source must be an http(s):// URL"),
    ({"csi_addons_namespace": "Bad_Namespace"}, "csi_addons_namespace must be a DNS label"),
    ({"csi_addons_image_registry": "quay.io/x:v1"}, "csi_addons_image_registry must be host[:port][/path]"),
    ({"csi_addons_sidecar": "helm"}, "csi_addons_sidecar"),
    ({"csi_addons_force": True}, "csi_addons_force only applies with csi_addons_remove_crds=true"),
    ({"csi_addons_kubeconfig": "/nonexistent/kubeconfig"}, "csi_addons_kubeconfig: /nonexistent/kubeconfig does not exist"),
    ({"csi_addons_kubeconfig": "/tmp"}, "csi_addons_kubeconfig: /tmp is a directory, not a kubeconfig file"),
]


def test_bad_input_changes_nothing(cluster, role):
    """Each case fails with a message naming the problem, and nothing is written (one playbook, one
    block/rescue per case)."""
    seq = cluster.last_seq()
    refusals = role.refusals([variables for variables, _message in BAD_INPUT])
    for (variables, message), refusal in zip(BAD_INPUT, refusals):
        assert refusal is not None and message in refusal, (variables, refusal)
    assert cluster.writes_since(seq) == []

"""fencing_readiness_info through ansible, against the emulator with the CSI-Addons CRDs (or a real cluster when
KUBECONFIG is set: see README.md). The test's objects use a driver and a fence set of their own, so the
assertions name only them: a real cluster's other nodes add their own findings, never remove these."""

import pytest

from k8s_helpers import FENCES, TEST_LABEL, Builder

ADDONS = "/apis/csiaddons.openshift.io/v1alpha1/namespaces/default/csiaddonsnodes"


@pytest.fixture
def world(kube, crds, label, cleanup):
    """Two Ready nodes (198.51.100.31, .32), a NetworkFenceClass of the test's driver, the controller plugin's
    CSIAddonsNode and one per node, all Connected, and the node_fences fence of each node, Unfenced."""
    b = Builder(kube, label, cleanup)
    driver = "vft-%s.csi.example.com" % label
    w = dict(builder=b, label=label, driver=driver, set="vft-%s" % label, prefix="vft-%s-" % label)
    w["a"] = b.node("vft-%s-a" % label, "198.51.100.31")
    w["b"] = b.node("vft-%s-b" % label, "198.51.100.32")
    b.fence_class("vft-%s-class" % label, driver)
    b.addons_node("vft-%s-provisioner-0" % label, driver, w["a"])
    for node in (w["a"], w["b"]):
        b.addons_node("vft-%s-nodeplugin-%s" % (label, node[-1]), driver, node)
    # ceph-csi's own objects for the test's driver: its CSIDriver, a StorageClass, the controller plugin
    kube.create("/apis/storage.k8s.io/v1/csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                                                       "metadata": b.meta(driver), "spec": {"attachRequired": True}})
    cleanup.append("/apis/storage.k8s.io/v1/csidrivers/" + driver)
    kube.create("/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": b.meta("vft-%s-sc" % label),
        "provisioner": driver, "parameters": {"csi.storage.k8s.io/controller-publish-secret-name": "s",
                                              "csi.storage.k8s.io/controller-publish-secret-namespace": "default"}})
    cleanup.append("/apis/storage.k8s.io/v1/storageclasses/vft-%s-sc" % label)
    w["controller"] = "/apis/apps/v1/namespaces/default/deployments/vft-%s-ctrl" % label
    kube.create("/apis/apps/v1/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": b.meta("vft-%s-ctrl" % label, namespace="default"),
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "ctrl"}}, "template": {
            "metadata": {"labels": {"app": "ctrl"}},
            "spec": {"containers": [{"name": "csi-rbdplugin", "image": "cephcsi",
                                     "args": ["--drivername=" + driver, "--controllerserver=true",
                                              "--enable-fencing=true"]}]}}}})
    cleanup.append(w["controller"])
    return w


def readiness(ansible, world, **extra):
    args = {"driver": world["driver"], "node_fences_set": world["set"], "node_fences_name_prefix": world["prefix"]}
    args.update(extra)
    result = ansible.run("fencing_readiness_info", args)
    assert result["_rc"] == 0 and not result["changed"], result
    return result, dict((c["check"], c) for c in result["checks"])


def create_fences(ansible, world, cleanup):
    """The node_fences role's module call for the test's nodes (selected by the test's label)."""
    result = ansible.run("networkfence", {"node_fences": {"set": world["set"], "name_prefix": world["prefix"],
                                                          "node_selector": "%s=%s" % (TEST_LABEL, world["label"])},
                                          "network_fence_class": "vft-%s-class" % world["label"], "wait": False})
    assert result["_rc"] == 0, result
    for node in (world["a"], world["b"]):
        cleanup.append(FENCES + "/" + world["prefix"] + node)


def test_a_ready_world_and_each_failure_named_with_its_fix(ansible, kube, world, cleanup):
    create_fences(ansible, world, cleanup)
    result, checks = readiness(ansible, world)
    assert result["server_version"]
    for name in ("csidriver", "controller-publish-secret", "ceph-csi-fencing", "csi-addons", "networkfence-class",
                 "csiaddonsnode", "csiaddonsnode-controller", "node-fences"):
        assert checks[name]["verdict"] == "pass", checks[name]
    assert world["b"] not in checks["csiaddonsnode-nodes"]["detail"] or checks["csiaddonsnode-nodes"]["verdict"] == "pass"
    assert world["a"] not in checks["node-address-sharing"]["detail"]

    # fencing off in the controller plugin, node b's sidecar fails, node c shares node a's address, node b's
    # address changed after its fence was made
    kube.patch(world["controller"], {"spec": {"template": {"spec": {"containers": [{
        "name": "csi-rbdplugin", "image": "cephcsi", "args": ["--drivername=" + world["driver"],
                                                              "--controllerserver=true"]}]}}}})
    kube.status(ADDONS + "/vft-%s-nodeplugin-b" % world["label"], {"state": "Failed", "message": "no route"})
    c = world["builder"].node("vft-%s-c" % world["label"], "198.51.100.31")
    kube.status("/api/v1/nodes/" + world["b"], {"addresses": [{"type": "InternalIP", "address": "198.51.100.42"}]})
    result, checks = readiness(ansible, world)
    assert result["verdict"] == "fail"
    assert "%s (Failed)" % world["b"] in checks["csiaddonsnode-nodes"]["detail"]
    assert checks["csiaddonsnode-nodes"]["verdict"] == "warn" and checks["csiaddonsnode-nodes"]["fix"]
    sharing = checks["node-address-sharing"]
    assert sharing["verdict"] == "fail" and "198.51.100.31 (%s, %s)" % (world["a"], c) in sharing["detail"]
    fences = checks["node-fences"]
    assert fences["verdict"] == "fail"
    assert "%s%s has 198.51.100.32/32, the node now 198.51.100.42/32" % (world["prefix"], world["b"]) in fences["detail"]
    assert "node_fences role" in fences["fix"]
    fencing = checks["ceph-csi-fencing"]
    assert fencing["verdict"] == "warn" and "default/vft-%s-ctrl" % world["label"] in fencing["detail"]
    assert fencing["fences"] == ["volfence.csi node_failover"]  # the collection alone fences: ceph-csi does not


def test_no_csiaddonsnode_for_the_driver_fails(ansible, kube, world):
    _result, checks = readiness(ansible, world, driver="vft-none.csi.example.com")
    assert checks["csiaddonsnode"]["verdict"] == "fail" and "no connections for driver" in checks["csiaddonsnode"]["detail"]
    assert checks["networkfence-class"]["verdict"] == "warn"


@pytest.mark.parametrize("args, message", [
    ({"node_fences_set": "bad set!"}, "node_fences_set must be a label value"),
    ({"address_types": []}, "address_types must name at least one address type"),
    ({"driver": " "}, "driver must not be empty"),
])
def test_bad_input_is_named(ansible, world, args, message):
    result = ansible.run("fencing_readiness_info", args)
    assert result["_rc"] != 0 and message in result["msg"], result

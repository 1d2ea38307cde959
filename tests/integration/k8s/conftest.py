"""Fixtures of the volfence.csi Kubernetes module tests.

By default the tests start an in-process kubeemu (tools/kubeemu) on a free loopback port
and load the CSI-Addons CRDs into it. With KUBECONFIG set they run against that cluster
instead, and the emulator-only tests (fault injection, request log, version switching) are
skipped with a reason. See README.md.
"""

import json
import os

import pytest
from kubeemu.csi import NetworkFenceStandIn, csiaddons_crds
from kubeemu.wait import wait_until

from k8s_helpers import (
    CLASSES,
    EMULATOR_ONLY,
    FENCES,
    REAL_CLUSTER,
    TEST_LABEL,
    VAS,
    Admin,
    AnsibleRunner,
    Kube,
    KubeError,
    unique,
)


@pytest.fixture(scope="session")
def target(tmp_path_factory):
    """{'kubeconfig': path, 'emulator': EmulatorServer or None}."""
    if REAL_CLUSTER:
        yield dict(kubeconfig=os.environ["KUBECONFIG"].split(os.pathsep)[0], emulator=None)
        return
    from kubeemu.server import EmulatorServer
    srv = EmulatorServer(port=0).start()
    try:
        path = srv.write_kubeconfig(str(tmp_path_factory.mktemp("kube") / "kubeconfig"))
        yield dict(kubeconfig=path, emulator=srv)
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def kube(target):
    return Kube(target["kubeconfig"])


@pytest.fixture(scope="session")
def crds(kube, target):
    """The CSI-Addons CRDs (NetworkFence, NetworkFenceClass, CSIAddonsNode) the lab loads, installed
    when the cluster does not serve them yet (and removed afterwards if this run installed them)."""
    wanted = csiaddons_crds()
    created = []
    for crd in wanted:
        name = crd["metadata"]["name"]
        if kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name) is None:
            kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            created.append(name)
    for crd in wanted:
        plural = crd["spec"]["names"]["plural"]
        assert wait_until(lambda: kube.served("csiaddons.openshift.io/v1alpha1", plural), 30), plural
    yield [c["metadata"]["name"] for c in wanted]
    for name in created:
        kube.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)


# The Ceph monitor listed in the ceph-csi ConfigMap the tests make: outside every CIDR they fence.
TEST_MONITOR = "192.0.2.254:6789"


@pytest.fixture(scope="session", autouse=True)
def ceph_csi_monitors(kube):
    """ceph-csi's ConfigMap of Ceph monitors, as a ceph-csi install has it: networkfence refuses to write CIDRs
    where it cannot read the monitors. On a cluster that has one (ceph-csi's or Rook's), that one is used; else
    default/ceph-csi-config listing TEST_MONITOR is made, and removed afterwards."""
    existing = [o for name in ("ceph-csi-config", "rook-ceph-csi-config")
                for o in kube.client.list("/api/v1/configmaps", field_selector="metadata.name=" + name)]
    path = "/api/v1/namespaces/default/configmaps/ceph-csi-config"
    if not existing:
        kube.create("/api/v1/namespaces/default/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ceph-csi-config", "namespace": "default"},
            "data": {"config.json": json.dumps([{"clusterID": "volfence-tests", "monitors": [TEST_MONITOR]}])}})
    yield
    if not existing:
        kube.delete(path)


@pytest.fixture
def emu(target):
    """The emulator's admin API; skips the test against a real cluster. Faults cleared around it."""
    if target["emulator"] is None:
        pytest.skip(EMULATOR_ONLY)
    admin = Admin(target["emulator"].url)
    admin.clear_faults()
    yield admin
    admin.clear_faults()


@pytest.fixture(scope="session")
def ansible(target, tmp_path_factory):
    return AnsibleRunner(tmp_path_factory.mktemp("ansible"), kubeconfig=target["kubeconfig"])


@pytest.fixture
def label():
    """A label value for this test's objects; everything carrying it is removed afterwards."""
    return unique("t")


@pytest.fixture
def cleanup(kube, label):
    """Paths to remove after the test (finalizers first), plus every labelled object."""
    paths = []
    yield paths
    for path in reversed(paths):
        try:
            kube.force_delete(path)
        except KubeError:
            pass
    selector = "%s=%s" % (TEST_LABEL, label)
    for base in (FENCES, CLASSES, VAS, "/api/v1/pods", "/api/v1/persistentvolumes", "/api/v1/nodes"):
        try:
            items = kube.list(base, label_selector=selector)
        except KubeError:
            continue
        for obj in items:
            meta = obj["metadata"]
            if meta.get("namespace"):
                path = "/api/v1/namespaces/%s/pods/%s" % (meta["namespace"], meta["name"])
            else:
                path = base + "/" + meta["name"]
            try:
                kube.force_delete(path)
            except KubeError:
                pass


@pytest.fixture
def stand_in(kube, crds, label):
    """A CSI-Addons controller stand-in (kubeemu.csi) for this test's fences: it answers each new
    generation after 0.3 s (Failed for CIDRs in its `refuse`), with its finalizer."""
    controller = NetworkFenceStandIn(kube.client, label_selector="%s=%s" % (TEST_LABEL, label), delay=0.3,
                                     interval=0.1)
    controller.start()
    yield controller
    controller.stop()

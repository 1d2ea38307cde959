"""Fixtures for the Kubernetes API tests.

By default every test talks HTTP to an in-process kubeemu (the package under test) on a
free loopback port.  When the environment variable KUBECONFIG is set, the same
tests run against that cluster instead; tests that need the emulator's admin API
(fault injection, request log, version switching, ...) are skipped then.
Helpers live in kube_helpers.py (a unique module name: several conftest.py files
share the name "conftest").
"""

import os

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kube_crds import CSIADDONS_CRDS
from kube_helpers import EMULATOR_ONLY, REAL_CLUSTER, Admin, unique


@pytest.fixture(scope="session")
def kubeemu():
    """The in-process emulator, or None against a real cluster."""
    if REAL_CLUSTER:
        yield None
        return
    from kubeemu.server import EmulatorServer
    srv = EmulatorServer(port=0).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def kubeconfig_path(kubeemu, tmp_path_factory):
    if kubeemu is None:
        return os.environ["KUBECONFIG"].split(os.pathsep)[0]
    return kubeemu.write_kubeconfig(str(tmp_path_factory.mktemp("kube") / "kubeconfig"))


@pytest.fixture(scope="session")
def api_client(kubeconfig_path):
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig_path, client_configuration=cfg)
    api = client.ApiClient(cfg)
    yield api
    api.close()


@pytest.fixture
def emu(kubeemu):
    """Admin API of the emulator; skips the test against a real cluster.
    Faults are cleared before and after the test."""
    if kubeemu is None:
        pytest.skip(EMULATOR_ONLY)
    adm = Admin(kubeemu.url)
    adm.clear_faults()
    yield adm
    adm.clear_faults()


def _api_fixture(name, api_class):
    """A fixture `name`: the kubernetes client's `api_class` on the session's ApiClient."""
    def fixture(api_client):
        return api_class(api_client)
    fixture.__doc__ = "kubernetes.client.%s on the session's ApiClient." % api_class.__name__
    return pytest.fixture(name=name)(fixture)


core = _api_fixture("core", client.CoreV1Api)
apps = _api_fixture("apps", client.AppsV1Api)
storage = _api_fixture("storage", client.StorageV1Api)
custom = _api_fixture("custom", client.CustomObjectsApi)
apiext = _api_fixture("apiext", client.ApiextensionsV1Api)


@pytest.fixture
def ns(core):
    """A fresh namespace, deleted afterwards."""
    name = unique("kt")
    core.create_namespace({"metadata": {"name": name}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException:
        pass


@pytest.fixture(scope="session")
def csiaddons_crds(api_client):
    """CSI-Addons CRDs (NetworkFence, NetworkFenceClass, CSIAddonsNode) installed once."""
    ext = client.ApiextensionsV1Api(api_client)
    created = []
    for crd in CSIADDONS_CRDS:
        try:
            ext.create_custom_resource_definition(crd)
            created.append(crd["metadata"]["name"])
        except ApiException as e:
            if e.status != 409:
                raise
    yield [c["metadata"]["name"] for c in CSIADDONS_CRDS]
    if not REAL_CLUSTER:
        for name in created:
            try:
                ext.delete_custom_resource_definition(name)
            except ApiException:
                pass



"""Discovery documents, the served kinds, /version, CRD-defined resources."""

import json
import time

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from kube_helpers import unique
from kube_crds import GROUP, VERSION, networkfence


def get(api_client, path):
    r = api_client.rest_client.request("GET", api_client.configuration.host + path,
                                       headers={"Accept": "application/json"})
    return r.status, json.loads(r.read() or b"null")


# plural -> (group/version, kind, namespaced, has status subresource)
EXPECTED = {
    "nodes": ("v1", "Node", False, True),
    "pods": ("v1", "Pod", True, True),
    "events": ("v1", "Event", True, False),
    "namespaces": ("v1", "Namespace", False, True),
    "persistentvolumes": ("v1", "PersistentVolume", False, True),
    "persistentvolumeclaims": ("v1", "PersistentVolumeClaim", True, True),
    "configmaps": ("v1", "ConfigMap", True, False),
    "secrets": ("v1", "Secret", True, False),
    "services": ("v1", "Service", True, True),
    "serviceaccounts": ("v1", "ServiceAccount", True, False),
    "leases": ("coordination.k8s.io/v1", "Lease", True, False),
    "storageclasses": ("storage.k8s.io/v1", "StorageClass", False, False),
    "volumeattachments": ("storage.k8s.io/v1", "VolumeAttachment", False, True),
    "csidrivers": ("storage.k8s.io/v1", "CSIDriver", False, False),
    "deployments": ("apps/v1", "Deployment", True, True),
    "replicasets": ("apps/v1", "ReplicaSet", True, True),
    "customresourcedefinitions": ("apiextensions.k8s.io/v1", "CustomResourceDefinition", False, True),
    "clusterroles": ("rbac.authorization.k8s.io/v1", "ClusterRole", False, False),
    "clusterrolebindings": ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", False, False),
    "roles": ("rbac.authorization.k8s.io/v1", "Role", True, False),
    "rolebindings": ("rbac.authorization.k8s.io/v1", "RoleBinding", True, False),
}


def _resources(api_client, gv):
    path = "/api/v1" if gv == "v1" else "/apis/" + gv
    code, doc = get(api_client, path)
    assert code == 200, path
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == gv
    return {r["name"]: r for r in doc["resources"]}


def test_api_and_group_discovery(api_client):
    code, doc = get(api_client, "/api")
    assert code == 200 and doc["kind"] == "APIVersions" and doc["versions"] == ["v1"]
    code, doc = get(api_client, "/apis")
    assert code == 200 and doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    for g in ("apps", "storage.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io",
              "rbac.authorization.k8s.io"):
        assert groups[g]["preferredVersion"]["groupVersion"] == g + "/v1"
    code, doc = get(api_client, "/apis/storage.k8s.io")
    assert code == 200 and doc["kind"] == "APIGroup"


@pytest.mark.parametrize("plural", sorted(EXPECTED))
def test_kind_is_served_with_right_scope(api_client, plural):
    gv, kind, namespaced, status = EXPECTED[plural]
    res = _resources(api_client, gv)
    r = res[plural]
    assert r["kind"] == kind and r["namespaced"] is namespaced
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(r["verbs"])
    assert r["singularName"] == kind.lower()
    assert (plural + "/status" in res) is status


def test_subresources_and_short_names(api_client):
    res = _resources(api_client, "v1")
    assert res["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert "po" in res["pods"]["shortNames"] and "pvc" in res["persistentvolumeclaims"]["shortNames"]
    assert res["pods/eviction"]["group"] == "policy"
    apps = _resources(api_client, "apps/v1")
    assert apps["deployments/scale"]["kind"] == "Scale"


def test_openapi_v2_is_absent_but_v3_root_exists(api_client):
    assert get(api_client, "/openapi/v2")[0] == 404
    code, doc = get(api_client, "/openapi/v3")
    assert code == 200 and "api/v1" in doc["paths"]


def test_version_endpoint(api_client, kubeemu):
    code, doc = get(api_client, "/version")
    assert code == 200 and doc["gitVersion"].startswith("v1.") and doc["major"] == "1"
    if kubeemu is not None:
        assert doc["gitVersion"] == "v1.30.2" and doc["minor"] == "30"


def test_version_can_be_switched(api_client, emu):
    try:
        assert emu.version("v1.23.5")["minor"] == "23"
        code, doc = get(api_client, "/version")
        assert doc["gitVersion"] == "v1.23.5" and doc["minor"] == "23"
    finally:
        emu.version("v1.30.2")


def test_dynamic_client_discovery(api_client, csiaddons_crds):
    dyn = DynamicClient(api_client)
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert pods.namespaced and pods.subresources["status"]
    nf = dyn.resources.get(api_version=GROUP + "/" + VERSION, kind="NetworkFence")
    assert nf.namespaced is False
    node = dyn.resources.get(api_version=GROUP + "/" + VERSION, kind="CSIAddonsNode")
    assert node.namespaced is True
    nfc = dyn.resources.get(api_version=GROUP + "/" + VERSION, kind="NetworkFenceClass")
    assert nfc.namespaced is False


def _crd(group, scope="Namespaced"):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets." + group},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "shortNames": ["wdg"]},
                     "versions": [
                         {"name": "v1", "served": True, "storage": True,
                          "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {
                              "type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                         {"name": "v1beta1", "served": True, "storage": False,
                          "schema": {"openAPIV3Schema": {
                              "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _wait_served(api_client, path, want=200, timeout=10):
    deadline = time.time() + timeout
    while True:
        code, _ = get(api_client, path)
        if code == want or time.time() > deadline:
            return code
        time.sleep(0.2)


def test_custom_resources_appear_and_disappear_with_their_crd(api_client, apiext, custom, ns):
    group = unique("kt") + ".example.com"
    path = "/apis/%s/v1/namespaces/%s/widgets" % (group, ns)
    assert get(api_client, path)[0] == 404
    assert group not in {g["name"] for g in get(api_client, "/apis")[1]["groups"]}

    crd = apiext.create_custom_resource_definition(_crd(group))
    try:
        assert _wait_served(api_client, path) == 200
        conds = {c.type: c.status for c in apiext.read_custom_resource_definition(
            "widgets." + group).status.conditions}
        assert conds.get("Established") == "True"
        groups = {g["name"]: g for g in get(api_client, "/apis")[1]["groups"]}
        assert groups[group]["preferredVersion"]["version"] == "v1"
        assert [v["version"] for v in groups[group]["versions"]] == ["v1", "v1beta1"]
        res = {r["name"]: r for r in get(api_client, "/apis/%s/v1" % group)[1]["resources"]}
        assert res["widgets"]["kind"] == "Widget" and res["widgets"]["namespaced"] is True
        assert res["widgets"]["shortNames"] == ["wdg"]
        assert "widgets/status" in res
        beta = {r["name"] for r in get(api_client, "/apis/%s/v1beta1" % group)[1]["resources"]}
        assert beta == {"widgets"}

        w = custom.create_namespaced_custom_object(group, "v1", ns, "widgets", {
            "apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "w1"},
            "spec": {"size": 1}})
        assert w["metadata"]["uid"] and w["metadata"]["generation"] == 1
        # the same object is visible through the other served version
        wb = custom.get_namespaced_custom_object(group, "v1beta1", ns, "widgets", "w1")
        assert wb["apiVersion"] == group + "/v1beta1" and wb["spec"] == {"size": 1}
        # cluster-wide list of a namespaced CR
        lst = custom.list_cluster_custom_object(group, "v1", "widgets")
        assert [i["metadata"]["name"] for i in lst["items"]] == ["w1"]
        assert lst["items"][0]["kind"] == "Widget"
    finally:
        apiext.delete_custom_resource_definition("widgets." + group)
    assert _wait_served(api_client, path, want=404) == 404
    assert group not in {g["name"] for g in get(api_client, "/apis")[1]["groups"]}
    assert crd.metadata.uid


def test_cluster_scoped_crd(api_client, apiext, custom):
    group = unique("kt") + ".example.com"
    apiext.create_custom_resource_definition(_crd(group, scope="Cluster"))
    try:
        assert _wait_served(api_client, "/apis/%s/v1/widgets" % group) == 200
        w = custom.create_cluster_custom_object(group, "v1", "widgets", {
            "apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "c1"}})
        assert "namespace" not in w["metadata"]
        code, _ = get(api_client, "/apis/%s/v1/namespaces/default/widgets" % group)
        assert code == 404
    finally:
        apiext.delete_custom_resource_definition("widgets." + group)


def test_crd_name_must_match_plural_and_group(apiext):
    body = _crd("kt.example.com")
    body["metadata"]["name"] = "wrong.kt.example.com"
    with pytest.raises(ApiException) as ei:
        apiext.create_custom_resource_definition(body)
    assert ei.value.status == 422


def test_csiaddons_kinds(api_client, custom, csiaddons_crds, ns):
    res = _resources(api_client, GROUP + "/" + VERSION)
    assert res["networkfences"]["namespaced"] is False
    assert res["networkfenceclasses"]["namespaced"] is False
    assert res["csiaddonsnodes"]["namespaced"] is True
    assert "networkfences/status" in res
    name = unique("nf")
    nf = custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    assert nf["kind"] == "NetworkFence" and "namespace" not in nf["metadata"]
    custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)
    node = custom.create_namespaced_custom_object(GROUP, VERSION, ns, "csiaddonsnodes", {
        "apiVersion": GROUP + "/" + VERSION, "kind": "CSIAddonsNode",
        "metadata": {"name": "node-b"},
        "spec": {"driver": {"name": "rbd.csi.ceph.com", "nodeID": "node-b",
                            "endpoint": "pod://csi-rbdplugin-x:9070"}}})
    assert node["metadata"]["namespace"] == ns

"""PATCH content types: merge, JSON patch, strategic merge, apply; 415 handling."""

import json

import pytest
from kubernetes.client.rest import ApiException

from kube_helpers import unique
from kube_crds import GROUP, VERSION, networkfence

MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _pod(name, node=None):
    spec = {"containers": [{"name": "app", "image": "busybox",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                           {"name": "sidecar", "image": "envoy"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": {"app": "x"}, "finalizers": ["a/one"]}, "spec": spec}


def test_json_merge_patch(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "m", "labels": {"a": "1", "b": "2"}},
                                           "data": {"x": "1", "y": "2"}})
    out = core.patch_namespaced_config_map("m", ns, {"metadata": {"labels": {"a": None, "c": "3"}},
                                                    "data": {"y": None}}, _content_type=MERGE)
    assert out.metadata.labels == {"b": "2", "c": "3"}
    assert out.data == {"x": "1"}


def test_json_merge_patch_replaces_lists(core, ns):
    core.create_namespaced_pod(ns, _pod("p"))
    out = core.patch_namespaced_pod("p", ns, {"metadata": {"finalizers": ["a/two"]}}, _content_type=MERGE)
    assert out.metadata.finalizers == ["a/two"]


def test_json_patch_rfc6902(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "j", "labels": {"a": "1"}},
                                           "data": {"x": "1"}})
    ops = [{"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
           {"op": "replace", "path": "/data/x", "value": "9"},
           {"op": "copy", "from": "/data/x", "path": "/data/z"},
           {"op": "remove", "path": "/metadata/labels/a"},
           {"op": "test", "path": "/data/z", "value": "9"}]
    out = core.patch_namespaced_config_map("j", ns, ops)  # a list body is sent as JSON patch
    assert out.metadata.labels == {"b/c": "2"}
    assert out.data == {"x": "9", "z": "9"}
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_config_map("j", ns, [{"op": "test", "path": "/data/x", "value": "0"},
                                                   {"op": "remove", "path": "/data/x"}])
    assert ei.value.status == 422
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_config_map("j", ns, [{"op": "remove", "path": "/data/missing"}])
    assert ei.value.status == 422
    assert core.read_namespaced_config_map("j", ns).data == {"x": "9", "z": "9"}


def test_json_patch_remove_finalizer_by_index(core, ns):
    core.create_namespaced_pod(ns, _pod("f"))
    out = core.patch_namespaced_pod("f", ns, [{"op": "test", "path": "/metadata/finalizers/0",
                                               "value": "a/one"},
                                              {"op": "remove", "path": "/metadata/finalizers/0"}])
    assert not out.metadata.finalizers


def test_strategic_merge_containers_by_name(core, ns):
    core.create_namespaced_pod(ns, _pod("s"))
    out = core.patch_namespaced_pod("s", ns, {"spec": {"containers": [
        {"name": "sidecar", "image": "envoy:v2"}]}})  # dict body: strategic merge
    images = {c.name: c.image for c in out.spec.containers}
    assert images == {"app": "busybox", "sidecar": "envoy:v2"}
    env = {e.name: e.value for e in out.spec.containers[0].env}
    assert env == {"A": "1", "B": "2"}


def test_strategic_merge_conditions_and_addresses(core, emu_or_real_node):
    name = emu_or_real_node
    st = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "NodeStatusUnknown"}],
                     "addresses": [{"type": "Hostname", "address": name}]}}
    out = core.patch_node_status(name, st)
    conds = {c.type: c.status for c in out.status.conditions}
    assert conds == {"Ready": "False", "MemoryPressure": "False"}
    addrs = {a.type: a.address for a in out.status.addresses}
    assert addrs == {"InternalIP": "10.0.0.7", "Hostname": name}
    # $patch: delete removes one element by its merge key
    out = core.patch_node_status(name, {"status": {"conditions": [
        {"type": "MemoryPressure", "$patch": "delete"}]}})
    assert [c.type for c in out.status.conditions] == ["Ready"]


def test_strategic_merge_taints_are_replaced_like_real_kubernetes(core, emu_or_real_node):
    """NodeSpec.taints has no patchMergeKey in k8s.io/api: a strategic merge patch
    replaces the whole list.  Code that adds a taint must send the full list."""
    name = emu_or_real_node
    core.patch_node(name, {"spec": {"taints": [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]}})
    out = core.patch_node(name, {"spec": {"taints": [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]}})
    assert [t.key for t in out.spec.taints] == ["node.kubernetes.io/out-of-service"]


def test_strategic_merge_finalizers_and_directives(core, ns):
    core.create_namespaced_pod(ns, _pod("d"))
    out = core.patch_namespaced_pod("d", ns, {"metadata": {"finalizers": ["a/two"]}})
    assert out.metadata.finalizers == ["a/one", "a/two"]  # primitive list, patchStrategy merge
    out = core.patch_namespaced_pod("d", ns, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one"]}})
    assert out.metadata.finalizers == ["a/two"]
    out = core.patch_namespaced_pod("d", ns, {"metadata": {"finalizers": [], "labels": {"app": None}}})
    assert out.metadata.finalizers == ["a/two"] and not out.metadata.labels
    out = core.patch_namespaced_pod("d", ns, {"metadata": {"finalizers": None}})
    assert not out.metadata.finalizers
    # env of a pod's container is immutable: merging by name works, then validation refuses
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_pod("d", ns, {"spec": {"containers": [
            {"name": "app", "env": [{"name": "A", "$patch": "delete"}]}]}})
    assert ei.value.status == 422


def test_strategic_merge_on_pod_env_is_forbidden_but_on_deployment_merges(apps, ns):
    dep = {"metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": _pod("x")["spec"]}}}
    apps.create_namespaced_deployment(ns, dep)
    out = apps.patch_namespaced_deployment("d", ns, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "A", "$patch": "delete"}, {"name": "C", "value": "3"}]}]}}}})
    c = {c.name: c for c in out.spec.template.spec.containers}
    assert [e.name for e in c["app"].env] == ["B", "C"]
    assert c["sidecar"].image == "envoy"


def test_strategic_merge_on_custom_resource_is_415(custom, api_client, csiaddons_crds):
    name = unique("nf-smp")
    custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    try:
        with pytest.raises(ApiException) as ei:
            custom.patch_cluster_custom_object(GROUP, VERSION, "networkfences", name,
                                               {"spec": {"fenceState": "Unfenced"}}, _content_type=SMP)
        assert ei.value.status == 415
        out = custom.patch_cluster_custom_object(GROUP, VERSION, "networkfences", name,
                                                 {"spec": {"cidrs": ["10.0.0.2/32"]}})
        assert out["spec"]["cidrs"] == ["10.0.0.2/32"]
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)


def raw(api_client, method, path, body, content_type):
    """One request with an arbitrary content type; returns (status, decoded body)."""
    r = api_client.rest_client.request(
        method, api_client.configuration.host + path,
        headers={"Content-Type": content_type, "Accept": "application/json"},
        body=json.dumps(body))
    return r.status, json.loads(r.read() or b"{}")


def test_unknown_patch_content_type_is_415(api_client, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "x"}})
    code, st = raw(api_client, "PATCH", "/api/v1/namespaces/%s/configmaps/x" % ns, {"data": {}},
                   "text/plain")
    assert code == 415 and st["reason"] == "UnsupportedMediaType"


def test_apply_patch_minimal(api_client, core, ns):
    """Server-side apply is approximated: create if absent, else merge the config."""
    path = "/api/v1/namespaces/%s/configmaps/applied" % ns
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
            "data": {"a": "1"}}

    def apply(b, manager="tests"):
        return raw(api_client, "PATCH", path + ("?fieldManager=%s" % manager if manager else ""),
                   b, APPLY)
    code, out = apply(body)
    assert code == 201 and out["data"] == {"a": "1"}
    code, out = apply(dict(body, data={"b": "2"}))
    assert code == 200 and out["data"] == {"a": "1", "b": "2"}
    code, out = apply(body, manager=None)
    assert code == 422


@pytest.fixture
def emu_or_real_node(core):
    name = unique("node")
    core.create_node({"metadata": {"name": name},
                      "status": {"conditions": [{"type": "Ready", "status": "True"},
                                                {"type": "MemoryPressure", "status": "False"}],
                                 "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]}})
    yield name
    core.delete_node(name)

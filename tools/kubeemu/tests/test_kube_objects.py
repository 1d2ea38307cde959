"""Object metadata, create/get/replace semantics and error Status objects."""

import pytest
from kubernetes.client.rest import ApiException

from kube_helpers import status_body, unique


def _cm(name, data=None, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data or {"k": "v"}}


def test_create_returns_201_with_uid_rv_and_timestamp(core, ns):
    data, code, _headers = core.create_namespaced_config_map_with_http_info(ns, _cm("a"))
    assert code == 201
    md = data.metadata
    assert md.uid and len(md.uid) == 36
    assert md.resource_version and md.resource_version.isdigit()
    assert md.creation_timestamp is not None
    assert md.namespace == ns
    got = core.read_namespaced_config_map("a", ns)
    assert got.metadata.uid == md.uid
    assert got.metadata.resource_version == md.resource_version


def test_resource_version_is_a_global_counter(core, apps, ns):
    rv1 = int(core.create_namespaced_config_map(ns, _cm("one")).metadata.resource_version)
    rv2 = int(core.create_namespaced_secret(ns, {"metadata": {"name": "two"}}).metadata.resource_version)
    rv3 = int(core.patch_namespaced_config_map("one", ns, {"data": {"x": "y"}}).metadata.resource_version)
    assert rv1 < rv2 < rv3


def test_generation_bumps_on_spec_change_only(apps, ns):
    dep = {"metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    d = apps.create_namespaced_deployment(ns, dep)
    assert d.metadata.generation == 1
    d = apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 3}})
    assert d.metadata.generation == 2
    rv = d.metadata.resource_version
    d = apps.patch_namespaced_deployment("web", ns, {"metadata": {"labels": {"extra": "1"}}})
    assert d.metadata.generation == 2
    assert d.metadata.resource_version != rv
    d = apps.patch_namespaced_deployment_status("web", ns, {"status": {"replicas": 3, "readyReplicas": 1}})
    assert d.metadata.generation == 2
    assert d.status.ready_replicas == 1


def test_generation_on_custom_resources(custom, csiaddons_crds):
    from kube_crds import GROUP, VERSION, networkfence
    name = unique("nf-gen")
    nf = custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    try:
        assert nf["metadata"]["generation"] == 1
        nf = custom.patch_cluster_custom_object(GROUP, VERSION, "networkfences", name,
                                                {"spec": {"fenceState": "Unfenced"}})
        assert nf["metadata"]["generation"] == 2
        nf = custom.patch_cluster_custom_object(GROUP, VERSION, "networkfences", name,
                                                {"metadata": {"annotations": {"a": "b"}}})
        assert nf["metadata"]["generation"] == 2
        nf = custom.patch_cluster_custom_object_status(GROUP, VERSION, "networkfences", name,
                                                       {"status": {"result": "Succeeded"}})
        assert nf["metadata"]["generation"] == 2
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)


def test_update_with_stale_resource_version_is_409(core, ns):
    cm = core.create_namespaced_config_map(ns, _cm("c"))
    stale = cm.metadata.resource_version
    core.patch_namespaced_config_map("c", ns, {"data": {"k": "v2"}})
    body = _cm("c", {"k": "v3"})
    body["metadata"]["resourceVersion"] = stale
    with pytest.raises(ApiException) as ei:
        core.replace_namespaced_config_map("c", ns, body)
    assert ei.value.status == 409
    st = status_body(ei.value)
    assert st["kind"] == "Status" and st["reason"] == "Conflict" and st["code"] == 409
    assert "the object has been modified" in st["message"]
    # a stale resourceVersion inside a patch body conflicts too
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_config_map("c", ns, {"metadata": {"resourceVersion": stale},
                                                  "data": {"k": "v4"}})
    assert ei.value.status == 409
    assert core.read_namespaced_config_map("c", ns).data == {"k": "v2"}


def test_put_replaces_whole_object(core, ns):
    cm = core.create_namespaced_config_map(ns, _cm("r", {"a": "1", "b": "2"}, {"x": "y"}))
    body = {"metadata": {"name": "r", "resourceVersion": cm.metadata.resource_version},
            "data": {"c": "3"}}
    new, code, _headers = core.replace_namespaced_config_map_with_http_info("r", ns, body)
    assert code == 200
    assert new.data == {"c": "3"}
    assert not new.metadata.labels
    assert new.metadata.uid == cm.metadata.uid
    assert new.metadata.creation_timestamp == cm.metadata.creation_timestamp
    assert int(new.metadata.resource_version) > int(cm.metadata.resource_version)
    # built-in kinds allow an unconditional PUT (no resourceVersion)
    new = core.replace_namespaced_config_map("r", ns, {"metadata": {"name": "r"}, "data": {"d": "4"}})
    assert new.data == {"d": "4"}


def test_put_on_custom_resource_requires_resource_version(custom, csiaddons_crds):
    from kube_crds import GROUP, VERSION, networkfence
    name = unique("nf-put")
    nf = custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    try:
        body = networkfence(name, state="Unfenced")
        with pytest.raises(ApiException) as ei:
            custom.replace_cluster_custom_object(GROUP, VERSION, "networkfences", name, body)
        assert ei.value.status == 422
        body["metadata"]["resourceVersion"] = nf["metadata"]["resourceVersion"]
        out = custom.replace_cluster_custom_object(GROUP, VERSION, "networkfences", name, body)
        assert out["spec"]["fenceState"] == "Unfenced"
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)


def test_noop_patch_keeps_resource_version(core, ns):
    cm = core.create_namespaced_config_map(ns, _cm("n", {"k": "v"}, {"a": "b"}))
    again = core.patch_namespaced_config_map("n", ns, {"metadata": {"labels": {"a": "b"}},
                                                      "data": {"k": "v"}})
    assert again.metadata.resource_version == cm.metadata.resource_version


def test_already_exists_is_409(core, ns):
    core.create_namespaced_config_map(ns, _cm("dup"))
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_config_map(ns, _cm("dup"))
    assert ei.value.status == 409
    st = status_body(ei.value)
    assert st["reason"] == "AlreadyExists"
    assert st["details"] == {"name": "dup", "group": "", "kind": "configmaps"}


def test_not_found_is_404_status(core, storage, ns):
    with pytest.raises(ApiException) as ei:
        core.read_namespaced_pod("nope", ns)
    assert ei.value.status == 404
    st = status_body(ei.value)
    assert st["kind"] == "Status" and st["apiVersion"] == "v1"
    assert st["status"] == "Failure" and st["reason"] == "NotFound" and st["code"] == 404
    assert st["details"]["name"] == "nope" and st["details"]["kind"] == "pods"
    assert st["message"] == 'pods "nope" not found'
    with pytest.raises(ApiException) as ei:
        storage.read_volume_attachment("nope")
    st = status_body(ei.value)
    assert st["details"] == {"name": "nope", "group": "storage.k8s.io", "kind": "volumeattachments"}
    assert st["message"] == 'volumeattachments.storage.k8s.io "nope" not found'
    for call in (lambda: core.delete_namespaced_config_map("nope", ns),
                 lambda: core.patch_namespaced_config_map("nope", ns, {"data": {}}),
                 lambda: core.replace_namespaced_config_map("nope", ns, _cm("nope"))):
        with pytest.raises(ApiException) as ei:
            call()
        assert ei.value.status == 404


def test_missing_name_is_422_and_generate_name_works(core, ns):
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_config_map(ns, {"data": {"a": "b"}})
    assert ei.value.status == 422
    st = status_body(ei.value)
    assert st["reason"] == "Invalid"
    assert st["details"]["causes"][0]["field"] == "metadata.name"
    cm = core.create_namespaced_config_map(ns, {"metadata": {"generateName": "gen-"}})
    assert cm.metadata.name.startswith("gen-") and len(cm.metadata.name) == 9


def test_invalid_name_is_422(core, ns):
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_config_map(ns, _cm("Bad_Name"))
    assert ei.value.status == 422


def test_create_in_missing_namespace_is_404(core):
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_config_map(unique("missing"), _cm("x"))
    assert ei.value.status == 404
    assert status_body(ei.value)["details"]["kind"] == "namespaces"


def test_namespace_mismatch_is_400(core, ns):
    body = _cm("m")
    body["metadata"]["namespace"] = "default"
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_config_map(ns, body)
    assert ei.value.status == 400


def test_default_namespaces_exist(core):
    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"default", "kube-system", "kube-node-lease"} <= names
    ns = core.read_namespace("default")
    assert ns.status.phase == "Active"


def test_list_has_resource_version_and_paginates(core, ns):
    for i in range(5):
        core.create_namespaced_config_map(ns, _cm("p%d" % i))
    full = core.list_namespaced_config_map(ns)
    assert full.metadata.resource_version.isdigit()
    assert [c.metadata.name for c in full.items if c.metadata.name.startswith("p")] == \
        ["p0", "p1", "p2", "p3", "p4"]
    page = core.list_namespaced_config_map(ns, limit=2)
    names = [c.metadata.name for c in page.items]
    while page.metadata._continue:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=page.metadata._continue)
        names += [c.metadata.name for c in page.items]
    assert names == [c.metadata.name for c in full.items]


def test_secret_string_data_is_encoded(core, ns):
    s = core.create_namespaced_secret(ns, {"metadata": {"name": "s"}, "stringData": {"user": "admin"}})
    assert s.data == {"user": "YWRtaW4="}
    assert s.type == "Opaque"


def test_pod_spec_is_mostly_immutable(core, ns):
    core.create_namespaced_pod(ns, {"metadata": {"name": "p"},
                                    "spec": {"containers": [{"name": "c", "image": "a"}]}})
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "c", "image": "b"}]}})
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_pod("p", ns, {"spec": {"nodeName": "elsewhere"}})
    assert ei.value.status == 422
    # binding is the way to put a pod on a node
    # (a real API server answers with a Status the client model cannot parse: client bug #825)
    resp = core.create_namespaced_pod_binding("p", ns, {"metadata": {"name": "p"},
                                                        "target": {"kind": "Node", "name": "n1"}},
                                              _preload_content=False)
    assert resp.status == 201
    assert core.read_namespaced_pod("p", ns).spec.node_name == "n1"

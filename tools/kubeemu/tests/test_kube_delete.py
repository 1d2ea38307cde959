"""Deletion: finalizers, deletionTimestamp, graceful pod deletion, delete options,
owner references, namespaces."""

import json

import pytest
from kubernetes.client.rest import ApiException

from kube_helpers import unique
from kube_crds import GROUP, VERSION, networkfence


def _pod(name, node=None, finalizers=None, grace=None):
    spec = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    md = {"name": name}
    if finalizers:
        md["finalizers"] = finalizers
    return {"metadata": md, "spec": spec}


def _exists(fn, *args):
    try:
        fn(*args)
        return True
    except ApiException as e:
        if e.status == 404:
            return False
        raise


def test_delete_without_finalizers_is_immediate(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "gone"}})
    out, code, _ = core.delete_namespaced_config_map_with_http_info("gone", ns)
    assert code == 200 and out["kind"] == "Status" and out["status"] == "Success"
    assert out["details"]["name"] == "gone" and out["details"]["kind"] == "configmaps"
    assert not _exists(core.read_namespaced_config_map, "gone", ns)


def test_finalizers_set_deletion_timestamp_until_removed(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "fin", "finalizers": ["x.io/hold"]}})
    r = core.api_client.rest_client.request(
        "DELETE", core.api_client.configuration.host + "/api/v1/namespaces/%s/configmaps/fin" % ns,
        headers={"Accept": "application/json"})
    assert r.status == 200
    obj = json.loads(r.read())
    assert obj["kind"] == "ConfigMap"
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    cm = core.read_namespaced_config_map("fin", ns)
    assert cm.metadata.deletion_timestamp is not None
    # still updatable, but no new finalizers may be added
    core.patch_namespaced_config_map("fin", ns, {"data": {"a": "b"}})
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_config_map("fin", ns, {"metadata": {"finalizers": ["x.io/other"]}})
    assert ei.value.status == 422
    core.patch_namespaced_config_map("fin", ns, {"metadata": {"finalizers": None}},
                                     _content_type="application/merge-patch+json")
    assert not _exists(core.read_namespaced_config_map, "fin", ns)


def test_custom_resource_finalizer_flow(custom, csiaddons_crds):
    name = unique("nf-fin")
    body = networkfence(name)
    body["metadata"]["finalizers"] = ["csiaddons.openshift.io/network-fence"]
    custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", body)
    out = custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)
    assert out["metadata"]["deletionTimestamp"]
    got = custom.get_cluster_custom_object(GROUP, VERSION, "networkfences", name)
    assert got["metadata"]["finalizers"] == ["csiaddons.openshift.io/network-fence"]
    custom.patch_cluster_custom_object(GROUP, VERSION, "networkfences", name,
                                       [{"op": "remove", "path": "/metadata/finalizers"}],
                                       _content_type="application/json-patch+json")
    assert not _exists(custom.get_cluster_custom_object, GROUP, VERSION, "networkfences", name)


def test_bound_pod_deletes_gracefully(core, ns):
    core.create_namespaced_pod(ns, _pod("web", node="node-b", grace=45))
    out = core.delete_namespaced_pod("web", ns)
    assert out.metadata.deletion_timestamp is not None
    assert out.metadata.deletion_grace_period_seconds == 45
    pod = core.read_namespaced_pod("web", ns)  # Terminating until a kubelet finishes it
    assert pod.metadata.deletion_timestamp is not None
    # force delete: gracePeriodSeconds=0 removes it at once
    core.delete_namespaced_pod("web", ns, grace_period_seconds=0)
    assert not _exists(core.read_namespaced_pod, "web", ns)


def test_grace_period_in_delete_options_body(core, ns):
    core.create_namespaced_pod(ns, _pod("b1", node="node-b"))
    out = core.delete_namespaced_pod("b1", ns, body={"gracePeriodSeconds": 10,
                                                     "propagationPolicy": "Background"})
    assert out.metadata.deletion_grace_period_seconds == 10
    core.delete_namespaced_pod("b1", ns, body={"gracePeriodSeconds": 0})
    assert not _exists(core.read_namespaced_pod, "b1", ns)


def test_unbound_pod_deletes_at_once(core, ns):
    core.create_namespaced_pod(ns, _pod("pending"))
    core.delete_namespaced_pod("pending", ns)
    assert not _exists(core.read_namespaced_pod, "pending", ns)


def test_force_delete_of_pod_with_finalizer_waits_for_finalizer(core, ns):
    core.create_namespaced_pod(ns, _pod("pf", node="node-b", finalizers=["x.io/keep"]))
    core.delete_namespaced_pod("pf", ns, grace_period_seconds=0)
    pod = core.read_namespaced_pod("pf", ns)
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.deletion_grace_period_seconds == 0
    core.patch_namespaced_pod("pf", ns, [{"op": "remove", "path": "/metadata/finalizers"}])
    assert not _exists(core.read_namespaced_pod, "pf", ns)


def test_precondition_uid_mismatch_is_409(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "pre"}})
    with pytest.raises(ApiException) as ei:
        core.delete_namespaced_config_map("pre", ns, body={"preconditions": {"uid": "not-it"}})
    assert ei.value.status == 409


def test_owner_references_cascade_and_orphan(core, ns):
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    ref = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]
    for n in ("dep1", "dep2"):
        core.create_namespaced_config_map(ns, {"metadata": {"name": n, "ownerReferences": ref}})
    owner2 = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner2"}})
    ref2 = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner2.metadata.uid}]
    core.create_namespaced_config_map(ns, {"metadata": {"name": "orphan", "ownerReferences": ref2}})

    core.delete_namespaced_config_map("owner", ns)  # Background by default
    assert not _exists(core.read_namespaced_config_map, "dep1", ns)
    assert not _exists(core.read_namespaced_config_map, "dep2", ns)
    core.delete_namespaced_config_map("owner2", ns, propagation_policy="Orphan")
    left = core.read_namespaced_config_map("orphan", ns)
    assert not left.metadata.owner_references


def test_namespace_deletion_removes_content(core):
    name = unique("gone")
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(name, {"metadata": {"name": "c"}})
    core.create_namespaced_pod(name, _pod("p", node="node-b"))
    out = core.delete_namespace(name)
    assert out["status"]["phase"] == "Terminating" and out["metadata"]["deletionTimestamp"]
    assert not _exists(core.read_namespace, name)


def test_default_namespace_cannot_be_deleted(core):
    with pytest.raises(ApiException) as ei:
        core.delete_namespace("default")
    assert ei.value.status == 403


def test_eviction_deletes_gracefully(core, ns):
    core.create_namespaced_pod(ns, _pod("ev", node="node-b"))
    r = core.create_namespaced_pod_eviction("ev", ns, {"metadata": {"name": "ev", "namespace": ns},
                                                       "deleteOptions": {"gracePeriodSeconds": 5}},
                                            _preload_content=False)
    assert r.status == 201
    pod = core.read_namespaced_pod("ev", ns)
    assert pod.metadata.deletion_grace_period_seconds == 5

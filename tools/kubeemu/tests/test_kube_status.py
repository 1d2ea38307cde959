"""The status subresource is isolated both ways (built-in kinds and CRs)."""

import pytest

from kube_helpers import unique
from kube_crds import GROUP, VERSION, networkfence


def _va(name, node="n1"):
    return {"metadata": {"name": name},
            "spec": {"attacher": "rbd.csi.ceph.com", "nodeName": node,
                     "source": {"persistentVolumeName": "pv-" + name}}}


@pytest.fixture
def va(storage):
    name = unique("csi")
    storage.create_volume_attachment(_va(name))
    yield name
    storage.delete_volume_attachment(name)


def test_create_resets_status(storage, core, ns):
    name = unique("csi")
    body = _va(name)
    body["status"] = {"attached": True}
    out = storage.create_volume_attachment(body)
    try:
        assert out.status.attached is False
    finally:
        storage.delete_volume_attachment(name)
    pod = core.create_namespaced_pod(ns, {"metadata": {"name": "p"},
                                          "spec": {"containers": [{"name": "c", "image": "i"}]},
                                          "status": {"phase": "Running"}})
    assert pod.status.phase == "Pending"


def test_main_resource_ignores_status(storage, va):
    out = storage.patch_volume_attachment(va, {"status": {"attached": True},
                                               "metadata": {"labels": {"x": "y"}}})
    assert out.status.attached is False
    assert out.metadata.labels == {"x": "y"}
    cur = storage.read_volume_attachment(va)
    cur.status.attached = True
    out = storage.replace_volume_attachment(va, cur)  # PUT
    assert out.status.attached is False


def test_status_subresource_ignores_everything_else(storage, va):
    out = storage.patch_volume_attachment_status(va, {
        "metadata": {"labels": {"sneaky": "1"}},
        "spec": {"nodeName": "other"},
        "status": {"attached": True, "attachmentMetadata": {"k": "v"}}})
    assert out.status.attached is True
    assert out.spec.node_name == "n1"
    assert not out.metadata.labels
    cur = storage.read_volume_attachment_status(va)
    cur.spec.node_name = "other"
    cur.status.attached = False
    out = storage.replace_volume_attachment_status(va, cur)  # PUT /status
    assert out.status.attached is False and out.spec.node_name == "n1"


def test_spec_of_volume_attachment_is_immutable(storage, va):
    from kubernetes.client.rest import ApiException
    with pytest.raises(ApiException) as ei:
        storage.patch_volume_attachment(va, {"spec": {"nodeName": "other"}})
    assert ei.value.status == 422


def test_custom_resource_status_isolation(custom, csiaddons_crds):
    name = unique("nf-st")
    body = networkfence(name)
    body["status"] = {"result": "Succeeded"}
    nf = custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", body)
    try:
        assert "status" not in nf  # dropped on create: status subresource declared
        nf = custom.patch_cluster_custom_object(GROUP, VERSION, "networkfences", name,
                                                {"status": {"result": "Succeeded"}})
        assert "status" not in nf
        nf = custom.patch_cluster_custom_object_status(GROUP, VERSION, "networkfences", name, {
            "spec": {"fenceState": "Unfenced"}, "status": {"result": "Failed", "message": "x"}})
        assert nf["status"] == {"result": "Failed", "message": "x"}
        assert nf["spec"]["fenceState"] == "Fenced"
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)


def test_node_keeps_status_on_create(core):
    name = unique("node")
    n = core.create_node({"metadata": {"name": name},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    try:
        assert n.status.conditions[0].type == "Ready"
        n = core.patch_node(name, {"spec": {"unschedulable": True},
                                   "status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        assert n.spec.unschedulable is True and n.status.conditions[0].status == "True"
    finally:
        core.delete_node(name)


def test_scale_subresource(apps, ns):
    apps.create_namespaced_deployment(ns, {
        "metadata": {"name": "s"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    sc = apps.read_namespaced_deployment_scale("s", ns)
    assert sc.spec.replicas == 2 and sc.status.selector == "a=b"
    apps.patch_namespaced_deployment_scale("s", ns, {"spec": {"replicas": 0}})
    d = apps.read_namespaced_deployment("s", ns)
    assert d.spec.replicas == 0 and d.metadata.generation == 2

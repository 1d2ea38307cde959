"""Label and field selectors on list (and deletecollection)."""

import pytest
from kubernetes.client.rest import ApiException


@pytest.fixture
def labelled(core, ns):
    specs = {
        "a": {"app": "web", "tier": "front"},
        "b": {"app": "web", "tier": "back"},
        "c": {"app": "db"},
        "d": {},
    }
    for name, labels in specs.items():
        core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})
    return ns


def _names(core, ns, **kw):
    return sorted(c.metadata.name for c in core.list_namespaced_config_map(ns, **kw).items)


@pytest.mark.parametrize("selector,expected", [
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d"]),
    ("tier in (front,back)", ["a", "b"]),
    ("tier in (front)", ["a"]),
    ("tier notin (front)", ["b", "c", "d"]),
    ("tier", ["a", "b"]),
    ("!tier", ["c", "d"]),
    ("app=web,tier=back", ["b"]),
    ("app in (web, db),!tier", ["c"]),
    ("app=nothing", []),
])
def test_label_selectors(core, labelled, selector, expected):
    assert _names(core, labelled, label_selector=selector) == expected


def test_bad_label_selector_is_400(core, labelled):
    with pytest.raises(ApiException) as ei:
        core.list_namespaced_config_map(labelled, label_selector="app in web")
    assert ei.value.status == 400


def test_field_selectors_on_metadata(core, labelled):
    assert _names(core, labelled, field_selector="metadata.name=b") == ["b"]
    assert _names(core, labelled, field_selector="metadata.name!=b") == ["a", "c", "d"]
    assert _names(core, labelled, field_selector="metadata.namespace=%s" % labelled) == ["a", "b", "c", "d"]
    all_ns = core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=%s" % labelled)
    assert sorted(c.metadata.name for c in all_ns.items) == ["a", "b", "c", "d"]
    assert _names(core, labelled, field_selector="metadata.name=a", label_selector="app=db") == []


def test_field_selectors_on_pods(core, ns):
    for name, node in (("p1", "n1"), ("p2", "n2"), ("p3", "n1")):
        core.create_namespaced_pod(ns, {"metadata": {"name": name},
                                        "spec": {"nodeName": node,
                                                 "containers": [{"name": "c", "image": "i"}]}})
    core.patch_namespaced_pod_status("p3", ns, {"status": {"phase": "Running"}})

    def names(sel):
        return sorted(p.metadata.name for p in core.list_namespaced_pod(ns, field_selector=sel).items)
    assert names("spec.nodeName=n1") == ["p1", "p3"]
    assert names("spec.nodeName=n1,status.phase=Running") == ["p3"]
    assert names("status.phase!=Running") == ["p1", "p2"]
    assert names("spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed") == ["p1", "p3"]
    everywhere = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2")
    assert [p.metadata.name for p in everywhere.items] == ["p2"]


def test_field_selector_on_events(core, ns):
    for i, obj in enumerate(("pod-a", "pod-b", "pod-a")):
        core.create_namespaced_event(ns, {
            "metadata": {"name": "ev%d" % i},
            "involvedObject": {"kind": "Pod", "name": obj, "namespace": ns},
            "reason": "FailedAttachVolume", "message": "Multi-Attach error", "type": "Warning"})
    evs = core.list_namespaced_event(ns, field_selector="involvedObject.name=pod-a,reason=FailedAttachVolume")
    assert sorted(e.metadata.name for e in evs.items) == ["ev0", "ev2"]


def test_delete_collection_with_selector(core, labelled):
    core.delete_collection_namespaced_config_map(labelled, label_selector="app=web")
    assert _names(core, labelled) == ["c", "d"]

"""Watch: ADDED/MODIFIED/DELETED, resourceVersion, selectors, timeoutSeconds, 410 Gone."""

import json
import threading
import time

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

from kube_helpers import unique
from kube_crds import GROUP, VERSION, networkfence


def _collect(func, n, timeout=5, **kw):
    """Start a watch in a thread; returns (events list, thread)."""
    events = []
    ready = threading.Event()

    def run():
        w = watch.Watch()
        ready.set()
        for ev in w.stream(func, timeout_seconds=timeout, **kw):
            events.append((ev["type"], ev["raw_object"]["metadata"]["name"],
                           ev["raw_object"]["metadata"].get("resourceVersion"), ev["raw_object"]))
            if len(events) >= n:
                w.stop()
                break
    t = threading.Thread(target=run, daemon=True)
    t.start()
    ready.wait()
    return events, t


def _wait_for(events, n, timeout=5):
    deadline = time.time() + timeout
    while len(events) < n and time.time() < deadline:
        time.sleep(0.02)


def test_watch_from_resource_version(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "before"}})
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    events, t = _collect(core.list_namespaced_config_map, 3, namespace=ns, resource_version=rv)
    time.sleep(0.2)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "w"}})
    core.patch_namespaced_config_map("w", ns, {"data": {"a": "b"}})
    core.delete_namespaced_config_map("w", ns)
    t.join(6)
    assert [(e[0], e[1]) for e in events] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    rvs = [int(e[2]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)
    assert events[0][3]["kind"] == "ConfigMap" and events[0][3]["apiVersion"] == "v1"
    assert events[1][3]["data"] == {"a": "b"}


def test_watch_replays_history_after_resource_version(core, ns):
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "h1"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "h2"}})
    events, t = _collect(core.list_namespaced_config_map, 2, namespace=ns, resource_version=rv)
    t.join(6)
    assert [(e[0], e[1]) for e in events] == [("ADDED", "h1"), ("ADDED", "h2")]


def test_watch_without_resource_version_lists_existing_first(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "x1"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "x2"}})
    events, t = _collect(core.list_namespaced_config_map, 2, namespace=ns)
    t.join(6)
    assert sorted((e[0], e[1]) for e in events) == [("ADDED", "x1"), ("ADDED", "x2")]


def test_watch_with_selectors_sees_objects_enter_and_leave(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "s", "labels": {"fenced": "no"}}})
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    events, t = _collect(core.list_namespaced_config_map, 2, namespace=ns, resource_version=rv,
                         label_selector="fenced=yes")
    time.sleep(0.2)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "other", "labels": {"fenced": "no"}}})
    core.patch_namespaced_config_map("s", ns, {"metadata": {"labels": {"fenced": "yes"}}})
    core.patch_namespaced_config_map("s", ns, {"metadata": {"labels": {"fenced": "no"}}})
    t.join(6)
    assert [(e[0], e[1]) for e in events] == [("ADDED", "s"), ("DELETED", "s")]


def test_watch_with_field_selector_on_name(core, ns):
    rv = core.list_namespaced_pod(ns).metadata.resource_version
    events, t = _collect(core.list_namespaced_pod, 2, namespace=ns, resource_version=rv,
                         field_selector="metadata.name=target")
    time.sleep(0.2)
    for name in ("noise", "target"):
        core.create_namespaced_pod(ns, {"metadata": {"name": name},
                                        "spec": {"containers": [{"name": "c", "image": "i"}]}})
    core.patch_namespaced_pod_status("target", ns, {"status": {"phase": "Running"}})
    t.join(6)
    assert [(e[0], e[1]) for e in events] == [("ADDED", "target"), ("MODIFIED", "target")]
    assert events[1][3]["status"]["phase"] == "Running"


def test_watch_timeout_seconds_ends_stream(core, ns):
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    t0 = time.time()
    evs = list(watch.Watch().stream(core.list_namespaced_config_map, namespace=ns,
                                    resource_version=rv, timeout_seconds=1))
    assert evs == []
    assert 0.8 < time.time() - t0 < 4


def test_watch_custom_resources(custom, csiaddons_crds):
    lst = custom.list_cluster_custom_object(GROUP, VERSION, "networkfences")
    rv = lst["metadata"]["resourceVersion"]
    name = unique("nf-w")
    events, t = _collect(custom.list_cluster_custom_object, 3, group=GROUP, version=VERSION,
                         plural="networkfences", resource_version=rv,
                         field_selector="metadata.name=" + name)
    time.sleep(0.2)
    custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    custom.patch_cluster_custom_object_status(GROUP, VERSION, "networkfences", name,
                                              {"status": {"result": "Succeeded"}})
    custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)
    t.join(6)
    assert [e[0] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1][3]["status"]["result"] == "Succeeded"


def test_watch_is_chunked_json_lines(api_client, core, ns):
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c1"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c2"}})
    r = api_client.rest_client.request(
        "GET", api_client.configuration.host +
        "/api/v1/namespaces/%s/configmaps?watch=true&resourceVersion=%s&timeoutSeconds=1" % (ns, rv),
        headers={"Accept": "application/json"})
    assert r.status == 200
    assert r.headers.get("Transfer-Encoding") == "chunked"
    lines = [ln for ln in r.read().decode().split("\n") if ln]
    assert [json.loads(ln)["type"] for ln in lines] == ["ADDED", "ADDED"]


def test_watch_from_expired_resource_version_is_410(core, ns, emu):
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "e"}})
    emu.call("POST", "compact")
    with pytest.raises(ApiException) as ei:
        list(watch.Watch().stream(core.list_namespaced_config_map, namespace=ns,
                                  resource_version=rv, timeout_seconds=2))
    assert ei.value.status == 410
    assert "Expired" in str(ei.value.reason)
    # a watch from a current resourceVersion still works
    rv2 = core.list_namespaced_config_map(ns).metadata.resource_version
    assert list(watch.Watch().stream(core.list_namespaced_config_map, namespace=ns,
                                     resource_version=rv2, timeout_seconds=1)) == []


def test_watches_are_cleaned_up(core, ns, emu):
    deadline = time.time() + 5
    while emu.call("GET", "watches")["active"] and time.time() < deadline:
        time.sleep(0.1)
    assert emu.call("GET", "watches")["active"] == 0

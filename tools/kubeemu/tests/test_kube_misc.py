"""Smaller semantics: dryRun, sendInitialEvents, legacy /watch/ paths, namespace
finalization, foreground deletion, multiple owners."""

import json
import time

from kubernetes.client.rest import ApiException

from kube_helpers import unique


def _raw(api_client, method, path, body=None, content_type="application/json"):
    r = api_client.rest_client.request(method, api_client.configuration.host + path,
                                       headers={"Accept": "application/json",
                                                "Content-Type": content_type},
                                       body=None if body is None else json.dumps(body))
    return r.status, r.read()


def test_dry_run_writes_nothing(core, ns):
    out = core.create_namespaced_config_map(ns, {"metadata": {"name": "dry"}}, dry_run="All")
    assert out.metadata.name == "dry" and out.metadata.uid
    try:
        core.read_namespaced_config_map("dry", ns)
        raise AssertionError("dry-run create stored the object")
    except ApiException as e:
        assert e.status == 404
    cm = core.create_namespaced_config_map(ns, {"metadata": {"name": "wet"}, "data": {"a": "1"}})
    out = core.patch_namespaced_config_map("wet", ns, {"data": {"a": "2"}}, dry_run="All")
    assert out.data == {"a": "2"}
    core.delete_namespaced_config_map("wet", ns, dry_run="All")
    got = core.read_namespaced_config_map("wet", ns)
    assert got.data == {"a": "1"} and got.metadata.resource_version == cm.metadata.resource_version


def test_send_initial_events_ends_with_bookmark(api_client, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "i1"}})
    code, body = _raw(api_client, "GET", "/api/v1/namespaces/%s/configmaps?watch=1&sendInitialEvents=true"
                      "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1" % ns)
    events = [json.loads(ln) for ln in body.decode().splitlines() if ln]
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"


def test_legacy_watch_path(api_client, core, ns):
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "lw"}})
    code, body = _raw(api_client, "GET", "/api/v1/watch/namespaces/%s/configmaps?resourceVersion=%s"
                      "&timeoutSeconds=1" % (ns, rv))
    assert code == 200
    assert [json.loads(ln)["object"]["metadata"]["name"] for ln in body.decode().splitlines() if ln] == ["lw"]


def test_namespace_with_finalized_content_stays_terminating(core):
    name = unique("term")
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(name, {"metadata": {"name": "held", "finalizers": ["x.io/keep"]}})
    core.delete_namespace(name)
    nsobj = core.read_namespace(name)
    assert nsobj.status.phase == "Terminating"
    try:
        core.create_namespaced_config_map(name, {"metadata": {"name": "new"}})
        raise AssertionError("created content in a terminating namespace")
    except ApiException as e:
        assert e.status == 403
    core.patch_namespaced_config_map("held", name, {"metadata": {"$deleteFromPrimitiveList/finalizers":
                                                                 ["x.io/keep"]}})
    deadline = time.time() + 10
    while True:
        try:
            core.read_namespace(name)
        except ApiException as e:
            assert e.status == 404
            break
        assert time.time() < deadline, "namespace never went away"
        time.sleep(0.2)


def test_foreground_deletion_and_multiple_owners(core, ns):
    a = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner-a"}})
    b = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner-b"}})

    def ref(o):
        return {"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid}
    core.create_namespaced_config_map(ns, {"metadata": {"name": "only-a", "ownerReferences": [ref(a)]}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "both", "ownerReferences": [ref(a), ref(b)]}})
    core.delete_namespaced_config_map("owner-a", ns, propagation_policy="Foreground")
    deadline = time.time() + 10
    while True:
        names = {c.metadata.name for c in core.list_namespaced_config_map(ns).items}
        if "only-a" not in names and "owner-a" not in names:
            break
        assert time.time() < deadline
        time.sleep(0.2)
    both = core.read_namespaced_config_map("both", ns)  # still owned by owner-b
    assert [r.name for r in both.metadata.owner_references] == ["owner-b"]

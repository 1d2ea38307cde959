"""replacement_pods_info through ansible, against the emulator (or a real cluster when KUBECONFIG is set: see
README.md): it waits until a pod runs for each claim, started while it waits; pods on the excluded (failed)
node, not Running or being deleted do not count; it asks only for Running pods of the claims' namespace; a
timeout names the waiting claims."""

import pytest

from k8s_helpers import MODULE_USER_AGENT, TEST_LABEL, Admin, Builder, assert_refused_before_any_call, wait_until


@pytest.fixture
def ns(kube, label, cleanup):
    """A namespace of this test's own."""
    return Builder(kube, label, cleanup).namespace("vft-%s" % label)


def start_pod(kube, ns, label, name, node, claim, phase="Running"):
    """A pod of `claim` bound to `node`, its status set as its kubelet would."""
    path = "/api/v1/namespaces/%s/pods/%s" % (ns, name)
    kube.create("/api/v1/namespaces/%s/pods" % ns, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {TEST_LABEL: label}},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 3600,
                 "containers": [{"name": "main", "image": "registry.invalid/none:0"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}})
    kube.status(path, {"phase": phase})
    return path


def test_waits_until_pods_run_started_while_it_waits(ansible, kube, target, ns, label):
    claims = ["%s/data-db-%d" % (ns, i) for i in range(3)]
    # db-0's old pod still "runs" on the failed node: it does not count
    start_pod(kube, ns, label, "db-0-old", "vft-node-b", "data-db-0")
    proc = ansible.start("replacement_pods_info", {"claims": claims, "exclude_nodes": ["vft-node-b"], "wait": True,
                                                   "wait_timeout": 120, "wait_sleep": 1})
    try:
        if target["emulator"] is not None:
            admin = Admin(target["emulator"].url)
            polls = lambda: [r for r in admin.requests(method="GET")   # noqa: E731
                             if (r.get("user_agent") or "").startswith(MODULE_USER_AGENT)
                             and r["path"] == "/api/v1/namespaces/%s/pods" % ns]
            assert wait_until(polls, timeout=60), "the module never listed the pods"
            seen = polls()
            assert all(r["params"].get("fieldSelector") == "status.phase=Running" and r["params"].get("limit")
                       for r in seen), seen
        assert proc.poll() is None, "returned before any replacement ran"
        start_pod(kube, ns, label, "db-0", "vft-node-c", "data-db-0")
        start_pod(kube, ns, label, "db-1", "vft-node-a", "data-db-1", phase="Pending")
        start_pod(kube, ns, label, "db-2", "vft-node-a", "data-db-2")
        assert proc.poll() is None, "returned while db-1 is Pending"
        kube.status("/api/v1/namespaces/%s/pods/db-1" % ns, {"phase": "Running"})
        result = ansible.finish(proc, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["_rc"] == 0 and not result["changed"], result
    # on the emulator the module was seen polling before the pods were created; elsewhere it may have
    # started after them
    assert result["waiting"] == [] and result["polls"] >= (2 if target["emulator"] is not None else 1)
    assert result["running"] == [
        {"claim": claims[0], "pod": "%s/db-0" % ns, "node": "vft-node-c"},
        {"claim": claims[1], "pod": "%s/db-1" % ns, "node": "vft-node-a"},
        {"claim": claims[2], "pod": "%s/db-2" % ns, "node": "vft-node-a"}]


def test_without_wait_and_timeout_names_the_waiting_claims(ansible, kube, ns, label):
    start_pod(kube, ns, label, "db-0", "vft-node-c", "data-db-0")
    start_pod(kube, ns, label, "db-1-old", "vft-node-b", "data-db-1")
    deleting = start_pod(kube, ns, label, "db-2", "vft-node-a", "data-db-2")
    kube.request("DELETE", deleting)   # graceful: Terminating, still Running
    assert wait_until(lambda: (kube.get(deleting) or {}).get("metadata", {}).get("deletionTimestamp"))
    claims = ["%s/data-db-%d" % (ns, i) for i in range(3)]
    now = ansible.run("replacement_pods_info", {"claims": claims, "exclude_nodes": ["vft-node-b"]})
    assert now["_rc"] == 0 and now["polls"] == 1 and now["waiting"] == claims[1:], now
    assert now["running"] == [{"claim": claims[0], "pod": "%s/db-0" % ns, "node": "vft-node-c"}]
    result = ansible.run("replacement_pods_info", {"claims": claims, "exclude_nodes": ["vft-node-b"], "wait": True,
                                                   "wait_timeout": 2, "wait_sleep": 1})
    assert result["_rc"] != 0 and result["failed"], result
    assert result["msg"] == ("2 of 3 claim(s) still have no Running pod outside vft-node-b after wait_timeout=2s: "
                             "%s, %s" % (claims[1], claims[2]))
    assert result["waiting"] == claims[1:] and len(result["running"]) == 1


@pytest.mark.parametrize("args, message", [
    ({"claims": ["no-slash"]}, "claims[0]: 'no-slash' is not \"namespace/claim\""),
    ({"claims": ["default/x"], "wait_sleep": 0}, "wait_sleep=0 is out of range"),
])
def test_bad_input_is_refused_before_any_call(ansible, target, args, message):
    assert_refused_before_any_call(ansible, target, "replacement_pods_info", args, message)

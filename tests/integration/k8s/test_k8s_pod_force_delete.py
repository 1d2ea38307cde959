"""pod_force_delete through ansible, against the emulator (or a real cluster when KUBECONFIG is set: see
README.md): 100 pods in one call, a DELETE that keeps failing for one of them (the others are deleted, the
message names it, a re-run finishes), the uid precondition that keeps a replacement of the same name, check
mode, bad input."""

import pytest

from k8s_helpers import TEST_LABEL, Builder, assert_refused_before_any_call, wait_until


@pytest.fixture
def ns(kube, label, cleanup):
    """A namespace of this test's own."""
    return Builder(kube, label, cleanup).namespace("vft-%s" % label)


def make_pods(kube, ns, label, count, node="vft-node-b", terminating=True):
    """`count` pods bound to `node`, made Terminating by an ordinary (graceful) delete, as the pods of a dead node
    are once it is evicted; {name: uid}."""
    uids = {}
    for i in range(count):
        name = "p-%03d" % i
        pod = kube.create("/api/v1/namespaces/%s/pods" % ns, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {TEST_LABEL: label}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 3600,
                     "containers": [{"name": "main", "image": "registry.invalid/none:0"}]}})
        uids[name] = pod["metadata"]["uid"]
        if terminating:
            kube.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, name))
    return uids


def existing(kube, ns):
    return dict((p["metadata"]["name"], p) for p in kube.list("/api/v1/namespaces/%s/pods" % ns))


def test_100_pods_in_one_call_then_idempotent(ansible, kube, ns, label):
    uids = make_pods(kube, ns, label, 100)
    assert all(p["metadata"].get("deletionTimestamp") for p in existing(kube, ns).values())
    pods = [{"namespace": ns, "name": n, "uid": u} for n, u in sorted(uids.items())]
    result = ansible.run("pod_force_delete", {"pods": pods, "parallel": 16})
    assert result["_rc"] == 0 and result["changed"], result
    assert sorted(d["name"] for d in result["deleted"]) == sorted(uids)
    assert result["absent"] == [] and result["failures"] == []
    assert existing(kube, ns) == {}
    again = ansible.run("pod_force_delete", {"pods": pods})
    assert again["_rc"] == 0 and not again["changed"] and again["deleted"] == []
    assert sorted(a["name"] for a in again["absent"]) == sorted(uids)
    assert set(a["why"] for a in again["absent"]) == {"not found: already gone"}


def test_one_pod_failing_the_rest_done_rerun_finishes(ansible, kube, emu, ns, label):
    uids = make_pods(kube, ns, label, 100)
    bad = "p-042"
    emu.fault(method="DELETE", path_regex="/namespaces/%s/pods/%s$" % (ns, bad), status=500, count=0,
              message="etcdserver: request timed out")
    pods = [{"namespace": ns, "name": n, "uid": u} for n, u in sorted(uids.items())]
    since = emu.last_seq()
    result = ansible.run("pod_force_delete", {"pods": pods, "api_retries": 1})
    assert result["_rc"] != 0 and result["failed"] and result["changed"], result
    assert result["failures"] == [{"namespace": ns, "name": bad, "error": "500 InternalError: etcdserver: request "
                                                                         "timed out"}]
    assert result["msg"].startswith("1 of 100 pod(s) could not be force-deleted: %s/%s: 500 InternalError: "
                                    "etcdserver: request timed out" % (ns, bad))
    assert "99 deleted" in result["msg"] and len(result["deleted"]) == 99
    assert list(existing(kube, ns)) == [bad]
    # bounded: the failing DELETE was sent 1 + api_retries times
    assert len([r for r in emu.module_writes(since) if r["path"].endswith("/pods/" + bad)]) == 2
    emu.clear_faults()
    again = ansible.run("pod_force_delete", {"pods": pods})
    assert again["_rc"] == 0 and again["changed"] and [d["name"] for d in again["deleted"]] == [bad]
    assert len(again["absent"]) == 99 and existing(kube, ns) == {}


def test_uid_precondition_keeps_a_replacement_of_the_same_name(ansible, kube, ns, label):
    old = make_pods(kube, ns, label, 1, terminating=False)["p-000"]
    path = "/api/v1/namespaces/%s/pods/p-000" % ns
    kube.request("DELETE", path + "?gracePeriodSeconds=0")
    assert wait_until(lambda: kube.get(path) is None)
    new = make_pods(kube, ns, label, 1, node="vft-node-c", terminating=False)["p-000"]
    assert new != old
    preview = ansible.run("pod_force_delete", {"pods": [{"namespace": ns, "name": "p-000", "uid": old}]}, check=True)
    assert preview["_rc"] == 0 and not preview["changed"] and "replaced" in preview["absent"][0]["why"]
    result = ansible.run("pod_force_delete", {"pods": [{"namespace": ns, "name": "p-000", "uid": old}]})
    assert result["_rc"] == 0 and not result["changed"] and result["deleted"] == [], result
    assert result["absent"][0]["name"] == "p-000" and "replaced" in result["absent"][0]["why"]
    assert "Precondition failed" in result["absent"][0]["why"]
    assert kube.get(path)["metadata"]["uid"] == new


def test_check_mode_and_diff_delete_nothing(ansible, kube, emu, ns, label):
    uids = make_pods(kube, ns, label, 3)
    pods = [{"namespace": ns, "name": n} for n in sorted(uids)] + [{"namespace": ns, "name": "gone"}]
    since = emu.last_seq()
    result = ansible.run("pod_force_delete", {"pods": pods}, check=True, diff=True)
    assert result["_rc"] == 0 and result["changed"], result
    assert sorted(d["name"] for d in result["deleted"]) == sorted(uids) and result["absent"][0]["name"] == "gone"
    assert result["diff"]["before"] == {"pods": ["%s/%s" % (ns, n) for n in sorted(uids)]}
    assert result["diff"]["after"] == {"pods": []}
    assert sorted(existing(kube, ns)) == sorted(uids) and emu.module_writes(since) == []


@pytest.mark.parametrize("args, message", [
    ({"pods": [{"namespace": "default", "name": "Bad_Name"}]}, "pods[0] name 'Bad_Name' is not a valid"),
    ({"pods": [{"namespace": "default", "name": "x"}], "parallel": 0}, "parallel=0 is out of range: give 1 to 256"),
    ({"pods": [{"namespace": "default", "name": "x"}], "grace_period": "soon"}, "grace_period must be an integer"),
    ({"pods": [{"namespace": "default", "nam": "x"}]}, "nam"),
])
def test_bad_input_is_refused_before_any_call(ansible, target, args, message):
    assert_refused_before_any_call(ansible, target, "pod_force_delete", args, message)


def test_no_such_namespace_is_absent_not_failed(ansible, kube):
    assert kube.get("/api/v1/namespaces/vft-no-such-ns") is None
    result = ansible.run("pod_force_delete", {"pods": [{"namespace": "vft-no-such-ns", "name": "x"}]})
    assert result["_rc"] == 0 and not result["changed"] and result["absent"][0]["name"] == "x", result

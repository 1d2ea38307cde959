"""failed_nodes through ansible, against the emulator (or a real cluster when KUBECONFIG is set: see README.md):
the failover's record and the out-of-service taint on several nodes in one call, other taints and annotations
kept, a second run that writes nothing, check mode and diff, state=absent lifting exactly what was written, a
node that cannot be written (the others are, the message names it), a missing node, bad input that changes
nothing."""

import pytest

from k8s_helpers import TEST_LABEL

MARKER = "volfence.csi/failover"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
OTHER_TAINT = {"key": "example.com/maintenance", "value": "x", "effect": "NoSchedule"}


@pytest.fixture
def nodes(kube, label, cleanup):
    """Three nodes of this test's own, each with a taint and an annotation of another owner; removed
    afterwards (cleanup removes every object with the test's label)."""
    names = ["vft-%s-n%d" % (label, i) for i in range(3)]
    for name in names:
        kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                      "metadata": {"name": name, "labels": {TEST_LABEL: label},
                                                   "annotations": {"example.com/owner": "ops"}},
                                      "spec": {"taints": [OTHER_TAINT]}})
    return names


def marks(kube, name):
    node = kube.get("/api/v1/nodes/" + name)
    taints = node.get("spec", {}).get("taints") or []
    return dict(record=(node["metadata"].get("annotations") or {}).get(MARKER),
                tainted=any(t["key"] == OUT_OF_SERVICE and t["effect"] == "NoExecute" for t in taints),
                others=[t for t in taints if t["key"] != OUT_OF_SERVICE],
                owner=(node["metadata"].get("annotations") or {}).get("example.com/owner"))


def test_record_and_taint_many_nodes_then_lift_them(ansible, kube, nodes):
    records = {nodes[0]: '{"bootID": "b-0"}', nodes[1]: '{"bootID": "b-1"}'}
    args = {"nodes": nodes, "records": records, "out_of_service_taint": True}

    preview = ansible.run("failed_nodes", args, check=True, diff=True)
    assert preview["_rc"] == 0 and preview["changed"], preview
    assert preview["diff"]["after"][nodes[0]] == {"record": records[nodes[0]], "out_of_service_taint": True,
                                                  "out_of_service_taint_by": "volfence.csi"}
    assert all(marks(kube, n)["record"] is None and not marks(kube, n)["tainted"] for n in nodes)

    result = ansible.run("failed_nodes", args)
    assert result["_rc"] == 0 and result["changed"], result
    assert sorted(result["tainted_nodes"]) == sorted(nodes)
    assert sorted(result["recorded_nodes"]) == sorted(records)
    for name in nodes:
        got = marks(kube, name)
        assert got["record"] == records.get(name) and got["tainted"]
        assert got["others"] == [OTHER_TAINT] and got["owner"] == "ops"  # nothing of another owner lost

    again = ansible.run("failed_nodes", args)
    assert again["_rc"] == 0 and not again["changed"] and sorted(again["unchanged_nodes"]) == sorted(nodes)

    lifted = ansible.run("failed_nodes", {"nodes": nodes, "state": "absent", "out_of_service_taint": True})
    assert lifted["_rc"] == 0 and lifted["changed"], lifted
    assert lifted["taint_changed_nodes"] == sorted(nodes) and lifted["record_changed_nodes"] == sorted(records)
    for name in nodes:
        assert marks(kube, name) == dict(record=None, tainted=False, others=[OTHER_TAINT], owner="ops")


def test_someone_elses_taints_are_seen_and_left_alone_unless_told(ansible, kube, nodes):
    """A person (or medik8s) tainted nodes[1] out-of-service, and Self Node Remediation is at work on it:
    failed_nodes_info names both, the failover's taint call leaves it as it is, node_recover's lift keeps
    it (and says so) while it lifts ours on nodes[0]; remove_others_taint=true removes it."""
    theirs = {"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}
    snr = {"key": "medik8s.io/remediation", "value": "self-node-remediation", "effect": "NoExecute"}
    kube.patch("/api/v1/nodes/" + nodes[1], {"spec": {"taints": [OTHER_TAINT, snr, theirs]}})

    info = ansible.run("failed_nodes_info", {"nodes": nodes[:2], "volumes": False, "force": True})
    assert info["_rc"] == 0, info
    assert list(info["other_remediators"]) == [nodes[1]]
    assert [m["by"] for m in info["other_remediators"][nodes[1]]] == [
        "medik8s Self Node Remediation", "not volfence.csi (a remediation operator, a cloud controller or a person)"]

    tainted = ansible.run("failed_nodes", {"nodes": nodes[:2], "out_of_service_taint": True})
    assert tainted["_rc"] == 0 and tainted["taint_changed_nodes"] == [nodes[0]], tainted
    assert tainted["others_taint_nodes"] == [nodes[1]]

    lifted = ansible.run("failed_nodes", {"nodes": nodes[:2], "state": "absent", "out_of_service_taint": True})
    assert lifted["_rc"] == 0 and lifted["taint_changed_nodes"] == [nodes[0]], lifted
    assert lifted["others_taint_nodes"] == [nodes[1]]
    assert not marks(kube, nodes[0])["tainted"] and marks(kube, nodes[1])["tainted"]
    assert marks(kube, nodes[1])["others"] == [OTHER_TAINT, snr]

    told = ansible.run("failed_nodes", {"nodes": [nodes[1]], "state": "absent", "out_of_service_taint": True,
                                        "remove_others_taint": True})
    assert told["_rc"] == 0 and told["taint_changed_nodes"] == [nodes[1]] and told["others_taint_nodes"] == [], told
    assert marks(kube, nodes[1]) == dict(record=None, tainted=False, others=[OTHER_TAINT, snr], owner="ops")


def test_one_node_failing_the_others_written_rerun_finishes(ansible, kube, emu, nodes):
    emu.fault(method="PATCH", path_regex="/nodes/%s$" % nodes[1], status=403, count=1)
    args = {"nodes": nodes, "records": dict((n, "r") for n in nodes)}
    result = ansible.run("failed_nodes", args)
    assert result["_rc"] != 0 and result["changed"], result
    assert "1 of 3 nodes could not be marked: %s: " % nodes[1] in result["msg"]
    assert [f["name"] for f in result["failures"]] == [nodes[1]]
    assert marks(kube, nodes[0])["record"] == "r" and marks(kube, nodes[1])["record"] is None
    rerun = ansible.run("failed_nodes", args)
    assert rerun["_rc"] == 0 and [c["name"] for c in rerun["changed_nodes"]] == [nodes[1]]
    assert all(marks(kube, n)["record"] == "r" for n in nodes)


def test_missing_node_fails_and_names_it(ansible, kube, nodes):
    result = ansible.run("failed_nodes", {"nodes": [nodes[0], "vft-no-such-node"], "records": {nodes[0]: "r"}})
    assert result["_rc"] != 0 and "node(s) not found: vft-no-such-node" in result["msg"], result
    assert result["missing_nodes"] == ["vft-no-such-node"]
    assert marks(kube, nodes[0])["record"] == "r"


@pytest.mark.parametrize("args, message", [
    ({"records": {"vft-elsewhere": "r"}}, "records given for nodes not in nodes: vft-elsewhere"),
    ({"parallel": 0}, "parallel"),
    ({"records": {"@node": {"not": "text"}}}, "each record must be text"),
])
def test_bad_input_changes_nothing(ansible, kube, nodes, args, message):
    args = dict(args)
    if "@node" in args.get("records", {}):
        args["records"] = {nodes[0]: args["records"]["@node"]}
    result = ansible.run("failed_nodes", dict({"nodes": nodes, "out_of_service_taint": True}, **args))
    assert result["_rc"] != 0 and message in result["msg"] and "nothing was changed" in result["msg"], result
    assert not any(marks(kube, n)["tainted"] for n in nodes)

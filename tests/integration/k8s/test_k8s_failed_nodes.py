"""failed_nodes through ansible, against the emulator (or a real cluster when KUBECONFIG is set: see README.md):
the failover's record and the out-of-service taint on several nodes in one call, other taints and annotations
kept, a second run that writes nothing, check mode and diff, state=absent lifting exactly what was written, a
node that cannot be written (the others are, the message names it), a missing node, bad input that changes
nothing; state=started: the failover's start (the node's bootID) on failed nodes, a live or missing node refused
with nothing written, a re-run and check mode that write nothing, and the start removed by the record, by
`finished` or by state=absent."""

import calendar
import json
import time

import pytest

from k8s_helpers import TEST_LABEL, Builder, assert_refused_before_any_call, last_seq, module_requests, stamp

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
    assert preview["diff"]["after"][nodes[0]] == {"started": None, "record": records[nodes[0]],
                                                  "out_of_service_taint": True,
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


# --------------------------------------------------------------------------- state=started: the failover's start

STARTED = "volfence.csi/failover-started"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
DRIVER = "rbd.csi.ceph.com"


def lease_time(seconds_ago):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() - seconds_ago))


class Cluster(object):
    """Nodes of this test's own with a bootID and a Lease renewed `lease_age` seconds ago (a kubelet that
    stopped then), removed afterwards."""

    def __init__(self, kube, label, cleanup):
        self.kube, self.label, self.cleanup = kube, label, cleanup
        self.builder = Builder(kube, label, cleanup)

    def node(self, suffix, ip, ready="Unknown", lease_age=600, boot_id=None):
        name = "vft-%s-%s" % (self.label, suffix)
        path = "/api/v1/nodes/" + name
        self.cleanup.append(path)
        self.kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"name": name, "labels": {TEST_LABEL: self.label},
                                                        "annotations": {"example.com/owner": "ops"}},
                                           "spec": {"taints": [OTHER_TAINT]}})
        since = stamp(3600 if ready == "True" else 600)
        self.kube.status(path, {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": ready, "reason": "test", "lastHeartbeatTime": since,
                            "lastTransitionTime": since}],
            "nodeInfo": {"bootID": boot_id or "boot-%s-%s" % (self.label, suffix)}})
        self.cleanup.append(LEASES + "/" + name)
        self.kube.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                  "metadata": {"name": name, "labels": {TEST_LABEL: self.label}},
                                  "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                           "renewTime": lease_time(lease_age)}})
        return name

    def volume_on(self, node):
        """A ceph-csi RBD volume attached to `node`, its claim and its pod there; the image's spec."""
        b, label = self.builder, self.label
        pv, claim = "vft-%s-pv" % label, "vft-%s-data" % label
        handle = "0001-0009-rook-0000000000000001-%s" % label
        b.pv(pv, DRIVER, handle, claim=claim, attributes={"pool": "rbd", "imageName": "csi-vol-" + label})
        b.pvc(claim, pv)
        b.va(pv, DRIVER, handle, node)
        b.pod("vft-%s-old" % label, node, claim)
        return "rbd/csi-vol-%s" % label


def annotations(kube, name):
    return kube.get("/api/v1/nodes/" + name)["metadata"].get("annotations") or {}


def start_of(kube, name):
    text = annotations(kube, name).get(STARTED)
    return None if text is None else json.loads(text)


def node_writes(kube, since):
    """The modules' writes after `since` (None on a real cluster: it has no request log)."""
    requests = module_requests(kube, since)
    return None if requests is None else [(r["method"], r["path"]) for r in requests if r["method"] != "GET"]


@pytest.fixture
def cluster(kube, label, cleanup):
    return Cluster(kube, label, cleanup)


def test_started_marks_a_failed_node_with_its_boot_id_and_returns_what_it_read(ansible, kube, cluster):
    live = cluster.node("live", "198.51.100.41", ready="True", lease_age=0)
    dead = cluster.node("dead", "198.51.100.42", boot_id="boot-dead-1")
    image = cluster.volume_on(dead)
    since = last_seq(kube)
    before = time.time()
    result = ansible.run("failed_nodes", {"nodes": [dead], "state": "started"})
    assert result["_rc"] == 0 and result["changed"], result
    assert result["started_nodes"] == [dead]
    assert result["changed_nodes"] == [{"name": dead, "changes": ["failover start written"]}]
    assert result["preflight"]["refused"] is None
    assert result["preflight"]["nodes"][dead]["boot_id"] == "boot-dead-1"
    assert result["preflight"]["nodes"][dead]["ready"] == "Unknown"
    assert "198.51.100.41" in result["preflight"]["ready_addresses"]
    assert result["images"] == [image]
    assert result["node_addresses"][dead] == ["198.51.100.42"] and result["node_addresses"][live] == ["198.51.100.41"]
    assert result["recorded_nodes"] == [] and result["requests"] >= 1
    # the Node as read before the write: no start on it yet
    (read,) = [n for n in result["nodes"] if n["metadata"]["name"] == dead]
    assert STARTED not in (read["metadata"].get("annotations") or {})
    mark = start_of(kube, dead)
    assert mark["boot_id"] == "boot-dead-1"
    started_at = calendar.timegm(time.strptime(mark["started_at"].split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S"))
    assert before - 5 <= started_at <= time.time() + 5
    assert annotations(kube, dead)["example.com/owner"] == "ops" and MARKER not in annotations(kube, dead)
    assert STARTED not in annotations(kube, live)
    assert marks(kube, dead)["others"] == [OTHER_TAINT] and not marks(kube, dead)["tainted"]
    writes = node_writes(kube, since)
    assert writes is None or writes == [("PATCH", "/api/v1/nodes/" + dead)]

    # a re-run (the first one cut off after its start): nothing written, the first time kept
    since = last_seq(kube)
    again = ansible.run("failed_nodes", {"nodes": [dead], "state": "started"})
    assert again["_rc"] == 0 and not again["changed"], again
    assert again["started_nodes"] == [] and again["unchanged_nodes"] == [dead]
    assert start_of(kube, dead) == mark
    assert node_writes(kube, since) in (None, [])


@pytest.mark.parametrize("which, reason", [("live", "is Ready"), ("fresh", "renewed its Lease")])
def test_started_refuses_a_node_that_may_be_alive_and_writes_nothing(ansible, kube, cluster, which, reason):
    nodes = dict(live=cluster.node("live", "198.51.100.51", ready="True", lease_age=0),
                 fresh=cluster.node("fresh", "198.51.100.52", lease_age=0),  # NotReady, but its kubelet renewed
                 dead=cluster.node("dead", "198.51.100.53"))
    since = last_seq(kube)
    result = ansible.run("failed_nodes", {"nodes": [nodes["dead"], nodes[which]], "state": "started"})
    assert result["_rc"] != 0, result
    assert "refusing to fence %s: it %s" % (nodes[which], reason) in result["msg"], result["msg"]
    assert result["msg"].endswith("; nothing was changed") and nodes["dead"] not in result["msg"]
    assert result["started_nodes"] == [] and result["preflight"]["refused"]
    for name in nodes.values():
        assert STARTED not in annotations(kube, name)
    assert node_writes(kube, since) in (None, [])


def test_force_lets_a_fresh_lease_pass_never_a_ready_node(ansible, kube, cluster):
    live = cluster.node("live", "198.51.100.61", ready="True", lease_age=0)
    fresh = cluster.node("fresh", "198.51.100.62", lease_age=0)
    refused = ansible.run("failed_nodes", {"nodes": [live], "state": "started", "force": True})
    assert refused["_rc"] != 0 and "it is Ready" in refused["msg"], refused
    assert STARTED not in annotations(kube, live)
    forced = ansible.run("failed_nodes", {"nodes": [fresh], "state": "started", "force": True})
    assert forced["_rc"] == 0 and forced["started_nodes"] == [fresh], forced
    assert start_of(kube, fresh)["boot_id"] == "boot-%s-fresh" % cluster.label


def test_started_refuses_a_missing_node_and_writes_nothing(ansible, kube, cluster):
    dead = cluster.node("dead", "198.51.100.71")
    since = last_seq(kube)
    result = ansible.run("failed_nodes", {"nodes": [dead, "vft-no-such-node"], "state": "started"})
    assert result["_rc"] != 0, result
    assert "no node named vft-no-such-node (the cluster's nodes: " in result["msg"]
    assert result["msg"].endswith("; nothing was changed") and result["started_nodes"] == []
    assert STARTED not in annotations(kube, dead)
    assert node_writes(kube, since) in (None, [])


def test_started_in_check_mode_writes_nothing(ansible, kube, cluster):
    dead = cluster.node("dead", "198.51.100.81")
    since = last_seq(kube)
    result = ansible.run("failed_nodes", {"nodes": [dead], "state": "started"}, check=True, diff=True)
    assert result["_rc"] == 0 and result["changed"], result
    assert result["started_nodes"] == [dead]
    assert json.loads(result["diff"]["after"][dead]["started"])["boot_id"] == "boot-%s-dead" % cluster.label
    assert result["diff"]["before"][dead]["started"] is None
    assert STARTED not in annotations(kube, dead)
    assert node_writes(kube, since) in (None, [])


def test_present_with_records_and_finished_removes_the_start_and_absent_a_lone_one(ansible, kube, cluster):
    """A failover of three nodes: fenced for d0 (its record), nothing fenced for d1 (finished), and d2 kept a
    start of an earlier run that was cut off (not finished: it may have fenced what it did not record)."""
    d0, d1, d2 = (cluster.node("d%d" % i, "198.51.100.9%d" % i) for i in range(3))
    earlier = ansible.run("failed_nodes", {"nodes": [d2], "state": "started"})
    assert earlier["_rc"] == 0 and earlier["started_nodes"] == [d2], earlier
    started = ansible.run("failed_nodes", {"nodes": [d0, d1, d2], "state": "started"})
    assert started["_rc"] == 0 and sorted(started["started_nodes"]) == sorted([d0, d1]), started
    assert sorted(started["unchanged_nodes"]) == [d2]
    record = json.dumps({"blocklist": ["198.51.100.90:0/1"], "boot_id": start_of(kube, d0)["boot_id"],
                         "fenced_at": "2026-11-26T09:00:00Z", "networkfences": []}, sort_keys=True)
    earlier_start = start_of(kube, d2)

    since = last_seq(kube)
    present = ansible.run("failed_nodes", {"nodes": [d0, d1, d2], "records": {d0: record},
                                           "finished": started["started_nodes"]})
    assert present["_rc"] == 0 and present["changed"], present
    changes = dict((c["name"], c["changes"]) for c in present["changed_nodes"])
    assert changes == {d0: ["record written", "failover start removed"], d1: ["failover start removed"]}
    assert present["unchanged_nodes"] == [d2] and present["recorded_nodes"] == [d0]
    assert annotations(kube, d0).get(MARKER) == record and STARTED not in annotations(kube, d0)
    assert MARKER not in annotations(kube, d1) and STARTED not in annotations(kube, d1)
    assert start_of(kube, d2) == earlier_start and MARKER not in annotations(kube, d2)
    assert all(annotations(kube, n)["example.com/owner"] == "ops" for n in (d0, d1, d2))
    writes = node_writes(kube, since)
    assert writes is None or sorted(writes) == sorted([("PATCH", "/api/v1/nodes/" + n) for n in (d0, d1)])

    lifted = ansible.run("failed_nodes", {"nodes": [d2], "state": "absent"})
    assert lifted["_rc"] == 0 and lifted["changed_nodes"] == [{"name": d2, "changes": ["failover start removed"]}]
    assert STARTED not in annotations(kube, d2) and annotations(kube, d2)["example.com/owner"] == "ops"
    again = ansible.run("failed_nodes", {"nodes": [d0, d1, d2], "state": "absent"})
    assert again["_rc"] == 0 and [c["name"] for c in again["changed_nodes"]] == [d0], again
    assert all(MARKER not in annotations(kube, n) and STARTED not in annotations(kube, n) for n in (d0, d1, d2))


@pytest.mark.parametrize("args, message", [
    ({"state": "started", "out_of_service_taint": True}, "out_of_service_taint: a failover taints its nodes"),
    ({"state": "started", "lease_grace_seconds": -1}, "lease_grace_seconds"),
    ({"finished": ["vft-elsewhere"]}, "finished names nodes not in nodes: vft-elsewhere"),
])
def test_started_bad_input_is_refused_before_any_request(ansible, target, cluster, args, message):
    dead = cluster.node("dead", "198.51.100.99")
    result = assert_refused_before_any_call(ansible, target, "failed_nodes", dict({"nodes": [dead]}, **args),
                                            message)
    assert result["msg"].endswith("nothing was changed")

"""failed_nodes_fence (node_failover's fence in one call) against the lab's real cluster, with both
backends, run through Ansible.

The Kubernetes side is given as data: Node and Lease objects built here, node-b failed (NotReady, its
Lease an hour old), node-a and node-c Ready. The watchers are real: the lab's holders watch the images
from the nodes' own addresses (their network namespaces), so the module reads them from Ceph, blocklists
through the monitor and waits for the OSDs to drop the fenced watch.
"""

import json

import pytest

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import failover_cluster
from labtools import blocklist_entries as blocklist, ceph_args, run_module, run_refused

MODULE = "volfence.csi.failed_nodes_fence"


def cluster_objects(lab, failed="node-b", failed_lease_age=3600):
    """Every Node (the failed one NotReady, the others Ready) and every Lease."""
    return failover_cluster(lab.nodes, failed, failed_lease_age, ready_lease_age=2, transition_age=900)


def fence_args(lab, name, images, failed=("node-b",), failed_lease_age=3600, **extra):
    nodes, leases = cluster_objects(lab, failed[0], failed_lease_age)
    args = dict(failed_nodes=list(failed), images=list(images), nodes=nodes, leases=leases,
                node_addresses=dict((n, [ip]) for n, ip in lab.nodes.items()),
                protect_addresses=[ip for n, ip in lab.nodes.items() if n not in failed],
                expire=900, wait_timeout=60)
    args.update(extra)
    return ceph_args(lab, name, **args)


def watching(lab, image):
    return sorted(w["address"] for w in lab.watchers(image))


@pytest.fixture
def shared_image(clean_lab):
    """An image watched by node-b (the failed node) and node-c (Ready), as after a pod moved while
    the dead node's client still watches; a second image watched by node-b alone."""
    lab = clean_lab
    shared, own = lab.new_image("ffshared"), lab.new_image("ffown")
    held_b = json.loads(lab.lab("hold", "node-b", shared))
    held_c = json.loads(lab.lab("hold", "node-c", shared))
    held_b2 = json.loads(lab.lab("hold", "node-b", own))
    assert watching(lab, shared) == sorted([held_b["address"], held_c["address"]])
    assert watching(lab, own) == [held_b2["address"]]
    return dict(shared=shared, own=own, b=held_b["address"], c=held_c["address"], b2=held_b2["address"])


@pytest.fixture
def pod_network_client(clean_lab):
    """One client of node-b watching two images, from an address node-b's Node does not list (pod
    networking), which ceph-csi recorded for node-b on the first image only."""
    lab = clean_lab
    recorded, unrecorded = lab.new_image("ffrec"), lab.new_image("ffunrec")
    held = json.loads(lab.lab("hold", "node-b", recorded, "--also-image", unrecorded, "--metadata-key",
                              ".rbd.csi.ceph.com/clientaddress/0001-vol-rec/node-b", "--metadata-value",
                              lab.nodes["node-b"]))
    assert watching(lab, recorded) == watching(lab, unrecorded) == [held["address"]]
    return dict(recorded=recorded, unrecorded=unrecorded, address=held["address"])


def test_a_client_recorded_on_one_image_is_fenced_and_reported_fenced_on_every_image_it_watches(
        clean_lab, lab_inventory, backend, pod_network_client):
    """ceph-csi recorded node-b's client on one image; the same client (one ip:port/nonce) watches a
    second image. One blocklist entry, the recorded IP whole as ceph-csi fences it (issue 43), cuts it on both,
    and the plan says so for both, so node_failover releases both volumes (I6) instead of keeping the second for a
    client it did fence."""
    lab, img = clean_lab, pod_network_client
    host, name = backend
    pod_ip = "198.51.100.2"  # node-b's Node lists another address: the client is on the pod network
    args = fence_args(lab, name, [img["unrecorded"], img["recorded"]],
                      node_addresses=dict((n, [pod_ip if n == "node-b" else ip]) for n, ip in lab.nodes.items()))
    for item in args["nodes"]:
        if item["metadata"]["name"] == "node-b":
            item["status"]["addresses"][0]["address"] = pod_ip
    fenced = run_module(lab_inventory, host, MODULE, args)
    assert fenced.get("failed") is not True, fenced
    plan = fenced["plan"]
    whole = lab.nodes["node-b"] + ":0/0"
    assert img["address"].startswith(lab.nodes["node-b"] + ":")
    assert plan["fence"] == [whole] and plan["kept"] == [], plan
    assert plan["by_image"] == {img["recorded"]: [whole], img["unrecorded"]: [whole]}
    assert plan["by_node"] == {"node-b": [whole]}
    assert "ceph-csi record" in plan["fenced"][0]["sources"] and "watcher" in plan["fenced"][0]["sources"]
    recorded = [c for r in fenced["images"] if r["spec"] == img["recorded"] for c in r["csi_client_addresses"]]
    assert [(c["node"], c["ip"]) for c in recorded] == [("node-b", lab.nodes["node-b"])]
    assert blocklist(lab) == [whole] and fenced["still_watched"] == []
    assert watching(lab, img["recorded"]) == [] and watching(lab, img["unrecorded"]) == []


# ----------------------------------------------------------------------------- (a) the fence, and (d) again

def test_fences_exactly_the_failed_nodes_clients_keeps_the_ready_nodes_and_is_idempotent(
        clean_lab, lab_inventory, backend, shared_image):
    lab, img = clean_lab, shared_image
    host, name = backend
    images = [img["shared"], img["own"], "rbd/volfence-no-such-image"]
    fenced = run_module(lab_inventory, host, MODULE, fence_args(lab, name, images), diff=True)
    assert fenced.get("failed") is not True, fenced
    assert fenced["changed"] is True and fenced["backend"] == name

    # the plan: node-b's two clients, per client address; node-c's kept with its reason (I1)
    plan = fenced["plan"]
    assert plan["refused"] is None
    assert sorted(plan["fence"]) == sorted([img["b"], img["b2"]])
    assert {k: sorted(v) for k, v in plan["by_node"].items()} == {"node-b": sorted([img["b"], img["b2"]])}
    assert plan["by_image"] == {img["shared"]: [img["b"]], img["own"]: [img["b2"]]}
    assert [(k["address"], k["image"], k["invariant"], k.get("other_node")) for k in plan["kept"]] == [
        (img["c"], img["shared"], "I1", "node-c")]
    assert "Ready node node-c" in plan["kept"][0]["reason"], plan["kept"]

    # the cluster: exactly those two entries (ip:port/nonce, never the whole IP)
    assert blocklist(lab) == sorted([img["b"], img["b2"]])
    assert sorted(a["entry"] for a in fenced["actions"]) == sorted([img["b"], img["b2"]])
    assert fenced["failed_actions"] == [] and fenced["failed_images"] == []
    assert sorted(fenced["diff"]["after"]["fenced"]) == sorted([img["b"], img["b2"]])
    assert fenced["missing"] == [dict(spec="rbd/volfence-no-such-image", error=fenced["missing"][0]["error"])]

    # read before: both nodes named; when the module returned, node-b's watches were already gone
    before = dict((r["spec"], r["nodes"]) for r in fenced["images"])
    assert before == {img["shared"]: ["node-b", "node-c"], img["own"]: ["node-b"]}
    after = dict((r["spec"], sorted(w["address"] for w in r["watchers"])) for r in fenced["watchers_after"])
    assert after == {img["shared"]: [img["c"]], img["own"]: []}
    assert fenced["still_watched"] == []
    assert watching(lab, img["shared"]) == [img["c"]] and watching(lab, img["own"]) == []

    # (d) a second run: nothing left to fence, nothing written
    again = run_module(lab_inventory, host, MODULE, fence_args(lab, name, images))
    assert again.get("failed") is not True, again
    assert again["changed"] is False and again["actions"] == [] and again["plan"]["fence"] == []
    assert again["plan"]["by_node"] == {"node-b": []}
    assert [k["address"] for k in again["plan"]["kept"]] == [img["c"]]
    assert blocklist(lab) == sorted([img["b"], img["b2"]])
    assert watching(lab, img["shared"]) == [img["c"]]

    # clean up what this test added
    for entry in (img["b"], img["b2"]):
        lab.ceph("osd", "blocklist", "rm", entry)
    assert blocklist(lab) == []


# ----------------------------------------------------------------------------- (b) check mode

def test_check_mode_plans_and_changes_nothing(clean_lab, lab_inventory, backend, shared_image):
    lab, img = clean_lab, shared_image
    host, name = backend
    preview = run_module(lab_inventory, host, MODULE, fence_args(lab, name, [img["shared"], img["own"]]),
                         check=True, diff=True)
    assert preview.get("failed") is not True, preview
    assert preview["changed"] is True
    assert sorted(preview["plan"]["fence"]) == sorted([img["b"], img["b2"]])
    assert sorted(preview["plan"]["by_node"]["node-b"]) == sorted([img["b"], img["b2"]])
    assert [k["address"] for k in preview["plan"]["kept"]] == [img["c"]]
    assert sorted(a["entry"] for a in preview["actions"]) == sorted([img["b"], img["b2"]])
    assert sorted(preview["diff"]["after"]["fenced"]) == sorted([img["b"], img["b2"]])
    assert preview["watchers_after"] == [] and preview["still_watched"] == []  # nothing waited for
    # nothing on the cluster changed
    assert blocklist(lab) == []
    assert watching(lab, img["shared"]) == sorted([img["b"], img["c"]])
    assert watching(lab, img["own"]) == [img["b2"]]


def test_a_fresh_lease_of_the_failed_node_fences_nothing(clean_lab, lab_inventory, backend, shared_image):
    lab, img = clean_lab, shared_image
    host, name = backend
    result = run_module(lab_inventory, host, MODULE,
                        fence_args(lab, name, [img["shared"]], failed_lease_age=5, lease_grace_seconds=120))
    assert result.get("failed") is not True, result
    assert result["changed"] is False and result["actions"] == []
    assert "node node-b renewed its Lease" in result["plan"]["refused"]
    assert result["plan"]["fence"] == [] and result["plan"]["by_node"] == {"node-b": []}
    assert sorted(k["address"] for k in result["plan"]["kept"]) == sorted([img["b"], img["c"]])
    assert blocklist(lab) == []
    assert watching(lab, img["shared"]) == sorted([img["b"], img["c"]])


# ----------------------------------------------------------------------------- (c) bad input

BAD_INPUT = [
    (dict(images=["rbd/a/b/c"]), "images entry 'rbd/a/b/c' must be pool/image or pool/namespace/image"),
    (dict(images=["rbd/--keyring=x"]), 'starts with "-"'),
    (dict(failed_nodes=["Node_B"]), "failed_nodes entry 'Node_B' is not a valid Kubernetes object name"),
    (dict(failed_nodes=[]), "failed_nodes: give at least one node"),
    (dict(expire=0), "expire must be positive"),
    (dict(wait_timeout=0), "wait_timeout"),
    (dict(protect_addresses=["node-a"]), "node-a"),
]


@pytest.mark.input_refusal
@pytest.mark.parametrize("bad, message", BAD_INPUT, ids=[
    "image-spec", "image-dash", "node-name", "no-nodes", "expire-0", "wait-timeout-0", "protect-name"])
def test_bad_input_is_a_clear_error_and_changes_nothing(clean_lab, lab_inventory, backend, shared_image,
                                                        bad, message):
    lab, img = clean_lab, shared_image
    args = fence_args(lab, backend[1], [img["shared"], img["own"]])
    args.update(bad)
    result = run_refused(lab, lab_inventory, backend, "failed_nodes_fence", args, sentinel=249)
    assert message in result["msg"], result["msg"]
    assert result["msg"].endswith("; nothing was fenced"), result["msg"]
    assert "Traceback" not in json.dumps(result) and "MODULE FAILURE" not in result["msg"]
    assert not result.get("changed")
    # the failed node's clients still watch: nothing was fenced
    assert watching(lab, img["shared"]) == sorted([img["b"], img["c"]])
    assert watching(lab, img["own"]) == [img["b2"]]

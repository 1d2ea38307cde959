"""failed_nodes_info through ansible, against the emulator (the lab's when KUBECONFIG is set, or a
real cluster: see README.md): in one read, the preflight verdict on failed nodes (I1) and every
volume they hold, asking the API for the failed nodes' pods only (field selector spec.nodeName) and
for their claims and volumes by name."""

import urllib.parse

import pytest

from k8s_helpers import VAS, Builder, last_seq, module_requests

DRIVER = "rbd.csi.ceph.com"
OTHER_PODS = 12


@pytest.fixture
def world(kube, label, cleanup):
    b = Builder(kube, label, cleanup)
    w = dict(live=b.node("vft-%s-live" % label, "198.51.100.31"),
             dead=b.node("vft-%s-dead" % label, "198.51.100.32", ready="Unknown"),
             pv="vft-%s-pv" % label, claim="vft-%s-data" % label, image="rbd/csi-vol-%s" % label)
    handle = "0001-0009-rook-0000000000000001-%s" % label
    b.pv(w["pv"], DRIVER, handle, claim=w["claim"], attributes={"pool": "rbd", "imageName": "csi-vol-" + label})
    b.pvc(w["claim"], w["pv"])
    w["va"] = b.va(w["pv"], DRIVER, handle, w["dead"])
    w["old"] = b.pod("vft-%s-old" % label, w["dead"], w["claim"])["metadata"]["name"]
    # pods running on the live node, with claims of their own: none of them is read
    for i in range(OTHER_PODS):
        b.pod("vft-%s-web-%02d" % (label, i), w["live"], "vft-%s-web-%02d" % (label, i), phase="Running")
    return w


def test_reads_the_dead_nodes_volumes_and_only_its_pods(ansible, kube, world):
    since = last_seq(kube)
    result = ansible.run("failed_nodes_info", {"nodes": [world["dead"]], "page_size": 5})
    assert result["_rc"] == 0 and not result["changed"], result
    assert result["preflight"]["refused"] is None
    assert result["preflight"]["nodes"][world["dead"]]["addresses"] == ["198.51.100.32"]
    assert "198.51.100.31" in result["preflight"]["ready_addresses"]
    (volume,) = result["volumes"]
    assert volume["pv"] == world["pv"] and volume["rbd"] and volume["image"] == world["image"]
    assert volume["pods"] == ["default/" + world["old"]] and volume["claims"] == ["default/" + world["claim"]]
    assert world["va"] in volume["attachments"] and volume["nodes"] == [world["dead"]]
    assert result["images"] == [world["image"]]
    assert result["node_addresses"][world["live"]] == ["198.51.100.31"]
    assert [p["metadata"]["name"] for p in result["pods"]] == [world["old"]]
    assert result["listed"]["pods"] == 1 and result["listed"]["pvcs"] == 1 and result["listed"]["pvs"] == 1
    requests = module_requests(kube, since)
    if requests is None:
        return  # a real cluster has no request log
    assert requests and all(r["method"] == "GET" for r in requests)
    pod_lists = [r for r in requests if r["path"] == "/api/v1/pods"]
    # the dead node's pods, then the pods that have not started anywhere (what may wait on the node)
    assert [urllib.parse.parse_qs(r["query"])["fieldSelector"] for r in pod_lists] == [
        ["spec.nodeName=%s" % world["dead"]], ["status.phase!=Running,status.phase!=Succeeded,status.phase!=Failed"]]
    assert "/api/v1/namespaces/default/persistentvolumeclaims/" + world["claim"] in [r["path"] for r in requests]
    assert "/api/v1/persistentvolumes/" + world["pv"] in [r["path"] for r in requests]
    assert not [r for r in requests if r["path"] in ("/api/v1/persistentvolumes", "/api/v1/persistentvolumeclaims")]
    # the attachments, page by page when there are more than a page
    vas = [r for r in requests if r["path"] == VAS]
    assert vas and all(urllib.parse.parse_qs(r["query"]).get("limit") == ["5"] for r in vas)


def test_a_ready_node_is_refused_and_a_rack_is_read_in_one_call(ansible, world):
    result = ansible.run("failed_nodes_info", {"nodes": [world["live"], world["dead"]]})
    assert result["_rc"] == 0, result
    refused = result["preflight"]["refused"]
    assert refused and "refusing to fence %s" % world["live"] in refused and world["dead"] not in refused
    (volume,) = [v for v in result["volumes"] if v["pv"] == world["pv"]]
    assert volume["nodes"] == [world["dead"]]
    assert result["listed"]["pods"] == 1 + OTHER_PODS


def test_a_recovery_reads_no_pods(ansible, kube, world):
    since = last_seq(kube)
    result = ansible.run("failed_nodes_info", {"nodes": [world["dead"]], "volumes": False})
    assert result["_rc"] == 0, result
    assert result["volumes"] == [] and result["pods"] == [] and result["images"] == []
    assert world["dead"] in [n["metadata"]["name"] for n in result["nodes"]]
    requests = module_requests(kube, since)
    if requests is not None:
        assert not [r for r in requests if "/pods" in r["path"] or "volume" in r["path"]]


def test_a_missing_node_and_bad_input_are_named_and_read_nothing(ansible, kube, world):
    missing = ansible.run("failed_nodes_info", {"nodes": [world["dead"], "vft-no-such-node"]})
    assert missing["_rc"] != 0
    assert "no node named vft-no-such-node (the cluster's nodes: " in missing["msg"]
    assert missing["msg"].endswith("nothing was changed")
    since = last_seq(kube)
    for args, message in (({"nodes": ["Not_A_Node"]}, "Not_A_Node"), ({"nodes": []}, "at least one node"),
                          ({"nodes": [world["dead"]], "lease_grace_seconds": -1}, "lease_grace_seconds"),
                          ({"nodes": [world["dead"]], "page_size": 0}, "page_size")):
        bad = ansible.run("failed_nodes_info", args)
        assert bad["_rc"] != 0 and message in bad["msg"], bad
        assert "Traceback" not in bad["msg"]
    assert not module_requests(kube, since)  # refused before anything was read


def test_a_pod_waiting_elsewhere_on_a_volume_names_its_image(ansible, kube, world, label, cleanup):
    """Kubernetes got there first: the dead node's pod is gone, its replacement waits on the live node. The
    read returns the replacement's RBD volume (waiting) and its image, for the fence to look at."""
    b = Builder(kube, label, cleanup)
    kube.force_delete("/api/v1/namespaces/default/pods/" + world["old"])
    new = b.pod("vft-%s-new" % label, world["live"], world["claim"], phase="Pending")["metadata"]
    result = ansible.run("failed_nodes_info", {"nodes": [world["dead"]]})
    assert result["_rc"] == 0 and not result["changed"], result
    assert result["waiting"] == [{"pod": "default/" + new["name"], "uid": new["uid"], "node": world["live"],
                                  "claim": "default/" + world["claim"], "pv": world["pv"], "image": world["image"]}]
    assert result["images"] == [world["image"]] and result["pods"] == []

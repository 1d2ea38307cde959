"""Incident scenarios on the lab: the stuck states come from the real Ceph checks, and the
known manual fixes unstick them."""

import json
import os
import subprocess
import time

import pytest
from kubeemu.wait import wait_until

from labtools import blocklist_entries


@pytest.fixture
def kube(lab):
    from kubeemu.client import KubeClient, server_from_kubeconfig
    path = os.path.join(lab.dir, "kubeconfig")
    if not os.path.exists(path):
        pytest.skip("the lab has no Kubernetes side")
    return KubeClient(server_from_kubeconfig(path))


@pytest.fixture
def scenario(clean_lab, kube):
    lab = clean_lab
    for node in lab.nodes:  # every node alive, whatever an earlier run left behind
        lab.lab("revive-node", node)

    def build(name):
        return json.loads(lab.lab("scenario", name))
    yield build
    # Bring every node back and remove what the scenario built.
    for node in lab.nodes:
        lab.lab("revive-node", node)
    for deploy in kube.list("deployments", "default"):
        kube.delete("deployments", deploy["metadata"]["name"], "default")
    for pod in kube.list("pods", "default"):
        kube.delete("pods", pod["metadata"]["name"], "default", grace_period=0)
    from labtools import clear_foreign_attachments
    clear_foreign_attachments(kube)
    wait_until(lambda: all(n["metadata"]["name"] for n in kube.list("nodes")) and
               all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
                   for n in kube.list("nodes")), timeout=15)


def pod(kube, name):
    return kube.find("pods", name, "default")


def test_stale_rbd_watcher_stuck_state_comes_from_the_real_watcher(scenario, kube, lab):
    state = scenario("stale-rbd-watcher")
    assert state["stuck_node"] != "node-b"
    assert "rbd image %s is still being used" % state["image"] in state["event"]
    assert [w.split(":")[0] for w in state["watchers"]] == [lab.nodes["node-b"]]
    stuck = pod(kube, state["stuck_pod"])
    waiting = stuck["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
    assert (stuck["status"]["phase"], waiting) == ("Pending", "ContainerCreating")
    old = pod(kube, state["old_pod"])
    assert old["metadata"].get("deletionTimestamp"), "the old pod is Terminating"
    node_b = kube.get("nodes", "node-b")
    ready = [c for c in node_b["status"]["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] != "True"
    assert any(t["key"] == "node.kubernetes.io/unreachable" for t in node_b["spec"]["taints"])
    # A negative, so a bounded observation: nothing but fencing unsticks the pod, so over 3 s
    # (several of the kubelet's mount retries, at most 1 s apart) it never leaves Pending.
    phase = lambda: pod(kube, state["stuck_pod"])["status"]["phase"]
    left = wait_until(lambda: phase() != "Pending", timeout=3)
    assert not left, "the stuck pod left Pending without fencing: now %s" % phase()


def test_stale_rbd_watcher_blocklisting_node_b_runs_the_pod(scenario, kube, lab):
    """The lab's kubelet retries the mount at most 1 s apart, so the pod runs a few seconds after the
    fence; the defect this catches is a pod that never runs. The wait's bound is far from both."""
    state = scenario("stale-rbd-watcher")
    started = time.time()
    lab.ceph("osd", "blocklist", "add", lab.nodes["node-b"])
    running = wait_until(lambda: pod(kube, state["stuck_pod"])["status"]["phase"] == "Running", timeout=90)
    assert running, "pod still %s 90 s after the fence" % pod(kube, state["stuck_pod"])["status"]["phase"]
    print("\npod Running %.1f s after the fence" % (time.time() - started))
    # The new watcher is node-a's, recorded in the image metadata by the node plugin.
    watchers = lab.watchers(state["image"])
    assert [w["address"].split(":")[0] for w in watchers] == [lab.nodes[state["stuck_node"]]]


def test_stale_rbd_watcher_mixed_the_other_volumes_stay_on_the_dead_node(scenario, kube, lab):
    """Issue 17's lab state: beside stale-rbd-watcher, node-b holds an EBS-like CSI volume (attached by the
    lab's attach controller, which never detaches another driver's volume), an in-tree NFS volume
    and an attachment of a PV that does not exist; the EBS-like workload's replacement is stuck on
    the Multi-Attach error, the NFS one runs elsewhere."""
    state = scenario("stale-rbd-watcher-mixed")
    assert "rbd image %s is still being used" % state["image"] in state["event"]
    other, nfs, orphan = state["other"], state["nfs"], state["orphan"]
    attached = kube.get("volumeattachments", other["volumeattachment"])
    assert (attached["spec"]["attacher"], attached["spec"]["nodeName"], attached["status"]["attached"]) == (
        state["other_driver"], "node-b", True)
    assert kube.find("persistentvolumes", orphan["pv"]) is None
    assert kube.get("volumeattachments", orphan["volumeattachment"])["spec"]["nodeName"] == "node-b"
    assert kube.get("persistentvolumes", nfs["pv"])["spec"]["nfs"]["server"]

    def replacement(app, fragment=None):
        for p in kube.list("pods", "default", label_selector="app=" + app):
            if p["spec"].get("nodeName") not in (None, "node-b") and not p["metadata"].get("deletionTimestamp"):
                if fragment is None and p["status"].get("phase") == "Running":
                    return p
                events = kube.list("events", "default", field_selector="involvedObject.name=" + p["metadata"]["name"])
                if fragment and any(fragment in e.get("message", "") for e in events):
                    return p
        return None
    assert wait_until(lambda: replacement(other["deployment"], "Multi-Attach error"), timeout=30)
    assert wait_until(lambda: replacement(nfs["deployment"]), timeout=30)
    # The lab's attacher left the other driver's attachment on the dead node.
    assert kube.get("volumeattachments", other["volumeattachment"])["spec"]["nodeName"] == "node-b"


def test_stale_rbd_lock_lock_from_other_node_blocks_until_broken(scenario, kube, lab):
    state = scenario("stale-rbd-lock")
    assert "rbd: image %s is locked by other nodes" % state["image"].split("/")[-1] in state["event"]
    locks = json.loads(lab.rbd("lock", "ls", state["image"], "--format", "json"))
    assert [(l["id"], l["address"].split(":")[0]) for l in locks] == [("kubelet_lock_magic_node-b", lab.nodes["node-b"])]
    # The manual fix of the seed: fence the locker, then remove its lock.
    lab.ceph("osd", "blocklist", "add", state["locker_address"])
    lab.rbd("lock", "rm", state["image"], state["lock_id"], state["locker"])
    assert wait_until(lambda: pod(kube, state["stuck_pod"])["status"]["phase"] == "Running", timeout=60)
    locks = json.loads(lab.rbd("lock", "ls", state["image"], "--format", "json"))
    assert [l["id"] for l in locks] == ["kubelet_lock_magic_%s" % state["stuck_node"]]


def test_stale_volumeattachment_attachment_name_collision_shape(scenario, kube):
    state = scenario("stale-volumeattachment")
    assert state["unique_name_length"] == 68 and state["unique_name"].startswith("csi-")
    va = kube.get("volumeattachments", state["volumeattachment"])
    assert va["spec"]["nodeName"] == state["node"] and va["status"]["attached"] is True
    # A negative, so a bounded observation: over 2 s (four passes of the lab's 0.5 s attach/detach
    # loop) another driver's attachment is never removed.
    gone = wait_until(lambda: kube.find("volumeattachments", state["volumeattachment"]) is None, timeout=2)
    assert not gone, "the lab's attach/detach loop removed another driver's attachment %s" % state["volumeattachment"]


def test_kill_and_revive_node(scenario, kube, lab):
    image = lab.new_image()
    lab.hold("node-c", image)
    lab.lab("kill-node", "node-c")
    lease = lambda: kube.get("leases", "node-c", "kube-node-lease")["spec"]["renewTime"]
    before = lease()
    assert wait_until(lambda: [c for c in kube.get("nodes", "node-c")["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] == "Unknown", timeout=15)
    assert lease() == before, "a dead kubelet renews no lease"
    assert len(lab.watchers(image)) == 1, "its Ceph client stays alive"
    lab.lab("revive-node", "node-c")
    assert wait_until(lambda: [c for c in kube.get("nodes", "node-c")["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] == "True", timeout=15)
    assert wait_until(lambda: lab.watchers(image) == [], timeout=60), "old clients are gone after a reboot"


def test_csi_addons_stand_in_fences_and_unfences(clean_lab, kube):
    lab = clean_lab
    cidr = lab.nodes["node-c"] + "/32"
    nodes = wait_until(lambda: kube.list("csiaddonsnodes", "ceph-csi"), timeout=60)
    assert {n["spec"]["driver"]["nodeID"] for n in nodes} == set(lab.nodes)
    assert {n["status"]["state"] for n in nodes} == {"Connected"}
    kube.create("networkfences", {
        "apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFence",
        "metadata": {"name": "lab-fence-node-c"},
        "spec": {"driver": "rbd.csi.ceph.com", "cidrs": [cidr], "fenceState": "Fenced",
                 "secret": {"name": "csi-rbd-secret", "namespace": "ceph-csi"},
                 "parameters": {"clusterID": "lab"}}})
    try:
        fenced = wait_until(lambda: (kube.get("networkfences", "lab-fence-node-c").get("status") or {}).get("result"))
        assert fenced == "Succeeded"
        assert lab.nodes["node-c"] + ":0/0" in blocklist_entries(lab)
        assert "csiaddons.openshift.io/network-fence" in kube.get("networkfences", "lab-fence-node-c")["metadata"]["finalizers"]
        kube.patch("networkfences", "lab-fence-node-c", {"spec": {"fenceState": "Unfenced"}})
        assert wait_until(lambda: kube.get("networkfences", "lab-fence-node-c")["status"].get("message")
                          == "unfencing operation successful")
        assert lab.nodes["node-c"] + ":0/0" not in blocklist_entries(lab)
    finally:
        kube.delete("networkfences", "lab-fence-node-c")
    assert wait_until(lambda: kube.find("networkfences", "lab-fence-node-c") is None, timeout=60)


def test_dead_fuse_mount_dead_fuse_mount_blocks_teardown_until_unmounted(scenario, kube, lab):
    state = scenario("dead-fuse-mount")
    assert "Transport endpoint is not connected" in state["event"] and state["killed_daemons"] == 1
    with pytest.raises(OSError) as err:
        os.stat(state["mount"])
    assert err.value.errno == 107  # ENOTCONN
    kube.delete("pods", state["pod"], "default")
    # kubelet's TearDown stats the dead mount and fails: the pod stays Terminating.
    assert wait_until(lambda: [e for e in kube.list("events", "default", field_selector="involvedObject.name=" + state["pod"])
                               if e["message"].startswith("UnmountVolume.TearDown failed")], timeout=10)
    assert pod(kube, state["pod"]) is not None
    subprocess.run(["umount", "-l", state["mount"]], check=True)  # the manual fix of the seed
    assert wait_until(lambda: pod(kube, state["pod"]) is None, timeout=60)
    fresh = wait_until(lambda: [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
                                if p["status"].get("phase") == "Running"
                                and p["status"]["containerStatuses"][0]["state"].get("running")], timeout=15)
    assert fresh and fresh[0]["metadata"]["uid"] != state["pod_uid"]

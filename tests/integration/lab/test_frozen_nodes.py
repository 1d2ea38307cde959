"""Frozen and cut-off nodes (issue 43), and images in RADOS namespaces, on the lab's real Ceph.

A node paused (pause-node) or cut from the network (partition-node) for longer than the OSD's watch timeout
(osd_client_watch_timeout, 30 s, left at Ceph's default) drops out of `rbd status` while its rbd client
still has the image open read-write; resumed or healed, librbd watches again and writes on. The lab's stage
holders write as a pod's application does and record each outcome (lab.holder_writes). Kubernetes' own
eviction and force detach never come (clocks `never`). Every check waits for a state; none sleeps."""

import json
import os
import time

import pytest

from labtools import declare_shut_down, lab_config, undo_failover, wait_until
from volfence_lab import lab as labmod
from volfence_lab import scenarios

NAMESPACE = "default"


def addresses(lab, image):
    return [w["address"] for w in lab.watchers(image)]


def boot_id(kube, node):
    return kube.get("nodes", node)["status"]["nodeInfo"]["bootID"]


def ready(kube, node):
    return [c for c in kube.get("nodes", node)["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True"


def test_a_paused_node_drops_out_of_rbd_status_and_writes_again_once_resumed(frozen, lab, kube):
    cfg = lab_config(lab)
    state = frozen(how="pause", image_features="layering")
    image, client = state["image"], state["holder_address"]
    assert state["image_features"] == ["layering"]  # ceph-csi's example StorageClass: no exclusive lock
    assert state["watchers"] == [] and client.startswith(state["failed_node_ip"] + ":")
    assert labmod.proc_state(state["holder_pid"]) == "T"  # frozen, not gone: the image is still open
    still = labmod.holder_writes(cfg, "node-b", image)
    assert still["ok"] > 0 and still["last_ok"]["time"] < state["watch_expired_at"] - 20, still
    # ceph-csi's in-use check on node-a now passes: a replacement stages beside the frozen client
    staged = labmod.hold(cfg, "node-a", image, kind="stage", csi_stage=True)
    assert not staged.get("in_use") and addresses(lab, image) == [staged["address"]]

    lab.lab("resume-node", "node-b")
    thawed = time.time()
    assert wait_until(lambda: client in addresses(lab, image), timeout=90), addresses(lab, image)
    after = scenarios.wait_writing(cfg, "node-b", image, after=thawed, timeout=90)
    assert after["address"] == client and after["errors"] == 0  # the same client, writing unhindered
    scenarios.wait_writing(cfg, "node-a", image, after=thawed, timeout=90)  # and the replacement too
    assert sorted(addresses(lab, image)) == sorted([client, staged["address"]])
    assert not ready(kube, "node-b")  # its kubelet stays stopped, as after kill-node


def test_a_partitioned_node_drops_out_of_rbd_status_and_writes_again_once_healed(frozen, lab, kube):
    cfg = lab_config(lab)
    wait_until(lambda: ready(kube, "node-b"), timeout=60, what="node-b Ready")
    booted = boot_id(kube, "node-b")
    state = frozen(how="partition", image_features="layering")
    image, client = state["image"], state["holder_address"]
    assert state["watchers"] == [] and labmod.proc_state(state["holder_pid"]) not in (None, "T", "Z")  # running
    assert scenarios.node_watchers(cfg, image, "node-b") == []
    cut = labmod.holder_writes(cfg, "node-b", image)
    assert cut["last_ok"]["time"] < state["watch_expired_at"] - 20, cut  # nothing got through since the cut

    lab.lab("heal-node", "node-b")
    healed = time.time()
    assert wait_until(lambda: client in addresses(lab, image), timeout=120), addresses(lab, image)
    after = scenarios.wait_writing(cfg, "node-b", image, after=healed, timeout=120)
    assert after["address"] == client
    # the same kubelet is heard again: Ready, and no reboot (its bootID)
    assert wait_until(lambda: ready(kube, "node-b"), timeout=60)
    assert boot_id(kube, "node-b") == booted


def test_a_paused_node_blocklisted_meanwhile_never_writes_again_once_resumed(frozen, lab):
    """What a fence does to issue 43's client (the lead's failover tests assert this through the collection):
    on an image with Ceph's default features, its writes fail with ESHUTDOWN (Ceph's EBLOCKLISTED) after the
    thaw, its last success is from before the freeze, and it watches no more."""
    cfg = lab_config(lab)
    state = frozen(how="pause", image_features=None)
    image, client = state["image"], state["holder_address"]
    assert "exclusive-lock" in state["image_features"]
    frozen_record = labmod.holder_writes(cfg, "node-b", image)
    lab.ceph("osd", "blocklist", "add", state["failed_node_ip"])
    lab.lab("resume-node", "node-b")
    failed = wait_until(lambda: (labmod.holder_writes(cfg, "node-b", image) or {}).get("errnos", {}).get("ESHUTDOWN"),
                        timeout=90, what="node-b's writes to fail")
    assert failed
    record = labmod.holder_writes(cfg, "node-b", image)
    assert record["last_ok"] == frozen_record["last_ok"], record
    assert record["last_error"]["time"] > record["last_ok"]["time"]
    assert client not in addresses(lab, image)


# ----------------------------------------------------------------------------- RADOS namespaces

@pytest.fixture
def apps(clean_lab, kube):
    """Deployments a test makes (deleted afterwards), every node alive and untainted before and after."""
    lab = clean_lab
    for node in lab.nodes:
        lab.lab("revive-node", node)
    made = []
    yield made
    for name in made:
        kube.delete("deployments", name, NAMESPACE)
    for node in lab.nodes:
        undo_failover(kube, node)
        lab.lab("revive-node", node)


def volume_on(lab, kube, apps, node, rados_namespace=None):
    """A Deployment with a ceph-csi claim of its own Running on `node`: (name, PV name, image spec)."""
    cfg = lab_config(lab)
    scenarios.base_objects(kube)
    suffix = os.urandom(3).hex()
    claim, app = "ns-claim-" + suffix, "ns-app-" + suffix
    pv_name, image = scenarios.rbd_volume(cfg, kube, claim, rados_namespace=rados_namespace)
    scenarios.wait_schedulable(kube, node)
    scenarios.deployment(kube, app, claim, node)
    apps.append(app)
    assert wait_until(lambda: scenarios.running_on(kube, app, node), timeout=90), "%s Running on %s" % (app, node)
    return app, pv_name, image


def attachments(kube, pv_name, node="node-b"):
    return [va for va in kube.list("volumeattachments")
            if va["spec"]["source"].get("persistentVolumeName") == pv_name and va["spec"]["nodeName"] == node]


def recorded(lab, image):
    meta = json.loads(lab.rbd("image-meta", "list", image, "--format", "json") or "{}")
    return dict((k, v) for k, v in meta.items() if k.startswith(".rbd.csi.ceph.com/clientaddress/"))


def test_an_image_in_a_rados_namespace_is_staged_there_and_detached(apps, lab, kube):
    cfg = lab_config(lab)
    app, pv_name, image = volume_on(lab, kube, apps, "node-b", rados_namespace="tenant-a")
    assert image.startswith("rbd/tenant-a/csi-vol-")
    pv = kube.get("persistentvolumes", pv_name)
    assert pv["spec"]["csi"]["volumeAttributes"]["radosNamespace"] == "tenant-a"
    # NodeStage opened it in its namespace from node-b, recorded node-b there, and its pod writes to it
    assert [a.split(":")[0] for a in addresses(lab, image)] == [lab.nodes["node-b"]]
    assert list(recorded(lab, image).values()) == [lab.nodes["node-b"]]
    scenarios.wait_writing(cfg, "node-b", image)
    assert [va["status"]["attached"] for va in attachments(kube, pv_name)] == [True]

    kube.delete("deployments", app, NAMESPACE)
    # unstaged on node-b, then detached: ControllerUnpublish found the image in its namespace, so the
    # external-attacher's finalizer went and the VolumeAttachment with it
    assert wait_until(lambda: not attachments(kube, pv_name), timeout=90), attachments(kube, pv_name)
    assert addresses(lab, image) == [] and recorded(lab, image) == {}


def test_a_failed_node_with_images_in_and_outside_a_namespace_has_both_detached_under_the_taint(
        kubernetes_never_releases, apps, lab, kube):
    """The failure seen before: ControllerUnpublish opened the namespaced image in the pool's default
    namespace, failed on every pass, and its VolumeAttachment kept the external-attacher's finalizer."""
    _app_ns, pv_ns, image_ns = volume_on(lab, kube, apps, "node-b", rados_namespace="tenant-a")
    _app, pv_plain, image_plain = volume_on(lab, kube, apps, "node-b")
    assert attachments(kube, pv_ns) and attachments(kube, pv_plain)
    lab.lab("kill-node", "node-b")
    scenarios.wait_not_ready(kube, "node-b")
    declare_shut_down(kube, "node-b")
    for pv_name in (pv_ns, pv_plain):
        assert wait_until(lambda: not attachments(kube, pv_name), timeout=90), attachments(kube, pv_name)
    # every ControllerUnpublish forgot node-b's record (a replacement stuck elsewhere records nothing)
    assert [k for k in recorded(lab, image_ns) if k.endswith("/node-b")] == []
    assert [k for k in recorded(lab, image_plain) if k.endswith("/node-b")] == []

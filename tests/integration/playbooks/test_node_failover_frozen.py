# -*- coding: utf-8 -*-
"""A client that comes back (issue 43): node_failover of a node that froze (pause-node: a VM paused, SIGSTOP) or
was cut from the network (partition-node: its link down) for longer than osd_client_watch_timeout (30 s, Ceph's
default in the lab), whose rbd client no longer shows in `rbd status` while it still has the image open
read-write. The failover must fence it all the same: once the node thaws or the partition heals, its old client
never watches or writes the image again (the lab's stage holders write as a pod's application does and record
each outcome). Images as ceph-csi's example StorageClass makes them (`imageFeatures: layering`: no exclusive
lock, so librbd on the new node breaks nothing by itself) and with Ceph's defaults. Kubernetes' own eviction and
force detach never come (clocks `never`). Every check waits for a state; none sleeps.

On the code before issue 43 each of these fails: the run fenced nothing ("no client holds ..."), and the thawed
client wrote beside the replacement."""

import json
import os
import time

import pytest

from labtools import REPO, blocklist_entries, declare_shut_down, lab_config, node_fence, run_playbook, \
    running_elsewhere, wait_until
from volfence_lab import lab as labmod

FAILOVER = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")
UNDO = {"pause": "resume-node", "partition": "heal-node"}


def failed_write_after(cfg, image, moment):
    """Until node-b's old client of `image` tried to write after `moment` and failed: its record."""
    def tried():
        record = labmod.holder_writes(cfg, "node-b", image)
        return record if record and (record.get("last_error") or {}).get("time", 0) > moment else None
    return wait_until(tried, timeout=120)


@pytest.mark.parametrize("how", ["pause", "partition"])
@pytest.mark.parametrize("features", ["layering", None], ids=["layering", "ceph-defaults"])
def test_a_frozen_or_partitioned_node_is_fenced_and_its_client_never_writes_again(frozen, lab, kube, lab_inventory,
                                                                                 tmp_path, how, features):
    cfg = lab_config(lab)
    state = frozen(how=how, image_features=features)
    image, client = state["image"], state["holder_address"]
    assert state["watchers"] == [], state  # the watch expired: rbd status shows no client of node-b
    extra = {"failed_node": "node-b", "lease_grace_seconds": 3, "wait_timeout": 120,
             "report_path": str(tmp_path / "r.json")}

    run = run_playbook(lab_inventory, FAILOVER, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    # node-b fenced whole, from ceph-csi's record and because it staged the image, though nothing showed it
    assert report["fence_plan"]["fence"] == node_fence(state), report["fence_plan"]
    sources = report["fence_plan"]["fenced"][0]["sources"]
    assert "ceph-csi record" in sources and "the node staged it" in sources and "watcher" not in sources, sources
    assert node_fence(state)[0] in blocklist_entries(lab)
    [volume] = [v for v in report["volumes"] if v.get("pv_name") == state["pv"]]
    assert volume["safe"] is True and volume["how"].startswith("fenced (blocklist): " + node_fence(state)[0])
    [new] = running_elsewhere(kube, state["deployment"])
    assert new["spec"]["nodeName"] != "node-b"

    # node-b thaws, or its partition heals: its old client comes back, and may not write any more
    lab.lab(UNDO[how], "node-b")
    thawed = time.time()
    record = failed_write_after(cfg, image, thawed)
    assert record, labmod.holder_writes(cfg, "node-b", image)
    assert record["address"] == client
    assert (record.get("last_ok") or {}).get("time", 0) < state["watch_expired_at"], record  # never after the freeze
    assert client not in [w["address"] for w in lab.watchers(image)]
    # ... while the replacement's client goes on
    assert [w["address"].split(":")[0] for w in lab.watchers(image)] == [lab.nodes[new["spec"]["nodeName"]]]


def assert_never_writes_again(cfg, lab, state, how):
    """node-b thaws (or heals): its old client comes back and may neither write nor watch any more."""
    lab.lab(UNDO[how], "node-b")
    thawed = time.time()
    record = failed_write_after(cfg, state["image"], thawed)
    assert record, labmod.holder_writes(cfg, "node-b", state["image"])
    assert (record.get("last_ok") or {}).get("time", 0) < state["watch_expired_at"], record
    assert state["holder_address"] not in [w["address"] for w in lab.watchers(state["image"])]


def test_a_frozen_node_is_fenced_by_its_networkfence_and_its_client_never_writes_again(frozen, lab, kube,
                                                                                      lab_inventory, tmp_path):
    """The NetworkFence of node-b's own addresses cuts the frozen client, which showed nowhere (this path fenced
    the node's CIDRs before issue 43 too: the test keeps it so)."""
    cfg = lab_config(lab)
    state = frozen(how="pause", image_features="layering")
    run = run_playbook(lab_inventory, FAILOVER, {
        "failed_node": "node-b", "fence_method": "networkfence", "lease_grace_seconds": 3, "wait_timeout": 120,
        "networkfence_secret": {"name": "csi-rbd-secret", "namespace": "ceph-csi"}, "networkfence_cluster_id": "lab",
        "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["networkfences"] == ["volfence-node-b"]
    assert kube.get("networkfences", "volfence-node-b")["spec"]["cidrs"] == [state["failed_node_ip"] + "/32"]
    [volume] = [v for v in report["volumes"] if v.get("pv_name") == state["pv"]]
    assert volume["safe"] is True and node_fence(state)[0] in volume["how"], volume["how"]
    assert running_elsewhere(kube, state["deployment"])
    assert_never_writes_again(cfg, lab, state, "pause")


def test_after_an_administrators_taint_a_frozen_node_is_fenced_though_nothing_of_it_is_left(frozen, lab, kube,
                                                                                          lab_inventory, tmp_path):
    """Kubernetes got there first: under the administrator's out-of-service taint it removed node-b's pod and
    VolumeAttachment, and, node-b's watch having expired, ceph-csi on node-a staged the image beside the frozen
    client (ceph-csi fences nothing here). node_failover finds nothing of node-b to release, and fences node-b
    whole all the same: Kubernetes released its volumes without a fence."""
    cfg = lab_config(lab)
    state = frozen(how="pause", image_features="layering")
    declare_shut_down(kube, "node-b")
    assert wait_until(lambda: running_elsewhere(kube, state["deployment"]), timeout=120)
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                  "wait_timeout": 120, "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["volumes"] == [] and report["fence_plan"]["fence"] == node_fence(state), report["fence_plan"]
    assert report["fence_plan"]["fenced"][0]["sources"] == ["out-of-service taint"]
    assert_never_writes_again(cfg, lab, state, "pause")


def test_four_incidents_at_once_the_failed_nodes_in_tree_lock_is_broken_and_both_pods_run(
        kubernetes_never_releases, incident, kube, lab, lab_inventory, tmp_path):
    """node-b holds the in-tree kubelet_lock_magic_node-b lock of a pod that moved to node-a (its `rbd lock add`
    client long gone) and its ceph-csi client of another pod's image; then node-b dies. node_failover fences
    node-b whole, breaks that stale lock once its locker is cut, and both pods run (before issue 43 it waited
    120 s for the locked pod and failed)."""
    locked = incident("stale-rbd-lock")
    state = incident("stale-rbd-watcher")  # every node revived first: the lock's holder is gone, its lock stays
    assert [lock["id"] for lock in lab.locks(locked["image"])] == [locked["lock_id"]]
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                  "wait_timeout": 120, "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["fence_plan"]["fence"] == node_fence(state)
    assert [(b["image"], b["id"]) for b in report["fence_plan"]["locks_broken"]] == [(locked["image"],
                                                                                      locked["lock_id"])]
    assert locked["lock_id"] not in [lk["id"] for lk in lab.locks(locked["image"])]
    assert wait_until(lambda: [p for p in kube.list("pods", "default", label_selector="app=" + locked["deployment"])
                               if p["status"].get("phase") == "Running"], timeout=60)
    assert running_elsewhere(kube, state["deployment"])


def test_node_recover_after_the_reboot_leaves_no_entry_covering_the_nodes_new_clients(frozen, lab, kube,
                                                                                    lab_inventory, tmp_path):
    state = frozen(how="pause", image_features="layering")
    failover_report = tmp_path / "f.json"
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                  "wait_timeout": 120, "report_path": str(failover_report)})
    assert run.rc == 0, run.stdout[-3000:]
    assert node_fence(state)[0] in blocklist_entries(lab)

    lab.lab("revive-node", "node-b")  # power-cycled: the frozen client is gone, a new bootID
    assert wait_until(lambda: [c for c in kube.get("nodes", "node-b")["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] == "True", timeout=30)
    run = run_playbook(lab_inventory, RECOVER, {"node": "node-b", "failover_report": str(failover_report),
                                                 "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert node_fence(state)[0] in report["blocklist_removed"]
    assert not [e for e in blocklist_entries(lab) if e.split(":")[0] == state["failed_node_ip"]
                or e.startswith("cidr:" + state["failed_node_ip"])], blocklist_entries(lab)
    # a new client of node-b watches and writes
    image = lab.new_image("after-reboot")
    lab.hold("node-b", image)
    assert [w["address"].split(":")[0] for w in lab.watchers(image)] == [state["failed_node_ip"]]


def test_rbd_lock_cleanup_fences_the_frozen_mapping_of_the_locks_node_not_only_its_locker(
        kubernetes_never_releases, incident, kube, lab, lab_inventory, tmp_path):
    """The in-tree plugin takes kubelet_lock_magic_<node> with a short-lived `rbd lock add` and maps the image with
    another client: the locker is long gone, the mapping writes. node-b freezes until the mapping's watch expired;
    rbd_lock_cleanup breaks the stale lock for the pod stuck on node-a. Fencing the locker alone (before issue 43)
    left the mapping to write again once node-b thawed; its node's address, whole, cuts it."""
    cfg = lab_config(lab)
    state = incident("stale-rbd-lock")
    image = state["image"]
    lab.release("node-b", image)  # the `rbd lock add` client exits: its lock stays
    assert [lock["id"] for lock in lab.locks(image)] == [state["lock_id"]]
    assert wait_until(lambda: lab.watchers(image) == [], timeout=120)  # its watch times out
    lab.lab("hold", "node-b", image, "--writes")  # the mapping that writes, another client of node-b
    mapping = [w["address"] for w in lab.watchers(image)]
    assert len(mapping) == 1 and mapping[0] != state["locker_address"], (mapping, state["locker_address"])
    lab.lab("pause-node", "node-b")
    frozen_at = time.time()
    assert wait_until(lambda: lab.watchers(image) == [], timeout=120)  # the watch expired: rbd status is empty
    assert wait_until(lambda: [c for c in kube.get("nodes", "node-b")["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] != "True", timeout=60)
    run = run_playbook(lab_inventory, os.path.join(REPO, "playbooks", "rbd_lock_cleanup.yml"), {
        "pod_namespace": "default", "pod_name": state["stuck_pod"], "wait_timeout": 120, "lease_grace_seconds": 3,
        "report_path": str(tmp_path / "r.json")})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    whole = lab.nodes["node-b"] + ":0/0"
    assert sorted(b["entry"] for b in report["blocklisted"]) == sorted([state["locker_address"], whole])
    assert report["pod_restarted"] is True

    lab.lab("resume-node", "node-b")
    thawed = time.time()

    def refused():
        record = labmod.holder_writes(cfg, "node-b", image, kind="watch")
        return record if record and (record.get("last_error") or {}).get("time", 0) > thawed else None
    assert wait_until(refused, timeout=120), labmod.holder_writes(cfg, "node-b", image, kind="watch")
    record = labmod.holder_writes(cfg, "node-b", image, kind="watch")
    assert (record.get("last_ok") or {}).get("time", 0) < frozen_at + 1, record
    assert mapping[0] not in [w["address"] for w in lab.watchers(image)]

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

from labtools import REPO, blocklist_entries, node_fence, remove_incident, run_playbook, running_elsewhere, \
    undo_failover, wait_until
from volfence_lab import lab as labmod
from volfence_lab import scenarios

FAILOVER = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")
UNDO = {"pause": "resume-node", "partition": "heal-node"}


def lab_config(lab):
    """The lab's Config as lab.py sees it, for the scenario helpers."""
    env = dict(os.environ, LAB_DIR=lab.dir, LAB_PREFIX=lab.env["LAB_PREFIX"], LAB_SLOT=lab.env["LAB_SLOT"],
               LAB_NODES=lab.env["LAB_NODES"])
    cfg = labmod.Config(env)
    cfg.version = lab.env.get("LAB_CEPH_VERSION")
    return cfg


@pytest.fixture
def frozen(kubernetes_never_releases, clean_lab, kube):
    """frozen_rbd_watcher with the test's options (every node alive first); afterwards its Deployment goes, the
    failover's marks are undone and every node is revived (a frozen one's old client killed, its link up)."""
    lab = clean_lab
    for node in lab.nodes:
        lab.lab("revive-node", node)
    built = []

    def build(**options):
        state = scenarios.frozen_rbd_watcher(lab_config(lab), **options)
        built.append(state)
        return state
    yield build
    for state in built:
        remove_incident(kube, state)
    for node in lab.nodes:
        lab.lab("heal-node", node)
        lab.lab("revive-node", node)
        undo_failover(kube, node)


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


def test_node_recover_after_the_reboot_leaves_no_entry_covering_the_nodes_new_clients(frozen, lab, kube,
                                                                                    lab_inventory, tmp_path):
    cfg = lab_config(lab)
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
    held = labmod.hold(cfg, "node-b", image_of_new_volume(cfg, lab))
    assert held["address"].startswith(state["failed_node_ip"] + ":")


def image_of_new_volume(cfg, lab):
    """A fresh image of the lab's pool, for a new client of a recovered node to open."""
    name = "rbd/recovered-%d" % int(time.time() * 1000)
    lab.cli("rbd", "create", name, "--size", "8", "--image-feature", "layering")
    return name

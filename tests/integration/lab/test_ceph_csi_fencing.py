"""The lab's ceph-csi fences on detach as ceph-csi 3.15+ does (docs/lab.md): with --enable-fencing on its
controller plugin, ControllerUnpublish of a volume from a node carrying the out-of-service taint blocklists
the address the node recorded at NodeStage, as a one-host range for three years; with it off, nothing. Either
way the record is removed. Kubernetes' own eviction and force detach never come (clocks `never`): the detach
here is the one the out-of-service taint makes."""

import datetime
import json

import pytest

from labtools import blocklist_until, declare_shut_down, wait_until
from volfence_lab import scenarios

AUTO_BLOCKLIST_SECONDS = 94670856  # ceph-csi's AutoBlocklistTime


def recorded(lab, state, node="node-b"):
    meta = json.loads(lab.rbd("image-meta", "list", state["image"], "--format", "json") or "{}")
    return dict((k, v) for k, v in meta.items() if k.startswith(".rbd.csi.ceph.com/clientaddress/")
                and k.endswith("/" + node))


def attached_to(kube, state, node="node-b"):
    return [va for va in kube.list("volumeattachments")
            if va["spec"]["source"].get("persistentVolumeName") == state["pv"] and va["spec"]["nodeName"] == node]


@pytest.mark.parametrize("fencing", [True, False], ids=["fencing-on", "fencing-off"])
def test_ceph_csi_fences_the_recorded_address_on_detach_only_under_the_taint_and_with_fencing_on(
        kubernetes_never_releases, incident, kube, fencing):
    lab = kubernetes_never_releases
    scenarios.set_csi_fencing(kube, fencing)
    try:
        state = incident("stale-rbd-watcher")
        ip = state["failed_node_ip"]
        assert list(recorded(lab, state).values()) == [ip]  # NodeStage recorded node-b's address
        assert attached_to(kube, state) and blocklist_until(lab) == {}
        declare_shut_down(kube, "node-b")
        assert wait_until(lambda: not attached_to(kube, state), timeout=60)  # detached under the taint
        assert recorded(lab, state) == {}  # every ControllerUnpublish forgets the record
        entries = blocklist_until(lab)
        if fencing:
            # beside it, at most node-b's own client, blocklisted by librbd when the replacement broke its exclusive
            # lock (rbd_blocklist_on_break_lock): nothing of another node
            assert "cidr:%s:0/32" % ip in entries, entries
            assert all(entry.startswith(ip + ":") for entry in entries if not entry.startswith("cidr:")), entries
            assert [e for e in entries if e.startswith("cidr:")] == ["cidr:%s:0/32" % ip], entries
            until = datetime.datetime.fromisoformat(entries["cidr:%s:0/32" % ip].replace("Z", "+00:00"))
            if until.tzinfo is None:
                until = until.replace(tzinfo=datetime.timezone.utc)
            left = (until - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
            assert AUTO_BLOCKLIST_SECONDS - 120 < left <= AUTO_BLOCKLIST_SECONDS, left
            # node-b's live client is cut off: its watch goes, and the replacement runs
            assert wait_until(lambda: lab.watchers(state["image"]) == [] or all(
                w["address"].split(":")[0] != ip for w in lab.watchers(state["image"])), timeout=60)
        else:
            assert entries == {}
            assert [w["address"].split(":")[0] for w in lab.watchers(state["image"])] == [ip]  # still writing
    finally:
        scenarios.set_csi_fencing(kube, False)

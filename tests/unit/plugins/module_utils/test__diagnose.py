# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import (
    address_ip,
    diagnose,
    is_stuck,
    table,
)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import NOW
EARLIER = "2026-11-21T05:50:00Z"      # 600 s before NOW
JUST_NOW = "2026-11-21T05:59:50Z"     # 10 s before NOW


def node(name, ip, ready=True):
    return {"metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]}}


NODES = [node("node-a", "10.0.0.11"), node("node-b", "10.0.0.12", ready=False), node("node-c", "10.0.0.13")]


def pod(name, node_name, claim, reason="ContainerCreating", phase="Pending", created=EARLIER, uid=None):
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or "uid-" + name,
                         "creationTimestamp": created},
            "spec": {"nodeName": node_name, "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": reason}}}]}}


def pvc(name, pv):
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": pv}}


def rbd_csi_pv(name, image, driver="rbd.csi.ceph.com", handle="0001-0003-lab-0000000000000002-x"):
    return {"metadata": {"name": name}, "spec": {"csi": {"driver": driver, "volumeHandle": handle,
                                                         "volumeAttributes": {"pool": "rbd", "imageName": image}}}}


def event(pod_name, message, reason="FailedMount"):
    return {"involvedObject": {"kind": "Pod", "name": pod_name, "uid": "uid-" + pod_name},
            "reason": reason, "message": message}


def test_address_ip():
    assert address_ip("10.0.0.12:0/3847961205") == "10.0.0.12"
    assert address_ip("[fd00::12]:0/5") == "fd00::12"
    assert address_ip("10.0.0.12") == "10.0.0.12"


def test_is_stuck_needs_the_threshold_and_a_waiting_pod():
    assert is_stuck(pod("p", "node-a", "c"), NOW, 120)
    assert not is_stuck(pod("p", "node-a", "c", created=JUST_NOW), NOW, 120)
    running = pod("p", "node-a", "c", phase="Running")
    running["status"]["containerStatuses"][0]["state"] = {"running": {}}
    assert not is_stuck(running, NOW, 0)
    terminating = pod("p", "node-a", "c")
    terminating["metadata"]["deletionTimestamp"] = EARLIER
    assert not is_stuck(terminating, NOW, 0)


def test_stale_rbd_watcher_watcher_from_the_dead_node():
    pods = [pod("nginx-1", "node-a", "pvc-test")]
    watchers = {"rbd/csi-vol-1": [{"address": "10.0.0.12:0/3847961205", "ip": "10.0.0.12"}]}
    events = [event("nginx-1", "MountVolume.MountDevice failed ... rbd image rbd/csi-vol-1 is still being used")]
    [d] = diagnose(pods, events=events, pvcs=[pvc("pvc-test", "pv-1")], pvs=[rbd_csi_pv("pv-1", "csi-vol-1")], vas=[], nodes=NODES,
                   watchers=watchers, now=NOW)
    assert d["incident"] == "stale-rbd-watcher"
    assert d["target"] == {"failed_node": "node-b", "watchers": ["10.0.0.12:0/3847961205"]}
    assert d["next"]["file"] == "playbooks/node_failover.yml"
    assert d["next"]["extra_vars"] == {"failed_node": "node-b"}
    assert "watcher 10.0.0.12:0/3847961205 on node-b" in d["evidence"]


def test_own_watcher_is_not_an_incident():
    pods = [pod("nginx-1", "node-a", "pvc-test")]
    watchers = {"rbd/csi-vol-1": [{"address": "10.0.0.11:0/1", "ip": "10.0.0.11"}]}
    [d] = diagnose(pods, events=[], pvcs=[pvc("pvc-test", "pv-1")], pvs=[rbd_csi_pv("pv-1", "csi-vol-1")], vas=[], nodes=NODES,
                   watchers=watchers, now=NOW)
    assert d["incident"] == "unknown" and d["next"] is None


def test_stale_rbd_lock_lock_of_another_node():
    pv = {"metadata": {"name": "index-api-pv"}, "spec": {"rbd": {"pool": "mioss", "image": "index-api-image"}}}
    locks = {"mioss/index-api-image": [{"id": "kubelet_lock_magic_node-b", "locker": "client.24128",
                                        "address": "10.0.0.12:0/1"}]}
    [d] = diagnose([pod("index-api-1", "node-a", "claim")], events=[], pvcs=[pvc("claim", "index-api-pv")], pvs=[pv], vas=[], nodes=NODES,
                   locks=locks, now=NOW)
    assert d["incident"] == "stale-rbd-lock"
    assert d["next"]["file"] == "playbooks/rbd_lock_cleanup.yml"
    assert d["target"]["locks"] == ["kubelet_lock_magic_node-b"]


def test_own_intree_lock_is_not_an_incident():
    pv = {"metadata": {"name": "pv"}, "spec": {"rbd": {"pool": "rbd", "image": "img"}}}
    locks = {"rbd/img": [{"id": "kubelet_lock_magic_node-a", "locker": "client.1", "address": "10.0.0.11:0/1"}]}
    [d] = diagnose([pod("p", "node-a", "claim")], events=[], pvcs=[pvc("claim", "pv")], pvs=[pv], vas=[], nodes=NODES, locks=locks, now=NOW)
    assert d["incident"] == "unknown"


def test_stale_volumeattachment_attachment_on_another_node_and_collision():
    driver = "csi-unity.dellemc.com"
    handle = ("csiunity-0123456789-iSCSI-APM0012345678-sv_42" + "x" * 68)[:68 - len(driver) - 1]
    assert len(driver + "^" + handle) == 68
    pv = {"metadata": {"name": "pv-u"}, "spec": {"csi": {"driver": driver, "volumeHandle": handle}}}
    va = {"metadata": {"name": "csi-abc"}, "spec": {"nodeName": "node-b", "source": {"persistentVolumeName": "pv-u"}}}
    [d] = diagnose([pod("app-1", "node-a", "claim")], events=[], pvcs=[pvc("claim", "pv-u")], pvs=[pv], vas=[va], nodes=NODES,
                   git_version="v1.23.5", now=NOW)
    assert d["incident"] == "stale-volumeattachment"
    assert d["target"] == {"pv": "pv-u", "volumeattachments": ["csi-abc"]}
    assert any("68 characters" in e and "v1.23.5 is affected" in e for e in d["evidence"])
    # On 1.24+ the shape alone is harmless: only the stuck attachment counts.
    [fixed] = diagnose([pod("app-1", "node-a", "claim")], events=[], pvcs=[pvc("claim", "pv-u")], pvs=[pv], vas=[], nodes=NODES,
                       git_version="v1.30.2", now=NOW)
    assert fixed["incident"] == "unknown"


def test_dead_fuse_mount_dead_fuse_mount_even_when_running():
    running = pod("s3-1", "node-b", "s3", reason="CreateContainerError", phase="Running")
    pv = {"metadata": {"name": "pv-s3"}, "spec": {"csi": {"driver": "ch.ctrox.csi.s3-driver", "volumeHandle": "b"}}}
    events = [event("s3-1", "Liveness probe failed: ls: cannot access '/var/lib/www/html': "
                            "Transport endpoint is not connected", reason="Unhealthy")]
    [d] = diagnose([running], events=events, pvcs=[pvc("s3", "pv-s3")], pvs=[pv], vas=[], nodes=NODES, now=NOW, threshold=10000)
    assert d["incident"] == "dead-fuse-mount"
    assert d["next"]["extra_vars"] == {"target_nodes": ["node-b"]}


def test_events_of_an_earlier_pod_with_the_same_name_do_not_count():
    pods = [pod("nginx-1", "node-a", "pvc-test", uid="new-uid")]
    stale = event("nginx-1", "rbd image rbd/csi-vol-1 is still being used")  # uid-nginx-1, not new-uid
    [d] = diagnose(pods, events=[stale], pvcs=[pvc("pvc-test", "pv-1")], pvs=[rbd_csi_pv("pv-1", "csi-vol-1")], vas=[], nodes=NODES, now=NOW)
    assert d["incident"] == "unknown"


def test_table_names_the_playbook_and_the_evidence():
    watchers = {"rbd/csi-vol-1": [{"address": "10.0.0.12:0/9", "ip": "10.0.0.12"}]}
    diagnoses = diagnose([pod("nginx-1", "node-a", "pvc-test")], events=[], pvcs=[pvc("pvc-test", "pv-1")],
                         pvs=[rbd_csi_pv("pv-1", "csi-vol-1")], vas=[], nodes=NODES, watchers=watchers, now=NOW)
    lines = table(diagnoses)
    assert lines[0].split() == ["NAMESPACE", "POD", "NODE", "AGE", "INCIDENT", "NEXT"]
    assert "playbooks/node_failover.yml -e 'failed_node=node-b'" in lines[1]
    assert "  - watcher 10.0.0.12:0/9 on node-b" in lines
    assert table([]) == ["NAMESPACE  POD  NODE  AGE  INCIDENT  NEXT", "(no stuck pods)"]


def test_pv_rbd_image():
    from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import pv_rbd_image
    assert pv_rbd_image(rbd_csi_pv("pv", "csi-vol-1")) == ("rbd-csi", "rbd/csi-vol-1")
    ns_pv = rbd_csi_pv("pv", "csi-vol-2")
    ns_pv["spec"]["csi"]["volumeAttributes"]["radosNamespace"] = "tenant-a"
    assert pv_rbd_image(ns_pv) == ("rbd-csi", "rbd/tenant-a/csi-vol-2")
    assert pv_rbd_image({"spec": {"rbd": {"pool": "mioss", "image": "index-api-image"}}}) == ("rbd-intree", "mioss/index-api-image")
    assert pv_rbd_image({"spec": {"csi": {"driver": "csi-unity.dellemc.com", "volumeHandle": "h"}}}) == ("csi", None)
    assert pv_rbd_image({"spec": {"hostPath": {"path": "/x"}}}) == ("other", None)


def test_volume_health_of_csi_addons_is_evidence_and_read_per_node():
    claim = pvc("data-0", "pv-0")
    claim["metadata"]["annotations"] = {
        # as the CSI-Addons sidecar writes it, per node uid
        "csiaddons.openshift.io/volumehealth.uid-b": '{"state":"unhealthy","lastChecked":"2026-11-21T05:59:00Z",'
                                                     '"since":"2026-11-21T05:40:00Z","node":"node-b"}',
        "csiaddons.openshift.io/volumehealth.uid-c": '{"state":"healthy","lastChecked":"2026-11-21T05:59:00Z"}',
        "csiaddons.openshift.io/volumehealth.uid-x": "not json",
        "example.com/other": "kept out"}
    nodes = [dict(n, metadata=dict(n["metadata"], uid="uid-" + n["metadata"]["name"][-1])) for n in NODES]
    (d,) = diagnose([pod("web-0", "node-a", "data-0")], events=[], pvcs=[claim], pvs=[rbd_csi_pv("pv-0", "img")], vas=[], nodes=nodes, now=NOW)
    assert d["volumes"][0]["health"] == [
        {"node": "node-b", "state": "unhealthy", "last_checked": "2026-11-21T05:59:00Z", "since": "2026-11-21T05:40:00Z"},
        {"node": "node-c", "state": "healthy", "last_checked": "2026-11-21T05:59:00Z", "since": None},
        {"node": "uid-x", "state": "unreadable", "last_checked": None, "since": None}]
    assert ("volume health of claim data-0 on node-b: unhealthy since 2026-11-21T05:40:00Z (CSI-Addons, last checked "
            "2026-11-21T05:59:00Z)") in d["evidence"]
    assert not any("node-c" in e for e in d["evidence"])
    (plain,) = diagnose([pod("web-0", "node-a", "data-0")], events=[], pvcs=[pvc("data-0", "pv-0")], pvs=[rbd_csi_pv("pv-0", "img")],
                        vas=[], nodes=NODES, now=NOW)
    assert plain["volumes"][0]["health"] == [] and plain["evidence"] == []

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which incident a stuck pod is in: the classification behind playbooks/diagnose.yml.

Private to volfence.csi. Pure functions over what the playbook gathered (pods, events, PVCs,
PVs, VolumeAttachments, nodes, RBD watchers and locks, the blocklist), so every rule is
unit-tested without a cluster.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    age_seconds,
    node_addresses,
    node_ready,
    parse_kube_version,
    volume_claim,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import (
    collision_version_affected,
    has_attachment_name_shape,
    unique_volume_name,
)

STUCK_REASONS = ("ContainerCreating", "CreateContainerError", "CreateContainerConfigError")

INCIDENTS = {
    "stale-rbd-watcher": "stale RBD watcher from another node (node died, its rbd client did not)",
    "stale-volumeattachment": "VolumeAttachment stuck on another node or attachment-name collision",
    "dead-fuse-mount": "FUSE mount dead: Transport endpoint is not connected",
    "stale-rbd-lock": "in-tree rbd lock held by another node",
    "unknown": "no known incident matched",
}

PLAYBOOKS = {
    "stale-rbd-watcher": "node_failover.yml",
    "stale-volumeattachment": "volumeattachment_cleanup.yml",
    "dead-fuse-mount": "fuse_mount_recovery.yml",
    "stale-rbd-lock": "rbd_lock_cleanup.yml",
}


def waiting_reason(pod):
    for status in pod.get("status", {}).get("containerStatuses", []) or []:
        waiting = (status.get("state") or {}).get("waiting")
        if waiting:
            return waiting.get("reason")
    return None


def is_stuck(pod, now, threshold):
    """A pod waiting to start longer than threshold seconds (the symptoms of the four seeds)."""
    meta = pod.get("metadata", {})
    if meta.get("deletionTimestamp"):
        return False
    reason = waiting_reason(pod)
    phase = pod.get("status", {}).get("phase")
    if reason not in STUCK_REASONS and not (phase == "Pending" and pod.get("spec", {}).get("nodeName")):
        return False
    age = age_seconds(meta.get("creationTimestamp"), now)
    return age is None or age >= threshold


def node_of_ip(ip, nodes):
    for node in nodes:
        if any(str(addr) == ip for _type, addr in node_addresses(node)):
            return node["metadata"]["name"]
    return None


def collision_affected(driver, handle, git_version):
    """The stale-volumeattachment rule: a unique name of attachment-name shape on a cluster older than 1.24."""
    shape = has_attachment_name_shape(unique_volume_name(driver or "", handle or ""))
    return shape, shape and bool(collision_version_affected(parse_kube_version(git_version)))


def address_ip(address):
    """The IP of a Ceph client address: 10.0.0.5:0/123, [fd00::5]:0/1 or a bare IP."""
    if address.startswith("["):
        return address[1:address.index("]")]
    if "/" not in address:
        return address
    return address.split("/")[0].rsplit(":", 1)[0]


VOLUME_HEALTH_PREFIX = "csiaddons.openshift.io/volumehealth."


def volume_health(pvc, nodes=None):
    """What CSI-Addons' volume condition reporter wrote on a claim, one entry per node (annotation
    csiaddons.openshift.io/volumehealth.<node-uid>: {"state", "lastChecked", "since", "node"}), sorted by
    node: [{node, state, last_checked, since}]. A value that is not such JSON is state "unreadable"."""
    names = dict((((n.get("metadata") or {}).get("uid")), (n.get("metadata") or {}).get("name")) for n in nodes or [])
    out = []
    for key, value in sorted((((pvc or {}).get("metadata") or {}).get("annotations") or {}).items()):
        if not key.startswith(VOLUME_HEALTH_PREFIX):
            continue
        uid = key[len(VOLUME_HEALTH_PREFIX):]
        try:
            data = json.loads(value)
        except (TypeError, ValueError):
            data = None
        if not isinstance(data, dict):
            data = {"state": "unreadable"}
        out.append({"node": data.get("node") or names.get(uid) or uid, "state": data.get("state"),
                    "last_checked": data.get("lastChecked"), "since": data.get("since")})
    return sorted(out, key=lambda h: str(h["node"]))


def pod_volumes(pod, pvcs, pvs, nodes=None):
    """The PersistentVolumes a pod uses, with what the rules need of each, and the claim's volume health
    as CSI-Addons reports it (empty when it does not)."""
    ns = pod["metadata"]["namespace"]
    claims = dict(((c["metadata"]["namespace"], c["metadata"]["name"]), c) for c in pvcs)
    by_name = dict((p["metadata"]["name"], p) for p in pvs)
    out = []
    for vol in pod.get("spec", {}).get("volumes", []) or []:
        claim = volume_claim(pod["metadata"].get("name"), vol)
        pvc = claims.get((ns, claim)) if claim else None
        pv = by_name.get((pvc or {}).get("spec", {}).get("volumeName"))
        if not pv:
            continue
        csi = pv.get("spec", {}).get("csi") or {}
        kind, image = pv_rbd_image(pv)
        out.append({"pvc": claim, "pv": pv["metadata"]["name"], "kind": kind, "image": image,
                    "driver": csi.get("driver"), "handle": csi.get("volumeHandle"),
                    "health": volume_health(pvc, nodes)})
    return out


def pv_rbd_image(pv):
    """(kind, "pool[/namespace]/image") of a PersistentVolume: kind is rbd-csi (ceph-csi's
    volumeAttributes), rbd-intree (spec.rbd), csi (another CSI driver) or other; image is None
    when the PV is no RBD volume."""
    spec = (pv or {}).get("spec") or {}
    if isinstance(spec.get("csi"), dict) and spec["csi"]:
        attrs = spec["csi"].get("volumeAttributes") or {}
        if attrs.get("imageName"):
            parts = (attrs.get("pool", "rbd"), attrs.get("radosNamespace"), attrs["imageName"])
            return "rbd-csi", "/".join(p for p in parts if p)
        return "csi", None
    if isinstance(spec.get("rbd"), dict) and spec["rbd"].get("image"):
        return "rbd-intree", "%s/%s" % (spec["rbd"].get("pool") or "rbd", spec["rbd"]["image"])
    return "other", None


def classify_pod(pod, *, events, pvcs, pvs, vas, nodes, watchers=None, locks=None, git_version=None,
                 now=None, threshold=0):
    """Diagnose one pod. watchers / locks: {"pool/image": [...]} as rbd_watchers_info / rbd_lock_info return."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    watchers = watchers or {}
    locks = locks or {}
    meta = pod["metadata"]
    node = pod.get("spec", {}).get("nodeName")
    messages = [e.get("message", "") for e in events
                if (e.get("involvedObject") or {}).get("uid") in (None, meta.get("uid"))
                and (e.get("involvedObject") or {}).get("name") == meta["name"]]
    volumes = pod_volumes(pod, pvcs, pvs, nodes)
    evidence = []
    incident = "unknown"
    target = {}

    def seen(fragment):
        return [m for m in messages if fragment.lower() in m.lower()]

    # dead-fuse-mount: a dead FUSE mount
    if seen("transport endpoint is not connected"):
        incident = "dead-fuse-mount"
        evidence += seen("transport endpoint is not connected")[:2]
        target = {"target_nodes": [node] if node else []}

    # stale-rbd-watcher: another node's client still watches the image
    if incident == "unknown":
        for vol in volumes:
            if vol["kind"] != "rbd-csi":
                continue
            others = []
            for watcher in watchers.get(vol["image"], []):
                ip = watcher.get("ip") or address_ip(watcher.get("address", ""))
                holder = watcher.get("node") or node_of_ip(ip, nodes)
                if holder != node:
                    others.append((watcher.get("address"), holder))
            if others or seen("is still being used"):
                incident = "stale-rbd-watcher"
                evidence += seen("is still being used")[:1]
                evidence += ["watcher %s on %s" % (addr, holder or "an unknown host") for addr, holder in others]
                holders = sorted(set(h for _a, h in others if h))
                target = {"failed_node": holders[0] if len(holders) == 1 else None,
                          "watchers": [a for a, _h in others]}
                break

    # stale-rbd-lock: an in-tree lock of another node
    if incident == "unknown":
        for vol in volumes:
            if vol["kind"] != "rbd-intree":
                continue
            foreign = [lock for lock in locks.get(vol["image"], [])
                       if lock.get("id", "").startswith("kubelet_lock_magic_")
                       and lock["id"] != "kubelet_lock_magic_" + (node or "")]
            if foreign or seen("is locked by other nodes"):
                incident = "stale-rbd-lock"
                evidence += seen("is locked by other nodes")[:1]
                evidence += ["lock %s held by %s from %s" % (l["id"], l.get("locker"), l.get("address")) for l in foreign]
                target = {"image": vol["image"], "locks": [l["id"] for l in foreign]}
                break

    # stale-volumeattachment: the volume is still attached elsewhere, or its attachment name collides
    if incident == "unknown":
        ready = dict((n["metadata"]["name"], node_ready(n) == "True") for n in nodes)
        for vol in volumes:
            if vol["kind"] not in ("csi", "rbd-csi"):
                continue
            elsewhere = [va for va in vas if va.get("spec", {}).get("source", {}).get("persistentVolumeName") == vol["pv"]
                         and va.get("spec", {}).get("nodeName") != node]
            collision, affected = collision_affected(vol["driver"], vol["handle"], git_version)
            if elsewhere or seen("Multi-Attach error") or affected:
                incident = "stale-volumeattachment"
                evidence += seen("Multi-Attach error")[:1]
                evidence += ["VolumeAttachment %s on %s (%s)" % (
                    va["metadata"]["name"], va["spec"].get("nodeName"),
                    "node Ready" if ready.get(va["spec"].get("nodeName")) else "node not Ready or gone")
                    for va in elsewhere]
                if collision:
                    evidence.append("unique volume name %s^%s is 68 characters and starts with csi-%s" % (
                        vol["driver"], vol["handle"],
                        "; Kubernetes %s is affected" % git_version if affected else ""))
                target = {"pv": vol["pv"], "volumeattachments": [va["metadata"]["name"] for va in elsewhere]}
                break

    # CSI-Addons' volume health: evidence of an abnormal volume, whatever the incident
    evidence += ["volume health of claim %s on %s: %s since %s (CSI-Addons, last checked %s)" % (
        vol["pvc"], h["node"], h["state"], h["since"] or "?", h["last_checked"] or "?")
        for vol in volumes for h in vol["health"] if h["state"] != "healthy"]
    age = age_seconds(meta.get("creationTimestamp"), now)
    next_step = None
    if incident in PLAYBOOKS:
        extra = {"pod_namespace": meta["namespace"], "pod_name": meta["name"]}
        if incident == "stale-rbd-watcher":
            extra = {"failed_node": target.get("failed_node")} if target.get("failed_node") else extra
        elif incident == "dead-fuse-mount":
            extra = {"target_nodes": target.get("target_nodes")}
        next_step = {"playbook": "volfence.csi." + PLAYBOOKS[incident].replace(".yml", ""),
                     "file": "playbooks/" + PLAYBOOKS[incident], "extra_vars": extra}
    return {
        "namespace": meta["namespace"], "pod": meta["name"], "uid": meta.get("uid"), "node": node,
        "age_seconds": int(age) if age is not None else None, "waiting_reason": waiting_reason(pod),
        "incident": incident, "title": INCIDENTS[incident], "evidence": evidence,
        "volumes": volumes, "target": target, "next": next_step,
    }


FUSE_DEAD = "transport endpoint is not connected"


def stuck_pods(pods, events, threshold=120, now=None):
    """The stuck pods among `pods`, sorted by namespace and name: waiting to start longer than
    threshold seconds (is_stuck), or, whatever their phase, named by an event of a dead FUSE mount."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stuck = [p for p in pods if is_stuck(p, now, threshold)]
    # A Running pod whose mount died (dead-fuse-mount) is stuck too, whatever its phase.
    fuse = set()
    for event in events:
        if FUSE_DEAD in (event.get("message") or "").lower():
            obj = event.get("involvedObject") or {}
            fuse.add((obj.get("name"), obj.get("uid")))
    for pod in pods:
        if pod in stuck or pod["metadata"].get("deletionTimestamp"):
            continue
        name, uid = pod["metadata"]["name"], pod["metadata"].get("uid")
        if (name, None) in fuse or (name, uid) in fuse:
            stuck.append(pod)
    return sorted(stuck, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))


def diagnose(pods, *, events, pvcs, pvs, vas, nodes, watchers=None, locks=None, git_version=None,
             threshold=120, now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return [classify_pod(p, events=events, pvcs=pvcs, pvs=pvs, vas=vas, nodes=nodes, watchers=watchers, locks=locks,
                         git_version=git_version, now=now, threshold=threshold)
            for p in stuck_pods(pods, events, threshold, now)]


def blocklist_lines(owned):
    """The table's lines for the blocklist: each entry with its owners, and its flags."""
    lines = []
    for o in owned or []:
        owners = ", ".join("%s %s" % (w["kind"], w.get("name") or "?") for w in o["owners"]) or "nobody known"
        lines.append("  - %s (%s)%s" % (o["entry"], owners,
                                        "".join("; " + f["flag"] for f in o["flags"])))
    return ["", "blocklist: %d entr%s" % (len(owned), "y" if len(owned) == 1 else "ies")] + lines if owned else []


def table(diagnoses, node_volumes=None, owned=None, own_events=None):
    """A fixed-width table for a terminal or a job log; then, for each node that is not Ready,
    its volumes and what node_failover would do for each (node_volumes: down_node_volumes()); the
    blocklist's owners; last, what earlier runs of volfence.csi told in the cluster (own_events: each with
    its `line`, newest first)."""
    rows = [("NAMESPACE", "POD", "NODE", "AGE", "INCIDENT", "NEXT")]
    for d in diagnoses:
        nxt = d["next"]["file"] if d["next"] else "-"
        if d["next"]:
            nxt += " -e '" + " ".join("%s=%s" % (k, v if not isinstance(v, list) else ",".join(v))
                                      for k, v in sorted(d["next"]["extra_vars"].items())) + "'"
        rows.append((d["namespace"], d["pod"], d["node"] or "-",
                     "%ss" % d["age_seconds"] if d["age_seconds"] is not None else "-", d["incident"], nxt))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(str(r[i]).ljust(widths[i]) for i in range(len(widths))) + "  " + r[-1] for r in rows]
    for d in diagnoses:
        lines.append("")
        lines.append("%s/%s: %s" % (d["namespace"], d["pod"], d["title"]))
        lines.extend("  - " + e for e in d["evidence"])
    if not diagnoses:
        lines.append("(no stuck pods)")
    for entry in node_volumes or []:
        lines.append("")
        lines.append("node %s (Ready=%s) holds %d volume(s):" % (entry["node"], entry["ready"], len(entry["volumes"])))
        lines.extend("  - " + v["line"] for v in entry["volumes"])
    lines += blocklist_lines(owned)
    if own_events:
        lines += ["", "volfence.csi's Events, newest first (what earlier runs did):"]
        lines.extend("  - " + e["line"] for e in own_events)
    return lines

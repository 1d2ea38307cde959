"""The battery's lab state and its snapshots (issue 17: bad input changes nothing).

A plain module with its own name (not conftest): several conftest.py files exist under
tests/integration and pytest would hand a test the wrong one.

BatteryLab builds, once, a lab state that gives destructive invocations something to destroy:
  - stale-rbd-lock: an in-tree RBD image carrying kubelet_lock_magic_node-b, held from node-b
  - stale-rbd-watcher: node-b dead with its RBD watcher alive, the replacement pod stuck on another node
  - (the lab's ceph-csi install has its ceph-csi-config ConfigMap listing the lab's monitor under clusterID "lab")
  - an Unfenced NetworkFence of node-c (volfence-node-c)
  - two blocklist entries that are no node's: an address and a range
and takes snapshots of everything the collection can write: the Ceph blocklist, the lock list and
watchers of every image of the lab pool, and the Kubernetes objects of the kinds the collection
touches, normalised so that the churn of the simulated kubelets and controllers (status, Lease
renewals, resourceVersion) does not count as a change.
"""

import concurrent.futures
import json
import os
import subprocess

from kubeemu.client import ApiError
from kubeemu.wait import wait_until

from labtools import (build_release_mirror, clear_foreign_attachments, json_documents, lab_kube, lab_subnet,
                      remove_incident, remove_network_fences, timed)

HERE = os.path.dirname(os.path.abspath(__file__))
CEPH_STATE = os.path.join(HERE, "ceph_state.py")

CSI_NAMESPACE = "ceph-csi"
DECOY_FENCE = "volfence-node-c"

# Every kind the collection reads or writes: (API path, namespaced).
KINDS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "persistentvolumes": "/api/v1/persistentvolumes",
    "persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
    "configmaps": "/api/v1/configmaps",
    "namespaces": "/api/v1/namespaces",
    "secrets": "/api/v1/secrets",
    "leases": "/apis/coordination.k8s.io/v1/leases",
    "volumeattachments": "/apis/storage.k8s.io/v1/volumeattachments",
    "deployments": "/apis/apps/v1/deployments",
    "customresourcedefinitions": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "networkfences": "/apis/csiaddons.openshift.io/v1alpha1/networkfences",
    "networkfenceclasses": "/apis/csiaddons.openshift.io/v1alpha1/networkfenceclasses",
}
# Metadata that changes without anyone writing what the collection writes.
VOLATILE_METADATA = ("resourceVersion", "managedFields")
# Lease fields the simulated kubelets renew all the time.
VOLATILE_LEASE_SPEC = ("renewTime", "acquireTime", "leaseTransitions")


def normalise(kind, obj):
    """The part of an object that only a write of the collection (or a user) changes."""
    obj = dict(obj)
    obj.pop("status", None)
    meta = dict(obj.get("metadata") or {})
    for key in VOLATILE_METADATA:
        meta.pop(key, None)
    obj["metadata"] = meta
    if kind == "leases":
        spec = dict(obj.get("spec") or {})
        for key in VOLATILE_LEASE_SPEC:
            spec.pop(key, None)
        obj["spec"] = spec
    return obj


def object_key(obj):
    meta = obj.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace", ""), meta.get("name"))


def diff_snapshots(before, after):
    """Human-readable differences of two snapshots ([] when equal)."""
    out = []
    for section in sorted(set(before) | set(after)):
        old, new = before.get(section), after.get(section)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(set(old) | set(new)):
                if old.get(key) != new.get(key):
                    if key not in old:
                        out.append("%s: %s appeared: %s" % (section, key, json.dumps(new[key], sort_keys=True)[:600]))
                    elif key not in new:
                        out.append("%s: %s disappeared" % (section, key))
                    else:
                        out.append("%s: %s changed:\n  before %s\n  after  %s"
                                   % (section, key, json.dumps(old[key], sort_keys=True)[:800],
                                      json.dumps(new[key], sort_keys=True)[:800]))
        else:
            out.append("%s: %r -> %r" % (section, old, new))
    return out


class BatteryLab(object):
    """The lab state the battery runs against, its tokens for the case files, and its snapshots."""

    def __init__(self, lab, tmp_dir):
        self.lab = lab
        self.kube = lab_kube(lab)
        self.tmp = tmp_dir
        self.stale_rbd_watcher = None
        self.stale_rbd_lock = None
        self.baseline = None
        self.rebuilds = 0
        self._mirror = None
        self.suspects = []

    # ------------------------------------------------------------------ building and removing

    def build(self):
        lab = self.lab
        lab.unblock_all()
        lab.release()
        for node in lab.nodes:
            lab.lab("revive-node", node)
        self.stale_rbd_lock = json.loads(lab.lab("scenario", "stale-rbd-lock"))
        self.stale_rbd_watcher = json.loads(lab.lab("scenario", "stale-rbd-watcher"))
        self._apply_decoy_fence()
        subnet = lab_subnet(lab)
        lab.ceph("osd", "blocklist", "add", "%s.200:0/4242" % subnet, "7200")
        lab.ceph("osd", "blocklist", "range", "add", "%s.192/28" % subnet, "7200")
        self.baseline = self.settled_snapshot()

    def teardown(self):
        kube = self.kube
        for state in (self.stale_rbd_watcher, self.stale_rbd_lock):
            if state:
                remove_incident(kube, state)
        clear_foreign_attachments(kube)
        remove_network_fences(kube)
        for node in self.lab.nodes:
            self.lab.lab("revive-node", node)
        self.lab.release()
        self.lab.unblock_all()

    def rebuild(self):
        """After a case that changed something: the state again from scratch, so the next cases
        still have something to destroy and a clean baseline."""
        self.rebuilds += 1
        self.teardown()
        self.build()

    def _apply_decoy_fence(self):
        ip = self.lab.nodes["node-c"]
        self.kube.apply("networkfences", {
            "apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFence",
            "metadata": {"name": DECOY_FENCE, "labels": {"app.kubernetes.io/managed-by": "volfence.csi.node_fences",
                                                        "node-fences.volfence.io/set": "default",
                                                        "node-fences.volfence.io/node": "node-c"}},
            "spec": {"driver": "rbd.csi.ceph.com", "fenceState": "Unfenced", "cidrs": [ip + "/32"],
                     "secret": {"name": "csi-rbd-secret", "namespace": CSI_NAMESPACE},
                     "parameters": {"clusterID": "lab"}}})

    # ------------------------------------------------------------------ tokens of the case files

    def tokens(self):
        lab, s0, s3 = self.lab, self.stale_rbd_watcher, self.stale_rbd_lock
        subnet = lab_subnet(lab)
        vas = [va["metadata"]["name"] for va in self.kube.list("volumeattachments")
               if va["spec"].get("source", {}).get("persistentVolumeName") == s0["pv"]]
        return {
            "LAB_DIR": lab.dir,
            "TMP": self.tmp,
            "MISSING": os.path.join(self.tmp, "no-such-dir", "nothing-here"),
            "SUBNET": subnet,
            "NET16": "%s.0.0/16" % subnet.rsplit(".", 1)[0],
            "MON_IP": lab.env.get("CEPH_MON_HOST") or subnet + ".1",
            "NODE_A_IP": lab.nodes["node-a"],
            "NODE_B_IP": lab.nodes["node-b"],
            "NODE_C_IP": lab.nodes["node-c"],
            "IMAGE": s0["image"],
            "IMAGE_NAME": s0["image"].split("/", 1)[1],
            "POOL": s0["image"].split("/", 1)[0],
            "PV": s0["pv"],
            "PVC": s0["pvc"],
            "VA": vas[0] if vas else "no-attachment-found",
            "STUCK_POD": s0["stuck_pod"],
            "OLD_POD": s0["old_pod"],
            "WATCHER": s0["watchers"][0] if s0["watchers"] else "",
            "LOCK_IMAGE": s3["image"],
            "LOCK_IMAGE_NAME": s3["image"].split("/", 1)[1],
            "LOCK_ID": s3["lock_id"],
            "LOCKER": s3["locker"],
            "LOCKER_ADDRESS": s3["locker_address"],
            "LOCK_POD": s3["stuck_pod"],
            "KUBELET_DIR_B": os.path.join(lab.dir, "nodes", "node-b", "kubelet"),
            "CSI_ADDONS_MIRROR": self.csi_addons_mirror(),
        }

    def csi_addons_mirror(self):
        """A local folder with the CSI-Addons release assets (the role tests' fixtures), never a download."""
        if self._mirror is None:
            self._mirror = build_release_mirror(os.path.join(self.tmp, "mirror"))
        return self._mirror

    # ------------------------------------------------------------------ snapshots

    def ceph_snapshot(self):
        """Images, locks, watchers and blocklist of the lab's Ceph, read by one client (ceph_state.py)."""
        pool = self.lab.pool
        with timed("ceph client: snapshot"):
            proc = subprocess.run([self.lab.tool("ceph-python3"), CEPH_STATE, self.lab.conf, self.lab.keyring,
                                   self.lab.user, pool], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=120)
        if proc.returncode != 0:
            raise AssertionError("ceph_state.py failed rc=%d: %s" % (proc.returncode, proc.stderr[-2000:]))
        state = json.loads(proc.stdout)
        # The node plugins of the live nodes retry the stuck pods' mounts and open the images for a
        # moment each time: their watchers come and go on their own. The watchers that matter here
        # (held from node-b, the failed node) are kept; the collection never adds a watcher.
        live = set(ip for node, ip in self.lab.nodes.items() if node != "node-b")
        watchers = dict((image, [a for a in addresses if a.split(":")[0] not in live]
                         if isinstance(addresses, list) else addresses)
                        for image, addresses in state["watchers"].items())
        if state["blocklist"] is None:
            raise AssertionError("osd blocklist ls failed: %s" % state["blocklist_error"])
        entries = []
        for doc in json_documents(state["blocklist"]):
            for item in doc if isinstance(doc, list) else [doc]:
                if isinstance(item, dict):
                    entries.append("%s until %s" % (item.get("addr") or "cidr:" + str(item.get("range")),
                                                    item.get("until")))
        return {"ceph_images": {"pool " + pool: state["images"]}, "ceph_blocklist": {"entries": sorted(entries)},
                "ceph_locks": state["locks"], "ceph_watchers": watchers}

    def kube_snapshot(self):
        out = {}
        for kind, path in KINDS.items():
            try:
                items = self.kube.request("GET", path).get("items", [])
            except ApiError as exc:
                if exc.status == 404:
                    items = []
                else:
                    raise
            out["k8s " + kind] = dict((object_key(o), normalise(kind, o)) for o in items)
        return out

    def snapshot(self):
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool_exec:
            ceph = pool_exec.submit(self.ceph_snapshot)
            kube = pool_exec.submit(self.kube_snapshot)
            snap = ceph.result()
            snap.update(kube.result())
        return snap

    def settled_snapshot(self, timeout=60):
        """A snapshot once the lab's own controllers are done with the last write: two equal in a row,
        taken 1 s apart (a couple of the controllers' 0.5 s passes)."""
        seen = []

        def unchanged():
            seen[:] = seen[-1:] + [self.snapshot()]
            return len(seen) == 2 and seen[0] == seen[1]
        if not wait_until(unchanged, timeout=timeout, step=1.0):
            raise AssertionError("the lab did not settle within %ss (awaited: two equal snapshots 1 s apart); "
                                 "the last change seen:\n%s" % (timeout, "\n".join(diff_snapshots(seen[0], seen[-1]))))
        return seen[1]

"""Simulated Kubernetes behaviour for the lab, acting on the lab's real Ceph cluster.

  agent --node NAME   a kubelet + ceph-csi node plugin for one node: heartbeat (Node Ready
                      condition and a Lease), NodeStageVolume with ceph-csi's watcher check run
                      from the node's network namespace, pod status and FailedMount events.
  controlplane        what kube-controller-manager and the external-attacher do for the lab:
                      node lifecycle (NotReady, taints, eviction), one-replica Deployments,
                      scheduling, attach/detach (VolumeAttachments), plus a CSI-Addons stand-in.

THE CSI-ADDONS PART IS A STAND-IN, not the CSI-Addons controller: kubeemu.csi.NetworkFenceStandIn (the
one the tests and benchmarks use too) reconciles NetworkFence objects the way CSI-Addons with ceph-csi
does (status.result/message, a finalizer), and here acts on the lab's Ceph (Fenced: blocklist the CIDRs,
range command first; Unfenced: remove them), so the collection can be tested end to end without the
real controller.

Run by the lab (`python -m volfence_lab.kubesim agent|controlplane`, PYTHONPATH from lab.import_roots).

The controllers' timings are the lab's clocks (volfence_lab.clocks: real, fast or never), re-read
while the lab runs; the controllers themselves follow Kubernetes' (the sources are named in docs/lab.md).

Rules the collection also knows (a Node's readiness, taints, timestamps, a pod's volumes) are written
here again from Kubernetes' sources, never imported: a test must not pass because the lab shares the
collection's bug (docs/lab.md, "Independent of the code under test").
"""

import argparse
import datetime
import hashlib
import ipaddress
import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from volfence_lab import clocks as clockmod
from volfence_lab import lab as labmod
from kubeemu.client import ApiError, KubeClient, server_from_kubeconfig
from kubeemu.csi import NetworkFenceStandIn, attachment_name

HERE = os.path.dirname(os.path.abspath(__file__))

LAB_DRIVER = "rbd.csi.ceph.com"
# A FUSE-backed (s3fs-like) CSI driver for dead-fuse-mount: the lab mounts its volumes with bindfs.
FUSE_DRIVER = "ch.ctrox.csi.s3-driver"
CSI_NAMESPACE = labmod.CSI_NAMESPACE
# Where ceph-csi's node plugin records the node that staged an image, value the node's IP
# (ceph-csi PRs #5429/#5828: ".rbd.csi.ceph.com/clientaddress/<volume id>/<node id>").
CLIENT_ADDRESS_KEY = ".rbd.csi.ceph.com/clientaddress/%s/%s"
# ceph-csi's controller plugin Deployment (its flags are where readiness and the lab read --enable-fencing)
CSI_PROVISIONER = "csi-rbdplugin-provisioner"
# How long ceph-csi's fence on ControllerUnpublish lasts (AutoBlocklistTime, internal/util/networkfence.go:
# three years; a NetworkFence's own entries last five, which is how ceph-csi tells them apart when it unfences).
AUTO_BLOCKLIST_SECONDS = 94670856
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"


NOT_READY_TAINT = "node.kubernetes.io/not-ready"


# Pods one node agent syncs at once (a kubelet's pod workers run in parallel).
AGENT_WORKERS = int(os.environ.get("LAB_AGENT_WORKERS") or 16)


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def stamp(moment=None):
    return (moment or now()).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_stamp(moment=None):
    return (moment or now()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# deliberately repeated: the collection parses Kubernetes times too; the lab's kubelet keeps its own
def parse_time(value):
    if not value:
        return None
    value = value.replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(value)


def age(value):
    moment = parse_time(value)
    return None if moment is None else (now() - moment).total_seconds()


# deliberately repeated: the collection's node_ready; here the node lifecycle controller's own reading
def node_ready(node):
    for cond in node.get("status", {}).get("conditions", []):
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def driver_is_lab(driver):
    return (driver or "").endswith(LAB_DRIVER)


def toleration_seconds(pod, taint, default):
    """How long the pod tolerates a NoExecute taint: False (not at all: evicted at once), a number of
    seconds, or None (forever). default: DefaultTolerationSeconds' value for not-ready and
    unreachable (None: forever)."""
    matching = [t for t in pod.get("spec", {}).get("tolerations", []) or []
                if t.get("effect") in (None, "", "NoExecute")
                and ((t.get("operator") == "Exists" and t.get("key") in (None, "", taint.get("key")))
                     or (t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", "")))]
    if matching:
        limits = [t.get("tolerationSeconds") for t in matching]
        if any(limit is None for limit in limits):
            return None
        return max(0, min(limits))
    if taint.get("key") in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        return default
    return False


def csi_fencing(kube):
    """The lab's ceph-csi controller plugin runs with --enable-fencing: the flag on its Deployment, where
    readiness reads it (scenarios.base_objects writes it)."""
    deploy = kube.find("deployments", CSI_PROVISIONER, CSI_NAMESPACE) or {}
    return any(arg in ("--enable-fencing", "--enable-fencing=true")
               for container in deploy.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
               for arg in container.get("args", []))


# deliberately repeated: the collection's has_taint; here the taint manager's own reading
def has_taint(node, key):
    return any(t.get("key") == key for t in node.get("spec", {}).get("taints", []) or [])


# ceph-csi's volume ID (internal/util/volid.go, ComposeCSIID/DecomposeCSIID): version, length of the
# clusterID, the clusterID, the pool ID (16 hex digits) and the image's UUID, joined by "-".
CSI_ID_VERSION = 1


def compose_volume_id(cluster_id, pool_id, object_uuid):
    if 64 + len(cluster_id) > 128 or len(object_uuid) != 36:
        raise ValueError("CSI ID encoding length overflow or invalid object uuid: %r %r" % (cluster_id, object_uuid))
    return "%04x-%04x-%s-%016x-%s" % (CSI_ID_VERSION, len(cluster_id), cluster_id, pool_id, object_uuid)


def volume_id_cluster(volume_id):
    """The clusterID a ceph-csi volume ID carries, None when it is no such ID."""
    try:
        length = int(volume_id[5:9], 16)
    except ValueError:
        return None
    if len(volume_id) < 64 or len(volume_id) < 10 + length + 1 + 17:
        return None
    return volume_id[10:10 + length]


# deliberately repeated: the collection reads ceph-csi's ConfigMap too (for monitors); here ceph-csi's own
# reading (internal/util/csiconfig.go: config.json, a list of {clusterID, monitors, rbd: {radosNamespace}})
def csi_clusters(kube):
    """{clusterID: entry} of the lab's ceph-csi install (ConfigMap ceph-csi/ceph-csi-config)."""
    configmap = kube.find("configmaps", labmod.CSI_CONFIGMAP, CSI_NAMESPACE) or {}
    try:
        entries = json.loads((configmap.get("data") or {}).get("config.json") or "[]")
    except ValueError:
        entries = []
    return {e.get("clusterID"): e for e in entries if isinstance(e, dict)}


def csi_image_spec(pv, clusters):
    """pool/image or pool/namespace/image of a ceph-csi PersistentVolume, as ceph-csi's node and controller
    plugins find it: the RADOS namespace is the one the ceph-csi config gives the volume's clusterID
    (GetRBDRadosNamespace), that clusterID taken from the volume ID, or for a static volume from its
    attributes (internal/rbd/rbd_util.go, generateVolumeFromVolumeID, genVolFromVolumeOptions). A clusterID
    the config does not list fails, as in ceph-csi."""
    csi = pv["spec"]["csi"]
    attrs = csi.get("volumeAttributes") or {}
    if attrs.get("staticVolume") == "true":
        cluster = attrs.get("clusterID")
    else:
        cluster = volume_id_cluster(csi.get("volumeHandle") or "")
    if cluster not in clusters:
        raise labmod.LabError("missing configuration for cluster ID %r" % cluster)
    namespace = (clusters[cluster].get("rbd") or {}).get("radosNamespace") or ""
    return "/".join(part for part in (attrs.get("pool") or "rbd", namespace, attrs["imageName"]) if part)


class VolumeIndex(object):
    """PersistentVolumeClaims and PersistentVolumes listed once (a control-plane pass), served
    through find() like the client's, so pod_volumes() costs no request per pod."""

    def __init__(self, kube):
        self.claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c
                       for c in kube.list("persistentvolumeclaims")}
        self.volumes = {v["metadata"]["name"]: v for v in kube.list("persistentvolumes")}

    def find(self, kind, name, namespace=None):
        if kind == "persistentvolumeclaims":
            return self.claims.get((namespace, name))
        if kind == "persistentvolumes":
            return self.volumes.get(name)
        raise KeyError(kind)


def split_spec(spec):
    """(pool, namespace, image) of pool/image or pool/namespace/image."""
    parts = spec.split("/")
    return (parts[0], "", parts[1]) if len(parts) == 2 else tuple(parts)


def claims_bound(kube, pod):
    """Whether every claim of the pod exists and is bound to an existing volume."""
    for vol in pod.get("spec", {}).get("volumes", []) or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        pvc = kube.find("persistentvolumeclaims", claim, pod["metadata"]["namespace"])
        if not pvc or not pvc.get("spec", {}).get("volumeName") or \
                not kube.find("persistentvolumes", pvc["spec"]["volumeName"]):
            return False
    return True


# deliberately repeated: the collection reads a pod's volumes too; here the kubelet's own reading
def pod_volumes(kube, pod):
    """(pvc, pv) pairs of a pod's PVC-backed CSI volumes that are bound."""
    out = []
    ns = pod["metadata"]["namespace"]
    for vol in pod.get("spec", {}).get("volumes", []) or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        pvc = kube.find("persistentvolumeclaims", claim, ns)
        if not pvc or not pvc.get("spec", {}).get("volumeName"):
            continue
        pv = kube.find("persistentvolumes", pvc["spec"]["volumeName"])
        if pv and pv.get("spec", {}).get("csi"):
            out.append((pvc, pv))
    return out


def mount_state(path):
    """None when nothing is mounted at path, "alive" or "dead" (a FUSE daemon gone) otherwise."""
    try:
        with open("/proc/self/mountinfo") as handle:
            mounted = any(line.split()[4] == path for line in handle if len(line.split()) > 4)
    except OSError:
        return None
    if not mounted:
        return None
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (107, 103):  # ENOTCONN, ECONNABORTED
            return "dead"
    return "alive"


def volumes_intree(kube, pod):
    """(pvc, pv) pairs of a pod's volumes bound to in-tree rbd PersistentVolumes."""
    out = []
    for vol in pod.get("spec", {}).get("volumes", []) or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        pvc = claim and kube.find("persistentvolumeclaims", claim, pod["metadata"]["namespace"])
        pv = pvc and pvc.get("spec", {}).get("volumeName") and kube.find("persistentvolumes", pvc["spec"]["volumeName"])
        if pv and pv.get("spec", {}).get("rbd"):
            out.append((pvc, pv))
    return out


def post_event(kube, pod, reason, message, component, host=None, type_="Warning"):
    """Create or bump an event the way kubelet and controllers aggregate them."""
    ns = pod["metadata"]["namespace"]
    key = hashlib.sha1((pod["metadata"]["uid"] + reason + message).encode()).hexdigest()[:12]
    name = "%s.%s" % (pod["metadata"]["name"], key)
    existing = kube.find("events", name, ns)
    if existing:
        kube.patch("events", name, {"count": existing.get("count", 1) + 1, "lastTimestamp": stamp()}, ns)
        return
    kube.create("events", {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"], "namespace": ns,
                           "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
        "reason": reason, "message": message, "type": type_, "count": 1,
        "firstTimestamp": stamp(), "lastTimestamp": stamp(),
        "source": {"component": component, "host": host} if host else {"component": component},
        "reportingComponent": component, "reportingInstance": host or "",
    }, ns)


# ----------------------------------------------------------------------------- node agent

class WatcherCheck(object):
    """The node plugin's long-lived Ceph client (holder.py --check-watchers, in the node's
    namespace): ceph-csi's "is the image still in use?" read, without a new process per retry.
    watchers() answers None when it cannot tell; the caller then stages, whose holder checks again."""

    def __init__(self, cfg, node):
        self.cfg = cfg
        self.node = node
        self.proc = None
        self.lock = threading.Lock()

    def start(self):
        cfg = self.cfg
        os.makedirs(os.path.join(cfg.dir, "log"), exist_ok=True)
        with open(os.path.join(cfg.dir, "log", "watcher-check-%s.log" % self.node), "a") as errors:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", cfg.netns(self.node), cfg.tool("python3"), os.path.join(HERE, "holder.py"),
                 "--conf", cfg.conf, "--keyring", cfg.keyring, "--user", cfg.user, "--check-watchers"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, universal_newlines=True, bufsize=1,
                env=labmod.clean_env())

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def watchers(self, image, timeout=15):
        with self.lock:
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.start()
                self.proc.stdin.write(image + "\n")
                self.proc.stdin.flush()
                ready, _w, _x = select.select([self.proc.stdout], [], [], timeout)
                if not ready:
                    raise OSError("no answer within %ss" % timeout)
                answer = json.loads(self.proc.stdout.readline())
            except (OSError, ValueError) as exc:
                log("agent %s: watcher check of %s: %s" % (self.node, image, exc))
                self.stop()
                return None
        return None if "error" in answer else answer["watchers"]


class NodeAgent(object):
    """kubelet + ceph-csi node plugin of one simulated node (and a FUSE CSI node plugin).

    Pods are synced in parallel, as a kubelet's pod workers do: a bounded pool, each pod in at
    most one worker at a time (so a pod's own steps stay in order), stage and unstage of one
    image serialized on the node (two pods of the node may share an image). The heartbeat has
    its own thread, so a slow sync never makes the node look dead."""

    def __init__(self, cfg, node, kube, workers=None):
        self.cfg = cfg
        self.node = node
        self.kube = kube
        self.ip = cfg.node_ip(node)
        self.kubelet_dir = labmod.kubelet_dir(cfg, node)
        # A kubelet makes its root directory and the pods and plugins folders under it when it
        # starts (pkg/kubelet/kubelet.go, setupDataDirs), before any pod: a node always has them.
        for folder in ("pods", "plugins"):
            os.makedirs(os.path.join(self.kubelet_dir, folder), exist_ok=True)
        self.pool = ThreadPoolExecutor(max_workers=workers or AGENT_WORKERS, thread_name_prefix="pod-worker")
        self.lock = threading.Lock()
        self.inflight = set()     # uids of the pods a worker has (or will have)
        self.image_locks = {}     # image -> lock of its stage/unstage on this node
        self.resolved = {}        # pod uid -> its volumes, once every claim was bound
        self.retry = {}           # pod uid -> (next attempt, delay): failed mounts back off
        self.backoff_set = threading.Event()  # a worker scheduled a retry: the loop recomputes its wake-up
        self.checker = WatcherCheck(cfg, node)
        self.clocks = clockmod.Follower(cfg.dir)

    # --- FUSE CSI volumes (dead-fuse-mount)
    def fuse_mount_path(self, pod, pv):
        return os.path.join(self.kubelet_dir, "pods", pod["metadata"]["uid"], "volumes", "kubernetes.io~csi",
                            pv["metadata"]["name"], "mount")

    def fuse_publish(self, pod, pv):
        """NodePublishVolume of an s3fs-like driver: a FUSE daemon serves the bucket at the pod's path."""
        path = self.fuse_mount_path(pod, pv)
        if mount_state(path) is not None:
            return
        handle = pv["spec"]["csi"]["volumeHandle"]
        bucket = os.path.join(self.cfg.dir, "s3", handle)
        os.makedirs(bucket, exist_ok=True)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(os.path.dirname(path), "vol_data.json"), "w") as out:
            json.dump({"driverName": FUSE_DRIVER, "volumeHandle": handle, "specVolID": pv["metadata"]["name"],
                       "nodeName": self.node}, out)
        subprocess.run(["bindfs", bucket, path], check=True, timeout=20)

    def fuse_teardown(self, pod, pv):
        """kubelet's TearDown: it stats the mount point first, which fails on a dead FUSE mount."""
        path = self.fuse_mount_path(pod, pv)
        state = mount_state(path)
        if state == "dead":
            return 'UnmountVolume.TearDown failed for volume "%s" : stat %s: transport endpoint is not connected' % (
                pv["metadata"]["name"], path)
        if state == "alive":
            subprocess.run(["umount", path], check=False, timeout=20)
        return None

    def register(self):
        self.kube.apply("nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.node, "labels": {
                "kubernetes.io/hostname": self.node, "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/worker": ""}},
            "spec": {},
        })
        self.kube.patch("nodes", self.node, {"status": {
            "addresses": [{"type": "InternalIP", "address": self.ip}, {"type": "Hostname", "address": self.node}],
            # Everything a kubelet publishes (typed clients reject a partial nodeInfo); a new
            # bootID on every start, as after a reboot.
            "nodeInfo": {"kubeletVersion": "v1.27.2", "kubeProxyVersion": "v1.27.2", "osImage": "volfence lab",
                         "architecture": "amd64", "operatingSystem": "linux", "kernelVersion": os.uname().release,
                         "containerRuntimeVersion": "containerd://1.7.2", "bootID": str(uuid.uuid4()),
                         "machineID": hashlib.md5(self.node.encode()).hexdigest(),
                         "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, self.node))},
        }}, subresource="status")
        self.heartbeat()

    def heartbeat(self):
        t = stamp()
        node = self.kube.get("nodes", self.node)
        conditions = [c for c in node.get("status", {}).get("conditions", []) if c.get("type") != "Ready"]
        was_ready = node_ready(node)
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status", "lastHeartbeatTime": t,
                 "lastTransitionTime": t}
        if was_ready:
            old = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
            ready["lastTransitionTime"] = old.get("lastTransitionTime", t)
        self.kube.patch("nodes", self.node, {"status": {"conditions": conditions + [ready]}}, subresource="status")
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": self.node, "namespace": "kube-node-lease"},
                 "spec": {"holderIdentity": self.node, "leaseDurationSeconds": 40,
                          "renewTime": micro_stamp()}}
        self.kube.apply("leases", lease, "kube-node-lease")

    def staged(self, image):
        """The live stage holder of `image` on this node, if any."""
        pidfile = labmod.holder_pidfile(self.cfg, self.node, image, "stage")
        try:
            pid = int(open(pidfile).read())
        except (OSError, ValueError):
            return None
        return pid if labmod.alive(pid) else None

    def image_lock(self, image):
        with self.lock:
            return self.image_locks.setdefault(image, threading.Lock())

    def stage(self, image, volume_handle):
        """ceph-csi NodeStageVolume (call it holding image_lock(image))."""
        if self.staged(image):
            return {"staged": True}
        watchers = self.checker.watchers(image)
        if watchers:
            return {"in_use": True, "watchers": watchers}
        return labmod.hold(self.cfg, self.node, image, kind="stage", csi_stage=True,
                           metadata_key=CLIENT_ADDRESS_KEY % (volume_handle, self.node), metadata_value=self.ip)

    def unstage(self, image):
        labmod.release(self.cfg, self.node, image)

    def set_pod_status(self, pod, phase, waiting_reason=None, message=None):
        containers = pod.get("spec", {}).get("containers", []) or [{"name": "main"}]
        t = stamp()
        if phase == "Running" and not waiting_reason:
            statuses = [{"name": c["name"], "ready": True, "restartCount": 0, "started": True,
                         "image": c.get("image", ""), "state": {"running": {"startedAt": t}}} for c in containers]
            conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": t},
                          {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}]
        else:
            statuses = [{"name": c["name"], "ready": False, "restartCount": 0, "started": False,
                         "image": c.get("image", ""),
                         "state": {"waiting": {"reason": waiting_reason or "ContainerCreating"}}}
                        for c in containers]
            conditions = [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                           "lastTransitionTime": t},
                          {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}]
        current = pod.get("status", {})
        if current.get("phase") == phase and [s.get("state", {}).keys() for s in current.get("containerStatuses", [])] \
                == [s["state"].keys() for s in statuses]:
            return
        status = {"phase": phase, "hostIP": self.ip, "containerStatuses": statuses, "conditions": conditions,
                  "startTime": current.get("startTime") or t}
        if phase == "Running" and current.get("podIP"):
            status["podIP"] = current["podIP"]
        elif phase == "Running":
            status["podIP"] = "10.244.%d.%d" % (self.cfg.nodes.index(self.node) + 1, random.randint(2, 250))
        self.kube.patch("pods", pod["metadata"]["name"], {"status": status}, pod["metadata"]["namespace"],
                        subresource="status")

    def resolve(self, pod):
        """(volumes, rbd images, FUSE volumes, in-tree images) of a pod; kept once every claim
        was bound (a pod's volumes do not change)."""
        uid = pod["metadata"]["uid"]
        if uid in self.resolved:
            return self.resolved[uid]
        volumes = pod_volumes(self.kube, pod)
        images = []
        clusters = None
        for _pvc, pv in volumes:
            attrs = pv["spec"]["csi"].get("volumeAttributes", {})
            if pv["spec"]["csi"].get("driver", "").endswith(LAB_DRIVER) and attrs.get("imageName"):
                clusters = csi_clusters(self.kube) if clusters is None else clusters
                images.append((pv, csi_image_spec(pv, clusters)))
        fuse = [pv for _pvc, pv in volumes if pv["spec"]["csi"].get("driver") == FUSE_DRIVER]
        intree = []
        for _pvc, pv in volumes_intree(self.kube, pod):
            rbd = pv["spec"]["rbd"]
            intree.append((pv, "%s/%s" % (rbd.get("pool", "rbd"), rbd["image"])))
        result = (volumes, images, fuse, intree)
        if claims_bound(self.kube, pod):
            self.resolved[uid] = result
        return result

    def back_off(self, uid):
        """kubelet's exponential backoff of a failed mount operation."""
        clocks = self.clocks.get()
        delay = min(self.retry.get(uid, (0, clocks.mount_retry / 2))[1] * 2, clocks.mount_retry_max)
        self.retry[uid] = (time.time() + delay, delay)
        self.backoff_set.set()

    def next_pass(self, moment):
        """Seconds until the loop's next pass: its period, or the end of the first backoff due
        before it. A kubelet's volume reconciler runs every 100 ms, so a mount is retried as its
        backoff ends, not on the lab's next listing."""
        with self.lock:
            dues = [due for due, _delay in self.retry.values() if due > moment]
        return min([self.clocks.get().loop] + [due - moment + 0.01 for due in dues])

    def sync_pod(self, pod):
        meta = pod["metadata"]
        volumes, images, fuse, intree = self.resolve(pod)
        if meta.get("deletionTimestamp"):
            # kubelet: stop containers, unmount, unstage, then remove the pod object.
            for pv in fuse:
                error = self.fuse_teardown(pod, pv)
                if error:
                    post_event(self.kube, pod, "FailedMount", error, "kubelet", self.node)
                    return  # the pod stays Terminating until the dead mount is gone
            for _pv, image in images + intree:
                with self.image_lock(image):  # no pod of the node stages it meanwhile
                    others = [p for p in self.kube.list("pods", field_selector="spec.nodeName=" + self.node)
                              if p["metadata"]["uid"] != meta["uid"] and
                              image in [i for _v, i in self.resolve(p)[1] + self.resolve(p)[3]]]
                    if not others:
                        self.unstage(image)
            self.kube.delete("pods", meta["name"], meta["namespace"], grace_period=0)
            return
        if pod.get("status", {}).get("phase") == "Running":
            self.probe_fuse(pod, fuse)
            return
        for pv in fuse:
            self.fuse_publish(pod, pv)
        for _pvc, pv in volumes:
            csi = pv["spec"]["csi"]
            if csi.get("driver") == FUSE_DRIVER:
                continue  # attachRequired: false
            va = self.kube.find("volumeattachments", attachment_name(csi["volumeHandle"], csi["driver"], self.node))
            if not va or not va.get("status", {}).get("attached"):
                self.set_pod_status(pod, "Pending")
                return  # kubelet waits for the attach before MountDevice
        for pv, image in images:
            with self.image_lock(image):
                result = self.stage(image, pv["spec"]["csi"]["volumeHandle"])
            if result.get("in_use"):
                self.back_off(meta["uid"])
                self.set_pod_status(pod, "Pending")
                post_event(self.kube, pod, "FailedMount",
                           'MountVolume.MountDevice failed for volume "%s" : rpc error: code = Internal '
                           'desc = rbd image %s is still being used' % (pv["metadata"]["name"], image),
                           "kubelet", self.node)
                return
        for pv, image in intree:
            # in-tree rbd plugin (Kubernetes < 1.31): an advisory lock per node, no VolumeAttachment
            with self.image_lock(image):
                result = {} if self.staged(image) else labmod.hold(
                    self.cfg, self.node, image, kind="stage", intree_lock="kubelet_lock_magic_" + self.node)
            if result.get("in_use"):
                self.back_off(meta["uid"])
                self.set_pod_status(pod, "Pending")
                post_event(self.kube, pod, "FailedMount",
                           'MountVolume.SetUp failed for volume "%s" : rbd: image %s is locked by other nodes'
                           % (pv["metadata"]["name"], image.split("/")[-1]), "kubelet", self.node)
                return
        self.retry.pop(meta["uid"], None)
        self.set_pod_status(pod, "Running")

    def cleanup_orphans(self, pods):
        """kubelet's orphaned-pod cleanup: unmount live volume mounts of pods no longer bound here
        (force-deleted ones). A dead FUSE mount cannot be cleaned this way, as on a real node."""
        live_uids = {p["metadata"]["uid"] for p in pods}
        pods_dir = os.path.join(self.kubelet_dir, "pods")
        if not os.path.isdir(pods_dir):
            return
        for uid in os.listdir(pods_dir):
            if uid in live_uids:
                continue
            csi_dir = os.path.join(pods_dir, uid, "volumes", "kubernetes.io~csi")
            for volume in os.listdir(csi_dir) if os.path.isdir(csi_dir) else []:
                path = os.path.join(csi_dir, volume, "mount")
                if mount_state(path) == "alive":
                    subprocess.run(["umount", path], check=False, timeout=20)

    def probe_fuse(self, pod, fuse):
        """The liveness probe of dead-fuse-mount (`ls` of the mount) fails once the FUSE daemon is gone."""
        for pv in fuse:
            path = self.fuse_mount_path(pod, pv)
            if mount_state(path) == "dead":
                mount_path = pod["spec"]["containers"][0].get("volumeMounts", [{}])[0].get("mountPath", path)
                post_event(self.kube, pod, "Unhealthy", "Liveness probe failed: ls: cannot access '%s': "
                           "Transport endpoint is not connected" % mount_path, "kubelet", self.node)
                self.set_pod_status(pod, "Running", waiting_reason="CreateContainerError")
                post_event(self.kube, pod, "Failed", 'Error: failed to generate container spec: failed to stat '
                           '"%s": stat %s: transport endpoint is not connected' % (path, path), "kubelet", self.node)
                return

    def needs_sync(self, pod, moment):
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            return True
        if self.retry.get(meta["uid"], (0, 0))[0] > moment:
            return False  # a failed mount waits for its backoff
        if pod.get("status", {}).get("phase") == "Running":
            # a Running pod needs a worker only for its FUSE probe (or to learn its volumes)
            resolved = self.resolved.get(meta["uid"])
            return resolved is None or bool(resolved[2])
        return True

    def sync_one(self, pod):
        try:
            self.sync_pod(pod)
        except (ApiError, labmod.LabError, subprocess.SubprocessError, OSError) as exc:
            log("agent %s: pod %s: %s" % (self.node, pod["metadata"]["name"], exc))
        except Exception as exc:  # a worker must survive whatever one pod does
            log("agent %s: pod %s: %s: %s" % (self.node, pod["metadata"]["name"], type(exc).__name__, exc))
        finally:
            with self.lock:
                self.inflight.discard(pod["metadata"]["uid"])

    def dispatch(self, pods):
        """Hand each pod that needs a sync to a worker, unless one already has it."""
        moment = time.time()
        present = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            present.add(uid)
            if not self.needs_sync(pod, moment):
                continue
            with self.lock:
                if uid in self.inflight:
                    continue
                self.inflight.add(uid)
            self.pool.submit(self.sync_one, pod)
        with self.lock:
            busy = set(self.inflight)
        for table in (self.resolved, self.retry):
            for uid in [u for u in table if u not in present and u not in busy]:
                table.pop(uid, None)

    def heartbeat_loop(self, stop):
        while not stop:
            try:
                self.heartbeat()
            except Exception as exc:  # like a kubelet, keep posting whatever one call did
                log("agent %s: heartbeat: %s" % (self.node, exc))
            time.sleep(self.clocks.get().heartbeat)

    def run(self, stop):
        self.register()
        threading.Thread(target=self.heartbeat_loop, args=(stop,), name="heartbeat", daemon=True).start()
        while not stop:
            self.backoff_set.clear()
            try:
                pods = self.kube.list("pods", field_selector="spec.nodeName=" + self.node)
                self.dispatch(pods)
                self.cleanup_orphans(pods)
            except Exception as exc:  # the agent must outlive API hiccups, like a kubelet
                log("agent %s: %s" % (self.node, exc))
            if self.backoff_set.wait(self.next_pass(time.time())):
                # a retry was scheduled meanwhile: wait for the sooner of it and the period
                self.backoff_set.clear()
                time.sleep(self.next_pass(time.time()))
        # A killed kubelet stops at once: no worker finishes its pod (the node's Ceph clients,
        # in sessions of their own, stay alive).
        self.checker.stop()


# ----------------------------------------------------------------------------- control plane

class ControlPlane(object):
    def __init__(self, cfg, kube):
        self.cfg = cfg
        self.kube = kube
        self.cluster = None
        self.clocks = clockmod.Follower(cfg.dir)
        self.taints_seen = {}           # (node, NoExecute taint key) -> when first seen
        self.last_pod_gc = 0.0
        self.attached = None            # the attach/detach controller's actual state: (pv, node) -> since
        self.detach_requested = {}      # (pv, node) -> when it left the desired state
        self.last_attachment_sync = 0.0
        # CSI-Addons: the shared stand-in, acting on the lab's Ceph for the lab driver's fences.
        self.fences = NetworkFenceStandIn(kube, owns=self.owns_fence, apply=self.apply_fence,
                                          release=self.release_fence)

    # node lifecycle controller
    def sync_nodes(self):
        nodes = self.kube.list("nodes")
        leases = {l["metadata"]["name"]: l for l in self.kube.list("leases", "kube-node-lease")}
        changed = set()
        for node in nodes:
            name = node["metadata"]["name"]
            renew = age(leases.get(name, {}).get("spec", {}).get("renewTime"))
            taints = node.get("spec", {}).get("taints", []) or []
            stale = renew is None or renew > self.clocks.get().node_grace
            if stale and node_ready(node):
                conditions = [c for c in node["status"].get("conditions", []) if c["type"] != "Ready"]
                old = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
                conditions.append({"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                   "message": "Kubelet stopped posting node status.",
                                   "lastHeartbeatTime": old.get("lastHeartbeatTime"),
                                   "lastTransitionTime": stamp()})
                self.kube.patch("nodes", name, {"status": {"conditions": conditions}}, subresource="status")
                changed.add(name)
            if stale != any(t["key"] == UNREACHABLE_TAINT for t in taints):
                self.swap_unreachable_taint(name, stale)
                changed.add(name)
        # the nodes as listed, those this pass changed as read again
        return {n["metadata"]["name"]: self.kube.get("nodes", n["metadata"]["name"]) if n["metadata"]["name"] in changed
                else n for n in nodes}

    def swap_unreachable_taint(self, name, add):
        """Add or remove the unreachable taint on the node as read now, with its resourceVersion (as the
        node lifecycle controller's PatchNodeTaints does): a taint someone added meanwhile is never lost;
        on a conflict the next pass tries again."""
        node = self.kube.get("nodes", name)
        taints = [t for t in node.get("spec", {}).get("taints", []) or [] if t.get("key") != UNREACHABLE_TAINT]
        if add:
            taints.append({"key": UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": stamp()})
        try:
            self.kube.patch("nodes", name, {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                            "spec": {"taints": taints or None}})
        except ApiError as exc:
            if exc.status != 409:
                raise

    # taint eviction (pkg/controller/tainteviction/taint_eviction.go): a pod on a node with a NoExecute
    # taint it does not tolerate is deleted at once; one it tolerates for N seconds is deleted N seconds
    # after the taint was seen. The API server's DefaultTolerationSeconds admission gives every pod
    # that names none a toleration of not-ready and unreachable (clocks.eviction; never: forever).
    # The deletion is graceful: on a dead node the pod stays Terminating until something removes it.
    def evict(self, nodes, pods):
        clocks = self.clocks.get()
        moment = time.time()
        seen = {}
        for name, node in nodes.items():
            for taint in node.get("spec", {}).get("taints", []) or []:
                if taint.get("effect") == "NoExecute":
                    key = (name, taint.get("key"))
                    seen[key] = self.taints_seen.get(key, moment)
        self.taints_seen = seen
        for pod in pods:
            meta = pod["metadata"]
            name = pod.get("spec", {}).get("nodeName")
            node = nodes.get(name)
            if node is None or meta.get("deletionTimestamp"):
                continue
            due = None
            for taint in node.get("spec", {}).get("taints", []) or []:
                if taint.get("effect") != "NoExecute":
                    continue
                tolerated = toleration_seconds(pod, taint, clocks.eviction)
                if tolerated is False:
                    due = moment
                    break
                if tolerated is not None:
                    at = seen[(name, taint.get("key"))] + tolerated
                    due = at if due is None else min(due, at)
            if due is not None and due <= moment:
                self.kube.delete("pods", meta["name"], meta["namespace"])

    # pod GC (pkg/controller/podgc/gc_controller.go gcTerminating), every clocks.pod_gc: a Terminating
    # pod on a node that is not Ready and carries the out-of-service taint (any effect) is marked
    # Failed and deleted with grace 0 (Kubernetes' non-graceful node shutdown).
    def pod_gc(self, nodes, pods):
        clocks = self.clocks.get()
        if time.time() - self.last_pod_gc < clocks.pod_gc:
            return
        self.last_pod_gc = time.time()
        for pod in pods:
            meta = pod["metadata"]
            node = nodes.get(pod.get("spec", {}).get("nodeName"))
            if node is None or not meta.get("deletionTimestamp"):
                continue
            if has_taint(node, OUT_OF_SERVICE_TAINT) and not node_ready(node):
                if pod.get("status", {}).get("phase") not in ("Failed", "Succeeded"):
                    self.kube.patch("pods", meta["name"], {"status": {"phase": "Failed"}}, meta["namespace"],
                                    subresource="status")
                self.kube.delete("pods", meta["name"], meta["namespace"], grace_period=0)

    # deployment + replicaset controllers and the scheduler, for one-replica Deployments
    def sync_deployments(self, nodes, pods):
        for deploy in self.kube.list("deployments"):
            meta = deploy["metadata"]
            ns = meta["namespace"]
            owned = [p for p in pods if any(o.get("uid") == meta["uid"] for o in p["metadata"].get("ownerReferences", []))]
            live = [p for p in owned if not p["metadata"].get("deletionTimestamp")]
            want = deploy.get("spec", {}).get("replicas", 1)
            for _ in range(want - len(live)):
                node = self.schedule(deploy, nodes)
                template = deploy["spec"]["template"]
                pod = {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {
                        # as a ReplicaSet does: the API server appends the random suffix
                        "generateName": "%s-%s-" % (meta["name"], hashlib.sha1(meta["uid"].encode()).hexdigest()[:10]),
                        "namespace": ns,
                        "labels": dict(template.get("metadata", {}).get("labels", {})),
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                             "uid": meta["uid"], "controller": True}],
                    },
                    "spec": dict(template.get("spec", {}), nodeName=node) if node else dict(template.get("spec", {})),
                    "status": {"phase": "Pending"},
                }
                self.kube.create("pods", pod, ns)
            running = len([p for p in live if p.get("status", {}).get("phase") == "Running"])
            status = {"replicas": len(owned), "readyReplicas": running, "availableReplicas": running,
                      "observedGeneration": meta.get("generation", 1)}
            if deploy.get("status", {}) != status:
                self.kube.patch("deployments", meta["name"], {"status": status}, ns, subresource="status")

    # StatefulSet controller (stateful_set_control.go): pod <name>-<ordinal> with its claims
    # <template>-<name>-<ordinal>; a replacement of the same name only once the old pod object is
    # gone from the API (a Terminating pod is still there, so the controller waits).
    def sync_statefulsets(self, nodes, pods):
        by_name = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        for sts in self.kube.list("statefulsets"):
            meta = sts["metadata"]
            ns = meta["namespace"]
            spec = sts.get("spec", {})
            template = spec.get("template", {})
            owned = []
            for ordinal in range(spec.get("replicas", 1)):
                name = "%s-%d" % (meta["name"], ordinal)
                pod = by_name.get((ns, name))
                if pod is not None:
                    owned.append(pod)
                    continue
                volumes = list(template.get("spec", {}).get("volumes", []) or [])
                for claim in spec.get("volumeClaimTemplates", []) or []:
                    claim_name = "%s-%s" % (claim["metadata"]["name"], name)
                    volumes.append({"name": claim["metadata"]["name"],
                                    "persistentVolumeClaim": {"claimName": claim_name}})
                node = self.schedule(sts, nodes)
                pod_spec = dict(template.get("spec", {}), volumes=volumes, hostname=name)
                if node:
                    pod_spec["nodeName"] = node
                labels = dict(template.get("metadata", {}).get("labels", {}))
                labels["statefulset.kubernetes.io/pod-name"] = name
                self.kube.create("pods", {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": ns, "labels": labels,
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                                      "name": meta["name"], "uid": meta["uid"],
                                                      "controller": True, "blockOwnerDeletion": True}]},
                    "spec": pod_spec, "status": {"phase": "Pending"}}, ns)
            live = [p for p in owned if not p["metadata"].get("deletionTimestamp")]
            running = len([p for p in live if p.get("status", {}).get("phase") == "Running"])
            status = {"replicas": len(owned), "readyReplicas": running, "availableReplicas": running,
                      "currentReplicas": len(owned), "observedGeneration": meta.get("generation", 1)}
            if sts.get("status", {}) != status:
                self.kube.patch("statefulsets", meta["name"], {"status": status}, ns, subresource="status")

    @staticmethod
    def schedule(deploy, nodes):
        usable = sorted(n for n, obj in nodes.items() if node_ready(obj)
                        and not obj.get("spec", {}).get("unschedulable")
                        and not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in obj.get("spec", {}).get("taints", []) or []))
        prefer = deploy["metadata"].get("annotations", {}).get("lab.volfence.io/prefer-node")
        if prefer in usable:
            return prefer
        return usable[0] if usable else None

    # attach/detach controller (pkg/controller/volume/attachdetach/) + external-attacher. Its actual
    # state (self.attached) is its own memory: a VolumeAttachment deleted by someone else is noticed
    # at its periodic sync (syncStates -> csi_attacher.VolumesAreAttached, clocks.attachment_sync), and
    # until then a ReadWriteOnce volume is refused elsewhere (Multi-Attach). A volume leaves the desired
    # state when its pod object is gone (a Terminating pod on a dead node still shows running
    # containers, volumeutil.IsPodTerminated); it is then detached at once unless its node is not
    # Ready (a dead kubelet never reports it unmounted): then only under the out-of-service taint, or
    # after clocks.force_detach (maxWaitForUnmountDuration), counted from the detach request.
    # The fast clocks keep one shortcut of the lab before real clocks: a pod Terminating longer than
    # force_detach on a node that is not Ready no longer holds its volume.
    def sync_attachments(self, nodes, pods):
        clocks = self.clocks.get()
        moment = time.time()
        index = VolumeIndex(self.kube)  # one list of claims and volumes for the whole pass
        wanted = {}     # (pv name, node) -> (pv, pod): volumes to attach
        desired = set()  # (pv name, node) in the desired state of the world
        for pod in pods:
            node_name = pod.get("spec", {}).get("nodeName")
            if not node_name:
                continue
            meta = pod["metadata"]
            node = nodes.get(node_name)
            terminated = pod.get("status", {}).get("phase") in ("Failed", "Succeeded")
            if clocks.mode == "fast" and meta.get("deletionTimestamp") and node is not None:
                # deletionTimestamp is "now + grace period": count from when deletion began.
                deleting = (age(meta.get("deletionTimestamp")) or 0) + (meta.get("deletionGracePeriodSeconds") or 0)
                terminated = terminated or (not node_ready(node) and deleting > clocks.force_detach)
            for _pvc, pv in pod_volumes(index, pod):
                key = (pv["metadata"]["name"], node_name)
                if node is not None and not terminated:
                    desired.add(key)
                if not meta.get("deletionTimestamp") and not terminated:
                    wanted.setdefault(key, (pv, pod))
        vas = self.kube.list("volumeattachments")
        by_key = {(va["spec"]["source"].get("persistentVolumeName"), va["spec"]["nodeName"]): va for va in vas
                  if va["spec"].get("attacher") == LAB_DRIVER}
        names = {va["metadata"]["name"] for va in vas}
        if self.attached is None:  # a (re)started controller reads what is attached (processVolumeAttachments)
            self.attached = {key: moment for key, va in by_key.items() if va.get("status", {}).get("attached")}
        if moment - self.last_attachment_sync >= clocks.attachment_sync:
            self.last_attachment_sync = moment
            for key in [k for k in self.attached if k not in by_key]:
                del self.attached[key]  # VerifyVolumesAreAttached: the VolumeAttachment is gone
        # Detach what left the desired state.
        for key in list(self.attached):
            if key in desired:
                self.detach_requested.pop(key, None)
                continue
            requested = self.detach_requested.setdefault(key, moment)
            node = nodes.get(key[1])
            mounted = node is not None and not node_ready(node)
            timed_out = (clocks.force_detach is not None and node is not None and not node_ready(node)
                         and moment - requested > clocks.force_detach)
            if mounted and not timed_out and not has_taint(node, OUT_OF_SERVICE_TAINT):
                continue
            va = by_key.get(key)
            if va is not None and not va["metadata"].get("deletionTimestamp"):
                self.kube.delete("volumeattachments", va["metadata"]["name"])
            del self.attached[key]
            self.detach_requested.pop(key, None)
        # external-attacher: a VolumeAttachment being deleted gets ControllerUnpublish, then loses its
        # finalizer; a failed ControllerUnpublish keeps it, retried on the next pass. Each attachment on
        # its own, as in the external-attacher's work queue (kubernetes-csi/external-attacher,
        # pkg/controller/controller.go, syncVA: one VolumeAttachment per Get, a failed one goes back with
        # AddRateLimited; read at e610602): one that keeps failing holds back no other.
        fencing = None
        for va in vas:
            if va["spec"].get("attacher") == LAB_DRIVER and va["metadata"].get("deletionTimestamp"):
                fins = [f for f in va["metadata"].get("finalizers", []) if not f.startswith("external-attacher/")]
                if fins != va["metadata"].get("finalizers", []):
                    fencing = csi_fencing(self.kube) if fencing is None else fencing
                    try:
                        self.controller_unpublish(va, nodes.get(va["spec"]["nodeName"]), fencing)
                    except Exception as exc:  # kept, retried on the next pass
                        log("external-attacher: ControllerUnpublish of %s: %s: %s"
                            % (va["metadata"]["name"], type(exc).__name__, exc))
                        continue
                    self.kube.patch("volumeattachments", va["metadata"]["name"], {"metadata": {"finalizers": fins}})
        for (pv_name, node_name), (pv, pod) in wanted.items():
            csi = pv["spec"]["csi"]
            name = attachment_name(csi["volumeHandle"], csi["driver"], node_name)
            rwo = "ReadWriteOnce" in pv["spec"].get("accessModes", []) or "ReadWriteOncePod" in pv["spec"].get("accessModes", [])
            elsewhere = [n for (p, n) in self.attached if p == pv_name and n != node_name]
            others = [va for va in vas if va["spec"]["source"].get("persistentVolumeName") == pv_name
                      and va["spec"]["nodeName"] != node_name and va["spec"].get("attacher") != LAB_DRIVER]
            if rwo and (elsewhere or others):
                post_event(self.kube, pod, "FailedAttachVolume",
                           'Multi-Attach error for volume "%s" Volume is already exclusively attached to one '
                           "node and can't be attached to another" % pv_name, "attachdetach-controller")
                continue
            if name not in names:
                driver = csi["driver"]
                self.kube.create("volumeattachments", {
                    "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                    "metadata": {"name": name, "finalizers": ["external-attacher/" + driver.replace(".", "-")]},
                    "spec": {"attacher": driver, "nodeName": node_name,
                             "source": {"persistentVolumeName": pv_name}},
                })
                self.kube.patch("volumeattachments", name, {"status": {"attached": True}}, subresource="status")
            if driver_is_lab(csi.get("driver")):
                self.attached[(pv_name, node_name)] = moment

    # ceph-csi's controller plugin (internal/rbd/controllerserver.go, ControllerUnpublishVolume, ceph-csi
    # 3.15+: PRs #5429, #5828)
    def controller_unpublish(self, va, node, fencing):
        """With fencing on and the node out of service, blocklist the client address the node recorded at
        NodeStage, as a one-host range for AutoBlocklistTime (a single address where the release has no
        ranges); then, fencing or not, forget the record."""
        pv = self.kube.find("persistentvolumes", va["spec"]["source"].get("persistentVolumeName") or "")
        csi = (pv or {}).get("spec", {}).get("csi") or {}
        attrs = csi.get("volumeAttributes") or {}
        if not csi or not attrs.get("imageName"):
            return
        import rbd
        key = CLIENT_ADDRESS_KEY % (csi["volumeHandle"], va["spec"]["nodeName"])
        pool, namespace, name = split_spec(csi_image_spec(pv, csi_clusters(self.kube)))
        with self.ceph().open_ioctx(pool) as ioctx:
            ioctx.set_namespace(namespace)  # an image in a RADOS namespace is not in the pool's default one
            with rbd.Image(ioctx, name) as image:
                try:
                    address = image.metadata_get(key)
                except KeyError:
                    return
                if fencing and node is not None and has_taint(node, OUT_OF_SERVICE_TAINT):
                    self.auto_fence(address)
                image.metadata_remove(key)

    def auto_fence(self, address):
        host = ipaddress.ip_address(address)
        cidr = "%s/%d" % (host, host.max_prefixlen)
        ret, err = self.mon(prefix="osd blocklist", blocklistop="add", addr=cidr, range="range",
                            expire=float(AUTO_BLOCKLIST_SECONDS))
        if ret != 0:  # a release without ranges (Pacific): the address, every port and nonce
            ret, err = self.mon(prefix="osd blocklist", blocklistop="add", expire=float(AUTO_BLOCKLIST_SECONDS),
                                addr=(str(host) if host.version == 4 else "[%s]" % host) + ":0/0")
        if ret != 0:
            raise RuntimeError("ceph-csi auto fence of %s: %s" % (cidr, err))
        log("ceph-csi: fenced %s on ControllerUnpublish (node out of service)" % cidr)

    # CSI-Addons stand-in
    def ceph(self):
        if self.cluster is None:
            import rados
            self.cluster = rados.Rados(conffile=self.cfg.conf, rados_id=self.cfg.user,
                                       conf={"keyring": self.cfg.keyring})
            self.cluster.connect(timeout=10)
        return self.cluster

    def mon(self, **cmd):
        cmd["format"] = "json"
        ret, out, err = self.ceph().mon_command(json.dumps(cmd), b"")
        return ret, err

    def blocklist_cidr(self, cidr, add):
        net = ipaddress.ip_network(cidr, strict=False)
        if net.num_addresses == 1:
            addr = str(net.network_address)
            ret, err = self.mon(prefix="osd blocklist", blocklistop="add" if add else "rm",
                                addr=addr + ":0/0" if net.version == 4 else "[%s]:0/0" % addr)
            return ret, err
        ret, err = self.mon(prefix="osd blocklist", blocklistop="add" if add else "rm", range=str(net))
        if ret == 0:
            return ret, err
        # no range support: one entry per address, as ceph-csi falls back to
        for host in net.hosts():
            ret, err = self.mon(prefix="osd blocklist", blocklistop="add" if add else "rm", addr=str(host) + ":0/0")
            if ret != 0:
                return ret, err
        return 0, ""

    def sync_csi_addons(self, nodes):
        crds = {c["metadata"]["name"] for c in self.kube.list("customresourcedefinitions")}
        if "csiaddonsnodes.csiaddons.openshift.io" in crds:
            # one sidecar per node plugin, and the controller plugin's (ceph-csi names its pods
            # csi-rbdplugin-provisioner-*: the one that answers fence requests), on the first node
            sidecars = [("%s-%s" % (name, LAB_DRIVER.replace(".", "-")), name, "csi-rbdplugin-%s" % name)
                        for name in nodes]
            if nodes:
                sidecars.append(("csi-rbdplugin-provisioner-%s" % LAB_DRIVER.replace(".", "-"), sorted(nodes)[0],
                                 "csi-rbdplugin-provisioner-0"))
            for obj_name, name, pod in sidecars:
                if self.kube.find("csiaddonsnodes", obj_name, CSI_NAMESPACE) is None:
                    self.ensure_namespace(CSI_NAMESPACE)
                    self.kube.create("csiaddonsnodes", {
                        "apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "CSIAddonsNode",
                        "metadata": {"name": obj_name, "namespace": CSI_NAMESPACE,
                                     "labels": {"lab.volfence.io/stand-in": "true"}},
                        "spec": {"driver": {"name": LAB_DRIVER, "nodeID": name,
                                            "endpoint": "pod://%s.%s:9070" % (pod, CSI_NAMESPACE)}},
                    }, CSI_NAMESPACE)
                    self.kube.patch("csiaddonsnodes", obj_name, {"status": {
                        "state": "Connected", "message": "Successfully established connection with sidecar"}},
                        CSI_NAMESPACE, subresource="status")
        if "networkfences.csiaddons.openshift.io" not in crds:
            return
        self.fences.step()

    def ensure_namespace(self, name):
        if self.kube.find("namespaces", name) is None:
            self.kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def fence_driver(self, fence):
        spec = fence.get("spec", {})
        if spec.get("driver"):
            return spec["driver"]
        cls_name = spec.get("networkFenceClassName")
        if cls_name:
            cls = self.kube.find("networkfenceclasses", cls_name)
            return (cls or {}).get("spec", {}).get("provisioner")
        return None

    def owns_fence(self, fence):
        """Another driver's fence is not ours to act on."""
        return (self.fence_driver(fence) or "").endswith(LAB_DRIVER)

    def apply_fence(self, fence):
        """Fenced: blocklist every CIDR (a range first), Unfenced: remove them; the failures, if any."""
        state = fence["spec"].get("fenceState")
        failures = []
        for cidr in fence["spec"].get("cidrs", []):
            try:
                ret, err = self.blocklist_cidr(cidr, add=(state == "Fenced"))
            except ValueError as exc:
                ret, err = 1, str(exc)
            # removing an entry that is not there is success for Unfenced
            if ret != 0 and not (state == "Unfenced" and ret == -2):
                failures.append("%s: %s" % (cidr, err))
        return ["fencing operation failed: " + "; ".join(failures)] if failures else []

    def release_fence(self, fence):
        for cidr in fence.get("spec", {}).get("cidrs", []):
            self.blocklist_cidr(cidr, add=False)

    def run(self, stop):
        while not stop:
            started = time.time()
            try:
                nodes = self.sync_nodes()
            except Exception as exc:  # keep reconciling, like a controller manager
                log("controlplane: node lifecycle: %s: %s" % (type(exc).__name__, exc))
                nodes = None
            # Each controller on its own, as in kube-controller-manager: one failing stops no other.
            steps = [("taint eviction", self.evict), ("pod GC", self.pod_gc), ("deployments", self.sync_deployments),
                     ("statefulsets", self.sync_statefulsets), ("attach/detach", self.sync_attachments)]
            # One read of the pods per pass for every controller: kube-controller-manager's controllers
            # share one pod informer (cmd/kube-controller-manager/app, e.g. startJobController:
            # controllerContext.InformerFactory.Core().V1().Pods()), a cache that shows one
            # controller's change to the next a moment later, not at once.
            pods = None
            if nodes is not None:
                try:
                    pods = self.kube.list("pods")
                except Exception as exc:
                    log("controlplane: pods: %s: %s" % (type(exc).__name__, exc))
            for name, step in steps if pods is not None else []:
                try:
                    step(nodes, pods)
                except Exception as exc:
                    log("controlplane: %s: %s: %s" % (name, type(exc).__name__, exc))
            try:
                if nodes is not None:
                    self.sync_csi_addons(nodes)
            except Exception as exc:
                log("controlplane: csi-addons: %s: %s" % (type(exc).__name__, exc))
            loop = self.clocks.get().loop
            if time.time() - started > 2 * loop:  # the lab falling behind shows in its log
                log("controlplane: a pass took %.1f s" % (time.time() - started))
            time.sleep(loop)


def log(message):
    sys.stderr.write("%s %s\n" % (stamp(), message))
    sys.stderr.flush()


def main(argv=None):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("agent")
    p.add_argument("--node", required=True)
    p.add_argument("--kubeconfig", required=True)
    p = sub.add_parser("controlplane")
    p.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    cfg = labmod.Config()
    kube = KubeClient(server_from_kubeconfig(args.kubeconfig))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    if args.command == "agent":
        NodeAgent(cfg, args.node, kube).run(stop)
        sys.stderr.flush()
        os._exit(0)  # workers still in a sync die with the kubelet
    elif args.command == "controlplane":
        ControlPlane(cfg, kube).run(stop)
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Incident scenarios: the Kubernetes and Ceph state of each incident, built on the running lab.

  stale-rbd-watcher
            node-b dies holding a watcher; the replacement pod is stuck on node-a with
            ceph-csi's "rbd image <pool>/<image> is still being used". On a lab whose clocks never
            evict (`never`, as a real cluster in its first 5 minutes) no replacement exists yet: the
            scenario ends once node-b is NotReady, its pod still on it (stuck_pod: null).
  stale-rbd-watcher-statefulset
            the same for a one-replica StatefulSet `web` (claim data-web-0): node-b dies holding the
            watcher; the StatefulSet controller makes no web-0 elsewhere while the old one exists.
  stale-volumeattachment
            a VolumeAttachment of a volume whose unique name <driver>^<handle> is 68 characters
            and starts with "csi-" (the pre-1.24 detach name collision).
  dead-fuse-mount
            an s3fs-like FUSE CSI volume on node-b whose FUSE daemon dies with a node-plugin
            restart: the pod's mount gives "Transport endpoint is not connected".
  stale-rbd-lock
            an in-tree rbd PV whose image carries kubelet_lock_magic_node-b, held from node-b;
            the pod on node-a is stuck with "rbd: image X is locked by other nodes".
  stale-rbd-watcher-mixed
            stale-rbd-watcher on a node that also has volumes the collection cannot fence: a block volume
            of another CSI driver (ebs.csi.aws.com-like, attached by the lab's attacher, never
            detached: its attacher is not in the lab), an in-tree NFS volume, and a
            VolumeAttachment whose PersistentVolume does not exist.
  node-volumes
            stale-rbd-watcher with N volumes: N one-replica Deployments, each with a ReadWriteOnce claim
            on its own RBD image, all running on one node (--node, default node-b; --volumes,
            default 10); the node dies holding every watcher; every replacement pod is stuck. On a lab
            whose clocks never evict (`never`) no replacement exists yet: the scenario ends once the
            nodes are NotReady, their pods still on them (stuck_pods: [], stuck_nodes: []).
  rack      node-volumes on several nodes at once (--nodes, default every node but the
            first; --volumes per node, default 20): they die together.
  frozen-rbd-watcher
            stale-rbd-watcher's Deployment on node-b, then node-b freezes (pause-node: VM paused) and
            the scenario waits until `rbd status` no longer lists its client (the OSD's watch timeout,
            30 s), which still has the image open read-write and writes again once resumed (issue 43).
  partitioned-rbd-watcher
            the same with node-b cut from the network (partition-node) instead.

Images are made as ceph-csi's example StorageClass makes them (imageFeatures: "layering"), unless
LAB_IMAGE_FEATURES says otherwise (default: Ceph's rbd_default_features, or a list).

Each builder returns a summary (names, images, node IPs) that tests and the demo use. What
node-volumes and rack create carries the label lab.volfence.io/scenario=<id>; clean_scenario
(`lab.py clean-scenario`) removes it, with its images.

"""

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from kubeemu.wait import WaitTimeout, wait_until
from volfence_lab import clocks as clockmod
from volfence_lab import lab as labmod
from volfence_lab.kubesim import (CSI_NAMESPACE, CSI_PROVISIONER, FUSE_DRIVER, LAB_DRIVER, attachment_name,
                                 compose_volume_id, csi_clusters, csi_fencing, csi_image_spec)

NAMESPACE = "default"


def rbd_cli(cfg, *args):
    proc = subprocess.run([cfg.tool("rbd"), "-c", cfg.conf, "-k", cfg.keyring, "-n", "client." + cfg.user] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=60, env=labmod.clean_env())
    if proc.returncode != 0:
        raise labmod.LabError("rbd %s failed: %s" % (" ".join(args), proc.stderr.strip()))
    return proc.stdout


def wait(what, predicate, timeout=60):
    """kubeemu's wait_until, failing as the lab fails (LabError: the CLI prints it)."""
    try:
        return wait_until(predicate, timeout=timeout, step=0.3, what=what)
    except WaitTimeout as exc:
        raise labmod.LabError("scenario: %s" % exc)


def set_csi_fencing(kube, on):
    """Turn ceph-csi's fencing on detach on or off, as an administrator edits the controller plugin's flags."""
    base_objects(kube, fencing=on)


def base_objects(kube, fencing=None):
    """StorageClass, CSIDriver, the secret and the ConfigMap of monitors a ceph-csi install has, and its controller
    plugin's Deployment: with no replica (the lab's stand-ins do its work), it carries the flags readiness reads, as
    ceph-csi's does. Fencing on detach is off, ceph-csi's default, unless `fencing` (None: as it is now)."""
    fencing = csi_fencing(kube) if fencing is None else fencing
    if kube.find("namespaces", CSI_NAMESPACE) is None:
        kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CSI_NAMESPACE}})
    storage_class(kube, "ceph-rbd", "lab")
    kube.apply("csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                              "metadata": {"name": LAB_DRIVER}, "spec": {"attachRequired": True}})
    kube.apply("secrets", {"apiVersion": "v1", "kind": "Secret",
                           "metadata": {"name": "csi-rbd-secret", "namespace": CSI_NAMESPACE},
                           "stringData": {"userID": "admin"}, "type": "Opaque"}, CSI_NAMESPACE)
    labels = {"app": "csi-rbdplugin-provisioner"}
    kube.apply("deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": CSI_PROVISIONER, "namespace": CSI_NAMESPACE},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "csi-rbdplugin", "image": "quay.io/cephcsi/cephcsi:v3.15.1",
                                     "args": ["--nodeid=$(NODE_ID)", "--type=rbd", "--controllerserver=true",
                                              "--drivername=" + LAB_DRIVER,
                                              "--enable-fencing=%s" % str(bool(fencing)).lower()]}]}}}},
        CSI_NAMESPACE)


# Image features. ceph-csi's example StorageClass (examples/rbd/storageclass.yaml) asks for
# `imageFeatures: "layering"`, so that is what the lab's volumes get unless LAB_IMAGE_FEATURES says
# otherwise: "default" (Ceph's rbd_default_features: layering, exclusive-lock, object-map, fast-diff,
# deep-flatten) or a comma-separated list. Without exclusive-lock nothing stops a thawed client writing.
RBD_FEATURES = ("layering", "striping", "exclusive-lock", "object-map", "fast-diff", "deep-flatten", "journaling",
                "data-pool")
FROM_ENV = object()  # rbd_volume's image_features: the lab's setting, LAB_IMAGE_FEATURES
CEPH_DEFAULT_FEATURES = "layering,exclusive-lock,object-map,fast-diff,deep-flatten"  # rbd_default_features


def storage_class_features():
    """The imageFeatures parameter of the lab's StorageClasses: what its images get."""
    return image_features_setting() or CEPH_DEFAULT_FEATURES


def image_features_setting(environ=None):
    """The features new images get: a comma-separated list, or None for Ceph's defaults."""
    value = ((os.environ if environ is None else environ).get("LAB_IMAGE_FEATURES") or "layering").strip()
    return None if value == "default" else checked_features(value)


def checked_features(value):
    features = [f.strip() for f in value.split(",") if f.strip()]
    unknown = [f for f in features if f not in RBD_FEATURES]
    if not features or unknown:
        raise labmod.LabError("image features must be \"default\" or a list of %s, got %r" % (", ".join(RBD_FEATURES),
                                                                                             value))
    return ",".join(features)


def features_of(cfg, image):
    """The features `image` has, as `rbd info` lists them."""
    return json.loads(rbd_cli(cfg, "info", image, "--format", "json"))["features"]


# RADOS namespaces. ceph-csi gives each clusterID of its config one namespace (config.json entry
# {"clusterID", "monitors", "rbd": {"radosNamespace"}}, internal/util/csiconfig.go), and a volume ID carries
# its clusterID: a volume in namespace N has the clusterID lab-N here, listed in the lab's ceph-csi config.
NAMESPACES_LOCK = threading.Lock()


def rados_namespace_cluster(cfg, kube, namespace):
    """Make the RADOS namespace in the pool if it is not there (`rbd namespace create`), list its clusterID in
    ceph-csi's config and give it a StorageClass. Returns the clusterID."""
    cluster = "lab-" + namespace
    if len(cluster) > 36:  # ceph-csi's limit of a clusterID
        raise labmod.LabError("RADOS namespace %r is too long for a ceph-csi clusterID (%s)" % (namespace, cluster))
    with NAMESPACES_LOCK:
        listed = [n["name"] for n in json.loads(rbd_cli(cfg, "namespace", "ls", labmod.POOL, "--format", "json"))]
        if namespace not in listed:
            rbd_cli(cfg, "namespace", "create", "%s/%s" % (labmod.POOL, namespace))
        configmap = kube.get("configmaps", labmod.CSI_CONFIGMAP, CSI_NAMESPACE)
        entries = json.loads(configmap["data"]["config.json"])
        if cluster not in [e.get("clusterID") for e in entries]:
            entries.append({"clusterID": cluster, "monitors": ["%s:6789" % cfg.host_ip],
                            "rbd": {"radosNamespace": namespace}})
            kube.patch("configmaps", labmod.CSI_CONFIGMAP, {"data": {"config.json": json.dumps(entries)}},
                       CSI_NAMESPACE)
        storage_class(kube, "ceph-rbd-" + namespace, cluster)
    return cluster


def storage_class(kube, name, cluster):
    kube.apply("storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": LAB_DRIVER, "reclaimPolicy": "Delete",
        "parameters": {"clusterID": cluster, "pool": labmod.POOL, "imageFeatures": storage_class_features(),
                       "csi.storage.k8s.io/node-stage-secret-name": "csi-rbd-secret",
                       "csi.storage.k8s.io/node-stage-secret-namespace": CSI_NAMESPACE,
                       "csi.storage.k8s.io/controller-publish-secret-name": "csi-rbd-secret",
                       "csi.storage.k8s.io/controller-publish-secret-namespace": CSI_NAMESPACE}})


# The rbd pool's ID in the volume IDs the lab makes (the pool after Ceph's .mgr).
POOL_ID = 2


def rbd_volume(cfg, kube, claim, csi=True, labels=None, image_features=FROM_ENV, rados_namespace=None):
    """An RBD image with a bound PV/PVC, ceph-csi style (or in-tree rbd when csi=False). image_features:
    a comma-separated list, None for Ceph's defaults, by default LAB_IMAGE_FEATURES (layering); the PV's
    imageFeatures attribute names what the image has. rados_namespace: the image lives in that RADOS
    namespace (made if needed), its volume under a clusterID whose ceph-csi config names it.
    Returns (PV name, pool[/namespace]/image)."""
    features = image_features_setting() if image_features is FROM_ENV else (
        image_features and checked_features(image_features))
    if rados_namespace and not csi:
        raise labmod.LabError("the in-tree rbd plugin has no RADOS namespaces")
    cluster = rados_namespace_cluster(cfg, kube, rados_namespace) if rados_namespace else "lab"
    vol_id = str(uuid.uuid1())
    image = "/".join(p for p in (labmod.POOL, rados_namespace, "csi-vol-" + vol_id) if p)
    create = ["create", image, "--size", "64"]
    for feature in (features or "").split(",") if features else []:
        create += ["--image-feature", feature]
    rbd_cli(cfg, *create)
    attribute = features or ",".join(features_of(cfg, image))
    pv_name = "pvc-" + str(uuid.uuid4())
    if csi:
        attrs = {"clusterID": cluster, "pool": labmod.POOL, "imageName": image.rsplit("/", 1)[1],
                 "imageFeatures": attribute}
        if rados_namespace:
            attrs["radosNamespace"] = rados_namespace  # ceph-csi's CreateVolume adds it to the volume context
        source = {"csi": {"driver": LAB_DRIVER, "fsType": "ext4",
                          "volumeHandle": compose_volume_id(cluster, POOL_ID, vol_id),
                          "volumeAttributes": attrs,
                          "nodeStageSecretRef": {"name": "csi-rbd-secret", "namespace": CSI_NAMESPACE}}}
    else:
        source = {"rbd": {"monitors": [cfg.host_ip + ":6789"], "pool": labmod.POOL, "image": image.rsplit("/", 1)[1],
                          "user": cfg.user, "fsType": "ext4"}}
    storage = ("ceph-rbd-" + rados_namespace if rados_namespace else "ceph-rbd") if csi else ""
    kube.create("persistentvolumes", dict({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name, "labels": dict(labels or {})},
        "spec": dict(source, accessModes=["ReadWriteOnce"], capacity={"storage": "1Gi"},
                     persistentVolumeReclaimPolicy="Delete", storageClassName=storage,
                     claimRef={"kind": "PersistentVolumeClaim", "namespace": NAMESPACE, "name": claim})}))
    kube.patch("persistentvolumes", pv_name, {"status": {"phase": "Bound"}}, subresource="status")
    kube.create("persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "namespace": NAMESPACE, "labels": dict(labels or {})},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "storageClassName": storage, "volumeName": pv_name}}, NAMESPACE)
    kube.patch("persistentvolumeclaims", claim, {"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                                                            "capacity": {"storage": "1Gi"}}},
               NAMESPACE, subresource="status")
    return pv_name, image


def deployment(kube, name, claim, prefer_node, labels=None):
    """stale-rbd-watcher's nginx Deployment, first placed on prefer_node."""
    kube.create("deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": dict(labels or {}, app=name),
                     "annotations": {"lab.volfence.io/prefer-node": prefer_node}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": dict(labels or {}, app=name)},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2",
                                                       "ports": [{"containerPort": 80}],
                                                       "volumeMounts": [{"mountPath": "/var/log/nginx",
                                                                         "name": "log-vol"}]}],
                                       "volumes": [{"name": "log-vol",
                                                    "persistentVolumeClaim": {"claimName": claim}}]}}}},
        NAMESPACE)


def pods_of(kube, app):
    return kube.list("pods", NAMESPACE, label_selector="app=" + app)


def running_on(kube, app, node):
    return [p for p in pods_of(kube, app) if p["spec"].get("nodeName") == node
            and p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def stuck_events(kube, pod_name, fragment):
    return [e for e in kube.list("events", NAMESPACE, field_selector="involvedObject.name=" + pod_name)
            if fragment in e.get("message", "")]


def wait_stuck(kube, app, fragment, what, timeout, away_from=None):
    """Wait until a pod of `app` has an event whose message holds `fragment`: (that pod, the event). With
    `away_from` (a node), only pods scheduled on another node and not being deleted count."""
    def stuck():
        for pod in pods_of(kube, app):
            if away_from and (pod["spec"].get("nodeName") in (None, away_from)
                              or pod["metadata"].get("deletionTimestamp")):
                continue
            events = stuck_events(kube, pod["metadata"]["name"], fragment)
            if events:
                return pod, events[0]
        return None
    return wait(what, stuck, timeout=timeout)


def claim_and_app(kube, app):
    """Seed 000's claim pvc-test and Deployment `app`, or, when a test left one, a new pair with a suffix."""
    if kube.find("persistentvolumeclaims", "pvc-test", NAMESPACE) is None:
        return "pvc-test", app
    suffix = uuid.uuid4().hex[:5]
    return "pvc-test-" + suffix, app + "-" + suffix


def stale_rbd_watcher(cfg, failed="node-b", app="nginx", before_kill=None):
    kube = labmod.kube_client(cfg)
    base_objects(kube)
    claim, app = claim_and_app(kube, app)
    pv_name, image = rbd_volume(cfg, kube, claim)
    wait_schedulable(kube, failed)
    deployment(kube, app, claim, failed)
    first = wait("the pod to run on %s" % failed, lambda: running_on(kube, app, failed))[0]
    extra = before_kill(kube, failed) if before_kill else {}
    labmod.kill_node(cfg, failed)
    if clockmod.clocks(clockmod.read_mode(cfg.dir)).eviction is None:
        wait_not_ready(kube, failed)
        pod, event = {"metadata": {"name": None}, "spec": {"nodeName": None}}, {"message": None}
    else:
        pod, event = wait_stuck(kube, app, "is still being used", "the replacement pod to be stuck", 90,
                                away_from=failed)
    watchers = json.loads(rbd_cli(cfg, "status", image, "--format", "json"))["watchers"]
    return dict(extra, **{
        "scenario": "stale-rbd-watcher", "namespace": NAMESPACE, "deployment": app, "pvc": claim, "pv": pv_name,
        "image": image, "failed_node": failed, "failed_node_ip": cfg.node_ip(failed),
        "old_pod": first["metadata"]["name"], "stuck_pod": pod["metadata"]["name"],
        "stuck_node": pod["spec"]["nodeName"], "event": event["message"],
        "watchers": [w["address"] for w in watchers]})


def wait_schedulable(kube, node):
    """Until `node` is Ready and carries no NoSchedule/NoExecute taint (a node just revived), so that a
    workload meant for it is placed there; a taint left by an earlier run is named."""
    def schedulable():
        obj = kube.find("nodes", node)
        conditions = (obj or {}).get("status", {}).get("conditions", []) or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        taints = [t for t in (obj or {}).get("spec", {}).get("taints", []) or []
                  if t.get("effect") in ("NoSchedule", "NoExecute")]
        return ready and not taints
    try:
        wait_until(schedulable, timeout=60, step=0.3, what="%s Ready and untainted" % node)
    except WaitTimeout:
        obj = kube.find("nodes", node) or {}
        raise labmod.LabError("scenario: %s is not schedulable (taints: %s): revive it, and remove what an "
                              "earlier run left" % (node, [t.get("key") for t in obj.get("spec", {}).get("taints")
                                                           or []]))


def wait_not_ready(kube, node):
    """Until the node lifecycle controller has marked the node unreachable."""
    def unreachable():
        obj = kube.find("nodes", node)
        return obj is not None and any(t.get("key") == "node.kubernetes.io/unreachable"
                                       for t in obj.get("spec", {}).get("taints", []) or [])
    wait("%s to be NotReady (unreachable)" % node, unreachable, timeout=120)


# How a node is frozen or cut off, and undone (lab.py): pause-node/resume-node, partition-node/heal-node.
FREEZE = {"pause": (labmod.pause_node, labmod.resume_node), "partition": (labmod.partition_node, labmod.heal_node)}


def node_watchers(cfg, image, node):
    """The addresses of `image`'s watchers that are clients of `node` (rbd status)."""
    watchers = json.loads(rbd_cli(cfg, "status", image, "--format", "json"))["watchers"]
    return [w["address"] for w in watchers if w["address"].split(":")[0] == cfg.node_ip(node)]


def wait_writing(cfg, node, image, after=0.0, timeout=60):
    """Until the stage holder of `image` on `node` has written successfully after `after` (epoch seconds):
    what it recorded (lab.holder_writes)."""
    def wrote():
        record = labmod.holder_writes(cfg, node, image)
        return record if record and (record.get("last_ok") or {}).get("time", 0) > after else None
    return wait("%s's client of %s to write" % (node, image), wrote, timeout=timeout)


def frozen_rbd_watcher(cfg, failed="node-b", app="nginx", how="pause", image_features=FROM_ENV,
                       rados_namespace=None, wait_expired=True):
    """Seed 000's state (stale_rbd_watcher's Deployment with an RBD claim, Running and writing on `failed`),
    then `failed` freezes (how="pause": a VM paused, SIGSTOP) or is cut off (how="partition": link down):
    its kubelet goes silent and its rbd client, alive, keeps the image open read-write. With wait_expired,
    until `rbd status` lists no client of `failed` (the OSD drops a watch nobody renews after
    osd_client_watch_timeout, 30 s; the lab leaves it at Ceph's default). Undone by resume-node or heal-node
    (the client watches and writes again) or revive-node (a reboot: it is gone)."""
    if how not in FREEZE:
        raise labmod.LabError("how must be one of %s, got %r" % (", ".join(sorted(FREEZE)), how))
    kube = labmod.kube_client(cfg)
    base_objects(kube)
    claim, app = claim_and_app(kube, app)
    pv_name, image = rbd_volume(cfg, kube, claim, image_features=image_features, rados_namespace=rados_namespace)
    wait_schedulable(kube, failed)
    deployment(kube, app, claim, failed)
    first = wait("the pod to run on %s" % failed, lambda: running_on(kube, app, failed))[0]
    wait_writing(cfg, failed, image)
    holder = labmod.holder_status(cfg, failed, image) or {}
    frozen_at = time.time()
    FREEZE[how][0](cfg, failed)
    wait_not_ready(kube, failed)
    expired_at = None
    if wait_expired:
        wait("%s's watch of %s to expire" % (failed, image), lambda: not node_watchers(cfg, image, failed),
             timeout=120)
        expired_at = time.time()
    watchers = json.loads(rbd_cli(cfg, "status", image, "--format", "json"))["watchers"]
    return {
        "scenario": "%s-rbd-watcher" % ("frozen" if how == "pause" else "partitioned"), "how": how,
        "namespace": NAMESPACE, "deployment": app, "pvc": claim, "pv": pv_name, "image": image,
        "image_features": features_of(cfg, image), "rados_namespace": rados_namespace,
        "failed_node": failed, "failed_node_ip": cfg.node_ip(failed), "old_pod": first["metadata"]["name"],
        "stuck_pod": None, "stuck_node": None, "event": None, "holder_address": holder.get("address"),
        "holder_pid": holder.get("pid"), "frozen_at": frozen_at, "watch_expired_at": expired_at,
        "watchers": [w["address"] for w in watchers]}


def partitioned_rbd_watcher(cfg, failed="node-b", app="nginx"):
    return frozen_rbd_watcher(cfg, failed, app, how="partition")


def statefulset(kube, name, claim_template, prefer_node):
    kube.create("statefulsets", {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name},
                     "annotations": {"lab.volfence.io/prefer-node": prefer_node}},
        "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.14.2",
                                                       "volumeMounts": [{"mountPath": "/data",
                                                                         "name": claim_template}]}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": claim_template},
                                           "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}]}},
        NAMESPACE)


def stale_rbd_watcher_statefulset(cfg, failed="node-b", app="web"):
    """A one-replica StatefulSet's pod on `failed`, whose kubelet dies with its RBD client alive."""
    kube = labmod.kube_client(cfg)
    base_objects(kube)
    if kube.find("statefulsets", app, NAMESPACE) is not None or \
            kube.find("persistentvolumeclaims", "data-%s-0" % app, NAMESPACE) is not None:
        app = app + "-" + uuid.uuid4().hex[:5]
    claim = "data-%s-0" % app  # what the StatefulSet's claim template names for ordinal 0
    pv_name, image = rbd_volume(cfg, kube, claim)
    wait_schedulable(kube, failed)
    statefulset(kube, app, "data", failed)
    first = wait("the pod to run on %s" % failed, lambda: running_on(kube, app, failed))[0]
    labmod.kill_node(cfg, failed)
    wait_not_ready(kube, failed)
    watchers = json.loads(rbd_cli(cfg, "status", image, "--format", "json"))["watchers"]
    return {"scenario": "stale-rbd-watcher-statefulset", "namespace": NAMESPACE, "statefulset": app,
            "pvc": claim, "pv": pv_name, "image": image, "failed_node": failed,
            "failed_node_ip": cfg.node_ip(failed), "old_pod": first["metadata"]["name"],
            "old_pod_uid": first["metadata"]["uid"], "watchers": [w["address"] for w in watchers]}


# A block CSI driver that needs attach, like AWS EBS: the lab's attach controller attaches its
# volumes, but only its own attacher (not in the lab) would detach them.
OTHER_BLOCK_DRIVER = "ebs.csi.aws.com"


def bound_volume(kube, claim, source, access="ReadWriteOnce", storage_class=""):
    """A PV with the given volume source, bound to a new PVC `claim`."""
    pv_name = "pvc-" + str(uuid.uuid4())
    kube.create("persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
        "spec": dict(source, accessModes=[access], capacity={"storage": "1Gi"}, persistentVolumeReclaimPolicy="Retain",
                     storageClassName=storage_class,
                     claimRef={"kind": "PersistentVolumeClaim", "namespace": NAMESPACE, "name": claim})})
    kube.patch("persistentvolumes", pv_name, {"status": {"phase": "Bound"}}, subresource="status")
    kube.create("persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": NAMESPACE},
        "spec": {"accessModes": [access], "resources": {"requests": {"storage": "1Gi"}},
                 "storageClassName": storage_class, "volumeName": pv_name}}, NAMESPACE)
    kube.patch("persistentvolumeclaims", claim, {"status": {"phase": "Bound", "accessModes": [access],
                                                            "capacity": {"storage": "1Gi"}}},
               NAMESPACE, subresource="status")
    return pv_name


def other_volumes_on(cfg, kube, node):
    """On `node`, beside stale-rbd-watcher's RBD pod: a pod with an EBS-like CSI block volume (attached), a
    pod with an in-tree NFS volume (nothing to attach), and a VolumeAttachment of a PV that does
    not exist (left behind by a deleted volume)."""
    suffix = uuid.uuid4().hex[:5]
    kube.apply("csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                              "metadata": {"name": OTHER_BLOCK_DRIVER}, "spec": {"attachRequired": True}})
    block_claim = "ebs-claim-" + suffix
    handle = "vol-0" + uuid.uuid4().hex[:16]
    block_pv = bound_volume(kube, block_claim, {"csi": {"driver": OTHER_BLOCK_DRIVER, "volumeHandle": handle,
                                                        "fsType": "ext4"}}, storage_class="gp3")
    block_app = "ebs-app-" + suffix
    deployment(kube, block_app, block_claim, node)
    nfs_claim = "nfs-claim-" + suffix
    nfs_pv = bound_volume(kube, nfs_claim, {"nfs": {"server": "nfs.lab.invalid", "path": "/exports/" + suffix}},
                          access="ReadWriteMany")
    nfs_app = "nfs-app-" + suffix
    deployment(kube, nfs_app, nfs_claim, node)
    block_pod = wait("the EBS-like pod to run on %s" % node, lambda: running_on(kube, block_app, node))[0]
    nfs_pod = wait("the NFS pod to run on %s" % node, lambda: running_on(kube, nfs_app, node))[0]
    block_va = attachment_name(handle, OTHER_BLOCK_DRIVER, node)
    wait("the EBS-like volume to be attached to %s" % node,
         lambda: (kube.find("volumeattachments", block_va) or {}).get("status", {}).get("attached"))
    orphan_pv = "pvc-" + str(uuid.uuid4())  # no such PersistentVolume
    orphan_va = attachment_name("vol-0" + uuid.uuid4().hex[:16], OTHER_BLOCK_DRIVER, node)
    kube.create("volumeattachments", {
        "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": {"name": orphan_va, "finalizers": ["external-attacher/" + OTHER_BLOCK_DRIVER.replace(".", "-")]},
        "spec": {"attacher": OTHER_BLOCK_DRIVER, "nodeName": node, "source": {"persistentVolumeName": orphan_pv}}})
    kube.patch("volumeattachments", orphan_va, {"status": {"attached": True}}, subresource="status")
    return {"other_driver": OTHER_BLOCK_DRIVER,
            "other": {"pv": block_pv, "pvc": block_claim, "volume_handle": handle, "volumeattachment": block_va,
                      "deployment": block_app, "pod": block_pod["metadata"]["name"]},
            "nfs": {"pv": nfs_pv, "pvc": nfs_claim, "deployment": nfs_app, "pod": nfs_pod["metadata"]["name"]},
            "orphan": {"pv": orphan_pv, "volumeattachment": orphan_va},
            "deployments": [block_app, nfs_app]}


def stale_rbd_watcher_mixed(cfg, failed="node-b"):
    state = stale_rbd_watcher(cfg, failed, before_kill=lambda kube, node: other_volumes_on(cfg, kube, node))
    state["scenario"] = "stale-rbd-watcher-mixed"
    state["deployments"] = [state["deployment"]] + state["deployments"]
    return state


def stale_rbd_lock(cfg, holder="node-b", app="index-api"):
    kube = labmod.kube_client(cfg)
    base_objects(kube)
    claim = app + "-pv-claim-" + uuid.uuid4().hex[:5]
    pv_name, image = rbd_volume(cfg, kube, claim, csi=False)
    # The old node still holds the in-tree plugin's lock and its client is alive.
    held = labmod.hold(cfg, holder, image, lock_id="kubelet_lock_magic_" + holder)
    name = app + "-" + claim[-5:]
    others = sorted(n for n in cfg.nodes if n != holder)
    deployment(kube, name, claim, others[0])

    pod, event = wait_stuck(kube, name, "is locked by other nodes", "the pod to be stuck on the lock", 60)
    return {"scenario": "stale-rbd-lock", "namespace": NAMESPACE, "deployment": name, "pvc": claim, "pv": pv_name,
            "image": image, "lock_id": "kubelet_lock_magic_" + holder, "locker": "client.%d" % held["instance_id"],
            "locker_address": held["address"], "lock_node": holder, "stuck_pod": pod["metadata"]["name"],
            "stuck_node": pod["spec"]["nodeName"], "event": event["message"]}


def stale_volumeattachment(cfg, node="node-b"):
    """A csi-unity style volume whose unique name looks like an attachment name."""
    kube = labmod.kube_client(cfg)
    driver = "csi-unity.dellemc.com"
    # <driver>^<handle> must be 68 characters: len(driver) + 1 + len(handle) == 68
    handle = "csiunity-" + uuid.uuid4().hex[:10] + "-iSCSI-APM0012345678-sv_42"
    handle = handle + "x" * (68 - len(driver) - 1 - len(handle))
    unique = driver + "^" + handle
    assert len(unique) == 68 and unique.startswith("csi-"), unique
    pv_name = "pvc-" + str(uuid.uuid4())
    kube.apply("csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                              "metadata": {"name": driver}, "spec": {"attachRequired": True}})
    kube.create("persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
        "spec": {"csi": {"driver": driver, "volumeHandle": handle, "fsType": "ext4"},
                 "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "8Gi"},
                 "persistentVolumeReclaimPolicy": "Delete"}})
    name = attachment_name(handle, driver, node)
    kube.create("volumeattachments", {
        "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": {"name": name, "finalizers": ["external-attacher/csi-unity-dellemc-com"]},
        "spec": {"attacher": driver, "nodeName": node, "source": {"persistentVolumeName": pv_name}}})
    kube.patch("volumeattachments", name, {"status": {"attached": True}}, subresource="status")
    # The workload moved on: its new pod waits for an attachment the old one still blocks.
    claim = "unity-pvc-" + uuid.uuid4().hex[:5]
    kube.patch("persistentvolumes", pv_name, {"spec": {"claimRef": {"kind": "PersistentVolumeClaim",
                                                                    "namespace": NAMESPACE, "name": claim}}})
    kube.patch("persistentvolumes", pv_name, {"status": {"phase": "Bound"}}, subresource="status")
    kube.create("persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": NAMESPACE},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Gi"}},
                 "volumeName": pv_name}}, NAMESPACE)
    kube.patch("persistentvolumeclaims", claim, {"status": {"phase": "Bound"}}, NAMESPACE, subresource="status")
    app = "unity-app-" + claim[-5:]
    moved_to = sorted(n for n in cfg.nodes if n != node)[0]
    deployment(kube, app, claim, moved_to)

    pod, event = wait_stuck(kube, app, "Multi-Attach error", "the pod to be stuck on the old attachment", 30)
    return {"scenario": "stale-volumeattachment", "driver": driver, "volume_handle": handle, "unique_name": unique,
            "unique_name_length": len(unique), "pv": pv_name, "pvc": claim, "volumeattachment": name,
            "node": node, "deployment": app, "stuck_pod": pod["metadata"]["name"],
            "stuck_node": pod["spec"]["nodeName"], "event": event["message"]}


def restart_fuse_plugin(cfg, node):
    """A FUSE CSI node plugin restart: every FUSE daemon it ran on the node dies."""
    killed = []
    root = labmod.kubelet_dir(cfg, node) + "/"
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                args = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if args and os.path.basename(args[0]) == "bindfs" and any(a.startswith(root) for a in args):
            os.kill(int(entry), signal.SIGKILL)
            killed.append(int(entry))
    return killed


def dead_fuse_mount(cfg, node="node-c", app="csi-s3-test-nginx"):
    kube = labmod.kube_client(cfg)
    suffix = uuid.uuid4().hex[:5]
    claim, name = "csi-s3-pvc-" + suffix, app + "-" + suffix
    pv_name = "pvc-" + str(uuid.uuid4())
    handle = "bucket-" + suffix
    kube.apply("csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                              "metadata": {"name": FUSE_DRIVER}, "spec": {"attachRequired": False}})
    kube.create("persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
        "spec": {"csi": {"driver": FUSE_DRIVER, "volumeHandle": handle,
                         "volumeAttributes": {"mounter": "s3fs"}},
                 "accessModes": ["ReadWriteMany"], "capacity": {"storage": "5Gi"},
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "csi-s3",
                 "claimRef": {"kind": "PersistentVolumeClaim", "namespace": NAMESPACE, "name": claim}}})
    kube.patch("persistentvolumes", pv_name, {"status": {"phase": "Bound"}}, subresource="status")
    kube.create("persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "namespace": NAMESPACE,
                     "annotations": {"volume.beta.kubernetes.io/storage-provisioner": FUSE_DRIVER}},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "5Gi"}},
                 "storageClassName": "csi-s3", "volumeName": pv_name}}, NAMESPACE)
    kube.patch("persistentvolumeclaims", claim, {"status": {"phase": "Bound"}}, NAMESPACE, subresource="status")
    kube.create("deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name},
                     "annotations": {"lab.volfence.io/prefer-node": node}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{
                                  "name": "nginx", "image": "nginx",
                                  "livenessProbe": {"exec": {"command": ["ls", "/var/lib/www/html"]},
                                                    "periodSeconds": 5, "failureThreshold": 3},
                                  "volumeMounts": [{"mountPath": "/var/lib/www/html", "name": "webroot"}]}],
                                  "volumes": [{"name": "webroot", "persistentVolumeClaim": {"claimName": claim}}]}}}},
        NAMESPACE)
    pod = wait("the pod to run on %s" % node, lambda: running_on(kube, name, node))[0]
    mount = os.path.join(labmod.kubelet_dir(cfg, node), "pods", pod["metadata"]["uid"], "volumes",
                         "kubernetes.io~csi", pv_name, "mount")
    killed = restart_fuse_plugin(cfg, node)
    event = wait("the liveness probe to fail",
                 lambda: stuck_events(kube, pod["metadata"]["name"], "Transport endpoint is not connected"))[0]
    return {"scenario": "dead-fuse-mount", "namespace": NAMESPACE, "deployment": name, "pvc": claim, "pv": pv_name,
            "driver": FUSE_DRIVER, "node": node, "pod": pod["metadata"]["name"], "pod_uid": pod["metadata"]["uid"],
            "kubelet_dir": labmod.kubelet_dir(cfg, node), "mount": mount, "killed_daemons": len(killed),
            "event": event["message"]}


SCENARIOS = {"stale-rbd-watcher": stale_rbd_watcher, "stale-rbd-watcher-mixed": stale_rbd_watcher_mixed,
             "stale-volumeattachment": stale_volumeattachment, "dead-fuse-mount": dead_fuse_mount,
             "stale-rbd-lock": stale_rbd_lock, "stale-rbd-watcher-statefulset": stale_rbd_watcher_statefulset,
             "frozen-rbd-watcher": frozen_rbd_watcher, "partitioned-rbd-watcher": partitioned_rbd_watcher}


# ----------------------------------------------------------------------------- many volumes

SCENARIO_LABEL = "lab.volfence.io/scenario"
STUCK = "is still being used"


def place_volumes(cfg, nodes, volumes, parallel=8):
    """`volumes` Deployments on each of `nodes`, each with a ReadWriteOnce claim on an RBD image
    of its own, and waits until all run there. Returns (id, selector, built, the Running pods by
    Deployment)."""
    kube = labmod.kube_client(cfg)
    base_objects(kube)
    for node in nodes:
        wait_schedulable(kube, node)
    ident = uuid.uuid4().hex[:6]
    labels = {SCENARIO_LABEL: ident}
    selector = "%s=%s" % (SCENARIO_LABEL, ident)
    plan = [(node, "vols-%s-%s-%03d" % (ident, node, i)) for node in nodes for i in range(volumes)]

    def make(item):
        node, app = item
        claim = app + "-claim"
        pv_name, image = rbd_volume(cfg, kube, claim, labels=labels)
        deployment(kube, app, claim, node, labels=labels)
        return {"node": node, "deployment": app, "pvc": claim, "pv": pv_name, "image": image}
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        built = list(pool.map(make, plan))
    by_app = {b["deployment"]: b for b in built}

    def all_running():
        pods = [p for p in kube.list("pods", NAMESPACE, label_selector=selector)
                if not p["metadata"].get("deletionTimestamp")]
        running = {p["metadata"]["labels"]["app"]: p for p in pods
                   if p.get("status", {}).get("phase") == "Running"
                   and p["spec"].get("nodeName") == by_app[p["metadata"]["labels"]["app"]]["node"]}
        return running if len(running) == len(built) else None
    first = wait("%d pods to run on %s" % (len(built), ", ".join(nodes)), all_running, timeout=60 + len(built))
    return ident, selector, built, first


def many_volumes(cfg, nodes, volumes, scenario):
    """place_volumes, then the nodes die together (kubelets gone, rbd clients alive) and every
    replacement pod is stuck on the surviving nodes with "is still being used" (clocks `never`: until
    the nodes are NotReady, their pods still on them, with no replacement)."""
    for node in nodes:
        if node not in cfg.nodes:
            raise labmod.LabError("unknown node %r (lab nodes: %s)" % (node, ", ".join(cfg.nodes)))
    if len(set(nodes)) != len(nodes):
        raise labmod.LabError("a node is named twice: %s" % ", ".join(nodes))
    if not set(cfg.nodes) - set(nodes):
        raise labmod.LabError("no node would be left to run the replacement pods: the lab has %s "
                              "(start it with more, e.g. LAB_NODES=%d)" % (", ".join(cfg.nodes), len(nodes) + 1))
    if not 1 <= volumes <= 500:
        raise labmod.LabError("volumes must be 1-500 per node, got %d" % volumes)
    started = time.time()
    kube = labmod.kube_client(cfg)
    ident, selector, built, first = place_volumes(cfg, nodes, volumes)
    for node in nodes:
        labmod.kill_node(cfg, node)

    def all_stuck():
        stuck_names = {e["involvedObject"]["name"] for e in kube.list("events", NAMESPACE)
                       if STUCK in e.get("message", "")}
        found = {}
        for pod in kube.list("pods", NAMESPACE, label_selector=selector):
            if pod["spec"].get("nodeName") in (None,) + tuple(nodes) or pod["metadata"].get("deletionTimestamp"):
                continue
            if pod["metadata"]["name"] in stuck_names:
                found[pod["metadata"]["labels"]["app"]] = pod
        return found if len(found) == len(built) else None
    if clockmod.clocks(clockmod.read_mode(cfg.dir)).eviction is None:
        for node in nodes:
            wait_not_ready(kube, node)
        stuck = {}
    else:
        stuck = wait("the %d replacement pods to be stuck" % len(built), all_stuck, timeout=90 + 2 * len(built))
    return {
        "scenario": scenario, "namespace": NAMESPACE, "id": ident, "label_selector": selector,
        "failed_nodes": list(nodes), "failed_node_ips": {n: cfg.node_ip(n) for n in nodes},
        "volumes_per_node": volumes, "volumes": len(built),
        "deployments": [b["deployment"] for b in built], "claims": [b["pvc"] for b in built],
        "pvs": [b["pv"] for b in built], "images": [b["image"] for b in built],
        "old_pods": [first[b["deployment"]]["metadata"]["name"] for b in built],
        "stuck_pods": [stuck[b["deployment"]]["metadata"]["name"] for b in built if b["deployment"] in stuck],
        "stuck_nodes": sorted({p["spec"]["nodeName"] for p in stuck.values()}),
        "build_seconds": round(time.time() - started, 1)}


def node_volumes(cfg, node="node-b", volumes=10):
    state = many_volumes(cfg, [node], volumes, "node-volumes")
    state["failed_node"] = node
    state["failed_node_ip"] = cfg.node_ip(node)
    return state


def rack(cfg, nodes=None, volumes=20):
    return many_volumes(cfg, list(nodes or cfg.nodes[1:]), volumes, "rack")


def remove_image(cfg, image, deadline):
    """rbd rm, retried while the image still has watchers (a stopped holder's watch lasts until
    Ceph times it out, about 30 s); True once removed or gone."""
    while True:
        proc = subprocess.run([cfg.tool("rbd"), "-c", cfg.conf, "-k", cfg.keyring, "-n", "client." + cfg.user,
                               "rm", "--no-progress", image], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60, env=labmod.clean_env())
        if proc.returncode == 0 or "No such file" in proc.stderr or "not found" in proc.stderr:
            return True
        if time.time() > deadline:
            return False
        time.sleep(1)


def clean_scenario(cfg, ident=None, images=True, wait_seconds=60):
    """Remove what node-volumes and rack built (one scenario's id, or all of them): Deployments,
    their pods, claims, volumes, the nodes' stage holders of those images, and the images.
    Nodes stay as they are (revive them with revive-node)."""
    kube = labmod.kube_client(cfg)
    selector = "%s=%s" % (SCENARIO_LABEL, ident) if ident else SCENARIO_LABEL
    for deploy in kube.list("deployments", NAMESPACE, label_selector=selector):
        kube.delete("deployments", deploy["metadata"]["name"], NAMESPACE)
    for pod in kube.list("pods", NAMESPACE, label_selector=selector):
        kube.delete("pods", pod["metadata"]["name"], NAMESPACE, grace_period=0)
    pvs = kube.list("persistentvolumes", label_selector=selector)
    for claim in kube.list("persistentvolumeclaims", NAMESPACE, label_selector=selector):
        kube.delete("persistentvolumeclaims", claim["metadata"]["name"], NAMESPACE)
    names = []
    clusters = csi_clusters(kube)
    for pv in pvs:
        attrs = pv["spec"].get("csi", {}).get("volumeAttributes", {})
        if attrs.get("imageName"):
            names.append(csi_image_spec(pv, clusters))
        kube.delete("persistentvolumes", pv["metadata"]["name"])
    for image in names:
        labmod.release(cfg, image=image)
    left = []
    if images and names:
        deadline = time.time() + wait_seconds
        with ThreadPoolExecutor(max_workers=8) as pool:
            left = [i for i, ok in zip(names, pool.map(lambda i: remove_image(cfg, i, deadline), names)) if not ok]
    return {"deployments_and_claims": len(pvs), "images": len(names) - len(left) if images else 0,
            "images_left": left if images else names}


SCENARIOS["node-volumes"] = node_volumes
SCENARIOS["rack"] = rack

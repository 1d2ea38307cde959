"""stuck_pods_info through ansible, against the emulator (the lab's when KUBECONFIG is set, or a
real cluster: see README.md): it finds the stuck pods of a namespace among many healthy ones,
reads the pods a Warning names, lists the volumes of a node that is not Ready, and asks the API
only with field selectors the real API supports, page by page."""

import threading
import time
import urllib.parse

import pytest

from k8s_helpers import TEST_LABEL, VAS, KubeError, last_seq, module_requests

DRIVER = "rbd.csi.ceph.com"
HEALTHY = 23


class Heartbeat(threading.Thread):
    """Renews the Lease of a test node every half second, as its kubelet would: on the lab, the node
    lifecycle controller marks a node without a fresh Lease NotReady and evicts its pods."""

    def __init__(self, kube, node):
        threading.Thread.__init__(self, name="vft-heartbeat", daemon=True)
        self.kube, self.node, self.stop = kube, node, threading.Event()
        self.path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + node
        self.beat()

    def beat(self):
        renew = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        if self.kube.get(self.path) is None:
            self.kube.create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": self.node},
                "spec": {"holderIdentity": self.node, "leaseDurationSeconds": 40, "renewTime": renew}})
        else:
            self.kube.patch(self.path, {"spec": {"renewTime": renew}})

    def run(self):
        while not self.stop.wait(0.5):
            try:
                self.beat()
            except KubeError:
                pass


@pytest.fixture
def world(kube, label, cleanup):
    ns = "vft-%s" % label
    w = dict(ns=ns, image="rbd/csi-vol-%s" % label)

    def meta(name, **extra):
        out = {"name": name, "labels": {TEST_LABEL: label}}
        out.update(extra)
        return out

    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)})
    cleanup.append("/api/v1/namespaces/" + ns)
    base = "/api/v1/namespaces/%s/" % ns
    for name, ip, ready in (("a", "198.51.100.21", "True"), ("b", "198.51.100.22", "Unknown")):
        node = "vft-%s-%s" % (label, name)
        w[name] = node
        cleanup.append("/api/v1/nodes/" + node)
        kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": meta(node)})
        if ready == "True":
            w["heartbeat"] = Heartbeat(kube, node)
            w["heartbeat"].start()
            cleanup.append(w["heartbeat"].path)
        kube.status("/api/v1/nodes/" + node, {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": node}],
            "conditions": [{"type": "Ready", "status": ready, "reason": "test"}]})
    w["pv"] = "vft-%s-pv" % label
    cleanup.append("/api/v1/persistentvolumes/" + w["pv"])
    kube.create("/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta(w["pv"]),
        "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                 "persistentVolumeReclaimPolicy": "Retain",
                 "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": "data"},
                 "csi": {"driver": DRIVER, "volumeHandle": "0001-0009-rook-0000000000000001-%s" % label,
                         "volumeAttributes": {"pool": "rbd", "imageName": "csi-vol-%s" % label}}}})
    kube.create(base + "persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("data"),
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": w["pv"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    w["va"] = "csi-vft-%s" % label
    cleanup.append(VAS + "/" + w["va"])
    kube.create(VAS, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": meta(w["va"]),
                      "spec": {"attacher": DRIVER, "nodeName": w["b"], "source": {"persistentVolumeName": w["pv"]}}})

    def pod(name, node, phase, waiting=None, claim=None):
        spec = {"nodeName": node, "containers": [{"name": "main", "image": "registry.invalid/none:0"}]}
        if claim:
            spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        created = kube.create(base + "pods", {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name), "spec": spec})
        state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
        kube.status(base + "pods/" + name, {"phase": phase, "containerStatuses": [
            {"name": "main", "ready": False, "restartCount": 1 if phase == "Running" else 0, "state": state}]})
        return created

    def warning(created, reason, message):
        kube.create(base + "events", {
            "apiVersion": "v1", "kind": "Event", "metadata": meta("%s.%s" % (created["metadata"]["name"], reason.lower())),
            "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": created["metadata"]["name"],
                               "uid": created["metadata"]["uid"]},
            "reason": reason, "message": message, "type": "Warning", "count": 1})

    # node b died running "old"; its replacement "new" waits on node a for the image b still watches
    pod("old", w["b"], "Running", claim="data")
    warning(pod("new", w["a"], "Pending", "ContainerCreating", claim="data"), "FailedMount",
            "MountVolume.MountDevice failed: rpc error: code = Internal desc = rbd image %s is still being used"
            % w["image"])
    # a Running pod whose container cannot be created again: its FUSE mount died
    warning(pod("fuse", w["a"], "Running", "CreateContainerError"), "Failed",
            "Error: stat /var/lib/kubelet/pods/x/volumes/fuse: transport endpoint is not connected")
    # a Running pod with an unrelated warning, and many healthy ones: none of them is read
    warning(pod("probe", w["a"], "Running"), "Unhealthy", "Readiness probe failed")
    for i in range(HEALTHY):
        pod("web-%02d" % i, w["a"], "Running")
    yield w
    w["heartbeat"].stop.set()
    w["heartbeat"].join(5)


def test_finds_the_stuck_pods_among_healthy_ones_with_selectors_and_pages(ansible, kube, world):
    since = last_seq(kube)
    result = ansible.run("stuck_pods_info", {"threshold": 0, "namespaces": [world["ns"]], "page_size": 5})
    assert result["_rc"] == 0 and not result["changed"], result
    stuck = dict((d["pod"], d) for d in result["stuck"])
    assert sorted(stuck) == ["fuse", "new"]
    assert stuck["new"]["incident"] == "stale-rbd-watcher" and stuck["new"]["node"] == world["a"]
    assert stuck["fuse"]["incident"] == "dead-fuse-mount"
    assert result["images"] == {"rbd_csi": [world["image"]], "rbd_intree": []}
    assert result["node_addresses"][world["b"]] == ["198.51.100.22"]
    (down,) = [n for n in result["nodes_not_ready"] if n["node"] == world["b"]]
    (volume,) = down["volumes"]
    # (on the lab, its attach/detach controller may have attached the volume for "old" too)
    assert volume["name"] == world["pv"] and volume["rbd"] and world["va"] in volume["attachments"]
    assert volume["pods"] == ["%s/old" % world["ns"]]
    assert "node_failover -e failed_node=%s fences" % world["b"] in volume["note"]
    # What the classification reads, and nothing more: the two stuck pods, their warnings, the claim.
    objects = result["objects"]
    assert sorted(p["metadata"]["name"] for p in objects["pods"]) == ["fuse", "new"]
    # (on the lab, its attach/detach controller adds a Multi-Attach warning for "new")
    assert set(["Failed", "FailedMount"]) <= set(e["reason"] for e in objects["events"])
    assert set((e["type"], e["involvedObject"]["name"]) for e in objects["events"]) <= set(
        [("Warning", "fuse"), ("Warning", "new")])
    assert [c["metadata"]["name"] for c in objects["pvcs"]] == ["data"]
    assert [v["metadata"]["name"] for v in objects["volumeattachments"] if v["metadata"]["name"] == world["va"]]
    # Pods read: new (not started), fuse (named by a warning), old (on the dead node); not the 24 Running ones.
    assert result["listed"]["pods"] == 3 and result["listed"]["pvcs"] == 1
    requests = module_requests(kube, since)
    if requests is None:
        return  # a real cluster has no request log
    pods = [r for r in requests if "/pods" in r["path"]]
    assert pods and all(r["method"] == "GET" for r in requests)
    lists = [r for r in pods if r["path"] == "/api/v1/namespaces/%s/pods" % world["ns"]]
    selectors = sorted(set(urllib.parse.parse_qs(r["query"]).get("fieldSelector", [""])[0] for r in lists))
    assert selectors == ["spec.nodeName=%s" % world["b"],
                         "status.phase!=Running,status.phase!=Succeeded,status.phase!=Failed"], selectors
    assert all(urllib.parse.parse_qs(r["query"]).get("limit") == ["5"] for r in lists)
    reads = sorted(r["path"] for r in pods if r not in lists)
    assert reads == ["/api/v1/namespaces/%s/pods/fuse" % world["ns"]]
    events = [r for r in requests if r["path"].endswith("/events")]
    # the pods' warnings in the namespace asked for; the collection's own Events there and in default
    assert sorted((r["path"], urllib.parse.parse_qs(r["query"])["fieldSelector"][0]) for r in events) == sorted([
        ("/api/v1/namespaces/%s/events" % world["ns"], "involvedObject.kind=Pod,type=Warning"),
        ("/api/v1/namespaces/%s/events" % world["ns"], "reportingComponent=volfence.csi"),
        ("/api/v1/namespaces/default/events", "reportingComponent=volfence.csi")]), events
    # More VolumeAttachments than a page: read page by page (limit and continue).
    vas = [r for r in requests if r["path"] == VAS]
    if result["listed"]["volumeattachments"] > 5:
        assert len(vas) > 1 and any("continue" in urllib.parse.parse_qs(r["query"]) for r in vas)


def test_nothing_stuck_below_the_threshold_and_bad_input_reads_nothing(ansible, kube, world):
    result = ansible.run("stuck_pods_info", {"threshold": 3600, "namespaces": [world["ns"]]})
    assert result["_rc"] == 0, result
    # the FUSE pod is stuck whatever its age; the new pod has not waited an hour
    assert [d["pod"] for d in result["stuck"]] == ["fuse"]
    since = last_seq(kube)
    for args, message in (({"namespaces": ["Not_A_Namespace"]}, "is not a namespace name"),
                          ({"threshold": -1}, "threshold"), ({"page_size": 0}, "page_size")):
        bad = ansible.run("stuck_pods_info", args)
        assert bad["_rc"] != 0 and message in bad["msg"], bad
        assert "Traceback" not in bad["msg"]
    requests = module_requests(kube, since)
    assert not requests  # refused before anything was read


def test_a_namespace_without_pods_is_not_an_error(ansible, world):
    result = ansible.run("stuck_pods_info", {"threshold": 0, "namespaces": ["vft-nothing-here"]})
    assert result["_rc"] == 0, result
    assert result["stuck"] == [] and result["objects"]["pods"] == []

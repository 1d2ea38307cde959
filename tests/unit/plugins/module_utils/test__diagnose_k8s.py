# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reads of stuck_pods_info (_diagnose_k8s.gather) against a fake API server that applies
field selectors and pages like the real one: what gather() returns, fed to the classification,
gives what the classification gives on the whole cluster's lists (the old playbook's way)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import examples
from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import diagnose, pv_rbd_image, table
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import pod_claims
from ansible_collections.volfence.csi.plugins.module_utils._k8s.gather import (
    FIELD_SELECTORS,
    POD_WARNINGS,
    PODS_NOT_STARTED,
    attachments_concerned,
    check_namespace,
    claim_refs,
    events_of,
    gather,
    gather_failed_nodes,
    pods_named_by_warnings,
    slim,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import resource_path
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import (
    down_node_volumes,
    failover_volumes,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import failover_preflight

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import NOW
OLD = "2026-11-21T05:50:00Z"
NEW = "2026-11-21T05:59:58Z"

KINDS = {"pods": "Pod", "events": "Event", "nodes": "Node", "persistentvolumeclaims": "PersistentVolumeClaim",
         "persistentvolumes": "PersistentVolume", "volumeattachments": "VolumeAttachment", "leases": "Lease",
         "networkfences": "NetworkFence"}


def _field(obj, path):
    cur = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


class FakeApi(object):
    """Lists with field selectors (= and !=, only the fields the real API supports for the kind)
    and limit/continue; GET by name; counts requests and objects sent."""

    def __init__(self, objects, version="v1.30.2"):
        self.objects = objects  # plural -> list
        self.version = version
        self.requests = []
        self.sent = 0

    def server_version(self):
        self.requests.append(("GET", "/version", None))
        return {"gitVersion": self.version}

    def served(self, group, version, plural):
        """Discovery, one request: a kind is served when the test's cluster has a list of it."""
        self.requests.append(("GET", "/apis/%s/%s" % (group, version), None))
        return plural in self.objects

    def _parse(self, path):
        parts = path.strip("/").split("/")
        namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else None
        tail = parts[parts.index("namespaces") + 2:] if namespace else parts[2 if parts[0] == "api" else 3:]
        return namespace, tail[0], (tail[1] if len(tail) > 1 else None)

    def list(self, path, what=None, label_selector=None, field_selector=None, page=500):
        namespace, plural, _name = self._parse(path)
        assert label_selector is None
        reqs = []
        for part in (field_selector or "").split(","):
            if not part:
                continue
            op = "!=" if "!=" in part else "="
            field, value = part.split(op, 1)
            supported = FIELD_SELECTORS.get(KINDS[plural], ("metadata.name", "metadata.namespace"))
            assert field in supported, "the real API refuses field selector %s on %s" % (field, plural)
            reqs.append((field, op, value))
        items = [o for o in self.objects.get(plural, [])
                 if (namespace is None or o["metadata"].get("namespace") == namespace)
                 and all((_field(o, f) == v) == (op == "=") for f, op, v in reqs)]
        out, start = [], 0
        while True:  # one request per page, as KubeApi.list does
            self.requests.append(("LIST", path, field_selector))
            chunk = items[start:start + page]
            out.extend(copy.deepcopy(chunk))
            self.sent += len(chunk)
            start += page
            if start >= len(items):
                return out

    def get(self, path, what=None, missing_ok=False):
        namespace, plural, name = self._parse(path)
        self.requests.append(("GET", path, None))
        for obj in self.objects.get(plural, []):
            if obj["metadata"]["name"] == name and obj["metadata"].get("namespace") == namespace:
                self.sent += 1
                return copy.deepcopy(obj)
        assert missing_ok
        return None


# --------------------------------------------------------------------------- building clusters

def node(name, ready="True", ip=None):
    return {"metadata": {"name": name, "managedFields": [{"manager": "kubelet"}]},
            "status": {"addresses": [{"type": "InternalIP", "address": ip or "10.0.0.%d" % (1 + abs(hash(name)) % 200)}],
                       "conditions": [{"type": "Ready", "status": ready}], "images": [{"names": ["big"]}]}}


def pod(ns, name, node_name, claims=(), phase="Pending", waiting=None, created=OLD, deleting=False):
    meta = {"name": name, "namespace": ns, "uid": "uid-%s-%s" % (ns, name), "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = NEW
    status = {"phase": phase}
    if waiting:
        status["containerStatuses"] = [{"name": "c", "state": {"waiting": {"reason": waiting}}}]
    elif phase == "Running":
        status["containerStatuses"] = [{"name": "c", "state": {"running": {}}}]
    return {"metadata": meta, "spec": {"nodeName": node_name,
                                       "volumes": [{"name": "v%d" % i, "persistentVolumeClaim": {"claimName": c}}
                                                   for i, c in enumerate(claims)]},
            "status": status}


def pvc(ns, name, pv):
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"volumeName": pv}}


def pv(name, kind, index):
    if kind == "rbd-csi":
        spec = {"csi": {"driver": "rbd.csi.ceph.com", "volumeHandle": "0001-0009-rook-0000000000000001-%04d" % index,
                        "volumeAttributes": {"pool": "rbd", "imageName": "csi-vol-%04d" % index}}}
    elif kind == "rbd-intree":
        spec = {"rbd": {"pool": "rbd", "image": "kube-%04d" % index}}
    elif kind == "csi":
        spec = {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-%04d" % index}}
    else:
        spec = {"nfs": {"server": "nfs.example", "path": "/x%d" % index}}
    return {"metadata": {"name": name}, "spec": spec}


def va(name, pv_name, node_name):
    return {"metadata": {"name": name}, "spec": {"attacher": "rbd.csi.ceph.com", "nodeName": node_name,
                                                 "source": {"persistentVolumeName": pv_name}}}


def event(ns, pod_obj_name, uid, reason, message, type_="Warning", kind="Pod", index=0):
    return {"metadata": {"name": "%s.%d" % (pod_obj_name, index), "namespace": ns},
            "involvedObject": {"kind": kind, "name": pod_obj_name, "namespace": ns, "uid": uid},
            "reason": reason, "message": message, "type": type_}


MESSAGES = ["rbd image rbd/x is still being used", "Multi-Attach error for volume", "rbd: image x is locked by other nodes",
            "stat /var/lib/kubelet/x: transport endpoint is not connected", "something else"]


@st.composite
def clusters(draw):
    """A cluster where kubelet behaves as it does: a container that cannot be created is
    reported by a Warning "Failed" event, a Running pod (a container that ran before) that waits
    for its volume by a FailedMount event; the evidence messages come in Warning events."""
    node_names = ["node-%d" % i for i in range(draw(st.integers(1, 4)))]
    nodes = [node(n, draw(st.sampled_from(["True", "True", "False", "Unknown"])), "10.0.0.%d" % (i + 1))
             for i, n in enumerate(node_names)]
    pvs, pvcs, vas, pods, events = [], [], [], [], []
    namespaces = ["default", "shop"]
    for i in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["rbd-csi", "rbd-intree", "csi", "other"]))
        ns = draw(st.sampled_from(namespaces))
        pv_name = "pv-%d" % i
        if draw(st.booleans()) or i == 0:
            pvs.append(pv(pv_name, kind, i))
        pvcs.append(pvc(ns, "claim-%d" % i, pv_name if draw(st.integers(0, 5)) else None))
        for node_name in draw(st.lists(st.sampled_from(node_names), max_size=2, unique=True)):
            vas.append(va("csi-%d-%s" % (i, node_name), pv_name, node_name))
    claims = [(c["metadata"]["namespace"], c["metadata"]["name"]) for c in pvcs]
    for i in range(draw(st.integers(0, 10))):
        ns = draw(st.sampled_from(namespaces))
        own = [c for n, c in claims if n == ns]
        chosen = draw(st.lists(st.sampled_from(own), max_size=2, unique=True)) if own else []
        if draw(st.integers(0, 4)) == 0:
            chosen.append("claim-missing")
        phase = draw(st.sampled_from(["Pending", "Running", "Running", "Succeeded", "Failed", "Unknown"]))
        waiting = draw(st.sampled_from([None, "ContainerCreating", "CreateContainerError", "CreateContainerConfigError",
                                        "ImagePullBackOff"]))
        if phase in ("Succeeded", "Failed"):
            waiting = None  # a finished pod has no container waiting to start
        name = "pod-%d" % i
        p = pod(ns, name, draw(st.sampled_from(node_names + [None])), chosen, phase, waiting,
                draw(st.sampled_from([OLD, NEW])), draw(st.integers(0, 5)) == 0)
        pods.append(p)
        uid = p["metadata"]["uid"]
        if waiting in ("CreateContainerError", "CreateContainerConfigError"):
            events.append(event(ns, name, uid, "Failed", "Error: failed to create the container", index=90))
        elif waiting == "ContainerCreating" and phase == "Running":
            # a restarted container waiting for its volume (a new sandbox): kubelet says why
            events.append(event(ns, name, uid, "FailedMount", "MountVolume.SetUp failed", index=91))
        for j in range(draw(st.integers(0, 2))):
            events.append(event(ns, name, uid, draw(st.sampled_from(["FailedMount", "FailedAttachVolume", "Failed",
                                                                     "Unhealthy", "BackOff"])),
                                draw(st.sampled_from(MESSAGES)), index=j))
        if draw(st.booleans()):
            events.append(event(ns, name, uid, "Started", "Started container c", type_="Normal", index=50))
    return dict(nodes=nodes, pods=pods, persistentvolumeclaims=pvcs, persistentvolumes=pvs,
                volumeattachments=vas, events=events)


def whole_cluster_way(objects, threshold, version="v1.30.2", namespaces=None):
    """What the old playbook computed: the filters on the whole lists."""
    pods = [p for p in objects["pods"] if not namespaces or p["metadata"]["namespace"] in namespaces]
    return (diagnose(pods, events=objects["events"], pvcs=objects["persistentvolumeclaims"], pvs=objects["persistentvolumes"],
                     vas=objects["volumeattachments"], nodes=objects["nodes"], git_version=version, threshold=threshold, now=NOW),
            down_node_volumes(objects["nodes"], pods=pods, pvcs=objects["persistentvolumeclaims"],
                              pvs=objects["persistentvolumes"], attachments=objects["volumeattachments"]))


def selective_way(objects, threshold, namespaces=None, page=3):
    api = FakeApi(objects)
    got = gather(api, resource_path, namespaces=namespaces, threshold=threshold, page=page, now=NOW)
    small = got["objects"]
    again = diagnose(small["pods"], events=small["events"], pvcs=small["pvcs"], pvs=small["pvs"], vas=small["volumeattachments"],
                     nodes=small["nodes"], git_version=got["server_version"], threshold=threshold, now=NOW)
    return got, again, api


@settings(max_examples=examples(400), derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from([0, 120]), st.sampled_from([None, ["shop"], ["default", "shop"]]))
def test_the_selective_reads_classify_as_the_whole_lists_do(objects, threshold, namespaces):
    expected, expected_down = whole_cluster_way(objects, threshold, namespaces=namespaces)
    got, again, _api = selective_way(objects, threshold, namespaces)
    assert got["stuck"] == expected
    assert again == expected
    assert got["nodes_not_ready"] == expected_down
    csi = []
    for entry in expected:
        for volume in entry["volumes"]:
            if volume["kind"] == "rbd-csi" and volume["image"] not in csi:
                csi.append(volume["image"])
    assert got["images"]["rbd-csi"] == csi


@settings(max_examples=examples(100), derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_with_watchers_the_small_inputs_classify_as_the_whole_lists_do(objects):
    got, _again, _api = selective_way(objects, 0)
    watchers = dict((img, [{"address": "10.0.0.1:0/1"}]) for img in got["images"]["rbd-csi"])
    locks = dict((img, [{"id": "kubelet_lock_magic_node-0", "locker": "client.1", "address": "10.0.0.1:0/2"}])
                 for img in got["images"]["rbd-intree"])
    small = got["objects"]
    expected = diagnose(objects["pods"], events=objects["events"], pvcs=objects["persistentvolumeclaims"],
                        pvs=objects["persistentvolumes"], vas=objects["volumeattachments"], nodes=objects["nodes"],
                        watchers=watchers, locks=locks, git_version="v1.30.2", threshold=0, now=NOW)
    assert diagnose(small["pods"], events=small["events"], pvcs=small["pvcs"], pvs=small["pvs"], vas=small["volumeattachments"],
                    nodes=small["nodes"], watchers=watchers, locks=locks, git_version="v1.30.2", threshold=0,
                    now=NOW) == expected


def big_cluster(workloads, stuck=40):
    """`workloads` healthy pods with claims, PVs and attachments on Ready nodes; `stuck` more whose
    node-down predecessor is Terminating on a dead node."""
    nodes = [node("node-%02d" % i, ip="10.0.1.%d" % (i + 1)) for i in range(20)] + [node("dead", "Unknown", "10.0.2.1")]
    objects = dict(nodes=nodes, pods=[], persistentvolumeclaims=[], persistentvolumes=[], volumeattachments=[],
                   events=[])
    for i in range(workloads + stuck):
        ns = "ns-%d" % (i % 10)
        objects["persistentvolumeclaims"].append(pvc(ns, "data-%d" % i, "pv-%d" % i))
        objects["persistentvolumes"].append(pv("pv-%d" % i, "rbd-csi", i))
        if i < workloads:
            where = "node-%02d" % (i % 20)
            objects["pods"].append(pod(ns, "app-%d" % i, where, ["data-%d" % i], "Running"))
            objects["events"].append(event(ns, "app-%d" % i, "uid-%s-app-%d" % (ns, i), "Started", "Started",
                                           type_="Normal"))
        else:
            where = "node-%02d" % (i % 20)
            objects["pods"].append(pod(ns, "old-%d" % i, "dead", ["data-%d" % i], "Running", deleting=True))
            new = pod(ns, "new-%d" % i, where, ["data-%d" % i], "Pending", "ContainerCreating")
            objects["pods"].append(new)
            objects["events"].append(event(ns, "new-%d" % i, new["metadata"]["uid"], "FailedMount",
                                           "rbd image rbd/csi-vol-%04d is still being used" % i))
            where = "dead"
        objects["volumeattachments"].append(va("csi-%d" % i, "pv-%d" % i, where))
    return objects


@pytest.mark.parametrize("workloads", [200, 2000])
def test_reads_grow_with_the_stuck_pods_not_with_the_cluster(workloads):
    objects = big_cluster(workloads)
    got, again, api = selective_way(objects, 120, page=500)
    assert len(got["stuck"]) == 40 and all(d["incident"] == "stale-rbd-watcher" for d in got["stuck"])
    assert again == got["stuck"]
    assert [n["node"] for n in got["nodes_not_ready"]] == ["dead"]
    # Pods: 40 stuck + 40 on the dead node; events: the 40 warnings; claims and PVs: 40 each.
    assert got["listed"] == dict(pods=80, events=40, nodes=21, pvcs=40, pvs=40, volumeattachments=workloads + 40,
                                 networkfences=0)
    # What is returned does not grow with the cluster either.
    assert len(got["objects"]["volumeattachments"]) == 40
    assert all("images" not in n["status"] and "managedFields" not in n["metadata"] for n in got["objects"]["nodes"])


def test_lists_are_paged_and_use_selectors_the_real_api_supports():
    objects = big_cluster(30, stuck=7)
    got, _again, api = selective_way(objects, 120, page=4)
    lists = [r for r in api.requests if r[0] == "LIST"]
    assert ("LIST", "/api/v1/pods", PODS_NOT_STARTED) in lists
    assert ("LIST", "/api/v1/events", POD_WARNINGS) in lists
    assert ("LIST", "/api/v1/pods", "spec.nodeName=dead") in lists
    # 37 attachments in pages of 4: 10 requests
    assert len([r for r in lists if r[1] == "/apis/storage.k8s.io/v1/volumeattachments"]) == 10
    assert len(got["stuck"]) == 7


def test_namespaces_are_read_one_by_one():
    objects = big_cluster(20, stuck=10)
    got, _again, api = selective_way(objects, 120, namespaces=["ns-3", "ns-1"])
    paths = set(r[1] for r in api.requests if r[0] == "LIST")
    assert "/api/v1/namespaces/ns-1/pods" in paths and "/api/v1/namespaces/ns-3/events" in paths
    assert "/api/v1/pods" not in paths and "/api/v1/events" not in paths
    assert sorted(set(d["namespace"] for d in got["stuck"])) == ["ns-1", "ns-3"]


def test_a_running_pod_is_read_only_when_a_warning_names_it():
    objects = dict(nodes=[node("a")], persistentvolumeclaims=[], persistentvolumes=[], volumeattachments=[],
                   pods=[pod("default", "fuse", "a", phase="Running", waiting="CreateContainerError"),
                         pod("default", "fine", "a", phase="Running")],
                   events=[event("default", "fuse", "uid-default-fuse", "Failed",
                                 "Error: stat /mnt: transport endpoint is not connected")])
    got, _again, api = selective_way(objects, 120)
    assert [d["pod"] for d in got["stuck"]] == ["fuse"] and got["stuck"][0]["incident"] == "dead-fuse-mount"
    assert ("GET", "/api/v1/namespaces/default/pods/fuse", None) in api.requests
    assert not any("fine" in r[1] for r in api.requests)


def test_pods_named_by_warnings():
    events = [event("a", "p1", "u1", "Failed", "Error: x"),
              event("a", "p2", "u2", "Unhealthy", "Readiness probe failed"),
              event("b", "p3", "u3", "Unhealthy", "ls: transport endpoint is not connected"),
              event("a", "p4", "u4", "FailedMount", "x", kind="Node")]
    assert pods_named_by_warnings(events) == [("a", "p1"), ("b", "p3")]
    assert pods_named_by_warnings(None) == []


def test_events_of_claims_and_attachments():
    p = pod("a", "p", "n", ["c1", "c2"])
    e1 = event("a", "p", p["metadata"]["uid"], "FailedMount", "m")
    e2 = event("a", "p", "another-uid", "FailedMount", "m")
    e3 = event("a", "q", "uq", "FailedMount", "m")
    e4 = {"involvedObject": {"name": "p"}, "message": "no uid"}
    assert events_of([p], [e1, e2, e3, e4]) == [e1, e4]
    eph = pod("a", "e", "n")
    eph["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {}}]
    assert claim_refs([p, eph]) == [("a", "c1"), ("a", "c2"), ("a", "e-scratch")]
    vas = [va("x", "pv-1", "n1"), va("y", "pv-2", "dead"), va("z", "pv-3", "n1")]
    assert attachments_concerned(vas, {"pv-1"}, {"dead"}) == vas[:2]


def test_slim_drops_only_what_no_rule_reads():
    n = node("a")
    n["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "keep": "1"}
    out = slim(n)
    assert "managedFields" not in out["metadata"] and "images" not in out["status"]
    assert out["metadata"]["annotations"] == {"keep": "1"}
    assert out["status"]["addresses"] == n["status"]["addresses"]
    assert "managedFields" in n["metadata"]  # the input is left as it was
    assert slim("x") == "x"


@pytest.mark.parametrize("name", ["default", "a-1", "x" * 63])
def test_check_namespace_accepts(name):
    assert check_namespace(name) == name


@pytest.mark.parametrize("name", ["", "Default", "-a", "a_b", "x" * 64, None, "a/b"])
def test_check_namespace_refuses_in_the_users_words(name):
    with pytest.raises(ValueError, match="is not a namespace name"):
        check_namespace(name)


# --------------------------------------------------------------------------- failed_nodes_info (node_failover's reads)

def lease(name, renewed):
    return {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": renewed}}


@settings(max_examples=examples(300), derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_the_failover_reads_decide_as_the_whole_lists_do(objects, data):
    names = [n["metadata"]["name"] for n in objects["nodes"]]
    objects["leases"] = [lease(n, data.draw(st.sampled_from([OLD, NEW]))) for n in names
                         if data.draw(st.integers(0, 4))]
    failed = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    force = data.draw(st.booleans())
    api = FakeApi(objects)
    got = gather_failed_nodes(api, resource_path, failed, lease_grace=120, force=force, page=2, now=NOW)
    assert got["missing"] == []
    assert got["preflight"] == failover_preflight(failed, objects["nodes"], leases=objects["leases"], lease_grace=120, force=force, now=NOW)
    expected = failover_volumes(failed, pods=objects["pods"], pvcs=objects["persistentvolumeclaims"],
                                pvs=objects["persistentvolumes"], attachments=objects["volumeattachments"])
    assert got["volumes"] == expected
    own = [v["image"] for v in expected if v["image"]]
    # the waiting pods elsewhere, from the whole lists: pods not started off the failed nodes, their RBD claims
    claims = dict(((c["metadata"]["namespace"], c["metadata"]["name"]), c) for c in objects["persistentvolumeclaims"])
    pvs = dict((v["metadata"]["name"], v) for v in objects["persistentvolumes"])
    waiting = []
    for pod in objects["pods"]:
        if pod.get("status", {}).get("phase") in ("Running", "Succeeded", "Failed") or \
                pod["spec"].get("nodeName") in failed:
            continue
        for claim in pod_claims(pod):
            pvc = claims.get((pod["metadata"]["namespace"], claim))
            pv = pvs.get(((pvc or {}).get("spec") or {}).get("volumeName"))
            image = pv_rbd_image(pv)[1] if pv else None
            if image:
                waiting.append(("%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]),
                                "%s/%s" % (pod["metadata"]["namespace"], claim), image))
    assert sorted((w["pod"], w["claim"], w["image"]) for w in got["waiting"]) == sorted(waiting)
    assert got["images"][:len(set(own))] == sorted(set(own), key=got["images"].index)
    assert set(got["images"]) == set(own) | set(w[2] for w in waiting)
    assert len(got["images"]) == len(set(got["images"]))
    assert all(p["spec"]["nodeName"] in failed for p in got["pods"])


def test_the_failover_reads_grow_with_the_failed_node_not_with_the_cluster():
    small, big = big_cluster(200), big_cluster(2000)
    answers = []
    for objects in (small, big):
        objects["leases"] = [lease(n["metadata"]["name"], OLD) for n in objects["nodes"]]
        api = FakeApi(objects)
        got = gather_failed_nodes(api, resource_path, ["dead"], page=500, now=NOW)
        answers.append((got, api))
    for got, api in answers:
        assert got["preflight"]["refused"] is None
        # The dead node's 40 pods, their 40 claims and 40 PVs, read by name; every attachment listed;
        # the 40 replacements waiting elsewhere (pods not started), on the same 40 images.
        assert (got["listed"]["pods"], got["listed"]["pvcs"], got["listed"]["pvs"]) == (80, 40, 40)
        assert len(got["volumes"]) == 40 and len(got["images"]) == 40 and len(got["waiting"]) == 40
        # what is returned does not grow with the cluster: the dead node's attachments, claims and PVs
        assert [len(got["objects"][k]) for k in ("volumeattachments", "pvcs", "pvs")] == [40, 40, 40]
        assert all(v["nodes"] == ["dead"] and v["rbd"] for v in got["volumes"])
        assert all("images" not in n["status"] and "managedFields" not in n["metadata"] for n in got["nodes"])
    (small_got, small_api), (big_got, big_api) = answers
    assert len(small_got["volumes"]) == len(big_got["volumes"])
    # Only the attachment list pages grow with the cluster: 1 page of 240, 5 pages of 2,040.
    assert len(big_api.requests) - len(small_api.requests) == 4


def test_the_failover_reads_use_selectors_the_real_api_supports_and_name_missing_nodes():
    objects = big_cluster(10, stuck=3)
    objects["leases"] = []
    api = FakeApi(objects)
    got = gather_failed_nodes(api, resource_path, ["dead", "node-zz"], page=4, now=NOW)
    assert got["missing"] == ["node-zz"]
    assert "node-zz not found" in got["preflight"]["refused"]
    lists = [r for r in api.requests if r[0] == "LIST"]
    assert ("LIST", "/api/v1/pods", "spec.nodeName=dead") in lists
    assert not [r for r in lists if "node-zz" in (r[2] or "")]  # a node that does not exist has no pods to read
    assert ("LIST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", None) in lists


def test_a_recovery_reads_only_nodes_and_leases():
    objects = big_cluster(10, stuck=3)
    objects["leases"] = [lease("dead", NEW)]
    api = FakeApi(objects)
    got = gather_failed_nodes(api, resource_path, ["dead"], volumes=False, now=NOW)
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    assert set(r[1] for r in api.requests) == {"/version", "/api/v1/nodes", leases}
    assert got["volumes"] == [] and got["pods"] == [] and len(got["leases"]) == 1
    assert "renewed its Lease" in got["preflight"]["refused"]


def test_an_api_error_while_reading_by_name_stops_the_read():
    objects = big_cluster(10, stuck=5)
    objects["leases"] = []

    class Failing(FakeApi):
        def get(self, path, what=None, missing_ok=False):
            if "persistentvolumes/" in path:
                raise RuntimeError("403 Forbidden: persistentvolumes")
            return FakeApi.get(self, path, what, missing_ok)

    with pytest.raises(RuntimeError, match="403"):
        gather_failed_nodes(Failing(objects), resource_path, ["dead"], now=NOW)


def own_event(namespace, kind, name, reason, when, controller="volfence.csi"):
    return {"metadata": {"name": "%s.%s" % (name, when), "namespace": namespace, "uid": "e-%s-%s" % (name, when)},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace if kind == "Pod" else None},
            "reason": reason, "type": "Normal", "message": "%s of %s" % (reason, name),
            "eventTime": "2026-11-27T15:00:%02d.000000Z" % when, "reportingComponent": controller}


def test_diagnose_shows_the_collections_own_recent_events_newest_first():
    objects = big_cluster(5, stuck=1)
    objects["events"] += [own_event("default", "Node", "dead", "NodeFenced", 1),
                          own_event("ns-0", "Pod", "old-0", "PodForceDeleted", 2),
                          own_event("default", "Node", "dead", "Fenced", 3, controller="someone-else")]
    got, _again, api = selective_way(objects, 120, namespaces=["ns-0"])
    # read with the selector the API server has for it (core/v1 reportingComponent), in the namespaces asked
    # for and in default, where the Events of nodes, attachments and volumes live
    lists = [r[1] for r in api.requests if r[0] == "LIST" and r[2] == "reportingComponent=volfence.csi"]
    assert lists == ["/api/v1/namespaces/default/events", "/api/v1/namespaces/ns-0/events"]
    assert [(e["reason"], e["object"]) for e in got["volfence_events"]] == [
        ("PodForceDeleted", "Pod ns-0/old-0"), ("NodeFenced", "Node dead")]
    assert got["volfence_events"][0]["line"] == "2026-11-27T15:00:02.000000Z PodForceDeleted on Pod ns-0/old-0: " \
        "PodForceDeleted of old-0"
    assert got["volfence_events_error"] is None
    lines = table(got["stuck"], own_events=got["volfence_events"])
    assert lines[-3:] == ["volfence.csi's Events, newest first (what earlier runs did):",
                          "  - " + got["volfence_events"][0]["line"], "  - " + got["volfence_events"][1]["line"]]


def test_events_that_cannot_be_listed_are_said_and_the_diagnosis_goes_on():
    from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sApiError

    class Forbidden(FakeApi):
        def list(self, path, what=None, label_selector=None, field_selector=None, page=500):
            if field_selector == "reportingComponent=volfence.csi":
                raise K8sApiError("events is forbidden", status=403)
            return FakeApi.list(self, path, what, label_selector, field_selector, page)

    objects = big_cluster(5, stuck=1)
    got = gather(Forbidden(objects), resource_path, threshold=120, now=NOW)
    assert got["volfence_events"] == [] and "forbidden" in got["volfence_events_error"]
    assert len(got["stuck"]) == 1


def test_the_events_of_one_run_share_their_time_and_keep_the_order_they_were_written_in():
    from ansible_collections.volfence.csi.plugins.module_utils._k8s.events import recent_own_events
    first, second = own_event("default", "Node", "b", "NodeFenced", 7), own_event("default", "Node", "b", "Tainted", 7)
    first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"] = "99", "100"  # 100 > 99, not "100" < "99"
    assert [e["reason"] for e in recent_own_events([first, second])] == ["Tainted", "NodeFenced"]
    assert len(recent_own_events([own_event("default", "Node", "n%d" % i, "R", i) for i in range(30)])) == 20

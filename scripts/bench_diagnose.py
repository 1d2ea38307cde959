#!/usr/bin/env python3
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark playbooks/diagnose.yml at 200 and 2,000 workloads, 40 of them stuck (issue 13).

    .venv/bin/python scripts/bench_diagnose.py [--workloads 200,2000] [--stuck 40] [--runs 3]
                                              [--baseline-runs 1] [--no-baseline]

For each size it starts its own Kubernetes API emulator (tools/kubeemu, a separate process on
a free loopback port) and loads a cluster into it: 20 Ready nodes and one dead node (addresses
in 198.18.0.0/15, a benchmarking range: nothing is sent there), and per workload a namespace's
PVC, a ceph-csi PV, a Running pod with its VolumeAttachment and its four Normal events
(Scheduled, Pulled, Created, Started). --stuck of the workloads are node-failure incidents: the
old pod is Terminating on the dead node, which still has the VolumeAttachment, and the
replacement waits in ContainerCreating on a Ready node with kubelet's FailedMount warning
("rbd image ... is still being used").

The Ceph side is the running lab's (`make bench` starts lab vfbnch; LAB_PREFIX/LAB_DIR as for
make lab-up) when there is one: the stuck pods' images are created in its pool, so
rbd_watchers_info reads real images, and removed afterwards. Without a lab, the playbooks run with no
ceph_admin host (the Ceph plays are skipped) and the table says so.

Timed, from ansible-playbook's start to its end (Ansible's start-up included), as users run it:
  new       playbooks/diagnose.yml (stuck_pods_info: selectors, pages, joins in Python), median of --runs;
  baseline  scripts/bench_diagnose_baseline.yml, a copy of the playbook before issue 13 (k8s_info of
            six kinds, then the filters over whole lists in Jinja), median of --baseline-runs (1 by
            default: at 2,000 workloads one run takes minutes).
Each run's report must send every stuck pod (and no other) to node_failover as stale-rbd-watcher, and list
the dead node's volumes, or the bench fails. Results: .cache/bench/diagnose.json and a table. Exit status 1 when a goal is missed: the
new diagnose at the largest size within --goal-seconds (15), and largest minus smallest within
--growth-seconds (5).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from kubeemu.client import Admin
from volfence_lab.lab import read_env

from benchtools import VENV_BIN, bench_parser, bench_playbook, start_emulator, stop_emulator, venv_ready

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEW = os.path.join(REPO, "playbooks", "diagnose.yml")
BASELINE = os.path.join(REPO, "scripts", "bench_diagnose_baseline.yml")
DEAD = "bench-dead"
READY_NODES = 20
NAMESPACES = 10


def stamp(seconds_ago=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def node(name, index, ready=True):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "uid-node-%s" % name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"addresses": [{"type": "InternalIP", "address": "198.18.0.%d" % (index + 1)},
                                     {"type": "Hostname", "address": name}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown",
                                       "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                                       "lastHeartbeatTime": stamp(3600 if ready else 900),
                                       "lastTransitionTime": stamp(3600 if ready else 900)}],
                       "nodeInfo": {"kubeletVersion": "v1.30.2", "bootID": "boot-%s" % name},
                       "images": [{"names": ["registry.example/app:%d" % i], "sizeBytes": 1000000 + i}
                                  for i in range(20)]}}


def image_of(i):
    return "bench-diag-%05d" % i


def pod(ns, name, node_name, claim, phase, waiting=None, deleting=False):
    if waiting:
        states = [{"name": "app", "ready": False, "restartCount": 0, "image": "registry.example/app:1",
                   "imageID": "", "state": {"waiting": {"reason": waiting}}}]
    else:
        states = [{"name": "app", "ready": True, "restartCount": 0, "image": "registry.example/app:1",
                   "imageID": "registry.example/app@sha256:" + "a" * 64, "started": True,
                   "state": {"running": {"startedAt": stamp(3000)}}}]
    meta = {"name": name, "namespace": ns, "uid": "uid-%s-%s" % (ns, name), "creationTimestamp": stamp(3000),
            "labels": {"app": name.rsplit("-", 1)[0], "pod-template-hash": "5d9f7c6b8"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name.rsplit("-", 1)[0],
                                 "uid": "uid-rs-%s" % name, "controller": True}]}
    if deleting:
        meta["deletionTimestamp"] = stamp(600)
        meta["deletionGracePeriodSeconds"] = 30
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name, "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "serviceAccountName": "default",
                     "containers": [{"name": "app", "image": "registry.example/app:1",
                                     "env": [{"name": "VAR_%d" % i, "value": "value-%d" % i} for i in range(8)],
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
            "status": {"phase": phase, "qosClass": "Burstable", "hostIP": "198.18.0.1",
                       "conditions": [{"type": t, "status": "True" if not waiting else "False",
                                       "lastTransitionTime": stamp(3000)}
                                      for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                       "containerStatuses": states}}


def event(ns, pod_obj, index, reason, message, type_="Normal"):
    meta = pod_obj["metadata"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "%s.%d" % (meta["name"], index), "namespace": ns},
            "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": meta["name"],
                               "uid": meta["uid"]},
            "reason": reason, "message": message, "type": type_, "count": 1, "source": {"component": "kubelet"},
            "firstTimestamp": stamp(3000), "lastTimestamp": stamp(60)}


def cluster(workloads, stuck):
    """The objects of a cluster of `workloads` workloads, the last `stuck` of them stuck."""
    ready = ["bench-node-%02d" % i for i in range(READY_NODES)]
    objs = [node(n, i) for i, n in enumerate(ready)] + [node(DEAD, READY_NODES, ready=False)]
    stuck_pods = []
    for i in range(workloads):
        ns = "team-%d" % (i % NAMESPACES)
        claim, pv = "data-app-%05d" % i, "pvc-%08d-bench" % i
        objs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": claim, "namespace": ns, "uid": "uid-%s" % claim},
                     "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv, "storageClassName": "ceph-rbd",
                              "resources": {"requests": {"storage": "1Gi"}}},
                     "status": {"phase": "Bound"}})
        objs.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv, "uid": "uid-%s" % pv},
                     "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                              "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": claim},
                              "csi": {"driver": "rbd.csi.ceph.com",
                                      "volumeHandle": "0001-0009-rook-ceph-0000000000000002-%08d" % i,
                                      "volumeAttributes": {"clusterID": "rook-ceph", "pool": "rbd",
                                                           "imageName": image_of(i)}}},
                     "status": {"phase": "Bound"}})
        is_stuck = i >= workloads - stuck
        where = DEAD if is_stuck else ready[i % READY_NODES]
        objs.append({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                     "metadata": {"name": "csi-%064x" % i, "uid": "uid-va-%d" % i},
                     "spec": {"attacher": "rbd.csi.ceph.com", "nodeName": where,
                              "source": {"persistentVolumeName": pv}},
                     "status": {"attached": True}})
        running = pod(ns, "app-%05d-abcde" % i, where, claim, "Running", deleting=is_stuck)
        objs.append(running)
        for j, (reason, message) in enumerate((("Scheduled", "Successfully assigned"), ("Pulled", "Image present"),
                                               ("Created", "Created container app"),
                                               ("Started", "Started container app"))):
            objs.append(event(ns, running, j, reason, message))
        if is_stuck:
            new = pod(ns, "app-%05d-fghij" % i, ready[i % READY_NODES], claim, "Pending", "ContainerCreating")
            objs.append(new)
            objs.append(event(ns, new, 0, "Scheduled", "Successfully assigned"))
            objs.append(event(ns, new, 1, "FailedMount",
                              "MountVolume.MountDevice failed for volume \"%s\" : rpc error: code = Internal desc = "
                              "rbd image rbd/%s is still being used" % (pv, image_of(i)), "Warning"))
            stuck_pods.append(new["metadata"]["name"])
    return objs, stuck_pods


def load(url, objs):
    """Objects stored as they are, 1,000 a request (the emulator's admin API)."""
    admin = Admin(url, timeout=120)
    for start in range(0, len(objs), 1000):
        admin.seed(*objs[start:start + 1000])


def lab_env():
    """The running lab's env file as a dict, or None (no lab, or one without its Ceph tools)."""
    env = read_env()
    return env if env and env.get("CEPH_CONF") and env.get("LAB_CEPH_BIN") else None


def inventory(workdir, kubeconfig, lab):
    data = {"all": {"vars": {"volfence_kubeconfig": kubeconfig}, "children": {
        "k8s_api": {"hosts": {"k8s-api": {"ansible_connection": "local",
                                          "ansible_python_interpreter": os.path.join(VENV_BIN, "python")}}}}}}
    if lab:
        data["all"]["vars"].update(volfence_ceph_conf=lab["CEPH_CONF"], volfence_ceph_keyring=lab["CEPH_KEYRING"],
                                   volfence_ceph_user=lab.get("CEPH_USER", "admin"))
        data["all"]["children"]["ceph_admin"] = {"hosts": {"ceph-admin": {
            "ansible_connection": "local",
            "ansible_python_interpreter": os.path.join(lab["LAB_CEPH_BIN"], "ceph-python3")}}}
    path = os.path.join(workdir, "inventory.yml")
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1)  # JSON is YAML
    return path


def rbd(lab, *args):
    env = dict(os.environ)
    env.update(dict((k, v) for k, v in lab.items() if k.startswith("CEPH_")))
    return subprocess.run([os.path.join(lab["LAB_CEPH_BIN"], "rbd")] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)


def diagnose_seconds(workdir, inv, playbook, report, stuck_pods):
    """One run of a diagnose playbook, timed; its report checked (every stuck pod, no other)."""
    run = bench_playbook("bench_diagnose", workdir, inv, playbook,
                         {"stuck_threshold_seconds": 60, "report_path": report}, timeout=1800, json_results=False)
    with open(report) as handle:
        data = json.load(handle)
    found = dict((p["pod"], p) for p in data["pods"])
    wrong = [name for name in stuck_pods if name not in found or found[name]["incident"] != "stale-rbd-watcher"
             or (found[name]["next"] or {}).get("playbook") != "volfence.csi.node_failover"]
    if wrong or len(found) != len(stuck_pods):
        sys.exit("bench_diagnose: %s diagnosed %d pods, %d of the %d stuck pods wrongly or not at all: %s"
                 % (playbook, len(found), len(wrong), len(stuck_pods), wrong[:5]))
    (dead,) = [n for n in data["nodes_not_ready"] if n["node"] == DEAD]
    if len(dead["volumes"]) != len(stuck_pods):
        sys.exit("bench_diagnose: %s lists %d volumes of %s, expected %d" % (
            playbook, len(dead["volumes"]), DEAD, len(stuck_pods)))
    return round(run.seconds, 2)


def main(argv=None):
    parser = bench_parser(__doc__, "diagnose.json")
    parser.add_argument("--workloads", default="200,2000")
    parser.add_argument("--stuck", type=int, default=40)
    parser.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_DIAGNOSE_RUNS", "3")))
    parser.add_argument("--baseline-runs", type=int, default=int(os.environ.get("BENCH_DIAGNOSE_BASELINE_RUNS", "1")))
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--goal-seconds", type=float, default=15.0)
    parser.add_argument("--growth-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    venv_ready("bench_diagnose")
    sizes = [int(s) for s in args.workloads.split(",") if s.strip()]
    lab = lab_env()
    results = {"stuck": args.stuck, "ceph": "lab %s" % lab.get("LAB_PREFIX") if lab else "none (no lab running)",
               "sizes": {}}
    images = sorted(set(image_of(i) for s in sizes for i in range(s - args.stuck, s)))
    if lab:
        for image in images:
            made = rbd(lab, "create", "--size", "4", "rbd/" + image)
            if made.returncode != 0 and "exists" not in made.stderr:
                sys.exit("bench_diagnose: rbd create rbd/%s failed: %s" % (image, made.stderr[-500:]))
    try:
        for size in sizes:
            workdir = tempfile.mkdtemp(prefix="bench-diagnose-")
            emulator, kubeconfig, url = start_emulator(workdir, "bench_diagnose")
            try:
                objs, stuck_pods = cluster(size, args.stuck)
                load(url, objs)
                inv = inventory(workdir, kubeconfig, lab)
                report = os.path.join(workdir, "report.json")
                entry = {"objects": len(objs), "new": [], "baseline": []}
                for _ in range(args.runs):
                    entry["new"].append(diagnose_seconds(workdir, inv, NEW, report, stuck_pods))
                for _ in range(0 if args.no_baseline else args.baseline_runs):
                    entry["baseline"].append(diagnose_seconds(workdir, inv, BASELINE, report, stuck_pods))
                entry["new_median"] = statistics.median(entry["new"])
                entry["baseline_median"] = statistics.median(entry["baseline"]) if entry["baseline"] else None
                results["sizes"][str(size)] = entry
            finally:
                stop_emulator(emulator, workdir)
    finally:
        if lab:
            for image in images:
                rbd(lab, "rm", "--no-progress", "rbd/" + image)
    largest, smallest = results["sizes"][str(max(sizes))], results["sizes"][str(min(sizes))]
    growth = largest["new_median"] - smallest["new_median"]
    results["goals"] = {"largest_within_seconds": args.goal_seconds, "growth_within_seconds": args.growth_seconds,
                        "largest_met": largest["new_median"] <= args.goal_seconds,
                        "growth_seconds": round(growth, 2), "growth_met": growth <= args.growth_seconds}
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as out:
        json.dump(results, out, indent=2)
    print("diagnose, %d stuck pods, Ceph side: %s" % (args.stuck, results["ceph"]))
    print("  workloads  objects   new (median of %d)   baseline: old Jinja playbook (median of %d)   runs new / baseline"
          % (args.runs, 0 if args.no_baseline else args.baseline_runs))
    for size in sizes:
        entry = results["sizes"][str(size)]
        print("  %9d  %7d   %8.1f s            %s   %s / %s" % (
            size, entry["objects"], entry["new_median"],
            ("%8.1f s" % entry["baseline_median"]) if entry["baseline_median"] is not None else "       -  ",
            entry["new"], entry["baseline"] or "-"))
    print("  goals: %d workloads within %.0f s: %s; %d -> %d adds %.1f s (within %.0f s): %s" % (
        max(sizes), args.goal_seconds, "met" if results["goals"]["largest_met"] else "MISSED",
        min(sizes), max(sizes), growth, args.growth_seconds, "met" if results["goals"]["growth_met"] else "MISSED"))
    print("results: %s" % os.path.relpath(args.output, REPO))
    return 0 if results["goals"]["largest_met"] and results["goals"]["growth_met"] else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: a lost node's pods back on real Kubernetes clocks (volfence_lab.clocks `real`: heartbeat
10 s, node-monitor-grace-period 50 s, eviction after 300 s, maxWaitForUnmountDuration 6 min, the
attach/detach controller's 60 s sync, pod GC every 20 s).

On the bench lab (`make bench` starts it), switched to real clocks for these runs and back after. Each
run: a one-replica Deployment or StatefulSet with a ReadWriteOnce RBD claim runs on node-b; node-b's kubelet
stops, its Ceph client does not (seed 000). Figures, medians of BENCH_REAL_RUNS runs (default 3):

- failover_on_node_loss (ansible-rulebook, node_lost_after=40): kubelet stops -> replacement Running,
  Deployment and StatefulSet. Goal <= 60 s.
- node_failover started by hand once node-b's Lease is 60 s old (lease_grace_seconds=60), as an operator
  would: its start -> replacement Running. Goal <= 15 s: a Deployment; a StatefulSet; a Deployment whose
  node an administrator tainted out-of-service first (Kubernetes removed the pod and attachment, the
  replacement waits on node-b's live client).
  With ceph-csi's own fencing on (--enable-fencing on the lab's controller plugin: it fences node-b's
  recorded address when it detaches a volume under the out-of-service taint), the same goal: a Deployment;
  and a Deployment whose node an administrator tainted, node_failover started right after the taint.
- Kubernetes alone, one run each, no goal: no tool (the pod is evicted at about 355 s, then stays
  Terminating; the replacement's volume stays attached to node-b); an administrator's out-of-service taint
  alone (Kubernetes detaches, the replacement then waits on node-b's live client), with ceph-csi's fencing
  off and on. Each is watched for a bounded time (BENCH_REAL_NO_TOOL_SECONDS, default 420;
  BENCH_REAL_TAINT_SECONDS, default 120).

BENCH_REAL_ROWS (row ids, comma-separated) measures only those rows (the report then misses the others).
Writes .cache/bench/real_clocks.json (scripts/bench_report.py's shape).
"""

import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from bench_eda import RULEBOOK
from bench_failover import OUT, REPO, reset, wait
from volfence_lab import clocks as clockmod
from volfence_lab import lab as labmod
from volfence_lab import scenarios

RUNS = int(os.environ.get("BENCH_REAL_RUNS", "3"))
NO_TOOL_SECONDS = int(os.environ.get("BENCH_REAL_NO_TOOL_SECONDS", "420"))
TAINT_SECONDS = int(os.environ.get("BENCH_REAL_TAINT_SECONDS", "120"))
NODE_LOST_AFTER = 40
LEASE_GRACE = 60
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
PLAYBOOK = os.path.join(REPO, "playbooks", "node_failover.yml")


def workload(cfg, kube, kind):
    """A Deployment or StatefulSet with its own RBD claim, Running on node-b: its app label."""
    scenarios.base_objects(kube)
    app = "rc-" + uuid.uuid4().hex[:5]
    if kind == "statefulset":
        scenarios.rbd_volume(cfg, kube, "data-%s-0" % app)
        scenarios.statefulset(kube, app, "data", "node-b")
    else:
        claim = app + "-claim"
        scenarios.rbd_volume(cfg, kube, claim)
        scenarios.deployment(kube, app, claim, "node-b")
    wait("the pod to run on node-b", lambda: scenarios.running_on(kube, app, "node-b"), 120)
    return app


def remove(kube, kind, app):
    kube.delete("statefulsets" if kind == "statefulset" else "deployments", app, "default")


def running_elsewhere(kube, cfg, app):
    return any(scenarios.running_on(kube, app, n) for n in cfg.nodes if n != "node-b")


def lease_age(kube, node):
    lease = kube.find("leases", node, "kube-node-lease")
    renewed = (lease or {}).get("spec", {}).get("renewTime")
    if not renewed:
        return None
    moment = datetime.datetime.fromisoformat(renewed.replace("Z", "+00:00"))
    return (datetime.datetime.now(datetime.timezone.utc) - moment).total_seconds()


def until_running(kube, cfg, app, start, limit):
    """Seconds from `start` until the app has a Running pod off node-b, or None after `limit` seconds."""
    while time.time() - start < limit:
        if running_elsewhere(kube, cfg, app):
            return round(time.time() - start, 2)
        time.sleep(0.1)
    return None


def admin_taint(kube):
    node = kube.get("nodes", "node-b")
    taints = (node["spec"].get("taints") or []) + [{"key": OUT_OF_SERVICE, "value": "nodeshutdown",
                                                    "effect": "NoExecute"}]
    kube.patch("nodes", "node-b", {"spec": {"taints": taints}})


def kill_and_wait_lease(cfg, kube):
    """Stops node-b's kubelet; returns when its Lease is LEASE_GRACE s old (as an operator would see it)."""
    killed = time.time()
    labmod.kill_node(cfg, "node-b")
    wait("node-b's Lease %d s old" % LEASE_GRACE, lambda: (lease_age(kube, "node-b") or 0) >= LEASE_GRACE + 0.5, 180)
    return killed


def by_hand(cfg, kube, kind, taint_first, ceph_csi_fencing=False):
    reset(cfg, kube)
    scenarios.set_csi_fencing(kube, ceph_csi_fencing)
    app = workload(cfg, kube, kind)
    try:
        killed = kill_and_wait_lease(cfg, kube)
        if taint_first:
            admin_taint(kube)
            if not ceph_csi_fencing:
                # Kubernetes removes the pod (taint eviction, pod GC) and detaches: the replacement then waits on
                # node-b's live client (with ceph-csi's fencing, ceph-csi cuts it on detach: no wait for that)
                scenarios.wait_stuck(kube, app, "is still being used", "the replacement to be stuck", 120,
                                     away_from="node-b")
        workdir = tempfile.mkdtemp(prefix="bench-real-")
        start = time.time()
        proc = subprocess.Popen([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i",
                                 os.path.join(cfg.dir, "inventory.yml"), PLAYBOOK, "-e", json.dumps({
                                     "failed_node": "node-b", "lease_grace_seconds": LEASE_GRACE,
                                     "wait_timeout": 120, "report_path": os.path.join(workdir, "r.json")})],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
        seconds = until_running(kube, cfg, app, start, 150)
        output, _ = proc.communicate(timeout=300)
        if seconds is None or proc.returncode != 0:
            raise RuntimeError("node_failover (rc %s) left no Running replacement: %s" % (proc.returncode, output[-3000:]))
        return dict(seconds=seconds, since_kill=round(start + seconds - killed, 2))
    finally:
        remove(kube, kind, app)
        scenarios.set_csi_fencing(kube, False)


def eda(cfg, kube, kind):
    reset(cfg, kube)
    app = workload(cfg, kube, kind)
    workdir = tempfile.mkdtemp(prefix="bench-real-eda-")
    vars_path = os.path.join(workdir, "vars.json")
    with open(vars_path, "w") as handle:
        json.dump({"kubeconfig": os.path.join(cfg.dir, "kubeconfig"), "node_lost_after": NODE_LOST_AFTER,
                   "max_failovers": 1, "failover_window": 600, "report_dir": workdir}, handle)
    log_path = os.path.join(workdir, "rulebook.log")
    log = open(log_path, "w")
    env = dict(os.environ, PATH=os.path.join(REPO, ".venv", "bin") + os.pathsep + os.environ.get("PATH", ""),
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    proc = subprocess.Popen([RULEBOOK, "-r", "volfence.csi.failover_on_node_loss", "-i",
                             os.path.join(cfg.dir, "inventory.yml"), "--vars", vars_path, "-v"],
                            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait("the rulebook's source in sync", lambda: "in sync: watching" in open(log_path).read()
             or proc.poll() is not None, 120)
        killed = time.time()
        labmod.kill_node(cfg, "node-b")
        seconds = until_running(kube, cfg, app, killed, 180)
        if seconds is None:
            raise RuntimeError("no replacement Running 180 s after the kubelet stopped: %s" % open(log_path).read()[-3000:])
        return dict(seconds=seconds)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
        remove(kube, kind, app)


def kubernetes_alone(cfg, kube, taint_first, ceph_csi_fencing=False):
    reset(cfg, kube)
    scenarios.set_csi_fencing(kube, ceph_csi_fencing)
    app = workload(cfg, kube, "deployment")
    try:
        if taint_first:
            killed = kill_and_wait_lease(cfg, kube)
            admin_taint(kube)
            seconds = until_running(kube, cfg, app, killed, LEASE_GRACE + TAINT_SECONDS)
            limit = LEASE_GRACE + TAINT_SECONDS
        else:
            killed = time.time()
            labmod.kill_node(cfg, "node-b")
            seconds = until_running(kube, cfg, app, killed, NO_TOOL_SECONDS)
            limit = NO_TOOL_SECONDS
        return dict(seconds=seconds, limit=limit)
    finally:
        remove(kube, kind="deployment", app=app)
        scenarios.set_csi_fencing(kube, False)


def median_row(ident, work, runs, goal, unit="s"):
    times = [r["seconds"] for r in runs]
    figure = round(statistics.median(times), 2)
    return {"id": ident, "work": "%s, median of %d (%s)" % (work, len(times), ", ".join("%.2f" % t for t in times)),
            "figure": figure, "unit": unit, "baseline": None, "baseline_label": "Kubernetes alone: rows below",
            "goal": "<= %g s" % goal, "met": figure <= goal}


def baseline_row(ident, work, run):
    figure = run["seconds"] if run["seconds"] is not None else "not Running after %d s" % run["limit"]
    return {"id": ident, "work": work, "figure": figure, "unit": "s" if run["seconds"] is not None else "",
            "baseline": None, "baseline_label": None, "goal": "none (a baseline)", "met": True}


def main():
    cfg = labmod.Config()
    kube = labmod.kube_client(cfg)
    before_mode = clockmod.read_mode(cfg.dir)
    clockmod.write(cfg.dir, "real")
    before = list(os.getloadavg())
    rows = []
    only = [r for r in os.environ.get("BENCH_REAL_ROWS", "").split(",") if r]

    def wanted(ident):
        return not only or ident in only
    try:
        for kind in ("deployment", "statefulset"):
            if wanted("real_clocks.eda_" + kind):
                runs = [eda(cfg, kube, kind) for _ in range(RUNS)]
                rows.append(median_row("real_clocks.eda_" + kind, "failover_on_node_loss (node_lost_after=%d), a %s: "
                                       "kubelet stops -> replacement Running" % (NODE_LOST_AFTER, kind), runs, 60))
        for ident, kind, taint_first, fencing, what in (
                ("real_clocks.by_hand_deployment", "deployment", False, False, "a Deployment"),
                ("real_clocks.by_hand_statefulset", "statefulset", False, False, "a StatefulSet"),
                ("real_clocks.by_hand_after_admin_taint", "deployment", True, False,
                 "a Deployment, after an administrator's out-of-service taint"),
                ("real_clocks.by_hand_ceph_csi_fencing", "deployment", False, True,
                 "a Deployment, ceph-csi fencing on detach"),
                ("real_clocks.by_hand_after_admin_taint_ceph_csi_fencing", "deployment", True, True,
                 "a Deployment, ceph-csi fencing on detach, started right after an administrator's out-of-service "
                 "taint")):
            if not wanted(ident):
                continue
            runs = [by_hand(cfg, kube, kind, taint_first, fencing) for _ in range(RUNS)]
            row = median_row(ident, "node_failover started at Lease age %d s, %s: its start -> replacement Running"
                             % (LEASE_GRACE, what), runs, 15)
            row["since_kubelet_stopped"] = [r["since_kill"] for r in runs]
            rows.append(row)
        if wanted("real_clocks.kubernetes_alone"):
            rows.append(baseline_row("real_clocks.kubernetes_alone", "Kubernetes alone (no tool): kubelet stops -> "
                                     "replacement Running", kubernetes_alone(cfg, kube, taint_first=False)))
        if wanted("real_clocks.admin_taint_alone"):
            rows.append(baseline_row("real_clocks.admin_taint_alone", "an administrator's out-of-service taint at "
                                     "Lease age %d s, no tool: kubelet stops -> replacement Running" % LEASE_GRACE,
                                     kubernetes_alone(cfg, kube, taint_first=True)))
        if wanted("real_clocks.admin_taint_alone_ceph_csi_fencing"):
            rows.append(baseline_row("real_clocks.admin_taint_alone_ceph_csi_fencing", "an administrator's "
                                     "out-of-service taint at Lease age %d s, ceph-csi fencing on detach, no tool: "
                                     "kubelet stops -> replacement Running" % LEASE_GRACE,
                                     kubernetes_alone(cfg, kube, taint_first=True, ceph_csi_fencing=True)))
    finally:
        clockmod.write(cfg.dir, before_mode)
        reset(cfg, kube)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "real_clocks.json"), "w") as handle:
        json.dump({"bench": "real_clocks", "command": ".venv/bin/python scripts/bench_real_clocks.py",
                   "cpus": os.cpu_count(), "load_average": {"before": before, "after": list(os.getloadavg())},
                   "rows": rows}, handle, indent=2)
    for row in rows:
        print("bench_real_clocks: %s: %s %s (goal %s): %s" % (row["id"], row["figure"], row["unit"], row["goal"],
                                                               "met" if row["met"] else "NOT met"))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: a node loss turned into a Running replacement pod by the rulebook, with no human step.

On the bench lab (`make bench` starts it): a Deployment with a ReadWriteOnce RBD claim runs on node-b;
ansible-rulebook runs volfence.csi.failover_on_node_loss (node_lost_after 3 s) and is in sync; node-b's
kubelet stops (its Ceph client does not: seed-000). The figure is the median, over BENCH_EDA_RUNS runs
(default 3), of the time from the kubelet stopping to the replacement pod Running on another node.
Baseline: the lab's own floor, the earliest the node can be seen lost (the node controller's grace, the
lab's clocks, volfence_lab.clocks, then node_lost_after): node_failover does not wait for Kubernetes'
eviction. Goal (issue 15): within that floor plus 20 s. Writes .cache/bench/eda.json (scripts/bench_report.py's shape).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from bench_failover import OUT, REPO, reset, wait
from volfence_lab import lab as labmod
from volfence_lab import scenarios
from volfence_lab import clocks as clockmod

RUNS = int(os.environ.get("BENCH_EDA_RUNS", "3"))
NODE_LOST_AFTER = 3
RULEBOOK = os.path.join(REPO, ".venv", "bin", "ansible-rulebook")


def rulebook(cfg, workdir):
    """ansible-rulebook running failover_on_node_loss, once its source is in sync: (process, log path)."""
    vars_path = os.path.join(workdir, "vars.json")
    with open(vars_path, "w") as handle:
        json.dump({"kubeconfig": os.path.join(cfg.dir, "kubeconfig"), "node_lost_after": NODE_LOST_AFTER,
                   "max_failovers": 1, "failover_window": 600, "report_dir": workdir}, handle)
    log_path = os.path.join(workdir, "rulebook.log")
    env = dict(os.environ, PATH=os.path.join(REPO, ".venv", "bin") + os.pathsep + os.environ.get("PATH", ""),
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    log = open(log_path, "w")
    proc = subprocess.Popen([RULEBOOK, "-r", "volfence.csi.failover_on_node_loss", "-i",
                             os.path.join(cfg.dir, "inventory.yml"), "--vars", vars_path, "-v"],
                            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)

    def output():
        with open(log_path) as handle:
            return handle.read()
    wait("the rulebook's source in sync", lambda: "in sync: watching" in output() or proc.poll() is not None, 120)
    if proc.poll() is not None:
        raise RuntimeError("ansible-rulebook stopped: %s" % output()[-2000:])
    return proc, log, output


def one_run(cfg, kube):
    reset(cfg, kube)
    app, claim = "eda-" + uuid.uuid4().hex[:5], "eda-claim-" + uuid.uuid4().hex[:5]
    scenarios.base_objects(kube)
    scenarios.rbd_volume(cfg, kube, claim)
    scenarios.deployment(kube, app, claim, "node-b")
    workdir = tempfile.mkdtemp(prefix="bench-eda-")
    try:
        wait("the pod to run on node-b", lambda: scenarios.running_on(kube, app, "node-b"), 90)
        proc, log, output = rulebook(cfg, workdir)
        try:
            killed = time.time()
            labmod.kill_node(cfg, "node-b")
            deadline = killed + 120
            while time.time() < deadline:
                if any(scenarios.running_on(kube, app, n) for n in cfg.nodes if n != "node-b"):
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("no replacement Running after 120 s: %s" % output()[-2000:])
            return round(time.time() - killed, 2)
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()
    finally:
        kube.delete("deployments", app, "default")
        reset(cfg, kube)


def main():
    cfg = labmod.Config()
    kube = labmod.kube_client(cfg)
    before = list(os.getloadavg())
    times = [one_run(cfg, kube) for _ in range(RUNS)]
    for index, seconds in enumerate(times):
        print("bench_eda: run %d: replacement Running %.2f s after node-b's kubelet stopped" % (index + 1, seconds))
    clocks = clockmod.Follower(cfg.dir).get()
    # node_failover no longer waits for Kubernetes' eviction: the earliest is the node seen lost
    floor = clocks.node_grace + NODE_LOST_AFTER
    goal = floor + 20
    median = round(statistics.median(times), 2)
    row = {"id": "eda.failover", "work": "failover_on_node_loss (ansible-rulebook): node-b's kubelet stops -> "
           "replacement Running, median of %d (%s s)" % (RUNS, ", ".join("%.2f" % t for t in times)),
           "figure": median, "unit": "s", "baseline": floor,
           "baseline_label": "the lab's floor: node grace %g s + node_lost_after %g s, before which the node is not "
                             "seen lost" % (clocks.node_grace, NODE_LOST_AFTER),
           "goal": "<= lab node grace + node_lost_after + 20 s (%g s)" % goal, "met": median <= goal}
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "eda.json"), "w") as handle:
        json.dump({"bench": "eda", "command": ".venv/bin/python scripts/bench_eda.py", "cpus": os.cpu_count(),
                   "load_average": {"before": before, "after": list(os.getloadavg())}, "rows": [row]}, handle, indent=2)
    print("bench_eda: median %.2f s (goal <= %g s): %s" % (median, goal, "met" if row["met"] else "NOT met"))
    return 0 if row["met"] else 1


if __name__ == "__main__":
    sys.exit(main())

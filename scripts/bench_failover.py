#!/usr/bin/python3
"""Benchmark: time from node_failover's start to the replacement pod Running, on the lab.

Runs the seed-000 scenario (node-b dies holding its watcher) a few times on the running lab
(`make bench` starts one), runs playbooks/node_failover.yml for node-b, and measures, from the
playbook's start, when the stuck pod is Running (polled every 0.1 s) and when the playbook ends.
Results: .cache/bench/failover.json and a table.
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import lab as labmod  # noqa: E402
from kubeclient import KubeClient, server_from_kubeconfig  # noqa: E402

RUNS = int(os.environ.get("BENCH_FAILOVER_RUNS", "3"))


def lab_cli(*args):
    return subprocess.run([sys.executable, os.path.join(REPO, "tests", "lab", "lab.py")] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout


def one_run(cfg, kube, index):
    for node in cfg.nodes:
        lab_cli("revive-node", node)
    time.sleep(2)  # node-b posts a fresh heartbeat before it dies again
    state = json.loads(lab_cli("scenario", "seed-000"))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"))
    report = os.path.join(REPO, ".cache", "bench", "failover-report-%d.json" % index)
    cmd = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", os.path.join(cfg.dir, "inventory.yml"),
           os.path.join(REPO, "playbooks", "node_failover.yml"),
           "-e", json.dumps({"failed_node": "node-b", "lease_grace_seconds": 3, "report_path": report})]
    running_at = []

    def watch(start):
        while not running_at and time.time() - start < 120:
            pod = kube.find("pods", state["stuck_pod"], "default")
            if pod and pod["status"].get("phase") == "Running":
                running_at.append(time.time() - start)
            time.sleep(0.1)
    start = time.time()
    watcher = threading.Thread(target=watch, args=(start,))
    watcher.start()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    ended = time.time() - start
    watcher.join()
    kube.delete("deployments", state["deployment"], "default")
    if proc.returncode != 0:
        sys.exit("bench_failover: node_failover failed:\n" + proc.stdout[-3000:])
    return {"pod_running_seconds": round(running_at[0], 2) if running_at else None,
            "playbook_seconds": round(ended, 2), "fenced": json.load(open(report))["fence_plan"]["fence"]}


def main():
    cfg = labmod.Config()
    kube = KubeClient(server_from_kubeconfig(os.path.join(cfg.dir, "kubeconfig")))
    os.makedirs(os.path.join(REPO, ".cache", "bench"), exist_ok=True)
    runs = [one_run(cfg, kube, i) for i in range(RUNS)]
    running = [r["pod_running_seconds"] for r in runs if r["pod_running_seconds"] is not None]
    result = {"runs": runs, "median_pod_running_seconds": statistics.median(running) if running else None,
              "median_playbook_seconds": statistics.median(r["playbook_seconds"] for r in runs)}
    with open(os.path.join(REPO, ".cache", "bench", "failover.json"), "w") as out:
        json.dump(result, out, indent=2)
    print("node_failover on seed-000 (%d runs)          median    runs" % RUNS)
    print("  start -> replacement pod Running           %5.1f s   %s" % (
        result["median_pod_running_seconds"] or -1, [r["pod_running_seconds"] for r in runs]))
    print("  start -> playbook done (report written)    %5.1f s   %s" % (
        result["median_playbook_seconds"], [r["playbook_seconds"] for r in runs]))
    print("results: .cache/bench/failover.json")
    return 0 if len(running) == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: node_failover against the manual fix, on the same lab state.

Cases (each run builds a fresh incident on the running lab; `make bench` starts one):
  stale-rbd-watcher     node-b dies holding one watcher; node_failover; goal: the replacement pod
               Running within 5 s of the run's start.
  volumes-N    N Deployments with a ReadWriteOnce RBD claim each on node-b (lab scenario
               node-volumes), node-b dies; N = 1, 10, 100. Baseline: the manual fix on an
               identical fresh state, a shell loop as an operator runs it (ceph osd blocklist add
               <node ip>; kubectl delete --force of each of the node's pods; kubectl delete of each
               of its VolumeAttachments): its time to every replacement pod Running is the
               lab's floor. Goal at 100: node_failover within 10 s of that; the playbook's own
               time per volume (playbook - floor, over 10 -> 100 volumes) at most 0.1 s.
  rack-5x20    five nodes with 20 volumes each die together (lab scenario rack);
               node_failover -e '{"failed_nodes": [...]}' against the manual fix for the five
               nodes; goal: every replacement pod Running within 60 s.

Every run starts from the same lab: every node revived (its old clients gone), every blocklist
entry lifted, the failover's taint and record removed, and the scenario's objects removed
afterwards. Times are medians of BENCH_FAILOVER_RUNS runs (default 3). node_failover runs with
the ansible.posix.profile_tasks callback; each run's per-task times are kept in
.cache/bench/failover-<case>-<run>.json. The rows (figure, baseline, goal, met) go to
.cache/bench/failover.json. BENCH_FAILOVER_CASES (comma-separated) picks cases.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

from kubeemu.client import KubeClient, server_from_kubeconfig
from volfence_lab import lab as labmod

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUNS = int(os.environ.get("BENCH_FAILOVER_RUNS", "3"))
OUT = os.path.join(REPO, ".cache", "bench")
NAMESPACE = "default"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
RACK_NODES, RACK_VOLUMES = 5, 20

MANUAL_FIX = r"""
set -u
for node in $NODES; do
  ip=$(kubectl get node "$node" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
  ceph osd blocklist add "$ip"
done
for node in $NODES; do
  for pod in $(kubectl get pods -A --field-selector spec.nodeName="$node" \
                 -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}'); do
    kubectl delete pod -n "${pod%%/*}" "${pod#*/}" --force --grace-period=0
  done
  for va in $(kubectl get volumeattachments \
                -o jsonpath='{range .items[?(@.spec.nodeName=="'"$node"'")]}{.metadata.name}{" "}{end}'); do
    kubectl delete volumeattachment "$va"
  done
done
"""


class BenchError(Exception):
    pass


def lab_cli(*args, timeout=900):
    proc = subprocess.run([sys.executable, "-m", "volfence_lab"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    if proc.returncode != 0:
        raise BenchError("lab.py %s failed: %s" % (" ".join(args), proc.stderr.strip()[-2000:]))
    return proc.stdout


def ceph(cfg, *args):
    return labmod.run(labmod.ceph_cmd(cfg, *args), timeout=60).stdout


def ready(node):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions", []))


def wait(what, predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise BenchError("timed out after %ss waiting for %s" % (timeout, what))


def reset(cfg, kube):
    """Every node alive, no blocklist entry, no failover taint or record: runs are independent."""
    for node in cfg.nodes:
        lab_cli("revive-node", node)
    # Tentacle prints two JSON lists: the address entries, then the range entries.
    text, docs, decoder = ceph(cfg, "osd", "blocklist", "ls", "--format", "json").strip(), [], json.JSONDecoder()
    while text:
        doc, end = decoder.raw_decode(text)
        docs.append(doc)
        text = text[end:].strip()
    for kind, entries in zip(("addr", "range"), docs):
        for entry in entries:
            addr = (entry.get("addr") or entry.get("range")) if isinstance(entry, dict) else entry
            ceph(cfg, "osd", "blocklist", *(["range", "rm"] if kind == "range" else ["rm"]), addr)
    for node in kube.list("nodes"):
        taints = node["spec"].get("taints") or []
        kept = [t for t in taints if t["key"] != OUT_OF_SERVICE]
        if kept != taints:
            kube.patch("nodes", node["metadata"]["name"], {"spec": {"taints": kept or None}})
        marks = [a for a in ("volfence.csi/failover", "volfence.csi/failover-started", "volfence.csi/out-of-service-taint")
                 if a in (node["metadata"].get("annotations") or {})]
        if marks:
            kube.patch("nodes", node["metadata"]["name"], {"metadata": {"annotations": dict((a, None) for a in marks)}})
        if node["spec"].get("unschedulable"):
            kube.patch("nodes", node["metadata"]["name"], {"spec": {"unschedulable": None}})
    wait("every node Ready and untainted", lambda: all(
        ready(n) and not n["spec"].get("taints") for n in kube.list("nodes")), 60)


def build(cfg, kube, case):
    reset(cfg, kube)
    if case["scenario"] == "stale-rbd-watcher":
        state = json.loads(lab_cli("scenario", "stale-rbd-watcher"))
        state.update(failed_nodes=[state["failed_node"]], stuck_pods=[state["stuck_pod"]],
                     deployments=[state["deployment"]])
    elif case["scenario"] == "node-volumes":
        state = json.loads(lab_cli("scenario", "node-volumes", "--node", "node-b", "--volumes", str(case["volumes"])))
    else:
        state = json.loads(lab_cli("scenario", "rack", "--nodes", ",".join(case["nodes"]),
                                   "--volumes", str(case["volumes"])))
    return state


def clean(cfg, kube, state):
    if state.get("id"):
        lab_cli("clean-scenario", state["id"], "--wait", "5")
    else:
        for name in state.get("deployments", []):
            kube.delete("deployments", name, NAMESPACE)


def watch_running(kube, state, start, out, stop):
    """Seconds from start until every stuck pod is Running (None if not within the limit)."""
    wanted = set(state["stuck_pods"])
    selector = state.get("label_selector")
    # The poll's period is the figure's resolution: fine for a few pods, coarser for a hundred,
    # whose listing every 50 ms would load the lab it measures.
    period = 0.05 if len(wanted) <= 10 else 0.2
    while not stop:
        pods = kube.list("pods", NAMESPACE, label_selector=selector) if selector else \
            [p for p in (kube.find("pods", n, NAMESPACE) for n in wanted) if p]
        running = {p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running"}
        if wanted <= running:
            out.append(time.time() - start)
            return
        time.sleep(period)


def timed(kube, state, run_fix, limit):
    out, stop = [], []
    start = time.time()
    thread = threading.Thread(target=watch_running, args=(kube, state, start, out, stop), daemon=True)
    thread.start()
    result = run_fix()
    ended = time.time() - start
    thread.join(max(0.0, limit - ended))
    stop.append(True)
    result.update(running_seconds=round(out[0], 2) if out else None, done_seconds=round(ended, 2))
    return result


def manual_fix(cfg, state):
    env = dict(labmod.clean_env(), NODES=" ".join(state["failed_nodes"]),
               KUBECONFIG=os.path.join(cfg.dir, "kubeconfig"),
               CEPH_ARGS="-c %s -k %s -n client.%s" % (cfg.conf, cfg.keyring, cfg.user),
               PATH=cfg.ceph_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
    proc = subprocess.run(["bash", "-c", MANUAL_FIX], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=900)
    if proc.returncode != 0:
        raise BenchError("the manual fix failed: " + proc.stdout[-2000:])
    return {}


TASK_LINE = re.compile(r"^(?P<task>.+?) -{3,} (?P<seconds>\d+(\.\d+)?)s$")


def playbook_fix(cfg, state, tag):
    report = os.path.join(OUT, "failover-report-%s.json" % tag)
    nodes = state["failed_nodes"]
    extra = {"lease_grace_seconds": 3, "report_path": report}
    extra.update({"failed_node": nodes[0]} if len(nodes) == 1 and not state.get("rack") else {"failed_nodes": nodes})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
               ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
               PROFILE_TASKS_TASK_OUTPUT_LIMIT="all", PROFILE_TASKS_SORT_ORDER="none")
    cmd = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", os.path.join(cfg.dir, "inventory.yml"),
           os.path.join(REPO, "playbooks", "node_failover.yml"), "-e", json.dumps(extra)]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=900, cwd=REPO)
    tasks = []
    recap = proc.stdout.rfind("PLAY RECAP")
    for line in proc.stdout[recap:].splitlines() if recap >= 0 else []:
        match = TASK_LINE.match(line.strip())
        if match:
            tasks.append({"task": match.group("task").strip(), "seconds": float(match.group("seconds"))})
    with open(os.path.join(OUT, "failover-%s.log" % tag), "w") as out:
        out.write(proc.stdout)
    with open(os.path.join(OUT, "failover-%s.json" % tag), "w") as out:
        json.dump({"command": cmd, "rc": proc.returncode, "tasks": tasks, "tasks_seconds": round(sum(
            t["seconds"] for t in tasks), 2), "output": ".cache/bench/failover-%s.log" % tag}, out, indent=2)
    if proc.returncode != 0:
        raise BenchError("node_failover failed (rc %d): %s" % (proc.returncode, proc.stdout[-1500:]))
    fenced = None
    if os.path.exists(report):
        fenced = json.load(open(report)).get("fence_plan", {}).get("fence")
    return {"tasks": tasks, "fenced": fenced}


def one_case(cfg, kube, case):
    """RUNS runs of the playbook (and of the manual fix when the case has a baseline), each on
    a freshly built state."""
    runs = {"playbook": [], "manual": []}
    limit = 120 + 2 * case["total"]
    for index in range(RUNS):
        kinds = (["manual"] if case["baseline"] else []) + ["playbook"]
        for kind in kinds:
            state = build(cfg, kube, case)
            state["rack"] = case["scenario"] == "rack"
            try:
                if kind == "manual":
                    result = timed(kube, state, lambda: manual_fix(cfg, state), limit)
                else:
                    tag = "%s-%d" % (case["name"], index)
                    result = timed(kube, state, lambda: playbook_fix(cfg, state, tag), limit)
                    result["tasks_file"] = ".cache/bench/failover-%s.json" % tag
            finally:
                clean(cfg, kube, state)
            result["build_seconds"] = state.get("build_seconds")
            runs[kind].append(result)
            sys.stderr.write("bench_failover: %s run %d %s: Running %s s, done %s s\n" % (
                case["name"], index + 1, kind, result["running_seconds"], result["done_seconds"]))
    return runs


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def top_tasks(runs, count=5):
    """The slowest tasks, median over the runs."""
    per_task = {}
    for run in runs:
        for task in run.get("tasks", []):
            per_task.setdefault(task["task"], []).append(task["seconds"])
    ranked = sorted(((statistics.median(v), k) for k, v in per_task.items()), reverse=True)
    return [{"task": k, "median_seconds": round(m, 2)} for m, k in ranked[:count]]


def cases(cfg):
    chosen = [c for c in os.environ.get("BENCH_FAILOVER_CASES", "").split(",") if c]
    rack_nodes = [n for n in cfg.nodes if n != "node-a"][:RACK_NODES]
    out = [{"name": "stale-rbd-watcher", "scenario": "stale-rbd-watcher", "total": 1, "baseline": False}]
    for n in (1, 10, 100):
        out.append({"name": "volumes-%d" % n, "scenario": "node-volumes", "volumes": n, "total": n, "baseline": True})
    out.append({"name": "rack-%dx%d" % (RACK_NODES, RACK_VOLUMES), "scenario": "rack", "nodes": rack_nodes,
                "volumes": RACK_VOLUMES, "total": RACK_NODES * RACK_VOLUMES, "baseline": True})
    return [c for c in out if not chosen or c["name"] in chosen]


def skip_reason(cfg, case):
    if case["scenario"] != "rack":
        return None
    if len(case["nodes"]) < RACK_NODES:
        return "the lab has %d nodes, the rack needs %d and node-a (start the lab with LAB_NODES=%d)" % (
            len(cfg.nodes), RACK_NODES, RACK_NODES + 1)
    inputs = open(os.path.join(REPO, "playbooks", "meta", "inputs.yml")).read()
    if not re.search(r"^\s+failed_nodes:", inputs, re.M):
        return "node_failover has no failed_nodes input yet"
    return None


def row(case, runs, error=None):
    playbook = median(r["running_seconds"] for r in runs.get("playbook", []))
    manual = median(r["running_seconds"] for r in runs.get("manual", []))
    done = median(r["done_seconds"] for r in runs.get("playbook", []))
    out = {"id": "failover." + case["name"].replace("-", "_"), "case": case["name"], "volumes": case["total"],
           "figure": playbook, "unit": "s", "playbook_done_seconds": done, "baseline": manual,
           "baseline_label": "the manual fix (ceph osd blocklist add, kubectl delete loops) on the same state"
           if case["baseline"] else None,
           "slowest_tasks": top_tasks(runs.get("playbook", [])), "error": error, "runs": runs}
    if case["name"] == "stale-rbd-watcher":
        out["work"] = "node_failover on stale-rbd-watcher: start -> replacement pod Running"
        out["goal"] = "<= 5 s"
        out["met"] = playbook is not None and playbook <= 5
    elif case["scenario"] == "rack":
        out["work"] = "node_failover, %d nodes x %d volumes (failed_nodes): start -> every replacement Running" % (
            len(case["nodes"]), case["volumes"])
        out["goal"] = "<= 60 s"
        out["met"] = playbook is not None and playbook <= 60
    else:
        out["work"] = "node_failover, %d volume%s on the node: start -> every replacement Running" % (
            case["total"], "" if case["total"] == 1 else "s")
        out["goal"] = "<= manual fix + 10 s" + (" (%.2f s)" % (manual + 10) if manual is not None else "")
        out["met"] = playbook is not None and manual is not None and playbook <= manual + 10
    if error:
        out["work"] += " - " + error
        out["met"] = False
    return out


def per_volume_row(rows):
    """The playbook's own time per volume: (playbook - floor) at 100 minus at 10, over 90."""
    by = {r["case"]: r for r in rows}
    ten, hundred = by.get("volumes-10"), by.get("volumes-100")
    if not ten or not hundred:
        return None
    figure = baseline = None
    if None not in (ten["figure"], ten["baseline"], hundred["figure"], hundred["baseline"]):
        figure = round(((hundred["figure"] - hundred["baseline"]) - (ten["figure"] - ten["baseline"])) / 90, 3)
        baseline = 0.0
    return {"id": "failover.overhead_per_volume", "case": "overhead per volume", "volumes": "10->100",
            "work": "node_failover's own time per volume: (node_failover - manual fix) from 10 to 100 volumes, / 90",
            "figure": figure, "unit": "s/volume", "baseline": baseline,
            "baseline_label": "the manual fix (0 by definition)", "goal": "<= 0.1 s/volume",
            "met": figure is not None and figure <= 0.1, "error": None}


def fmt(value, unit="s"):
    return "-" if value is None else "%.2f %s" % (value, unit) if isinstance(value, float) else str(value)


def print_table(rows):
    print("node_failover on the lab (median of %d runs; floor = manual fix on the same state)" % RUNS)
    print("%-20s %8s %14s %14s %-44s %s" % ("case", "volumes", "node_failover", "manual fix", "goal", "met"))
    for r in rows:
        met = {True: "yes", False: "NO"}.get(r.get("met"), "-")
        unit = "s/vol" if r["case"] == "overhead per volume" else "s"
        print("%-20s %8s %14s %14s %-44s %s" % (r["case"], r["volumes"], fmt(r["figure"], unit),
                                                fmt(r["baseline"], unit), r.get("goal") or "", met))
        if r.get("error"):
            print("    %s" % r["error"])
    for r in rows:
        if r.get("slowest_tasks"):
            print("slowest tasks, %s: %s" % (r["case"], "; ".join(
                "%s %.2f s" % (t["task"], t["median_seconds"]) for t in r["slowest_tasks"][:3])))
    print("results: .cache/bench/failover.json (per-task times: .cache/bench/failover-<case>-<run>.json)")


def load_average():
    return [round(v, 2) for v in os.getloadavg()]


def main():
    started_load = load_average()
    cfg = labmod.Config()
    if not os.path.exists(os.path.join(cfg.dir, "kubeconfig")):
        sys.exit("bench_failover: no lab at %s (start one: make lab-up)" % cfg.dir)
    kube = KubeClient(server_from_kubeconfig(os.path.join(cfg.dir, "kubeconfig")))
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for case in cases(cfg):
        reason = skip_reason(cfg, case)
        if reason:
            rows.append(row(case, {}, error="not measured: " + reason))
            continue
        try:
            rows.append(row(case, one_case(cfg, kube, case)))
        except (BenchError, labmod.LabError, subprocess.SubprocessError) as exc:
            rows.append(row(case, {}, error="failed: %s" % str(exc)[-800:]))
            try:
                reset(cfg, kube)
            except (BenchError, labmod.LabError):
                pass
    extra = per_volume_row(rows)
    if extra:
        rows.append(extra)
    with open(os.path.join(OUT, "failover.json"), "w") as out:
        json.dump({"bench": "node_failover", "command": ".venv/bin/python scripts/bench_failover.py",
                   "load_average": {"before": started_load, "after": load_average()}, "cpus": os.cpu_count(),
                   "runs_per_case": RUNS, "lab_nodes": cfg.nodes, "rows": rows}, out, indent=2)
    lab_cli("clean-scenario", "--wait", "60")
    print_table(rows)
    return 0 if all(r.get("met") is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

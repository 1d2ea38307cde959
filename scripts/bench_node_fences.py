#!/usr/bin/env python3
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark the volfence.csi.node_fences role: 1,000 nodes, one Unfenced NetworkFence each.

    .venv/bin/python scripts/bench_node_fences.py [--nodes 1000] [--prune 10] [--goal-seconds 20]
        [--again-goal-seconds 5] [--repeat 3]

It needs no lab: it starts its own Kubernetes API emulator (tools/kubeemu, a separate process on
a free loopback port) with the CSI-Addons CRDs of the lab, --nodes Ready nodes (InternalIP
198.18.x.y, a benchmarking range: no packet is sent anywhere), a NetworkFenceClass and one Connected
CSIAddonsNode, plus kubeemu's CSI-Addons controller stand-in (a thread of this script, user agent
"bench-stand-in") that answers every fence with Succeeded, as the real controller does for an
Unfenced fence. The role then runs as users run it, with its defaults (wait for the controller's
result included), through ansible-playbook from the project virtualenv:

1. converge:  every fence is created (one module call);
2. again:     nothing changes, and the role makes ZERO writes (POST/PUT/PATCH/DELETE in the
              emulator's request log, GET /_emulator/requests);
3. prune:     --prune nodes are deleted; the next run deletes exactly their fences.

Ansible's own start-up is included in the timings. --repeat rounds (default 3), each on a fresh
emulator; the medians count, printed with the machine's load average (the timings depend on it).
Results: .cache/bench/node_fences.json (with rows for scripts/bench_report.py) and a table on stdout. Exit status 1 when a goal is missed
(median converge within --goal-seconds, median second run within --again-goal-seconds (issue 13:
5 s), zero writes on every second run, exactly --prune deletes on every third).
"""

import json
import os
import statistics
import sys
import tempfile
import time

from kubeemu.client import Admin, KubeClient
from kubeemu.csi import NetworkFenceStandIn, csiaddons_crds

from benchtools import PLAY, VENV_BIN, bench_parser, bench_playbook, start_emulator, stop_emulator, venv_ready

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASS = "bench-fence"
DRIVER = "rbd.csi.ceph.com"
STAND_IN_AGENT = "bench-stand-in"
WRITES = ("POST", "PUT", "PATCH", "DELETE")

PLAYBOOK = PLAY % "node_fences" + """  roles:
    - role: volfence.csi.node_fences
      node_fences_network_fence_class: {cls}
      node_fences_kubeconfig: {kubeconfig}
"""


def node(index):
    name = "bench-node-%04d" % index
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"addresses": [{"type": "InternalIP", "address": "198.18.%d.%d" % (index // 250, 1 + index % 250)},
                                     {"type": "Hostname", "address": name}],
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


def seed(api, admin, count):
    for crd in csiaddons_crds():
        api.create("customresourcedefinitions", crd)
    admin.seed(*[node(i) for i in range(count)])
    api.create("networkfenceclasses", {
        "apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFenceClass", "metadata": {"name": CLASS},
        "spec": {"provisioner": DRIVER, "parameters": {
            "csiaddons.openshift.io/networkfence-secret-name": "rook-csi-rbd-provisioner",
            "csiaddons.openshift.io/networkfence-secret-namespace": "rook-ceph"}}})
    # Rook's ceph-csi configuration lists the cluster's monitors (ConfigMap rook-ceph-csi-config, key
    # csi-cluster-config-json): the role checks no fence holds one, and refuses where none can be read.
    admin.seed({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rook-ceph-csi-config", "namespace": "rook-ceph"},
        "data": {"csi-cluster-config-json": json.dumps([{"clusterID": "rook-ceph", "monitors": ["192.0.2.254:6789"]}])}})
    admin.seed({
        "apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "CSIAddonsNode",
        "metadata": {"name": "csi-rbdplugin-provisioner", "namespace": "rook-ceph"},
        "spec": {"driver": {"name": DRIVER, "nodeID": "bench-node-0000", "endpoint": "pod://provisioner:9070"}},
        "status": {"state": "Connected", "message": "Successfully established connection with sidecar"}})


def run_role(workdir, playbook):
    run = bench_playbook("bench_node_fences", workdir, "localhost,", playbook)
    if os.environ.get("BENCH_NODE_FENCES_KEEP"):
        with open(os.path.join(os.environ["BENCH_NODE_FENCES_KEEP"], "run-%d.out" % int(time.time())), "w") as handle:
            handle.write(run.stdout)
    report = None
    for result in run.results("localhost"):
        if result.get("ansible_facts", {}).get("node_fences_report"):
            report = result["ansible_facts"]["node_fences_report"]
    if report is None:
        sys.exit("bench_node_fences: the role set no node_fences_report: %s" % run.stdout[-2000:])
    return run.seconds, report


def writes_since(admin, seq):
    items = admin.requests(since=seq)
    mine = [r for r in items if r.get("user_agent") != STAND_IN_AGENT]
    return (len(mine), [r for r in mine if r["method"] in WRITES],
            max([seq] + [r["seq"] for r in items]))


def bench_once(args):
    """One round on a fresh emulator: converge, again, prune. Returns {runs, pruned, stand_in_answers}."""
    workdir = tempfile.mkdtemp(prefix="bench-node-fences-")
    emulator, kubeconfig, url = start_emulator(workdir, "bench_node_fences", history=200000)
    # The CSI-Addons controller's part: every fence answered (Succeeded), no finalizer.
    stand_in = NetworkFenceStandIn(KubeClient(url, timeout=60, user_agent=STAND_IN_AGENT), finalizer=False,
                                   name="bench-stand-in")
    results = {"runs": {}}
    try:
        api = KubeClient(url, timeout=60, user_agent="bench")
        admin = Admin(url, timeout=60)
        seed(api, admin, args.nodes)
        stand_in.start()
        playbook = os.path.join(workdir, "bench.yml")
        with open(playbook, "w") as handle:
            handle.write(PLAYBOOK.format(python=json.dumps(os.path.join(VENV_BIN, "python")), cls=CLASS,
                                         kubeconfig=json.dumps(kubeconfig)))
        seq = writes_since(admin, 0)[2]

        def run(name):
            nonlocal seq
            elapsed, report = run_role(workdir, playbook)
            requests, writes, seq = writes_since(admin, seq)
            methods = {}
            for item in writes:
                methods[item["method"]] = methods.get(item["method"], 0) + 1
            results["runs"][name] = {"seconds": round(elapsed, 2), "requests": requests, "writes": len(writes),
                                     "writes_by_method": methods, "summary": report["summary"]}
            return report

        run("converge")
        run("again")
        gone = ["bench-node-%04d" % i for i in range(args.nodes - args.prune, args.nodes)]
        for name in gone:
            api.delete("nodes", name)
        seq = writes_since(admin, seq)[2]
        report = run("prune")
        results["pruned"] = report["pruned"]
        results["stand_in_answers"] = len(stand_in.answered)
    finally:
        stand_in.stop()
        stop_emulator(emulator, workdir)
    return results


def main(argv=None):
    parser = bench_parser(__doc__, "node_fences.json")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--prune", type=int, default=10, help="nodes deleted before the third run")
    parser.add_argument("--goal-seconds", type=float, default=20.0, help="goal of the converge run")
    parser.add_argument("--again-goal-seconds", type=float, default=5.0,
                        help="goal of the second run (nothing to write)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds on fresh emulators; the medians count")
    args = parser.parse_args(argv)
    venv_ready("bench_node_fences")

    load_before = os.getloadavg()
    rounds = [bench_once(args) for _i in range(max(1, args.repeat))]
    load_after = os.getloadavg()
    names = ("converge", "again", "prune")
    medians = dict((name, statistics.median(r["runs"][name]["seconds"] for r in rounds)) for name in names)
    results = {"nodes": args.nodes, "goal_seconds": args.goal_seconds, "again_goal_seconds": args.again_goal_seconds,
               "repeat": len(rounds), "rounds": rounds, "median_seconds": medians,
               "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
               "cpus": os.cpu_count()}

    goals = {
        "converge_seconds": medians["converge"] <= args.goal_seconds
        and all(r["runs"]["converge"]["summary"]["created"] == args.nodes for r in rounds),
        "again_seconds": medians["again"] <= args.again_goal_seconds,
        "second_run_zero_writes": all(r["runs"]["again"]["writes"] == 0
                                      and r["runs"]["again"]["summary"]["unchanged"] == args.nodes for r in rounds),
        "prune_deletes_exactly": all(r["runs"]["prune"]["summary"]["deleted"] == args.prune
                                     and r["runs"]["prune"]["writes_by_method"] == ({"DELETE": args.prune} if args.prune else {})
                                     for r in rounds),
    }
    results["goals"] = goals
    each = lambda name: " ".join("%.2f" % r["runs"][name]["seconds"] for r in rounds)  # noqa: E731
    results["bench"] = "node_fences"
    results["command"] = (".venv/bin/python scripts/bench_node_fences.py " + " ".join(
        argv if argv is not None else sys.argv[1:])).strip()
    # The rows of the bench table (scripts/bench_report.py). The baseline of the second run is the first:
    # what a run costs when it writes every fence.
    results["rows"] = [
        {"id": "node_fences.converge", "work": "node_fences, %d nodes: first run creates every fence (median of %d: %s)"
         % (args.nodes, len(rounds), each("converge")), "figure": medians["converge"], "unit": "s", "baseline": None,
         "goal": "<= %g s, %d created" % (args.goal_seconds, args.nodes), "met": goals["converge_seconds"]},
        {"id": "node_fences.again", "work": "node_fences, %d nodes: second run, nothing to change (median of %d: %s)"
         % (args.nodes, len(rounds), each("again")), "figure": medians["again"], "unit": "s",
         "baseline": medians["converge"], "baseline_label": "the first run",
         "goal": "<= %g s and zero writes (%s)" % (args.again_goal_seconds, ", ".join(
             str(r["runs"]["again"]["writes"]) for r in rounds)),
         "met": goals["again_seconds"] and goals["second_run_zero_writes"]},
        {"id": "node_fences.prune", "work": "node_fences, %d nodes deleted: the next run prunes their fences (median "
         "of %d: %s)" % (args.prune, len(rounds), each("prune")), "figure": medians["prune"], "unit": "s",
         "baseline": None, "goal": "exactly %d deletes" % args.prune, "met": goals["prune_deletes_exactly"]},
    ]
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)

    print("node_fences role, %d nodes (own emulator + controller stand-in; Ansible start-up included); %d round(s), "
          "%d CPUs, load average %.2f before, %.2f after" % (args.nodes, len(rounds), os.cpu_count() or 0,
                                                              load_before[0], load_after[0]))
    print("%-10s %8s %-22s %9s %7s  %s" % ("run", "median s", "each round", "requests", "writes", "role summary (last round)"))
    for name in names:
        r = rounds[-1]["runs"][name]
        s = r["summary"]
        print("%-10s %8.2f %-22s %9d %7d  created %d, updated %d, deleted %d, unchanged %d" % (
            name, medians[name], " ".join("%.2f" % x["runs"][name]["seconds"] for x in rounds), r["requests"], r["writes"],
            s["created"], s["updated"], s["deleted"], s["unchanged"]))
    print("goals: converge <= %.0f s: %s; second run <= %.0f s: %s; second run writes nothing: %s; "
          "prune deletes exactly %d: %s" % (
              args.goal_seconds, "ok" if goals["converge_seconds"] else "MISSED", args.again_goal_seconds,
              "ok" if goals["again_seconds"] else "MISSED", "ok" if goals["second_run_zero_writes"] else "MISSED",
              args.prune, "ok" if goals["prune_deletes_exactly"] else "MISSED"))
    print("results: %s" % os.path.relpath(args.output, REPO))
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

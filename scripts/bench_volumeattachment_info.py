#!/usr/bin/env python3
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark volfence.csi.volumeattachment_info over 2,000 VolumeAttachments (issue 13).

    .venv/bin/python scripts/bench_volumeattachment_info.py [--attachments 2000] [--on-dead-node 100]
        [--runs 5]

It needs no lab: it starts its own Kubernetes API emulator (tools/kubeemu, through
benchtools.start_emulator) and loads the cluster of scripts/bench_diagnose.py without its
events: 20 Ready nodes and one dead node (addresses in 198.18.0.0/15, a benchmarking range: nothing is
sent there), per workload a PVC, a ceph-csi PV, a pod and its VolumeAttachment; --on-dead-node of the
attachments are to the dead node (its pods Terminating, their replacements ContainerCreating).

Two questions, each timed from ansible-playbook's start to its end (Ansible's start-up included, as
users run it), median of --runs, the two ways alternating so that a change of load hits both:

  node   what is attached to the dead node:
         new       volfence.csi.volumeattachment_info node=<dead node> (reads and assesses those);
         baseline  kubernetes.core.k8s_info of every VolumeAttachment, then a Jinja selectattr on
                   spec.nodeName (no assessment at all);
  all    every attachment, assessed:
         new       volfence.csi.volumeattachment_info (no selector: PVs, nodes and pods read too);
         baseline  kubernetes.core.k8s_info of every VolumeAttachment, PersistentVolume, Node and Pod
                   (the reads the same answer needs, without the assessment).

Goal of each: the median is not slower than the baseline's (the module does more: it says why each
attachment is stale; the lists it needs are the floor any tool pays). Every run's answer is checked: node selects exactly the dead node's
attachments and finds each stale; all selects every attachment and finds exactly those stale.

Results: .cache/bench/volumeattachment_info.json (rows for scripts/bench_report.py) and a table on
stdout. Exit status 1 when a goal is missed.
"""

import json
import os
import re
import statistics
import sys
import tempfile

from kubeemu.csi import attachment_name

import bench_diagnose  # its cluster generator (this script's folder)
from benchtools import (COLLECTIONS, PLAY, VENV_BIN, bench_parser, bench_playbook, start_emulator, stop_emulator,
                        venv_ready)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEAD = bench_diagnose.DEAD

NEW = PLAY % "volumeattachment_info" + """  tasks:
    - name: Read and assess the attachments
      volfence.csi.volumeattachment_info:
        kubeconfig: {kubeconfig}
        {selector}
      register: bench_vas

    - name: Count
      ansible.builtin.debug:
        msg: "BENCH selected={{{{ bench_vas.volumeattachments | length }}}} stale={{{{ bench_vas.volumeattachments | selectattr('stale') | list | length }}}}"
"""

BASELINE = PLAY % "k8s_info baseline" + """  tasks:
    - name: List every attachment
      kubernetes.core.k8s_info:
        kubeconfig: {kubeconfig}
        api_version: storage.k8s.io/v1
        kind: VolumeAttachment
      register: bench_vas

    - name: List what an assessment of every attachment needs besides (PVs, nodes, pods)
      kubernetes.core.k8s_info:
        kubeconfig: {kubeconfig}
        kind: "{{{{ item }}}}"
      loop: {more_kinds}
      register: bench_more

    - name: Count
      ansible.builtin.debug:
        msg: "BENCH selected={{{{ bench_vas.resources {select} | list | length }}}} stale=-1"
"""


def named(objs):
    """The objects, each VolumeAttachment under the name Kubernetes gives it (csi- + sha256 of volume handle,
    driver and node, as the module computes it): else every one would be stale for its name."""
    objs = list(objs)
    handles = dict((o["metadata"]["name"], o["spec"]["csi"]["volumeHandle"]) for o in objs
                   if o["kind"] == "PersistentVolume")
    for obj in objs:
        if obj["kind"] == "VolumeAttachment":
            spec = obj["spec"]
            obj["metadata"]["name"] = attachment_name(handles[spec["source"]["persistentVolumeName"]],
                                                      spec["attacher"], spec["nodeName"])
    return objs


def counted_run(workdir, path, collections):
    """One run of a question's playbook, timed: (seconds, attachments selected, stale of them)."""
    run = bench_playbook("bench_volumeattachment_info", workdir, "localhost,", path, collections=collections,
                         json_results=False)
    match = re.search(r"BENCH selected=(\d+) stale=(-?\d+)", run.stdout)
    if not match:
        sys.exit("bench_volumeattachment_info: %s printed no count:\n%s" % (path, run.stdout[-3000:]))
    return round(run.seconds, 2), int(match.group(1)), int(match.group(2))


def main(argv=None):
    parser = bench_parser(__doc__, "volumeattachment_info.json")
    parser.add_argument("--attachments", type=int, default=2000)
    parser.add_argument("--on-dead-node", type=int, default=100, help="attachments to the dead node")
    parser.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_VA_RUNS", "5")))
    parser.add_argument("--collections-path", default=COLLECTIONS,
                        help="where volfence.csi is found (another copy: to measure a proposed change)")
    args = parser.parse_args(argv)
    venv_ready("bench_volumeattachment_info")

    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="bench-va-")
    emulator, kubeconfig, url = start_emulator(workdir, "bench_volumeattachment_info")
    timings = {}
    try:
        objs, _stuck = bench_diagnose.cluster(args.attachments, args.on_dead_node)
        objs = named(o for o in objs if o["kind"] != "Event")
        bench_diagnose.load(url, objs)
        python = json.dumps(os.path.join(VENV_BIN, "python"))
        books = {}
        for question, selector, select, more_kinds in (
                ("node", "node: %s" % DEAD, "| selectattr('spec.nodeName', 'equalto', '%s')" % DEAD, "[]"),
                ("all", "", "", "[PersistentVolume, Node, Pod]")):
            for way, text in (("new", NEW.format(python=python, kubeconfig=json.dumps(kubeconfig), selector=selector)),
                              ("baseline", BASELINE.format(python=python, kubeconfig=json.dumps(kubeconfig),
                                                           select=select, more_kinds=more_kinds))):
                path = os.path.join(workdir, "%s-%s.yml" % (question, way))
                with open(path, "w") as handle:
                    handle.write(text)
                books[(question, way)] = path
                timings[(question, way)] = []
        expect = {("node", "new"): (args.on_dead_node, args.on_dead_node), ("node", "baseline"): (args.on_dead_node, -1),
                  ("all", "new"): (args.attachments, args.on_dead_node), ("all", "baseline"): (args.attachments, -1)}
        for _run in range(max(1, args.runs)):
            for key in (("node", "new"), ("node", "baseline"), ("all", "new"), ("all", "baseline")):
                elapsed, selected, stale = counted_run(workdir, books[key], args.collections_path)
                if (selected, stale) != expect[key]:
                    sys.exit("bench_volumeattachment_info: %s %s selected %d (stale %d), expected %d (stale %d)" % (
                        key[0], key[1], selected, stale, expect[key][0], expect[key][1]))
                timings[key].append(elapsed)
    finally:
        stop_emulator(emulator, workdir)
    load_after = os.getloadavg()

    medians = dict((key, statistics.median(values)) for key, values in timings.items())
    what = {"node": ("volumeattachment_info node=%s (%d of %d attachments, assessed)" % (DEAD, args.on_dead_node,
                                                                                        args.attachments),
                     "k8s_info of all, Jinja selectattr on spec.nodeName"),
            "all": ("volumeattachment_info, all %d attachments assessed" % args.attachments,
                    "k8s_info listing the attachments, PVs, nodes and pods it reads, no assessment")}
    rows = []
    for question in ("node", "all"):
        new, base = medians[(question, "new")], medians[(question, "baseline")]
        rows.append({"id": "volumeattachment_info.%s" % question, "work": what[question][0],
                     "figure": round(new, 2), "unit": "s", "baseline": round(base, 2),
                     "baseline_label": what[question][1], "goal": "<= baseline (%.2f s)" % base,
                     "met": new <= base, "runs": timings[(question, "new")],
                     "baseline_runs": timings[(question, "baseline")]})
    results = {"bench": "volumeattachment_info", "command": (".venv/bin/python scripts/bench_volumeattachment_info.py "
                                                          + " ".join(argv if argv is not None else sys.argv[1:])).strip(),
               "attachments": args.attachments, "on_dead_node": args.on_dead_node, "runs": args.runs,
               "load_average": {"before": [round(x, 2) for x in load_before],
                                "after": [round(x, 2) for x in load_after]},
               "cpus": os.cpu_count(), "rows": rows}
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
        handle.write("\n")

    print("volumeattachment_info, %d attachments (%d on the dead node), own emulator, Ansible start-up included; "
          "median of %d, %d CPUs, load average %.2f before, %.2f after" % (
              args.attachments, args.on_dead_node, args.runs, os.cpu_count() or 0, load_before[0], load_after[0]))
    for row in rows:
        print("  %-62s %6.2f s   baseline %6.2f s (%s)   goal %s: %s" % (
            row["work"], row["figure"], row["baseline"], row["baseline_label"], row["goal"],
            "met" if row["met"] else "MISSED"))
        print("  %-62s runs %s / baseline %s" % ("", row["runs"], row["baseline_runs"]))
    print("results: %s" % os.path.relpath(args.output, REPO))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

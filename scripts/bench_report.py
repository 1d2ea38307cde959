#!/usr/bin/python3
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bench table: every benchmark's figures side by side with their baselines and goals (issue 13).

    .venv/bin/python scripts/bench_report.py [--dir .cache/bench] [--since EPOCH] [--json OUT]

Reads the JSON each scripts/bench_*.py wrote into --dir and prints ONE table: work, figure,
baseline, goal, met (yes/no), then per benchmark the command that produced it and the machine's
load average while it ran. `make bench` runs every bench script, then this one.

The shape a bench script writes (one file per script, <name>.json):

    {"bench": "volumeattachment_info",
     "command": ".venv/bin/python scripts/bench_volumeattachment_info.py",
     "load_average": {"before": [1m, 5m, 15m], "after": [1m, 5m, 15m]}, "cpus": 2,
     "rows": [{"id": "volumeattachment_info.node",        # stable: REQUIRED below names it
               "work": "what was measured, in words",
               "figure": 1.5, "unit": "s",                 # a number (with its unit) or a text
               "baseline": 2.3, "baseline_label": "what the baseline is",   # number, text or null
               "goal": "<= baseline (2.30 s)",            # the goal in words
               "met": true,                               # true or false, decided by the bench script
               "slowest_tasks": [{"task": ..., "median_seconds": ...}]}, ...]}   # optional (profile_tasks)

diagnose.json and ceph.json, written before this shape, are read as they are (their rows are made
here from their own goals and results; their commands and load are not recorded).

Exit status: 0 when every required row is there and met; 1 when a goal is missed or a row is
missing (a file not written, written before --since, i.e. by an earlier run, or without the row),
each named.
"""

import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The rows `make bench` must produce, by file, in the order of the table: (id, what is missing in words).
REQUIRED = [
    ("diagnose.json", [("diagnose.200", "diagnose at 200 workloads"),
                       ("diagnose.2000", "diagnose at 2,000 workloads"),
                       ("diagnose.growth", "diagnose growth from 200 to 2,000 workloads")]),
    ("failover.json", [("failover.stale_rbd_watcher", "node_failover on stale-rbd-watcher: replacement Running"),
                       ("failover.volumes_1", "node_failover, 1 volume on the node, against the manual fix"),
                       ("failover.volumes_10", "node_failover, 10 volumes on the node, against the manual fix"),
                       ("failover.volumes_100", "node_failover, 100 volumes on the node, against the manual fix"),
                       ("failover.overhead_per_volume", "node_failover's own overhead per volume"),
                       ("failover.rack_5x20", "a 5-node rack with 20 volumes each")]),
    ("volumeattachment_info.json", [("volumeattachment_info.node", "volumeattachment_info of a node, 2,000 attachments"),
                                    ("volumeattachment_info.all", "volumeattachment_info of all 2,000 attachments")]),
    ("node_fences.json", [("node_fences.converge", "node_fences first run on 1,000 nodes"),
                          ("node_fences.again", "node_fences second run on 1,000 nodes"),
                          ("node_fences.prune", "node_fences prune run")]),
    ("ceph.json", [("ceph.fence_range", "fencing a /24 in range mode"),
                   ("ceph.fence_parallel", "fencing a /24 address by address in parallel"),
                   ("ceph.audit", "the watcher audit of 1,000 images"),
                   ("ceph.fence_read_locks", "the failover's fence read of 1,000 images with their locks")]),
    ("eda.json", [("eda.failover", "failover_on_node_loss: a node loss to a Running replacement, no human step")]),
    ("real_clocks.json", [("real_clocks.eda_deployment", "failover_on_node_loss on real clocks, a Deployment"),
                          ("real_clocks.eda_statefulset", "failover_on_node_loss on real clocks, a StatefulSet"),
                          ("real_clocks.by_hand_deployment", "node_failover by hand on real clocks, a Deployment"),
                          ("real_clocks.by_hand_statefulset", "node_failover by hand on real clocks, a StatefulSet"),
                          ("real_clocks.by_hand_after_admin_taint",
                           "node_failover by hand on real clocks after an administrator's taint"),
                          ("real_clocks.by_hand_ceph_csi_fencing",
                           "node_failover by hand on real clocks, ceph-csi fencing on detach"),
                          ("real_clocks.by_hand_after_admin_taint_ceph_csi_fencing",
                           "node_failover by hand on real clocks after an administrator's taint, ceph-csi fencing on"),
                          ("real_clocks.kubernetes_alone", "Kubernetes alone on real clocks (baseline)"),
                          ("real_clocks.admin_taint_alone", "an administrator's taint alone on real clocks (baseline)"),
                          ("real_clocks.admin_taint_alone_ceph_csi_fencing",
                           "an administrator's taint alone, ceph-csi fencing on (baseline)")]),
]


def _diagnose_rows(data):
    sizes = data.get("sizes") or {}
    goals = data.get("goals") or {}
    rows = []
    keys = sorted(sizes, key=int)
    for key in keys:
        entry = sizes[key]
        row = {"id": "diagnose.%s" % key, "work": "diagnose, %s workloads (%d stuck), median of %d" % (
            "{:,}".format(int(key)), data.get("stuck", 0), len(entry.get("new") or [])),
            "figure": entry.get("new_median"), "unit": "s", "baseline": entry.get("baseline_median"),
            "baseline_label": "the playbook before issue 13: k8s_info + Jinja"}
        if key == keys[-1] and "largest_met" in goals:
            row.update(goal="<= %g s" % goals.get("largest_within_seconds"), met=bool(goals["largest_met"]))
        elif entry.get("baseline_median") is not None and entry.get("new_median") is not None:
            row.update(goal="<= baseline", met=entry["new_median"] <= entry["baseline_median"])
        rows.append(row)
    if keys and "growth_met" in goals:
        small, large = sizes[keys[0]], sizes[keys[-1]]
        base = None
        if small.get("baseline_median") is not None and large.get("baseline_median") is not None:
            base = round(large["baseline_median"] - small["baseline_median"], 2)
        rows.append({"id": "diagnose.growth", "work": "diagnose, %s -> %s workloads: added time" % (
            "{:,}".format(int(keys[0])), "{:,}".format(int(keys[-1]))), "figure": goals.get("growth_seconds"),
            "unit": "s", "baseline": base, "baseline_label": "the same for the old playbook",
            "goal": "<= %g s" % goals.get("growth_within_seconds"), "met": bool(goals["growth_met"])})
    return rows


def _ceph_rows(data):
    goals = data.get("goals") or {}
    passed = data.get("pass") or {}
    if "fence_range_seconds" not in data:
        return []
    seq = data.get("fence_sequential_seconds")
    seq_label = "`ceph osd blocklist add` x254 in sequence%s" % (
        " (%d timed, extrapolated)" % data.get("fence_sequential_sampled_addresses", 0)
        if data.get("fence_sequential_extrapolated") else "")
    rows = [
        {"id": "ceph.fence_range", "work": "fence %s (254 hosts), range mode: 1 command" % data.get("cidr"),
         "figure": data["fence_range_seconds"], "unit": "s", "baseline": seq, "baseline_label": seq_label,
         "goal": "<= %g s" % goals.get("fence_range_seconds"), "met": bool(passed.get("fence_range_seconds"))},
        {"id": "ceph.fence_parallel", "work": "fence %s address by address, %s workers, 1 connection" % (
            data.get("cidr"), data.get("fence_parallel_workers")),
         "figure": data.get("fence_parallel_seconds"), "unit": "s", "baseline": seq, "baseline_label": seq_label,
         "goal": ">= %gx faster than the baseline (%sx)" % (goals.get("fence_speedup"), data.get("fence_speedup_parallel")),
         "met": bool(passed.get("fence_speedup"))},
    ]
    if "audit_module_seconds" in data:
        rows.append({"id": "ceph.audit", "work": "watcher audit, %s images (%s in use), rbd_watchers_info's path" % (
            data.get("audit_images"), data.get("audit_in_use")),
            "figure": data["audit_module_seconds"], "unit": "s", "baseline": data.get("audit_cli_seconds"),
            "baseline_label": "`rbd status` per image, in sequence",
            "goal": ">= %gx faster (%sx) and <= %g s" % (goals.get("audit_speedup"), data.get("audit_speedup"),
                                                       goals.get("audit_seconds")),
            "met": bool(passed.get("audit_speedup")) and bool(passed.get("audit_seconds"))})
    if "fence_read_seconds" in data:
        rows.append({"id": "ceph.fence_read_locks", "work": (
            "the failover's fence read, %s images with watchers, metadata and locks (issue 43): %s ms more an image"
            % (data.get("audit_images"), data.get("fence_read_extra_ms_per_image"))),
            "figure": data["fence_read_seconds"], "unit": "s", "baseline": data.get("fence_read_without_locks_seconds"),
            "baseline_label": "the same read without the locks (before issue 43)",
            "goal": "<= %d %% more than the baseline" % round(100 * (goals.get("fence_read_extra_ratio") or 0)),
            "met": bool(passed.get("fence_read_extra_ratio"))})
    return rows


# Files written before the common shape: rows made from their own fields.
LEGACY = {"diagnose.json": (_diagnose_rows, ".venv/bin/python scripts/bench_diagnose.py"),
          "ceph.json": (_ceph_rows, ".venv/bin/python scripts/bench_ceph.py")}


def load(directory, name, since):
    """(data, problem): the file's content, or None and why it cannot be used."""
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return None, "%s was not written (its bench script failed or did not run)" % name
    if since is not None and os.path.getmtime(path) < since:
        return None, "%s is from an earlier run (written %s, before this run started): its bench script failed" % (
            name, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(path))))
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, "%s cannot be read: %s" % (name, exc)
    if not isinstance(data, dict):
        return None, "%s is not a JSON object" % name
    return data, None


def rows_of(name, data):
    if isinstance(data.get("rows"), list):
        return [r for r in data["rows"] if isinstance(r, dict)]
    if name in LEGACY:
        return LEGACY[name][0](data)
    return []


def show(value, unit):
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return ("%.2f" % value).rstrip("0").rstrip(".") + (" " + unit if unit else "")
    return str(value)


def label(row):
    return str(row.get("work") or row.get("id") or row.get("case") or "a row without work or id")


def collect(directory, since):
    """(table rows, notes per file, problems)."""
    table, notes, problems = [], [], []
    for name, required in REQUIRED:
        data, problem = load(directory, name, since)
        if problem:
            problems.append(problem)
            for row_id, words in required:
                table.append({"id": row_id, "work": words, "missing": True})
            continue
        rows = rows_of(name, data)
        by_id = dict((r.get("id"), r) for r in rows)
        for row_id, words in required:
            row = by_id.get(row_id)
            if row is None:
                problems.append("%s has no row %s (%s)" % (name, row_id, words))
                table.append({"id": row_id, "work": words, "missing": True})
                continue
            if not isinstance(row.get("met"), bool):
                problems.append("%s row %s does not say whether its goal is met" % (name, row_id))
            table.append(row)
        extra = [r for r in rows if r.get("id") not in dict(required)]
        table.extend(extra)
        load_avg = data.get("load_average") or {}
        notes.append({"file": name, "command": data.get("command") or (LEGACY.get(name) or (None, None))[1] or "?",
                      "load": load_avg, "cpus": data.get("cpus"),
                      "written": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(
                          os.path.getmtime(os.path.join(directory, name))))})
    return table, notes, problems


def render(table, notes, problems):
    lines = []
    head = ("work", "figure", "baseline", "goal", "met")
    cells = []
    for row in table:
        if row.get("missing"):
            cells.append((row["work"], "MISSING", "-", "-", "no"))
            continue
        unit = row.get("unit", "s")
        base = show(row.get("baseline"), unit)
        if row.get("baseline_label") and base != "-":
            base = "%s: %s" % (base, row["baseline_label"])
        met = row.get("met")
        cells.append((label(row), show(row.get("figure"), unit), base, row.get("goal") or "-",
                      "yes" if met is True else ("no" if met is False else "?")))
    widths = [min(max(len(str(c[i])) for c in cells + [head]), limit) for i, limit in enumerate((70, 12, 70, 48, 3))]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    lines.append(fmt % head)
    lines.append("  ".join("-" * w for w in widths))
    for cell in cells:
        lines.append(fmt % cell)
    lines.append("")
    for note in notes:
        before = note["load"].get("before")
        after = note["load"].get("after")
        load_text = ("load average %s before, %s after" % (
            "/".join("%.2f" % x for x in before), "/".join("%.2f" % x for x in after))
            if before and after else "load not recorded by the script")
        lines.append("%-27s %s; %s%s; written %s" % (note["file"], note["command"], load_text,
                                                    ", %d CPUs" % note["cpus"] if note.get("cpus") else "",
                                                    note["written"]))
    slow = [r for r in table if not r.get("missing") and r.get("slowest_tasks")]
    if slow:
        lines.append("")
        lines.append("slowest tasks (profile_tasks, median over the runs):")
        for row in slow:
            lines.append("  %s: %s" % (label(row), "; ".join(
                "%s %.2f s" % (t.get("task"), t.get("median_seconds") or 0) for t in row["slowest_tasks"])))
    lines.append("")
    lines.append("now: load average %s, %d CPUs" % ("/".join("%.2f" % x for x in os.getloadavg()),
                                                     os.cpu_count() or 0))
    missed = [c[0] for c in cells if c[4] != "yes"]
    if problems or missed:
        lines.append("")
        for problem in problems:
            lines.append("MISSING: " + problem)
        for work in missed:
            if work not in [r["work"] for r in table if r.get("missing")]:
                lines.append("MISSED: " + work)
    else:
        lines.append("every goal met")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=os.path.join(REPO, ".cache", "bench"))
    parser.add_argument("--since", type=float, default=None,
                        help="seconds since the epoch when this bench run started: older files count as missing")
    parser.add_argument("--json", default=None, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    table, notes, problems = collect(args.dir, args.since)
    print(render(table, notes, problems))
    ok = not problems and all(r.get("met") is True for r in table if not r.get("missing"))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": table, "benches": notes, "problems": problems, "ok": ok}, handle, indent=2)
            handle.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

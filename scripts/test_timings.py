#!/usr/bin/env python3
"""Where `make test` spent its time: the report printed at the end of scripts/run_tests.py, also on
its own (`.venv/bin/python scripts/test_timings.py [stage ...]`, from .cache/results of the last run).

- the slowest tests, by the seconds junit gives each test case (setup, call and teardown);
- seconds by area: each stage's tests summed by folder (tests/integration/<area>, tests/unit/..., the
  tools, sanity), beside the stage's wall time;
- for the integration areas, where a test's seconds went (tests/integration/conftest.py writes them,
  one JSON line per test, to .cache/results/<stage>/timings.jsonl): building (the fixtures' setup),
  the lab's CLI (scenarios, holders, nodes: working, and waiting for the lab), Ansible (start-up
  until its first task, then its tasks), the Ceph CLI, waiting in the test process, and the rest
  (asserting, API reads, teardown);
- the integration files that cost the most CPU (each test's process and the commands it waited for).

It also writes .cache/results/durations.json: {test id: seconds}. With --save it records in
tests/durations.json each integration test file's seconds and the wall time of each stage that is
not an integration shard (from .cache/results/stages.json, written by scripts/run_tests.py), of
that run: scripts/run_tests.py deals the integration files to its lanes on them.
"""

import collections
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, ".cache", "results")
SLOWEST = 20


def area_of(test_id):
    """tests/integration/playbooks/test_x.py::t -> integration/playbooks; sanity tests -> sanity."""
    path = test_id.split("::", 1)[0]
    parts = path.replace(".", "/").split("/") if "/" not in path else path.split("/")
    if parts[:2] == ["tests", "integration"] and len(parts) > 3:
        return "integration/" + parts[2]
    if parts[:2] == ["tests", "unit"]:
        return "unit/" + "/".join(parts[2:4]) if len(parts) > 4 else "unit"
    if parts[:1] == ["tools"] and len(parts) > 1:
        return "tools/" + parts[1]
    return parts[0] or "other"


def testcases(stage):
    """The junit <testcase> elements of the stage's result files (an unreadable file is skipped)."""
    for path in sorted(glob.glob(os.path.join(RESULTS, stage, "*.xml"))):
        try:
            cases = list(ElementTree.parse(path).getroot().iter("testcase"))
        except ElementTree.ParseError:
            continue
        for case in cases:
            yield case


def junit_cases(stage):
    """[(test id, seconds)] of the stage's junit files, ids path-like (tests/x/test_y::name) so that
    area_of() can place them; sanity tests as sanity::<name>."""
    out = []
    for case in testcases(stage):
        name = re.sub(r"-python-\d+(\.\d+)*$", "", case.get("name", ""))
        classname = case.get("classname", "")
        if "sanity" in stage:
            test_id = "sanity::%s" % name
        elif classname.startswith(("tests.", "tools.")):
            # pytest's classname: dotted module path (and class); back to a path-like id
            module, _, rest = classname.partition(".test_")
            test_id = "%s/test_%s::%s" % (module.replace(".", "/"), rest.replace(".", "::"), name) \
                if rest else "%s::%s" % (classname, name)
        else:
            test_id = "%s::%s" % (classname, name)
        out.append((test_id, float(case.get("time") or 0)))
    return out


def timing_lines(stage):
    path = os.path.join(RESULTS, stage, "timings.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


KINDS = [("lab CLI: waiting for the lab", "waiting for the lab"), ("lab CLI: working", "working"),
         ("ansible: start-up", "ansible: start-up"), ("ansible: tasks", "ansible: tasks"), ("Ceph: CLI and test clients", "ceph "),
         ("waiting in the test process", "waiting in the test")]
OTHER = "other (test code: asserting, API reads)"


def breakdown(lines):
    """{area: {kind: seconds}} of the timings lines: each kind summed over setup, call and teardown, the
    rest of the test's seconds as OTHER; 'in fixture setup' says how much of it all was building."""
    out = collections.defaultdict(lambda: collections.defaultdict(float))
    for line in lines:
        row = out[area_of(line["id"])]
        phases = line.get("phases") or {}
        total = sum(phases.values())
        spent = line.get("spent") or {}
        row["tests"] += 1
        row["total"] += total
        row["in fixture setup"] += phases.get("setup", 0.0)
        known = 0.0
        for label, key in KINDS:
            value = sum(v for k, v in spent.items() if key in k)
            row[label] += value
            known += value
        row[OTHER] += max(0.0, total - known)
    return out


def report(stages, stage_seconds=None, out=sys.stdout):
    stage_seconds = stage_seconds or {}
    cases = dict((stage, junit_cases(stage)) for stage in stages)
    durations = {}
    for stage, items in cases.items():
        for test_id, seconds in items:
            durations["%s %s" % (stage, test_id)] = seconds
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "durations.json"), "w") as handle:
        json.dump(durations, handle, indent=1, sort_keys=True)

    w = out.write
    w("\n===== slowest %d tests (seconds: setup + call + teardown)\n" % SLOWEST)
    ranked = sorted(((s, stage, t) for stage, items in cases.items() for t, s in items), reverse=True)[:SLOWEST]
    for seconds, stage, test_id in ranked:
        w("%8.1f  %-14s %s\n" % (seconds, stage, test_id))

    w("\n===== seconds by area (test time summed; a stage's areas run side by side under xdist)\n")
    w("%-14s %-40s %6s %9s\n" % ("stage", "area", "tests", "seconds"))
    for stage in stages:
        by_area = collections.defaultdict(lambda: [0, 0.0])
        for test_id, seconds in cases[stage]:
            entry = by_area[area_of(test_id)]
            entry[0] += 1
            entry[1] += seconds
        for area, (count, seconds) in sorted(by_area.items(), key=lambda kv: -kv[1][1]):
            w("%-14s %-40s %6d %9.0f\n" % (stage, area, count, seconds))
        if stage in stage_seconds:
            w("%-14s %-40s %6s %9.0f\n" % (stage, "(the stage's wall time)", "", stage_seconds[stage]))

    rows = {}
    for stage in stages:
        for area, row in breakdown(timing_lines(stage)).items():
            rows["%s %s" % (stage, area)] = row
    if rows:
        labels = ["in fixture setup"] + [label for label, _ in KINDS] + [OTHER]
        w("\n===== where the integration tests' seconds went (summed per area; % of its test time; a test that runs "
          "commands in threads can pass 100%)\n")
        for name, row in sorted(rows.items(), key=lambda kv: -kv[1]["total"]):
            total = row["total"] or 1.0
            w("%s: %d tests, %.0f s\n" % (name, row["tests"], row["total"]))
            w("    " + "; ".join("%s %.0f s (%.0f%%)" % (label, row[label], 100.0 * row[label] / total)
                                 for label in labels if row[label] >= 0.5) + "\n")
    heaviest = cpu_by_file(stages)
    if heaviest:
        w("\n===== the integration files that cost the most CPU (the tests' processes and the commands they ran, "
          "summed over stages; not the labs' daemons)\n")
        for cpu, path, count in heaviest:
            w("%8.0f CPU-s  %4d tests  %s\n" % (cpu, count, path))


def cpu_by_file(stages, top=15):
    """[(CPU seconds, test file, tests)] of the integration tests of `stages`, most first: each test's
    CPU and its waited-for children's (tests/integration/conftest.py), summed per file."""
    out = collections.defaultdict(lambda: [0.0, 0])
    for stage in stages:
        for line in timing_lines(stage):
            if "cpu" in line:
                entry = out[line["id"].split("::", 1)[0]]
                entry[0] += line["cpu"]
                entry[1] += 1
    return sorted(((cpu, path, count) for path, (cpu, count) in out.items()), reverse=True)[:top]


def file_seconds(stages):
    """{test file: seconds} summed over the junit test cases of `stages` (pytest's classname is the
    file's dotted path, then any class)."""
    out = collections.defaultdict(float)
    for stage in stages:
        for case in testcases(stage):
            parts = case.get("classname", "").split(".")
            module = next((i for i, part in enumerate(parts) if part.startswith("test_")), None)
            if module is not None:
                out["/".join(parts[:module + 1]) + ".py"] += float(case.get("time") or 0)
    return dict((k, round(v, 1)) for k, v in sorted(out.items()))


def save(stages, path=None):
    """Record the integration files' seconds in tests/durations.json (what the shards are cut on)."""
    path = path or os.path.join(REPO, "tests", "durations.json")
    integration = [s for s in stages if s.startswith("integration-")]
    try:
        with open(os.path.join(RESULTS, "stages.json")) as handle:
            walls = json.load(handle)
    except (IOError, OSError, ValueError):
        walls = {}
    record = {"comment": "seconds of each integration test file, and wall seconds of the other stages, in one "
                         "make test run (scripts/test_timings.py --save); scripts/run_tests.py deals the "
                         "integration files to its lanes on them",
              "integration": file_seconds(integration),
              "stages": dict((k, v) for k, v in sorted(walls.items()) if not k.startswith("integration-"))}
    with open(path, "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\n")
    return record


def main(argv):
    saving = "--save" in argv
    argv = [a for a in argv if a != "--save"]
    stages = argv or sorted(d for d in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, d)))
    report(stages)
    if saving:
        record = save(stages)
        print("saved %d files' seconds to tests/durations.json" % len(record["integration"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

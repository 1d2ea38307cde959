#!/usr/bin/env python3
"""Run every test stage of the collection and print one pytest-style summary.

Stages (all by default, or name some): sanity, sanity-oldest, units, integration.
  sanity       ansible-test sanity on a temporary ansible_collections tree (offline)
  sanity-oldest  the same on the oldest supported ansible-core (.venv-oldest)
  units        ansible-test units
  integration  starts the lab (real Ceph, simulated nodes), runs tests/integration with the
               controller's Python and the Ceph-bindings Python, and always stops the lab

Each stage's output goes to the terminal and to .cache/results/<stage>.log.
Exit status is non-zero when any stage failed.
"""

import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
BINDINGS_PY = "/usr/bin/python3"
RESULTS = os.path.join(REPO, ".cache", "results")
LAB = [BINDINGS_PY, os.path.join(REPO, "tests", "lab", "lab.py")]
# The test run has a lab of its own (its own names, subnet, ports and folder), so a developer's
# `make lab-up` lab survives `make test`. TEST_LAB_PREFIX overrides it.
TEST_LAB_PREFIX = os.environ.get("TEST_LAB_PREFIX", "vftest")
TEST_LAB_DIR = os.path.join(REPO, ".lab-" + TEST_LAB_PREFIX)
# A KUBECONFIG set by the user points the Kubernetes tests at a real cluster instead of the lab's.
USER_KUBECONFIG = os.environ.get("KUBECONFIG")

COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def run_logged(name, cmd, env=None):
    """Run cmd, teeing its output to the stage log; return (rc, output)."""
    log_path = os.path.join(RESULTS, name + ".log")
    print("\n===== %s: %s" % (name, " ".join(cmd)), flush=True)
    chunks = []
    with open(log_path, "a") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, bufsize=1)
        for line in proc.stdout:
            sys.stdout.write(line)
            log.write(line)
            chunks.append(line)
        rc = proc.wait()
    return rc, "".join(chunks)


def closing_counts(output):
    """Counts from the last summary line of a pytest-style run ('3 passed, 1 skipped in 2s')."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for line in reversed(output.splitlines()):
        found = COUNT.findall(line)
        if found and ("passed" in line or "failed" in line or "skipped" in line or "error" in line):
            for number, word in found:
                key = {"error": "failed", "errors": "failed", "xfailed": "skipped", "xpassed": "passed"}.get(word, word)
                counts[key] += int(number)
            break
    return counts


def pytest_cmd(python, paths, extra=()):
    return [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs"] + list(extra) + paths


def stage_sanity():
    return [run_logged("sanity", [os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity"])]


def stage_sanity_oldest():
    """Sanity on the oldest ansible-core the collection supports (its own virtualenv)."""
    env = dict(os.environ, VOLFENCE_VENV=os.path.join(REPO, ".venv-oldest"), ANSIBLE_TEST_PYTHONS="3.12")
    return [run_logged("sanity-oldest", [os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity"], env=env)]


def stage_units():
    return [run_logged("units", [os.path.join(REPO, "scripts", "ansible_test.sh"), "units"])]


def lab_env():
    env = dict(os.environ)
    path = os.path.join(TEST_LAB_DIR, "env")
    with open(path) as handle:
        for line in handle:
            match = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
            if match:
                value = match.group(2)
                if value.startswith("'") and value.endswith("'"):
                    value = value[1:-1]
                env[match.group(1)] = value
    # KUBECONFIG in the tests' environment means "a real cluster": only the user sets it. Tests
    # that use the lab's API emulator find its kubeconfig in the lab folder.
    env.pop("KUBECONFIG", None)
    if USER_KUBECONFIG:
        env["KUBECONFIG"] = USER_KUBECONFIG
    return env


def stage_integration():
    results = []
    os.environ.update(LAB_PREFIX=TEST_LAB_PREFIX, LAB_DIR=TEST_LAB_DIR)
    for key in ("LAB_SLOT", "LAB_NODES"):
        os.environ.pop(key, None)
    rc, _ = run_logged("integration", LAB + ["up"])
    if rc != 0:
        return [(rc, "1 failed (lab-up)")]
    try:
        env = lab_env()
        controller = sorted(os.path.relpath(os.path.join(root), REPO)
                            for root, _dirs, files in os.walk(os.path.join(REPO, "tests", "integration"))
                            if any(f.startswith("test_") and f.endswith(".py") for f in files)
                            and "bindings" not in root)
        if controller:
            results.append(run_logged("integration", pytest_cmd(VENV_PY, controller), env=env))
        bindings = os.path.join("tests", "integration", "bindings")
        if os.path.isdir(os.path.join(REPO, bindings)):
            results.append(run_logged("integration", pytest_cmd(BINDINGS_PY, [bindings]), env=env))
    finally:
        run_logged("integration", LAB + ["down"])
    return results


STAGES = {"sanity": stage_sanity, "sanity-oldest": stage_sanity_oldest, "units": stage_units,
          "integration": stage_integration}


def main(argv):
    names = argv or ["sanity", "sanity-oldest", "units", "integration"]
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        sys.stderr.write("unknown stage(s): %s (known: %s)\n" % (", ".join(unknown), ", ".join(STAGES)))
        return 2
    os.makedirs(RESULTS, exist_ok=True)
    for name in names:
        log = os.path.join(RESULTS, name + ".log")
        if os.path.exists(log):
            os.unlink(log)
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed_stages = []
    started = time.time()
    summary = []
    for name in names:
        stage_start = time.time()
        for rc, output in STAGES[name]():
            counts = closing_counts(output)
            if rc not in (0,) and counts["failed"] == 0:
                counts["failed"] = 1  # a crash before any summary line still counts as a failure
            for key in totals:
                totals[key] += counts[key]
            if rc != 0:
                failed_stages.append(name)
            summary.append("%-12s rc=%d  %d passed, %d failed, %d skipped" % (
                name, rc, counts["passed"], counts["failed"], counts["skipped"]))
        summary[-1] += "  (%.0f s)" % (time.time() - stage_start)
    print("\n===== summary (%.0f s)" % (time.time() - started))
    for line in summary:
        print(line)
    print("%d passed, %d failed, %d skipped" % (totals["passed"], totals["failed"], totals["skipped"]))
    return 1 if failed_stages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

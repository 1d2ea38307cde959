#!/usr/bin/env python3
"""Run every test stage of the collection and print one pytest-style summary.

Stages (all by default, or name some): sanity, sanity-oldest, units, integration, ceph-18, ceph-16.
  sanity         ansible-test sanity on a temporary ansible_collections tree (offline)
  sanity-oldest  the same on the oldest supported ansible-core (.venv-oldest)
  units          ansible-test units
  integration    the whole integration suite on a lab of the default Ceph release (Tentacle 20),
                 in shards on labs of their own (INTEGRATION_SHARDS)
  ceph-18        the Ceph-facing integration tests on a Reef 18.2 lab
  ceph-16        the same on a Pacific 16.2 lab

The stages run in lanes, side by side: a lab-bound test spends much of its time waiting for the
lab, so three lanes keep both cores busy. Within a lane the stages run one after another. Each lab
stage starts its own lab (its own names, subnet, ports and folder: a developer's `make lab-up` lab
survives) and always stops it.

Each stage's output goes to .cache/results/<stage>.log; the terminal gets a line when a stage
starts and its summary (and failures) when it ends. Exit status is non-zero when any stage failed.
"""

import os
import re
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
RESULTS = os.path.join(REPO, ".cache", "results")
LAB = ["/usr/bin/python3", os.path.join(REPO, "tests", "lab", "lab.py")]
# TEST_LAB_PREFIX overrides the prefix of the labs of a test run (at most 3 characters: the stages
# add a suffix).
TEST_LAB_PREFIX = os.environ.get("TEST_LAB_PREFIX", "vft")
# A KUBECONFIG set by the user points the Kubernetes tests at a real cluster instead of the lab's.
USER_KUBECONFIG = os.environ.get("KUBECONFIG")

INTEGRATION = os.path.join("tests", "integration")
# Tests that talk to Ceph and nothing else: they run on every release.
CEPH_FACING = [os.path.join(INTEGRATION, d) for d in ("ceph", "compat")]
BINDINGS = os.path.join(INTEGRATION, "bindings")
# The default release's suite in two shards of about equal length, each on its own lab.
INTEGRATION_SHARDS = [
    ["kube", "k8s", "playbooks", "fuse"],
    ["battery", "awx", "release", "roles", "lab", "ceph", "compat"],
]

COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
PRINT_LOCK = threading.Lock()


def say(text):
    with PRINT_LOCK:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def run_logged(stage, cmd, env=None):
    """Run cmd with its output in the stage's log; return (rc, output)."""
    log_path = os.path.join(RESULTS, stage + ".log")
    started = time.time()
    with open(log_path, "a") as log:
        log.write("\n===== %s\n" % " ".join(cmd))
        log.flush()
        start = log.tell()
        # Straight into the log, so that `tail -f` follows a running stage.
        rc = subprocess.call(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    with open(log_path) as log:
        log.seek(start)
        output = log.read()
    say("[%s] %s: rc=%d in %.0f s" % (stage, " ".join(os.path.basename(c) if i == 0 else c
                                                      for i, c in enumerate(cmd[:4])), rc, time.time() - started))
    return rc, output


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


def failure_lines(output):
    """What a reader needs from a failed run: pytest's short summary and skip reasons."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if "short test summary info" in line:
            return "\n".join(lines[index:])[-6000:]
    return "\n".join(lines[-40:])


def pytest_cmd(python, paths, extra=()):
    return [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "--durations=15"] + list(extra) + paths


def stage_sanity(stage):
    return [run_logged(stage, [os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity"])]


def stage_sanity_oldest(stage):
    """Sanity on the oldest ansible-core the collection supports (its own virtualenv)."""
    env = dict(os.environ, VOLFENCE_VENV=os.path.join(REPO, ".venv-oldest"), ANSIBLE_TEST_PYTHONS="3.12")
    return [run_logged(stage, [os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity"], env=env)]


def stage_units(stage):
    return [run_logged(stage, [os.path.join(REPO, "scripts", "ansible_test.sh"), "units"])]


class TestLab(object):
    """A lab of its own for one stage: LAB_CEPH release, prefix, folder."""

    def __init__(self, suffix, release):
        self.prefix = TEST_LAB_PREFIX + suffix
        self.dir = os.path.join(REPO, ".lab-" + self.prefix)
        self.release = release
        self.env = dict(os.environ, LAB_PREFIX=self.prefix, LAB_DIR=self.dir, LAB_CEPH=release)
        for key in ("LAB_SLOT", "LAB_NODES", "KUBECONFIG"):
            self.env.pop(key, None)

    def up(self, stage):
        rc, _ = run_logged(stage, LAB + ["up"], env=self.env)
        return rc == 0

    def down(self, stage):
        run_logged(stage, LAB + ["down"], env=self.env)

    def test_env(self):
        env = dict(self.env)
        with open(os.path.join(self.dir, "env")) as handle:
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

    def bindings_python(self):
        return os.path.join(self.dir, "ceph-bin", "ceph-python3")


def on_lab(stage, lab, controller_paths, bindings=True, pytest_extra=()):
    """Start the lab, run the controller's tests and (with the lab release's Python) the bindings
    tests on it, always stop it."""
    if not lab.up(stage):
        return [(1, "1 failed (lab-up)")]
    results = []
    try:
        env = lab.test_env()
        if controller_paths:
            results.append(run_logged(stage, pytest_cmd(VENV_PY, controller_paths, pytest_extra), env=env))
        if bindings:
            results.append(run_logged(stage, pytest_cmd(lab.bindings_python(), [BINDINGS]), env=env))
    finally:
        lab.down(stage)
    return results


def integration_shard(index):
    def stage(name):
        paths = [os.path.join(INTEGRATION, d) for d in INTEGRATION_SHARDS[index]]
        return on_lab(name, TestLab("i%d" % index, "20"), paths, bindings=(index == len(INTEGRATION_SHARDS) - 1))
    return stage


def ceph_release_stage(release):
    def stage(name):
        # Bad input the modules refuse by their own checks gives the same answer on every release:
        # the default release's run has those tests.
        return on_lab(name, TestLab("c" + release, release), CEPH_FACING,
                      pytest_extra=["-m", "not input_refusal"])
    return stage


def check_shards():
    """Every integration test folder is in exactly one shard (a new folder must not be left out)."""
    folders = sorted(d for d in os.listdir(os.path.join(REPO, INTEGRATION))
                     if os.path.isdir(os.path.join(REPO, INTEGRATION, d)) and d != "bindings"
                     and any(f.startswith("test_") for f in os.listdir(os.path.join(REPO, INTEGRATION, d))))
    sharded = sorted(d for shard in INTEGRATION_SHARDS for d in shard)
    if folders != sharded:
        raise SystemExit("run_tests.py: INTEGRATION_SHARDS %s does not match the test folders %s" % (sharded, folders))


STAGES = {"sanity": stage_sanity, "sanity-oldest": stage_sanity_oldest, "units": stage_units}
INTEGRATION_STAGES = ["integration-%d" % (i + 1) for i in range(len(INTEGRATION_SHARDS))]
for _i, _name in enumerate(INTEGRATION_STAGES):
    STAGES[_name] = integration_shard(_i)
STAGES["ceph-18"] = ceph_release_stage("18")
STAGES["ceph-16"] = ceph_release_stage("16")
ALIASES = {"integration": INTEGRATION_STAGES}
# Three lanes. The lab stages mostly wait (for Ceph, for the simulated kubelets: the Ceph-facing
# tests keep the load average under 1 on this 2-core machine), so the other releases' Ceph-facing
# stages run in a lane of their own beside the two shards of the default release's suite.
LANES = [["integration-1"], ["sanity", "sanity-oldest", "integration-2"], ["units", "ceph-18", "ceph-16"]]


def main(argv):
    check_shards()
    names = []
    for name in argv or [n for lane in LANES for n in lane]:
        names += ALIASES.get(name, [name])
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        sys.stderr.write("unknown stage(s): %s (known: %s)\n" % (", ".join(unknown),
                                                                  ", ".join(list(STAGES) + list(ALIASES))))
        return 2
    os.makedirs(RESULTS, exist_ok=True)
    for name in names:
        log = os.path.join(RESULTS, name + ".log")
        if os.path.exists(log):
            os.unlink(log)
    lanes = [[n for n in lane if n in names] for lane in LANES]
    lanes = [lane for lane in lanes if lane]
    outcome = {}
    started = time.time()

    def run_lane(lane):
        for name in lane:
            stage_start = time.time()
            say("[%s] started (log: %s)" % (name, os.path.relpath(os.path.join(RESULTS, name + ".log"), REPO)))
            runs = STAGES[name](name)
            outcome[name] = (runs, time.time() - stage_start)
            for rc, output in runs:
                if rc != 0:
                    say("[%s] FAILED:\n%s" % (name, failure_lines(output)))

    threads = [threading.Thread(target=run_lane, args=(lane,)) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed_stages = []
    say("\n===== summary (%.0f s, %d lanes)" % (time.time() - started, len(lanes)))
    for name in names:
        runs, seconds = outcome.get(name, ([(1, "")], 0))
        stage_counts = {"passed": 0, "failed": 0, "skipped": 0}
        for rc, output in runs:
            counts = closing_counts(output)
            if rc != 0 and counts["failed"] == 0:
                counts["failed"] = 1  # a crash before any summary line still counts as a failure
            for key in totals:
                totals[key] += counts[key]
                stage_counts[key] += counts[key]
            if rc != 0 and name not in failed_stages:
                failed_stages.append(name)
        say("%-14s %s  %d passed, %d failed, %d skipped  (%.0f s)" % (
            name, "FAILED" if name in failed_stages else "ok    ", stage_counts["passed"], stage_counts["failed"],
            stage_counts["skipped"], seconds))
    say("%d passed, %d failed, %d skipped" % (totals["passed"], totals["failed"], totals["skipped"]))
    return 1 if failed_stages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

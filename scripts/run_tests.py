#!/usr/bin/env python3
"""Run every test stage of the collection and print one pytest-style summary.

Stages (all by default, or name some): sanity, sanity-<release>, units, tools, integration, ceph-18, ceph-16.
  sanity         ansible-test sanity on a temporary ansible_collections tree (offline), on the newest
                 ansible-core (.venv)
  sanity-<X.Y>   the same on each older ansible-core release the collection claims
                 (tests/ansible-core-versions.txt), in its own virtualenv (.venv-core-<X.Y>)
  units          ansible-test units
  tools          the development tools' own tests (tools/<name>/tests: the Kubernetes API emulator,
                 the lab's pure parts), no lab needed
  integration    the whole integration suite on labs of the default Ceph release (Tentacle 20), in
                 shards (integration-1 ...) at the end of lanes, each on a lab of its own, sharing
                 the test files: each shard runs the files it claims first
  ceph-18        the Ceph-facing integration tests on a Reef 18.2 lab
  ceph-16        the same on a Pacific 16.2 lab

The stages run in lanes, side by side (LANES): a lab-bound test spends much of its time waiting for
the lab, so the lab stages each have a lane and keep both cores busy. Within a lane the stages run one
after another; the shards of the integration suite are given every test file, longest first on the
seconds of a run recorded in tests/durations.json (scripts/test_timings.py --save), and each runs the
files it claims first (tests/integration/shard_claims.py), so they end within about
a file of each other whatever the files take on the day. Each lab
stage starts its own lab (its own names, subnet, ports and folder: a developer's `make lab-up` lab
survives) and always stops it.

Each stage's output goes to .cache/results/<stage>.log (its junit files to .cache/results/<stage>/); the
terminal gets a line when a stage starts and its summary (and failures) when it ends. The summary has
a line per stage and one for all runs (a test counts once per Python, Ceph release and stage it ran
in), and closes with `N passed, N failed, N skipped` counting each test once, by its id: failed if any
of its runs failed. Exit status is non-zero when any stage failed.
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree

import test_timings  # scripts/test_timings.py: the slowest tests and seconds by area

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The lab's own reader of its env file: this script runs under the system's Python, where nothing of
# the checkout is installed; the lab and the API emulator it imports are stdlib only.
sys.path[:0] = [os.path.join(REPO, "tools", "lab"), os.path.join(REPO, "tools", "kubeemu")]
from volfence_lab.lab import read_env  # noqa: E402

VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
# TEST_RESULTS_DIR: another folder for the logs and junit files (a test of this script runs it beside a
# real run, whose results it must not touch)
RESULTS = os.environ.get("TEST_RESULTS_DIR") or os.path.join(REPO, ".cache", "results")
LAB = [VENV_PY, "-m", "volfence_lab"]  # the lab (tools/lab), installed in .venv by make setup
# TEST_LAB_PREFIX overrides the prefix of the labs of a test run (at most 3 characters: the stages
# add a suffix).
TEST_LAB_PREFIX = os.environ.get("TEST_LAB_PREFIX", "vft")
# A KUBECONFIG set by the user points the Kubernetes tests at a real cluster instead of the lab's.
USER_KUBECONFIG = os.environ.get("KUBECONFIG")

INTEGRATION = os.path.join("tests", "integration")
# Tests that talk to Ceph and nothing else: they run on every release.
CEPH_FACING = [os.path.join(INTEGRATION, d) for d in ("ceph", "compat")]
BINDINGS = os.path.join(INTEGRATION, "bindings")
# Lanes side by side; within a lane the stages run one after another. ansible-test runs one at a time
# per virtualenv (scripts/ansible_test.sh holds a lock: its tree copy is shared), so units and the newest
# sanity make one lane; each Ceph release has a lane. The default release's integration suite runs in shards,
# each at the end of a lane marked True, on a lab of its own. The shards share the test files: each is
# given all of them, longest first (tests/durations.json's seconds of a whole run, from
# scripts/test_timings.py --save; a file it does not know counts as its folder's median), and runs each
# file it claims first. Before, the files were dealt to the shards ahead: files taking longer on the day
# than on the day measured left one shard running alone at the end, one core idle (the shards ended
# at 2,107, 2,307 and 2,737 s in one run).
# Measured on 2 cores: three shards beside the other lanes took 1,810 s; a shard at the end of every
# lane (six labs at once) 2,096 s, the CPU busy 95% instead of 87% of the time.
CORE_VERSIONS = os.path.join(REPO, "tests", "ansible-core-versions.txt")


def claimed_cores():
    """The ansible-core releases the collection claims, oldest first (tests/ansible-core-versions.txt)."""
    with open(CORE_VERSIONS) as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


# The newest claimed release is .venv's own (stage "sanity"); each older one has a stage of its own. Runs
# from different virtualenvs go side by side (scripts/ansible_test.sh): the two newest of the older releases
# end the Ceph releases' lanes, which end first. Measured in one clean run (abc1d3f, the machine 96% busy):
# units, sanity and the five older releases in one lane took 1,839 s, the Ceph lanes 1,479 and 1,535 s.
OLDER_CORE_STAGES = ["sanity-" + release for release in claimed_cores()[:-1]]
LANE_PLAN = [(["units", "sanity"] + OLDER_CORE_STAGES[:-2], False), (["tools"], True), ([], True), ([], True),
             (["ceph-18"] + OLDER_CORE_STAGES[-2:-1], False), (["ceph-16"] + OLDER_CORE_STAGES[-1:], False)]
SHARD_COUNT = len([shard for _stages, shard in LANE_PLAN if shard])
# where the shards of a run claim their files (tests/integration/shard_claims.py reads the folder from
# the variable): made empty as a run starts
SHARD_CLAIMS_VARIABLE = "VOLFENCE_SHARD_CLAIMS"
SHARD_CLAIMS = os.path.join(RESULTS, "shard-claims")
DURATIONS = os.path.join(REPO, "tests", "durations.json")
# The development tools (tools/<name>: pyproject.toml, tests/ beside the package) test themselves.
TOOLS = os.path.join(REPO, "tools")

# CPU seconds of each stage's commands (run_logged), and of the whole machine (/proc/stat).
STAGE_CPU = {}


def machine_cpu():
    """(busy, total) CPU seconds of the machine since boot: /proc/stat's first line (idle and iowait
    are not busy)."""
    with open("/proc/stat") as handle:
        ticks = [int(v) for v in handle.readline().split()[1:]]
    hertz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - ticks[3] - ticks[4]) / float(hertz), sum(ticks) / float(hertz)


COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
PRINT_LOCK = threading.Lock()


def say(text):
    with PRINT_LOCK:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


class Stopping(Exception):
    """The run was asked to stop (SIGTERM, SIGINT, or the parent gone): no new command starts."""


# What a stop must end: each command's process group (every command runs in a session of its own, so
# that one killpg ends it and all it started), and each lab a stage brought up (its daemons and network
# namespaces are not in any command's group: `lab down` ends them).
STOP = threading.Event()
RUNNING = {}      # pid of a running command -> its stage
LABS_UP = {}      # lab prefix -> TestLab, from the start of its `lab up` to the end of its `lab down`
RUN_LOCK = threading.Lock()


def run_logged(stage, cmd, env=None):
    """Run cmd with its output in the stage's log; return (rc, output)."""
    log_path = os.path.join(RESULTS, stage + ".log")
    started = time.time()
    with open(log_path, "a") as log:
        log.write("\n===== %s\n" % " ".join(cmd))
        log.flush()
        start = log.tell()
        # Straight into the log, so that `tail -f` follows a running stage.
        with RUN_LOCK:
            if STOP.is_set():
                raise Stopping()
            proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            RUNNING[proc.pid] = stage
        # wait4: the CPU seconds of the command and of every process it waited for (the lab's
        # daemons are not among them: they outlive `lab up`)
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            with RUN_LOCK:
                RUNNING.pop(proc.pid, None)
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
    with PRINT_LOCK:
        STAGE_CPU[stage] = STAGE_CPU.get(stage, 0.0) + usage.ru_utime + usage.ru_stime
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


def junit_file(stage):
    """A new junit XML file for one pytest run of the stage: the closing line counts tests from them."""
    folder = os.path.join(RESULTS, stage)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "pytest-%d.xml" % len(os.listdir(folder)))


def keep_ansible_test_junit(stage, command, venv=None):
    """ansible_test.sh writes junit XML to tests/output/ansible-test/[<venv>/]<command>/python<X.Y>/junit/
    (<venv>: the virtualenv's name, when not .venv), which its next run empties: the stage keeps a copy."""
    folder = os.path.join(RESULTS, stage)
    os.makedirs(folder, exist_ok=True)
    outputs = os.path.join(REPO, "tests", "output", "ansible-test", *([venv] if venv else []))
    for path in glob.glob(os.path.join(outputs, command, "*", "junit", "*.xml")):
        run = os.path.basename(os.path.dirname(os.path.dirname(path)))
        shutil.copy(path, os.path.join(folder, "%s-%s" % (run, os.path.basename(path))))


# A test that ran several times: failed if any run failed, else passed if any run passed, else skipped.
OUTCOME_ORDER = ("failed", "passed", "skipped")


def merged(known, outcome):
    return outcome if known is None or OUTCOME_ORDER.index(outcome) < OUTCOME_ORDER.index(known) else known


def test_outcomes(stage):
    """{test id: outcome} of every test case in the stage's junit files. A test id names the test, not
    the run: pytest's node (the same on every Python and Ceph release, --rootdir is the repository),
    ansible-test sanity's test without its '-python-X.Y'; its outcome is merged() over its runs."""
    outcomes = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, stage, "*.xml"))):
        try:
            cases = list(ElementTree.parse(path).getroot().iter("testcase"))
        except ElementTree.ParseError as exc:
            outcomes["%s: unreadable %s (%s)" % (stage, os.path.basename(path), exc)] = "failed"
            continue
        for case in cases:
            name = re.sub(r"-python-\d+(\.\d+)*$", "", case.get("name", ""))
            test_id = "%s::%s" % (case.get("classname", ""), name)
            if case.find("failure") is not None or case.find("error") is not None:
                outcome = "failed"
            elif case.find("skipped") is not None:
                outcome = "skipped"
            else:
                outcome = "passed"
            outcomes[test_id] = merged(outcomes.get(test_id), outcome)
    return outcomes


def failure_lines(output):
    """What a reader needs from a failed run: pytest's short summary and skip reasons."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if "short test summary info" in line:
            return "\n".join(lines[index:])[-6000:]
    return "\n".join(lines[-40:])


def pytest_cmd(stage, python, paths, extra=()):
    # --rootdir: test ids relative to the repository, whichever folders a run is given (the summary
    # counts a test run on several Ceph releases once by its id)
    return [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "--durations=15", "--rootdir", REPO,
            "--junit-xml", junit_file(stage)] + list(extra) + paths


def stage_sanity(stage):
    runs = [run_logged(stage, [os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity"])]
    keep_ansible_test_junit(stage, "sanity")
    return runs


# An older ansible-core runs the sanity tests that ask the release itself how it takes the collection:
# its docs schema and argument specs (validate-modules, ansible-doc, action-plugin-docs), its
# meta/runtime.yml schema (runtime-metadata), its module_utils and Pythons (import, compile). The tests
# of the code's style and text (pylint, pep8, yamllint, shebang, line endings, changelog ...) ask the
# same of every release: the newest release runs them, in stage sanity. Each of those needs an
# environment of its own per release (pylint alone was 70 of the 100 CPU-seconds of sanity on 2.19).
# SANITY_OLDER_ALL=1 runs every test on every older release too (README, "What runs where").
OLDER_CORE_SANITY_TESTS = ["action-plugin-docs", "ansible-doc", "compile", "import", "runtime-metadata",
                           "validate-modules"]
OLDER_CORE_SANITY_ARGS = [] if os.environ.get("SANITY_OLDER_ALL") == "1" else \
    [arg for test in OLDER_CORE_SANITY_TESTS for arg in ("--test", test)]


def stage_sanity_on_core(stage):
    """Sanity on an older ansible-core the collection claims (sanity-<X.Y>), in its virtualenv, on the
    controller's Python only (the target-side checks on 3.11 run with the newest), the tests that ask
    the release (OLDER_CORE_SANITY_TESTS)."""
    venv = ".venv-core-" + stage[len("sanity-"):]
    env = dict(os.environ, VOLFENCE_VENV=os.path.join(REPO, venv), ANSIBLE_TEST_PYTHONS="3.12")
    runs = [run_logged(stage, [os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity"] + OLDER_CORE_SANITY_ARGS,
                       env=env)]
    keep_ansible_test_junit(stage, "sanity", venv)
    return runs


def stage_units(stage):
    runs = [run_logged(stage, [os.path.join(REPO, "scripts", "ansible_test.sh"), "units"])]
    keep_ansible_test_junit(stage, "units")
    return runs


class TestLab(object):
    """A lab of its own for one stage: LAB_CEPH release, prefix, folder."""

    def __init__(self, suffix, release, kube="lab"):
        self.prefix = TEST_LAB_PREFIX + suffix
        self.dir = os.path.join(REPO, ".lab-" + self.prefix)
        self.release = release
        self.env = dict(os.environ, LAB_PREFIX=self.prefix, LAB_DIR=self.dir, LAB_CEPH=release, LAB_KUBE=kube)
        for key in ("LAB_SLOT", "LAB_NODES", "KUBECONFIG"):
            self.env.pop(key, None)

    def up(self, stage):
        with RUN_LOCK:
            LABS_UP[self.prefix] = self
        rc, _ = run_logged(stage, LAB + ["up"], env=self.env)
        return rc == 0

    def down(self, stage):
        if STOP.is_set():
            return   # stop_everything() takes every lab down
        run_logged(stage, LAB + ["down"], env=self.env)
        with RUN_LOCK:
            LABS_UP.pop(self.prefix, None)

    def down_now(self):
        """`lab down` outside any stage (a stop): quiet, bounded."""
        try:
            subprocess.run(LAB + ["down"], cwd=REPO, env=self.env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        except subprocess.TimeoutExpired:
            say("lab %s: `lab down` did not end within 120 s" % self.prefix)

    def test_env(self):
        env = dict(self.env)
        written = read_env(self.dir)
        if written is None:
            raise RuntimeError("lab %s wrote no env file in %s" % (self.prefix, self.dir))
        env.update(written)
        # KUBECONFIG in the tests' environment means "a real cluster": only the user sets it. Tests
        # that use the lab's API emulator find its kubeconfig in the lab folder.
        env.pop("KUBECONFIG", None)
        if USER_KUBECONFIG:
            env["KUBECONFIG"] = USER_KUBECONFIG
        return env

    def bindings_python(self):
        return os.path.join(self.dir, "ceph-bin", "ceph-python3")


def add_written_cpu(stage, path):
    """Add to the stage's CPU the seconds a test process wrote at path (one number a line)."""
    try:
        with open(path) as handle:
            seconds = sum(float(line) for line in handle if line.strip())
    except (OSError, ValueError):
        return
    with PRINT_LOCK:
        STAGE_CPU[stage] = STAGE_CPU.get(stage, 0.0) + seconds


def on_lab(stage, lab, controller_paths, bindings=True, pytest_extra=(), extra_env=None):
    """Start the lab, run the controller's tests and (with the lab release's Python) the bindings
    tests on it, always stop it."""
    if not lab.up(stage):
        return [(1, "1 failed (lab-up)")]
    results = []
    try:
        env = lab.test_env()
        os.makedirs(os.path.join(RESULTS, stage), exist_ok=True)
        env["VOLFENCE_TEST_TIMINGS"] = os.path.join(RESULTS, stage, "timings.jsonl")  # tests/integration/conftest.py
        # the Python starters' CPU (not the lane's children: conftest.py writes it as pytest ends)
        starters_cpu = env["VOLFENCE_PYTHON_STARTERS_CPU"] = os.path.join(RESULTS, stage, "python-starters-cpu")
        if os.path.exists(starters_cpu):
            os.unlink(starters_cpu)
        env.update(extra_env or {})
        if controller_paths:
            results.append(run_logged(stage, pytest_cmd(stage, VENV_PY, controller_paths, pytest_extra), env=env))
            add_written_cpu(stage, starters_cpu)
        if bindings:
            files = [BINDINGS] if bindings is True else list(bindings)
            results.append(run_logged(stage, pytest_cmd(stage, lab.bindings_python(), files), env=env))
    finally:
        lab.down(stage)
    return results


def tool_test_folders():
    """tools/<name>/tests of every tool that has test files."""
    return sorted(os.path.join("tools", name, "tests") for name in os.listdir(TOOLS)
                  if os.path.isdir(os.path.join(TOOLS, name, "tests"))
                  and any(f.startswith("test_") for f in os.listdir(os.path.join(TOOLS, name, "tests"))))


def stage_tools(stage):
    """Each tool's tests with its own pytest configuration (tools/<name>/pyproject.toml), in .venv."""
    return [run_logged(stage, pytest_cmd(stage, VENV_PY, [folder])) for folder in tool_test_folders()]


def integration_files():
    """Every integration test file (repository-relative), the Ceph bindings tests' included."""
    out = []
    for top, dirs, files in os.walk(os.path.join(REPO, INTEGRATION)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        out += [os.path.relpath(os.path.join(top, f), REPO) for f in files if f.startswith("test_") and f.endswith(".py")]
    return sorted(out)


def measured(section):
    """A section of tests/durations.json: "integration" ({file: seconds}) or "stages" ({stage: wall seconds})."""
    try:
        with open(DURATIONS) as handle:
            return json.load(handle).get(section) or {}
    except (IOError, OSError, ValueError):
        return {}


def claim_order(files, seconds):
    """(the files in the order the shards claim them, their measured seconds summed): longest first (a
    file not measured counts as the median of its folder's measured files, else of all), then by name."""
    def folder(path):
        return os.path.dirname(path)
    known = sorted(v for v in seconds.values())
    overall = known[len(known) // 2] if known else 30.0
    by_folder = {}
    for path, value in seconds.items():
        by_folder.setdefault(folder(path), []).append(value)

    def estimate(path):
        if path in seconds:
            return seconds[path]
        values = sorted(by_folder.get(folder(path), []))
        return values[len(values) // 2] if values else overall
    return sorted(files, key=lambda p: (-estimate(p), p)), sum(estimate(p) for p in files)


def integration_shard(index):
    def stage(name):
        files, _seconds = claim_order(integration_files(), measured("integration"))
        paths = [p for p in files if not p.startswith(BINDINGS + os.sep)]
        bindings = [p for p in files if p.startswith(BINDINGS + os.sep)]
        return on_lab(name, TestLab("i%d" % index, "20"), paths, bindings=bindings,
                      extra_env={SHARD_CLAIMS_VARIABLE: SHARD_CLAIMS})
    return stage


def ceph_release_stage(release, backend_share):
    def stage(name):
        # Bad input the modules refuse by their own checks gives the same answer on every release:
        # the default release's run has those tests. These tests talk to Ceph alone: their lab has no
        # Kubernetes side, whose idle passes (about 5% of a core) the shards' labs need. Each Ceph
        # module test runs with one backend here, the other on the other older release
        # (tests/integration/ceph/conftest.py): half the runs, every (test, backend) pair still on an
        # older release; what differs between releases runs with both.
        return on_lab(name, TestLab("c" + release, release, kube="none"), CEPH_FACING,
                      pytest_extra=["-m", "not input_refusal"],
                      extra_env={"VOLFENCE_BACKEND_SHARE": str(backend_share)})
    return stage


def check_tool_tests():
    """No test file under tools/ is left out. (Every integration file runs: each shard is given all of
    them, and the first to claim one runs it.)"""
    # The tools stage runs tools/<name>/tests: a test file anywhere else under tools/ would never run.
    stray = [os.path.relpath(os.path.join(top, f), REPO) for top, _dirs, files in os.walk(TOOLS)
             for f in files if f.startswith("test_") and f.endswith(".py")
             and os.path.relpath(top, REPO) not in tool_test_folders()]
    if stray:
        raise SystemExit("run_tests.py: test files outside tools/<name>/tests never run: %s" % ", ".join(stray))


STAGES = {"sanity": stage_sanity, "units": stage_units, "tools": stage_tools}
STAGES.update((name, stage_sanity_on_core) for name in OLDER_CORE_STAGES)
INTEGRATION_STAGES = ["integration-%d" % (i + 1) for i in range(SHARD_COUNT)]
for _i, _name in enumerate(INTEGRATION_STAGES):
    STAGES[_name] = integration_shard(_i)
STAGES["ceph-18"] = ceph_release_stage("18", 0)
STAGES["ceph-16"] = ceph_release_stage("16", 1)
ALIASES = {"integration": INTEGRATION_STAGES}
_shards = iter(INTEGRATION_STAGES)
LANES = [stages + ([next(_shards)] if shard else []) for stages, shard in LANE_PLAN]


def process_groups_alive(pgids):
    alive = []
    for pgid in pgids:
        try:
            os.killpg(pgid, 0)
            alive.append(pgid)
        except (ProcessLookupError, PermissionError):
            pass
    return alive


def stop_everything(reason):
    """End every command this run started (its whole process group: SIGTERM, then SIGKILL after 5 s),
    then take down every lab a stage brought up, all side by side; say what was stopped."""
    with RUN_LOCK:
        STOP.set()
        groups = dict(RUNNING)
        labs = list(LABS_UP.values())
    say("\n%s: stopping %d command(s) (%s) and %d lab(s) (%s)" % (
        reason, len(groups), ", ".join(sorted(set(groups.values()))) or "none", len(labs),
        ", ".join(sorted(lab.prefix for lab in labs)) or "none"))
    started = time.time()
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    while process_groups_alive(groups) and time.time() < deadline:
        time.sleep(0.1)
    for pgid in process_groups_alive(groups):
        os.killpg(pgid, signal.SIGKILL)
    downs = [threading.Thread(target=lab.down_now) for lab in labs]
    for thread in downs:
        thread.start()
    for thread in downs:
        thread.join()
    say("stopped in %.1f s: %d command group(s) ended, %d lab(s) down" % (time.time() - started, len(groups),
                                                                         len(labs)))


def watch_for_stop():
    """SIGTERM and SIGINT stop the run (the main thread handles them), and so does the end of the parent
    (make, killed on its own: PR_SET_PDEATHSIG sends this process SIGTERM then)."""
    received = []

    def handler(signum, _frame):
        received.append(signum)
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    return received


def main(argv):
    check_tool_tests()
    if argv[:1] in (["-h"], ["--help"]):
        say(__doc__.strip() + "\n\nStages by lane: " + "; ".join(", ".join(lane) for lane in LANES)
            + "\nTool tests: " + ", ".join(tool_test_folders())
            + "\nIntegration files, shared by the shards: %d, %.0f s measured in all" % (
                len(integration_files()), claim_order(integration_files(), measured("integration"))[1]))
        return 0
    names = []
    for name in argv or [n for lane in LANES for n in lane]:
        names += ALIASES.get(name, [name])
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        sys.stderr.write("unknown stage(s): %s (known: %s)\n" % (", ".join(unknown),
                                                                  ", ".join(list(STAGES) + list(ALIASES))))
        return 2
    os.makedirs(RESULTS, exist_ok=True)
    # Python keeps the bytecode it compiles (__pycache__) even where the caller's environment says not
    # to: the lanes import the same sources (the lab's CLI, the collection's plugins) thousands of times,
    # and compiling them anew each time cost about a twentieth of the integration tests' CPU. An empty
    # value is "not set" to Python.
    os.environ["PYTHONDONTWRITEBYTECODE"] = ""
    for name in names:
        log = os.path.join(RESULTS, name + ".log")
        if os.path.exists(log):
            os.unlink(log)
        shutil.rmtree(os.path.join(RESULTS, name), ignore_errors=True)  # its junit files
    # A run's shards share its own claims only: a run started inside another's shard (a test of this
    # script) inherits the outer shard's variable, which would hand its stages the outer run's claims.
    os.environ.pop(SHARD_CLAIMS_VARIABLE, None)
    shutil.rmtree(SHARD_CLAIMS, ignore_errors=True)
    os.makedirs(SHARD_CLAIMS)
    lanes = [[n for n in lane if n in names] for lane in LANES]
    lanes = [lane for lane in lanes if lane]
    outcome = {}
    started = time.time()
    cpu_started = machine_cpu()

    def run_lane(lane):
        for name in lane:
            if STOP.is_set():
                return
            stage_start = time.time()
            say("[%s] started (log: %s)" % (name, os.path.relpath(os.path.join(RESULTS, name + ".log"), REPO)))
            try:
                runs = STAGES[name](name)
            except Stopping:
                return
            outcome[name] = (runs, time.time() - stage_start)
            for rc, output in runs:
                if rc != 0:
                    say("[%s] FAILED:\n%s" % (name, failure_lines(output)))

    received = watch_for_stop()
    threads = [threading.Thread(target=run_lane, args=(lane,), daemon=True) for lane in lanes]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        name = signal.Signals(received[0]).name if received else "SIGINT"
        stop_everything("make test: %s received" % name)
        return 128 + (received[0] if received else signal.SIGINT)
    # every lane ended: nothing left to stop, the summary follows
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    # each stage's wall time, for scripts/test_timings.py --save (the lanes are balanced on them)
    with open(os.path.join(RESULTS, "stages.json"), "w") as handle:
        json.dump(dict((n, round(outcome[n][1], 1)) for n in names if n in outcome), handle, indent=1, sort_keys=True)
    # where the time went, before the summary (whose last line stays the closing count)
    with PRINT_LOCK:
        try:
            test_timings.report(names, dict((n, outcome[n][1]) for n in names if n in outcome))
        except Exception as exc:  # the report says where time went; it does not decide the outcome
            sys.stdout.write("\n(the timing report failed: %s: %s)\n" % (type(exc).__name__, exc))
        sys.stdout.flush()
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed_stages = []
    tests = {}
    busy, total = [end - start for end, start in zip(machine_cpu(), cpu_started)]
    say("\n===== summary (%.0f s, %d lanes; the machine's CPU %.0f s busy of %.0f, %.0f%%)"
        % (time.time() - started, len(lanes), busy, total, 100.0 * busy / max(total, 1.0)))
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
        stage_tests = test_outcomes(name)
        if name in failed_stages and "failed" not in stage_tests.values():
            stage_tests[name + ": a run failed without a failing test (see its log)"] = "failed"
        for test_id, result in stage_tests.items():
            tests[test_id] = merged(tests.get(test_id), result)
        say("%-14s %s  %d passed, %d failed, %d skipped  (%.0f s, %.0f CPU-s)" % (
            name, "FAILED" if name in failed_stages else "ok    ", stage_counts["passed"], stage_counts["failed"],
            stage_counts["skipped"], seconds, STAGE_CPU.get(name, 0.0)))
    say("%-14s %s  %d passed, %d failed, %d skipped  (every run: a test counts on each Python and Ceph release)"
        % ("all runs", "FAILED" if failed_stages else "ok    ", totals["passed"], totals["failed"], totals["skipped"]))
    failed_ids = sorted(test_id for test_id, result in tests.items() if result == "failed")
    for test_id in failed_ids[:20]:  # named here too: a CI page may show only the last lines
        say("failed: %s" % test_id)
    if len(failed_ids) > 20:
        say("failed: ... and %d more (each stage's log)" % (len(failed_ids) - 20))
    say("tests, each counted once (failed if any of its runs failed):")
    outcomes = list(tests.values())
    say("%d passed, %d failed, %d skipped" % (outcomes.count("passed"), outcomes.count("failed"),
                                              outcomes.count("skipped")))
    return 1 if failed_stages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

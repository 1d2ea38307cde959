"""The battery of bad invocations (issue 17): every case in cases/*.yml is a mistake a user makes at
3 a.m. (a typo, a wrong type, a missing input, a name that matches nothing, a dangerous value). Each
must fail (or, where the case says so, warn) with a message in the user's words, must not show a
Python or Jinja internal, and must change nothing in Ceph or Kubernetes: the lab is snapshotted
before and after every case (battery_lab.py) and the two must be equal.

Case format (cases/*.yml):
  name:      what the mistake is (the test id)
  module:    FQCN, with args: {...} and optionally host: <inventory host>
  playbook:  playbooks/<name>.yml, with e: ["k=v", ...] (typed as on the command line) and/or
             extra_vars: {...} (one JSON -e)
  role:      the role, with vars: {...}, run by a generated one-role play on k8s-api
  inventory_vars: overrides of the lab inventory's all.vars (e.g. a kubeconfig that does not exist)
  check:     run with --check
  expect:    fail (default) | warn | fail_or_warn
  pattern:   regex searched (case-insensitive) in the failure messages (or the warnings)
Tokens ${NAME} in any string are replaced with the lab's values (BatteryLab.tokens).
"""

import concurrent.futures
import copy
import json
import os
import re
import subprocess
import threading

import pytest
import yaml

from battery_lab import BatteryLab, diff_snapshots
from labtools import ANSIBLE_BIN, REPO, ansible_command, ansible_env

HERE = os.path.dirname(os.path.abspath(__file__))

CASES_DIR = os.path.join(HERE, "cases")
# Texts that are Python or Jinja internals, never a message for a user.
INTERNALS = ("Traceback", "UndefinedMarker", "CapturedExceptionMarker", "Finalization of task args",
             "Error rendering template", "TemplateSyntaxError", "unexpected templating type error",
             "object has no attribute", "KeyError")
CEPH_MODULES = ("ceph_blocklist", "ceph_blocklist_info", "rbd_watchers_info", "rbd_watchers", "rbd_lock", "rbd_lock_info")
FUSE_MODULES = ("fuse_mounts", "fuse_mounts_info")
TOKEN = re.compile(r"\$\{([A-Z0-9_]+)\}")
CASE_TIMEOUT = 240


def load_cases():
    cases = []
    for name in sorted(os.listdir(CASES_DIR)):
        if not name.endswith(".yml"):
            continue
        with open(os.path.join(CASES_DIR, name)) as handle:
            doc = yaml.safe_load(handle)
        for case in doc["cases"]:
            case = dict(case, _file=name)
            kinds = [k for k in ("module", "playbook", "role") if k in case]
            assert len(kinds) == 1, "%s: %s needs exactly one of module, playbook, role" % (name, case.get("name"))
            assert case.get("pattern"), "%s: %s has no expected pattern" % (name, case["name"])
            assert case.get("expect", "fail") in ("fail", "warn", "fail_or_warn"), case["name"]
            cases.append(case)
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


CASES = load_cases()


def substitute(value, tokens):
    if isinstance(value, str):
        def repl(match):
            if match.group(1) not in tokens:
                raise AssertionError("unknown token ${%s}" % match.group(1))
            return str(tokens[match.group(1)])
        return TOKEN.sub(repl, value)
    if isinstance(value, list):
        return [substitute(v, tokens) for v in value]
    if isinstance(value, dict):
        return dict((substitute(k, tokens), substitute(v, tokens)) for k, v in value.items())
    return value


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


# ----------------------------------------------------------------------------- running a case

def write_inventory(battery, case, folder):
    with open(os.path.join(battery.lab.dir, "inventory.yml")) as handle:
        inventory = yaml.safe_load(handle)
    overrides = case.get("inventory_vars")
    if overrides:
        inventory["all"].setdefault("vars", {}).update(overrides)
    path = os.path.join(folder, "inventory.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle)
    return path


def module_host(case):
    short = case["module"].rsplit(".", 1)[-1]
    return case.get("host") or ("ceph-admin" if short in CEPH_MODULES else "node-b" if short in FUSE_MODULES
                                else "k8s-api")


def module_defaults():
    defaults = {
        # as the playbooks set them, from the inventory's vars
        "group/volfence.csi.ceph": {"conf": "{{ volfence_ceph_conf | default(omit) }}",
                                    "keyring": "{{ volfence_ceph_keyring | default(omit) }}",
                                    "user": "{{ volfence_ceph_user | default(omit) }}"},
        "group/volfence.csi.k8s": {"kubeconfig": "{{ volfence_kubeconfig | default(omit) }}"},
    }
    for fuse in FUSE_MODULES:
        defaults["volfence.csi." + fuse] = {"kubelet_dir": "{{ volfence_kubelet_dir | default(omit) }}"}
    return defaults


def module_play(case):
    return [{"name": "battery: " + case["name"], "hosts": module_host(case), "gather_facts": False,
             "module_defaults": module_defaults(),
             "tasks": [{"name": "battery case", case["module"]: case.get("args") or {}}]}]


def batch_key(case):
    """The host of a case that can share one run with others: a module's bad arguments, expected to fail,
    on the lab's own inventory, not in check mode. Its outcome is its own task's result (a warning goes to
    the run's output, which the run's other cases share: warn cases run alone). None for the others."""
    if "module" in case and case.get("expect", "fail") == "fail" and not case.get("inventory_vars") \
            and not case.get("check"):
        return module_host(case)
    return None


def batch_task_name(case):
    return "battery case: " + case["name"]


def batch_play(host, cases):
    """One play of many module cases on one host, each its own task, each going on after a failure."""
    return [{"name": "battery: %d bad invocations on %s" % (len(cases), host), "hosts": host,
             "gather_facts": False, "module_defaults": module_defaults(),
             "tasks": [{"name": batch_task_name(case), case["module"]: case.get("args") or {}, "ignore_errors": True}
                       for case in cases]}]


def role_play(case):
    return [{"name": "battery: " + case["name"], "hosts": case.get("host", "k8s-api"), "gather_facts": False,
             "roles": [{"role": case["role"], "vars": case.get("vars") or {}}]}]


def ansible_playbook(cmd, folder):
    env = ansible_env()
    # The inventory decides where Kubernetes is: no KUBECONFIG or K8S_AUTH_* of the caller's shell.
    for key in list(env):
        if key == "KUBECONFIG" or key.startswith("K8S_AUTH_"):
            env.pop(key)
    return subprocess.run(ansible_command(cmd, env, folder), cwd=folder, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=CASE_TIMEOUT)


def run_batch(battery, host, cases, folder):
    """Run module cases of one host in one ansible-playbook: {case name: Outcome} of the cases whose task
    ran (a run that stopped before a case's task leaves that case out: it runs alone)."""
    os.makedirs(folder, exist_ok=True)
    inventory = write_inventory(battery, {}, folder)
    path = os.path.join(folder, "play.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(batch_play(host, cases), handle, sort_keys=False)
    cmd = [os.path.join(ANSIBLE_BIN, "ansible-playbook"), "-i", inventory, path, "-v"]
    proc = ansible_playbook(cmd, folder)
    try:
        data = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        return {}
    results = {}
    for play in data.get("plays", []):
        for task in play.get("tasks", []):
            if host in task.get("hosts", {}):
                results[task["task"]["name"]] = task["hosts"][host]
    outcomes = {}
    for case in cases:
        result = results.get(batch_task_name(case))
        if result is not None:
            outcomes[case["name"]] = Outcome.of_task(batch_task_name(case), host, result, cmd)
    return outcomes


def run_case(battery, case, folder):
    os.makedirs(folder, exist_ok=True)
    inventory = write_inventory(battery, case, folder)
    cmd = [os.path.join(ANSIBLE_BIN, "ansible-playbook"), "-i", inventory]
    if "playbook" in case:
        cmd.append(os.path.join(REPO, case["playbook"]))
        extra = {"report_path": os.path.join(folder, "report.json")}
        extra.update(case.get("extra_vars") or {})
        cmd += ["-e", json.dumps(extra)]
        for item in case.get("e") or []:
            cmd += ["-e", item]
    else:
        play = module_play(case) if "module" in case else role_play(case)
        path = os.path.join(folder, "play.yml")
        with open(path, "w") as handle:
            yaml.safe_dump(play, handle, sort_keys=False)
        cmd.append(path)
    if case.get("check"):
        cmd.append("--check")
    cmd.append("-v")
    return Outcome(ansible_playbook(cmd, folder), cmd)


class Outcome(object):
    """What a user sees of one run: its exit code, failure messages and warnings."""

    def __init__(self, proc, cmd):
        self.cmd = cmd
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.failures = []
        self.warnings = []
        self.data = None
        try:
            self.data = json.loads(proc.stdout[proc.stdout.index("{"):])
        except ValueError:
            pass
        for play in (self.data or {}).get("plays", []):
            for task in play.get("tasks", []):
                for host, result in task.get("hosts", {}).items():
                    self._collect(task["task"]["name"], host, result)
        for line in proc.stderr.splitlines():
            if line.startswith("[WARNING]") or line.startswith("[DEPRECATION WARNING]"):
                self.warnings.append(line)
        if self.rc != 0 and not self.failures:
            # ansible-playbook stopped before running a task (syntax, variables, inventory)
            self.failures.append(proc.stderr.strip() or proc.stdout[-2000:])

    @classmethod
    def of_task(cls, task, host, result, cmd):
        """What a user sees of one task of a batch run: as if it had run alone (a failed task fails the
        run), its output the task's result."""
        document = {"plays": [{"tasks": [{"task": {"name": task}, "hosts": {host: result}}]}]}
        failed = result.get("failed") or result.get("unreachable")
        return cls(subprocess.CompletedProcess(cmd, 2 if failed else 0, stdout=json.dumps(document), stderr=""), cmd)

    def _collect(self, task, host, result):
        for warning in result.get("warnings") or []:
            self.warnings.append(warning if isinstance(warning, str) else json.dumps(warning))
        if result.get("failed") or result.get("unreachable"):
            messages = [result.get("msg")]
            for item in result.get("results") or []:
                if isinstance(item, dict) and (item.get("failed") or item.get("unreachable")):
                    messages.append(item.get("msg"))
                    for warning in item.get("warnings") or []:
                        self.warnings.append(warning if isinstance(warning, str) else json.dumps(warning))
            for msg in messages:
                if msg:
                    self.failures.append("%s [%s]: %s" % (task, host, msg if isinstance(msg, str) else json.dumps(msg)))

    def describe(self):
        return ("rc=%d\ncommand: %s\nfailures:\n  %s\nwarnings:\n  %s\nstderr (end): %s"
                % (self.rc, " ".join(self.cmd), "\n  ".join(self.failures) or "(none)",
                   "\n  ".join(self.warnings) or "(none)", self.stderr[-1500:]))


# ----------------------------------------------------------------------------- the test

def judge(case, concrete, outcome, changed):
    """The problems of one case's run ([] when it failed the right way and changed nothing)."""
    problems = []
    if changed:
        problems.append("the lab changed:\n  " + "\n  ".join(changed))
    text = outcome.stdout + outcome.stderr
    internals = [word for word in INTERNALS if word in text]
    if internals:
        problems.append("the output shows internals: %s" % ", ".join(internals))
    pattern = re.compile(concrete["pattern"], re.I | re.S)
    expect = case.get("expect", "fail")
    failed_right = outcome.rc != 0 and any(pattern.search(m) for m in outcome.failures)
    warned_right = any(pattern.search(w) for w in outcome.warnings)
    if expect == "fail" and not failed_right:
        problems.append("expected a failure matching %r" % concrete["pattern"])
    if expect == "warn" and not warned_right:
        problems.append("expected a warning matching %r" % concrete["pattern"])
    if expect == "fail_or_warn" and not (failed_right or warned_right):
        problems.append("expected a failure or a warning matching %r" % concrete["pattern"])
    return problems


def attempt(battery, case, tokens, before=None):
    """Run one case between two snapshots: (concrete case, outcome, before, after). `before`: a
    snapshot taken after this thread's last case, when there was one (nothing of this thread ran since)."""
    before = before or battery.snapshot()
    concrete = substitute(copy.deepcopy(case), tokens)
    outcome = run_case(battery, concrete, os.path.join(battery.tmp, slug(case["name"])))
    return concrete, outcome, before, battery.snapshot()


def run_battery(battery, workers):
    """Every case, proven one by one.

    Cases first run `workers` at a time, the module cases of each host in one run of their own
    (batch_key: one Ansible start-up and two snapshots instead of one and two per case). A case
    whose before and after snapshots (its batch's) equal the baseline is proven: nothing changed
    while it ran. Any other (the lab moved while it ran, by it or by a concurrent case) is a suspect
    and runs again alone, from a rebuilt state if needed, between its own two snapshots; a case that
    changed the lab then is the one that did."""
    results = {}
    suspects = []
    tokens = battery.tokens()
    last = threading.local()  # each worker's last snapshot: the next case's before
    batches = {}
    for case in CASES:
        if batch_key(case):
            batches.setdefault(batch_key(case), []).append(case)
    alone = [case for case in CASES if not batch_key(case)]

    def first(case):
        ran = attempt(battery, case, tokens, before=getattr(last, "snapshot", None))
        last.snapshot = ran[3]
        return [(case, ran)]

    def batch(host):
        """A host's batch between two snapshots; its cases whose task did not run, alone."""
        before = getattr(last, "snapshot", None) or battery.snapshot()
        concretes = [substitute(copy.deepcopy(case), tokens) for case in batches[host]]
        outcomes = run_batch(battery, host, concretes, os.path.join(battery.tmp, "batch-" + slug(host)))
        after = battery.snapshot()
        last.snapshot = after
        ran = [(case, (concrete, outcomes[case["name"]], before, after))
               for case, concrete in zip(batches[host], concretes) if case["name"] in outcomes]
        return ran + [item for case in batches[host] if case["name"] not in outcomes for item in first(case)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        jobs = [pool.submit(batch, host) for host in sorted(batches)] + [pool.submit(first, case) for case in alone]
        for job in jobs:
            for case, (concrete, outcome, before, after) in job.result():
                if before == battery.baseline and after == battery.baseline:
                    results[case["name"]] = (concrete, outcome, [])
                else:
                    suspects.append(case)
    for case in suspects:
        if battery.snapshot() != battery.baseline:
            battery.rebuild()
        concrete, outcome, before, after = attempt(battery, case, battery.tokens())
        results[case["name"]] = (concrete, outcome, diff_snapshots(before, after))
    if suspects and battery.snapshot() != battery.baseline:
        battery.rebuild()
    battery.suspects = [c["name"] for c in suspects]
    return results


@pytest.fixture(scope="module")
def battery(lab, tmp_path_factory):
    from labtools import lab_kube
    if lab_kube(lab) is None:
        pytest.skip("the lab has no Kubernetes side")
    state = BatteryLab(lab, str(tmp_path_factory.mktemp("battery")))
    state.build()
    yield state
    state.teardown()


@pytest.fixture(scope="module")
def battery_results(battery):
    workers = int(os.environ.get("BATTERY_WORKERS") or max(2, min(6, os.cpu_count() or 2)))
    return run_battery(battery, workers)


def test_battery_is_big_enough():
    kinds = {"module": set(), "playbook": set(), "role": set()}
    for case in CASES:
        for kind in kinds:
            if kind in case:
                kinds[kind].add(case[kind])
    assert len(CASES) >= 60
    assert len(kinds["module"]) == 11, sorted(kinds["module"])
    assert len(kinds["playbook"]) == 6, sorted(kinds["playbook"])
    assert len(kinds["role"]) == 2, sorted(kinds["role"])


@pytest.mark.parametrize("case", CASES, ids=[slug(c["name"]) for c in CASES])
def test_bad_invocation(battery_results, case):
    concrete, outcome, changed = battery_results[case["name"]]
    problems = judge(case, concrete, outcome, changed)
    assert not problems, "%s\n%s" % ("\n".join(problems), outcome.describe())

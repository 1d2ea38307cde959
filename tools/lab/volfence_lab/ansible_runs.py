"""Running the collection's playbooks and modules as a user runs them: `ansible-playbook` and `ansible`
from the project virtualenv, with the checkout's ansible.cfg and volfence.csi as `make setup` links it
(.cache/collections). The integration tests (through tests/integration/labtools.py) and the benchmarks
(scripts/bench_*.py) run Ansible only through here. Ansible runs as a program of its own: nothing of the
collection is imported (docs/lab.md, "Independent of the code under test")."""

import atexit
import datetime
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from volfence_lab.lab import REPO

VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
# Callables given each finished run (an AnsibleRun): the integration tests count Ansible's seconds with one.
RUN_OBSERVERS = []


def ansible_env(extra=None, collections=COLLECTIONS, json_results=True, caller_credentials=True):
    """The environment Ansible runs in: the checkout's ansible.cfg, volfence.csi from `collections`, the
    project virtualenv first in PATH, with json_results the json stdout callback (the results are read
    from it); without caller_credentials none of the caller's Kubernetes credentials (K8S_AUTH_*,
    KUBECONFIG: the playbook names its kubeconfig); then `extra`."""
    env = dict(os.environ)
    if not caller_credentials:
        for key in list(env):
            if key.startswith("K8S_AUTH_") or key == "KUBECONFIG":
                del env[key]
    env.update({
        "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": collections,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
    })
    if json_results:
        env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    env.update(extra or {})
    return env


STARTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ansible_starter.py")
PYTHON_STARTERS = "VOLFENCE_PYTHON_STARTERS"   # python_starter.VARIABLE (that file imports nothing of ours)


class Starters(object):
    """This process's Ansible starters (ansible_starter.py), one per environment a command ran in: the
    second command of an environment starts one; the commands after it go through it once it is ready
    (until then, and if it fails, the client runs the command itself). And the folder of the Python
    starters its commands' modules may run through (python_starter.py): named in the commands'
    environment, owned by this process. Off unless `enabled`: the integration tests turn it on (their
    conftest.py); a benchmark times Ansible as a user starts it."""

    def __init__(self):
        self.enabled = False
        self.lock = threading.Lock()
        self.seen = {}       # environment key -> socket path, or None before its second command
        self.procs = []
        self.folder = None
        self.python_folder = None

    def command(self, cmd, env, cwd):
        """The argv that runs cmd: through the environment's starter when cmd is the project's ansible.
        It also names the Python starters' folder in env (the dict the command is run with)."""
        program = cmd[0]
        if not self.enabled or os.path.dirname(program) != VENV_BIN or \
                os.path.basename(program) not in ("ansible", "ansible-playbook"):
            return list(cmd)
        env[PYTHON_STARTERS] = self.python_starters()
        key = environment_key(program, env, cwd)
        with self.lock:
            if key not in self.seen:
                self.seen[key] = None
                return list(cmd)
            sock = self.seen[key]
            if sock is None:
                sock = self.seen[key] = self.start(env, cwd)
        return [os.path.join(VENV_BIN, "python"), "-I", "-S", STARTER, "client", sock, "--"] + list(cmd)

    def stop_at_exit(self):
        if self.folder is None and self.python_folder is None:
            atexit.register(self.stop)

    def python_starters(self):
        """VOLFENCE_PYTHON_STARTERS's value: this process (their owner: its end ends them) and their
        folder, which the first of them makes (python_starter.py)."""
        if self.python_folder is None:
            self.stop_at_exit()
            self.python_folder = os.path.join(tempfile.gettempdir(), "vf-python-starters-%d-%s"
                                              % (os.getpid(), os.urandom(4).hex()))
        return "%d:%s" % (os.getpid(), self.python_folder)

    def python_starter_pids(self):
        folder = self.python_folder
        pids = []
        for name in os.listdir(folder) if folder and os.path.isdir(folder) else []:
            if name.endswith(".pid"):
                try:
                    with open(os.path.join(folder, name)) as handle:
                        pids.append(int(handle.read()))
                except (OSError, ValueError):
                    pass
        return pids

    def start(self, env, cwd):
        if self.folder is None or not os.path.isdir(self.folder):   # (a starter that stopped alone removes it)
            self.stop_at_exit()
            self.folder = tempfile.mkdtemp(prefix="vf-ansible-starters-")
        sock = os.path.join(self.folder, "%d.sock" % len(self.procs))
        with open(sock + ".log", "w") as log:
            self.procs.append(subprocess.Popen([os.path.join(VENV_BIN, "python"), STARTER, "serve", sock], cwd=cwd,
                                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=log))
        return sock

    def cpu_seconds(self):
        """CPU seconds of the running starters and the commands they ran (which the caller's own
        RUSAGE_CHILDREN does not count: they are the starters' children)."""
        return cpu_of([proc.pid for proc in self.procs]) + self.python_starters_cpu_seconds()

    def python_starters_cpu_seconds(self):
        """The Python starters' part of cpu_seconds: they are not this process's children (they left the
        module run that started them), so even its RUSAGE_CHILDREN at its end never counts them."""
        return cpu_of(self.python_starter_pids())

    def stop(self):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        self.procs = []
        for pid in self.python_starter_pids():   # (not this process's children: they end on SIGTERM)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for folder in (self.folder, self.python_folder):   # (a starter that stopped alone removed its socket)
            if folder and os.path.isdir(folder):
                shutil.rmtree(folder, ignore_errors=True)
        self.python_folder = None
        self.folder = None
        self.seen.clear()


def cpu_of(pids):
    """CPU seconds of the running processes `pids` and of the children they waited for (/proc stat)."""
    total = 0.0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / float(os.sysconf("SC_CLK_TCK"))
    return total


# What changes between the commands of one environment and ansible-core does not read: pytest names the
# test that runs in it
VOLATILE = ("PYTEST_CURRENT_TEST",)


def environment_key(program, env, cwd):
    """What ansible-core reads at import: its installation, the environment (but VOLATILE), the folder,
    the configuration files it would find (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg,
    /etc/ansible/ansible.cfg)."""
    stable = sorted(item for item in env.items() if item[0] not in VOLATILE)
    digest = hashlib.sha256(json.dumps([program, cwd, stable]).encode())
    for path in (env.get("ANSIBLE_CONFIG"), os.path.join(cwd, "ansible.cfg"),
                 os.path.join(env.get("HOME", "~"), ".ansible.cfg"), "/etc/ansible/ansible.cfg"):
        if path and os.path.isfile(path):
            with open(path, "rb") as handle:
                digest.update(path.encode() + b"\0" + handle.read())
    return digest.hexdigest()


STARTERS = Starters()


def ansible_command(cmd, env, cwd=REPO):
    """The argv to run an Ansible command (`cmd`) with in env and cwd: the same command, started through an
    Ansible starter of that environment when there is one (ansible_starter.py: Ansible's start-up paid
    once). Every test and benchmark that runs the project's `ansible` or `ansible-playbook` runs this."""
    return STARTERS.command(cmd, env, cwd)


def python_starters_env():
    """The environment that lets a command's modules run through this process's Python starters
    (python_starter.py), for a command not started with ansible_command (ansible-runner's); {} when the
    starters are off."""
    return {PYTHON_STARTERS: STARTERS.python_starters()} if STARTERS.enabled else {}


def module_interpreter(python=os.path.join(VENV_BIN, "python")):
    """The `ansible_python_interpreter` of a test's own inventory: `python` (the project virtualenv's by
    default), through a wrapper that a test run's Python starters may serve (python_starter.py; without
    them it runs `python`). One wrapper per interpreter (a starter serves one interpreter command),
    written once in .cache/interpreters."""
    from volfence_lab import python_starter
    folder = os.path.join(REPO, ".cache", "interpreters")
    path = os.path.join(folder, "python-" + hashlib.sha256(python.encode()).hexdigest()[:8])
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        new = "%s.%d" % (path, os.getpid())
        python_starter.interpreter_wrapper(new, shlex.quote(python), "%s, which python_starter.py may serve" % python)
        os.rename(new, path)
    return path


def mode_options(check=False, diff=False):
    """The options of `ansible` and `ansible-playbook` for check mode and diff."""
    return (["--check"] if check else []) + (["--diff"] if diff else [])


def first_task_start(data):
    """When the run's first task started (epoch seconds; the json callback's UTC ISO times), or None."""
    for play in (data or {}).get("plays", []):
        for task in play.get("tasks", []):
            start = (task.get("task", {}).get("duration") or {}).get("start")
            if start:
                when = datetime.datetime.strptime(start.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f")
                return when.replace(tzinfo=datetime.timezone.utc).timestamp()
    return None


class AnsibleRun(object):
    """A finished run: rc, stdout, stderr; data, the json callback's document (None for a run without
    json_results); seconds from start to end, startup_seconds of them before the first task."""

    def __init__(self, proc, seconds=0.0, started_at=None, json_results=True):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.data = None
        if json_results:
            try:
                # raw_decode: a profiling callback (ansible.posix.profile_tasks) may print around the document
                self.data = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{"):])[0]
            except ValueError:
                raise AssertionError("ansible printed no JSON (rc=%d)\nstdout: %s\nstderr: %s"
                                     % (proc.returncode, proc.stdout, proc.stderr))
        self.seconds = seconds
        first = first_task_start(self.data) if started_at is not None else None
        self.startup_seconds = min(seconds, max(0.0, first - started_at)) if first is not None else seconds

    def results(self, host):
        """Task results of `host`, in play order."""
        out = []
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                if host in task.get("hosts", {}):
                    result = dict(task["hosts"][host])
                    result["_task"] = task["task"]["name"]
                    out.append(result)
        return out

    def result(self, host, index=-1):
        return self.results(host)[index]


def run_ansible(cmd, check=False, diff=False, extra_env=None, timeout=900, json_results=True, **env_options):
    """Run an Ansible command (`cmd`: the program and its arguments) in the repository with
    ansible_env(extra_env, json_results=..., **env_options); an AnsibleRun, given to RUN_OBSERVERS too."""
    started, wall = time.monotonic(), time.time()
    env = ansible_env(extra_env, json_results=json_results, **env_options)
    proc = subprocess.run(ansible_command(cmd + mode_options(check, diff), env), cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    run = AnsibleRun(proc, time.monotonic() - started, wall, json_results)
    for observer in RUN_OBSERVERS:
        observer(run)
    return run


def run_module(inventory, host, module, args, check=False, diff=False, extra_env=None):
    """Run one module ad hoc on an inventory host, exactly as a user would at 3 a.m.: its result."""
    cmd = [os.path.join(VENV_BIN, "ansible"), host, "-i", inventory, "-m", module, "-a", json.dumps(args)]
    return run_ansible(cmd, check, diff, extra_env, 300).result(host)


def run_playbook(inventory, playbook, extra_vars=None, check=False, diff=False, extra_env=None, timeout=900,
                 **run_options):
    """Run a playbook on an inventory (a file, or "localhost," for a play on this machine): an AnsibleRun.
    run_options: json_results, collections, caller_credentials (run_ansible, ansible_env)."""
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory, playbook]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    return run_ansible(cmd, check, diff, extra_env, timeout, **run_options)

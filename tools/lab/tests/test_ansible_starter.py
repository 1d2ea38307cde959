"""The Ansible starter (volfence_lab/ansible_starter.py) runs a command as the program would: the same
output and exit status, the caller's environment, a local temporary folder of its own, signals passed
on, a killed caller's command ended, and the program itself when there is no starter."""

import os
import signal
import subprocess

import pytest
from kubeemu.wait import wait_until

from volfence_lab import ansible_runs
from volfence_lab.ansible_runs import VENV_BIN, Starters, ansible_env, environment_key

WAIT = 120   # for a state that comes in well under a second on an idle machine

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(VENV_BIN, "ansible")),
                                reason="the project virtualenv has no ansible (make setup installs it)")


@pytest.fixture
def starters():
    owned = Starters()
    owned.enabled = True
    yield owned
    owned.stop()


@pytest.fixture
def env(tmp_path):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n"
                         % os.path.join(VENV_BIN, "python"))
    local_tmp = tmp_path / "local-tmp"
    local_tmp.mkdir()
    return ansible_env({"ANSIBLE_LOCAL_TEMP": str(local_tmp), "ANSIBLE_HOME": str(tmp_path / "home"),
                        "INVENTORY": str(inventory)}, json_results=False)


def adhoc(env, module, args):
    return [os.path.join(VENV_BIN, "ansible"), "localhost", "-i", env["INVENTORY"], "-m", module, "-a", args]


def run(argv, env, **options):
    return subprocess.run(argv, cwd=ansible_runs.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, **options)


def through_starter(starters, cmd, env):
    """The command as the starter runs it, once the environment's starter is ready."""
    starters.command(cmd, env, ansible_runs.REPO)          # the first command of an environment: none yet
    argv = starters.command(cmd, env, ansible_runs.REPO)   # the second starts one
    assert argv[-len(cmd):] == cmd and argv[:len(argv) - len(cmd)] != []
    sock = argv[argv.index("client") + 1]
    wait_until(lambda: os.path.exists(sock), timeout=WAIT, what="a starter listening")
    return argv


def test_a_command_answers_as_the_program_does(starters, env):
    for cmd in (adhoc(env, "ansible.builtin.command", "echo started"),
                adhoc(env, "ansible.builtin.command", "false"),
                adhoc(env, "no.such.module", "x=1")):
        direct = run(cmd, env)
        started = run(through_starter(starters, cmd, env), env)
        assert (started.returncode, started.stdout) == (direct.returncode, direct.stdout)
    assert direct.returncode != 0 and "no.such.module" in direct.stdout + direct.stderr


def test_the_command_runs_in_the_callers_environment_and_tmp_of_its_own(starters, env):
    argv = through_starter(starters, adhoc(env, "ansible.builtin.command", "printenv PYTEST_CURRENT_TEST"), env)
    for name in ("first", "second"):
        proc = run(argv, dict(env, PYTEST_CURRENT_TEST=name))
        assert proc.returncode == 0 and proc.stdout.strip().endswith(name), proc.stdout + proc.stderr
    # each command made its own local temporary folder and removed it, as the program does
    assert os.listdir(env["ANSIBLE_LOCAL_TEMP"]) == []


def test_the_default_local_tmp_is_in_ansible_home(starters, env):
    env = dict(env)
    del env["ANSIBLE_LOCAL_TEMP"]   # ansible-core's default: {{ ANSIBLE_HOME ~ "/tmp" }}
    argv = through_starter(starters, adhoc(env, "ansible.builtin.ping", ""), env)
    proc = run(argv, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.listdir(os.path.join(env["ANSIBLE_HOME"], "tmp")) == []
    assert not [name for name in os.listdir(ansible_runs.REPO) if "{{" in name]


SLEEP = "617"   # the module's command: a sleep no other process on the machine runs


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def descendants(pid):
    """The pids under pid (its children, theirs, ...)."""
    found, todo = [], [pid]
    while todo:
        below = children(todo.pop())
        found += below
        todo += below
    return found


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def module_running(pid):
    """The `sleep SLEEP` a command under pid runs (its module's), or None."""
    for child in descendants(pid):
        try:
            with open("/proc/%d/cmdline" % child) as handle:
                if handle.read().split("\0")[:2] == ["sleep", SLEEP]:
                    return child
        except OSError:
            continue
    return None


def test_signals_reach_the_command_and_a_killed_caller_takes_it_along(starters, env):
    cmd = adhoc(env, "ansible.builtin.command", "sleep " + SLEEP)
    argv = through_starter(starters, cmd, env)
    starter = starters.procs[-1]
    results, sleeps = {}, []
    for how in ("direct", "starter"):
        proc = subprocess.Popen(cmd if how == "direct" else argv, cwd=ansible_runs.REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        # the module runs: a signal now interrupts the run (not Python's start-up)
        root = proc.pid if how == "direct" else starter.pid
        wait_until(lambda: module_running(root), timeout=WAIT, what="the module running")
        sleeps.append(module_running(root))
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        results[how] = proc.returncode
    for pid in sleeps:   # what an interrupted run leaves of its module, either way
        kill(pid)
    assert results["starter"] == results["direct"]
    wait_until(lambda: descendants(starter.pid) == [], timeout=WAIT, what="the command reaped")

    proc = subprocess.Popen(argv, cwd=ansible_runs.REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_until(lambda: module_running(starter.pid), timeout=WAIT, what="the module running")
    sleep, commands = module_running(starter.pid), children(starter.pid)
    proc.kill()
    proc.wait()
    wait_until(lambda: all(not os.path.exists("/proc/%d" % pid) for pid in commands), timeout=WAIT,
               what="the command ended and reaped")
    kill(sleep)   # a killed `ansible` leaves its module running: so does this


def test_without_a_starter_the_client_runs_the_program(env, tmp_path):
    cmd = adhoc(env, "ansible.builtin.command", "echo alone")
    argv = [os.path.join(VENV_BIN, "python"), "-I", "-S", ansible_runs.STARTER, "client",
            str(tmp_path / "no-starter.sock"), "--"] + cmd
    direct, alone = run(cmd, env), run(argv, env)
    assert alone.returncode == direct.returncode == 0 and alone.stdout == direct.stdout


def test_one_starter_per_environment_and_none_for_other_programs(starters, env):
    key = environment_key(os.path.join(VENV_BIN, "ansible"), env, ansible_runs.REPO)
    assert environment_key(os.path.join(VENV_BIN, "ansible"), dict(env, PYTEST_CURRENT_TEST="x"),
                           ansible_runs.REPO) == key
    assert environment_key(os.path.join(VENV_BIN, "ansible"), dict(env, ANSIBLE_FORKS="3"),
                           ansible_runs.REPO) != key
    assert environment_key(os.path.join(VENV_BIN, "ansible"), env, "/") != key
    other = ["/usr/bin/ansible-playbook", "site.yml"]
    assert starters.command(other, env, ansible_runs.REPO) == other
    assert starters.command(other, env, ansible_runs.REPO) == other
    cmd = adhoc(env, "ansible.builtin.ping", "")
    for _ in range(3):
        starters.command(cmd, env, ansible_runs.REPO)
        starters.command(cmd, dict(env, ANSIBLE_FORKS="3"), ansible_runs.REPO)
    assert len(starters.procs) == 2


def test_off_it_returns_the_command(env):
    starters = Starters()
    cmd = adhoc(env, "ansible.builtin.ping", "")
    assert [starters.command(cmd, env, ansible_runs.REPO) for _ in range(3)] == [cmd] * 3
    assert starters.procs == []


def test_a_stopped_starter_leaves_nothing_behind(starters, env):
    argv = through_starter(starters, adhoc(env, "ansible.builtin.ping", ""), env)
    sock = argv[argv.index("client") + 1]
    starters.procs[-1].send_signal(signal.SIGTERM)   # as make test's stop sends it to every process
    assert starters.procs[-1].wait(timeout=60) == 0
    assert not os.path.exists(sock) and not os.path.exists(os.path.dirname(sock))
    proc = run(argv, env)   # a client then runs the program itself
    assert proc.returncode == 0 and "pong" in proc.stdout


MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
AnsibleModule(argument_spec={}).exit_json(changed=False, said=%r)
'''


def test_a_modules_payload_is_built_once_per_starter_and_again_when_its_source_changes(starters, env, tmp_path):
    """The forks share ansible-core's payload cache, in a folder named by the sources: a second command finds the
    payload the first built (the same file, not written again), and a command after the module changed runs the
    new module (a new folder), never the payload of the old one."""
    module = tmp_path / "collections" / "ansible_collections" / "vftest" / "one" / "plugins" / "modules" / "said.py"
    module.parent.mkdir(parents=True)
    module.write_text(MODULE % "first")
    env = dict(env, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"))
    argv = through_starter(starters, adhoc(env, "vftest.one.said", ""), env)
    shared = argv[argv.index("client") + 1] + ".payloads"

    def said():
        proc = run(argv, env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    def payloads():   # ansible-core names a payload <module's Python name>-<compression>-<extensions>
        return dict((os.path.join(folder, name), os.stat(os.path.join(folder, name)).st_ino)
                    for folder, _subfolders, files in os.walk(shared) for name in files
                    if name.startswith("ansible_collections.vftest.one.plugins.modules.said-")
                    and not name.endswith(".lock"))

    assert "said: first" in said()
    built = payloads()
    assert len(built) == 1, built
    assert "said: first" in said()
    assert payloads() == built   # found, not built again
    module.write_text(MODULE % "second, longer")
    assert "said: second, longer" in said()
    after = payloads()
    assert len(after) == 2 and set(built) < set(after), after
    # each command's own local temporary folder is gone with it; the shared folder stays with the starter
    assert os.listdir(env["ANSIBLE_LOCAL_TEMP"]) == []

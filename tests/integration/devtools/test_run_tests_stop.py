"""`make test` stopped halfway (SIGTERM, as a CI timeout or a cancelled job sends it) stops every command
and lab it started: before issue 44 the labs (network namespaces, Ceph daemons), a pytest lane that went
on starting playbooks and ansible-test's runs all outlived it and had to be found by hand.

The run here is scripts/run_tests.py's ceph-16 stage (a lab of its own, then pytest on it), under a
prefix and a results folder of its own, so that it cannot touch the suite's own run beside it."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest
from kubeemu.wait import wait_until
from volfence_lab.lab import alive

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PREFIX = "vfz"   # run_tests.py adds the stage's suffix: the lab is vfzc16
LAB_PREFIX = PREFIX + "c16"


def children():
    """{ppid: [pid]} of every process now."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (IOError, OSError):
                continue
            out.setdefault(int(fields[1]), []).append(int(name))
    return out


def descendants(pid):
    tree, found, todo = children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except (IOError, OSError):
        return ""


def netns_of_the_lab():
    listed = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(LAB_PREFIX + "-")]


def lab_env():
    env = dict(os.environ, LAB_PREFIX=LAB_PREFIX, LAB_DIR=os.path.join(REPO, ".lab-" + LAB_PREFIX))
    for key in ("LAB_SLOT", "LAB_NODES", "KUBECONFIG"):
        env.pop(key, None)
    return env


@pytest.fixture
def leaves_nothing():
    """Whatever the outcome, the run's processes (the test adds their pids to the list) and its lab do
    not outlive the test: the defect would leave them running."""
    pids = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    subprocess.run([sys.executable, "-m", "volfence_lab", "down"], env=lab_env(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)


def lab_status():
    env = lab_env()
    # `status` exits 1 when the lab is not up: its JSON is what counts here
    out = subprocess.run([sys.executable, "-m", "volfence_lab", "status"], env=env, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return json.loads(out)


def test_sigterm_halfway_stops_every_command_and_lab_it_started(tmp_path, leaves_nothing):
    # as make runs it from a shell: none of the lab this test itself runs on (LAB_*, CEPH_*, KUBECONFIG)
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(("LAB_", "CEPH_")) and k not in ("KUBECONFIG", "VOLFENCE_TEST_TIMINGS"))
    # a short temporary folder of the run's own (a Unix socket's path has at most 108 bytes): the starters'
    # folders are made there (ansible_runs.Starters)
    run_tmp = tempfile.mkdtemp(prefix="vfz-")
    env.update(TEST_LAB_PREFIX=PREFIX, TEST_RESULTS_DIR=str(tmp_path), TMPDIR=run_tmp)
    run = subprocess.Popen(["/usr/bin/python3", os.path.join(REPO, "scripts", "run_tests.py"), "ceph-16"],
                           cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
    try:
        # Halfway: the lab is up and the stage's pytest has started a module run on it.
        def ansible_running():
            return [p for p in descendants(run.pid) if "ansible" in cmdline(p) and "pytest" not in cmdline(p)]
        assert wait_until(lambda: ansible_running() or run.poll() is not None, 600, step=0.5), \
            "the stage started no ansible run within 600 s"
        assert run.poll() is None, run.communicate()[0][-3000:]
        started = descendants(run.pid)
        leaves_nothing.extend(started)
        assert netns_of_the_lab(), "the stage's lab has no network namespace"
        run.send_signal(signal.SIGTERM)
        # The fix ends in seconds (5 s of grace to the commands, then `lab down`); the defect never ends.
        output, _ = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 128 + signal.SIGTERM, output[-3000:]
    assert "make test: SIGTERM received: stopping" in output and "1 lab(s) down" in output, output[-3000:]
    left = [(p, cmdline(p)) for p in started if alive(p)]
    assert left == [], left
    # the starters (a Python starter is not a descendant: it left its caller) end with the pytest that owns
    # them, and the last takes their folder along
    def starters_left():
        return [(p, cmdline(p)) for p in map(int, filter(str.isdigit, os.listdir("/proc")))
                if run_tmp in cmdline(p) and alive(p)] + \
            [name for name in os.listdir(run_tmp) if name.startswith(("vf-python-starters-", "vf-ansible-starters-"))]
    assert wait_until(lambda: not starters_left(), 60, step=0.5), starters_left()
    shutil.rmtree(run_tmp, ignore_errors=True)
    assert netns_of_the_lab() == []
    status = lab_status()
    assert status["processes"] == 0 and not status["up"], status
    assert not os.path.exists(os.path.join(REPO, ".lab-" + LAB_PREFIX))

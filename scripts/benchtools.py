# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the benchmarks share: their command line's --output (bench_parser); and for those that bring their
own Kubernetes API (scripts/bench_node_fences.py, bench_diagnose.py, bench_volumeattachment_info.py) the
API emulator as a process of its own, the head of their playbooks, and ansible-playbook run as users run
it (volfence_lab.ansible_runs, which the integration tests use too), timed from its start to its end,
Ansible's start-up included."""

import argparse
import os
import shutil
import subprocess
import sys

from kubeemu.client import server_from_kubeconfig
from volfence_lab.ansible_runs import COLLECTIONS, VENV_BIN, run_playbook

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where each benchmark writes its results, and scripts/bench_report.py (make bench) reads them.
BENCH_RESULTS = os.path.join(REPO, ".cache", "bench")

# The head of the benchmarks' playbooks: one play on localhost with the project virtualenv's python
# (format field {python}); `PLAY % name` names it, its tasks or roles follow.
PLAY = """---
- name: Bench | %s
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: {python}
"""


def bench_parser(doc, results):
    """A benchmark's command line, described by the first line of its docstring `doc`, with --output: its
    results file, BENCH_RESULTS/<results> by default."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--output", default=os.path.join(BENCH_RESULTS, results), help="results file (JSON)")
    return parser


def start_emulator(workdir, who, history=1000):
    """The API emulator as a process of its own on a free loopback port, keeping `history` requests in
    its log: (process, kubeconfig, URL). `who` names the benchmark when it does not start."""
    kubeconfig = os.path.join(workdir, "kubeconfig")
    proc = subprocess.Popen([sys.executable, "-m", "kubeemu", "--host", "127.0.0.1", "--port", "0",
                             "--kubeconfig-out", kubeconfig, "--history", str(history)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        sys.exit("%s: the emulator did not start: %s %s" % (who, line, proc.stderr.read()))
    return proc, kubeconfig, server_from_kubeconfig(kubeconfig)


def stop_emulator(proc, workdir):
    """Stop an emulator of start_emulator and remove the benchmark's working folder `workdir`."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(workdir, ignore_errors=True)


def bench_playbook(who, workdir, inventory, playbook, extra_vars=None, collections=COLLECTIONS, timeout=900,
                   json_results=True):
    """ansible-playbook as users run it, with none of the caller's Kubernetes credentials (each playbook
    names its kubeconfig), volfence.csi from `collections`, TMPDIR in `workdir`: an AnsibleRun (its
    seconds: start to end). With json_results the json callback's document is read (data); without,
    Ansible prints as it does for users (the callback's own cost stays out of the timing). A run that
    fails ends the benchmark `who` with its output."""
    try:
        run = run_playbook(inventory, playbook, extra_vars, extra_env={"TMPDIR": workdir}, timeout=timeout,
                           json_results=json_results, collections=collections, caller_credentials=False)
    except AssertionError as exc:  # no JSON document
        sys.exit("%s: %s" % (who, exc))
    if run.rc != 0:
        sys.exit("%s: %s failed (rc=%d):\n%s\n%s" % (who, playbook, run.rc, run.stdout[-3000:], run.stderr[-2000:]))
    return run


def venv_ready(who):
    """End the benchmark `who` when make setup has not run: no project virtualenv, or no collection link."""
    if not os.path.exists(os.path.join(VENV_BIN, "ansible-playbook")):
        sys.exit("%s: no project virtualenv: run `make setup` first" % who)
    if not os.path.exists(os.path.join(COLLECTIONS, "ansible_collections", "volfence", "csi")):
        sys.exit("%s: .cache/collections does not link the checkout: run `make setup` first" % who)

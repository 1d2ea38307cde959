"""Fixtures for integration tests that run against the lab (`make lab-up`)."""

import json
import os
import resource

import pytest

import labtools
from kubeemu.wait import WAITED
from labtools import (Lab, clear_foreign_attachments, lab_config, lab_kube, read_lab_env, remove_incident,
                      remove_network_fences, undo_failover)
from volfence_lab import clocks
from volfence_lab.ansible_runs import STARTERS

# make test's shards share the files: each runs the files it claims first (shard_claims.py)
from shard_claims import pytest_runtestloop  # noqa: F401  (a hook: pytest finds it in this module)

# Ansible's start-up paid once per environment and test process (volfence_lab/ansible_starter.py);
# VOLFENCE_ANSIBLE_STARTER=0 starts every command afresh
STARTERS.enabled = os.environ.get("VOLFENCE_ANSIBLE_STARTER", "1") != "0"

# scripts/run_tests.py sets it: one JSON line per test, where its seconds went (its report sums them by area)
TIMINGS_FILE = os.environ.get("VOLFENCE_TEST_TIMINGS")
PHASES = {}


def cpu_seconds():
    """CPU seconds of this process and of the children it waited for (Ansible, the lab's CLI, the Ceph
    CLI), and of the Ansible commands its starters ran: a test's own cost to the machine, beside its wall
    seconds (not the lab's daemons)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + STARTERS.cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    labtools.SPENT.clear()
    waited = WAITED["seconds"]
    PHASES[item.nodeid] = {}
    cpu_before = cpu_seconds()
    yield
    cpu = cpu_seconds() - cpu_before
    phases = PHASES.pop(item.nodeid, {})
    if not TIMINGS_FILE:
        return
    spent = dict(labtools.SPENT)
    spent["waiting in the test (kubeemu wait_until)"] = WAITED["seconds"] - waited
    line = json.dumps(dict(id=item.nodeid, phases=phases, cpu=round(cpu, 3),
                           spent=dict((k, round(v, 3)) for k, v in spent.items() if v > 0)))
    with open(TIMINGS_FILE, "a") as handle:  # one write per line: several workers append to one file
        handle.write(line + "\n")


def pytest_sessionfinish(session):
    """The Python starters' CPU, for the stage's count in make test's report (scripts/run_tests.py): they
    are not this process's children, so its usage at its end leaves them out."""
    path = os.environ.get("VOLFENCE_PYTHON_STARTERS_CPU")
    if path:
        with open(path, "a") as handle:
            handle.write("%.3f\n" % STARTERS.python_starters_cpu_seconds())


def pytest_runtest_logreport(report):
    if report.nodeid in PHASES:
        PHASES[report.nodeid][report.when] = round(report.duration, 3)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "input_refusal: bad input a Ceph module refuses, by its own checks in Python, with the "
                   "same message whatever the Ceph release (make test runs these on the default release only; "
                   "connecting and everything the cluster answers run on every release)")
    config.addinivalue_line(
        "markers", "release_answers: what differs between Ceph releases; on the older releases, where make test "
                   "runs each Ceph module test with one backend (ceph/conftest.py), these run with both")


@pytest.fixture(scope="session", autouse=True)
def lab_release_tools_first_in_path():
    """The lab release's `ceph`, `rbd` and `rados` (<lab>/ceph-bin) come first in PATH, as for a
    user of that release's ceph-common (scripts/demo.sh does the same): the CLI backend of inventory
    host k8s-api and the tests' own calls use them, not the test machine's Pacific tools, which
    cannot read the aes256k key of a 20 lab (that case has tests of its own: tests/integration/compat,
    test_ceph_releases.py). The wrappers also work from inside the release's root."""
    env = read_lab_env() or {}
    ceph_bin = env.get("LAB_CEPH_BIN")
    if not ceph_bin or not os.path.isdir(ceph_bin):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", ceph_bin + os.pathsep + os.environ.get("PATH", ""))
        yield


@pytest.fixture(scope="session")
def lab():
    env = read_lab_env()
    if env is None:
        pytest.skip("the lab is not running: start it with `make lab-up` (make test does)")
    return Lab(env)


@pytest.fixture
def clean_lab(lab):
    """The lab with no blocklist entries and no holders before and after the test."""
    lab.unblock_all()
    yield lab
    lab.release()
    lab.unblock_all()


@pytest.fixture(scope="session")
def lab_inventory(lab):
    return os.path.join(lab.dir, "inventory.yml")


# Incident scenarios built on the lab and removed afterwards (playbook and AWX-grade tests).
@pytest.fixture
def kube(lab):
    client = lab_kube(lab)
    if client is None:
        pytest.skip("the lab has no Kubernetes side")
    return client


@pytest.fixture
def incident(clean_lab, kube):
    """Build a scenario (every node alive first); its Deployment, and the NetworkFences a failover
    created, go away after the test, and every node is alive again."""
    built = []

    def build(name):
        for node in clean_lab.nodes:
            clean_lab.lab("revive-node", node)
        state = json.loads(clean_lab.lab("scenario", name))
        built.append(state)
        return state
    yield build
    for state in built:
        remove_incident(kube, state)
    clear_foreign_attachments(kube)
    remove_network_fences(kube)
    for node in clean_lab.nodes:
        clean_lab.lab("revive-node", node)
        undo_failover(kube, node)


@pytest.fixture
def kubernetes_never_releases(lab):
    """The lab's clocks set to `never` for the test (volfence_lab.clocks): Kubernetes' own eviction and force
    detach never come, as on a real cluster in the first minutes after a node is lost, so a failover test
    cannot pass by waiting for Kubernetes. Restored afterwards."""
    before = clocks.read_mode(lab.dir)
    clocks.write(lab.dir, "never")
    yield lab
    clocks.write(lab.dir, before)


@pytest.fixture
def frozen(kubernetes_never_releases, clean_lab, kube):
    """Build volfence_lab.scenarios.frozen_rbd_watcher with the test's options (every node alive first): node-b
    paused or partitioned until its watch expired. Afterwards its Deployment goes, every node's partition heals,
    every node is revived (a frozen one's old client killed), the failover's marks are undone and its
    NetworkFences removed."""
    from volfence_lab import scenarios
    for node in clean_lab.nodes:
        clean_lab.lab("revive-node", node)
    built = []

    def build(**options):
        state = scenarios.frozen_rbd_watcher(lab_config(clean_lab), **options)
        built.append(state)
        return state
    yield build
    for state in built:
        remove_incident(kube, state)
    remove_network_fences(kube)
    for node in clean_lab.nodes:
        clean_lab.lab("heal-node", node)
        clean_lab.lab("revive-node", node)
        undo_failover(kube, node)

"""Fixtures for integration tests that run against the lab (`make lab-up`)."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labtools import Lab, clear_foreign_attachments, lab_kube, read_lab_env  # noqa: E402


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
        if state.get("deployment"):
            kube.delete("deployments", state["deployment"], "default")
    clear_foreign_attachments(kube)
    for node in clean_lab.nodes:
        clean_lab.lab("revive-node", node)
        undo_failover(kube, node)


def undo_failover(kube, name):
    """What node_recover lifts on the Kubernetes side, for a test that stopped before it ran:
    the out-of-service taint (no pod would run on the node again) and the failover's record."""
    node = kube.get("nodes", name)
    taints = node["spec"].get("taints") or []
    kept = [t for t in taints if t["key"] != "node.kubernetes.io/out-of-service"]
    if kept != taints:
        kube.patch("nodes", name, {"spec": {"taints": kept or None}})
    if "volfence.csi/failover" in (node["metadata"].get("annotations") or {}):
        kube.patch("nodes", name, {"metadata": {"annotations": {"volfence.csi/failover": None}}})

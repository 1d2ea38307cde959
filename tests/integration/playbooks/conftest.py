"""Fixtures of the playbook tests: incident scenarios built on the lab and removed afterwards."""

import json

import pytest

from labtools import clear_foreign_attachments, lab_kube


@pytest.fixture
def kube(lab):
    client = lab_kube(lab)
    if client is None:
        pytest.skip("the lab has no Kubernetes side")
    return client


@pytest.fixture
def incident(clean_lab, kube):
    """Build a scenario (every node alive first); its Deployment goes away after the test."""
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

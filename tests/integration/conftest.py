"""Fixtures for integration tests that run against the lab (`make lab-up`)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labtools import Lab, read_lab_env  # noqa: E402  (re-exported for fixtures below)


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

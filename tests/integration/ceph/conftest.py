"""The Ceph module tests run the CLI backend (inventory host k8s-api) with the `ceph` and `rbd`
of the lab's Ceph release, as a user with that release's ceph-common would: <lab>/ceph-bin first
in the PATH Ansible gets (scripts/demo.sh does the same). Without it the CLI would be the test
machine's own (Pacific 16.2.15), which cannot read the aes256k key of a 20 lab: that case has a
test of its own (test_ceph_releases.py::test_a_key_the_client_cannot_read_fails_clearly)."""

import os

import pytest

from labtools import read_lab_env


@pytest.fixture(scope="module", autouse=True)
def lab_release_cli_first():
    env = read_lab_env() or {}
    ceph_bin = env.get("LAB_CEPH_BIN")
    if not ceph_bin or not os.path.isdir(ceph_bin):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", ceph_bin + os.pathsep + os.environ.get("PATH", ""))
        yield

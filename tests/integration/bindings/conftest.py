"""The Ceph module tests run the CLI backend with the `ceph` and `rbd` of the lab's Ceph release,
as a user with that release's ceph-common would (scripts/demo.sh puts <lab>/ceph-bin first in
its PATH too). Without it the CLI of inventory host k8s-api (the controller's Python) would be
the test machine's own, Pacific 16.2.15, which cannot read the aes256k key of a 20 lab: that case
has a test of its own (test_ceph_releases.py::test_a_key_the_client_cannot_read_fails_clearly).

The PATH Ansible gets starts with a folder of two small scripts, `ceph` and `rbd`: on the test
machine they run the lab's wrappers (<lab>/ceph-bin); inside the lab release's root (host
ceph-admin's Python runs there, and a wrapper cannot start again from inside) the root's own
/usr/bin tools, which are the same release. Inside is told by "/" being the release's root
(tests/lab/ceph_releases.root_path, which the wrappers bind into that root as well)."""

import os

import pytest

import ceph_releases  # tests/lab, on the path through labtools
from labtools import read_lab_env

SHIM = """#!/bin/sh
# volfence.csi lab tests: the lab release's %(tool)s (tests/integration/ceph/conftest.py)
if [ -n "%(root)s" ] && [ "$(stat -c %%d:%%i /)" = "$(stat -c %%d:%%i %(root)s 2>/dev/null)" ]; then
  exec /usr/bin/%(tool)s "$@"
fi
exec %(wrapper)s "$@"
"""


@pytest.fixture(scope="module", autouse=True)
def lab_release_cli_first(tmp_path_factory):
    env = read_lab_env() or {}
    ceph_bin = env.get("LAB_CEPH_BIN")
    if not ceph_bin or not os.path.isdir(ceph_bin):
        yield
        return
    root = ceph_releases.root_path(env["LAB_CEPH"]) if env.get("LAB_CEPH") else None
    folder = tmp_path_factory.mktemp("lab-release-cli")
    for tool in ("ceph", "rbd"):
        path = folder / tool
        path.write_text(SHIM % dict(tool=tool, wrapper=os.path.join(ceph_bin, tool), root=root or ""))
        path.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(folder) + os.pathsep + os.environ.get("PATH", ""))
        yield


def inside_release_root():
    """Whether this Python runs inside the lab release's root (<lab>/ceph-bin/ceph-python3 does,
    as make test runs these tests), where the lab's wrappers cannot start again."""
    env = read_lab_env() or {}
    root = ceph_releases.root_path(env["LAB_CEPH"]) if env.get("LAB_CEPH") else None
    if not root:
        return False
    try:
        here, there = os.stat("/"), os.stat(root)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


@pytest.fixture(scope="module", autouse=True)
def lab_tools_of_the_root():
    """Inside the release's root the lab's own CLI calls (labtools.Lab.cli) use the root's
    /usr/bin tools, the same release, instead of the wrappers."""
    if not inside_release_root():
        yield
        return
    import labtools
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(labtools.Lab, "tool", lambda self, name: "/usr/bin/" + name)
        yield

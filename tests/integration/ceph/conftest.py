"""Fixtures of the Ceph module tests: each runs with both backends."""

import os
import zlib

import pytest

# (inventory host, backend): the Python bindings on ceph-admin (the lab release's Python), the CLI on
# k8s-api (the controller's virtualenv Python, which has no bindings)
BACKENDS = [("ceph-admin", "rados"), ("k8s-api", "cli")]
HERE = os.path.dirname(os.path.abspath(__file__))
# On the older Ceph releases, make test (scripts/run_tests.py) runs each test here with one backend,
# VOLFENCE_BACKEND_SHARE=0 on one release and 1 on the other: each release runs every test once, and
# the two together run every (test, backend) pair; the default release runs both backends. Tests marked
# release_answers (what differs between releases: test_ceph_releases.py) run with both everywhere.
BACKEND_SHARE = os.environ.get("VOLFENCE_BACKEND_SHARE")


@pytest.fixture(params=BACKENDS, ids=[b for _h, b in BACKENDS])
def backend(request):
    return request.param


def backend_share(test_name, backend_param):
    """0 or 1: the share of the older releases' runs that runs this test with this backend. A test's
    two backends fall in different shares; which one goes where depends on the test's name only."""
    return (BACKENDS.index(backend_param) + zlib.crc32(test_name.encode("utf-8"))) % 2


def pytest_collection_modifyitems(config, items):
    if BACKEND_SHARE is None:
        return
    if BACKEND_SHARE not in ("0", "1"):
        raise pytest.UsageError("VOLFENCE_BACKEND_SHARE must be 0 or 1, not %r" % BACKEND_SHARE)
    keep, other_share = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if (os.path.dirname(str(item.fspath)) != HERE or callspec is None or "backend" not in callspec.params
                or item.get_closest_marker("release_answers")):
            keep.append(item)
        elif backend_share(item.originalname, callspec.params["backend"]) == int(BACKEND_SHARE):
            keep.append(item)
        else:
            other_share.append(item)
    if other_share:
        config.hook.pytest_deselected(items=other_share)
        items[:] = keep

"""Fixtures of the Ceph module tests: each runs with both backends."""

import pytest

# (inventory host, backend): the Python bindings on ceph-admin (the lab release's Python), the CLI on
# k8s-api (the controller's virtualenv Python, which has no bindings)
BACKENDS = [("ceph-admin", "rados"), ("k8s-api", "cli")]


@pytest.fixture(params=BACKENDS, ids=[b for _h, b in BACKENDS])
def backend(request):
    return request.param

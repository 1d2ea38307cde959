"""Issue 35: the Ceph modules ad hoc, as people type them at 3 a.m.: with only the environment Ceph's own
tools read (CEPH_CONF, CEPH_ARGS; the lab's conf names the keyring beside it), and the image as
`rbd status` takes it (`image=pool/name`)."""

import pytest

from labtools import run_module


@pytest.mark.parametrize("environment", ["CEPH_CONF", "CEPH_ARGS"])
def test_ad_hoc_with_only_the_environment_ceph_reads_lists_the_watcher(clean_lab, lab_inventory, backend, environment):
    lab = clean_lab
    host, name = backend
    image = lab.new_image("adhoc")
    held = lab.hold("node-b", image)
    # the shell a user has on a Ceph admin host: `ceph -s` works there, and nothing else is said
    env = dict(CEPH_CONF=lab.conf, CEPH_ARGS="") if environment == "CEPH_CONF" else \
        dict(CEPH_CONF="", CEPH_ARGS="-c %s -n client.%s" % (lab.conf, lab.user))
    found = run_module(lab_inventory, host, "volfence.csi.rbd_watchers_info", {"image": image}, extra_env=env)
    assert found.get("failed") is not True, found
    assert found["backend"] == name and found["changed"] is False
    [report] = found["images"]
    assert report["spec"] == image and [w["address"] for w in report["watchers"]] == [held["address"]]
    assert found["in_use"] is True


def test_an_image_without_its_pool_is_answered_with_the_options_that_take_it(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, _name = backend
    refused = run_module(lab_inventory, host, "volfence.csi.rbd_watchers_info", {"image": "adhoc-img"},
                         extra_env=dict(CEPH_CONF=lab.conf, CEPH_ARGS=""))
    assert refused.get("failed") is True
    assert refused["msg"] == ("image adhoc-img needs its pool: give image=<pool>/adhoc-img "
                              "(or <pool>/<namespace>/adhoc-img), or pool: nothing was changed"), refused["msg"]

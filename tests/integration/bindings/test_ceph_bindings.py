"""The bindings backend (rados/rbd Python bindings) against the lab, without Ansible.

Run with Debian's /usr/bin/python3, which has python3-rados and python3-rbd.
"""

import json
import time

import pytest

rados = pytest.importorskip("rados")
rbd = pytest.importorskip("rbd")

from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (  # noqa: E402
    blocklist_change_command,
    connect,
    parse_image_spec,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (  # noqa: E402
    CephConnectionError,
    CephNotFoundError,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import (  # noqa: E402
    ensure_blocklist,
    read_blocklist,
    read_daemon_addresses,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import (  # noqa: E402
    describe_locks,
    exclusive_lock_owners,
)


def params(lab, **extra):
    out = dict(cluster="ceph", conf=lab.conf, keyring=lab.keyring, key=None, user=lab.user, mon_host=None,
               timeout=20, backend="rados", command_prefix=None)
    out.update(extra)
    return out


@pytest.fixture
def client(clean_lab):
    c = connect(params(clean_lab))
    yield c
    c.close()


def test_connects_with_the_bindings_and_reads_both_arrays(clean_lab, client):
    assert client.name == "rados"
    clean_lab.ceph("osd", "blocklist", "range", "add", "198.51.100.0/28", "60")
    state = read_blocklist(client)
    assert state.naming == "blocklist" and state.range_supported
    assert state.strings() == ["cidr:198.51.100.0:0/28"]
    daemons = read_daemon_addresses(client)
    assert set(str(d.addr.ip) for d in daemons) == set([clean_lab.env["CEPH_MON_HOST"]])


def test_parallel_adds_share_one_connection(clean_lab, client):
    # one add waits for a monitor proposal: its time on this machine, now
    started = time.time()
    ensure_blocklist(client, "present", addresses=["198.51.100.200"], expire=120)
    one = time.time() - started
    started = time.time()
    result = ensure_blocklist(client, "present", cidrs=["198.51.100.0/27"], cidr_mode="addresses", expire=120,
                              workers=32)
    elapsed = time.time() - started
    assert len(result["actions"]) == 30 and result["failed_actions"] == []
    assert len(result["after"]) == 30 + 1   # and the one before
    # 30 adds one by one take 30 times one add; in parallel about one. Halfway:
    assert elapsed < 15 * one + 1, (elapsed, one)
    assert client.cluster is not None  # the same librados handle did it all


def test_read_only_inspection_adds_no_watcher(clean_lab, client):
    image = clean_lab.new_image("bindro")
    held = clean_lab.hold("node-b", image)
    (spec, result, error), = client.inspect_images([parse_image_spec(image)])
    assert error is None
    assert [w["address"] for w in result["watchers"]] == [held["address"]]
    assert client.client_address() not in [w["address"] for w in result["watchers"]]
    assert [w["address"] for w in clean_lab.watchers(image)] == [held["address"]]


def test_missing_pool_and_image(client):
    (_s, _r, error), = client.inspect_images([parse_image_spec("volfence-no-pool/x")])
    assert isinstance(error, CephNotFoundError) and "pool 'volfence-no-pool' does not exist" in error.msg
    (_s, _r, error), = client.inspect_images([parse_image_spec("rbd/volfence-no-image")])
    assert isinstance(error, CephNotFoundError) and "image rbd/volfence-no-image does not exist" in error.msg


def test_exclusive_lock_owner_from_lockers_matches_lock_get_owners(clean_lab, client):
    image = clean_lab.new_image("bindown")
    pool, name = image.split("/", 1)
    writer = rados.Rados(conffile=clean_lab.conf, rados_id=clean_lab.user, conf={"keyring": clean_lab.keyring})
    writer.connect(timeout=10)
    try:
        ioctx = writer.open_ioctx(pool)
        img = rbd.Image(ioctx, name)
        img.write(b"\0" * 512, 0)  # takes the exclusive-lock feature's lock
        spec = parse_image_spec(image)
        owners = exclusive_lock_owners(describe_locks(client.image_locks(spec)))
        assert [o["address"] for o in owners] == [writer.get_addrs()]
        assert client.lock_owners(spec) == [dict(address=writer.get_addrs(), mode="exclusive")]
        img.close()
        ioctx.close()
    finally:
        writer.shutdown()


def test_advisory_lock_take_and_break_on_read_only_opens(clean_lab, client):
    image = clean_lab.new_image("bindlock")
    spec = parse_image_spec(image)
    client.add_lock(spec, "volfence-test", tag=None)
    locks = describe_locks(client.image_locks(spec))
    assert [(lk["id"], lk["address"]) for lk in locks] == [("volfence-test", client.client_address())]
    client.break_lock(spec, locks[0]["locker"], "volfence-test")
    assert client.image_locks(spec)["lockers"] == []
    assert json.loads(clean_lab.rbd("lock", "ls", image, "--format", "json")) == []


def test_mon_command_errors_carry_the_json_command(client):
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import CephCommandError
    with pytest.raises(CephCommandError) as info:
        client.mon(blocklist_change_command("blocklist", "add", "bogus"))
    assert info.value.rc == -22 and info.value.cmd["addr"] == "bogus" and "unable to parse" in info.value.stderr


def test_unreachable_monitor_times_out_clearly(clean_lab):
    started = time.time()
    with pytest.raises(CephConnectionError) as info:
        connect(params(clean_lab, mon_host=clean_lab.env["CEPH_MON_HOST"].rsplit(".", 1)[0] + ".254", timeout=3))
    assert time.time() - started < 10
    assert "timed out" in info.value.msg and "reachable" in info.value.msg

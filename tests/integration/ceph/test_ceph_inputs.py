"""Issue 17 on the lab's real cluster: bad input to the Ceph modules says what is wrong and changes
nothing (the blocklist is read with the ceph CLI before and after each call)."""

import json

import pytest

from labtools import blocklist_entries as blocklist, ceph_args, lab_subnet as subnet, run_module

INJECTION = "10.0.0.1; rm -rf /"


@pytest.fixture
def fenced(clean_lab):
    """Three real blocklist entries of the lab's subnet that a bad removal must leave alone."""
    lab = clean_lab
    net = subnet(lab)
    for ip in (net + ".200", net + ".201"):
        lab.ceph("osd", "blocklist", "add", ip + ":0/0", "600")
    lab.ceph("osd", "blocklist", "range", "add", net + ".208/29", "600")
    before = blocklist(lab)
    assert len(before) == 3, before
    return lab, before


@pytest.mark.input_refusal
@pytest.mark.parametrize("cidrs, extra, message", [
    (["0.0.0.0/0"], {}, "0.0.0.0/0 covers every address"),
    (["0.0.0.0/0"], {"force": True, "max_addresses": 4294967296}, "0.0.0.0/0 covers every address"),
    (["::/0"], {"force": True}, "::/0 covers every address"),
    (["::ffff:0:0/96"], {"force": True}, "every IPv4 address written as IPv4-mapped IPv6"),
    (["{net}.0/16"], {}, "has 65536 addresses, more than max_addresses=256"),
])
def test_absent_by_a_too_wide_cidr_lifts_no_fence(fenced, lab_inventory, cidrs, extra, message):
    lab, before = fenced
    net = subnet(lab)
    wide = [c.replace("{net}.0/16", net.rsplit(".", 1)[0] + ".0.0/16") for c in cidrs]
    result = run_module(lab_inventory, "ceph-admin", "volfence.csi.ceph_blocklist",
                        ceph_args(lab, "rados", state="absent", cidrs=wide, **extra))
    assert result.get("failed") is True and message in result["msg"], result
    assert "refused, nothing was changed" in result["msg"] and not result.get("changed")
    assert blocklist(lab) == before


def test_absent_by_a_wide_cidr_with_force_lifts_the_fences_inside(fenced, lab_inventory):
    lab, before = fenced
    wide = subnet(lab).rsplit(".", 1)[0] + ".0.0/16"
    result = run_module(lab_inventory, "ceph-admin", "volfence.csi.ceph_blocklist",
                        ceph_args(lab, "cli", state="absent", cidrs=[wide], force=True))
    assert result.get("changed") is True and not result.get("failed"), result
    assert blocklist(lab) == []


@pytest.mark.input_refusal
@pytest.mark.parametrize("module, args, message", [
    ("ceph_blocklist", dict(addresses=[INJECTION]), "address '10.0.0.1; rm -rf /' is not an IP address"),
    ("ceph_blocklist", dict(addresses=["1.2.3.4/33"]),
     "address '1.2.3.4/33' is not an IP address, and not a CIDR (prefix length 33 is out of range for IPv4: 0-32)"),
    ("ceph_blocklist", dict(cidrs=["1.2.3.4/33"]),
     "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4: 0-32)"),
    ("ceph_blocklist", dict(cidrs=["{net}.5/24"]), "is ambiguous (host bits set)"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], protect_addresses=[INJECTION]),
     "protect_addresses '10.0.0.1; rm -rf /' is not an IP address"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], expire=2.5e9), "expire=2500000000.0 is more than 315360000"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], expire="abc"), "expire must be a number of seconds, got 'abc'"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], expire="inf"), "expire must be a finite number of seconds"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], expire=0), "expire must be positive"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], parallel=0), "parallel=0 is out of range: give 1 to 256"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], timeout=100000), "timeout=100000 is out of range: give 1 to 3600"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], conf="/nonexistent/ceph.conf"),
     "conf file /nonexistent/ceph.conf does not exist"),
    ("ceph_blocklist", dict(addresses=["{net}.77"], keyring="/nonexistent/keyring"),
     "keyring file /nonexistent/keyring does not exist"),
    ("rbd_lock", dict(pool="rbd", image="x", state="absent", lock_id="*", blocklist_expire=-5),
     "blocklist_expire must be positive"),
    ("rbd_lock", dict(pool="rbd", image="x", state="absent", address=[INJECTION]),
     "address '10.0.0.1; rm -rf /' is not an IP address"),
    ("rbd_watchers_info", dict(images=["rbd/x"], node_addresses={"node-b": ["1.2.3.4/33"]}),
     "node_addresses['node-b'] '1.2.3.4/33' is not an IP address, and not a CIDR"),
    ("ceph_blocklist_info", dict(match=[INJECTION]), "match '10.0.0.1; rm -rf /' is not an IP address"),
])
def test_bad_input_says_what_is_wrong_and_changes_nothing(fenced, lab_inventory, module, args, message):
    lab, before = fenced
    net = subnet(lab)
    args = dict((k, [v.replace("{net}", net) for v in vals] if isinstance(vals, list) else vals)
                for k, vals in args.items())
    result = run_module(lab_inventory, "ceph-admin", "volfence.csi." + module, ceph_args(lab, "rados", **args))
    assert result.get("failed") is True and message in result["msg"], result
    assert "Traceback" not in result["msg"] and not result.get("changed")
    assert blocklist(lab) == before


def test_unreachable_cluster_is_named(fenced, lab_inventory):
    lab, before = fenced
    for backend in ("rados", "cli"):
        result = run_module(lab_inventory, "ceph-admin", "volfence.csi.ceph_blocklist",
                            ceph_args(lab, backend, addresses=[subnet(lab) + ".77"], mon_host="127.0.0.1:1", timeout=3))
        assert result.get("failed") is True and "127.0.0.1:1" in result["msg"] and "reachable" in result["msg"], result
    assert blocklist(lab) == before


def _warnings(result):
    return [w if isinstance(w, str) else json.dumps(w) for w in result.get("warnings") or []]


def test_rbd_lock_filters_that_select_no_lock_warn_and_a_non_locker_fails(clean_lab, lab_inventory):
    """Issue 17: state=absent is idempotent, so filters matching no lock warn loudly (naming the
    image, the filters and its locks, with a "did you mean"), and break and fence nothing; a locker
    that can never be one fails before anything is read."""
    lab = clean_lab
    image = lab.new_image("s017")
    held = lab.hold("node-b", image, lock_id="kubelet_lock_magic_node-b")
    locks_before = json.loads(lab.rbd("lock", "ls", image, "--format", "json"))
    before = blocklist(lab)
    for backend in ("rados", "cli"):
        typo = run_module(lab_inventory, "ceph-admin", "volfence.csi.rbd_lock",
                          ceph_args(lab, backend, image_spec=image, state="absent",
                                    lock_id="kubelet_lock_magic_node-bb"))
        assert not typo.get("failed") and typo["changed"] is False and typo["broken"] == [], typo
        warning = [w for w in _warnings(typo) if "no lock of %s" % image in w]
        assert warning, _warnings(typo)
        assert "lock_id 'kubelet_lock_magic_node-bb'" in warning[0]
        assert "Did you mean lock_id 'kubelet_lock_magic_node-b'" in warning[0] and held["address"] in warning[0]
        nobody = run_module(lab_inventory, "ceph-admin", "volfence.csi.rbd_lock",
                            ceph_args(lab, backend, image_spec=image, state="absent", locker="client.1"))
        assert not nobody.get("failed") and nobody["changed"] is False, nobody
        assert any("locker 'client.1'" in w and "kubelet_lock_magic_node-b" in w for w in _warnings(nobody))
        bad = run_module(lab_inventory, "ceph-admin", "volfence.csi.rbd_lock",
                         ceph_args(lab, backend, image_spec=image, state="absent", lock_id="*",
                                   locker="client.abc"))
        assert bad.get("failed") is True and "locker 'client.abc' is not a locker name" in bad["msg"], bad
    assert json.loads(lab.rbd("lock", "ls", image, "--format", "json")) == locks_before
    assert blocklist(lab) == before

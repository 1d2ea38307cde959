"""The Ceph modules against the lab's real cluster, with both backends, run through Ansible.

Backends: the bindings (host ceph-admin, Debian's /usr/bin/python3 with python3-rados/-rbd) and
the CLI (host k8s-api, the controller's venv Python, which has no bindings: backend=cli).
"""

import json
import time

import pytest

from labtools import (blocklist_entries as blocklist, ceph_args, lab_subnet as subnet, run_module, run_refused,
                      wait_until)


# ----------------------------------------------------------------------------- stale-rbd-watcher

def test_stale_rbd_watcher_fencing_node_b_drops_its_watcher_and_keeps_node_c(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    image_b, image_c = lab.new_image("s000b"), lab.new_image("s000c")
    held_b = lab.hold("node-b", image_b)
    held_c = lab.hold("node-c", image_c)
    nodes = dict((node, [ip]) for node, ip in lab.nodes.items())

    audit = run_module(lab_inventory, host, "volfence.csi.rbd_watchers_info",
                       ceph_args(lab, name, images=[image_b, image_c], node_addresses=nodes))
    assert audit.get("failed") is not True, audit
    assert audit["backend"] == name and audit["changed"] is False
    by_spec = dict((i["spec"], i) for i in audit["images"])
    assert by_spec[image_b]["nodes"] == ["node-b"] and by_spec[image_c]["nodes"] == ["node-c"]
    assert [w["address"] for w in by_spec[image_b]["watchers"]] == [held_b["address"]]
    assert isinstance(by_spec[image_b]["watchers"][0]["cookie"], int)

    preview = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                         ceph_args(lab, name, addresses=[lab.nodes["node-b"]], expire=900), check=True, diff=True)
    assert preview["changed"] and blocklist(lab) == []
    assert preview["diff"]["after"]["blocklist"] == ["%s:0/0" % lab.nodes["node-b"]]

    fenced = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, addresses=[lab.nodes["node-b"]], expire=900), diff=True)
    assert fenced["changed"], fenced
    assert blocklist(lab) == ["%s:0/0" % lab.nodes["node-b"]]
    assert wait_until(lambda: lab.watchers(image_b) == []), lab.watchers(image_b)
    assert [w["address"] for w in lab.watchers(image_c)] == [held_c["address"]]

    again = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                       ceph_args(lab, name, addresses=[lab.nodes["node-b"]], expire=900))
    assert again["changed"] is False

    after = run_module(lab_inventory, host, "volfence.csi.rbd_watchers_info",
                       ceph_args(lab, name, images=[image_b, image_c], node_addresses=nodes))
    by_spec = dict((i["spec"], i) for i in after["images"])
    assert not by_spec[image_b]["in_use"] and by_spec[image_c]["nodes"] == ["node-c"]

    info = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist_info",
                      ceph_args(lab, name, match=[lab.nodes["node-b"]]))
    assert [e["entry"] for e in info["entries"]] == ["%s:0/0" % lab.nodes["node-b"]]
    assert 800 < info["entries"][0]["expires_in"] <= 900 and info["entries"][0]["expires"].endswith("Z")

    lifted = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, state="absent", addresses=[lab.nodes["node-b"]]))
    assert lifted["changed"] and blocklist(lab) == []


def test_blocklist_waits_until_the_fenced_clients_no_longer_watch(clean_lab, lab_inventory, backend):
    """wait_unwatched: the call returns once node-b's watch is gone, not before; node-c's watcher of
    another image is reported and not waited for."""
    lab = clean_lab
    host, name = backend
    image_b, image_c = lab.new_image("waitb"), lab.new_image("waitc")
    held_b = lab.hold("node-b", image_b)
    held_c = lab.hold("node-c", image_c)
    fenced = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, addresses=[held_b["address"]], expire=900,
                                  wait_unwatched=[image_b, image_c, "rbd/volfence-no-such-image"], wait_timeout=60))
    assert fenced.get("failed") is not True and fenced["changed"], fenced
    assert fenced["still_watched"] == []
    # the module's own last read, and Ceph now: node-b's watch is gone, node-c's kept
    after = dict((r["spec"], [w["address"] for w in r["watchers"]]) for r in fenced["watchers_after"])
    assert after == {image_b: [], image_c: [held_c["address"]]}
    assert lab.watchers(image_b) == []
    assert [w["address"] for w in lab.watchers(image_c)] == [held_c["address"]]


def test_blocklist_wait_is_not_run_in_check_mode(clean_lab, lab_inventory, backend):
    """In check mode nothing is blocklisted, so nothing is waited for (a fenced client that keeps
    watching, which a real cluster does not produce on demand, is covered by the unit tests)."""
    lab = clean_lab
    host, name = backend
    image_c = lab.new_image("waitstill")
    held_c = lab.hold("node-c", image_c)
    # check mode: nothing is blocklisted, so the watcher stays; the wait is not run in check mode
    preview = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                         ceph_args(lab, name, addresses=[held_c["address"]], expire=900,
                                   wait_unwatched=[image_c], wait_timeout=1), check=True)
    assert preview.get("failed") is not True and preview["still_watched"] == [], preview
    assert blocklist(lab) == [] and [w["address"] for w in lab.watchers(image_c)] == [held_c["address"]]


# ----------------------------------------------------------------------------- stale-rbd-lock

def test_stale_rbd_lock_kubelet_lock_is_broken_after_fencing_and_node_a_can_lock(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    image = lab.new_image("s003")
    held = lab.hold("node-b", image, lock_id="kubelet_lock_magic_node-b")
    pool, image_name = image.split("/", 1)
    nodes = dict((node, [ip]) for node, ip in lab.nodes.items())

    listed = run_module(lab_inventory, host, "volfence.csi.rbd_lock_info",
                        ceph_args(lab, name, image_spec=image, node_addresses=nodes))
    assert [(lk["id"], lk["address"], lk["node"]) for lk in listed["locks"]] == [
        ("kubelet_lock_magic_node-b", held["address"], "node-b")]
    assert listed["changed"] is False and listed["exclusive_lock_owners"] == []

    broken = run_module(lab_inventory, host, "volfence.csi.rbd_lock",
                        ceph_args(lab, name, image_spec=image, state="absent",
                                  lock_id="kubelet_lock_magic_*", protect_addresses=[lab.nodes["node-a"]],
                                  blocklist_expire=900), diff=True)
    assert broken["changed"], broken
    assert [a["entry"] for a in broken["blocklisted"]] == [held["address"]]
    assert [lk["id"] for lk in broken["broken"]] == ["kubelet_lock_magic_node-b"]
    assert broken["locks_after"] == [] and broken["diff"]["after"] == {"locks": []}
    assert blocklist(lab) == [held["address"]]  # that client instance only, not node-b's IP
    assert json.loads(lab.rbd("lock", "ls", image, "--format", "json")) == []
    assert wait_until(lambda: lab.watchers(image) == []), lab.watchers(image)

    # From node-a's network with the lab release's CLI: the node hosts' Python is the test
    # machine's (Pacific bindings, which cannot read a 20 lab's aes256k key; see conftest.py).
    taken = run_module(lab_inventory, "node-a", "volfence.csi.rbd_lock",
                       ceph_args(lab, "cli", pool=pool, image=image_name, state="present",
                                 lock_id="kubelet_lock_magic_node-a"))
    assert taken["changed"], taken
    locks = json.loads(lab.rbd("lock", "ls", image, "--format", "json"))
    assert [(lk["id"], lk["address"].split(":")[0]) for lk in locks] == [
        ("kubelet_lock_magic_node-a", lab.nodes["node-a"])]
    again = run_module(lab_inventory, "node-a", "volfence.csi.rbd_lock",
                       ceph_args(lab, "cli", pool=pool, image=image_name, state="present",
                                 lock_id="kubelet_lock_magic_node-a"))
    assert again["changed"] is False


# ----------------------------------------------------------------------------- CIDRs

def test_cidr_range_and_per_address_modes(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    net = subnet(lab)
    ranged = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, cidrs=[net + ".64/26"], expire=600))
    assert ranged["changed"] and ranged["cidr_mode"] == "range"
    assert blocklist(lab) == ["cidr:%s.64:0/26" % net]
    per_address = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                             ceph_args(lab, name, cidrs=[net + ".200/29"], cidr_mode="addresses", expire=600,
                                       parallel=8))
    assert per_address["cidr_mode"] == "addresses" and len(per_address["actions"]) == 6
    assert len(blocklist(lab)) == 7
    info = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist_info", ceph_args(lab, name))
    assert info["count"] == 7 and info["range_supported"] is True
    assert [e["cidr"] for e in info["entries"] if e["kind"] == "range"] == [net + ".64/26"]
    lifted = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, state="absent", cidrs=[net + ".64/26", net + ".200/29"]))
    assert lifted["changed"] and len(lifted["actions"]) == 7 and blocklist(lab) == []


# ----------------------------------------------------------------------------- refusals and bad input

def refused_or_failed(result):
    return result.get("failed") is True or result.get("unreachable") is True


@pytest.mark.parametrize("case", ["monitor", "monitor-cidr", "internet", "too-big"])
def test_refuses_unsafe_fences_and_changes_nothing(clean_lab, lab_inventory, backend, case):
    lab = clean_lab
    host, name = backend
    net = subnet(lab)
    lab.ceph("osd", "blocklist", "add", net + ".250", "600")
    before = blocklist(lab)
    args = {"monitor": dict(addresses=[lab.nodes["node-b"], lab.env["CEPH_MON_HOST"]]),
            "monitor-cidr": dict(cidrs=[net + ".0/24"]),
            "internet": dict(cidrs=["0.0.0.0/0"], max_addresses=2 ** 32),  # its largest value: /0 is refused whatever it says
            "too-big": dict(cidrs=["10.231.0.0/16"])}[case]
    result = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist", ceph_args(lab, name, **args))
    assert refused_or_failed(result), result
    assert "refused" in result["msg"] and "nothing was changed" in result["msg"]
    assert blocklist(lab) == before


BAD_INPUT = [
    ("ceph_blocklist", dict(addresses=["10.0.0.300"]), "'10.0.0.300' is not an IP address"),
    ("ceph_blocklist", dict(addresses=["10.0.0.5/24"]), "ambiguous"),
    ("ceph_blocklist", dict(cidrs=["10.0.0.5/24"]), "host bits set"),
    ("ceph_blocklist", dict(cidrs=["10.0.0.0/40"]), "not a CIDR (prefix length 40 is out of range for IPv4"),
    ("ceph_blocklist", dict(addresses=["10.0.0.1"], backend="librados"), "auto, rados, cli"),
    ("ceph_blocklist", dict(addresses=["10.0.0.1"], keyring="/nonexistent/keyring"), "does not exist"),
    ("rbd_watchers_info", dict(pool="volfence-no-such-pool", image="x"), "does not exist"),
    ("rbd_watchers_info", dict(image_spec="rbd/volfence-no-such-image"), "not found"),
    ("rbd_lock_info", dict(image_spec="rbd/volfence-no-such-image"), "does not exist"),
    ("rbd_lock", dict(pool="rbd", image="volfence-no-such-image", state="absent", lock_id="*"), "does not exist"),
    ("rbd_lock", dict(image_spec="rbd/a/b/c", state="absent", lock_id="*"),
     "image_spec 'rbd/a/b/c' must be pool/image or pool/namespace/image"),
    ("ceph_blocklist", dict(addresses=["192.0.2.9"], wait_unwatched=["rbd/a/b/c"]), "wait_unwatched entry"),
    ("ceph_blocklist", dict(addresses=["192.0.2.9"], state="absent", wait_unwatched=["rbd/x"]), "needs state=present"),
    ("ceph_blocklist", dict(addresses=["192.0.2.9"], wait_unwatched=["rbd/x"], wait_timeout=0), "wait_timeout"),
]


@pytest.mark.parametrize("module, args, message", BAD_INPUT, ids=[
    "bad-ip", "ip-slash", "cidr-host-bits", "cidr-prefix", "unknown-backend", "missing-keyring", "unknown-pool",
    "unknown-image", "lock-info-unknown-image", "lock-unknown-image", "lock-bad-spec", "wait-bad-spec",
    "wait-absent", "wait-timeout"])
def test_bad_input_is_a_clear_error_and_changes_nothing(clean_lab, lab_inventory, backend, module, args, message):
    result = run_refused(clean_lab, lab_inventory, backend, module, args, sentinel=251)
    assert message in result["msg"], result["msg"]


def test_unreachable_monitor_fails_clearly_within_the_timeout(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    # Ansible's start-up, which a loaded machine stretches, measured on a call refused before it connects
    started = time.time()
    refused = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                         ceph_args(lab, name, addresses=["192.0.2.300"], timeout=4, mon_host=subnet(lab) + ".254"))
    start_up = time.time() - started
    assert refused.get("failed") is True and "reachable" not in refused["msg"], refused
    started = time.time()
    result = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, addresses=[lab.nodes["node-b"]], timeout=4,
                                  mon_host=subnet(lab) + ".254"))
    elapsed = time.time() - started
    assert result.get("failed") is True, result
    assert "reachable" in result["msg"] and (subnet(lab) + ".254") in result["msg"], result["msg"]
    assert "cmd" in result and "rc" in result
    # Beyond start-up, the fix waits about the timeout (4 s); a timeout not passed on waits the default
    # 30 s or more. Halfway, plus what start-up may vary between two calls:
    assert elapsed - start_up < 17 + 5, (elapsed, start_up)
    assert blocklist(lab) == []


def test_ipv6_and_nonce_entries(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    added = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                       ceph_args(lab, name, addresses=["fd00:231::5", "[fd00:231::6]:0/123",
                                                       subnet(lab) + ".77:0/3271234567"],
                                 cidrs=["fd00:231::100/120"], expire=300))
    assert added["changed"]
    assert blocklist(lab) == sorted(["[fd00:231::5]:0/0", "[fd00:231::6]:0/123", subnet(lab) + ".77:0/3271234567",
                                     "cidr:[fd00:231::100]:0/120"])
    removed = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                         ceph_args(lab, name, state="absent", addresses=[subnet(lab) + ".77", "fd00:231::6"],
                                   cidrs=["fd00:231::/64"], force=True))  # a range wider than max_addresses
    # fd00:231::/64 covers the /120 range and fd00:231::5 too: nothing is left
    assert removed["changed"] and len(removed["actions"]) == 4 and blocklist(lab) == []


def test_break_without_fencing_leaves_the_blocklist_alone(clean_lab, lab_inventory, backend):
    # librbd would blocklist the locker on its own when breaking a lock; the module turns that off
    # so that blocklist_locker=false really means no fence.
    lab = clean_lab
    host, name = backend
    image = lab.new_image("nofence")
    lab.hold("node-c", image, lock_id="kubelet_lock_magic_node-c")
    pool, image_name = image.split("/", 1)
    broken = run_module(lab_inventory, host, "volfence.csi.rbd_lock",
                        ceph_args(lab, name, pool=pool, image=image_name, state="absent", lock_id="kubelet_*",
                                  blocklist_locker=False))
    assert broken["changed"] and broken["blocklisted"] == [] and len(broken["broken"]) == 1
    assert json.loads(lab.rbd("lock", "ls", image, "--format", "json")) == []
    assert blocklist(lab) == []

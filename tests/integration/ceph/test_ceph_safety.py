"""Issue 11 (safety model), Ceph side, against the lab's real cluster through Ansible.

I1 (item 4): IPv4-mapped IPv6 and protect_addresses in ceph_blocklist's interlocks.
I7 (item 7): honest partial results of ceph_blocklist and rbd_lock.
I8 (item 8): a CLI call's whole process group is killed at the timeout.
I9 (item 9): names never become options, expire is a sane number.

Failures are injected through the documented command_prefix option (a shell wrapper in front of
the real ceph/rbd tools), so every other call reaches the real cluster.
"""

import json
import os
import time

import pytest

from labtools import blocklist_entries as blocklist, ceph_args, lab_subnet as subnet, run_module, run_refused, wait_until
from volfence_lab.lab import alive


def failing_prefix(pattern, message="injected failure"):
    """A command_prefix that runs the real tool, except for calls whose arguments match the shell
    `case` pattern: those fail with rc 5 (EIO) as a real error would."""
    script = 'case " $* " in %s) echo "%s" >&2; exit 5;; esac; exec "$@"' % (pattern, message)
    return ["sh", "-c", script, "volfence-test-prefix"]


# ----------------------------------------------------------------------------- I1 (item 4)

@pytest.mark.parametrize("case", ["mapped-ip", "mapped-ceph-addr", "mapped-range"])
def test_I1_ipv4_mapped_ipv6_monitor_address_is_refused_on_the_real_cluster(clean_lab, lab_inventory, backend, case):
    """Before issue 11 these were blocklisted: ::ffff:<mon>, [::ffff:<mon>]:0/0 and
    ::ffff:<subnet>/120 passed the Ceph-daemon interlock."""
    lab = clean_lab
    host, name = backend
    mon = lab.env["CEPH_MON_HOST"]
    args = {"mapped-ip": dict(addresses=["::ffff:" + mon]),
            "mapped-ceph-addr": dict(addresses=["[::ffff:%s]:0/0" % mon]),
            "mapped-range": dict(cidrs=["::ffff:%s.0/120" % subnet(lab)])}[case]
    result = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist", ceph_args(lab, name, expire=120, **args))
    assert result.get("failed") is True, result
    assert "refused, nothing was changed" in result["msg"] and "mon.a" in result["msg"], result["msg"]
    assert not result.get("changed")
    assert blocklist(lab) == []


def test_I1_protect_addresses_keeps_ready_nodes_out_of_a_fence(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    ready = [lab.nodes["node-a"], "::ffff:" + lab.nodes["node-c"]]
    for args in (dict(addresses=["::ffff:" + lab.nodes["node-a"]]),
                 dict(addresses=[lab.nodes["node-c"] + ":0/12345"]),
                 dict(cidrs=[subnet(lab) + ".8/29"])):  # .8-.15 holds node-a (.11) and node-c (.13)
        result = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                            ceph_args(lab, name, protect_addresses=ready, expire=120, **args))
        assert result.get("failed") is True and "protect_addresses" in result["msg"], result
        assert blocklist(lab) == []
    fenced = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                        ceph_args(lab, name, addresses=[lab.nodes["node-b"]], protect_addresses=ready, expire=120))
    assert fenced["changed"] and blocklist(lab) == ["%s:0/0" % lab.nodes["node-b"]], fenced


# ----------------------------------------------------------------------------- I7 (item 7)

def test_I7_ceph_blocklist_failing_after_5_of_6_adds_reports_changed_and_both_lists(clean_lab, lab_inventory):
    """Before issue 11 the module failed without `changed` although 5 entries were written."""
    lab = clean_lab
    net = subnet(lab)
    bad = "%s.202:0/0" % net
    result = run_module(lab_inventory, "k8s-api", "volfence.csi.ceph_blocklist",
                        ceph_args(lab, "cli", cidrs=[net + ".200/29"], cidr_mode="addresses", expire=300, parallel=3,
                                  command_prefix=failing_prefix('*" %s "*' % bad)))
    assert result.get("failed") is True, result
    assert result["changed"] is True
    assert [a["target"] for a in result["failed_actions"]] == [bad]
    assert "injected failure" in result["failed_actions"][0]["error"]
    done = sorted(a["entry"] for a in result["actions"])
    assert len(done) == 5 and bad not in done
    assert blocklist(lab) == done == sorted(result["blocklist"])  # what it says it did is what the cluster has


def test_I7_rbd_lock_failing_after_fencing_and_breaking_some_says_which(clean_lab, lab_inventory):
    """Before issue 11 rbd_lock failed after blocklisting and breaking some locks without saying
    which, and without `changed`."""
    lab = clean_lab
    image = lab.new_image("i7lock")
    pool, image_name = image.split("/", 1)
    holders = {}
    for node in ("node-b", "node-c"):
        holders[node] = json.loads(lab.lab("hold", node, image, "--lock-id", "kubelet_lock_magic_" + node,
                                           "--shared-tag", "volfence-i7"))
    result = run_module(lab_inventory, "k8s-api", "volfence.csi.rbd_lock",
                        ceph_args(lab, "cli", pool=pool, image=image_name, state="absent",
                                  lock_id="kubelet_lock_magic_*", blocklist_expire=300,
                                  command_prefix=failing_prefix('*" lock rm "*kubelet_lock_magic_node-c*')))
    assert result.get("failed") is True, result
    assert result["changed"] is True
    assert sorted(a["entry"] for a in result["blocklisted"]) == sorted(h["address"] for h in holders.values())
    assert [lk["id"] for lk in result["broken"]] == ["kubelet_lock_magic_node-b"]
    assert [lk["id"] for lk in result["failed_locks"]] == ["kubelet_lock_magic_node-c"]
    assert "injected failure" in result["failed_locks"][0]["error"]
    assert "kubelet_lock_magic_node-b" in result["msg"] and "kubelet_lock_magic_node-c" in result["msg"]
    real = json.loads(lab.rbd("lock", "ls", image, "--format", "json"))
    assert [lk["id"] for lk in real] == ["kubelet_lock_magic_node-c"]
    assert [lk["id"] for lk in result["locks_after"]] == ["kubelet_lock_magic_node-c"]
    assert blocklist(lab) == sorted(h["address"] for h in holders.values())


# ----------------------------------------------------------------------------- I8 (item 8)

def test_I8_cli_timeout_kills_the_command_prefix_grandchild(clean_lab, lab_inventory, tmp_path):
    """A command_prefix (as `cephadm shell --` or `kubectl exec ... --` do) whose real work runs
    as a grandchild that never answers: before issue 11 only the direct child was killed and the
    module waited for the grandchild (240 s here) while it ran on."""
    lab = clean_lab
    pidfile = str(tmp_path / "grandchild.pid")
    prefix = ["sh", "-c", 'sleep 240 & echo $! > "%s"; wait' % pidfile, "volfence-test-prefix"]
    started = time.time()
    result = run_module(lab_inventory, "k8s-api", "volfence.csi.ceph_blocklist",
                        ceph_args(lab, "cli", addresses=[lab.nodes["node-b"]], timeout=2, command_prefix=prefix))
    elapsed = time.time() - started
    assert result.get("failed") is True and "no answer within 2s" in result["msg"], result
    # The fix ends after the timeout, the CLI grace and the kill grace (2 + 15 + 5 s) plus Ansible's
    # start-up (up to 25 s at a load of 10); the defect waits for the grandchild's 240 s. Halfway:
    assert elapsed < 120, elapsed
    grandchild = int(open(pidfile).read())
    wait_until(lambda: not alive(grandchild), 30, step=0.1)
    assert not alive(grandchild), "the grandchild %d still runs" % grandchild
    assert blocklist(lab) == []


# ----------------------------------------------------------------------------- I9 (item 9)

def test_I9_a_lock_named_like_an_option_is_broken_as_a_name(clean_lab, lab_inventory, backend):
    """Lock ids and lockers come from the cluster: anyone can take a lock named --keyring=...
    Before issue 11 the CLI backend passed it to `rbd lock rm` as an option (rbd: locker was not
    specified). After `--`, the real rbd CLI takes it as the lock id."""
    lab = clean_lab
    host, name = backend
    image = lab.new_image("i9lock")
    pool, image_name = image.split("/", 1)
    evil = "--keyring=/etc/passwd"
    lab.rbd("lock", "add", "--", image, evil)
    before = json.loads(lab.rbd("lock", "ls", image, "--format", "json"))
    assert [lk["id"] for lk in before] == [evil]
    broken = run_module(lab_inventory, host, "volfence.csi.rbd_lock",
                        ceph_args(lab, name, pool=pool, image=image_name, state="absent", lock_id="?-keyring=*",
                                  blocklist_expire=120))
    assert broken.get("failed") is not True, broken
    assert broken["changed"] and [lk["id"] for lk in broken["broken"]] == [evil]
    assert json.loads(lab.rbd("lock", "ls", image, "--format", "json")) == []
    assert blocklist(lab) == [before[0]["address"]]  # the locker instance only


@pytest.mark.input_refusal
@pytest.mark.parametrize("module, args, message", [
    ("rbd_watchers_info", dict(pool="rbd", image="--keyring=ceph.keyring"), 'starts with "-"'),
    ("rbd_watchers_info", dict(images=["rbd/--conf=x"]), 'starts with "-"'),
    ("rbd_lock", dict(image_spec="rbd/--keyring=x", state="absent", lock_id="*"), 'starts with "-"'),
    ("rbd_lock", dict(pool="rbd", image="img", state="present", lock_id="--keyring=x"), 'starts with "-"'),
    ("rbd_lock_info", dict(pool="-rbd", image="img"), 'starts with "-"'),
    ("ceph_blocklist", dict(addresses=["10.99.0.1"], expire="inf"), "finite"),
    ("ceph_blocklist", dict(addresses=["10.99.0.1"], expire="nan"), "finite"),
    ("ceph_blocklist", dict(addresses=["10.99.0.1"], expire=1e12), "ten years"),
    ("rbd_lock", dict(pool="rbd", image="img", state="absent", lock_id="*", blocklist_expire="inf"), "finite"),
])
def test_I9_dash_names_and_non_finite_expiry_are_clear_errors(clean_lab, lab_inventory, backend, module, args,
                                                              message):
    """Before issue 11 `--keyring=...` was accepted as an image name and expire: inf/nan ended
    in a traceback (MODULE FAILURE)."""
    result = run_refused(clean_lab, lab_inventory, backend, module, args, sentinel=252)
    assert message in result["msg"] and "nothing was changed" in result["msg"], result["msg"]
    assert "Traceback" not in json.dumps(result) and "MODULE FAILURE" not in result["msg"]


def test_I9_the_real_cli_takes_positionals_after_the_end_of_options(clean_lab):
    """What the CLI backend relies on, checked on the lab's tools: `rbd` reads everything after
    `--` as positionals; `ceph` appends $CEPH_ARGS after its argv, so `--` would break it (the
    reason mon commands get no `--` and refuse option-like words instead)."""
    lab = clean_lab
    image = lab.new_image("i9cli")
    assert lab.cli("rbd", "lock", "add", "--", image, "--id=x").returncode == 0
    assert [lk["id"] for lk in json.loads(lab.rbd("lock", "ls", "--format", "json", "--", image))] == ["--id=x"]
    env_args = os.environ.copy()
    env_args["CEPH_ARGS"] = "--connect-timeout 10"
    import subprocess
    proc = subprocess.run(["ceph"] + lab.ceph_args() + ["osd", "blocklist", "ls", "--"], env=env_args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert proc.returncode != 0 and "unused arguments" in proc.stderr

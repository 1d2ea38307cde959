"""The lab itself, against the real Ceph cluster it runs."""

import json
import os
import subprocess

import pytest
from kubeemu.wait import wait_until

from labtools import LAB_CLI


def test_env_file_names_everything_a_user_needs(lab):
    for key in ("CEPH_CONF", "CEPH_KEYRING", "CEPH_USER", "LAB_NODES", "KUBECONFIG"):
        assert lab.env.get(key), key
    assert sorted(lab.nodes) == ["node-a", "node-b", "node-c"]
    assert not lab.conf.startswith("/etc/ceph")
    assert os.path.exists(os.path.join(lab.dir, "inventory.yml"))


def test_cluster_is_healthy_with_cephx_and_rbd_pool(lab):
    status = json.loads(lab.ceph("status", "--format", "json"))
    assert status["osdmap"]["num_up_osds"] == 1
    assert lab.ceph("config", "get", "mon.a", "auth_cluster_required").strip() == "cephx"
    pools = json.loads(lab.ceph("osd", "pool", "ls", "--format", "json"))
    assert lab.pool in pools
    # Without the keyring, cephx refuses the client.
    no_args = {k: v for k, v in os.environ.items() if k != "CEPH_ARGS"}
    proc = subprocess.run([lab.tool("ceph"), "-c", lab.conf, "-k", "/nonexistent", "--connect-timeout", "5", "status"],
                          env=no_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert proc.returncode != 0


def test_watcher_from_node_b_shows_node_b_ip(clean_lab):
    lab = clean_lab
    image = lab.new_image()
    held = lab.hold("node-b", image)
    assert held["address"].startswith(lab.nodes["node-b"] + ":0/")
    watchers = lab.watchers(image)
    assert [w["address"] for w in watchers] == [held["address"]]


def test_blocklisting_node_b_removes_only_its_watcher(clean_lab):
    lab = clean_lab
    image_b, image_c = lab.new_image("b"), lab.new_image("c")
    held_b = lab.hold("node-b", image_b)
    held_c = lab.hold("node-c", image_c)
    added = lab.cli("ceph", "osd", "blocklist", "add", lab.nodes["node-b"])
    assert "blocklisting %s:0/0" % lab.nodes["node-b"] in added.stdout + added.stderr
    assert wait_until(lambda: lab.watchers(image_b) == [], timeout=60), lab.watchers(image_b)
    assert [w["address"] for w in lab.watchers(image_c)] == [held_c["address"]]
    assert held_b["address"] != held_c["address"]


def test_advisory_lock_held_from_node_is_listed_with_its_address(clean_lab):
    lab = clean_lab
    image = lab.new_image()
    held = lab.hold("node-b", image, lock_id="kubelet_lock_magic_node-b")
    locks = json.loads(lab.rbd("lock", "ls", image, "--format", "json"))
    assert locks == [{"id": "kubelet_lock_magic_node-b", "locker": "client.%d" % held["instance_id"],
                      "address": held["address"]}]


def test_node_exec_runs_inside_the_node_namespace(lab):
    env = dict(os.environ, LAB_DIR=lab.dir, LAB_PREFIX=lab.env["LAB_PREFIX"], LAB_SLOT=lab.env["LAB_SLOT"])
    out = subprocess.run(LAB_CLI + ["exec", "node-c", "ip", "-o", "-4", "addr"],
                         env=env, stdout=subprocess.PIPE, universal_newlines=True, timeout=30).stdout
    assert lab.nodes["node-c"] + "/24" in out
    assert lab.nodes["node-a"] not in out


def test_nodes_cannot_route_outside_the_lab(lab):
    env = dict(os.environ, LAB_DIR=lab.dir, LAB_PREFIX=lab.env["LAB_PREFIX"], LAB_SLOT=lab.env["LAB_SLOT"])
    out = subprocess.run(LAB_CLI + ["exec", "node-a", "ip", "route"],
                         env=env, stdout=subprocess.PIPE, universal_newlines=True, timeout=30).stdout
    assert "default" not in out


@pytest.fixture
def second_lab(tmp_path):
    """A second lab with another prefix: proves two labs do not collide, and crash cleanup."""
    env = dict(os.environ, LAB_PREFIX="vfzt", LAB_NODES="2", LAB_DIR=str(tmp_path / "lab2"))
    env.pop("LAB_SLOT", None)

    def lab2(*args):
        return subprocess.run(LAB_CLI + list(args), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    yield lab2, env
    lab2("down")


def _leftovers(prefix, lab_dir):
    netns = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    links = subprocess.run(["ip", "-o", "link"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    procs = subprocess.run(["pgrep", "-f", lab_dir + "/"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    return {
        "netns": [l for l in netns.splitlines() if l.startswith(prefix + "-")],
        "links": [l for l in links.splitlines() if (" %s-" % prefix) in l],
        "procs": procs.split(),
        "dir": os.path.exists(lab_dir),
    }


def test_second_lab_coexists_and_recovers_from_a_crash(lab, second_lab):
    lab2, env = second_lab
    up = lab2("up")
    assert up.returncode == 0, up.stderr
    assert "LAB_PREFIX=vfzt" in up.stdout
    # Both clusters answer, each on its own monitor address.
    assert json.loads(lab2("status").stdout)["up"] is True
    assert json.loads(lab.ceph("status", "--format", "json"))["osdmap"]["num_up_osds"] == 1
    # Crash: kill the daemons hard and leave the namespaces; a new lab-up must still work.
    subprocess.run(["pkill", "-9", "-f", env["LAB_DIR"] + "/ceph/ceph.conf"])
    again = lab2("up")
    assert again.returncode == 0, again.stderr
    assert lab2("down").returncode == 0
    assert _leftovers("vfzt", env["LAB_DIR"]) == {"netns": [], "links": [], "procs": [], "dir": False}
    # The main lab is untouched.
    assert json.loads(lab.ceph("status", "--format", "json"))["osdmap"]["num_up_osds"] == 1

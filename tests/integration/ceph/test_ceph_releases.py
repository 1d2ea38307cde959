"""Issue 12: the Ceph modules on the lab's Ceph release (LAB_CEPH=20|18|16), with both backends.

* every result says which releases were at work (`versions`), checked against what the lab's
  own tools and packages say;
* a client older than 19.2.6/20.2.4 given an aes256k key fails with the message that names both
  releases and the ways out, and changes nothing (on a 20 lab with the lab's real admin keyring);
* `expire` is taken by the release from both backends (a float in the JSON mon command);
* the blocklist the modules read is the one `osd dump` holds, whatever shape `osd blocklist ls`
  has on this release.
"""

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import time

import pytest

from labtools import ANSIBLE_BIN, ansible_env, blocklist_entries as blocklist, ceph_args, run_module

# Debian's own Ceph (bookworm: 16.2.15) on the test machine: a client older than 19.2.6/20.2.4.
HOST_PYTHON = "/usr/bin/python3"
# What differs between releases: both backends on every release (ceph/conftest.py)
pytestmark = pytest.mark.release_answers


def version_of(text):
    match = re.search(r"(\d+\.\d+\.\d+)", text or "")
    return match.group(1) if match else None


def cluster_versions(lab):
    doc = json.loads(lab.ceph("versions", "--format", "json"))
    return sorted(set(version_of(text) for text in doc["overall"]), key=lambda v: tuple(map(int, v.split("."))))


def expected_client(lab, host):
    """The client release each inventory host works with, from a source other than the modules:
    ceph-admin runs the lab release's Python (LAB_CEPH_VERSION; before LAB_CEPH, Debian's
    python3-rados), k8s-api runs the `ceph` CLI found in the PATH Ansible gets."""
    if host == "ceph-admin":
        if lab.env.get("LAB_CEPH_VERSION"):
            return lab.env["LAB_CEPH_VERSION"]
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "python3-rados"], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
        return version_of(out)
    ceph = shutil.which("ceph", path=ansible_env()["PATH"])
    return version_of(subprocess.run([ceph, "--version"], stdout=subprocess.PIPE, universal_newlines=True,
                                     check=True).stdout)


def old_host_client():
    """The version of the machine's own rados bindings, or None when there are none."""
    if not os.path.exists(HOST_PYTHON):
        return None
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "python3-rados"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True)
    return version_of(proc.stdout) if proc.returncode == 0 else None


def reads_aes256k(version):
    major, minor, patch = map(int, version.split("."))
    return (major, minor, patch) >= (20, 2, 4) or (major == 19 and (minor, patch) >= (2, 6)) or major > 20


def test_versions_name_the_client_and_the_cluster(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    cluster = cluster_versions(lab)
    client = expected_client(lab, host)
    if name == "cli" and not reads_aes256k(client) and reads_aes256k(cluster[0]):
        pytest.skip("the CLI Ansible finds (Ceph %s) cannot read this lab's aes256k key: "
                    "test_a_key_the_client_cannot_read_fails_clearly covers it" % client)
    image = lab.new_image("ver")
    for module, args in (("volfence.csi.ceph_blocklist_info", {}),
                         ("volfence.csi.rbd_watchers_info", dict(images=[image])),
                         ("volfence.csi.rbd_lock_info", dict(image_spec=image)),
                         ("volfence.csi.ceph_blocklist", dict(addresses=[lab.nodes["node-c"]]))):
        result = run_module(lab_inventory, host, module, ceph_args(lab, name, **args), check=True)
        assert result.get("failed") is not True, (module, result)
        versions = result["versions"]
        assert versions["client"] == dict(backend=name, version=client, release=versions["client"]["release"],
                                          error=None), (module, versions)
        assert versions["client"]["release"], versions
        assert versions["cluster"]["version"] == cluster[0] and versions["cluster"]["versions"] == cluster
        assert versions["cluster"]["mixed"] is (len(cluster) > 1) and versions["cluster"]["error"] is None
    assert blocklist(lab) == []


def aes256k_keyring(lab, path):
    """A keyring whose client.admin key is aes256k: on a 20 lab the lab's own (made by the
    cluster's 20.2.4 tools), else a key in the same encoding (type 2, 32-byte secret) written
    here, which an old client fails to read just the same."""
    with open(lab.keyring) as handle:
        text = handle.read()
    key = re.search(r"key\s*=\s*(\S+)", text).group(1)
    if struct.unpack("<H", base64.b64decode(key)[:2])[0] == 2:
        return lab.keyring, True
    made = base64.b64encode(struct.pack("<HIIH", 2, int(time.time()), 0, 32) + os.urandom(32)).decode()
    with open(path, "w") as handle:
        handle.write("[client.%s]\n\tkey = %s\n" % (lab.user, made))
    return str(path), False


def old_client_inventory(tmp_path):
    path = tmp_path / "old-client.yml"
    path.write_text("all:\n  hosts:\n    old-client:\n      ansible_connection: local\n"
                    "      ansible_python_interpreter: %s\n" % HOST_PYTHON)
    return str(path)


@pytest.mark.parametrize("name", ["rados", "cli"])
def test_a_key_the_client_cannot_read_fails_clearly(clean_lab, tmp_path, name):
    lab = clean_lab
    old = old_host_client()
    if old is None or reads_aes256k(old):
        pytest.skip("this machine has no Ceph client older than 19.2.6/20.2.4 (%s)" % old)
    if name == "cli" and not shutil.which("ceph", path="/usr/bin:/bin"):
        pytest.skip("no ceph CLI of the machine's own")
    keyring, real = aes256k_keyring(lab, tmp_path / "aes256k.keyring")
    inventory = old_client_inventory(tmp_path)
    args = dict(conf=lab.conf, keyring=keyring, user=lab.user, backend=name, timeout=20)
    # The CLI of the machine (the old one), not the lab's, whatever PATH pytest runs with.
    env = dict(PATH=ANSIBLE_BIN + ":/usr/sbin:/usr/bin:/sbin:/bin", CEPH_ARGS="")
    for module, extra in (("volfence.csi.ceph_blocklist", dict(addresses=[lab.nodes["node-b"]], expire=600)),
                          ("volfence.csi.rbd_watchers_info", dict(images=[lab.pool + "/none"]))):
        started = time.time()
        result = run_module(inventory, "old-client", module, dict(args, **extra), extra_env=env)
        assert result.get("failed") is True, result
        msg = result["msg"]
        assert msg.startswith("cannot connect as client.%s: the key in %s is an aes256k key" % (lab.user, keyring)), msg
        assert "this client, Ceph %s" % old in msg and "Ceph >= 19.2.6 (Squid) or >= 20.2.4 (Tentacle)" in msg, msg
        assert "cephadm shell" in msg and "command_prefix" in msg and "rook-ceph-tools" in msg, msg
        assert msg.endswith("Nothing was changed."), msg
        assert result["versions"]["client"]["version"] == old and result["versions"]["client"]["backend"] == name
        assert result["versions"]["cluster"]["version"] is None and "not connected" in result["versions"]["cluster"]["error"]
        assert result["backend"] == name and not result.get("changed")
        assert time.time() - started < 60  # an unreadable key fails at once, not at the timeout
    assert blocklist(lab) == []
    if real:  # the real case of issue 12: the old client against the current cluster's own key
        assert reads_aes256k(cluster_versions(lab)[0])


def test_expire_is_taken_by_the_release(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    if name == "cli" and not reads_aes256k(expected_client(lab, host)) and reads_aes256k(cluster_versions(lab)[0]):
        pytest.skip("the CLI Ansible finds cannot read this lab's aes256k key")
    ip = lab.nodes["node-c"]
    for expire in (120, 90.5):
        done = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                          ceph_args(lab, name, addresses=[ip], expire=expire))
        assert done.get("failed") is not True and done["changed"], done
        info = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist_info", ceph_args(lab, name, match=[ip]))
        assert [e["entry"] for e in info["entries"]] == ["%s:0/0" % ip], info
        assert expire - 30 < info["entries"][0]["expires_in"] <= expire, (expire, info["entries"])
        gone = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist",
                          ceph_args(lab, name, state="absent", addresses=[ip]))
        assert gone["changed"] and blocklist(lab) == []


def test_the_blocklist_read_is_the_osdmaps_whatever_shape_ls_has(clean_lab, lab_inventory, backend):
    lab = clean_lab
    host, name = backend
    if name == "cli" and not reads_aes256k(expected_client(lab, host)) and reads_aes256k(cluster_versions(lab)[0]):
        pytest.skip("the CLI Ansible finds cannot read this lab's aes256k key")
    subnet = lab.nodes["node-a"].rsplit(".", 1)[0]
    lab.ceph("osd", "blocklist", "add", "%s.201:0/3271234567" % subnet, "600")
    lab.ceph("osd", "blocklist", "range", "add", "%s.240/29" % subnet, "600")
    dump = json.loads(lab.ceph("osd", "dump", "--format", "json"))
    expected = sorted(list(dump.get("blocklist", {})) + ["cidr:" + r if not r.startswith("cidr:") else r
                                                         for r in dump.get("range_blocklist", {})])
    info = run_module(lab_inventory, host, "volfence.csi.ceph_blocklist_info", ceph_args(lab, name))
    assert info.get("failed") is not True, info
    assert sorted(e["entry"] for e in info["entries"]) == expected and info["range_supported"] is True
    assert info["total"] == len(expected) == 2

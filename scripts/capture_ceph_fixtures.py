#!/usr/bin/python3
"""Capture the real Ceph outputs the unit tests parse, from a running lab, into
tests/unit/plugins/module_utils/fixtures/ceph/.

The committed fixtures come from Ceph 16.2.15 (Pacific): Debian's ceph-common and python3-rados/-rbd,
which /usr/bin/python3 and the `ceph`/`rbd` on PATH are on the test machine. To capture them again:

    LAB_CEPH=16 LAB_PREFIX=vfc .venv/bin/python -m volfence_lab up
    LAB_DIR=.lab-vfc /usr/bin/python3 scripts/capture_ceph_fixtures.py
    LAB_PREFIX=vfc .venv/bin/python -m volfence_lab down

then review `git diff` (addresses, ids and dates change; the unit tests read them from the files).

Every file there was written by this script: CLI outputs (`*.json`, `*.txt`, `*.stderr`, with
`*.rc` when not 0) and the Python bindings' return values serialised as JSON (`bindings_*.json`).
Nothing is edited by hand. The lab's blocklist and holders are cleared at the end; the images it
creates are prefixed `fixture-`.

The committed `fs_dump.json` (and `mgr_dump.json`/`osd_dump.json`) were captured from a lab in
which a CephFS with two MDS daemons had been started by hand first (mds.a active, mds.b
standby), so that the MDS addresses are real:
    ceph auth get-or-create mds.a mon 'allow profile mds' osd 'allow *' mds 'allow *' \
        mgr 'allow profile mds' -o $LAB_DIR/ceph/keyring.mds.a   (and mds.b)
    ceph osd pool create cephfs_meta 8 8; ceph osd pool create cephfs_data 8 8
    ceph fs new capfs cephfs_meta cephfs_data
    env -i PATH=$PATH ceph-mds -c $LAB_DIR/ceph/ceph.conf -i a --mds-data $LAB_DIR/ceph/mds/ceph-a \
        --keyring $LAB_DIR/ceph/keyring.mds.a   (and b)
The lab itself runs no MDS; without those steps `fs dump` lists no file system.
"""

import json
import os
import subprocess
import sys
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The lab's own reader of its env file: this script runs under the system's Python, where nothing of
# the checkout is installed; the lab and the API emulator it imports are stdlib only.
sys.path[:0] = [os.path.join(REPO, "tools", "lab"), os.path.join(REPO, "tools", "kubeemu")]
from volfence_lab.lab import read_env  # noqa: E402

FIXTURES = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "fixtures", "ceph")
LAB_CLI = [os.path.join(REPO, ".venv", "bin", "python"), "-m", "volfence_lab"]  # the lab (tools/lab)

ENV = read_env()  # the lab LAB_DIR (or LAB_PREFIX) names
if ENV is None:
    sys.exit("capture_ceph_fixtures: no lab runs there (LAB_DIR, LAB_PREFIX): start one first (see above)")
BASE = ["-c", ENV["CEPH_CONF"], "-k", ENV["CEPH_KEYRING"], "-n", "client." + ENV["CEPH_USER"]]
NODES = dict(item.split("=", 1) for item in ENV["LAB_NODES"].split())
SUBNET = ENV["CEPH_MON_HOST"].rsplit(".", 1)[0]


def run(tool, *args):
    env = dict(os.environ)
    env.pop("CEPH_ARGS", None)
    return subprocess.run([tool] + BASE + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, env=env, check=False)


def save(name, tool, *args):
    proc = run(tool, *args)
    with open(os.path.join(FIXTURES, name), "w") as handle:
        handle.write(proc.stdout)
    if proc.stderr.strip():
        with open(os.path.join(FIXTURES, os.path.splitext(name)[0] + ".stderr"), "w") as handle:
            handle.write(proc.stderr)
    if proc.returncode:
        with open(os.path.join(FIXTURES, os.path.splitext(name)[0] + ".rc"), "w") as handle:
            handle.write("%d\n" % proc.returncode)
    return proc


def lab(*args):
    env = dict(os.environ, LAB_DIR=ENV["LAB_DIR"], LAB_PREFIX=ENV["LAB_PREFIX"], LAB_SLOT=ENV["LAB_SLOT"],
               LAB_NODES=ENV["LAB_NODES"])
    out = subprocess.run(LAB_CLI + list(args), env=env, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    return json.loads(out) if args[0] == "hold" else out


def image(prefix):
    name = "rbd/fixture-%s-%s" % (prefix, uuid.uuid4().hex[:6])
    run("rbd", "create", name, "--size", "16")
    return name


def main():
    run("ceph", "osd", "blocklist", "clear")
    save("blocklist_ls_empty.json", "ceph", "osd", "blocklist", "ls", "--format", "json")
    # Entries of every kind: plain IPv4, nonce, port, IPv6 plain and nonce, ranges v4 and v6.
    for args in (["add", SUBNET + ".200", "3600"], ["add", SUBNET + ".201:0/3271234567", "3600"],
                 ["add", SUBNET + ".77:6789/0", "600"], ["add", "fd00:231::5"],
                 ["add", "[fd00:231::6]:0/123"], ["range", "add", SUBNET + ".128/28", "7200"],
                 ["range", "add", "fd00:231::/120"], ["add", SUBNET + ".202", "60"]):
        proc = run("ceph", "osd", "blocklist", *args)
        assert proc.returncode == 0, proc.stderr
    save("blocklist_ls.json", "ceph", "osd", "blocklist", "ls", "--format", "json")
    save("blacklist_ls.json", "ceph", "osd", "blacklist", "ls", "--format", "json")
    save("blocklist_add_invalid.json", "ceph", "osd", "blocklist", "add", "not-an-ip", "--format", "json")
    save("blocklist_range_add_invalid.json", "ceph", "osd", "blocklist", "range", "add", SUBNET + ".0/33",
         "--format", "json")
    save("unknown_command.json", "ceph", "osd", "frobnicate", "ls", "--format", "json")
    for what in (("mon", "dump"), ("mgr", "dump"), ("osd", "dump"), ("fs", "dump"), ("versions",)):
        save("_".join(what) + ".json", "ceph", *(list(what) + ["--format", "json"]))

    # RBD: two watchers (node-b, node-c), an exclusive kubelet lock, a shared lock, ceph-csi metadata.
    lab("release")
    two = image("two")
    b = lab("hold", "node-b", two)
    c = lab("hold", "node-c", two)
    save("rbd_status_two_watchers.json", "rbd", "status", two, "--format", "json")
    idle = image("idle")
    save("rbd_lock_ls_none.json", "rbd", "lock", "ls", idle, "--format", "json")
    save("rbd_lock_ls_none.txt", "rbd", "lock", "ls", idle)
    save("rbd_image_meta_list_none.json", "rbd", "image-meta", "list", idle, "--format", "json")
    locked = image("locked")
    lab("hold", "node-b", locked, "--lock-id", "kubelet_lock_magic_node-b")
    save("rbd_lock_ls_exclusive.json", "rbd", "lock", "ls", locked, "--format", "json")
    save("rbd_lock_ls_exclusive.txt", "rbd", "lock", "ls", locked)
    shared = image("shared")
    lab("hold", "node-a", shared, "--lock-id", "shared-a", "--shared-tag", "volfence-tag")
    save("rbd_lock_ls_shared.json", "rbd", "lock", "ls", shared, "--format", "json")
    save("rbd_lock_ls_shared.txt", "rbd", "lock", "ls", shared)
    meta = image("meta")
    run("rbd", "image-meta", "set", meta,
        ".rbd.csi.ceph.com/clientaddress/0001-0009-rook-ceph-0000000000000002-5f1d1b6a/node-b", NODES["node-b"])
    run("rbd", "image-meta", "set", meta, ".rbd.csi.ceph.com/clientAddress/node-c", c["address"])
    run("rbd", "image-meta", "set", meta, "csi.storage.k8s.io/pv/name", "pvc-5f1d1b6a")
    save("rbd_image_meta_list.json", "rbd", "image-meta", "list", meta, "--format", "json")
    save("rbd_status_missing_image.json", "rbd", "status", "rbd/fixture-does-not-exist", "--format", "json")
    save("rbd_status_missing_pool.json", "rbd", "status", "fixture-no-pool/img", "--format", "json")

    # Bindings: what rados/rbd return for the same images.
    import rados
    import rbd
    cluster = rados.Rados(conffile=ENV["CEPH_CONF"], rados_id=ENV["CEPH_USER"], conf={"keyring": ENV["CEPH_KEYRING"]})
    cluster.connect(timeout=10)
    ioctx = cluster.open_ioctx("rbd")
    out = {"addrs": cluster.get_addrs(), "instance_id": cluster.get_instance_id(), "images": {}}
    managed = image("managed")
    writer = rbd.Image(ioctx, managed.split("/", 1)[1])
    writer.write(b"\0" * 512, 0)  # acquires the exclusive-lock feature's managed lock
    save("rbd_lock_ls_managed.json", "rbd", "lock", "ls", managed, "--format", "json")
    save("rbd_lock_ls_managed.txt", "rbd", "lock", "ls", managed)
    for spec in (two, idle, locked, shared, meta, managed):
        img = rbd.Image(ioctx, spec.split("/", 1)[1], read_only=True)
        out["images"][spec] = {"watchers_list": list(img.watchers_list()), "list_lockers": img.list_lockers(),
                               "metadata_list": list(img.metadata_list())}
        img.close()
    rw = rbd.Image(ioctx, managed.split("/", 1)[1])
    out["images"][managed]["lock_get_owners"] = list(rw.lock_get_owners())
    rw.close()
    ro = rbd.Image(ioctx, managed.split("/", 1)[1], read_only=True)
    try:
        ro.lock_get_owners()
    except rbd.Error as exc:
        out["read_only_lock_get_owners_error"] = "%s: %s" % (type(exc).__name__, exc)
    ro.close()
    writer.close()
    mon = {}
    for name, cmd in (("blocklist_ls", {"prefix": "osd blocklist ls", "format": "json"}),
                      ("unknown", {"prefix": "osd frobnicate ls", "format": "json"}),
                      ("add_invalid", {"prefix": "osd blocklist", "blocklistop": "add", "addr": "bogus",
                                       "format": "json"}),
                      ("rm_absent", {"prefix": "osd blocklist", "blocklistop": "rm", "addr": SUBNET + ".203",
                                     "format": "json"})):
        ret, outbuf, outs = cluster.mon_command(json.dumps(cmd), b"", timeout=30)
        mon[name] = {"command": cmd, "ret": ret, "outbuf": outbuf.decode(), "outs": outs}
    out["mon_command"] = mon
    cluster.shutdown()
    with open(os.path.join(FIXTURES, "bindings_outputs.json"), "w") as handle:
        json.dump(out, handle, indent=1, sort_keys=True)
        handle.write("\n")
    with open(os.path.join(FIXTURES, "holders.json"), "w") as handle:
        json.dump({"node-b": b, "node-c": c, "nodes": NODES}, handle, indent=1, sort_keys=True)
        handle.write("\n")
    lab("release")
    run("ceph", "osd", "blocklist", "clear")
    print("captured into %s" % FIXTURES)


if __name__ == "__main__":
    sys.exit(main())

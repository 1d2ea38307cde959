#!/usr/bin/python3
"""Hold an RBD image from inside a simulated node: a real watcher, optionally an advisory lock.

Started by `lab.py hold` inside the node's network namespace, so Ceph sees the node's IP.
It writes a JSON status file once the image is open (or on error) and keeps the client alive
until SIGTERM, the way a node whose kubelet died keeps its rbd client.

With --writes-file it also writes to the image as a pod's application does (a stage holder: the
volume is in use, not merely open): every --write-every seconds 4 KiB at offset 0 holding its address
and a counter, each outcome recorded in the writes file (JSON, rewritten atomically): the last
successful write, the last failure with its errno name (a blocklisted client gets ESHUTDOWN, Ceph's
EBLOCKLISTED). A failed write never ends the holder: a frozen node's client that thaws keeps trying,
as the application on it does.

With --check-watchers it is instead a node's long-lived ceph-csi node plugin answering "who
watches this image?" (one image spec a line on stdin, one JSON line out), with one Ceph
connection: the kubelet stand-in asks it before it starts a stage holder, so a stuck volume's
retries cost a read, not a new client process each. It exits when stdin closes.
"""

import argparse
import errno
import json
import os
import signal
import sys
import threading
import time

import rados
import rbd


def parse_spec(spec):
    parts = spec.split("/")
    if len(parts) == 2:
        return parts[0], "", parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise ValueError("image must be pool/image or pool/namespace/image: %r" % spec)


def open_read_write(cluster, spec):
    """Open `spec` read-write on the client's connection: registers a watcher at its address."""
    pool, namespace, name = parse_spec(spec)
    ioctx = cluster.open_ioctx(pool)
    ioctx.set_namespace(namespace)
    return rbd.Image(ioctx, name)


def write_status(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.rename(tmp, path)


def errno_name(exc):
    """The errno name of a failed librbd call (python-rbd's errors carry the errno), else its type."""
    number = getattr(exc, "errno", None)
    if isinstance(number, int) and number:
        return errno.errorcode.get(abs(number), "E%d" % abs(number))
    return type(exc).__name__


class Writer(threading.Thread):
    """A pod's application writing to its volume: one small write every `every` seconds, each outcome
    recorded in `path`. A write may block for as long as the node is cut off (librbd has no timeout by
    default), as an application's does."""

    def __init__(self, image, address, path, every):
        threading.Thread.__init__(self, name="writer", daemon=True)
        self.image, self.path, self.every = image, path, every
        self.done = threading.Event()
        self.record = {"address": address, "ok": 0, "errors": 0, "first_ok": None, "last_ok": None,
                       "last_error": None, "errnos": {}}

    def run(self):
        counter = 0
        write_status(self.path, self.record)
        while not self.done.wait(self.every):
            counter += 1
            data = ("%s %d\n" % (self.record["address"], counter)).encode().ljust(4096, b"\0")
            try:
                self.image.write(data, 0)
            except Exception as exc:  # a blocklisted or cut-off client: recorded, and the next one tried
                name = errno_name(exc)
                self.record["errors"] += 1
                self.record["errnos"][name] = self.record["errnos"].get(name, 0) + 1
                self.record["last_error"] = {"time": time.time(), "counter": counter, "errno": name,
                                             "message": str(exc)}
            else:
                self.record["ok"] += 1
                self.record["last_ok"] = {"time": time.time(), "counter": counter}
                self.record["first_ok"] = self.record["first_ok"] or self.record["last_ok"]
            write_status(self.path, self.record)


def serve_checks(args):
    """--check-watchers: answer the watchers of each image named on stdin, read-only (a read-only
    open registers no watch, as `rbd status` does)."""
    cluster = rados.Rados(conffile=args.conf, rados_id=args.user, conf={"keyring": args.keyring})
    cluster.connect(timeout=10)
    ioctxs = {}
    for line in sys.stdin:
        spec = line.strip()
        if not spec:
            continue
        try:
            pool, namespace, name = parse_spec(spec)
            if (pool, namespace) not in ioctxs:
                ioctx = cluster.open_ioctx(pool)
                ioctx.set_namespace(namespace)
                ioctxs[(pool, namespace)] = ioctx
            image = rbd.Image(ioctxs[(pool, namespace)], name, read_only=True)
            try:
                answer = {"watchers": [w["addr"] for w in image.watchers_list()]}
            finally:
                image.close()
        except Exception as exc:  # reported to the asking agent, which then uses a stage holder
            answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--conf", required=True)
    parser.add_argument("--keyring", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--check-watchers", action="store_true",
                        help="serve watcher checks: image specs on stdin, JSON lines out")
    parser.add_argument("--image")
    parser.add_argument("--lock-id")
    parser.add_argument("--shared-tag")
    parser.add_argument("--status-file")
    parser.add_argument("--csi-stage", action="store_true",
                        help="act like ceph-csi NodeStageVolume: refuse while other watchers exist")
    parser.add_argument("--intree-lock", metavar="LOCK_ID",
                        help="act like the in-tree rbd plugin: refuse while another node's lock exists, "
                             "then take LOCK_ID (kubelet_lock_magic_<node>)")
    parser.add_argument("--metadata-key", help="image metadata key to record this client in")
    parser.add_argument("--metadata-value", help="value to record (default: this client's address)")
    parser.add_argument("--also-image", action="append", default=[],
                        help="another image this same client opens read-write (a node's one client watching "
                             "several images); repeatable")
    parser.add_argument("--writes-file", help="write to the image as an application does, recording each "
                                              "outcome here (JSON)")
    parser.add_argument("--write-every", type=float, default=0.5, help="seconds between writes (default 0.5)")
    args = parser.parse_args()
    if args.check_watchers:
        return serve_checks(args)
    if not (args.image and args.status_file):
        parser.error("--image and --status-file are required to hold an image")

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    try:
        parse_spec(args.image)  # a bad spec fails before connecting
        conf = {"keyring": args.keyring}
        if args.writes_file:
            conf["rbd_cache"] = "false"  # a write that succeeded reached the OSD, as krbd's do
        cluster = rados.Rados(conffile=args.conf, rados_id=args.user, conf=conf)
        cluster.connect(timeout=10)
        image = open_read_write(cluster, args.image)
        if args.csi_stage:
            # ceph-csi isInUse(): "because we opened the image, there is at least one watcher";
            # more than that means another client still has the image.
            watchers = list(image.watchers_list())
            if len(watchers) > 1:
                mine = cluster.get_addrs()
                others = [w["addr"] for w in watchers if w["addr"] not in mine]
                image.close()
                write_status(args.status_file, {"in_use": True, "watchers": others})
                return 3
        if args.intree_lock:
            lockers = image.list_lockers() or {}
            others = [l for l in lockers.get("lockers", []) if l[1] != args.intree_lock]
            if others:
                image.close()
                write_status(args.status_file, {"in_use": True, "locked_by": [
                    {"locker": l[0], "id": l[1], "address": l[2]} for l in others]})
                return 3
            if not lockers.get("lockers"):
                image.lock_exclusive(args.intree_lock)
        # the same connection, so the same client address watches each of them
        also = [open_read_write(cluster, spec) for spec in args.also_image]
        if args.metadata_key:
            image.metadata_set(args.metadata_key, args.metadata_value or cluster.get_addrs())
        if args.lock_id:
            if args.shared_tag:
                image.lock_shared(args.lock_id, args.shared_tag)
            else:
                image.lock_exclusive(args.lock_id)
        writer = None
        if args.writes_file:
            writer = Writer(image, cluster.get_addrs(), args.writes_file, args.write_every)
            writer.start()
        write_status(args.status_file, {"address": cluster.get_addrs(), "instance_id": cluster.get_instance_id(),
                                        "image": args.image, "also_images": args.also_image,
                                        "lock_id": args.lock_id, "writes_file": args.writes_file})
    except Exception as exc:  # reported to the lab through the status file
        write_status(args.status_file, {"error": "%s: %s" % (type(exc).__name__, exc)})
        return 1
    while not stop:
        time.sleep(0.2)
    if writer is not None:
        writer.done.set()
        writer.join(2)  # a write blocked on a cut-off network is left behind
    # Not closed here; the bindings close the image as Python exits, so a released holder's watch goes at
    # once (measured). A frozen node's client never gets here: the lab kills it (lab.revive_node).
    return 0


if __name__ == "__main__":
    sys.exit(main())

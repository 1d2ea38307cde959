"""The battery's Ceph snapshot in one client: every image of a pool with its locks and watchers, and
the blocklist. Run by battery_lab.py with the lab's ceph-python3 (the rados and rbd bindings of the
lab's release); prints one JSON object.

One connection instead of two rbd CLI processes per image: the pool holds every image the tests of
the shard made before the battery (hundreds), and the battery snapshots it before and after each case.

usage: ceph-python3 ceph_state.py CONF KEYRING USER POOL
"""

import concurrent.futures
import json
import sys

import rados
import rbd


def image_state(ioctx, name):
    """(locks, watcher addresses) of one image, as `rbd lock ls` and `rbd status` report them, or
    an {"error": ...} for both when the image went away or cannot be opened."""
    try:
        image = rbd.Image(ioctx, name, read_only=True)  # a read-only open adds no watcher of its own
    except rbd.Error as exc:
        error = {"error": "%s: %s" % (type(exc).__name__, exc)}
        return error, error
    try:
        lockers = image.list_lockers() or {}
        locks = [{"id": cookie, "locker": client, "address": address}
                 for client, cookie, address in lockers.get("lockers", [])]
        watchers = sorted(w["addr"] for w in image.watchers_list())
        return locks, watchers
    finally:
        image.close()


def main(argv):
    conf, keyring, user, pool = argv
    cluster = rados.Rados(conffile=conf, name="client." + user, conf={"keyring": keyring})
    cluster.connect(timeout=30)
    try:
        ret, out, err = cluster.mon_command(json.dumps({"prefix": "osd blocklist ls", "format": "json"}), b"")
        blocklist = out.decode() if ret == 0 else None
        ioctx = cluster.open_ioctx(pool)
        try:
            images = sorted(rbd.RBD().list(ioctx))
            # librados and librbd release the GIL: a few threads read the images side by side
            with concurrent.futures.ThreadPoolExecutor(max_workers=8) as workers:
                states = dict(zip(images, workers.map(lambda name: image_state(ioctx, name), images)))
        finally:
            ioctx.close()
    finally:
        cluster.shutdown()
    json.dump({"images": images, "blocklist": blocklist, "blocklist_error": None if ret == 0 else err,
               "locks": dict((name, s[0]) for name, s in states.items()),
               "watchers": dict((name, s[1]) for name, s in states.items())}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""FUSE mounts of CSI volumes under kubelet's directory, and whether their daemon is alive.

Private to volfence.csi. dead-fuse-mount: when a FUSE-based CSI node plugin (s3fs, geesefs, ...)
restarts, the FUSE daemons it ran die with it and every pod mount reports
"Transport endpoint is not connected" (ENOTCONN) until it is unmounted and mounted again.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fnmatch
import json
import os
import re
import threading

# A mount's states are the decision layer's words (_decisions/dead_mounts.py decides what is unmounted).
from ansible_collections.volfence.csi.plugins.module_utils._decisions.dead_mounts import DEAD, HEALTHY, HUNG

# The errors a FUSE mount gives once its daemon is gone.
DEAD_ERRNOS = (errno.ENOTCONN, errno.ECONNABORTED)

_POD_VOLUME = re.compile(r"^pods/(?P<uid>[0-9a-fA-F-]{8,})/volumes/kubernetes\.io~csi/(?P<volume>[^/]+)/mount$")
_POD_DEVICE = re.compile(r"^pods/(?P<uid>[0-9a-fA-F-]{8,})/volumeDevices/kubernetes\.io~csi/(?P<volume>[^/]+)$")
_GLOBAL = re.compile(r"^plugins/kubernetes\.io/csi/(?:pv/(?P<pv>[^/]+)/globalmount|(?P<driver>[^/]+)/(?P<hash>[0-9a-f]{64})/globalmount)$")


def unescape_mount_field(field):
    r"""mountinfo escapes space, tab, newline and backslash as \040, \011, \012, \134."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text):
    """Entries of /proc/<pid>/mountinfo: mount point, filesystem type and source."""
    mounts = []
    for line in text.splitlines():
        if not line.strip():
            continue
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        tail = right.split()
        if len(fields) < 5 or len(tail) < 2:
            continue
        mounts.append({
            "mount_id": int(fields[0]),
            "mount_point": unescape_mount_field(fields[4]),
            "fstype": tail[0],
            "source": unescape_mount_field(tail[1]),
        })
    return mounts


def is_fuse(fstype, patterns):
    return any(fnmatch.fnmatchcase(fstype, p) for p in patterns)


def classify(path, kubelet_dir):
    """Where a mount point sits in kubelet's tree: a pod's volume, or a global staging mount.

    Returns None for paths outside kubelet's CSI directories."""
    root = kubelet_dir.rstrip("/") + "/"
    if not path.startswith(root):
        return None
    rel = path[len(root):]
    match = _POD_VOLUME.match(rel) or _POD_DEVICE.match(rel)
    if match:
        return {"kind": "pod", "pod_uid": match.group("uid"), "volume": match.group("volume")}
    match = _GLOBAL.match(rel)
    if match:
        return {"kind": "global", "pod_uid": None, "volume": match.group("pv"),
                "driver": match.group("driver")}
    return None


def read_vol_data(path):
    """kubelet's vol_data.json beside a pod volume's mount dir names the driver and handle."""
    try:
        with open(os.path.join(os.path.dirname(path), "vol_data.json")) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return {}


# Seconds a mount point may take to answer stat() before it counts as hung (I8).
PROBE_TIMEOUT = 5


def probe(path, stat=os.stat, timeout=None):
    """(state, errno, error text) of a mount point: HEALTHY; DEAD when stat() fails as it does once the FUSE
    daemon is gone (ENOTCONN, ECONNABORTED); HUNG when stat() has not returned within `timeout` seconds (the
    daemon is alive but does not answer: stopped, deadlocked, or its backend is unreachable).

    With a timeout, stat() runs in a daemon thread, abandoned if it does not return: a FUSE request wait is
    killable, so the thread dies with the module's process (I8). An error other than the dead ones (EACCES,
    ...) leaves the mount HEALTHY: its daemon answered."""
    outcome = {}

    def call():
        try:
            stat(path)
        except OSError as exc:
            outcome["error"] = exc
        outcome["done"] = True
    if timeout is None:
        call()
    else:
        worker = threading.Thread(target=call, name="volfence-fuse-probe", daemon=True)
        worker.start()
        worker.join(timeout)
        if "done" not in outcome:
            return HUNG, None, "stat() did not return within %ss: the FUSE daemon does not answer" % timeout
    exc = outcome.get("error")
    if exc is None:
        return HEALTHY, None, None
    text = os.strerror(exc.errno) if exc.errno else str(exc)
    return (DEAD if exc.errno in DEAD_ERRNOS else HEALTHY), exc.errno, text


def check_kubelet_dir(path, realpath=os.path.realpath, isdir=os.path.isdir, exists=os.path.exists,
                      access=os.access):
    """(the directory to look under, warnings) for the kubelet_dir option, or ValueError saying what is
    wrong with it (a typo must not read as "no dead mounts, all healthy"):

    * it does not exist, is not a directory, or cannot be read: ValueError;
    * it has no ``pods`` directory (kubelet creates it at start): a warning, it does not look like
      kubelet's root directory.

    A symbolic link is resolved: /proc/self/mountinfo lists mount points by their real path."""
    if not exists(path):
        raise ValueError("kubelet_dir %s does not exist on this node (it must be kubelet's root directory, by "
                         "default /var/lib/kubelet, see kubelet's --root-dir): nothing was done" % path)
    if not isdir(path):
        raise ValueError("kubelet_dir %s is not a directory (it must be kubelet's root directory, by default "
                         "/var/lib/kubelet): nothing was done" % path)
    if not access(path, os.R_OK | os.X_OK):
        raise ValueError("kubelet_dir %s cannot be read by this user (run the module with become: true): "
                         "nothing was done" % path)
    real = realpath(path)
    warnings = []
    if not isdir(os.path.join(real, "pods")):
        warnings.append("kubelet_dir %s has no pods/ directory: it does not look like kubelet's root directory "
                        "(see kubelet's --root-dir), so no pod volume can be found under it" % path)
    return real, warnings


def unmatched_drivers(drivers, seen):
    """Warnings for the `drivers` given that no FUSE mount of a CSI volume under kubelet_dir has
    (`seen`: the drivers of every such mount). A node without that driver's volumes is a normal
    answer (the modules run on every node), so this warns and does not fail."""
    found = sorted(set(d for d in seen if d))
    return ["drivers: no FUSE mount of a CSI volume of driver %r under kubelet_dir on this node (drivers of the "
            "FUSE mounts found: %s); check the name, as kubelet's vol_data.json gives it (driverName)"
            % (driver, ", ".join(found) or "none") for driver in (drivers or []) if driver not in found]


def find_csi_fuse_mounts(mountinfo_text, kubelet_dir, *, drivers=None, fstype_patterns=("fuse", "fuse.*"),
                         stat=os.stat, vol_data=read_vol_data, probe_timeout=PROBE_TIMEOUT, seen_drivers=None):
    """Every FUSE mount of a CSI volume under kubelet_dir, with its state (probe()).

    drivers: keep only these CSI drivers (empty keeps all; a mount whose driver cannot be
    told is kept only when no driver filter is given). Mounts are probed one after the other,
    each within probe_timeout seconds (None: no bound). `seen_drivers`, a list, gets the driver of
    every FUSE mount of a CSI volume found, before the driver filter (for unmatched_drivers)."""
    found = []
    seen = set()
    for mount in parse_mountinfo(mountinfo_text):
        if not is_fuse(mount["fstype"], fstype_patterns):
            continue
        where = classify(mount["mount_point"], kubelet_dir)
        if where is None or mount["mount_point"] in seen:
            continue
        seen.add(mount["mount_point"])
        data = vol_data(mount["mount_point"]) if where["kind"] == "pod" else {}
        driver = data.get("driverName") or where.get("driver")
        if seen_drivers is not None:
            seen_drivers.append(driver)
        if drivers and driver not in drivers:
            continue
        state, err_no, error = probe(mount["mount_point"], stat=stat, timeout=probe_timeout)
        found.append({
            "path": mount["mount_point"],
            "fstype": mount["fstype"],
            "source": mount["source"],
            "kind": where["kind"],
            "pod_uid": where["pod_uid"],
            "volume": data.get("specVolID") or where["volume"],
            "volume_handle": data.get("volumeHandle"),
            "driver": driver,
            "healthy": state == HEALTHY,
            "state": state,
            "errno": err_no,
            "error": error,
        })
    return found


def summarize(mounts):
    broken = [m for m in mounts if not m["healthy"]]
    return {
        "total": len(mounts),
        "broken": len(broken),
        "hung": len([m for m in mounts if m.get("state") == HUNG]),
        "pod_uids": sorted(set(m["pod_uid"] for m in broken if m["pod_uid"])),
    }


def unmount_results(dead, outcomes):
    """I7: what an unmount run did, honestly: (unmounted, failures). `outcomes` are lazy_unmount() results in
    the order of `dead`; a mount is unmounted only when its umount succeeded."""
    unmounted = []
    failures = []
    for mount, outcome in zip(dead, outcomes):
        if outcome["rc"] == 0:
            unmounted.append(mount)
        else:
            failures.append(dict(mount, rc=outcome["rc"], stderr=(outcome.get("stderr") or "").strip(),
                                 stdout=(outcome.get("stdout") or "").strip()))
    return unmounted, failures

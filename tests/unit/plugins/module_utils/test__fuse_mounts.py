# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno

from ansible_collections.volfence.csi.plugins.module_utils._fuse_mounts import (
    classify,
    find_csi_fuse_mounts,
    parse_mountinfo,
    summarize,
    unescape_mount_field,
)

UID = "7e6c415a-f40c-11e6-ad11-00163e1625a9"
HASH = "a" * 64
MOUNTINFO = "\n".join([
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
    "101 22 0:50 / /var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-s3/mount rw - fuse.s3fs s3fs rw" % UID,
    "102 22 0:51 / /var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-ok/mount rw - fuse.s3fs s3fs rw" % UID,
    "103 22 0:52 / /var/lib/kubelet/plugins/kubernetes.io/csi/ch.ctrox.csi.s3-driver/%s/globalmount rw - fuse geesefs rw" % HASH,
    "104 22 0:53 / /var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-rbd/mount rw - ext4 /dev/rbd0 rw" % UID,
    "105 22 0:54 / /mnt/some\\040thing rw - fuse.sshfs host:/ rw",
    "",
])


def dead_for(paths):
    def stat(path):
        if path in paths:
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        return None
    return stat


def vol_data(path):
    return {"driverName": "ch.ctrox.csi.s3-driver", "volumeHandle": "bucket-" + path.split("/")[-2],
            "specVolID": path.split("/")[-2]}


def test_unescape_mount_field():
    assert unescape_mount_field("/mnt/some\\040thing\\134x") == "/mnt/some thing\\x"


def test_parse_mountinfo_reads_point_type_and_source():
    mounts = parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 6
    assert mounts[1]["fstype"] == "fuse.s3fs" and mounts[1]["source"] == "s3fs"
    assert mounts[5]["mount_point"] == "/mnt/some thing"


def test_classify_pod_global_and_outside():
    pod = classify("/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-1/mount" % UID, "/var/lib/kubelet/")
    assert pod == {"kind": "pod", "pod_uid": UID, "volume": "pvc-1"}
    glob = classify("/var/lib/kubelet/plugins/kubernetes.io/csi/drv.example/%s/globalmount" % HASH, "/var/lib/kubelet")
    assert glob["kind"] == "global" and glob["driver"] == "drv.example" and glob["pod_uid"] is None
    assert classify("/var/lib/kubelet/pods/%s/volumes/kubernetes.io~empty-dir/x" % UID, "/var/lib/kubelet") is None
    assert classify("/mnt/x", "/var/lib/kubelet") is None


def test_find_only_fuse_csi_mounts_and_their_health():
    dead = "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-s3/mount" % UID
    mounts = find_csi_fuse_mounts(MOUNTINFO, "/var/lib/kubelet", stat=dead_for([dead]), vol_data=vol_data)
    assert [m["volume"] for m in mounts] == ["pvc-s3", "pvc-ok", None]
    by_volume = dict((m["volume"], m) for m in mounts)
    assert by_volume["pvc-s3"]["healthy"] is False
    assert by_volume["pvc-s3"]["errno"] == errno.ENOTCONN
    assert by_volume["pvc-s3"]["error"] == "Transport endpoint is not connected"
    assert by_volume["pvc-ok"]["healthy"] is True and by_volume["pvc-ok"]["error"] is None
    assert summarize(mounts) == {"total": 3, "broken": 1, "pod_uids": [UID]}


def test_driver_filter_uses_vol_data_and_staging_path():
    mounts = find_csi_fuse_mounts(MOUNTINFO, "/var/lib/kubelet", drivers=["other.driver"], stat=dead_for([]),
                                  vol_data=vol_data)
    assert mounts == []
    mounts = find_csi_fuse_mounts(MOUNTINFO, "/var/lib/kubelet", drivers=["ch.ctrox.csi.s3-driver"],
                                  stat=dead_for([]), vol_data=lambda path: {})
    assert [m["kind"] for m in mounts] == ["global"]


def test_other_errors_are_not_dead_fuse():
    def stat(path):
        raise OSError(errno.EACCES, "Permission denied")
    mounts = find_csi_fuse_mounts(MOUNTINFO, "/var/lib/kubelet", stat=stat, vol_data=vol_data)
    assert all(m["healthy"] for m in mounts)
    assert mounts[0]["errno"] == errno.EACCES

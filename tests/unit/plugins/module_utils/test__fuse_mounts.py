# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno

from ansible_collections.volfence.csi.plugins.module_utils._fuse.mounts import (
    classify,
    find_csi_fuse_mounts,
    parse_mountinfo,
    probe,
    summarize,
    unescape_mount_field,
    unmount_results,
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
    assert summarize(mounts) == {"total": 3, "broken": 1, "hung": 0, "pod_uids": [UID]}


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


def test_i8_a_mount_whose_stat_never_returns_is_reported_hung_within_the_timeout():
    """I8: stat() of a hung (not dead) FUSE mount blocks; the probe gives up after its timeout and reports the
    mount as hung, while the others are still probed."""
    import threading
    import time
    gate = threading.Event()
    hung = "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-ok/mount" % UID

    def stat(path):
        if path == hung:
            gate.wait(60)
        return dead_for(["/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/pvc-s3/mount" % UID])(path)
    started = time.time()
    try:
        mounts = find_csi_fuse_mounts(MOUNTINFO, "/var/lib/kubelet", stat=stat, vol_data=vol_data, probe_timeout=0.5)
    finally:
        gate.set()
    assert time.time() - started < 30   # not the hung probe's 60 s, however loaded the machine
    by_volume = dict((m["volume"], m) for m in mounts)
    assert by_volume["pvc-ok"]["state"] == "hung" and by_volume["pvc-ok"]["healthy"] is False
    assert "did not return within 0.5s" in by_volume["pvc-ok"]["error"]
    assert by_volume["pvc-s3"]["state"] == "dead"
    assert summarize(mounts)["hung"] == 1 and summarize(mounts)["broken"] == 2


def test_probe_states():
    assert probe("/x", stat=lambda p: None, timeout=5) == ("healthy", None, None)
    assert probe("/x", stat=dead_for(["/x"]), timeout=5)[:2] == ("dead", errno.ENOTCONN)
    assert probe("/x", stat=dead_for(["/x"]))[0] == "dead"


def test_i7_unmount_results_list_only_successful_unmounts():
    """I7: a mount whose umount failed is in failures, not in unmounted (before, every dead mount was listed as
    unmounted)."""
    dead = [dict(path="/a", pod_uid="u1"), dict(path="/b", pod_uid="u2")]
    unmounted, failures = unmount_results(dead, [dict(path="/a", rc=0, stdout="", stderr=""),
                                                 dict(path="/b", rc=32, stdout="", stderr="umount: /b: busy\n")])
    assert unmounted == [dead[0]]
    assert failures == [dict(path="/b", pod_uid="u2", rc=32, stderr="umount: /b: busy", stdout="")]

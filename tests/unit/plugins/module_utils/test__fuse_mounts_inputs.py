# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 17 item 5: a kubelet_dir or a driver that matches nothing is not "all healthy"."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._fuse.mounts import (
    check_kubelet_dir,
    find_csi_fuse_mounts,
    unmatched_drivers,
)


def test_a_missing_kubelet_dir_fails(tmp_path):
    with pytest.raises(ValueError, match=r'^kubelet_dir %s does not exist on this node' % (tmp_path / 'nope')):
        check_kubelet_dir(str(tmp_path / 'nope'))


def test_a_file_is_not_a_kubelet_dir(tmp_path):
    path = tmp_path / 'file'
    path.write_text(u'x')
    with pytest.raises(ValueError, match=r'^kubelet_dir %s is not a directory' % path):
        check_kubelet_dir(str(path))


def test_an_unreadable_kubelet_dir_fails(tmp_path):
    with pytest.raises(ValueError, match=r'cannot be read by this user'):
        check_kubelet_dir(str(tmp_path), access=lambda path, mode: False)


def test_a_directory_without_pods_warns_and_a_symlink_is_resolved(tmp_path):
    real, warnings = check_kubelet_dir(str(tmp_path))
    assert real == os.path.realpath(str(tmp_path)) and "has no pods/ directory" in warnings[0]
    (tmp_path / 'kubelet' / 'pods').mkdir(parents=True)
    os.symlink(str(tmp_path / 'kubelet'), str(tmp_path / 'link'))
    real, warnings = check_kubelet_dir(str(tmp_path / 'link'))
    assert real == os.path.realpath(str(tmp_path / 'kubelet')) and warnings == []


MOUNTINFO = (
    '100 1 0:50 / /var/lib/kubelet/pods/0000aaaa-1111/volumes/kubernetes.io~csi/pvc-1/mount rw - fuse.s3fs s3 rw\n'
    '101 1 0:51 / /var/lib/kubelet/pods/0000bbbb-2222/volumes/kubernetes.io~csi/pvc-2/mount rw - fuse.rclone r rw\n'
)


def test_drivers_that_match_no_mount_are_named_with_the_drivers_found():
    seen = []
    drivers = {'pvc-1': 'ch.ctrox.csi.s3-driver', 'pvc-2': 'csi-rclone'}
    mounts = find_csi_fuse_mounts(MOUNTINFO, '/var/lib/kubelet', drivers=['ch.ctrox.csi.s3-drivr'], stat=lambda p: None,
                                  vol_data=lambda p: dict(driverName=drivers[p.split('/')[-2]]),
                                  probe_timeout=None, seen_drivers=seen)
    assert mounts == [] and sorted(seen) == ['ch.ctrox.csi.s3-driver', 'csi-rclone']
    assert unmatched_drivers(['ch.ctrox.csi.s3-drivr', 'csi-rclone'], seen) == [
        "drivers: no FUSE mount of a CSI volume of driver 'ch.ctrox.csi.s3-drivr' under kubelet_dir on this node "
        "(drivers of the FUSE mounts found: ch.ctrox.csi.s3-driver, csi-rclone); check the name, as kubelet's "
        "vol_data.json gives it (driverName)"]
    assert 'found: none' in unmatched_drivers(['x'], [])[0] and unmatched_drivers([], []) == []

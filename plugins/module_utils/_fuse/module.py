# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument spec and node access shared by the FUSE mount modules (private to volfence.csi)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._fuse.mounts import (
    check_kubelet_dir,
    find_csi_fuse_mounts,
    unmatched_drivers,
)
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_CALL_TIMEOUT, check_range

FUSE_ARGUMENT_SPEC = dict(
    kubelet_dir=dict(type="path", default="/var/lib/kubelet"),
    drivers=dict(type="list", elements="str", default=[]),
    fstype_patterns=dict(type="list", elements="str", default=["fuse", "fuse.*"]),
    probe_timeout=dict(type="int", default=5),
)


def check_params(module):
    """Fail on bad options before anything is looked at; the directory to look under (kubelet_dir,
    resolved), with a warning when it does not look like kubelet's."""
    try:
        check_range(module.params["probe_timeout"], "probe_timeout", 1, MAX_CALL_TIMEOUT, "seconds")
        kubelet_dir, warnings = check_kubelet_dir(module.params["kubelet_dir"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for warning in warnings:
        module.warn(warning)
    return kubelet_dir


def find_mounts(module, kubelet_dir):
    """The FUSE mounts of CSI volumes under kubelet_dir, with a warning for each driver given that
    has none on this node."""
    params = module.params
    seen = []
    mounts = find_csi_fuse_mounts(read_mountinfo(module), kubelet_dir, drivers=params["drivers"],
                                  fstype_patterns=params["fstype_patterns"], probe_timeout=params["probe_timeout"],
                                  seen_drivers=seen)
    for warning in unmatched_drivers(params["drivers"], seen):
        module.warn(warning)
    return mounts


def read_mountinfo(module, path="/proc/self/mountinfo"):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s" % (path, exc))


def lazy_unmount(module, path):
    """umount -l: detaches a dead FUSE mount at once, even while processes still hold it."""
    umount = module.get_bin_path("umount", required=True)
    rc, out, err = module.run_command([umount, "-l", path])
    return {"path": path, "rc": rc, "stdout": out, "stderr": err}

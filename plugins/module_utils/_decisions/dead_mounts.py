# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: which FUSE mounts of CSI volumes a node's recovery unmounts (fuse_mount_recovery).

A mount is in one of three states (_fuse/mounts.probe tells them on the node): healthy (its daemon
answers), dead (stat() fails as it does once the FUSE daemon is gone) or hung (its daemon is alive
but does not answer within probe_timeout). Only a dead mount is unmounted: a healthy one serves its
pod, and a hung one's daemon may still write (I8: it is reported and left alone).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

HEALTHY = "healthy"
DEAD = "dead"
HUNG = "hung"


def unmount_plan(mounts):
    """(unmount, hung) of the probed mounts (each with its `state`): the dead mounts to unmount, and
    the hung mounts left alone, each list in the order given."""
    unmount = [m for m in mounts or [] if m.get("state") == DEAD]
    hung = [m for m in mounts or [] if m.get("state") == HUNG]
    return unmount, hung

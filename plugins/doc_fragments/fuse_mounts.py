# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):

    # Which FUSE mounts of CSI volumes the node-side FUSE modules look at.
    DOCUMENTATION = r'''
options:
  kubelet_dir:
    description:
      - kubelet's root directory on the node. Pod volumes are under C(<kubelet_dir>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount),
        global staging mounts under C(<kubelet_dir>/plugins/kubernetes.io/csi/).
      - The module fails, before looking at any mount, when it does not exist, is not a directory or cannot be
        read (a typo must not read as "no dead mounts"). It warns when it has no C(pods) directory (it then does
        not look like kubelet's). A symbolic link is followed.
    type: path
    default: /var/lib/kubelet
  drivers:
    description:
      - Only mounts of these CSI drivers (for example C(ch.ctrox.csi.s3-driver)), as named in kubelet's C(vol_data.json).
      - Empty means every CSI driver.
      - A driver that no FUSE mount under O(kubelet_dir) has gives a warning naming the drivers that were found,
        not a failure. A node without that driver's volumes is a normal answer, since the modules run on every
        node.
    type: list
    elements: str
    default: []
  fstype_patterns:
    description:
      - Shell patterns of the filesystem types that count as FUSE.
    type: list
    elements: str
    default: [fuse, fuse.*]
  probe_timeout:
    description:
      - Seconds each mount point may take to answer C(stat()). A mount whose FUSE daemon is alive but does not
        answer within that time (stopped, deadlocked, its backend unreachable) is reported as C(hung) instead of
        hanging the module.
      - From 1 to 3600.
    type: int
    default: 5
'''

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: fuse_mounts_info
short_description: Find the FUSE mounts of CSI volumes on a node and tell which ones are dead
version_added: 0.1.0
description:
  - Runs on a Kubernetes node. Lists the FUSE mounts of CSI volumes under kubelet's directory
    (pod volume mounts and global staging mounts) and checks each one.
  - A mount whose FUSE daemon died (for example when the CSI node plugin that ran it was
    restarted) fails with C(Transport endpoint is not connected); it is reported with
    RV(mounts[].healthy=false).
  - Use M(volfence.csi.fuse_mounts) to unmount the dead ones.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.fuse_mounts
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
seealso:
  - module: volfence.csi.fuse_mounts
'''

EXAMPLES = r'''
- name: Which s3 CSI mounts on this node are dead?
  volfence.csi.fuse_mounts_info:
    drivers: [ch.ctrox.csi.s3-driver]
  register: fuse

- name: Pods to restart
  ansible.builtin.debug:
    msg: "{{ fuse.pod_uids }}"
'''

RETURN = r'''
mounts:
  description: The FUSE mounts of CSI volumes found.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The mount point.
      type: str
      sample: /var/lib/kubelet/pods/8d5f.../volumes/kubernetes.io~csi/pvc-1234/mount
    fstype:
      description: The filesystem type.
      type: str
      sample: fuse.s3fs
    source:
      description: The mount source.
      type: str
    kind:
      description: C(pod) for a pod's volume mount, C(global) for a staging mount.
      type: str
      sample: pod
    pod_uid:
      description: UID of the pod the mount belongs to; null for global mounts.
      type: str
    volume:
      description: The PersistentVolume name.
      type: str
      sample: pvc-1234
    volume_handle:
      description: The CSI volume handle, from kubelet's C(vol_data.json).
      type: str
    driver:
      description: The CSI driver, from kubelet's C(vol_data.json) or the staging path.
      type: str
    healthy:
      description: False when the mount's FUSE daemon is gone or does not answer.
      type: bool
    state:
      description: C(healthy); C(dead) when its FUSE daemon is gone (C(Transport endpoint is not connected));
        C(hung) when C(stat()) did not return within O(probe_timeout) (the daemon is alive but does not answer).
      type: str
      sample: dead
    errno:
      description: The error number when the mount point cannot be reached.
      type: int
      sample: 107
    error:
      description: The error text.
      type: str
      sample: Transport endpoint is not connected
broken:
  description: How many mounts are dead or hung.
  returned: always
  type: int
hung:
  description: How many mounts are hung (their daemon did not answer within O(probe_timeout)).
  returned: always
  type: int
pod_uids:
  description: UIDs of the pods that have a dead or hung mount.
  returned: always
  type: list
  elements: str
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._fuse.mounts import summarize
from ansible_collections.volfence.csi.plugins.module_utils._fuse.module import (
    FUSE_ARGUMENT_SPEC,
    check_params,
    find_mounts,
)


def main():
    module = VolfenceModule(argument_spec=dict(FUSE_ARGUMENT_SPEC), supports_check_mode=True)
    kubelet_dir = check_params(module)
    mounts = find_mounts(module, kubelet_dir)
    summary = summarize(mounts)
    module.exit_json(changed=False, mounts=mounts, broken=summary["broken"], hung=summary["hung"],
                     pod_uids=summary["pod_uids"])


if __name__ == "__main__":
    main()

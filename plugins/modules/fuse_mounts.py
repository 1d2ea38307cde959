#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: fuse_mounts
short_description: Unmount the dead FUSE mounts of CSI volumes on a node
version_added: 0.1.0
description:
  - Runs on a Kubernetes node. Finds the FUSE mounts of CSI volumes under kubelet's directory
    whose FUSE daemon is gone (C(Transport endpoint is not connected)) and lazily unmounts them
    (C(umount -l)), so that kubelet can mount the volume again once the pod restarts.
  - Healthy mounts are never touched.
  - Restarting the affected pods is a Kubernetes-side step; the returned RV(pod_uids) name
    them (the C(volfence.csi) FUSE recovery playbook does both).
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.fuse_mounts
  - volfence.csi.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  state:
    description:
      - C(absent) unmounts the dead mounts found.
    type: str
    choices: [absent]
    default: absent
seealso:
  - module: volfence.csi.fuse_mounts_info
'''

EXAMPLES = r'''
- name: Unmount the dead s3 CSI mounts of this node
  volfence.csi.fuse_mounts:
    drivers: [ch.ctrox.csi.s3-driver]
  register: unmounted

- name: See what would be unmounted
  volfence.csi.fuse_mounts:
    drivers: [ch.ctrox.csi.s3-driver]
  check_mode: true
'''

RETURN = r'''
unmounted:
  description: The dead mounts unmounted (or, in check mode, that would be), as returned by M(volfence.csi.fuse_mounts_info).
  returned: always
  type: list
  elements: dict
pod_uids:
  description: UIDs of the pods whose mounts were unmounted; they must restart to get their volume back.
  returned: always
  type: list
  elements: str
healthy:
  description: How many healthy FUSE mounts of the selected drivers were left alone.
  returned: always
  type: int
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.volfence.csi.plugins.module_utils._fuse_mounts import (
    find_csi_fuse_mounts,
    summarize,
)
from ansible_collections.volfence.csi.plugins.module_utils._fuse_mounts_module import (
    FUSE_ARGUMENT_SPEC,
    lazy_unmount,
    read_mountinfo,
)


def main():
    spec = dict(FUSE_ARGUMENT_SPEC)
    spec["state"] = dict(type="str", choices=["absent"], default="absent")
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    mounts = find_csi_fuse_mounts(read_mountinfo(module), params["kubelet_dir"], params["drivers"],
                                  params["fstype_patterns"])
    dead = [m for m in mounts if not m["healthy"]]
    result = dict(changed=bool(dead), unmounted=dead, pod_uids=summarize(mounts)["pod_uids"],
                  healthy=len(mounts) - len(dead))
    if module._diff:
        result["diff"] = dict(before="\n".join(m["path"] for m in mounts) + "\n",
                              after="\n".join(m["path"] for m in mounts if m["healthy"]) + "\n")
    if module.check_mode or not dead:
        module.exit_json(**result)
    failures = []
    for mount in dead:
        outcome = lazy_unmount(module, mount["path"])
        if outcome["rc"] != 0:
            failures.append(outcome)
    if failures:
        module.fail_json(msg="could not unmount %d of %d dead FUSE mount(s): %s" % (
            len(failures), len(dead), "; ".join("%s: %s" % (f["path"], f["stderr"].strip()) for f in failures)),
            failures=failures, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

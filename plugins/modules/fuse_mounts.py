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
  - Healthy mounts are never touched. Hung mounts (the daemon is alive but does not answer within
    O(probe_timeout)) are reported in RV(hung), with a warning, and left alone.
  - Reports honestly what it did. RV(unmounted) holds only the mounts whose unmount succeeded, RV(failures)
    the others; C(changed) is true when anything was unmounted, also when the module fails.
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
  description:
    - The dead mounts unmounted (in check mode, that would be), as returned by M(volfence.csi.fuse_mounts_info).
      A mount whose unmount failed is not here but in RV(failures).
  returned: always
  type: list
  elements: dict
failures:
  description:
    - The dead mounts whose unmount failed, each as in RV(unmounted) with the C(rc), C(stdout) and C(stderr) of
      C(umount). The module then fails, and still returns RV(unmounted) and C(changed).
  returned: always
  type: list
  elements: dict
hung:
  description:
    - The mounts whose FUSE daemon did not answer within O(probe_timeout). They are left alone (the daemon is
      alive; unmounting would cut it off from a running pod) and reported with a warning.
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


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._decisions.dead_mounts import HEALTHY, unmount_plan
from ansible_collections.volfence.csi.plugins.module_utils._fuse.mounts import unmount_results
from ansible_collections.volfence.csi.plugins.module_utils._fuse.module import (
    FUSE_ARGUMENT_SPEC,
    check_params,
    find_mounts,
    lazy_unmount,
)


def main():
    spec = dict(FUSE_ARGUMENT_SPEC)
    spec["state"] = dict(type="str", choices=["absent"], default="absent")
    module = VolfenceModule(argument_spec=spec, supports_check_mode=True)
    kubelet_dir = check_params(module)
    mounts = find_mounts(module, kubelet_dir)
    dead, hung = unmount_plan(mounts)
    for mount in hung:
        module.warn("%s is hung (%s); left alone: its daemon is alive, restart or kill it first" % (
            mount["path"], mount["error"]))
    if module.check_mode:
        unmounted, failures = dead, []
    else:
        unmounted, failures = unmount_results(dead, [lazy_unmount(module, m["path"]) for m in dead])
    # I7: changed when anything was unmounted, even if another unmount failed
    result = dict(changed=bool(unmounted), unmounted=unmounted, failures=failures, hung=hung,
                  pod_uids=sorted(set(m["pod_uid"] for m in unmounted if m["pod_uid"])),
                  healthy=len([m for m in mounts if m["state"] == HEALTHY]))
    if module._diff:
        gone = set(m["path"] for m in unmounted)
        result["diff"] = dict(before="\n".join(m["path"] for m in mounts) + "\n",
                              after="\n".join(m["path"] for m in mounts if m["path"] not in gone) + "\n")
    if failures:
        module.fail_json(msg="could not unmount %d of %d dead FUSE mount(s): %s%s" % (
            len(failures), len(dead), "; ".join("%s: %s" % (f["path"], f["stderr"] or "rc=%s" % f["rc"])
                                                for f in failures),
            "; unmounted anyway: %s" % ", ".join(m["path"] for m in unmounted) if unmounted else
            "; nothing was unmounted"), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

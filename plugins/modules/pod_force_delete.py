#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: pod_force_delete
short_description: Force-delete many pods in one call, never a replacement of the same name
version_added: 0.2.0
description:
  - Deletes every pod of O(pods) with a grace period of O(grace_period) seconds (0, the default, is a force
    delete; the API server removes the pod at once, without waiting for its kubelet), at most O(parallel) at a
    time. This is how the pods of a failed node, whose volumes were made safe, are released so that their
    controllers start replacements elsewhere.
  - When a pod's C(uid) is given, its DELETE carries it as a precondition. A StatefulSet's replacement pod has
    the same name but another uid, so it is never deleted; the API refuses the delete and the pod is reported
    in RV(absent) as replaced. Give the uids whenever they are known.
  - A pod that is already gone, or replaced, is reported in RV(absent), not as a failure; a second run with the
    same pods changes nothing.
  - When a pod cannot be deleted, the module still deletes the others, then fails with a message that names each
    pod it could not delete and why (the API's status and message), and returns RV(deleted), RV(absent) and
    RV(failures). Running it again deletes what is left.
  - Deciding which pods may be force-deleted is the caller's job (the C(volfence.csi.node_failover) playbook
    force-deletes only the pods whose volumes it made safe). A force delete of a pod whose node still runs it
    lets a second copy start while the first one still writes.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.k8s.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Reads each pod and reports in RV(deleted) those it would delete; deletes nothing.
  diff_mode:
    support: full
    details:
      - The diff lists the given pods that exist before and after.
options:
  pods:
    description:
      - The pods to delete. The same pod listed twice is deleted once; listed twice with different uids is
        refused.
      - An empty list changes nothing.
    type: list
    elements: dict
    required: true
    suboptions:
      namespace:
        description: The pod's namespace.
        type: str
        required: true
      name:
        description: The pod's name.
        type: str
        required: true
      uid:
        description:
          - The pod's C(metadata.uid). When given, only the pod with this uid is deleted; another pod of the
            same name is left alone and reported in RV(absent).
        type: str
  parallel:
    description:
      - How many DELETE requests are in flight at once.
      - From 1 to 256.
    type: int
    default: 16
  grace_period:
    description:
      - The deletion's grace period in seconds; 0 removes the pod at once (a force delete).
      - From 0 to 86400.
    type: int
    default: 0
seealso:
  - module: volfence.csi.replacement_pods_info
  - module: volfence.csi.volumeattachment
'''

EXAMPLES = r'''
- name: Force-delete the failed node's Terminating pods whose volumes are fenced
  volfence.csi.pod_force_delete:
    pods:
      - {namespace: shop, name: db-0, uid: 5e0c4f7a-9d1b-4c3e-8a2f-6b7d9e1c0a35}
      - {namespace: shop, name: web-7d9f8b6c4-x2k8q}
    parallel: 32
  register: released

- name: Preview
  volfence.csi.pod_force_delete:
    pods: "{{ stuck_pods }}"
  check_mode: true
  diff: true
'''

RETURN = r'''
deleted:
  description: The pods this run deleted (in check mode, would delete), each with C(namespace), C(name) and
    C(uid), also when the module fails on others.
  returned: always
  type: list
  elements: dict
  sample: [{namespace: shop, name: db-0, uid: 5e0c4f7a-9d1b-4c3e-8a2f-6b7d9e1c0a35}]
absent:
  description: The pods that were already gone, or replaced by another pod of the same name (another uid),
    each with C(namespace), C(name) and C(why). Not failures.
  returned: always
  type: list
  elements: dict
  sample: [{namespace: shop, name: db-1, why: "not found: already gone"}]
failures:
  description: The pods that could not be deleted, each with C(namespace), C(name) and C(error) (the API's
    status, reason and message). The module fails when there is any (and still returns RV(deleted) and
    RV(absent)).
  returned: always
  type: list
  elements: dict
  sample: [{namespace: shop, name: db-2, error: "403 Forbidden: pods \"db-2\" is forbidden"}]
diff:
  description: The given pods (C(namespace/name)) that exist before and after.
  returned: when diff mode is on
  type: dict
  sample: {before: {pods: [shop/db-0]}, after: {pods: []}}
'''

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._k8s.pods import PodDeleter, check_pods, failure_message
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_PARALLEL, MAX_WAIT_SECONDS, check_range


def main():
    module = k8s_module(
        argument_spec=dict(
            pods=dict(type='list', elements='dict', required=True, options=dict(
                namespace=dict(type='str', required=True),
                name=dict(type='str', required=True),
                uid=dict(type='str'),
            )),
            parallel=dict(type='int', default=16),
            grace_period=dict(type='int', default=0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
        check_range(p['grace_period'], 'grace_period', 0, MAX_WAIT_SECONDS, 'seconds')
        pods = check_pods(p['pods'])
    except ValueError as exc:
        module.fail_json(msg=nothing_changed(exc))

    out = dict(deleted=[], absent=[], failures=[])
    if pods:
        try:
            out = PodDeleter(connect(module), workers=p['parallel']).run(pods, p['grace_period'], module.check_mode)
        except K8sError as exc:
            module.fail_json(**exc.fail_kwargs())
    result = dict(changed=bool(out['deleted']), **out)
    if module._diff:
        refs = ['%s/%s' % (r['namespace'], r['name']) for r in out['deleted'] + out['failures']]
        after = ['%s/%s' % (r['namespace'], r['name']) for r in out['failures']]
        result['diff'] = dict(before=dict(pods=sorted(refs)), after=dict(pods=sorted(after)))
    if out['failures']:
        module.fail_json(msg=failure_message(out['failures'], len(pods), len(out['deleted']), len(out['absent'])),
                         **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: replacement_pods_info
short_description: Which claims have a Running pod again, optionally waiting until all do
version_added: 0.2.0
description:
  - For each claim of O(claims), finds a pod that uses it, is C(Running), is not being deleted and runs on a node
    outside O(exclude_nodes) (the failed nodes, whose pods do not count).
  - Asks the API only for what it needs. It lists the pods of the claims' namespaces with the field selector
    C(status.phase=Running), paged with C(limit) and C(continue); with more than ten namespaces it lists the
    Running pods of the whole cluster instead.
  - With O(wait=true) it polls, every O(wait_sleep) seconds, the namespaces of the claims still waiting, until no
    claim waits. After O(wait_timeout) seconds it fails, naming the waiting claims, and returns RV(running) and
    RV(waiting).
  - Reads only; changes nothing.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.k8s.ACTIONGROUP
options:
  claims:
    description:
      - The PersistentVolumeClaims, each as C(namespace/claim). A claim listed twice counts once.
      - An empty list returns at once.
    type: list
    elements: str
    required: true
  exclude_nodes:
    description: Pods on these nodes do not count (the failed nodes).
    type: list
    elements: str
    default: []
  wait:
    description: Wait until every claim has a Running pod.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait. The module then fails, naming the claims still waiting.
      - From 0 to 86400.
    type: int
    default: 120
  wait_sleep:
    description:
      - Seconds between two polls while waiting.
      - From 1 to 600.
    type: int
    default: 1
seealso:
  - module: volfence.csi.pod_force_delete
  - module: volfence.csi.stuck_pods_info
'''

EXAMPLES = r'''
- name: Wait until a pod runs again for each released claim, on another node
  volfence.csi.replacement_pods_info:
    claims: [shop/data-db-0, shop/data-db-1]
    exclude_nodes: [worker-3]
    wait: true
    wait_timeout: 300
  register: replacements

- name: Which claims are still without a Running pod
  volfence.csi.replacement_pods_info:
    claims: "{{ released_claims }}"
  register: now
'''

RETURN = r'''
running:
  description: The claims with a Running pod, each with C(claim), C(pod) (C(namespace/name)) and C(node). With
    O(wait=true), a claim once seen with a Running pod stays here.
  returned: always
  type: list
  elements: dict
  sample: [{claim: shop/data-db-0, pod: shop/db-0, node: worker-1}]
waiting:
  description: The claims without a Running pod (C(namespace/claim)).
  returned: always
  type: list
  elements: str
  sample: [shop/data-db-1]
polls:
  description: How many times the pods were listed.
  returned: always
  type: int
requests:
  description: How many requests were sent to the API server (each page of a list counts).
  returned: always
  type: int
'''

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._k8s.pods import ReplacementPods, check_claims, check_node_names
from ansible_collections.volfence.csi.plugins.module_utils._ranges import (
    MAX_SLEEP_SECONDS,
    MAX_WAIT_SECONDS,
    check_range,
)


def main():
    module = k8s_module(
        argument_spec=dict(
            claims=dict(type='list', elements='str', required=True),
            exclude_nodes=dict(type='list', elements='str', default=[]),
            wait=dict(type='bool', default=False),
            wait_timeout=dict(type='int', default=120),
            wait_sleep=dict(type='int', default=1),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_range(p['wait_timeout'], 'wait_timeout', 0, MAX_WAIT_SECONDS, 'seconds')
        check_range(p['wait_sleep'], 'wait_sleep', 1, MAX_SLEEP_SECONDS, 'seconds')
        claims = check_claims(p['claims'])
        exclude = check_node_names(p['exclude_nodes'], 'exclude_nodes')
    except ValueError as exc:
        module.fail_json(msg=nothing_changed(exc, 'nothing was read'))

    if not claims:
        module.exit_json(changed=False, running=[], waiting=[], polls=0, requests=0)
    try:
        api = connect(module)
        finder = ReplacementPods(api)
        if p['wait']:
            running, waiting, timed_out = finder.wait(claims, exclude, p['wait_timeout'], p['wait_sleep'])
        else:
            running, waiting = finder.poll(claims, exclude)
            timed_out = False
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())
    result = dict(changed=False, running=running, waiting=waiting, polls=finder.polls, requests=api.requests)
    if timed_out:
        module.fail_json(msg='%d of %d claim(s) still have no Running pod%s after wait_timeout=%ss: %s' % (
            len(waiting), len(claims), (' outside %s' % ', '.join(exclude)) if exclude else '', p['wait_timeout'],
            ', '.join(waiting)), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()

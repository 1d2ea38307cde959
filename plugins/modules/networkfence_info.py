#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: networkfence_info
short_description: List CSI-Addons NetworkFences, the nodes they cover, their classes and CSIAddonsNodes
version_added: 0.1.0
description:
  - Lists C(csiaddons.openshift.io/v1alpha1) NetworkFence objects (both shapes, with a NetworkFenceClass or
    with driver, secret and parameters) with their controller result and the nodes whose addresses their
    CIDRs cover.
  - Also returns the NetworkFenceClasses and the CSIAddonsNodes (the CSI-Addons sidecars that act on fences,
    and whether they are Connected).
  - Fails with a clear error when the NetworkFence CRD is not installed, or when O(name) does not exist.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.k8s.ACTIONGROUP
options:
  name:
    description:
      - Name of one NetworkFence. The module fails if it does not exist.
    type: str
  driver:
    description:
      - Only fences for this CSI driver (C(spec.driver), or the C(spec.provisioner) of their class).
    type: str
  fence_state:
    description:
      - Only fences in this C(spec.fenceState).
    type: str
    choices: [Fenced, Unfenced]
  node:
    description:
      - Only fences whose CIDRs cover an address of this node.
    type: str
seealso:
  - module: volfence.csi.networkfence
'''

EXAMPLES = r'''
- name: Which fences cover worker-3?
  volfence.csi.networkfence_info:
    node: worker-3
  register: nf

- name: Fences the controller could not apply
  ansible.builtin.debug:
    msg: "{{ item.name }}: {{ item.message }}"
  loop: "{{ nf.fences | selectattr('result', 'equalto', 'Failed') }}"
  loop_control:
    label: "{{ item.name }}"

- name: Is a CSI-Addons sidecar of ceph-csi connected?
  volfence.csi.networkfence_info:
    driver: rbd.csi.ceph.com
  register: nf_rbd

- name: Check
  ansible.builtin.assert:
    that: nf_rbd.csiaddons_nodes | selectattr('driver', 'equalto', 'rbd.csi.ceph.com')
      | selectattr('state', 'equalto', 'Connected') | list | length > 0
'''

RETURN = r'''
fences:
  description: The selected NetworkFences, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
    fence_state:
      description: C(spec.fenceState), V(Fenced) or V(Unfenced).
      type: str
    cidrs:
      description: C(spec.cidrs).
      type: list
      elements: str
    driver:
      description: The CSI driver, from C(spec.driver) or the class's C(spec.provisioner) (null if the class is
        missing).
      type: str
    network_fence_class:
      description: C(spec.networkFenceClassName), or null for the older shape.
      type: str
    secret:
      description: C(spec.secret) (C(name), C(namespace)), or null.
      type: dict
    parameters:
      description: C(spec.parameters).
      type: dict
    labels:
      description: Its labels.
      type: dict
    result:
      description: C(status.result), V(Succeeded) or V(Failed), or null before the controller answered.
      type: str
    message:
      description: C(status.message).
      type: str
    conditions:
      description: C(status.conditions).
      type: list
      elements: dict
    finalizers:
      description: Its finalizers.
      type: list
      elements: str
    deletion_timestamp:
      description: When its deletion was requested, or null.
      type: str
    generation:
      description: C(metadata.generation).
      type: int
    nodes:
      description: The nodes with an address inside its CIDRs, each with C(name), C(ready), C(addresses) and
        C(cidrs).
      type: list
      elements: dict
classes:
  description: The NetworkFenceClasses (C(name), C(provisioner), C(parameters)); empty when not served.
  returned: always
  type: list
  elements: dict
csiaddons_nodes:
  description: The CSIAddonsNodes of all namespaces (C(name), C(namespace), C(driver), C(node_id),
    C(endpoint), C(state), C(message)); empty when not served.
  returned: always
  type: list
  elements: dict
'''


from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name
from ansible_collections.volfence.csi.plugins.module_utils._k8s.networkfence_ops import NetworkFences


def main():
    module = k8s_module(
        argument_spec=dict(
            name=dict(type='str'),
            driver=dict(type='str'),
            fence_state=dict(type='str', choices=['Fenced', 'Unfenced']),
            node=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        for key in ('name', 'node'):
            if p[key] is not None:
                check_object_name(p[key], key)
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    try:
        fences = NetworkFences(connect(module))
        fences.ensure_installed()
        objs = fences.read_fences([p['name']] if p['name'] else None)
        if p['name'] and p['name'] not in objs:
            module.fail_json(msg='NetworkFence %s not found' % p['name'], object=dict(kind='NetworkFence',
                                                                                      name=p['name']))
        fences.read_classes()
        index = fences.read_nodes()
        _served, addons = fences.addons_nodes()
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())

    if p['node'] is not None and p['node'] not in index.ready:
        module.warn('node %s does not exist: no fence can be told to cover it' % p['node'])
    reports = []
    for _name, obj in sorted(objs.items()):
        report = fences.report(obj)
        if p['driver'] is not None and report['driver'] != p['driver']:
            continue
        if p['fence_state'] is not None and report['fence_state'] != p['fence_state']:
            continue
        if p['node'] is not None and not any(n['name'] == p['node'] for n in report['nodes']):
            continue
        reports.append(report)
    module.exit_json(changed=False, fences=reports, classes=fences.class_reports(), csiaddons_nodes=addons)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: k8s_preflight
short_description: Check that the Kubernetes API answers and that the named nodes and pods exist
version_added: 0.2.0
description:
  - The first Kubernetes step of the collection's playbooks, before anything is written. Connects with the
    given (or kubernetes.core's default) credentials, reads the API server's version, and reads each named node
    and pod.
  - Fails with one message naming what is wrong, in the user's words, for example that the kubeconfig does not
    exist, that the Kubernetes API is not reachable, or that there is no node named C(node-z) (with the
    cluster's nodes).
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
  nodes:
    description: Names of nodes that must exist.
    type: list
    elements: str
    default: []
  pods:
    description: Pods that must exist.
    type: list
    elements: dict
    default: []
    suboptions:
      namespace:
        description: The pod's namespace.
        type: str
        required: true
      name:
        description: The pod's name.
        type: str
        required: true
  follow_replaced:
    description:
      - When a named pod is gone, look for the pod that replaced it, generated from the same C(generateName)
        (the same ReplicaSet, Job or DaemonSet), and return that one in RV(pods[].name) with RV(pods[].replaced)
        set. A re-run of a playbook with the pod an earlier run replaced then follows it instead of failing.
      - Fails when the pod is gone and no pod replaced it, or when several did (their names are listed).
    type: bool
    default: false
seealso:
  - module: volfence.csi.playbook_inputs
'''

EXAMPLES = r'''
- name: The API answers and the failed node exists
  volfence.csi.k8s_preflight:
    nodes: [worker2]

- name: The stuck pod exists
  volfence.csi.k8s_preflight:
    pods:
      - namespace: default
        name: index-api-0

- name: The stuck pod, or the pod that replaced it since
  volfence.csi.k8s_preflight:
    pods:
      - namespace: default
        name: web-5d9f7c6b8-h9vpl
    follow_replaced: true
  register: preflight
'''

RETURN = r'''
server_version:
  description: The API server's C(gitVersion).
  returned: success
  type: str
  sample: v1.31.4
nodes:
  description: The named nodes.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    ready:
      description: Whether its C(Ready) condition is C(True).
      type: bool
pods:
  description: The named pods.
  returned: success
  type: list
  elements: dict
  contains:
    namespace:
      description: The pod's namespace.
      type: str
    name:
      description: The pod's name; with O(follow_replaced), the name of the pod that replaced a pod that is gone.
      type: str
    requested:
      description: The name that was asked for.
      type: str
    replaced:
      description: Whether the pod asked for is gone and RV(pods[].name) is the pod that replaced it.
      type: bool
    node:
      description: The node it is scheduled on (C(spec.nodeName)), or null.
      type: str
    phase:
      description: C(status.phase).
      type: str
'''

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sError, connect, k8s_module, resource_path)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name, node_ready
from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import missing_node, replacement_pods, some_names


def main():
    module = k8s_module(
        argument_spec=dict(
            nodes=dict(type='list', elements='str', default=[]),
            pods=dict(type='list', elements='dict', default=[],
                      options=dict(namespace=dict(type='str', required=True), name=dict(type='str', required=True))),
            follow_replaced=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        for name in p['nodes']:
            check_object_name(name, 'node')
        for pod in p['pods']:
            check_object_name(pod['namespace'], 'pod namespace')
            check_object_name(pod['name'], 'pod name')
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    problems, nodes, pods = [], [], []
    try:
        api = connect(module)
        version = (api.server_version() or {}).get('gitVersion')
        all_nodes = None
        for name in p['nodes']:
            node = api.get(resource_path('', 'v1', 'nodes', name), what=('Node', name), missing_ok=True)
            if node is None:
                if all_nodes is None:
                    all_nodes = [n['metadata']['name'] for n in api.list(resource_path('', 'v1', 'nodes'), what=('Node', None))]
                problems.append(missing_node(name, all_nodes))
            else:
                nodes.append(dict(name=name, ready=node_ready(node) == 'True'))
        for ref in p['pods']:
            pod = api.get(resource_path('', 'v1', 'pods', ref['name'], ref['namespace']),
                          what=('Pod', ref['name'], ref['namespace']), missing_ok=True)
            replaced = False
            if pod is None:
                listed = api.list(resource_path('', 'v1', 'pods', namespace=ref['namespace']),
                                  what=('Pod', None, ref['namespace']))
                successors = replacement_pods(ref['name'], listed) if p['follow_replaced'] else []
                if len(successors) == 1:
                    pod, replaced = successors[0], True
                elif successors:
                    problems.append('pod %s/%s is gone and several pods replaced it (%s): name one' % (
                        ref['namespace'], ref['name'], some_names(x['metadata']['name'] for x in successors)))
                    continue
                else:
                    problems.append('no pod %s in namespace %s (its pods: %s)' % (
                        ref['name'], ref['namespace'], some_names(x['metadata']['name'] for x in listed) or 'none'))
                    continue
            pods.append(dict(namespace=ref['namespace'], name=pod['metadata']['name'], requested=ref['name'],
                             replaced=replaced, node=(pod.get('spec') or {}).get('nodeName'),
                             phase=(pod.get('status') or {}).get('phase')))
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())
    if problems:
        module.fail_json(msg=nothing_changed('; '.join(problems)), nodes=nodes, pods=pods)
    module.exit_json(changed=False, server_version=version, nodes=nodes, pods=pods)


if __name__ == '__main__':
    main()

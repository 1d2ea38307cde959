#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: failed_nodes_info
short_description: Read, in one step, whether failed nodes are provably down and which volumes they hold
version_added: 0.2.0
description:
  - The first Kubernetes step of the C(volfence.csi.node_failover) and
    C(volfence.csi.node_recover) playbooks. Checks that the API answers and that every named node
    exists (failing with the cluster's nodes otherwise), then reads only what the failover of those nodes
    needs and joins it in Python.
  - Reads every node and every node Lease (the safety rules keep the watchers of live nodes, so they need
    their addresses and Leases), paged with O(page_size).
  - With O(volumes), also reads the pods on each named node (field selector C(spec.nodeName)), their claims and
    PersistentVolumes by name, and the VolumeAttachments, of which only those of the named nodes are kept.
  - Returns the preflight verdict (RV(preflight.refused) says why a node must be treated as alive, I1 of
    C(docs/safety.md)) and every volume of the nodes, whatever the driver. It does not refuse by itself;
    M(volfence.csi.failed_nodes) with O(volfence.csi.failed_nodes#module:state=started) reads the same, refuses, and
    marks the failover's start in one call (the C(volfence.csi.node_failover) playbook's first step).
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
    description: The failed nodes (one node, or the nodes of a rack or zone lost together).
    type: list
    elements: str
    required: true
  volumes:
    description:
      - Read the nodes' pods, claims, PersistentVolumes and VolumeAttachments and return RV(volumes).
      - C(false) reads only nodes and Leases (what a recovery needs).
    type: bool
    default: true
  lease_grace_seconds:
    description:
      - A node whose Lease was renewed less than this many seconds ago may be alive, and RV(preflight.refused)
        says so (unless O(force)). 0 to 86400.
    type: int
    default: 120
  force:
    description: Let a fresh Lease pass the preflight. A Ready node is never let pass.
    type: bool
    default: false
  page_size:
    description: At most this many objects per list request (C(limit)); longer lists are read page by page. 1 to 10000.
    type: int
    default: 500
seealso:
  - module: volfence.csi.k8s_preflight
  - module: volfence.csi.stuck_pods_info
'''

EXAMPLES = r'''
- name: Is worker2 provably down, and which volumes does it hold
  volfence.csi.failed_nodes_info:
    nodes: [worker2]
  register: failed

- name: Refuse a node that looks alive (I1)
  ansible.builtin.assert:
    that: failed.preflight.refused is none
    fail_msg: "{{ failed.preflight.refused }}"

- name: The RBD images whose watchers to read on Ceph
  volfence.csi.rbd_watchers_info:
    images: "{{ failed.images }}"
    node_addresses: "{{ failed.node_addresses }}"
    ignore_missing: true

- name: A rack lost together
  volfence.csi.failed_nodes_info:
    nodes: [rack3-a, rack3-b, rack3-c]
    lease_grace_seconds: 60

- name: Only the nodes and Leases, for a recovery
  volfence.csi.failed_nodes_info:
    nodes: [worker2]
    volumes: false
'''

RETURN = r'''
server_version:
  description: The API server's C(gitVersion).
  returned: success
  type: str
  sample: v1.31.4
preflight:
  description: The preflight verdict on the named nodes (the C(volfence.csi.failover_preflight) filter's answer).
  returned: success
  type: dict
  contains:
    refused:
      description: Null when every named node is provably down (not Ready, Lease old enough), else why not (I1).
      type: str
      sample: null
    nodes:
      description: Per named node, its C(ready) condition, C(lease_age) in seconds, C(boot_id) and C(addresses).
      type: dict
      sample: {worker2: {exists: true, ready: Unknown, lease_age: 412, boot_id: 5f1c0e1a, addresses: [10.0.0.2]}}
    lines:
      description: One sentence per named node, for the report.
      type: list
      elements: str
      sample: ["node worker2: Ready=Unknown, Lease age 412 s"]
    ready_addresses:
      description: The addresses of Ready nodes, which no fence may cover.
      type: list
      elements: str
      sample: [10.0.0.1, 10.0.0.3]
volumes:
  description:
    - Every volume of the named nodes (the C(volfence.csi.failover_volumes) filter's answer), whatever the
      driver; empty when O(volumes=false).
  returned: success
  type: list
  elements: dict
  sample:
    - pv: pvc-0f6e
      driver: rbd.csi.ceph.com
      image: replicapool/csi-vol-0f6e
      rbd: true
      attachments: [csi-1a2b]
      claims: [default/data-index-api-0]
      pods: [default/index-api-0]
      nodes: [worker2]
images:
  description:
    - The RBD images of RV(volumes), then those of RV(waiting), each once (C(pool/image) or C(pool/namespace/image)).
  returned: success
  type: list
  elements: str
  sample: [replicapool/csi-vol-0f6e]
waiting:
  description:
    - The RBD volumes of the pods that have not started on other nodes (C(pod), C(uid), C(node), C(claim), C(pv),
      C(image)). When Kubernetes or someone else removed the failed nodes' pods and attachments first, these are what
      the nodes' clients may still hold.
  returned: success
  type: list
  elements: dict
  sample: [{pod: default/web-0, uid: 5f1c, node: worker1, claim: default/data-web-0, pv: pvc-0f6e,
            image: replicapool/csi-vol-0f6e}]
node_addresses:
  description: Every node's IP addresses, for the C(node_addresses) option of the Ceph modules.
  returned: success
  type: dict
  sample: {worker1: [10.0.0.1], worker2: [10.0.0.2]}
other_remediators:
  description:
    - What others did on the named nodes to remediate them, by node (only nodes with any), each with C(mark)
      (the taint or label), C(by) (who sets it), C(since) (the taint's C(timeAdded)) and C(note) (what follows).
    - An out-of-service taint this collection did not add (a remediation operator, a cloud controller, a person),
      medik8s' C(medik8s.io/remediation) taint (Self Node Remediation, Fence Agents Remediation) and
      NodeHealthCheck's C(remediation.medik8s.io/exclude-from-remediation) label. The collection never removes
      them unless told.
  returned: success
  type: dict
  sample: {worker2: [{mark: "taint medik8s.io/remediation=self-node-remediation:NoExecute",
                      by: medik8s Self Node Remediation, since: "2026-11-26T00:59:00Z",
                      note: a medik8s remediation of this node is under way; it lifts its own taint}]}
nodes:
  description: Every Node object, without C(managedFields) and the image list.
  returned: success
  type: list
  elements: dict
leases:
  description: Every node Lease (namespace C(kube-node-lease)).
  returned: success
  type: list
  elements: dict
pods:
  description: The pods on the named nodes (empty when O(volumes=false)).
  returned: success
  type: list
  elements: dict
objects:
  description: The other objects read for RV(volumes) (empty lists when O(volumes=false)).
  returned: success
  type: dict
  contains:
    pvcs:
      description: The claims of the pods on the named nodes.
      type: list
      elements: dict
    pvs:
      description: The PersistentVolumes of those claims and of the nodes' VolumeAttachments.
      type: list
      elements: dict
    volumeattachments:
      description: The VolumeAttachments of the named nodes.
      type: list
      elements: dict
listed:
  description: How many objects of each kind were read.
  returned: success
  type: dict
  sample: {nodes: 3, leases: 3, pods: 4, pvcs: 1, pvs: 1, volumeattachments: 3}
requests:
  description: How many requests were sent to the API server.
  returned: success
  type: int
  sample: 9
'''

from ansible_collections.volfence.csi.plugins.module_utils._k8s.gather import (
    DEFAULT_PAGE, check_gather_request, gather_failed_nodes, missing_message)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sError, connect, k8s_module, resource_path)


def main():
    module = k8s_module(
        argument_spec=dict(
            nodes=dict(type='list', elements='str', required=True),
            volumes=dict(type='bool', default=True),
            lease_grace_seconds=dict(type='int', default=120),
            force=dict(type='bool', default=False),
            page_size=dict(type='int', default=DEFAULT_PAGE),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_gather_request(p['nodes'], p['lease_grace_seconds'], p['page_size'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    try:
        api = connect(module)
        result = gather_failed_nodes(api, resource_path, p['nodes'], lease_grace=p['lease_grace_seconds'],
                                     force=p['force'], volumes=p['volumes'], page=p['page_size'])
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())
    if result['missing']:
        module.fail_json(msg=missing_message(result), server_version=result['server_version'])
    result.pop('missing')
    module.exit_json(changed=False, requests=api.requests, **result)


if __name__ == '__main__':
    main()

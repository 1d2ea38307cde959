#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: stuck_pods_info
short_description: Find the stuck pods, their RBD images and the volumes of nodes that are not Ready
version_added: 0.2.0
description:
  - The Kubernetes side of the C(volfence.csi.diagnose) playbook, for clusters of any size. Asks the API only for
    what a diagnosis needs, one list per kind, paged with C(limit) and C(continue), with field selectors the API
    server supports, and joins the objects in Python.
  - "It reads: the nodes; the pods that have not started (C(status.phase) other than C(Running), C(Succeeded),
    C(Failed)); the Warning events of pods (C(involvedObject.kind=Pod,type=Warning)); each pod a Warning event
    names for a container that could not start, a volume that could not be mounted or attached, or a dead FUSE
    mount (a C(Running) pod whose container waits in C(CreateContainerError)); the pods of each node that is not
    Ready (C(spec.nodeName)); the claims and PersistentVolumes of those pods by name; the VolumeAttachments (the
    API has no selector for them), of which it keeps those of the volumes concerned and of the nodes that are not
    Ready."
  - A pod is stuck when it has waited to start (C(ContainerCreating), C(CreateContainerError),
    C(CreateContainerConfigError), or C(Pending) on a node) for O(threshold) seconds, or when an event says
    that its FUSE mount died. RV(stuck) classifies them without the Ceph side (watchers, locks); the
    C(volfence.csi.diagnose_stuck_pods) filter classifies RV(objects) again with the watchers and locks the Ceph
    modules read.
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
  threshold:
    description: A pod counts as stuck after waiting this many seconds (0 to 31536000).
    type: int
    default: 120
  namespaces:
    description: Namespaces to look at; all when empty. VolumeAttachments and nodes are cluster-wide either way.
    type: list
    elements: str
    default: []
  page_size:
    description: At most this many objects per list request (C(limit)); longer lists are read page by page
      (C(continue)). From 1 to 10000.
    type: int
    default: 500
seealso:
  - module: volfence.csi.rbd_watchers_info
  - module: volfence.csi.rbd_lock
'''

EXAMPLES = r'''
- name: The stuck pods, their RBD images and the volumes of nodes that are not Ready
  volfence.csi.stuck_pods_info:
    threshold: 60
  register: stuck

- name: Who watches their ceph-csi images
  volfence.csi.rbd_watchers_info:
    images: "{{ stuck.images.rbd_csi }}"
    node_addresses: "{{ stuck.node_addresses }}"
    ignore_missing: true
  delegate_to: ceph-admin
  register: watchers

- name: Only two namespaces
  volfence.csi.stuck_pods_info:
    namespaces: [shop, billing]
'''

RETURN = r'''
server_version:
  description: The API server's C(gitVersion).
  returned: success
  type: str
  sample: v1.31.4
stuck:
  description: The stuck pods, classified from the Kubernetes side alone (as the C(volfence.csi.diagnose_stuck_pods)
    filter does without watchers and locks), sorted by namespace and name.
  returned: success
  type: list
  elements: dict
  contains:
    namespace:
      description: The pod's namespace.
      type: str
    pod:
      description: The pod's name.
      type: str
    node:
      description: Its node (C(spec.nodeName)), or null.
      type: str
    incident:
      description: C(stale-rbd-watcher) ... C(stale-rbd-lock), or C(unknown) (the Ceph side may tell more).
      type: str
    volumes:
      description: Its PersistentVolumes, with C(kind) (C(rbd-csi), C(rbd-intree), C(csi), C(other)) and C(image).
      type: list
      elements: dict
images:
  description: The RBD images of the stuck pods' volumes, as C(pool[/namespace]/image).
  returned: success
  type: dict
  contains:
    rbd_csi:
      description: Images of ceph-csi volumes (for M(volfence.csi.rbd_watchers_info)).
      type: list
      elements: str
    rbd_intree:
      description: Images of in-tree rbd volumes (for C(volfence.csi.rbd_lock)).
      type: list
      elements: str
node_addresses:
  description: Every IP each node lists, by node name, for the C(node_addresses) option of the Ceph modules.
  returned: success
  type: dict
  sample: {node-a: [10.0.0.11], node-b: [10.0.0.12]}
nodes_not_ready:
  description: Each node that is not Ready and holds volumes, with what C(node_failover) would do for each volume
    (as the C(volfence.csi.down_node_volumes) filter returns it).
  returned: success
  type: list
  elements: dict
  contains:
    node:
      description: The node's name.
      type: str
    ready:
      description: Its C(Ready) condition's status (C(False), C(Unknown)).
      type: str
    volumes:
      description: Its volumes, each with C(name), C(volume), C(driver), C(rbd), C(attachments), C(claims),
        C(pods), C(note) and C(line).
      type: list
      elements: dict
objects:
  description: What the classification of the stuck pods reads, and nothing else, for the
    C(volfence.csi.diagnose_stuck_pods) filter. Large fields no rule reads (C(managedFields), a node's
    C(images)) are left out.
  returned: success
  type: dict
  contains:
    pods:
      description: The stuck pods.
      type: list
      elements: dict
    events:
      description: The Warning events of the stuck pods.
      type: list
      elements: dict
    pvcs:
      description: The claims of the stuck pods and of the pods of nodes that are not Ready.
      type: list
      elements: dict
    pvs:
      description: Their PersistentVolumes, and those attached to nodes that are not Ready.
      type: list
      elements: dict
    volumeattachments:
      description: The VolumeAttachments of those PersistentVolumes and of the nodes that are not Ready.
      type: list
      elements: dict
    nodes:
      description: Every node.
      type: list
      elements: dict
    networkfences:
      description: Every CSI-Addons NetworkFence (empty when CSI-Addons is not installed), to tie blocklist
        entries to the fences that made them.
      type: list
      elements: dict
volfence_events:
  description:
    - The newest Events volfence.csi posted (at most 20, newest first), what earlier runs did to which object;
      the API server keeps Events for an hour by default. Each with C(time), C(type), C(reason), C(object)
      (C(Kind namespace/name)), C(note) and C(line) (all of it in one line).
  returned: success
  type: list
  elements: dict
  sample: [{time: "2026-11-27T15:00:02.123456Z", type: Normal, reason: NodeFenced, object: Node node-b,
            note: "node-b's RBD clients blocklisted in Ceph: 10.0.0.12:0/3710147553 (allowed by I1 (docs/safety.md))",
            line: "2026-11-27T15:00:02.123456Z NodeFenced on Node node-b: node-b's RBD clients blocklisted ..."}]
volfence_events_error:
  description: Why the collection's own Events could not be listed (for example RBAC), else null. Not a failure.
  returned: success
  type: str
listed:
  description: How many objects of each kind were read (C(pods), C(events), C(nodes), C(pvcs), C(pvs),
    C(volumeattachments), C(networkfences)), to see that a run reads what the incident needs, not the whole cluster.
  returned: success
  type: dict
  sample: {pods: 80, events: 120, nodes: 40, pvcs: 40, pvs: 40, volumeattachments: 2000, networkfences: 40}
requests:
  description: How many requests were sent to the API server (each page of a list counts).
  returned: success
  type: int
'''

from ansible_collections.volfence.csi.plugins.module_utils._k8s.gather import DEFAULT_PAGE, check_namespace, gather
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sError, connect, k8s_module, resource_path)
from ansible_collections.volfence.csi.plugins.module_utils._ranges import check_range

MAX_THRESHOLD = 31536000
MAX_PAGE = 10000


def main():
    module = k8s_module(
        argument_spec=dict(
            threshold=dict(type='int', default=120),
            namespaces=dict(type='list', elements='str', default=[]),
            page_size=dict(type='int', default=DEFAULT_PAGE),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_range(p['threshold'], 'threshold', 0, MAX_THRESHOLD, 'seconds')
        check_range(p['page_size'], 'page_size', 1, MAX_PAGE)
        for namespace in p['namespaces']:
            check_namespace(namespace)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    try:
        api = connect(module)
        result = gather(api, resource_path, namespaces=p['namespaces'], threshold=p['threshold'],
                        page=p['page_size'])
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())
    module.exit_json(changed=False, server_version=result['server_version'], stuck=result['stuck'],
                     images=dict(rbd_csi=result['images']['rbd-csi'], rbd_intree=result['images']['rbd-intree']),
                     node_addresses=result['node_addresses'], nodes_not_ready=result['nodes_not_ready'],
                     objects=result['objects'], volfence_events=result['volfence_events'],
                     volfence_events_error=result['volfence_events_error'], listed=result['listed'],
                     requests=api.requests)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: failed_nodes_fence
short_description: Fence every Ceph client failed nodes could still hold on their RBD images, in one call
version_added: 0.3.0
description:
  - Reads who watches the failed nodes' RBD images, their locks and ceph-csi's records, decides which clients the
    failed nodes could still hold, blocklists those, and waits until they no longer watch, in one call over one
    Ceph connection. It is the fence step of the C(volfence.csi.node_failover) playbook (C(fence_method=blocklist)).
  - No watcher is no proof that no client holds an image. A frozen node (a paused VM, a soft lockup) or one cut from
    the storage network for longer than C(osd_client_watch_timeout) (30 s) drops out of C(rbd status) while its
    client still has the image open read-write, and comes back writing when it thaws. So the clients to fence are,
    for each image, its watchers (C(ip:port/nonce)); the address ceph-csi recorded for a failed node (the whole IP,
    C(ip:0/0), as ceph-csi fences it); the exclusive-lock owner (C(ip:port/nonce)) and the holder of another lock
    (the whole IP, because the in-tree plugin's C(rbd lock add) is not the client that writes); and, where none of these
    is a failed node's but a failed node staged the image (O(volumes)), that node's own addresses, whole. A failed
    node under the out-of-service taint (Kubernetes released its volumes without a fence) has its own addresses
    fenced whole too. Each entry says where it came from (RV(plan.fenced)).
  - A client is fenced only when its address is one failed node's alone (or ceph-csi recorded that one failed
    node staged the image from it, for pod networking; or O(fence_unknown_watchers) with a single failed node),
    every failed node is provably down, no Ready node lists the address, no two nodes share it, and no Ceph
    daemon uses it (invariant I1 of docs/safety.md; the same rules as the C(volfence.csi.failover_fence_plan)
    filter). The others are returned in RV(plan.kept), each with the reason. The addresses of Ceph's own
    daemons and O(protect_addresses) are refused again before anything is written.
  - Then reads the images until no fenced client watches any (the OSDs drop a blocklisted client's watches once
    they see the new OSD map), at most O(wait_timeout) seconds. Until then the fence has not taken effect and
    nothing may be released on it (I6), so the module fails and says which clients still watch.
  - Before it runs, the playbook marks each failed node with its bootID (M(volfence.csi.failed_nodes),
    O(volfence.csi.failed_nodes#module:state=started)); after it, the playbook records exactly what was fenced
    for each node (RV(plan.by_node)), so that C(node_recover) lifts it once the node rebooted (I2, I3).
  - An image that cannot be read (other than a missing one, which has no watcher) fails the module before
    anything is fenced. When blocklisting fails part way, the module fails and returns what it did (I7).
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.ceph
  - volfence.csi.attributes
  - volfence.csi.attributes.ACTIONGROUP_CEPH
attributes:
  check_mode:
    support: full
    details:
      - Reads the watchers and returns the plan and the blocklist entries it would add; adds nothing, waits for
        nothing.
  diff_mode:
    support: full
    details:
      - The diff shows the entries added to the blocklist.
options:
  failed_nodes:
    description: The failed nodes (one node, or the nodes of a rack or zone lost together).
    type: list
    elements: str
    required: true
  images:
    description:
      - The RBD images of the failed nodes' volumes, each as C(pool/image) or C(pool/namespace/image)
        (RV(volfence.csi.failed_nodes_info#module:images)). An empty list reads no image; only a failed node under
        the out-of-service taint is then fenced (its own addresses).
    type: list
    elements: str
    required: true
  volumes:
    description:
      - The failed nodes' volumes (RV(volfence.csi.failed_nodes#module:volumes)), for which images each failed node
        staged. Where no client of a failed node is visible on such an image, the node's own addresses are
        fenced, whole. Without it, an image nobody is seen to hold has nothing fenced for it, and
        C(node_failover) does not release it.
    type: list
    elements: dict
    default: []
  nodes:
    description:
      - Every Node object of the cluster (RV(volfence.csi.failed_nodes_info#module:nodes)). The owners of a watcher's
        address are derived from every address of every node, so a Ready node's watcher is never fenced.
    type: list
    elements: dict
    required: true
  leases:
    description: Every node Lease (RV(volfence.csi.failed_nodes_info#module:leases)).
    type: list
    elements: dict
    default: []
  node_addresses:
    description:
      - Node names and their IPs or CIDRs, to name the node of each watcher in RV(images)
        (RV(volfence.csi.failed_nodes_info#module:node_addresses)). The fence decision does not rely on it.
    type: dict
    default: {}
  lease_grace_seconds:
    description:
      - A failed node whose Lease was renewed less than this many seconds ago may be alive; nothing is fenced then
        (unless O(force)). 0 to 86400.
    type: int
    default: 120
  force:
    description: Let a fresh Lease pass. A Ready node is never let pass.
    type: bool
    default: false
  fence_unknown_watchers:
    description:
      - Also fence watchers whose address no node lists, when there is a single failed node (or ceph-csi recorded
        the address for one of them).
    type: bool
    default: false
  protect_addresses:
    description:
      - IPs or CIDRs never to fence, for example every Ready node's address
        (RV(volfence.csi.failed_nodes_info#module:preflight.ready_addresses)).
    type: list
    elements: str
    default: []
  expire:
    description:
      - Seconds until the new entries expire, above 0 and at most 315360000. Without it Ceph's default applies
        (one hour). C(node_recover) removes them once the node rebooted.
    type: raw
  wait_timeout:
    description: Seconds to wait until the fenced clients no longer watch, 1 to 86400.
    type: int
    default: 60
  settle_timeout:
    description:
      - Seconds to read the images again while watchers that no node lists would keep a pod from being
        released, 0 to 86400; 0 reads once. A CSI controller on the pod network opens an image for a moment
        (ceph-csi reads and removes the client address it recorded, on ControllerUnpublish), and such a client
        is no failed node's to fence. Those seen and then gone are returned in RV(passed).
    type: int
    default: 10
  parallel:
    description: How many images are read at once, 1 to 256.
    type: int
    default: 16
seealso:
  - module: volfence.csi.failed_nodes
  - module: volfence.csi.rbd_watchers_info
  - module: volfence.csi.ceph_blocklist
'''

EXAMPLES = r'''
- name: Fence the failed node's clients that still watch its images, and wait until they are gone
  volfence.csi.failed_nodes_fence:
    failed_nodes: [worker2]
    images: "{{ failover_read.images }}"
    volumes: "{{ failover_read.volumes }}"
    nodes: "{{ failover_read.nodes }}"
    leases: "{{ failover_read.leases }}"
    node_addresses: "{{ failover_read.node_addresses }}"
    protect_addresses: "{{ failover_read.preflight.ready_addresses }}"
    expire: 86400
  register: fenced

- name: What was fenced for each node, and what was kept and why
  ansible.builtin.debug:
    msg: "fenced {{ fenced.plan.by_node }}; kept {{ fenced.plan.kept }}"
'''

RETURN = r'''
images:
  description: The watchers of each image read before fencing, as M(volfence.csi.rbd_watchers_info) returns them.
  returned: always
  type: list
  elements: dict
missing:
  description: Images that do not exist, each with C(spec) and C(error). A missing image has no watcher.
  returned: always
  type: list
  elements: dict
  sample: []
failed_images:
  description: Images that could not be read, each with C(spec) and C(error); the module fails when there is any.
  returned: always
  type: list
  elements: dict
  sample: []
plan:
  description: The fence decision (the C(volfence.csi.failover_fence_plan) filter's answer); null when an image
    could not be read.
  returned: always
  type: dict
  contains:
    fence:
      description: The blocklist entries added, exact clients (C(ip:port/nonce)) and whole IPs (C(ip:0/0)).
      type: list
      elements: str
      sample: ["10.0.0.2:0/3710147553", "10.0.0.3:0/0"]
    fenced:
      description:
        - Each entry of RV(plan.fence) with the C(node) it is recorded for, the C(images) it was chosen for and its
          C(sources) (V(watcher), V(ceph-csi record), V(exclusive-lock owner), V(lock holder),
          V(the node staged it), V(out-of-service taint)).
      type: list
      elements: dict
      sample: [{entry: "10.0.0.3:0/0", node: worker3, images: [rbd/csi-vol-1], sources: [ceph-csi record, watcher]}]
    kept:
      description: The clients not fenced, each with C(address), C(image), C(source), C(reason) and C(invariant).
      type: list
      elements: dict
    by_image:
      description: The entries that cut the failed nodes' clients, per image.
      type: dict
    by_node:
      description: The addresses fenced for each failed node (what its record holds).
      type: dict
      sample: {worker2: ["10.0.0.2:0/3710147553"]}
    refused:
      description: Why nothing was fenced because a failed node may be alive, else null.
      type: str
actions:
  description: The blocklist changes made (in check mode, that would be made), each with C(op) and C(entry).
  returned: always
  type: list
  elements: dict
  sample: [{op: add, entry: "10.0.0.2:0/3710147553"}]
failed_actions:
  description: The changes that failed, each with its error; the module fails when there is any.
  returned: always
  type: list
  elements: dict
  sample: []
watchers_after:
  description: The watchers of each image read once the fence took effect (not in check mode).
  returned: always
  type: list
  elements: dict
still_watched:
  description: The fenced clients that still watched an image when O(wait_timeout) passed, each with C(image) and
    C(address); the module fails when there is any.
  returned: always
  type: list
  elements: dict
  sample: []
passed:
  description:
    - Watchers that no node lists, seen while O(settle_timeout) ran and gone by the read the plan was made
      from, each with C(image) and C(address). A CSI controller that opened the image for a moment.
  returned: always
  type: list
  elements: dict
  sample: [{image: rbd/csi-vol-0001, address: "10.244.0.12:0/3141592653"}]
backend:
  description: How Ceph was reached, V(bindings) or V(cli).
  returned: always
  type: str
  sample: bindings
diff:
  description: The entries added to the blocklist.
  returned: when diff mode is on
  type: dict
  sample: {before: {fenced: []}, after: {fenced: ["10.0.0.2:0/3710147553"]}}
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ranges import (
    MAX_LEASE_GRACE, MAX_PARALLEL, MAX_WAIT_SECONDS, check_range)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import parse_protected
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import module_session, parse_image_spec
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_MUTUALLY_EXCLUSIVE, ceph_argument_spec, check_expire)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import FenceFailure, fence_failed_nodes
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import NodeMap
from ansible_collections.volfence.csi.plugins.module_utils._decisions.fence import fence_plan, staged_images
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name


def main():
    module = VolfenceModule(
        argument_spec=ceph_argument_spec(
            failed_nodes=dict(type='list', elements='str', required=True),
            images=dict(type='list', elements='str', required=True),
            volumes=dict(type='list', elements='dict', default=[]),
            nodes=dict(type='list', elements='dict', required=True),
            leases=dict(type='list', elements='dict', default=[]),
            node_addresses=dict(type='dict', default={}),
            lease_grace_seconds=dict(type='int', default=120),
            force=dict(type='bool', default=False),
            fence_unknown_watchers=dict(type='bool', default=False),
            protect_addresses=dict(type='list', elements='str', default=[]),
            expire=dict(type='raw'),
            wait_timeout=dict(type='int', default=60),
            settle_timeout=dict(type='int', default=10),
            parallel=dict(type='int', default=16),
        ),
        mutually_exclusive=CEPH_MUTUALLY_EXCLUSIVE,
        supports_check_mode=True,
    )
    p = module.params
    try:
        # every input error before connecting: nothing is read or fenced on bad input
        if not p['failed_nodes']:
            raise ValueError('failed_nodes: give at least one node')
        for name in p['failed_nodes']:
            check_object_name(name, 'failed_nodes entry')
        specs = []
        for text in p['images']:
            spec = parse_image_spec(text, 'images entry')
            if spec not in specs:
                specs.append(spec)
        node_map = NodeMap(p['node_addresses'])
        parse_protected(p['protect_addresses'])
        p['expire'] = check_expire(p['expire'])
        check_range(p['lease_grace_seconds'], 'lease_grace_seconds', 0, MAX_LEASE_GRACE, 'seconds')
        check_range(p['wait_timeout'], 'wait_timeout', 1, MAX_WAIT_SECONDS, 'seconds')
        check_range(p['settle_timeout'], 'settle_timeout', 0, MAX_WAIT_SECONDS, 'seconds')
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
    except ValueError as exc:
        module.fail_json(msg='%s; nothing was fenced' % exc)

    staged = staged_images(p['volumes'], p['failed_nodes'])
    output = dict(changed=False, images=[], missing=[], failed_images=[], actions=[], failed_actions=[],
                  watchers_after=[], still_watched=[], passed=[],
                  plan=fence_plan([], p['failed_nodes'], p['nodes'], leases=p['leases'],
                                  lease_grace=p['lease_grace_seconds'], force=p['force'], staged=staged))
    if not specs and not output['plan']['fence']:
        module.exit_json(backend=None, **output)  # no image and no node to fence: Ceph is not asked
    with module_session(module) as client:
        try:
            done = fence_failed_nodes(client, specs, failed_nodes=p['failed_nodes'], nodes=p['nodes'],
                                      leases=p['leases'], node_map=node_map, lease_grace=p['lease_grace_seconds'],
                                      fence_unknown=p['fence_unknown_watchers'], force=p['force'],
                                      expire=p['expire'], protect=p['protect_addresses'],
                                      check_mode=module.check_mode, wait_timeout=p['wait_timeout'],
                                      settle_timeout=p['settle_timeout'], image_workers=p['parallel'],
                                      staged=staged)
        except FenceFailure as exc:
            output.update(_outcome(exc.result))
            details = exc.fail_kwargs()
            details.setdefault('versions', client.known_versions)
            module.fail_json(backend=client.name, **dict(output, **details))
    for warning in (done.get('result') or {}).get('warnings') or []:
        module.warn(warning)
    output.update(_outcome(done))
    output.update(backend=client.name, versions=client.known_versions)
    if module._diff:
        output['diff'] = dict(before=dict(fenced=[]),
                              after=dict(fenced=[a['entry'] for a in output['actions'] if a.get('op') == 'add']))
    if output['still_watched']:
        module.fail_json(msg='blocklisted, but after %d s these fenced clients still watch their images (the fence '
                         'has not taken effect; nothing may be released on it): %s' % (
                             p['wait_timeout'], '; '.join('%s on %s' % (w['address'], w['image'])
                                                          for w in output['still_watched'])), **output)
    module.exit_json(**output)


def _outcome(done):
    """The module's results from fence_failed_nodes' answer (or a failure's partial one)."""
    result = done.get('result') or {}
    out = dict(images=done['images'], missing=done['missing'], failed_images=done.get('failed_images') or [],
               watchers_after=done['watchers_after'], passed=done.get('passed') or [],
               still_watched=[dict(image=image, address=address) for image, address in done['still']],
               actions=result.get('actions') or [], failed_actions=result.get('failed_actions') or [],
               changed=bool(result.get('changed')))
    if done.get('plan') is not None:
        out['plan'] = done['plan']
    return out


if __name__ == '__main__':
    main()

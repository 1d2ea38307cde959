#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: failed_nodes
short_description: Start, record or lift a failover and its out-of-service taint on many nodes in one call
version_added: 0.3.0
description:
  - With O(state=started), reads what M(volfence.csi.failed_nodes_info) reads and returns the same results in the
    same call, refuses (and writes nothing) when a node does not exist or may be alive (RV(preflight.refused),
    invariant I1 of docs/safety.md), and else writes on each node the failover's start (annotation
    C(volfence.csi/failover-started), the node's bootID and when the failover began). The
    C(volfence.csi.node_failover) playbook runs it first, before anything is read on Ceph or fenced, so that a
    run cut off while fencing leaves on each node the bootID C(node_recover) must see change (I3).
  - With O(state=present), writes on each node of O(nodes) the failover's record (annotation
    C(volfence.csi/failover), the text O(records) gives for the node), which replaces the start, and, when
    O(out_of_service_taint=true), adds the C(node.kubernetes.io/out-of-service=nodeshutdown:NoExecute) taint
    (non-graceful node shutdown). The C(volfence.csi.node_failover) playbook runs it once the fence is set
    (C(fence_method=blocklist)) or before it sets the NetworkFences (C(fence_method=networkfence)), so that
    C(node_recover) lifts exactly what was fenced (I2, I3).
  - With O(state=absent), removes the record and the start and, when O(out_of_service_taint=true), the out-of-service taint
    this collection added. An out-of-service taint someone else set (medik8s Self Node Remediation or Fence Agents
    Remediation, a cloud controller, a person) is left alone and returned in RV(others_taint_nodes), unless
    O(remove_others_taint=true).
  - The collection tells its own taint by the annotation C(volfence.csi/out-of-service-taint), written in the same
    PATCH that adds the taint. A node that already carries someone else's out-of-service taint is not tainted again,
    and that taint stays theirs.
  - One read and at most one PATCH per node, O(parallel) nodes at a time. A node that already carries what is
    asked is not written; a second run changes nothing.
  - A patch that changes the taints carries the node's C(resourceVersion), so a node changed meanwhile is read
    again and patched again, never overwritten with an old taint list.
  - When a node cannot be written, the module still writes the others, then fails with a message that names
    each node it could not write and why, and returns RV(changed_nodes) and RV(failures).
  - Deciding which nodes failed and what their records say is the caller's job
    (M(volfence.csi.failed_nodes_info) and the C(volfence.csi.failover_markers) filter).
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
      - Reads each node and reports what it would write; writes nothing.
  diff_mode:
    support: full
    details:
      - The diff shows each changed node's record and taint before and after.
options:
  nodes:
    description:
      - The nodes to write. The same node listed twice is written once. An empty list changes nothing.
    type: list
    elements: str
    required: true
  state:
    description:
      - V(started) reads the nodes, refuses a node that may be alive, and writes the failover's start.
      - V(present) writes the records (and adds the taint); V(absent) removes them and the start (and the taint).
    type: str
    choices: [present, absent, started]
    default: present
  lease_grace_seconds:
    description:
      - With O(state=started), a node whose Lease was renewed less than this many seconds ago may be alive, and
        the module refuses it (unless O(force)). 0 to 86400.
    type: int
    default: 120
  force:
    description:
      - With O(state=started), let a fresh Lease pass the preflight. A Ready node is never let pass.
    type: bool
    default: false
  page_size:
    description:
      - With O(state=started), at most this many objects per list request (C(limit)). 1 to 10000.
    type: int
    default: 500
  finished:
    description:
      - With O(state=present), the nodes whose start goes even though O(records) gives them no record, that is the
        nodes whose start this failover wrote (RV(started_nodes) of the O(state=started) call) and for which it
        fenced nothing.
      - A start of a node not listed here and without a record stays, as it was left by an earlier run that was cut
        off, which may have fenced what it did not record.
    type: list
    elements: str
    default: []
  records:
    description:
      - The failover's record of each node, as text (the C(volfence.csi.failover_markers) filter makes it).
        A node without a record gets only the taint.
      - A record of a node that is not in O(nodes) is refused, and nothing is changed.
      - Ignored with O(state=absent) and O(state=started).
    type: dict
    default: {}
  out_of_service_taint:
    description:
      - Whether to add (O(state=present)) or remove (O(state=absent)) the
        C(node.kubernetes.io/out-of-service:NoExecute) taint. Kubernetes then evicts the node's pods and
        detaches their volumes without waiting for the kubelet; use it only for a node that is powered off.
    type: bool
    default: false
  remove_others_taint:
    description:
      - With O(state=absent) and O(out_of_service_taint=true), also remove an out-of-service taint that this
        collection did not add. Only once whoever set it is done with the node (see RV(others_taint_nodes)).
    type: bool
    default: false
  parallel:
    description:
      - How many nodes are read and written at once.
      - From 1 to 256.
    type: int
    default: 16
seealso:
  - module: volfence.csi.failed_nodes_info
  - module: volfence.csi.ceph_blocklist
'''

EXAMPLES = r'''
- name: Are the nodes provably down, which volumes do they hold; mark the failover started (refuses a live node)
  volfence.csi.failed_nodes:
    nodes: [rack3-a, rack3-b]
    state: started
    lease_grace_seconds: 120
  register: failover_read

- name: Record on each failed node what is fenced
  volfence.csi.failed_nodes:
    nodes: [rack3-a, rack3-b]
    records: "{{ failover_markers }}"
    finished: "{{ failover_read.started_nodes }}"

- name: Declare a powered-off node shut down (non-graceful node shutdown)
  volfence.csi.failed_nodes:
    nodes: [worker2]
    out_of_service_taint: true

- name: The node is back, its fences lifted - remove the record and the taint node_failover added
  volfence.csi.failed_nodes:
    nodes: [worker2]
    state: absent
    out_of_service_taint: true
  register: lifted

- name: Say whose out-of-service taints were left
  ansible.builtin.debug:
    msg: "left to their owner: {{ lifted.others_taint_nodes }}"
'''

RETURN = r'''
started_nodes:
  description: With O(state=started), the nodes whose failover start this run wrote (in check mode, would write);
    a start of the same boot already there (an earlier run cut off) is not listed.
  returned: always
  type: list
  elements: str
  sample: [worker2]
preflight:
  description: With O(state=started), the preflight verdict, as M(volfence.csi.failed_nodes_info) returns it.
  returned: when O(state=started)
  type: dict
  contains:
    refused:
      description: Null when every named node is provably down, else why not (I1); the module then fails.
      type: str
      sample: null
    nodes:
      description: Per named node, its C(ready) condition, C(lease_age) in seconds, C(boot_id) and C(addresses).
      type: dict
    lines:
      description: One sentence per named node, for the report.
      type: list
      elements: str
    ready_addresses:
      description: The addresses of Ready nodes, which no fence may cover.
      type: list
      elements: str
volumes:
  description: With O(state=started), every volume of the nodes, as M(volfence.csi.failed_nodes_info) returns it.
  returned: when O(state=started) and the preflight passed
  type: list
  elements: dict
images:
  description:
    - With O(state=started), the RBD images of RV(volumes), then those of RV(waiting), each once.
  returned: when O(state=started) and the preflight passed
  type: list
  elements: str
  sample: [replicapool/csi-vol-0f6e]
waiting:
  description:
    - With O(state=started), the RBD volumes of the pods that have not started on other nodes (C(pod), C(uid), C(node),
      C(claim), C(pv), C(image)). When Kubernetes (an out-of-service taint) or someone else removed the failed nodes'
      pods and attachments first, these are what the nodes' clients may still hold; only the failed nodes' clients
      of them are ever fenced.
  returned: when O(state=started) and the preflight passed
  type: list
  elements: dict
  sample: [{pod: default/web-0, uid: 5f1c, node: worker1, claim: default/data-web-0, pv: pvc-0f6e,
            image: replicapool/csi-vol-0f6e}]
node_addresses:
  description: With O(state=started), every node's IP addresses.
  returned: when O(state=started) and the preflight passed
  type: dict
  sample: {worker1: [10.0.0.1], worker2: [10.0.0.2]}
other_remediators:
  description: With O(state=started), what others did on the nodes to remediate them, by node.
  returned: when O(state=started) and the preflight passed
  type: dict
nodes:
  description: With O(state=started), every Node object as read before the write (no C(managedFields)).
  returned: when O(state=started) and the preflight passed
  type: list
  elements: dict
leases:
  description: With O(state=started), every node Lease.
  returned: when O(state=started) and the preflight passed
  type: list
  elements: dict
pods:
  description: With O(state=started), the pods on the nodes.
  returned: when O(state=started) and the preflight passed
  type: list
  elements: dict
objects:
  description: With O(state=started), the claims, PersistentVolumes and VolumeAttachments read.
  returned: when O(state=started) and the preflight passed
  type: dict
listed:
  description: With O(state=started), how many objects of each kind were read.
  returned: when O(state=started) and the preflight passed
  type: dict
  sample: {nodes: 3, leases: 3, pods: 4, pvcs: 1, pvs: 1, volumeattachments: 3}
requests:
  description: With O(state=started), how many requests the read sent to the API server.
  returned: when O(state=started) and the preflight passed
  type: int
  sample: 9
server_version:
  description: With O(state=started), the API server's C(gitVersion).
  returned: when O(state=started)
  type: str
  sample: v1.31.4
changed_nodes:
  description: The nodes this run wrote (in check mode, would write), each with C(name) and C(changes), what
    was done in words.
  returned: always
  type: list
  elements: dict
  sample: [{name: worker2, changes: [record written, out-of-service taint added]}]
unchanged_nodes:
  description: The nodes that already carried what was asked.
  returned: always
  type: list
  elements: str
  sample: [worker3]
tainted_nodes:
  description: The nodes that carry the out-of-service taint after the run (in check mode, would carry it).
  returned: always
  type: list
  elements: str
  sample: [worker2]
recorded_nodes:
  description: The nodes that carry the record O(records) gives for them after the run (in check mode, would
    carry it).
  returned: always
  type: list
  elements: str
  sample: [worker2]
taint_changed_nodes:
  description: The nodes whose out-of-service taint this run added (O(state=present)) or removed
    (O(state=absent)); in check mode, would add or remove.
  returned: always
  type: list
  elements: str
  sample: [worker2]
record_changed_nodes:
  description: The nodes whose record this run wrote or replaced (O(state=present)) or removed
    (O(state=absent)); in check mode, would write or remove.
  returned: always
  type: list
  elements: str
  sample: [worker2]
others_taint_nodes:
  description: The nodes that carry, after the run, an out-of-service taint this collection did not add (in check
    mode, would carry). Someone else remediates them; the module leaves their taint alone unless
    O(remove_others_taint=true).
  returned: always
  type: list
  elements: str
  sample: [worker5]
missing_nodes:
  description: The nodes that do not exist. With O(state=present) the module fails when there is any.
  returned: always
  type: list
  elements: str
  sample: []
failures:
  description: The nodes that could not be read or written, each with C(name) and C(error) (the API's
    status, reason and message). The module fails when there is any.
  returned: always
  type: list
  elements: dict
  sample: [{name: worker4, error: "403 Forbidden: nodes \"worker4\" is forbidden"}]
diff:
  description: Each changed node's C(record), C(out_of_service_taint) and C(out_of_service_taint_by)
    (V(volfence.csi), V(other) or null), before and after.
  returned: when diff mode is on
  type: dict
  sample: {before: {worker2: {record: null, out_of_service_taint: false, out_of_service_taint_by: null}},
           after: {worker2: {record: '{"bootID": "..."}', out_of_service_taint: true,
                             out_of_service_taint_by: volfence.csi}}}
'''

import datetime

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sError, connect, k8s_module, resource_path)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.gather import (
    DEFAULT_PAGE, check_gather_request, gather_failed_nodes, missing_message)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.node_marks import (
    NodeMarks, changed_marks, check_request, failure_message, started_marks)
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_PARALLEL, check_range


def main():
    module = k8s_module(
        argument_spec=dict(
            nodes=dict(type='list', elements='str', required=True),
            state=dict(type='str', default='present', choices=['present', 'absent', 'started']),
            records=dict(type='dict', default={}),
            finished=dict(type='list', elements='str', default=[]),
            out_of_service_taint=dict(type='bool', default=False),
            remove_others_taint=dict(type='bool', default=False),
            lease_grace_seconds=dict(type='int', default=120),
            force=dict(type='bool', default=False),
            page_size=dict(type='int', default=DEFAULT_PAGE),
            parallel=dict(type='int', default=16),
        ),
        supports_check_mode=True,
    )
    p = module.params
    started = p['state'] == 'started'
    records = p['records'] if p['state'] == 'present' else {}
    try:
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
        names = check_request(p['nodes'], records)
        if started:
            check_gather_request(names, p['lease_grace_seconds'], p['page_size'])
            if p['out_of_service_taint']:
                raise ValueError('out_of_service_taint: a failover taints its nodes with state=present, once they '
                                 'are fenced, not with state=started')
        stray = sorted(set(p['finished']) - set(names))
        if stray:
            raise ValueError('finished names nodes not in nodes: %s' % ', '.join(stray))
    except ValueError as exc:
        module.fail_json(msg=nothing_changed(exc))

    gathered = {}
    try:
        api = connect(module) if names else None
        if started:
            gathered = gather_failed_nodes(api, resource_path, names, lease_grace=p['lease_grace_seconds'],
                                           force=p['force'], page=p['page_size'])
            if gathered['missing']:
                module.fail_json(msg=missing_message(gathered), server_version=gathered['server_version'],
                                 started_nodes=[])
            gathered.pop('missing')
            if gathered['preflight']['refused']:
                # I1: a node that may be alive is never marked, let alone fenced
                module.fail_json(msg=nothing_changed(gathered['preflight']['refused']),
                                 preflight=gathered['preflight'], server_version=gathered['server_version'],
                                 started_nodes=[])
            now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None).isoformat() + 'Z'
            records = dict((name, now) for name in names)
        out = dict(changed=[], unchanged=[], missing=[], failures=[], marks={})
        if names:
            out = NodeMarks(api, workers=p['parallel']).run(
                names, p['state'], records, taint=p['out_of_service_taint'], check_mode=module.check_mode,
                remove_others_taint=p['remove_others_taint'], finished=p['finished'])
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())
    taint_changed, record_changed = changed_marks(out['marks'])
    result = dict(changed=bool(out['changed']), changed_nodes=out['changed'], unchanged_nodes=out['unchanged'],
                  missing_nodes=out['missing'], failures=out['failures'],
                  taint_changed_nodes=taint_changed, record_changed_nodes=record_changed,
                  started_nodes=started_marks(out['marks']) if started else [],
                  tainted_nodes=sorted(n for n, m in out['marks'].items() if m['after']['out_of_service_taint']),
                  others_taint_nodes=sorted(n for n, m in out['marks'].items()
                                            if m['after']['out_of_service_taint_by'] == 'other'),
                  recorded_nodes=sorted(n for n, m in out['marks'].items()
                                        if not started and records.get(n) is not None
                                        and m['after']['record'] == records[n]))
    result.update(gathered)
    if started:
        result['requests'] = api.requests
    if module._diff:
        changed = [c['name'] for c in out['changed']]
        result['diff'] = dict(before=dict((n, out['marks'][n]['before']) for n in changed),
                              after=dict((n, out['marks'][n]['after']) for n in changed))
    if out['failures']:
        module.fail_json(msg=failure_message(out['failures'], len(names), p['state']), **result)
    if out['missing'] and p['state'] != 'absent':
        module.fail_json(msg='node(s) not found: %s; the other nodes were %s' % (
            ', '.join(out['missing']), 'checked' if module.check_mode else 'written'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()

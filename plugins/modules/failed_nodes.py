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
short_description: Write or lift a failover's record and out-of-service taint on many nodes in one call
version_added: 0.3.0
description:
  - With O(state=present), writes on each node of O(nodes) the failover's record (annotation
    C(volfence.csi/failover), the text O(records) gives for the node) and, when O(out_of_service_taint=true),
    adds the C(node.kubernetes.io/out-of-service=nodeshutdown:NoExecute) taint (non-graceful node shutdown).
    The C(volfence.csi.node_failover) playbook runs it after every read and before fencing, so that a run
    cut off while fencing leaves on each node what C(node_recover) has to lift (invariants I2 and I3 of
    docs/safety.md).
  - With O(state=absent), removes the record and, when O(out_of_service_taint=true), the out-of-service taint
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
  - kubernetes.core.k8s_auth_options
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
      - V(present) writes the records (and adds the taint); V(absent) removes them (and the taint).
    type: str
    choices: [present, absent]
    default: present
  records:
    description:
      - The failover's record of each node, as text (the C(volfence.csi.failover_markers) filter makes it).
        A node without a record gets only the taint.
      - A record of a node that is not in O(nodes) is refused, and nothing is changed.
      - Ignored with O(state=absent).
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
- name: Record on each failed node what is fenced, before fencing
  volfence.csi.failed_nodes:
    nodes: [rack3-a, rack3-b]
    records: "{{ failover_markers }}"

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

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._k8s.node_marks import (
    NodeMarks, changed_marks, check_request, failure_message)
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_PARALLEL, check_range


def main():
    module = k8s_module(
        argument_spec=dict(
            nodes=dict(type='list', elements='str', required=True),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            records=dict(type='dict', default={}),
            out_of_service_taint=dict(type='bool', default=False),
            remove_others_taint=dict(type='bool', default=False),
            parallel=dict(type='int', default=16),
        ),
        supports_check_mode=True,
    )
    p = module.params
    records = p['records'] if p['state'] == 'present' else {}
    try:
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
        names = check_request(p['nodes'], records)
    except ValueError as exc:
        text = str(exc)
        module.fail_json(msg=text if text.endswith('nothing was changed') else text + '; nothing was changed')

    out = dict(changed=[], unchanged=[], missing=[], failures=[], marks={})
    if names and (records or p['out_of_service_taint'] or p['state'] == 'absent'):
        try:
            out = NodeMarks(connect(module), workers=p['parallel']).run(
                names, p['state'], records, p['out_of_service_taint'], module.check_mode,
                remove_others_taint=p['remove_others_taint'])
        except K8sError as exc:
            module.fail_json(**exc.fail_kwargs())
    taint_changed, record_changed = changed_marks(out['marks'])
    result = dict(changed=bool(out['changed']), changed_nodes=out['changed'], unchanged_nodes=out['unchanged'],
                  missing_nodes=out['missing'], failures=out['failures'],
                  taint_changed_nodes=taint_changed, record_changed_nodes=record_changed,
                  tainted_nodes=sorted(n for n, m in out['marks'].items() if m['after']['out_of_service_taint']),
                  others_taint_nodes=sorted(n for n, m in out['marks'].items()
                                            if m['after']['out_of_service_taint_by'] == 'other'),
                  recorded_nodes=sorted(n for n, m in out['marks'].items()
                                        if records.get(n) is not None and m['after']['record'] == records[n]))
    if module._diff:
        changed = [c['name'] for c in out['changed']]
        result['diff'] = dict(before=dict((n, out['marks'][n]['before']) for n in changed),
                              after=dict((n, out['marks'][n]['after']) for n in changed))
    if out['failures']:
        module.fail_json(msg=failure_message(out['failures'], len(names), p['state']), **result)
    if out['missing'] and p['state'] == 'present':
        module.fail_json(msg='node(s) not found: %s; the other nodes were %s' % (
            ', '.join(out['missing']), 'checked' if module.check_mode else 'written'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()

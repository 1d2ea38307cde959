# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who else remediates a node (medik8s, a cloud controller, a person), and which out-of-service taint is
the collection's: the marks as the remediators leave them (taints as medik8s' controllers define them)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import (
    MEDIK8S_EXCLUDE_LABEL,
    OWN_TAINT_ANNOTATION,
    other_remediators,
    other_remediators_by_node,
    out_of_service_owner,
)

OUT_OF_SERVICE = {'key': 'node.kubernetes.io/out-of-service', 'value': 'nodeshutdown', 'effect': 'NoExecute',
                  'timeAdded': '2026-11-26T01:00:00Z'}
SNR = {'key': 'medik8s.io/remediation', 'value': 'self-node-remediation', 'effect': 'NoExecute',
       'timeAdded': '2026-11-26T00:59:00Z'}
FAR = {'key': 'medik8s.io/remediation', 'value': 'fence-agents-remediation', 'effect': 'NoExecute'}
UNREACHABLE = {'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'}


def node(name='worker2', taints=(), annotations=None, labels=None):
    return {'metadata': {'name': name, 'annotations': dict(annotations or {}), 'labels': dict(labels or {})},
            'spec': {'taints': list(taints)}}


def test_a_node_that_only_kubernetes_tainted_has_no_other_remediator():
    assert other_remediators(node(taints=[UNREACHABLE])) == []
    assert out_of_service_owner(node(taints=[UNREACHABLE])) is None


def test_our_own_out_of_service_taint_is_not_someone_elses():
    ours = node(taints=[OUT_OF_SERVICE], annotations={OWN_TAINT_ANNOTATION: 'added'})
    assert other_remediators(ours) == []
    assert out_of_service_owner(ours) == 'volfence.csi'


def test_self_node_remediation_marks_are_named_with_their_time():
    found = other_remediators(node(taints=[UNREACHABLE, SNR, OUT_OF_SERVICE]))
    assert [f['by'] for f in found] == ['medik8s Self Node Remediation',
                                        'not volfence.csi (a remediation operator, a cloud controller or a person)']
    assert found[0]['since'] == '2026-11-26T00:59:00Z'
    assert found[1]['mark'] == 'taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute'
    assert 'remove_others_taint=true' in found[1]['note']


def test_fence_agents_remediation_an_unknown_medik8s_value_and_the_exclusion_label():
    found = other_remediators(node(taints=[FAR, dict(FAR, value='')], labels={MEDIK8S_EXCLUDE_LABEL: 'true'}))
    assert [f['by'] for f in found] == ['medik8s Fence Agents Remediation', 'a medik8s remediator (unnamed)',
                                        'NodeHealthCheck configuration']
    assert found[2]['mark'] == 'label remediation.medik8s.io/exclude-from-remediation=true'


def test_by_node_names_only_the_asked_nodes_with_findings():
    nodes = [node('a', taints=[SNR]), node('b'), node('c', taints=[OUT_OF_SERVICE]), {'metadata': {}}, 'junk']
    by_node = other_remediators_by_node(nodes, ['a', 'b'])
    assert list(by_node) == ['a'] and by_node['a'][0]['by'] == 'medik8s Self Node Remediation'

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A failover's marks on its nodes (record annotation, out-of-service taint): the pure patch decision,
and NodeMarks on a KubeApi talking to FakeKube."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.volfence.csi.plugins.module_utils._k8s.node_marks import (
    OUT_OF_SERVICE_TAINT,
    OWN_TAINT_NOTE,
    NodeMarks,
    changed_marks,
    check_request,
    failure_message,
    marks_of,
    marks_patch,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import OWN_TAINT_ANNOTATION
from ansible_collections.volfence.csi.plugins.module_utils._decisions.safety import MARKER_ANNOTATION
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import FakeKube, api_for, merge

OTHER_TAINT = {'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'}


def node(name='worker2', record=None, taints=None, rv='7', ours=False):
    """A node; `ours`: its out-of-service taint carries the collection's annotation."""
    metadata = {'name': name, 'resourceVersion': rv}
    if record is not None or ours:
        metadata['annotations'] = {'other': 'kept'}
    if record is not None:
        metadata['annotations'][MARKER_ANNOTATION] = record
    if ours:
        metadata['annotations'][OWN_TAINT_ANNOTATION] = OWN_TAINT_NOTE
    return {'metadata': metadata, 'spec': {'taints': list(taints or [])}}


# --------------------------------------------------------------------------- the decision

def test_present_writes_the_record_and_adds_the_taint_keeping_other_taints():
    patch, changes = marks_patch(node(taints=[OTHER_TAINT]), 'present', '{"bootID": "b1"}', taint=True)
    # the taint and the annotation that says it is ours, in one patch: never one without the other
    assert patch == {'metadata': {'annotations': {MARKER_ANNOTATION: '{"bootID": "b1"}', OWN_TAINT_ANNOTATION: OWN_TAINT_NOTE},
                                  'resourceVersion': '7'},
                     'spec': {'taints': [OTHER_TAINT, OUT_OF_SERVICE_TAINT]}}
    assert changes == ['record written', 'out-of-service taint added']


def test_a_record_only_patch_carries_no_resource_version():
    # an annotation merge touches no list: nothing of another writer can be lost
    patch, changes = marks_patch(node(), 'present', 'r1')
    assert patch == {'metadata': {'annotations': {MARKER_ANNOTATION: 'r1'}}}
    assert changes == ['record written']


def test_nothing_to_do_when_the_node_carries_the_marks():
    tainted = dict(OUT_OF_SERVICE_TAINT, value='something-else')  # matched by key and effect
    assert marks_patch(node(record='r1', taints=[tainted]), 'present', 'r1', taint=True) == (None, [])
    assert marks_patch(node(), 'absent', taint=True) == (None, [])


def test_another_record_is_replaced():
    _patch, changes = marks_patch(node(record='old'), 'present', 'new')
    assert changes == ['record replaced']


def test_absent_removes_the_record_and_only_our_out_of_service_taint():
    patch, changes = marks_patch(node(record='r1', taints=[OTHER_TAINT, OUT_OF_SERVICE_TAINT], ours=True), 'absent',
                                 taint=True)
    assert patch == {'metadata': {'annotations': {MARKER_ANNOTATION: None, OWN_TAINT_ANNOTATION: None},
                                  'resourceVersion': '7'},
                     'spec': {'taints': [OTHER_TAINT]}}
    assert changes == ['record removed', 'out-of-service taint removed']


def test_someone_elses_out_of_service_taint_is_left_unless_told():
    theirs = node(record='r1', taints=[OUT_OF_SERVICE_TAINT])
    patch, changes = marks_patch(theirs, 'absent', taint=True)
    assert patch == {'metadata': {'annotations': {MARKER_ANNOTATION: None}}} and changes == ['record removed']
    patch, changes = marks_patch(theirs, 'absent', taint=True, remove_others_taint=True)
    assert patch['spec'] == {'taints': []}
    assert changes == ['record removed', "someone else's out-of-service taint removed"]


def test_a_node_already_tainted_by_someone_else_is_not_tainted_again_nor_claimed():
    theirs = node(taints=[OUT_OF_SERVICE_TAINT])
    assert marks_patch(theirs, 'present', taint=True) == (None, [])
    assert marks_of(theirs)['out_of_service_taint_by'] == 'other'


def test_our_note_of_a_taint_someone_removed_is_cleared():
    patch, changes = marks_patch(node(ours=True), 'absent', taint=True)
    assert patch == {'metadata': {'annotations': {OWN_TAINT_ANNOTATION: None}}}
    assert changes == ['note of an out-of-service taint already gone removed']


def test_absent_without_taint_leaves_the_taint():
    patch, changes = marks_patch(node(record='r1', taints=[OUT_OF_SERVICE_TAINT]), 'absent')
    assert 'spec' not in patch and changes == ['record removed']


def test_unknown_state_is_refused():
    with pytest.raises(ValueError, match='state must be present, absent or started'):
        marks_patch(node(), 'gone')


taint_lists = st.lists(st.sampled_from([OTHER_TAINT, OUT_OF_SERVICE_TAINT,
                                        {'key': 'node.kubernetes.io/out-of-service', 'effect': 'NoSchedule'}]),
                       max_size=3)


@settings(max_examples=200, deadline=None)
@given(taints=taint_lists, record=st.one_of(st.none(), st.text(max_size=5)), old=st.one_of(st.none(), st.text(max_size=5)),
       taint=st.booleans(), state=st.sampled_from(['present', 'absent']), ours=st.booleans(),
       remove_others=st.booleans())
def test_one_patch_reaches_the_wanted_marks_and_a_second_changes_nothing(
        taints, record, old, taint, state, ours, remove_others):
    before = node(record=old, taints=taints, ours=ours)
    patch, changes = marks_patch(before, state, record, taint, remove_others)
    after = before if patch is None else merge(before, patch)
    assert marks_patch(after, state, record, taint, remove_others) == (None, [])
    assert bool(changes) == (patch is not None)
    marks, was = marks_of(after), marks_of(before)
    if state == 'present':
        if record is not None:
            assert marks['record'] == record
        if taint:
            assert marks['out_of_service_taint']
            # a taint we add is ours; one that was there stays whoever's it was
            assert marks['out_of_service_taint_by'] == (was['out_of_service_taint_by'] or 'volfence.csi')
    else:
        assert marks['record'] is None
        if taint:
            # ours is removed; someone else's only when told
            assert marks['out_of_service_taint'] == (was['out_of_service_taint_by'] == 'other' and not remove_others)
        else:
            assert marks['out_of_service_taint'] == was['out_of_service_taint']
    # never a taint of another kind lost, never an annotation of another writer
    kept = [t for t in after['spec']['taints'] if t.get('key') != OUT_OF_SERVICE_TAINT['key'] or t.get('effect') != 'NoExecute']
    assert kept == [t for t in taints if t.get('key') != OUT_OF_SERVICE_TAINT['key'] or t.get('effect') != 'NoExecute']
    if old is not None:
        assert after['metadata']['annotations']['other'] == 'kept'


# --------------------------------------------------------------------------- the request

def test_check_request_names_once_in_order():
    assert check_request(['b', 'a', 'b'], {'a': 'r'}) == ['b', 'a']


@pytest.mark.parametrize('nodes, records, message', [
    (['a'], {'c': 'r'}, 'records given for nodes not in nodes: c'),
    (['a', ''], {}, 'every entry must be a node name'),
    (['a'], {'a': {'not': 'text'}}, 'each record must be text'),
])
def test_check_request_refuses_with_a_reason(nodes, records, message):
    with pytest.raises(ValueError, match=message):
        check_request(nodes, records)


# --------------------------------------------------------------------------- on the API

def cluster(*names, **kwargs):
    fake = FakeKube()
    for name in names:
        fake.add('nodes', node(name, **kwargs))
    return fake


def test_marks_many_nodes_one_patch_each_and_a_second_run_writes_nothing():
    fake = cluster('n1', 'n2', 'n3')
    records = {'n1': 'r1', 'n2': 'r2'}
    out = NodeMarks(api_for(fake), workers=4).run(['n1', 'n2', 'n3'], 'present', records, taint=True)
    assert sorted(c['name'] for c in out['changed']) == ['n1', 'n2', 'n3']
    assert len([w for w in fake.writes() if w[0] == 'PATCH']) == 3
    assert marks_of(fake.get('nodes', 'n1')) == {'started': None, 'record': 'r1', 'out_of_service_taint': True,
                                                 'out_of_service_taint_by': 'volfence.csi'}
    assert marks_of(fake.get('nodes', 'n3')) == {'started': None, 'record': None, 'out_of_service_taint': True,
                                                 'out_of_service_taint_by': 'volfence.csi'}
    writes = len(fake.writes())
    again = NodeMarks(api_for(fake)).run(['n1', 'n2', 'n3'], 'present', records, taint=True)
    assert again['changed'] == [] and sorted(again['unchanged']) == ['n1', 'n2', 'n3']
    assert len(fake.writes()) == writes


def test_check_mode_reads_and_writes_nothing():
    fake = cluster('n1')
    out = NodeMarks(api_for(fake)).run(['n1'], 'present', {'n1': 'r1'}, taint=True, check_mode=True)
    assert out['changed'] == [{'name': 'n1', 'changes': ['record written', 'out-of-service taint added']}]
    assert out['marks']['n1']['after'] == {'started': None, 'record': 'r1', 'out_of_service_taint': True,
                                           'out_of_service_taint_by': 'volfence.csi'}
    assert fake.writes() == []


def test_absent_lifts_what_present_wrote():
    fake = cluster('n1', taints=[OTHER_TAINT])
    NodeMarks(api_for(fake)).run(['n1'], 'present', {'n1': 'r1'}, taint=True)
    out = NodeMarks(api_for(fake)).run(['n1'], 'absent', taint=True)
    assert out['changed'] == [{'name': 'n1', 'changes': ['record removed', 'out-of-service taint removed']}]
    lifted = fake.get('nodes', 'n1')
    assert marks_of(lifted) == {'started': None, 'record': None, 'out_of_service_taint': False, 'out_of_service_taint_by': None}
    assert lifted['spec']['taints'] == [OTHER_TAINT]
    assert OWN_TAINT_ANNOTATION not in lifted['metadata'].get('annotations', {})


def test_absent_leaves_someone_elses_taint_on_one_node_and_lifts_ours_on_another():
    fake = cluster('n1')
    fake.add('nodes', node('n2', taints=[OUT_OF_SERVICE_TAINT]))  # a person or medik8s set it
    NodeMarks(api_for(fake)).run(['n1', 'n2'], 'present', {'n1': 'r1', 'n2': 'r2'}, taint=True)
    out = NodeMarks(api_for(fake)).run(['n1', 'n2'], 'absent', taint=True)
    assert marks_of(fake.get('nodes', 'n1'))['out_of_service_taint'] is False
    assert marks_of(fake.get('nodes', 'n2')) == {'started': None, 'record': None, 'out_of_service_taint': True,
                                                 'out_of_service_taint_by': 'other'}
    assert out['marks']['n2']['after']['out_of_service_taint_by'] == 'other'
    told = NodeMarks(api_for(fake)).run(['n2'], 'absent', taint=True, remove_others_taint=True)
    assert told['changed'] == [{'name': 'n2', 'changes': ["someone else's out-of-service taint removed"]}]
    assert fake.get('nodes', 'n2')['spec']['taints'] == []


def test_a_conflict_is_answered_by_a_reread_and_a_new_patch():
    fake = cluster('n1', taints=[OTHER_TAINT])
    fake.faults.append(dict(method='PATCH', path='/nodes/n1', status=409, reason='Conflict', message='modified'))
    out = NodeMarks(api_for(fake)).run(['n1'], 'present', {'n1': 'r1'}, taint=True)
    assert out['failures'] == [] and out['changed'][0]['name'] == 'n1'
    assert fake.get('nodes', 'n1')['spec']['taints'] == [OTHER_TAINT, OUT_OF_SERVICE_TAINT]
    assert [w[0] for w in fake.writes()] == ['PATCH', 'PATCH']


def test_a_stale_resource_version_is_refused_by_the_server_then_retried():
    fake = cluster('n1')
    api = api_for(fake)
    marks = NodeMarks(api)
    original_get = api.get
    calls = []

    def get_then_change(path, what=None, missing_ok=False):
        obj = original_get(path, what=what, missing_ok=missing_ok)
        if not calls:  # after our first read, another writer adds a taint (new resourceVersion)
            calls.append(1)
            fake.get('nodes', 'n1')['spec']['taints'] = [OTHER_TAINT]
            fake.get('nodes', 'n1')['metadata']['resourceVersion'] = '999'
        return obj

    api.get = get_then_change
    out = marks.run(['n1'], 'present', {}, taint=True)
    assert out['failures'] == []
    assert fake.get('nodes', 'n1')['spec']['taints'] == [OTHER_TAINT, OUT_OF_SERVICE_TAINT]
    assert [w[0] for w in fake.writes()] == ['PATCH', 'PATCH']  # the first refused with 409


def test_missing_and_failing_nodes_are_reported_and_the_others_written():
    fake = cluster('n1', 'n3')
    fake.faults.append(dict(method='PATCH', path='/nodes/n3', status=403, reason='Forbidden',
                            message='nodes "n3" is forbidden'))
    out = NodeMarks(api_for(fake)).run(['n1', 'n2', 'n3'], 'present', {'n1': 'r', 'n3': 'r'})
    assert out['missing'] == ['n2']
    assert [c['name'] for c in out['changed']] == ['n1']
    assert out['failures'][0]['name'] == 'n3' and '403' in out['failures'][0]['error']
    assert failure_message(out['failures'], 3, 'present').startswith('1 of 3 nodes could not be marked: n3: ')


def test_changed_marks_name_the_nodes_whose_taint_and_record_the_run_changed():
    fake = cluster('n1', 'n2', 'n3')
    fake.get('nodes', 'n1')['metadata']['annotations'] = {MARKER_ANNOTATION: 'r', OWN_TAINT_ANNOTATION: OWN_TAINT_NOTE}
    fake.get('nodes', 'n1')['spec']['taints'] = [OUT_OF_SERVICE_TAINT, OTHER_TAINT]
    fake.get('nodes', 'n2')['metadata']['annotations'] = {OWN_TAINT_ANNOTATION: OWN_TAINT_NOTE}
    fake.get('nodes', 'n2')['spec']['taints'] = [OUT_OF_SERVICE_TAINT]
    out = NodeMarks(api_for(fake)).run(['n1', 'n2', 'n3'], 'absent', taint=True)
    assert changed_marks(out['marks']) == (['n1', 'n2'], ['n1'])
    assert fake.get('nodes', 'n1')['spec']['taints'] == [OTHER_TAINT]
    again = NodeMarks(api_for(fake)).run(['n1', 'n2', 'n3'], 'absent', taint=True)
    assert changed_marks(again['marks']) == ([], [])
    checked = NodeMarks(api_for(cluster('n4'))).run(['n4'], 'present', {'n4': 'r'}, taint=True, check_mode=True)
    assert changed_marks(checked['marks']) == (['n4'], ['n4'])

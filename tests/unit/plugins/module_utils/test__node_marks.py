# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A failover's marks on its nodes (start and record annotations, out-of-service taint): the pure patch
decision, NodeMarks on a KubeApi talking to FakeKube, and a property: whatever step failover runs are cut
at, node_recover lifts nothing while the node runs a boot something was fenced on."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import examples
from ansible_collections.volfence.csi.plugins.module_utils._k8s.node_marks import (
    NodeMarks,
    changed_marks,
    check_request,
    failure_message,
    started_marks,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import OWN_TAINT_ANNOTATION
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import (
    MARKER_ANNOTATION,
    OUT_OF_SERVICE_TAINT,
    OWN_TAINT_NOTE,
    STARTED_ANNOTATION,
    failover_markers,
    marks_of,
    marks_patch,
    read_marker,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.recovery import recovery_plan
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
    patch, changes = marks_patch(before, state, record, taint=taint, remove_others_taint=remove_others)
    after = before if patch is None else merge(before, patch)
    assert marks_patch(after, state, record, taint=taint, remove_others_taint=remove_others) == (None, [])
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


# --------------------------------------------------------------------------- the failover's start (state=started)

T1, T2 = '2026-11-21T06:00:00Z', '2026-11-21T06:05:00Z'


def booted(name='worker2', boot_id='b1', started=None, record=None, rv='7'):
    """A node that reports bootID `boot_id`; `started`: (boot_id, started_at) of a start already on it."""
    out = node(name, record=record, rv=rv)
    out['status'] = {'nodeInfo': {'bootID': boot_id}}
    annotations = out['metadata'].setdefault('annotations', {'other': 'kept'})  # another writer's
    if started is not None:
        annotations[STARTED_ANNOTATION] = start_text(*started)
    return out


def start_text(boot_id, started_at):
    return json.dumps({'boot_id': boot_id, 'started_at': started_at}, sort_keys=True)


def started_of(obj):
    """The start on a node, read back as JSON (None when it has none)."""
    text = marks_of(obj)['started']
    return None if text is None else json.loads(text)


def test_started_writes_the_nodes_boot_id_and_the_time_in_an_annotation_only_patch():
    patch, changes = marks_patch(booted(boot_id='b1'), 'started', T1)
    # an annotation merge touches no list: no resourceVersion, nothing of another writer can be lost
    assert patch == {'metadata': {'annotations': {STARTED_ANNOTATION: start_text('b1', T1)}}}
    assert changes == ['failover start written']


def test_started_keeps_a_start_of_the_same_boot_and_replaces_one_of_another_boot_or_unreadable():
    assert marks_patch(booted(boot_id='b1', started=('b1', T1)), 'started', T2) == (None, [])
    patch, changes = marks_patch(booted(boot_id='b2', started=('b1', T1)), 'started', T2)
    assert patch['metadata']['annotations'] == {STARTED_ANNOTATION: start_text('b2', T2)}
    assert changes == ['failover start written']
    broken = booted(boot_id='b1')
    broken['metadata']['annotations'] = {STARTED_ANNOTATION: '{not json'}
    patch, _changes = marks_patch(broken, 'started', T2)
    assert patch['metadata']['annotations'] == {STARTED_ANNOTATION: start_text('b1', T2)}


def test_started_writes_nothing_beside_a_record_of_the_same_boot_and_a_start_beside_one_of_another():
    record_b1 = json.dumps({'boot_id': 'b1', 'fenced_at': T1, 'blocklist': [], 'networkfences': []}, sort_keys=True)
    assert marks_patch(booted(boot_id='b1', record=record_b1), 'started', T2) == (None, [])
    patch, changes = marks_patch(booted(boot_id='b2', record=record_b1), 'started', T2)
    assert patch == {'metadata': {'annotations': {STARTED_ANNOTATION: start_text('b2', T2)}}}
    assert changes == ['failover start written']


def test_started_run_writes_the_mark_once_and_a_second_run_keeps_the_first_time():
    fake = cluster()
    fake.add('nodes', booted('n1', 'b1'))
    out = NodeMarks(api_for(fake)).run(['n1'], 'started', {'n1': T1})
    assert out['changed'] == [{'name': 'n1', 'changes': ['failover start written']}]
    assert started_of(fake.get('nodes', 'n1')) == {'boot_id': 'b1', 'started_at': T1}
    assert fake.get('nodes', 'n1')['metadata']['annotations']['other'] == 'kept'
    assert started_marks(out['marks']) == ['n1']
    writes = len(fake.writes())
    assert writes == 1
    again = NodeMarks(api_for(fake)).run(['n1'], 'started', {'n1': T2})
    assert again['changed'] == [] and again['unchanged'] == ['n1']
    assert len(fake.writes()) == writes  # not one write
    assert started_of(fake.get('nodes', 'n1')) == {'boot_id': 'b1', 'started_at': T1}
    assert started_marks(again['marks']) == []  # the start is an earlier run's, not this one's


def test_a_start_of_another_boot_is_replaced_and_listed_one_of_the_same_boot_is_not():
    fake = cluster()
    fake.add('nodes', booted('n1', 'b2', started=('b1', T1)))   # rebooted since a cut-off run
    fake.add('nodes', booted('n2', 'b1', started=('b1', T1)))   # the same boot: a cut-off run of this failure
    fake.add('nodes', booted('n3', 'b3'))                       # none yet
    out = NodeMarks(api_for(fake), workers=3).run(['n1', 'n2', 'n3'], 'started', dict.fromkeys(['n1', 'n2', 'n3'], T2))
    assert started_of(fake.get('nodes', 'n1')) == {'boot_id': 'b2', 'started_at': T2}
    assert started_of(fake.get('nodes', 'n2')) == {'boot_id': 'b1', 'started_at': T1}
    assert started_of(fake.get('nodes', 'n3')) == {'boot_id': 'b3', 'started_at': T2}
    assert started_marks(out['marks']) == ['n1', 'n3']
    assert out['unchanged'] == ['n2']
    assert sorted(w[1] for w in fake.writes()) == ['/api/v1/nodes/n1', '/api/v1/nodes/n3']


def test_present_with_a_record_removes_the_start_in_the_same_patch():
    fake = cluster()
    fake.add('nodes', booted('n1', 'b1', started=('b1', T1)))
    out = NodeMarks(api_for(fake)).run(['n1'], 'present', {'n1': 'r1'})
    assert out['changed'] == [{'name': 'n1', 'changes': ['record written', 'failover start removed']}]
    (write,) = fake.writes()
    assert write[0] == 'PATCH' and write[3] == {'metadata': {'annotations': {MARKER_ANNOTATION: 'r1',
                                                                             STARTED_ANNOTATION: None}}}
    after = marks_of(fake.get('nodes', 'n1'))
    assert after['record'] == 'r1' and after['started'] is None
    assert fake.get('nodes', 'n1')['metadata']['annotations']['other'] == 'kept'


def test_present_without_a_record_leaves_the_start_unless_the_node_is_finished():
    fake = cluster()
    fake.add('nodes', booted('n1', 'b1', started=('b1', T1)))  # an earlier, cut-off run's start
    fake.add('nodes', booted('n2', 'b1', started=('b1', T1)))  # this run's start, nothing fenced for it
    out = NodeMarks(api_for(fake)).run(['n1', 'n2'], 'present', {}, finished=['n2'])
    assert out['unchanged'] == ['n1']
    assert out['changed'] == [{'name': 'n2', 'changes': ['failover start removed']}]
    assert started_of(fake.get('nodes', 'n1')) == {'boot_id': 'b1', 'started_at': T1}
    assert marks_of(fake.get('nodes', 'n2'))['started'] is None
    assert [w[1] for w in fake.writes()] == ['/api/v1/nodes/n2']
    # with the taint, the start of a node not finished still stays
    tainted = NodeMarks(api_for(fake)).run(['n1'], 'present', {}, taint=True)
    assert tainted['changed'] == [{'name': 'n1', 'changes': ['out-of-service taint added']}]
    assert started_of(fake.get('nodes', 'n1')) == {'boot_id': 'b1', 'started_at': T1}


def test_absent_removes_the_record_and_the_start():
    fake = cluster()
    fake.add('nodes', booted('n1', 'b2', started=('b2', T2), record='r1'))
    fake.add('nodes', booted('n2', 'b1', started=('b1', T1)))  # a lone start
    out = NodeMarks(api_for(fake)).run(['n1', 'n2'], 'absent')
    changes = dict((c['name'], c['changes']) for c in out['changed'])
    assert changes == {'n1': ['record removed', 'failover start removed'], 'n2': ['failover start removed']}
    for name in ('n1', 'n2'):
        got = fake.get('nodes', name)
        assert marks_of(got)['record'] is None and marks_of(got)['started'] is None
        assert got['metadata']['annotations'] == {'other': 'kept'}
    writes = len(fake.writes())
    again = NodeMarks(api_for(fake)).run(['n1', 'n2'], 'absent')
    assert again['changed'] == [] and len(fake.writes()) == writes


def test_check_mode_of_the_start_and_its_removal_writes_nothing():
    fake = cluster()
    fake.add('nodes', booted('n1', 'b1'))
    fake.add('nodes', booted('n2', 'b1', started=('b1', T1)))
    checked = NodeMarks(api_for(fake)).run(['n1'], 'started', {'n1': T2}, check_mode=True)
    assert checked['changed'] == [{'name': 'n1', 'changes': ['failover start written']}]
    assert json.loads(checked['marks']['n1']['after']['started']) == {'boot_id': 'b1', 'started_at': T2}
    assert started_marks(checked['marks']) == ['n1']
    removed = NodeMarks(api_for(fake)).run(['n2'], 'present', {'n2': 'r'}, check_mode=True)
    assert removed['changed'] == [{'name': 'n2', 'changes': ['record written', 'failover start removed']}]
    assert removed['marks']['n2']['after']['started'] is None
    lifted = NodeMarks(api_for(fake)).run(['n2'], 'absent', check_mode=True)
    assert lifted['changed'] == [{'name': 'n2', 'changes': ['failover start removed']}]
    assert fake.writes() == []
    assert marks_of(fake.get('nodes', 'n1'))['started'] is None
    assert started_of(fake.get('nodes', 'n2')) == {'boot_id': 'b1', 'started_at': T1}


# --------------------------------------------------------------------------- I3 across cut-off runs (property)
#
# node_failover on one failed node, as the playbook runs it: failed_nodes state=started (the Node as it
# was read, then its start), the fence (blocklist entries at the node's own address, the clients of the
# boot it runs), then failed_nodes state=present with the records failover_markers makes of the Node as
# read before the start, and finished = the started_nodes of the first call. A run may be cut off after
# its start, after its fence, or finish (with something fenced or nothing). Between runs the node may
# have rebooted (and failed again) without node_recover. Then node_recover decides: recovery_plan with
# read_marker of the Node as it is, once Ready with a fresh Lease, on the same boot or a new one.

NAME, NODE_IP = 'node-b', '10.0.0.12'
PROPERTY_NOW = datetime.datetime(2026, 3, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
CUTS = ('start', 'fence', 'finished-fenced', 'finished-nothing')


def failed_node_object(boot_id, annotations=None, ready='Unknown'):
    return {'metadata': {'name': NAME, 'annotations': dict(annotations or {})},
            'spec': {'taints': []},
            'status': {'addresses': [{'type': 'InternalIP', 'address': NODE_IP}],
                       'conditions': [{'type': 'Ready', 'status': ready}],
                       'nodeInfo': {'bootID': boot_id}}}


def other_ready_node():
    return {'metadata': {'name': 'node-a'},
            'status': {'addresses': [{'type': 'InternalIP', 'address': '10.0.0.11'}],
                       'conditions': [{'type': 'Ready', 'status': 'True'}], 'nodeInfo': {'bootID': 'a1'}}}


def fresh_leases():
    renew = (PROPERTY_NOW - datetime.timedelta(seconds=5)).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    return [{'metadata': {'name': n, 'namespace': 'kube-node-lease'}, 'spec': {'renewTime': renew}}
            for n in (NAME, 'node-a')]


def applied(obj, state, record=None, finished=False):
    """(the node after failed_nodes `state`, the marks NodeMarks.run would report for it)."""
    patch, _changes = marks_patch(obj, state, record, finished=finished)
    after = obj if patch is None else merge(obj, patch)
    return after, {NAME: dict(before=marks_of(obj), after=marks_of(after))}


def failover_run(obj, at, cut, nonces, fenced):
    """One node_failover run on `obj` (the failed node), cut at `cut`; `fenced` collects the blocklist
    entries {address: set of the bootIDs the node ran when they were set}."""
    read = obj  # what state=started returns: the Node as read before its start
    obj, marks = applied(obj, 'started', at)
    started = started_marks(marks)
    if cut == 'start':
        return obj
    addresses = [] if cut == 'finished-nothing' else ['%s:0/%d' % (NODE_IP, n) for n in nonces]
    for address in addresses:
        fenced.setdefault(address, set()).add(read['status']['nodeInfo']['bootID'])
    if cut == 'fence':
        return obj
    records = failover_markers([read], [NAME], blocklisted_by_node={NAME: addresses}, networkfences=[], fenced_at=at)
    obj, _marks = applied(obj, 'present', records.get(NAME), finished=NAME in started)
    return obj


RUNS = st.lists(st.tuples(st.booleans(), st.sampled_from(CUTS),
                          st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=2)),
                min_size=1, max_size=4)


@settings(max_examples=examples(2000), deadline=None, derandomize=True, database=None, print_blob=False,
          suppress_health_check=[HealthCheck.too_slow])
@given(runs=RUNS, rebooted=st.booleans(), force=st.booleans())
def test_I3_recovery_lifts_nothing_while_the_node_runs_a_boot_it_was_fenced_on_whatever_step_runs_were_cut_at(
        runs, rebooted, force):
    boot, obj, fenced, boots = 1, failed_node_object('boot-1'), {}, []
    for i, (reboot, cut, nonces) in enumerate(runs):
        if reboot and i:  # back, not recovered, and failed again: another bootID
            boot += 1
            obj = failed_node_object('boot-%d' % boot, obj['metadata']['annotations'])
        boots.append('boot-%d' % boot)
        obj = failover_run(obj, '2026-03-04T10:%02d:00Z' % i, cut, nonces, fenced)
    now_boot = 'boot-%d' % (boot + 1 if rebooted else boot)
    back = failed_node_object(now_boot, obj['metadata']['annotations'], ready='True')
    entries = [dict(kind='address', entry=a, address=a, ip=NODE_IP, cidr=None) for a in sorted(fenced)]
    marker = read_marker(back)
    plan = recovery_plan(NAME, [other_ready_node(), back], entries=entries, fences=[], marker=marker, leases=fresh_leases(), lease_fresh=60,
                         force=force, now=PROPERTY_NOW)
    lifted = plan['remove_addresses'] + plan['remove_cidrs'] + plan['unfence']
    fenced_on = set(b for bs in fenced.values() for b in bs)
    if not force and now_boot in fenced_on:
        # clients of this very boot were fenced: they may still run (I3)
        assert lifted == [], (lifted, marks_of(back), fenced)
        assert plan['refused']
    if force:
        assert plan['refused'] is None
    if not force and now_boot not in boots and marker is not None:
        # rebooted since every run: what is the node's own is lifted (I2), nothing refused
        assert plan['refused'] is None and sorted(plan['remove_addresses']) == sorted(fenced)
    if marker is not None and marker.get('started_only'):
        # a start alone stands for a failover cut off on the boot it names: the last run's
        assert marker['boot_id'] == boots[-1]

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sRefused
from ansible_collections.volfence.csi.plugins.module_utils._k8s.volumeattachment_ops import VolumeAttachments
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import (
    VA0,
    VA1,
    VOLUMEATTACHMENT_FINALIZER as FIN,
    volumeattachment_cluster as cluster,
)


def test_select_and_assess():
    fake, _clock, vas = cluster()
    vas.read_version()
    reports = vas.assess_all(vas.select())
    by_name = dict((r['name'], r) for r in reports)
    assert by_name[VA0]['stale_reasons'] == ['node_not_ready', 'not_in_use']
    assert not by_name[VA1]['stale'] and by_name[VA1]['pods'] == ['default/web-1']
    assert vas.git_version == 'v1.30.2' and vas.version == (1, 30, 2)
    assert fake.writes() == []
    # pods are read per node with a field selector
    assert ('GET', '/api/v1/pods', {'limit': '500', 'fieldSelector': 'spec.nodeName=node-a'}, None) in fake.log
    assert [va['metadata']['name'] for va in vas.select(persistent_volume='pv-1')] == [VA1]
    assert vas.select(name='csi-nope') == []


def test_unknown_pv_is_refused_but_a_deleted_pv_with_attachments_is_not():
    fake, _clock, vas = cluster()
    with pytest.raises(K8sRefused) as info:
        vas.check_pv_exists('pv-typo', [])
    assert 'PersistentVolume pv-typo not found' in info.value.msg
    del fake.store['persistentvolumes'][(None, 'pv-0')]
    selected = vas.select(persistent_volume='pv-0')
    vas.check_pv_exists('pv-0', selected)
    assert 'pv_missing' in vas.assess_all(selected)[0]['stale_reasons']


def test_unreadable_version_is_a_warning():
    fake, _clock, vas = cluster()
    fake.faults = [dict(path='/version', status=403, reason='Forbidden', count=9)]
    vas.read_version()
    assert vas.version is None and 'cannot read the server version' in vas.warnings[0]


def test_delete_only_stale_and_wait_for_the_attacher():
    fake, _clock, vas = cluster()

    def attacher(fake, method, plural, obj):   # the external-attacher detaches and drops its finalizer
        if plural == 'volumeattachments' and method == 'DELETE' and obj['metadata'].get('deletionTimestamp'):
            del fake.store[plural][(None, obj['metadata']['name'])]
    fake.hooks.append(attacher)
    results, failures = vas.delete(vas.assess_all(vas.select()))
    assert failures == []
    by_name = dict((r['name'], r) for r in results)
    assert by_name[VA0]['action'] == 'delete' and by_name[VA0]['changed'] and by_name[VA0]['gone']
    assert by_name[VA1]['action'] == 'skip' and not by_name[VA1]['changed']
    deletes = [e for e in fake.writes() if e[0] == 'DELETE']
    assert len(deletes) == 1 and deletes[0][3]['preconditions']['uid'] == by_name[VA0]['uid']
    assert deletes[0][3]['preconditions']['resourceVersion']


def test_check_mode_writes_nothing():
    fake, _clock, vas = cluster()
    results, failures = vas.delete(vas.assess_all(vas.select()), check_mode=True)
    assert fake.writes() == [] and failures == []
    assert [(r['action'], r['changed']) for r in sorted(results, key=lambda r: r['node'])] == \
        [('skip', False), ('delete', True)]


def test_force_removes_only_the_attacher_finalizer_after_the_grace():
    fake, clock, vas = cluster()
    fake.store['volumeattachments'][(None, VA0)]['metadata']['finalizers'] = [FIN, 'example.com/keep']
    results, failures = vas.delete(vas.assess_all(vas.select(name=VA0)), force=True, force_grace=30,
                                   wait_timeout=60)
    # it waited for the grace, removed the attacher's finalizer, and then timed out on the other one
    assert results[0]['finalizer_removed'] == FIN
    patches = [e for e in fake.writes() if e[0] == 'PATCH']
    assert [p[3]['metadata']['finalizers'] for p in patches] == [['example.com/keep']]
    assert len(failures) == 1 and 'example.com/keep' in failures[0][1].msg
    assert fake.get('volumeattachments', VA0)['metadata']['finalizers'] == ['example.com/keep']


def test_force_on_a_stuck_attachment_makes_it_go():
    fake, clock, vas = cluster()
    results, failures = vas.delete(vas.assess_all(vas.select(name=VA0)), force=True, force_grace=10, wait_timeout=60)
    assert failures == [] and results[0]['gone'] and results[0]['finalizer_removed'] == FIN
    assert fake.get('volumeattachments', VA0) is None


def test_without_force_a_stuck_deletion_times_out_with_a_hint():
    fake, clock, vas = cluster()
    results, failures = vas.delete(vas.assess_all(vas.select(name=VA0)), wait_timeout=5)
    assert len(failures) == 1
    msg = failures[0][1].msg
    assert 'still exists after wait_timeout=5s' in msg and 'force=true removes %s' % FIN in msg
    assert results[0]['changed']   # the DELETE itself was made


def test_a_changed_attachment_is_reassessed_before_deleting():
    fake, clock, vas = cluster()
    reports = vas.assess_all(vas.select(name=VA0))
    # meanwhile node-b comes back and a pod uses pv-0 there again: the precondition fails
    fake.store['nodes'][(None, 'node-b')]['status']['conditions'][0]['status'] = 'True'
    fake.add('pods', dict(metadata=dict(name='web-0', namespace='default'), spec=dict(
        nodeName='node-b', volumes=[dict(name='d', persistentVolumeClaim=dict(claimName='c-0'))]),
        status=dict(phase='Running')))
    fake.store['volumeattachments'][(None, VA0)]['metadata']['resourceVersion'] = '999'
    vas._nodes.clear()
    vas._pods.clear()
    vas._load_nodes(['node-b'])
    vas._load_pods(['node-b'])
    results, failures = vas.delete(reports, wait=False)
    assert failures == [] and results[0]['action'] == 'skip' and not results[0]['changed']
    assert fake.get('volumeattachments', VA0)['metadata'].get('deletionTimestamp') is None


def test_a_lost_delete_answer_is_recognised():
    fake, clock, vas = cluster()
    fake.faults = [dict(method='DELETE', status=500, apply=True)]
    results, failures = vas.delete(vas.assess_all(vas.select(name=VA0)), wait=False)
    assert failures == [] and results[0]['changed']
    assert len([e for e in fake.writes() if e[0] == 'DELETE']) == 1


def test_persistent_server_errors_fail_clearly():
    fake, clock, vas = cluster()
    fake.faults = [dict(method='DELETE', status=500, count=99)]
    results, failures = vas.delete(vas.assess_all(vas.select(name=VA0)), wait=False)
    assert len(failures) == 1 and failures[0][1].status == 500
    assert 'Failed to delete VolumeAttachment %s: 500' % VA0 in results[0]['error']
    assert fake.get('volumeattachments', VA0)['metadata'].get('deletionTimestamp') is None


def test_unknown_node_warns_only_when_neither_a_node_nor_an_attachment_has_the_name():
    fake, _clock, vas = cluster()
    # a typo: no such node and no attachment to it
    msg = vas.unknown_node_warning('node-bb', vas.select(node='node-bb'))
    assert msg.startswith('no node named node-bb and no VolumeAttachment to it')
    assert 'did you mean node-b' in msg and "the cluster's nodes: node-a, node-b" in msg
    # an existing node without attachments: a normal answer
    fake.add('nodes', dict(metadata=dict(name='node-c'), status=dict(conditions=[])))
    assert vas.unknown_node_warning('node-c', vas.select(node='node-c')) is None
    # a deleted node whose attachments are left: the usual stale case, selected without a warning
    del fake.store['nodes'][(None, 'node-b')]
    selected = vas.select(node='node-b')
    assert [va['metadata']['name'] for va in selected] == [VA0]
    assert vas.unknown_node_warning('node-b', selected) is None
    # ... nor when other selectors leave none of them
    vas2 = VolumeAttachments(vas.api)
    assert vas2.unknown_node_warning('node-b', vas2.select(node='node-b', attacher='other.csi')) is None
    assert fake.writes() == []

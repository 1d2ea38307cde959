# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sApiError,
    K8sConnectionError,
    K8sError,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.pods import (
    ABSENT,
    FAILED,
    RETRY,
    PodDeleter,
    ReplacementPods,
    check_claims,
    check_node_names,
    check_pods,
    delete_body,
    error_outcome,
    failure_message,
    replacement_status,
    user_error,
)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import (
    FakeKube,
    SleepClock,
    api_for,
    pod,
    pods_world,
)


# --------------------------------------------------------------------------- input

def test_check_pods_normalises_and_dedupes():
    pods = [dict(namespace='shop', name='db-0', uid='u-1'), dict(namespace='shop', name='web-1'),
            dict(namespace='shop', name='db-0', uid='u-1')]
    assert check_pods(pods) == [dict(namespace='shop', name='db-0', uid='u-1'),
                                dict(namespace='shop', name='web-1', uid=None)]
    assert check_pods([]) == []


@pytest.mark.parametrize('pods, message', [
    ('db-0', 'pods must be a list'),
    (['db-0'], "pods[0] must be a mapping with namespace and name, got 'db-0'"),
    ([dict(namespace='Shop', name='db-0')], "pods[0]: namespace 'Shop' is not a namespace name"),
    ([dict(name='db-0')], 'pods[0]: namespace None is not a namespace name'),
    ([dict(namespace='shop', name='DB_0')], "pods[0] name 'DB_0' is not a valid Kubernetes object name"),
    ([dict(namespace='shop', name='db-0', uid=' ')], 'pods[0] uid must be a non-empty string'),
    ([dict(namespace='shop', name='db-0', uid='a'), dict(namespace='shop', name='db-0', uid='b')],
     'pods[1]: pod shop/db-0 is listed twice with different uids (a, b)'),
])
def test_check_pods_refuses_bad_input(pods, message):
    with pytest.raises(ValueError) as info:
        check_pods(pods)
    assert message in str(info.value)


def test_check_pods_names_every_wrong_entry():
    with pytest.raises(ValueError) as info:
        check_pods([dict(namespace='a', name='x_1'), dict(namespace='a', name='ok'), dict(namespace='-b', name='y')])
    assert 'pods[0]' in str(info.value) and 'pods[2]' in str(info.value) and 'pods[1]' not in str(info.value)


def test_check_claims_and_nodes():
    expected = [('shop', 'data-db-0'), ('shop', 'data-db-1')]
    assert check_claims(['shop/data-db-1', 'shop/data-db-0', 'shop/data-db-1']) == expected
    for bad, message in (('data-db-0', "claims[0]: 'data-db-0' is not \"namespace/claim\""),
                         ('a/b/c', "is not \"namespace/claim\""),
                         ('Shop/x', "claims[0]: namespace 'Shop' is not a namespace name"),
                         ('shop/X_1', "claims[0] claim 'X_1' is not a valid Kubernetes object name")):
        with pytest.raises(ValueError) as info:
            check_claims([bad])
        assert message in str(info.value)
    assert check_node_names(['node-c', 'node-b', 'node-c'], 'exclude_nodes') == ['node-b', 'node-c']
    with pytest.raises(ValueError) as info:
        check_node_names(['node-b', 'Node_C'], 'exclude_nodes')
    assert "exclude_nodes[1] 'Node_C' is not a valid Kubernetes object name" in str(info.value)


# --------------------------------------------------------------------------- classification

def test_delete_body_and_error_outcomes():
    assert delete_body(0) == dict(apiVersion='v1', kind='DeleteOptions', gracePeriodSeconds=0)
    assert delete_body(5, 'u-1')['preconditions'] == dict(uid='u-1')
    precondition = K8sApiError('Failed to delete Pod shop/db-0: 409 Conflict', status=409, reason='Conflict',
                               api_message='Precondition failed: UID in precondition: u-1, UID in object meta: u-2')
    assert error_outcome(precondition, 'u-1') == ABSENT
    assert error_outcome(precondition, None) == RETRY
    assert error_outcome(K8sApiError('x', status=404), None) == ABSENT
    for status in (429, 500, 503):
        assert error_outcome(K8sApiError('x', status=status), 'u') == RETRY
    assert error_outcome(K8sApiError('x', status=403), 'u') == FAILED
    assert error_outcome(K8sConnectionError('lost'), 'u') == RETRY
    assert error_outcome(K8sError('other'), 'u') == FAILED
    assert user_error(K8sApiError('Failed ...', status=403, reason='Forbidden', api_message='pods "x" is forbidden')) \
        == '403 Forbidden: pods "x" is forbidden'
    assert user_error(K8sConnectionError('The Kubernetes API is not reachable')) == 'The Kubernetes API is not reachable'


def test_failure_message_names_each_failed_pod():
    failed = [dict(namespace='a', name='p-1', error='500 InternalError: boom')]
    msg = failure_message(failed, 100, 98, 1)
    assert msg.startswith('1 of 100 pod(s) could not be force-deleted: a/p-1: 500 InternalError: boom')
    assert '98 deleted, 1 already gone or replaced' in msg and msg.endswith('a re-run retries the failed ones')
    assert 'handled' not in failure_message(failed, 1, 0, 0)


# --------------------------------------------------------------------------- deleting

def refs(names, uids=None):
    return [dict(namespace='shop', name=n, uid=(uids or {}).get(n)) for n in names]


def test_deletes_all_in_parallel_with_uid_preconditions_and_grace():
    fake, uids = pods_world(5)
    out = PodDeleter(api_for(fake), workers=3).run(refs(sorted(uids), uids))
    assert sorted(d['name'] for d in out['deleted']) == sorted(uids) and out['absent'] == out['failures'] == []
    assert [d['uid'] for d in out['deleted']] == [uids[d['name']] for d in out['deleted']]
    assert fake.store['pods'] == {}
    deletes = [entry for entry in fake.log if entry[0] == 'DELETE']
    assert len(deletes) == 5 and all(d[3]['gracePeriodSeconds'] == 0 for d in deletes)
    assert sorted(d[3]['preconditions']['uid'] for d in deletes) == sorted(uids.values())
    # a second run: all gone, nothing deleted
    again = PodDeleter(api_for(fake), workers=3).run(refs(sorted(uids), uids))
    assert again['deleted'] == [] and [a['why'] for a in again['absent']] == ['not found: already gone'] * 5


def test_a_replacement_of_the_same_name_is_left_alone():
    fake, uids = pods_world(1)
    old = uids['p-0']
    del fake.store['pods'][('shop', 'p-0')]
    new = fake.add('pods', dict(metadata=dict(name='p-0', namespace='shop'), spec=dict(nodeName='node-c')))
    out = PodDeleter(api_for(fake)).run(refs(['p-0'], dict(uids)))
    assert out['deleted'] == [] and out['absent'][0]['name'] == 'p-0' and 'replaced' in out['absent'][0]['why']
    assert fake.get('pods', 'p-0', 'shop')['metadata']['uid'] == new['metadata']['uid'] != old
    preview = PodDeleter(api_for(fake)).run(refs(['p-0'], dict(uids)), check_mode=True)
    assert preview['deleted'] == [] and 'now has uid %s' % new['metadata']['uid'] in preview['absent'][0]['why']


def test_one_failure_does_not_stop_the_others_and_a_rerun_finishes():
    fake, uids = pods_world(6)
    fake.faults = [dict(method='DELETE', exact='/api/v1/namespaces/shop/pods/p-3', status=500, count=99,
                        message='etcdserver: request timed out')]
    out = PodDeleter(api_for(fake, retries=2), workers=4, sleep=lambda s: None).run(refs(sorted(uids), uids))
    assert sorted(d['name'] for d in out['deleted']) == ['p-0', 'p-1', 'p-2', 'p-4', 'p-5']
    assert out['failures'] == [dict(namespace='shop', name='p-3', error='500 InternalError: etcdserver: request timed out')]
    assert len([e for e in fake.log if e[0] == 'DELETE' and e[1].endswith('/p-3')]) == 3   # bounded: 1 + retries
    fake.faults = []
    again = PodDeleter(api_for(fake)).run(refs(sorted(uids), uids))
    assert [d['name'] for d in again['deleted']] == ['p-3'] and len(again['absent']) == 5
    assert fake.store['pods'] == {}


def test_a_lost_answer_whose_delete_went_through_counts_as_deleted():
    fake, uids = pods_world(1)
    fake.faults = [dict(method='DELETE', path='/pods/p-0', transport=True, apply=True)]
    out = PodDeleter(api_for(fake), sleep=lambda s: None).run(refs(['p-0'], uids))
    assert [d['name'] for d in out['deleted']] == ['p-0'] and out['failures'] == []


def test_forbidden_is_not_retried():
    fake, uids = pods_world(1)
    fake.faults = [dict(method='DELETE', path='/pods/p-0', status=403, reason='Forbidden', count=9,
                        message='pods "p-0" is forbidden: User "x" cannot delete resource "pods"')]
    out = PodDeleter(api_for(fake), sleep=lambda s: None).run(refs(['p-0'], uids))
    assert out['failures'][0]['error'].startswith('403 Forbidden: pods "p-0" is forbidden')
    assert len([e for e in fake.log if e[0] == 'DELETE']) == 1


def test_check_mode_reads_only():
    fake, uids = pods_world(3)
    out = PodDeleter(api_for(fake)).run(refs(['p-0', 'p-1', 'gone']), check_mode=True)
    assert [d['name'] for d in out['deleted']] == ['p-0', 'p-1'] and out['absent'][0]['name'] == 'gone'
    assert fake.writes() == [] and len(fake.store['pods']) == 3 and uids


# --------------------------------------------------------------------------- replacement pods

def test_replacement_status():
    pods = [pod('db-0-old', 'node-b', ['data-db-0']), pod('db-0', 'node-c', ['data-db-0']),
            pod('db-1', 'node-c', ['data-db-1'], phase='Pending'), pod('db-2', 'node-a', ['data-db-2'], deleting=True),
            pod('db-3', 'node-a', ['data-db-3'], namespace='other')]
    claims = [('shop', 'data-db-0'), ('shop', 'data-db-1'), ('shop', 'data-db-2'), ('shop', 'data-db-3')]
    running, waiting = replacement_status(claims, pods, ['node-b'])
    assert running == [dict(claim='shop/data-db-0', pod='shop/db-0', node='node-c')]
    assert waiting == ['shop/data-db-1', 'shop/data-db-2', 'shop/data-db-3']
    running, _waiting = replacement_status(claims[:1], pods[:1], [])
    assert running == [dict(claim='shop/data-db-0', pod='shop/db-0-old', node='node-b')]


def test_poll_asks_only_for_running_pods_of_the_claims_namespaces():
    fake = FakeKube()
    fake.add('pods', pod('db-0', 'node-c', ['data-db-0']))
    fake.add('pods', pod('x', 'node-c', ['data-db-0'], namespace='elsewhere'))
    finder = ReplacementPods(api_for(fake), page=1)
    running, waiting = finder.poll([('shop', 'data-db-0')], ['node-b'])
    assert running == [dict(claim='shop/data-db-0', pod='shop/db-0', node='node-c')] and waiting == []
    gets = [e for e in fake.log if e[0] == 'GET']
    assert gets and all(e[1] == '/api/v1/namespaces/shop/pods' and e[2]['fieldSelector'] == 'status.phase=Running'
                        and e[2]['limit'] == '1' for e in gets)


def test_many_namespaces_one_cluster_wide_list():
    fake = FakeKube()
    claims = [('ns-%02d' % i, 'c') for i in range(12)]
    for namespace, claim in claims[:11]:
        fake.add('pods', pod('p', 'node-a', [claim], namespace=namespace))
    running, waiting = ReplacementPods(api_for(fake)).poll(claims)
    assert len(running) == 11 and waiting == ['ns-11/c']
    assert [e[1] for e in fake.log] == ['/api/v1/pods']


def test_wait_until_running_then_timeout_names_the_waiting():
    fake = FakeKube()
    clock = SleepClock()
    claims = [('shop', 'data-db-0'), ('shop', 'data-db-1')]
    fake.add('pods', pod('db-0', 'node-c', ['data-db-0'], phase='Pending'))
    clock.hooks.append(lambda t: t >= 3 and fake.add('pods', pod('db-0', 'node-c', ['data-db-0'])))
    clock.hooks.append(lambda t: t >= 5 and fake.add('pods', pod('db-1', 'node-a', ['data-db-1'])))
    finder = ReplacementPods(api_for(fake), clock=clock)
    running, waiting, timed_out = finder.wait(claims, ['node-b'], wait_timeout=60, wait_sleep=1)
    assert not timed_out and waiting == [] and [r['claim'] for r in running] == ['shop/data-db-0', 'shop/data-db-1']
    assert finder.polls == 6 and clock.t == 5
    finder = ReplacementPods(api_for(fake), clock=clock)
    running, waiting, timed_out = finder.wait(claims + [('shop', 'data-db-9')], ['node-b'], wait_timeout=4,
                                              wait_sleep=2)
    assert timed_out and waiting == ['shop/data-db-9'] and len(running) == 2 and finder.polls == 3

# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts sorted by the outcome of a step, the step that failed on its host, and the report as a job artifact
(plugins/filter/report.py)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.report import failed_step, host_results, job_artifact


def test_a_report_that_fits_is_kept_whole_with_its_summary():
    report = {'failed_node': 'node-b', 'pods_force_deleted': ['web-0'], 'fence_plan': {'fence': ['10.0.0.2:0/1']}}
    artifact = job_artifact(report, ['fenced (blocklist, I1): [10.0.0.2:0/1]'], '/srv/r.json')
    assert artifact == {'summary': ['fenced (blocklist, I1): [10.0.0.2:0/1]'], 'report_path': '/srv/r.json',
                        'report': report, 'truncated': False}
    assert json.loads(json.dumps(artifact)) == artifact


def test_a_report_too_large_leaves_the_summary_and_says_so():
    report = {'pods': ['pod-%05d' % i for i in range(20000)]}
    size = len(json.dumps(report, sort_keys=True))
    artifact = job_artifact(report, 'one table', None, limit=size - 1)
    assert artifact == {'summary': ['one table'], 'report_path': None, 'truncated': True, 'report_size': size}
    assert job_artifact(report, [], None, limit=size)['truncated'] is False


def test_values_that_are_not_json_become_text_and_bad_input_is_named():
    artifact = job_artifact({'when': object.__name__, 'n': 1}, None)
    assert artifact['report'] == {'when': 'object', 'n': 1} and artifact['summary'] == []
    with pytest.raises(AnsibleFilterError, match='the report must be a mapping, got list'):
        job_artifact(['not', 'a', 'report'])


HOSTVARS = {
    'node-a': {'unmounted_step': {'changed': True, 'pod_uids': ['u1'], 'unmounted': [{'path': '/m'}]}},
    'node-b': {'unmounted_step': {'failed': True, 'msg': 'kubelet_dir /x does not exist'}},
    'node-c': {'unmounted_step': {'unreachable': True, 'msg': 'Failed to connect to the host via ssh'}},
    'node-d': {'unmounted_step': {'skipped': True, 'skip_reason': 'Conditional result was False'}},
    'node-e': {'other': 1},  # the step never ran there
}


def test_hosts_are_sorted_by_the_outcome_of_their_step_with_the_reason():
    out = host_results(HOSTVARS, ['node-a', 'node-b', 'node-c', 'node-d', 'node-e', 'node-f'], 'unmounted_step')
    assert out['done'] == {'node-a': HOSTVARS['node-a']['unmounted_step']}
    assert out['failed'] == {
        'node-b': 'failed: kubelet_dir /x does not exist',
        'node-c': 'unreachable: Failed to connect to the host via ssh',
        'node-d': 'skipped: Conditional result was False',
        'node-e': 'no result: the run did not reach this host (an earlier failure, or not in the play)',
        'node-f': 'no result: the run did not reach this host (an earlier failure, or not in the play)',
    }


def test_only_the_targeted_hosts_count():
    assert host_results(HOSTVARS, ['node-a'], 'unmounted_step') == {
        'done': {'node-a': HOSTVARS['node-a']['unmounted_step']}, 'failed': {}}
    assert host_results(HOSTVARS, [], 'unmounted_step') == {'done': {}, 'failed': {}}


@pytest.mark.parametrize('hosts, register, words', [
    ('node-a', 'unmounted_step', 'hosts must be a list'),
    (['node-a'], '', 'register must be the name'),
    (['node-a'], None, 'register must be the name'),
])
def test_bad_arguments_are_named(hosts, register, words):
    with pytest.raises(AnsibleFilterError, match=words):
        host_results(HOSTVARS, hosts, register)


STEP = 'Lock cleanup | fence and break the stale locks'


def test_a_failed_task_names_its_step_host_task_and_message():
    task = {'name': 'Lock cleanup | list the images\' locks', 'action': 'volfence.csi.rbd_lock_info'}
    out = failed_step({'failed': True, 'msg': 'rbd: error opening pool'}, host='ceph-admin', step=STEP, task=task,
                      reached={'ping': 'pong', 'changed': False})
    assert out == {'host': 'ceph-admin', 'step': STEP, 'task': "Lock cleanup | list the images' locks",
                   'reason': 'failed: rbd: error opening pool',
                   'line': "Lock cleanup | fence and break the stale locks failed on ceph-admin at task "
                           "'Lock cleanup | list the images' locks' (failed: rbd: error opening pool); "
                           "nothing was done after it"}


def test_an_unreachable_host_is_told_by_reaching_it_not_by_the_failure_that_follows():
    reached = {'unreachable': True, 'msg': 'Failed to connect to the host via ssh: Connection refused', 'changed': False}
    out = failed_step({'failed': True, 'msg': 'Failed to connect to the host via ssh: Connection refused'},
                      host='ceph-admin', step=STEP, task='The host answers', reached=reached)
    assert out['reason'] == 'unreachable: Failed to connect to the host via ssh: Connection refused'
    assert out['task'] == 'The host answers'


def test_a_failure_without_a_message_or_a_task_still_names_the_step():
    assert failed_step({}, host='k8s-api', step=STEP) == {
        'host': 'k8s-api', 'step': STEP, 'task': None, 'reason': 'failed: no message',
        'line': STEP + ' failed on k8s-api (failed: no message); nothing was done after it'}
    assert failed_step(None, host='k8s-api', step=STEP, task={'action': 'ansible.builtin.assert'})['task'] == \
        'ansible.builtin.assert'


def test_the_host_must_be_named():
    with pytest.raises(AnsibleFilterError, match='host must be an inventory host name'):
        failed_step({'failed': True}, host='', step=STEP)


def test_a_task_delegated_to_another_host_names_that_host():
    task = {'name': 'Failover | blocklist the clients', 'delegate_to': 'ceph-admin'}
    out = failed_step({'failed': True, 'msg': 'timed out'}, host='k8s-api', step='Failover | fence', task=task)
    assert out['host'] == 'ceph-admin' and out['task'] == 'Failover | blocklist the clients'
    not_delegated = dict(task, delegate_to=None)
    assert failed_step({'failed': True}, host='k8s-api', step='Failover | fence', task=not_delegated)['host'] == 'k8s-api'

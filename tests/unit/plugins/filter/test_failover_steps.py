# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What node_failover and node_recover carry between their steps, and their reports: the same shape for both
fence methods, and a report (never a template error) when a step did not run."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.volfence.csi.plugins.filter.failover_steps import FilterModule as StepFilters
from ansible_collections.volfence.csi.plugins.filter.report import failed_step
from ansible_collections.volfence.csi.plugins.filter.safety import FilterModule as SafetyFilters

STEPS = StepFilters().filters()
SAFETY = SafetyFilters().filters()

PLAN = {'fence': ['10.0.0.12:0/1'], 'kept': [], 'by_image': {}, 'by_node': {'node-b': ['10.0.0.12:0/1']},
        'refused': None}
WATCHERS = [{'spec': 'rbd/img', 'watchers': [{'address': '10.0.0.12:0/1', 'node': 'node-b'}]}]


def test_the_fence_outcome_has_one_shape_for_both_methods():
    blocklisted = dict(images=WATCHERS, missing=[], plan=PLAN, actions=[{'op': 'add', 'entry': '10.0.0.12:0/1'}],
                       passed=[], watchers_after=[])
    by_blocklist = STEPS['failover_fence_outcome'](blocklisted, fence_method='blocklist')
    assert by_blocklist['plan'] == PLAN and by_blocklist['fenced'] == ['10.0.0.12:0/1']
    assert by_blocklist['networkfence_results'] == [] and by_blocklist['fenced_cidrs'] == []
    fences = [{'node': 'node-b', 'name': 'volfence-node-b', 'cidrs': ['10.0.0.12/32'], 'create': True}]
    set_fenced = {'changed': True, 'fences': []}
    by_fence = STEPS['failover_fence_outcome'](dict(images=WATCHERS, missing=[]), fence_method='networkfence', plan=PLAN,
                                               networkfences=fences, networkfence_result=set_fenced,
                                               watchers_after_result={'images': []})
    assert sorted(by_fence) == sorted(by_blocklist)
    assert by_fence['fenced'] == ['volfence-node-b'] and by_fence['fenced_cidrs'] == ['10.0.0.12/32']
    assert by_fence['networkfence_results'] == [set_fenced] and by_fence['actions'] == []
    # nothing set Fenced (skipped): the NetworkFence is not in place
    skipped = STEPS['failover_fence_outcome']({}, fence_method='networkfence', networkfence_result={'skipped': True})
    assert skipped['networkfence_results'] == [] and skipped['plan'] == {}
    with pytest.raises(AnsibleFilterError, match='fence_method'):
        STEPS['failover_fence_outcome']({}, fence_method='nfs')


def test_a_failover_stopped_at_its_first_step_is_still_reported():
    stopped = failed_step({'unreachable': True, 'msg': 'ssh: connect to host 127.0.0.1 port 1: Connection refused'},
                          host='k8s-api', step='Failover | 1. preflight', task={'name': 'Reach the host'})
    out = STEPS['failover_report']({}, failed_nodes=['node-b'], fence_method='blocklist', fence={}, record={},
                                   marked={}, release={}, deleted_pods={}, removed_attachments={}, tainted={},
                                   replacements={}, failed_step=stopped, generated='T')
    report = out['report']
    assert report['failed_step'] == stopped and report['failed_node'] == 'node-b' and report['generated'] == 'T'
    assert report['fence_plan'] == {} and report['pods_force_deleted'] == [] and report['failed_steps'] == []
    assert out['failure'].startswith("STOPPED: Failover | 1. preflight failed on k8s-api at task 'Reach the host'")
    assert any(line.startswith('STOPPED: ') for line in out['summary'])


def test_a_failover_report_names_what_was_released_and_what_failed():
    release = dict(volumes=[{'line': 'pv-1: released'}], not_rbd=[], kept_pods=[], kept_attachments=[],
                   remove_attachments=['va-1'], wait_claims=['default/data'], waiting=[], waiting_unsafe=[],
                   kept_unsafe=[], out_of_service=dict(taint=True, reason='every volume made safe'))
    outcome = STEPS['failover_fence_outcome'](dict(images=WATCHERS, missing=[], plan=PLAN), fence_method='blocklist')
    out = STEPS['failover_report'](
        {'preflight': {'lines': ['node-b is down']}, 'images': ['rbd/img'], 'other_remediators': {}},
        failed_nodes=['node-b'], fence_method='blocklist', fence=outcome, record={'markers': {'node-b': '{}'}},
        marked={'recorded_nodes': ['node-b'], 'taint_changed_nodes': []}, release=release,
        deleted_pods={'deleted': [{'name': 'web-0'}], 'absent': []},
        removed_attachments={'failed': True, 'msg': 'va-1: forbidden'},
        tainted={'skipped': True}, replacements={'skipped': True}, check_mode=False)
    report = out['report']
    assert report['fence_plan'] == PLAN and report['pods_force_deleted'] == ['web-0']
    assert report['watchers_before'] == WATCHERS and report['marker_recorded'] is True
    assert report['volumeattachments_failed'] == 'va-1: forbidden' and report['failed_steps'] == ['va-1: forbidden']
    assert out['failure'] == 'va-1: forbidden' and report['failed_step'] is None
    assert "fenced (blocklist, I1): ['10.0.0.12:0/1']" in out['summary']
    assert 'FAILED, re-run to finish: va-1: forbidden' in out['summary']


def test_a_recovery_report_says_why_a_node_is_held_and_what_could_not_be_read():
    plan = dict(evidence='node-b: not Ready', unfence=[], remove_addresses=[], remove_cidrs=[], lifted=[], kept=[],
                recovered=[], held={'node-b': 'node node-b is not Ready'}, held_reason='node node-b is not Ready')
    out = STEPS['recover_report']({}, nodes=['node-b'], records={'node-b': None}, plan=plan,
                                  volume_read={'failed': True, 'msg': 'forbidden'}, generated='T')
    assert out['failure'].startswith('refusing to unfence node-b: node node-b is not Ready.')
    assert out['report']['volumes_not_read'] == ['forbidden'] and out['report']['held'] == plan['held']
    failed = failed_step({'failed': True, 'msg': 'no keyring'}, host='k8s-api', step='Recover | 1. read',
                         task={'name': 'Recover | the blocklist', 'delegate_to': 'ceph-admin'})
    stopped = STEPS['recover_report']({}, nodes=['node-b'], failed_step=failed)
    assert stopped['report']['failed_step']['host'] == 'ceph-admin' and stopped['report']['recovered'] == []
    assert stopped['failure'].startswith('STOPPED: Recover | 1. read failed on ceph-admin')


def test_ceph_connection_takes_what_the_host_sets():
    host = {'volfence_ceph_conf': '/etc/ceph/ceph.conf', 'volfence_ceph_user': 'admin', 'ansible_host': 'x'}
    assert STEPS['ceph_connection'](host) == {'conf': '/etc/ceph/ceph.conf', 'user': 'admin'}
    with pytest.raises(AnsibleFilterError):
        STEPS['ceph_connection']('ceph-admin')


def test_the_networkfence_plan_carries_each_fence_request():
    nodes = [{'metadata': {'name': 'node-b'}, 'status': {'conditions': [{'type': 'Ready', 'status': 'Unknown'}],
                                                         'addresses': [{'type': 'InternalIP', 'address': '10.0.0.12'}]}},
             {'metadata': {'name': 'node-c'}, 'status': {'conditions': [{'type': 'Ready', 'status': 'Unknown'}],
                                                         'addresses': [{'type': 'InternalIP', 'address': '10.0.0.13'}]}}]
    existing = [{'item': 'node-b', 'fences': []}, {'item': 'node-c', 'fences': [{'name': 'pre-c', 'cidrs': ['10.0.0.13/32']}]}]
    plan = SAFETY['failover_networkfence_plan'](existing, failed_nodes=['node-b', 'node-c'], nodes=nodes, force=True,
                                                driver='rbd.csi.ceph.com', secret={'name': 's', 'namespace': 'n'},
                                                cluster_id='lab')
    requests = dict((fence['name'], fence['request']) for fence in plan)
    assert requests['pre-c'] == {'name': 'pre-c', 'fence_state': 'Fenced'}  # a pre-created fence keeps its shape
    assert requests['volfence-node-b'] == {'name': 'volfence-node-b', 'fence_state': 'Fenced', 'cidrs': ['10.0.0.12/32'],
                                           'driver': 'rbd.csi.ceph.com', 'secret': {'name': 's', 'namespace': 'n'},
                                           'parameters': {'clusterID': 'lab'}}

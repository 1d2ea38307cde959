# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sNotInstalled, K8sRefused
from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import (
    CREATE,
    NONE,
    UNFENCE_DELETE,
    UPDATE,
    build_requests,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.networkfence_ops import NetworkFences
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import (
    SERVED,
    NO_PAUSE,
    Controller,
    api_for,
    networkfence_cluster as cluster,
    networkfence_params as params,
    ticking_clock,
)

SECRET = dict(name='csi-rbd-secret', namespace='ceph-csi')
DRIVER = 'rbd.csi.ceph.com'


def plan_and_run(nf, wait=True, force=False, wait_timeout=30, **kwargs):
    plans = nf.plan(build_requests(params(**kwargs)), force=force)
    failures = nf.run(plans, wait=wait, wait_timeout=wait_timeout, wait_sleep=1)
    return plans, failures


def fenced_nf():
    """A cluster where fence nf (10.0.3.12, class rbd) is Fenced and answered by the Controller, its request
    log emptied, and a NetworkFences of a next run on it: (fake, fences)."""
    fake, fences = cluster(Controller())
    plan_and_run(fences, name='nf', cidrs=['10.0.3.12'], fence_state='Fenced', network_fence_class='rbd')
    del fake.log[:]
    return fake, NetworkFences(api_for(fake), clock=ticking_clock())


def test_crd_not_installed_is_a_clear_error_and_writes_nothing():
    served = dict(SERVED)
    del served['csiaddons.openshift.io/v1alpha1']
    fake, fences = cluster(served=served)
    with pytest.raises(K8sNotInstalled) as info:
        fences.plan(build_requests(params(name='nf', cidrs=['10.0.3.12'], fence_state='Fenced',
                                          network_fence_class='rbd')))
    assert 'NetworkFence CRD (networkfences.csiaddons.openshift.io) is not installed' in info.value.msg
    assert fake.writes() == []


def test_many_fences_then_a_second_run_writes_nothing():
    fake, fences = cluster()
    entries = [dict(name='fence-%02d' % i, cidrs=['10.1.0.%d' % i]) for i in range(1, 31)]
    plans, failures = plan_and_run(fences, wait=False, fences=entries, fence_state='Unfenced',
                                   network_fence_class='rbd')
    assert failures == [] and [p.action for p in plans] == [CREATE] * 30 and all(p.changed for p in plans)
    assert len(fake.writes()) == 30 and len(fake.store['networkfences']) == 30
    before = len(fake.log)
    _fake, again = fake, NetworkFences(api_for(fake), clock=NO_PAUSE)
    plans = again.plan(build_requests(params(fences=entries, fence_state='Unfenced', network_fence_class='rbd')))
    assert again.run(plans, wait=False) == []
    assert [p.action for p in plans] == [NONE] * 30
    new = fake.log[before:]
    assert [e[0] for e in new] == ['GET'] * len(new)
    # discovery, one LIST of fences, discovery + LIST of classes, one LIST of nodes
    assert len(new) == 5


def test_create_and_wait_for_success():
    fake, fences = cluster(Controller())
    plans, failures = plan_and_run(fences, name='nf', cidrs=['10.0.3.12'], fence_state='Fenced',
                                   network_fence_class='rbd')
    assert failures == [] and plans[0].outcome == 'Succeeded'
    report = fences.report(plans[0].obj)
    assert report['driver'] == DRIVER and [n['name'] for n in report['nodes']] == ['node-b']
    assert fences.warnings == []


def test_the_controller_failure_message_fails_the_fence():
    fake, fences = cluster(Controller(refuse=['10.0.3.12/32']))
    plans, failures = plan_and_run(fences, name='nf', cidrs=['10.0.3.12'], fence_state='Fenced',
                                   network_fence_class='rbd')
    assert len(failures) == 1 and plans[0].outcome == 'Failed'
    assert 'the CSI-Addons controller reports Failed (Fenced): rpc error: code = Internal desc = cannot fence ' \
           '10.0.3.12/32' in failures[0][1].msg


def test_an_update_clears_the_previous_answer_first():
    fake, fences = fenced_nf()
    plans, failures = plan_and_run(fences, name='nf', cidrs=['10.0.3.12', '10.0.3.14'])
    assert failures == [] and plans[0].action == UPDATE and plans[0].outcome == 'Succeeded'
    patches = [(e[1], e[3]) for e in fake.writes()]
    assert patches[0] == ('/apis/csiaddons.openshift.io/v1alpha1/networkfences/nf/status',
                          dict(status=dict(result=None, message=None)))
    assert patches[1][1]['spec'] == dict(cidrs=['10.0.3.12/32', '10.0.3.14/32'])
    assert patches[1][1]['metadata']['resourceVersion']


def test_without_wait_the_status_is_left_alone():
    fake, fences = fenced_nf()
    plans, failures = plan_and_run(fences, wait=False, name='nf', fence_state='Unfenced')
    assert failures == [] and [e[1] for e in fake.writes()] == ['/apis/csiaddons.openshift.io/v1alpha1/networkfences/nf']


def test_a_conflict_is_retried_after_a_re_read():
    fake, fences = fenced_nf()
    fake.faults = [dict(method='PATCH', path='/networkfences/nf', status=409, reason='Conflict', count=1)]
    plans, failures = plan_and_run(fences, wait=False, name='nf', fence_state='Unfenced')
    assert failures == [] and plans[0].changed
    assert [e[0] for e in fake.writes()] == ['PATCH', 'PATCH']
    assert fake.get('networkfences', 'nf')['spec']['fenceState'] == 'Unfenced'


def test_persistent_conflicts_fail_clearly_and_change_nothing():
    fake, fences = fenced_nf()
    fake.faults = [dict(method='PATCH', path='/networkfences/nf', status=409, reason='Conflict', count=99)]
    plans, failures = plan_and_run(fences, wait=False, name='nf', fence_state='Unfenced')
    assert len(failures) == 1 and failures[0][1].status == 409 and not plans[0].changed
    assert 'Failed to update NetworkFence nf: 409 Conflict' in plans[0].error
    assert fake.get('networkfences', 'nf')['spec']['fenceState'] == 'Fenced'


def test_a_failed_update_after_clearing_the_status_says_so():
    fake, fences = fenced_nf()
    plans = fences.plan(build_requests(params(name='nf', fence_state='Unfenced')))
    # the status patch goes through, every spec patch fails
    fake.faults = [dict(method='PATCH', exact='/apis/csiaddons.openshift.io/v1alpha1/networkfences/nf', status=500,
                        count=99)]
    failures = fences.run(plans, wait=True, wait_timeout=5)
    assert len(failures) == 1 and 'status.result/message had already been cleared' in failures[0][1].msg
    assert fake.get('networkfences', 'nf')['spec']['fenceState'] == 'Fenced'
    assert 'result' not in fake.get('networkfences', 'nf')['status']


def test_a_lost_create_answer_is_recognised():
    fake, fences = cluster()
    fake.faults = [dict(method='POST', status=500, apply=True, count=1)]
    plans, failures = plan_and_run(fences, wait=False, name='nf', cidrs=['10.0.3.12'], fence_state='Unfenced',
                                   network_fence_class='rbd')
    assert failures == [] and plans[0].changed and len(fake.store['networkfences']) == 1
    assert [e[0] for e in fake.writes()] == ['POST']


def test_a_timed_out_create_that_did_not_apply_is_retried():
    fake, fences = cluster()
    fake.faults = [dict(method='POST', transport=True, count=1)]
    plans, failures = plan_and_run(fences, wait=False, name='nf', cidrs=['10.0.3.12'], fence_state='Unfenced',
                                   network_fence_class='rbd')
    assert failures == [] and [e[0] for e in fake.writes()] == ['POST', 'POST']


def test_a_fence_created_meanwhile_with_another_spec_is_not_overwritten():
    fake, fences = cluster()
    plans = fences.plan(build_requests(params(name='nf', cidrs=['10.0.3.12'], fence_state='Unfenced',
                                              network_fence_class='rbd')))
    fake.add('networkfences', dict(metadata=dict(name='nf'), spec=dict(
        fenceState='Fenced', cidrs=['10.9.9.9/32'], networkFenceClassName='rbd')))
    failures = fences.run(plans, wait=False)
    assert len(failures) == 1 and 'appeared meanwhile with another spec' in failures[0][1].msg


def test_absent_unfences_then_deletes():
    fake, fences = fenced_nf()
    plans, failures = plan_and_run(fences, wait=False, name='nf', state='absent')
    assert failures == [] and plans[0].action == UNFENCE_DELETE and plans[0].outcome == 'Succeeded'
    writes = [(e[0], e[1].rsplit('/', 1)[-1]) for e in fake.writes()]
    assert writes == [('PATCH', 'status'), ('PATCH', 'nf'), ('DELETE', 'nf')]
    assert fake.get('networkfences', 'nf') is None


def test_a_failed_unfence_keeps_the_fence():
    fake, fences = cluster(Controller(refuse=['10.0.3.12/32']))
    fake.add('networkfences', dict(metadata=dict(name='nf', finalizers=['csiaddons.openshift.io/network-fence']),
                                   spec=dict(fenceState='Fenced', cidrs=['10.0.3.12/32'],
                                             networkFenceClassName='rbd')),
             status=dict(result='Succeeded', message='fencing operation successful'))
    plans, failures = plan_and_run(fences, name='nf', state='absent')
    assert len(failures) == 1 and 'the fence was NOT deleted' in failures[0][1].msg
    assert 'cannot unfence 10.0.3.12/32' in failures[0][1].msg
    assert fake.get('networkfences', 'nf') is not None
    assert not any(e[0] == 'DELETE' for e in fake.writes())


def test_no_answer_times_out_with_a_hint():
    fake, fences = cluster(Controller(silent=True), connected=False)
    plans, failures = plan_and_run(fences, name='nf', cidrs=['10.0.3.12'], fence_state='Fenced',
                                   network_fence_class='rbd', wait_timeout=5)
    assert len(failures) == 1
    assert 'no result from the CSI-Addons controller after wait_timeout=5s (no Connected CSIAddonsNode for driver ' \
           'rbd.csi.ceph.com)' in failures[0][1].msg
    assert any('No CSIAddonsNode of driver rbd.csi.ceph.com is Connected (3 known)' in w for w in fences.warnings)


def test_ready_nodes_are_refused_unless_forced():
    fake, fences = cluster()
    with pytest.raises(K8sRefused) as info:
        fences.plan(build_requests(params(name='nf', cidrs=['10.0.3.8/29'], fence_state='Fenced',
                                          network_fence_class='rbd')))
    assert 'would fence Ready node(s) node-a (10.0.3.11 via 10.0.3.8/29), node-c' in info.value.msg
    assert 'Nothing was changed' in info.value.msg and fake.writes() == []
    fences = NetworkFences(api_for(fake), clock=NO_PAUSE)
    plans = fences.plan(build_requests(params(name='nf', cidrs=['10.0.3.8/29'], fence_state='Fenced',
                                              network_fence_class='rbd')), force=True)
    assert plans[0].action == CREATE and any('(force=true)' in w for w in fences.warnings)


def test_one_bad_fence_refuses_the_whole_call():
    fake, fences = cluster()
    fake.add('networkfences', dict(metadata=dict(name='old'), spec=dict(
        fenceState='Unfenced', cidrs=['10.0.3.12/32'], driver=DRIVER, secret=SECRET)))
    with pytest.raises(K8sRefused) as info:
        fences.plan(build_requests(params(network_fence_class='rbd', fence_state='Unfenced', fences=[
            dict(name='new', cidrs=['10.0.3.13']), dict(name='old'), dict(name='other', network_fence_class='nope',
                                                                          cidrs=['10.0.3.14'])])))
    msg = info.value.msg
    assert 'spec.networkFenceClassName is immutable' in msg and 'NetworkFenceClass nope' in msg
    assert fake.writes() == []


def test_deprecated_shape_warns():
    fake, fences = cluster()
    fences.plan(build_requests(params(name='nf', cidrs=['10.0.3.12'], fence_state='Unfenced', driver=DRIVER,
                                      secret=SECRET)))
    assert any('deprecated upstream' in w for w in fences.warnings)


# -- node_fences: one Unfenced fence per node, read once, planned, checked as any call

NODE_FENCES = dict(state='present', node_selector='', address_types=['InternalIP'], extra_cidrs={},
                   name_prefix='volfence-', set='default', labels={}, prune=True, prune_fenced=False)


def node_fences_params(**options):
    return params(network_fence_class='rbd', node_fences=dict(NODE_FENCES, **options))


def test_node_fences_reads_each_list_once_and_a_second_run_writes_nothing():
    fake, fences = cluster(Controller())
    requests, report = fences.node_fences_requests(node_fences_params())
    assert [r['name'] for r in requests] == ['volfence-node-a', 'volfence-node-b', 'volfence-node-c']
    assert report == dict(installed=True, nodes=3, fenced=[], kept_fenced=[], pruned=[], nodes_without_addresses=[],
                          warnings=[])
    plans = fences.plan(requests)
    assert [p.action for p in plans] == [CREATE] * 3 and fences.run(plans, wait=True, wait_sleep=1) == []
    before = len(fake.log)
    again = NetworkFences(api_for(fake), clock=NO_PAUSE)
    plans = again.plan(again.node_fences_requests(node_fences_params())[0])
    assert again.run(plans) == [] and [p.action for p in plans] == [NONE] * 3
    lists = [e[1] for e in fake.log[before:] if e[0] == 'GET' and 'limit' in e[2]]
    # one LIST each: the plan and every check of plan() use what node_fences_requests read
    assert sorted(lists) == sorted(['/apis/csiaddons.openshift.io/v1alpha1/networkfences', '/api/v1/nodes',
                                    '/apis/csiaddons.openshift.io/v1alpha1/networkfenceclasses'])
    assert all(e[0] == 'GET' for e in fake.log[before:])


def test_node_fences_keeps_the_class_check_for_unchanged_fences():
    """Nothing would be written, yet a class that is gone still refuses the call (the check is not skipped)."""
    fake, fences = cluster(Controller())
    fences.run(fences.plan(fences.node_fences_requests(node_fences_params())[0]), wait_sleep=1)
    del fake.store['networkfenceclasses'][(None, 'rbd')]
    writes = len(fake.writes())
    again = NetworkFences(api_for(fake), clock=NO_PAUSE)
    with pytest.raises(K8sRefused) as info:
        again.plan(again.node_fences_requests(node_fences_params())[0])
    assert 'NetworkFenceClass rbd (for NetworkFence volfence-node-a) does not exist' in info.value.msg
    assert len(fake.writes()) == writes


def test_node_fences_refuses_a_fence_of_another_owner_and_writes_nothing():
    fake, fences = cluster()
    fake.add('networkfences', dict(metadata=dict(name='volfence-node-b', labels={'team': 'storage'}), spec=dict(
        fenceState='Unfenced', cidrs=['10.0.3.12/32'], networkFenceClassName='rbd')))
    with pytest.raises(K8sRefused) as info:
        fences.node_fences_requests(node_fences_params())
    assert info.value.msg.startswith('NetworkFence(s) volfence-node-b already exist without the labels of this set '
                                     '(app.kubernetes.io/managed-by=volfence.csi.node_fences, '
                                     'node-fences.volfence.io/set=default)')
    assert 'nothing was changed' in info.value.msg and fake.writes() == []


def test_node_fences_without_the_crds_fails_clearly_and_check_mode_says_so():
    served = dict(SERVED)
    del served['csiaddons.openshift.io/v1alpha1']
    fake, fences = cluster(served=served)
    with pytest.raises(K8sNotInstalled) as info:
        fences.node_fences_requests(node_fences_params())
    assert 'the CSI-Addons CRDs are not installed' in info.value.msg and 'volfence.csi.csi_addons' in info.value.msg
    requests, report = fences.node_fences_requests(node_fences_params(), check_mode=True)
    assert requests == [] and report['installed'] is False and fake.writes() == []


def test_node_fences_prunes_the_fence_of_a_deleted_node_and_never_changes_a_fence_state():
    fake, fences = cluster(Controller())
    ours = {'app.kubernetes.io/managed-by': 'volfence.csi.node_fences', 'node-fences.volfence.io/set': 'default'}
    fake.add('networkfences', dict(
        metadata=dict(name='volfence-gone', labels=dict(ours, **{'node-fences.volfence.io/node': 'gone'})),
        spec=dict(fenceState='Unfenced', cidrs=['10.0.9.1/32'], networkFenceClassName='rbd')))
    fake.add('networkfences', dict(
        metadata=dict(name='volfence-node-b', labels=dict(ours, **{'node-fences.volfence.io/node': 'node-b'})),
        spec=dict(fenceState='Fenced', cidrs=['10.0.3.12/32'], networkFenceClassName='rbd')))
    requests, report = fences.node_fences_requests(node_fences_params())
    assert report['pruned'] == ['volfence-gone'] and report['fenced'] == ['volfence-node-b']
    assert all(r.get('fence_state') in (None, 'Unfenced') for r in requests)
    plans = fences.plan(requests)
    actions = dict((p.name, p.action) for p in plans)
    assert actions == {'volfence-node-a': CREATE, 'volfence-node-c': CREATE, 'volfence-gone': 'delete'}

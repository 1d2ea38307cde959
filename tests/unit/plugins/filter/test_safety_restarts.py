# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods to delete so that they mount again, and which pods replace them
(plugins/module_utils/_decisions/pod_restarts.py: restart_plan, running_replacements, stuck_pod_restart;
_kube_objects.controller_of; the filters volfence.csi.pod_restart_plan, running_replacements and
stuck_pod_restart the cleanup playbooks decide and wait with).

The properties generate pods from a ground truth (which controller owns each, its phase, whether it
is being deleted) and check the answers against an oracle written from that truth."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import derandomized
from ansible_collections.volfence.csi.plugins.filter.safety import FilterModule as SafetyFilters
from ansible_collections.volfence.csi.plugins.module_utils._decisions.pod_restarts import (
    restart_plan,
    running_replacements,
    stuck_pod_restart,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import controller_of

# deliberately repeated: each property file names its own search depth and the filters it calls
PROPERTY = derandomized(2000)
FILTERS = SafetyFilters().filters()

PHASES = ('Pending', 'Running', 'Succeeded', 'Failed', 'Unknown')
CONTROLLERS = ('rs-a', 'rs-b', 'sts-c')


def owner(uid, controller=True):
    return dict(apiVersion='apps/v1', kind='ReplicaSet', name='owner-' + uid, uid=uid, controller=controller)


def pod(name, uid, owners=(), phase='Running', namespace='shop', deleting=False):
    meta = dict(name=name, namespace=namespace, uid=uid, ownerReferences=list(owners))
    if deleting:
        meta['deletionTimestamp'] = '2026-11-25T10:00:00Z'
    return dict(metadata=meta, status=dict(phase=phase))


def test_the_replacement_of_a_deleted_pod_is_the_running_pod_of_its_controller():
    stuck = pod('web-1', 'u-1', [owner('rs-a')], phase='Pending')
    pods = [stuck,
            pod('web-2', 'u-2', [owner('rs-a')]),                     # the replacement
            pod('web-3', 'u-3', [owner('rs-a')], phase='Pending'),    # not running yet
            pod('web-4', 'u-4', [owner('rs-a')], deleting=True),      # going away
            pod('api-1', 'u-5', [owner('rs-b')]),                     # another controller
            pod('web-5', 'u-6', [owner('rs-a')], namespace='other')]  # same uid cannot be elsewhere
    assert running_replacements(pods, stuck) == ['shop/web-2']
    # a StatefulSet's replacement has the same name, another uid
    stateful = pod('db-0', 'u-7', [owner('sts-c')])
    assert running_replacements([stateful, pod('db-0', 'u-8', [owner('sts-c')])], stateful) == ['shop/db-0']
    assert running_replacements([stateful], stateful) == []


def test_a_pod_no_controller_owns_has_no_replacement():
    lone = pod('debug', 'u-1')
    assert controller_of(lone) is None
    assert running_replacements([lone, pod('other', 'u-2')], lone) == []
    assert stuck_pod_restart(lone, restart_pod=True, released=True) == dict(restart=False, reason='no controller would recreate it')


def test_the_controller_is_the_reference_marked_controller():
    references = [owner('rs-a', controller=False), owner('rs-b')]
    assert controller_of(pod('p', 'u', references))['uid'] == 'rs-b'
    assert controller_of(pod('p', 'u', [owner('rs-a', controller=False)]))['uid'] == 'rs-a'
    assert controller_of(dict(metadata=dict(name='partial'))) is None
    assert controller_of(None) is None


def test_the_filters_answer_as_the_functions():
    stuck = pod('web-1', 'u-1', [owner('rs-a')])
    pods = [stuck, pod('web-2', 'u-2', [owner('rs-a')])]
    assert FILTERS['running_replacements'](pods, stuck) == ['shop/web-2']
    assert FILTERS['running_replacements'](None, stuck) == []
    assert FILTERS['stuck_pod_restart'](stuck, True, True) == dict(restart=True, reason='its controller recreates it')
    assert FILTERS['stuck_pod_restart'](stuck, 'false', True)['restart'] is False


# --------------------------------------------------------------------------- properties

POD_TRUTH = st.fixed_dictionaries(dict(
    controller=st.sampled_from(CONTROLLERS + (None,)),
    extra_owner=st.booleans(),           # also owned (not as controller) by rs-b
    phase=st.sampled_from(PHASES),
    deleting=st.booleans(),
    other_namespace=st.booleans(),
    same_uid_as_stuck=st.booleans(),
))


def _build(truths):
    pods = []
    for i, t in enumerate(truths):
        owners = [owner(t['controller'])] if t['controller'] else []
        if t['extra_owner']:
            owners.append(owner('rs-b', controller=False))
        pods.append(pod('p-%d' % i, 'u-stuck' if t['same_uid_as_stuck'] else 'u-%d' % i, owners, t['phase'],
                        'other' if t['other_namespace'] else 'shop', t['deleting']))
    return pods


@PROPERTY
@given(stuck_controller=st.sampled_from(CONTROLLERS + (None,)), truths=st.lists(POD_TRUTH, max_size=8),
       order=st.randoms(use_true_random=False))
def test_property_replacements_are_exactly_the_running_pods_of_the_same_controller(stuck_controller, truths, order):
    stuck = pod('stuck', 'u-stuck', [owner(stuck_controller)] if stuck_controller else [], phase='Pending')
    pods = _build(truths)
    expected = sorted('%s/p-%d' % ('other' if t['other_namespace'] else 'shop', i) for i, t in enumerate(truths)
                      if stuck_controller is not None and not t['same_uid_as_stuck'] and not t['deleting']
                      and not t['other_namespace'] and t['phase'] == 'Running'
                      and (t['controller'] == stuck_controller or (t['extra_owner'] and stuck_controller == 'rs-b')))
    assert running_replacements(pods, stuck) == expected
    shuffled = list(pods + [stuck])
    order.shuffle(shuffled)
    assert running_replacements(shuffled, stuck) == expected  # the stuck pod itself never counts


@PROPERTY
@given(restart_pod=st.booleans(), released=st.booleans(), controller=st.sampled_from(CONTROLLERS + (None,)))
def test_property_a_stuck_pod_is_deleted_only_when_released_wanted_and_recreated(restart_pod, released, controller):
    stuck = pod('stuck', 'u-stuck', [owner(controller)] if controller else [], phase='Pending')
    decision = stuck_pod_restart(stuck, restart_pod=restart_pod, released=released)
    assert decision['restart'] is (restart_pod and released and controller is not None)
    assert decision['reason']


def test_restart_plan_restarts_the_affected_pods_a_controller_recreates():
    owned = pod('web-1', 'u-1', [owner('rs-a')])
    lone = pod('debug', 'u-2')
    untouched = pod('web-2', 'u-3', [owner('rs-a')])
    plan = restart_plan([owned, lone, untouched], ['u-1', 'u-2'])
    assert plan == dict(affected=[owned, lone], restart=[owned], unowned=[lone], wait=[owned])
    plan = restart_plan([owned, lone, untouched], ['u-1', 'u-2'], restart_unowned=True)
    assert plan == dict(affected=[owned, lone], restart=[owned, lone], unowned=[], wait=[owned])
    assert FILTERS['pod_restart_plan']([owned, lone], ['u-2'])['restart'] == []


@PROPERTY
@given(truths=st.lists(st.tuples(st.sampled_from(CONTROLLERS + (None,)), st.booleans()), max_size=8),
       restart_unowned=st.booleans())
def test_property_only_affected_pods_restart_and_only_recreated_ones_are_waited_for(truths, restart_unowned):
    pods = [pod('p-%d' % i, 'u-%d' % i, [owner(c)] if c else []) for i, (c, _a) in enumerate(truths)]
    affected = ['u-%d' % i for i, (_c, a) in enumerate(truths) if a]
    plan = restart_plan(pods, affected, restart_unowned=restart_unowned)
    names = dict((k, [p['metadata']['name'] for p in v]) for k, v in plan.items())
    assert names['restart'] == ['p-%d' % i for i, (c, a) in enumerate(truths) if a and (c or restart_unowned)]
    assert names['unowned'] == ['p-%d' % i for i, (c, a) in enumerate(truths) if a and not c and not restart_unowned]
    assert names['wait'] == ['p-%d' % i for i, (c, a) in enumerate(truths) if a and c]

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 35: which Events a run posts (what was done, on what, allowed by which invariant), and how they are
built and posted (events.k8s.io/v1, an Event that cannot be posted is a warning)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._incident_events import failover_events
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sApiError
from ansible_collections.volfence.csi.plugins.module_utils._k8s.events import (
    ACTIONS, check_event, incident_event, micro_time, post_events)

NOW = datetime.datetime(2026, 11, 27, 15, 0, 0, tzinfo=datetime.timezone.utc)


def done(**kw):
    base = dict(fence_method='blocklist', fence_plan=dict(by_node={'node-b': ['10.0.0.12:0/3710147553'], 'node-c': []}),
                fence_actions=[dict(entry='10.0.0.12:0/3710147553')], taint_added=['node-b'],
                deleted_pods=[dict(namespace='shop', name='db-0', uid='u-1')], removed_attachments=['csi-abc'],
                replacements_running=[dict(claim='shop/data-db-0', node='node-a', pod='shop/db-0')],
                kept_pods=[dict(pod='shop/cache-0', reason='claim(s) shop/c not made safe', invariant='I6')])
    base.update(kw)
    return failover_events(**base)


def test_a_failover_tells_each_action_on_its_object_with_the_invariant_that_allowed_it():
    events = done()
    assert [(e['what'], e['regarding'].get('namespace'), e['regarding']['name'], e['invariant']) for e in events] == [
        ('node_fenced', None, 'node-b', 'I1'), ('out_of_service_taint_added', None, 'node-b', 'I6'),
        ('pod_force_deleted', 'shop', 'db-0', 'I6'), ('volumeattachment_deleted', None, 'csi-abc', 'I6'),
        ('replacement_running', 'shop', 'data-db-0', 'I6'), ('replacement_pod_running', 'shop', 'db-0', 'I6'),
        ('failover_refused', 'shop', 'cache-0', 'I6')]
    assert '10.0.0.12:0/3710147553' in events[0]['note'] and events[2]['regarding']['uid'] == 'u-1'
    # the new pod of a StatefulSet has the old one's name: its Event names the uid it replaces, and carries none
    # itself (the module reads the running pod's)
    assert 'replaces pod shop/db-0 (uid u-1)' in events[5]['note'] and 'uid' not in events[5]['regarding']
    assert 'not made safe' in events[-1]['note']
    for event in events:
        check_event(event)   # what the module takes


def test_the_new_pod_of_a_deployment_names_the_deleted_pod_that_held_its_claim():
    events = done(deleted_pods=[dict(namespace='shop', name='web-7d9f-abcde', uid='u-9')],
                  replacements_running=[dict(claim='shop/web-data', node='node-a', pod='shop/web-7d9f-fghij')],
                  volumes=[dict(claims=['shop/other'], pods=['shop/x']),
                           dict(claims=['shop/web-data'], pods=['shop/web-7d9f-abcde'])], kept_pods=[])
    [pod_event] = [e for e in events if e['what'] == 'replacement_pod_running']
    assert pod_event['regarding'] == dict(namespace='shop', name='web-7d9f-fghij')
    assert 'replaces pod shop/web-7d9f-abcde (uid u-9)' in pod_event['note'] and 'node-a' in pod_event['note']
    # a replacement whose claim no pod deleted by this run held (Kubernetes removed it first) says only that
    alone = done(deleted_pods=[], replacements_running=[dict(claim='shop/web-data', node='node-a', pod='shop/web-1')],
                 kept_pods=[])
    [pod_event] = [e for e in alone if e['what'] == 'replacement_pod_running']
    assert 'replaces' not in pod_event['note'] and 'shop/web-data' in pod_event['note']


def test_nothing_done_nothing_told():
    assert done(check_mode=True) == []
    assert done(fence_actions=[], taint_added=[], deleted_pods=[], removed_attachments=[], replacements_running=[],
                kept_pods=[]) == []
    fenced = done(fence_method='networkfence', fence_actions=[], taint_added=[], deleted_pods=[], kept_pods=[],
                  removed_attachments=[], replacements_running=[],
                  networkfences_created=[dict(node='node-b', name='volfence-node-b')])
    assert [(e['what'], e['regarding']['name']) for e in fenced] == [('node_fenced', 'node-b')]
    assert 'volfence-node-b' in fenced[0]['note']


def test_the_event_is_what_the_api_server_takes_for_events_v1():
    event = incident_event(what='pod_force_deleted', regarding=dict(namespace='shop', name='db-0', uid='u-1'),
                           note='force-deleted', invariant='I6', report='/r.json', now=NOW, instance='ctl')
    assert event['eventTime'] == '2026-11-27T15:00:00.000000Z'   # six digits even for a zero fraction
    assert (event['reason'], event['type'], event['action'], event['reportingController']) == (
        'PodForceDeleted', 'Normal', 'ForceDelete', 'volfence.csi')
    assert event['regarding'] == dict(apiVersion='v1', kind='Pod', name='db-0', namespace='shop', uid='u-1')
    assert event['metadata']['namespace'] == 'shop'
    assert event['note'] == 'force-deleted (allowed by I6 (docs/safety.md); report: /r.json)'
    node = incident_event(what='node_fenced', regarding=dict(name='node-b', namespace='x'), note='n' * 2000,
                          now=NOW, instance='i' * 300)
    # a cluster-scoped object's Event lives in default; the limits of the API server hold
    assert node['metadata']['namespace'] == 'default' and 'namespace' not in node['regarding']
    assert len(node['note']) == 1024 and len(node['reportingInstance']) == 128
    assert micro_time(datetime.datetime(2026, 1, 1, 1, 0, 0, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))) \
        == '2026-01-01T00:00:00.000005Z'


@pytest.mark.parametrize('entry, message', [
    (dict(what='node_exploded', regarding=dict(name='x')), "what='node_exploded' is not one of"),
    (dict(what='pod_force_deleted', regarding=dict(name='db-0')), 'needs regarding.namespace'),
    (dict(what='node_fenced', regarding=dict(kind='Pod', name='x')), 'node_fenced is told on a Node, not on a Pod'),
    (dict(what='node_fenced', regarding={}), 'needs regarding.name'),
])
def test_a_bad_entry_is_named(entry, message):
    with pytest.raises(ValueError, match=message):
        check_event(entry)


class Api(object):
    """What post_events uses of KubeApi: get (with missing_ok) and create; `refuse` makes create fail."""

    def __init__(self, objects, refuse=False):
        self.objects, self.refuse, self.created, self.reads = objects, refuse, [], []

    def get(self, path, missing_ok=False):
        self.reads.append(path)
        return self.objects.get(path)

    def create(self, path, body, what=None):
        if self.refuse:
            raise K8sApiError('403 Forbidden: events.events.k8s.io is forbidden', status=403)
        self.created.append((path, body))
        return body


def test_posting_reads_the_uid_describe_needs_and_a_refusal_is_a_warning():
    api = Api({'/api/v1/nodes/node-b': dict(metadata=dict(uid='node-uid'))})
    events = [check_event(e) for e in done()]
    posted, warnings = post_events(api, events, now=NOW, instance='ctl', report='/r.json')
    assert warnings == [] and len(posted) == len(events) == len(api.created)
    path, body = api.created[0]
    assert path == '/apis/events.k8s.io/v1/namespaces/default/events' and body['regarding']['uid'] == 'node-uid'
    # the deleted pod's uid was given; only its replacement of the same name is read, for its own uid
    assert api.reads.count('/api/v1/namespaces/shop/pods/db-0') == 1
    assert [b['regarding'].get('uid') for _p, b in api.created if b['reason'] == 'PodForceDeleted'] == ['u-1']
    assert api.created[2][0] == '/apis/events.k8s.io/v1/namespaces/shop/events'
    refused = Api({}, refuse=True)
    posted, warnings = post_events(refused, events[:1], now=NOW, instance='ctl')
    assert posted == [] and len(warnings) == 1
    assert 'NodeFenced Event on Node node-b could not be posted (the action it tells of is done): 403' in warnings[0]
    checked = Api({})
    posted, warnings = post_events(checked, events, now=NOW, instance='ctl', check_mode=True)
    assert len(posted) == len(events) and checked.created == [] and checked.reads == []


def test_every_action_is_documented_in_the_module():
    from ansible_collections.volfence.csi.plugins.modules import incident_events
    for what, (reason, _type, _action, kind) in ACTIONS.items():
        assert 'V(%s) - C(%s)' % (what, reason) in incident_events.DOCUMENTATION, what


def test_docs_events_md_lists_every_reason_with_its_type_action_and_each_object_it_is_told_on():
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(root, 'docs', 'events.md')) as handle:
        rows = re.findall(r'^\| `(\w+)` \| (\w+) \| (\w+) \| (\w+) \|', handle.read(), re.M)
    assert sorted(rows) == sorted((reason, kind_of_event, action, kind)
                                  for reason, kind_of_event, action, kind in ACTIONS.values())


def test_a_cleanup_tells_each_attachment_lock_and_restart():
    from ansible_collections.volfence.csi.plugins.module_utils._incident_events import cleanup_events
    report = dict(check_mode=False, deleted=['csi-abc'], pod=dict(namespace='shop', name='db-0', uid='u-old'),
                  pod_restarted=True, pod_restart_reason='a StatefulSet recreates it',
                  replacements_running=['shop/db-0'])
    locks = [dict(item=dict(image='rbd/img-1', id='kubelet_lock_magic_node-b'),
                  broken=[dict(id='kubelet_lock_magic_node-b', locker='client.4242', address='10.0.0.12:0/1')])]
    volumes = [dict(image='rbd/img-1', pv_name='pv-1'), dict(image=None, pv_name='pv-2')]
    events = cleanup_events(report, lock_results=locks, volumes=volumes)
    assert [(e['what'], e['regarding'], e['invariant']) for e in events] == [
        ('volumeattachment_deleted', dict(name='csi-abc'), 'I5'), ('rbd_lock_broken', dict(name='pv-1'), 'I4'),
        ('pod_restarted', dict(namespace='shop', name='db-0', uid='u-old'), 'I4'),
        ('replacement_pod_running', dict(namespace='shop', name='db-0'), 'I4')]
    assert 'kubelet_lock_magic_node-b of rbd/img-1 (held by client.4242)' in events[1]['note']
    assert 'a StatefulSet recreates it' in events[2]['note']
    # the restarted pod's Event keeps its uid: its replacement of the same name is another object, told apart
    assert 'replaces pod shop/db-0 (uid u-old)' in events[3]['note']
    for event in events:
        check_event(event)
    assert cleanup_events(dict(report, check_mode=True), lock_results=locks, volumes=volumes) == []
    assert [e['what'] for e in cleanup_events(dict(report, pod_restarted=False))] == ['volumeattachment_deleted']


def test_a_recovery_tells_each_node_unfenced_and_its_taint_removed():
    from ansible_collections.volfence.csi.plugins.module_utils._incident_events import recover_events
    lifted = [dict(entry='10.0.0.12:0/1', node='node-b', added_by='failover'),
              dict(entry='10.0.0.13:0/2', node='node-c', added_by='failover')]
    events = recover_events(recovered=['node-b', 'node-c'], lifted=lifted, removed=dict(changed=True),
                            unfenced=dict(results=[dict(item='volfence-node-c', changed=True),
                                                   dict(item='volfence-node-d', changed=True)]),
                            taint_removed=['node-b'])
    assert [(e['what'], e['regarding']['name'], e['invariant']) for e in events] == [
        ('node_unfenced', 'node-b', 'I2'), ('node_unfenced', 'node-c', 'I2'),
        ('out_of_service_taint_removed', 'node-b', 'I3')]
    assert events[1]['note'].endswith('blocklist entry 10.0.0.13:0/2, NetworkFence volfence-node-c set Unfenced')
    for event in events:
        check_event(event)
    # a check run, or a removal that failed or changed nothing, tells nothing of it
    assert recover_events(recovered=['node-b'], lifted=lifted, removed=dict(changed=True), check_mode=True) == []
    assert recover_events(recovered=['node-b'], lifted=lifted, removed=dict(changed=True, failed=True)) == []
    assert recover_events(recovered=['node-b'], lifted=lifted, removed={}) == []


def test_a_fuse_recovery_tells_each_pod_its_mounts_and_its_restart():
    from ansible_collections.volfence.csi.plugins.module_utils._incident_events import fuse_events
    pod = dict(metadata=dict(namespace='shop', name='web-0', uid='u-1'))
    other = dict(metadata=dict(namespace='shop', name='batch', uid='u-2'))
    unmounted = [dict(pod_uid='u-1', volume='pvc-a'), dict(pod_uid='u-1', volume='pvc-b'), dict(pod_uid=None, volume='pv-g')]
    deleted = dict(results=[dict(item=pod, changed=True), dict(item=other, skipped=True, changed=False)])
    events = fuse_events(unmounted=unmounted, pods=[pod, other], deleted=deleted)
    told = [(e['what'], e['regarding']['name']) for e in events]
    assert told == [('dead_mount_recovered', 'web-0'), ('pod_restarted', 'web-0')]
    assert 'pvc-a, pvc-b' in events[0]['note'] and events[0]['regarding']['uid'] == 'u-1'
    for event in events:
        check_event(event)
    assert fuse_events(unmounted=unmounted, pods=[pod], deleted=deleted, check_mode=True) == []

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The incidents of the EDA event source, from watch streams replayed into IncidentTracker: a seed-000
node loss as the API server streams it, relists and broken watches, the failover budget."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.volfence.csi.plugins.module_utils._decisions.incidents import (
    WATCHED,
    IncidentTracker,
    check_settings,
)

T0 = datetime.datetime(2026, 11, 26, 3, 0, 0, tzinfo=datetime.timezone.utc)


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def stamp(seconds):
    return at(seconds).strftime('%Y-%m-%dT%H:%M:%SZ')


def node(name, ready='True', since=0, boot='boot-1', labels=None, annotations=None, ip='10.0.0.2'):
    return {'kind': 'Node', 'metadata': {'name': name, 'labels': dict(labels or {}),
                                         'annotations': dict(annotations or {})},
            'status': {'addresses': [{'type': 'InternalIP', 'address': ip}], 'nodeInfo': {'bootID': boot},
                       'conditions': [{'type': 'Ready', 'status': ready, 'reason': 'NodeStatusUnknown',
                                       'lastHeartbeatTime': stamp(since), 'lastTransitionTime': stamp(since)}]}}


def lease(name, renewed):
    return {'kind': 'Lease', 'metadata': {'name': name, 'namespace': 'kube-node-lease'},
            'spec': {'holderIdentity': name, 'renewTime': stamp(renewed)}}


def pod(name, node_name, claim, created=0, waiting='ContainerCreating', uid=None):
    return {'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'app', 'uid': uid or 'uid-' + name,
                                        'creationTimestamp': stamp(created)},
            'spec': {'nodeName': node_name, 'volumes': [{'name': 'd', 'persistentVolumeClaim': {'claimName': claim}}]},
            'status': {'phase': 'Pending' if waiting else 'Running',
                       'containerStatuses': [{'state': {'waiting': {'reason': waiting}} if waiting else {'running': {}}}]}}


def failed_mount(pod_obj, message):
    meta = pod_obj['metadata']
    return {'kind': 'Event', 'metadata': {'name': meta['name'] + '.1', 'namespace': 'app'}, 'reason': 'FailedMount',
            'involvedObject': {'kind': 'Pod', 'name': meta['name'], 'namespace': 'app', 'uid': meta['uid']},
            'message': message}


def pv(name, claim, image):
    return {'kind': 'PersistentVolume', 'metadata': {'name': name},
            'spec': {'accessModes': ['ReadWriteOnce'], 'claimRef': {'namespace': 'app', 'name': claim},
                     'csi': {'driver': 'rbd.csi.ceph.com', 'volumeHandle': '0001-' + image,
                             'volumeAttributes': {'pool': 'rbd', 'imageName': image}}}}


def pvc(name, volume):
    return {'kind': 'PersistentVolumeClaim', 'metadata': {'name': name, 'namespace': 'app'},
            'spec': {'volumeName': volume, 'accessModes': ['ReadWriteOnce']}, 'status': {'phase': 'Bound'}}


def synced(tracker, **lists):
    """Every kind listed (the kinds not given as empty lists)."""
    for kind in WATCHED:
        tracker.update(kind, 'RELIST', lists.get(kind, []))
    return tracker


STILL_USED = ('MountVolume.MountDevice failed for volume "pv-1" : rpc error: code = Internal desc = rbd image '
              'rbd/csi-vol-1 is still being used')


def seed_000_stream():
    """seed-000 as the source sees it: node-b Ready with a pod; node-b's kubelet dies (Lease no longer
    renewed, the node controller sets Ready=Unknown after 40 s); the Deployment's replacement on
    node-c hangs with "is still being used"."""
    old = pod('web-1', 'node-b', 'data', created=-600, waiting=None)
    new = pod('web-2', 'node-c', 'data', created=60)
    lists = dict(Node=[node('node-b'), node('node-c', ip='10.0.0.3')], Lease=[lease('node-b', 0), lease('node-c', 0)],
                 Pod=[old], PersistentVolumeClaim=[pvc('data', 'pv-1')], PersistentVolume=[pv('pv-1', 'data', 'csi-vol-1')])
    stream = [
        (10, 'Lease', 'MODIFIED', lease('node-c', 10)),
        (40, 'Node', 'MODIFIED', node('node-b', ready='Unknown', since=40)),
        (60, 'Pod', 'ADDED', new),
        (62, 'Event', 'ADDED', failed_mount(new, STILL_USED)),
        (70, 'Lease', 'MODIFIED', lease('node-c', 70)),
    ]
    return lists, stream


def replay(tracker, lists, stream, until, step=1):
    """The incidents the source emits from t=0 to `until`, evaluating every `step` seconds as it does."""
    synced(tracker, **lists)
    emitted, pending = [], list(stream)
    moment = 0
    while moment <= until:
        while pending and pending[0][0] <= moment:
            _t, kind, etype, obj = pending.pop(0)
            tracker.update(kind, etype, obj)
        emitted += [(moment, i) for i in tracker.incidents(at(moment))]
        moment += step
    return emitted


def test_seed_000_node_b_is_lost_once_its_lease_is_older_than_node_lost_after():
    lists, stream = seed_000_stream()
    emitted = replay(IncidentTracker(stuck_after=60, node_lost_after=120), lists, stream, until=200)
    lost = [(t, i) for t, i in emitted if i['kind'] == 'node-lost']
    assert [(t, i['node']) for t, i in lost] == [(120, 'node-b')]
    incident = lost[0][1]
    assert incident['failover'] == {'allowed': True, 'reason': incident['failover']['reason']}
    assert incident['pods'] == ['app/web-1'] and incident['claims'] == ['app/data']
    assert incident['next'] == {'playbook': 'volfence.csi.node_failover', 'extra_vars': {'failed_node': 'node-b'}}
    assert incident['id'] == 'node-lost:node-b:%s' % stamp(0)


def test_seed_000_replacement_is_a_stale_rbd_watcher_once_stuck_for_stuck_after():
    lists, stream = seed_000_stream()
    emitted = replay(IncidentTracker(stuck_after=60, node_lost_after=120), lists, stream, until=200)
    stuck = [(t, i) for t, i in emitted if i['kind'] == 'stale-rbd-watcher']
    assert [(t, i['pods']) for t, i in stuck] == [(120, ['app/web-2'])]
    assert stuck[0][1]['node'] == 'node-c'
    assert any('is still being used' in e for e in stuck[0][1]['evidence'])


def test_a_node_that_is_ready_again_before_node_lost_after_is_never_lost():
    lists, stream = seed_000_stream()
    stream = [s for s in stream if s[1] != 'Pod' and s[1] != 'Event']
    stream += [(100, 'Lease', 'MODIFIED', lease('node-b', 100)), (101, 'Node', 'MODIFIED', node('node-b', since=101))]
    emitted = replay(IncidentTracker(node_lost_after=120), lists, sorted(stream, key=lambda s: s[0]), until=400)
    assert emitted == []


def test_nothing_is_decided_while_a_watch_is_broken_or_not_listed_yet():
    lists, stream = seed_000_stream()
    tracker = IncidentTracker(node_lost_after=120)
    tracker.update('Node', 'RELIST', [node('node-b', ready='Unknown')])
    tracker.update('Lease', 'RELIST', [lease('node-b', 0)])
    assert tracker.incidents(at(300)) == []            # the other kinds are not listed yet
    synced(tracker, Node=[node('node-b', ready='Unknown')], Lease=[lease('node-b', 0)])
    tracker.update('Lease', 'BROKEN', 'connection reset')
    assert tracker.incidents(at(300)) == []            # the Lease seen may be old
    tracker.update('Lease', 'RELIST', [lease('node-b', 290)])
    assert tracker.incidents(at(300)) == []            # renewed while the watch was broken: alive
    assert [i['node'] for i in tracker.incidents(at(411))] == ['node-b']


def test_a_relist_after_410_repeats_nothing_and_a_new_tracker_given_the_ids_neither():
    lists, stream = seed_000_stream()
    tracker = IncidentTracker(stuck_after=60, node_lost_after=120)
    first = replay(tracker, lists, stream, until=200)
    assert len(first) == 2
    objects = dict((kind, tracker.items(kind)) for kind in WATCHED)
    for kind in WATCHED:
        tracker.update(kind, 'BROKEN', 'watch expired (410 Gone)')
        tracker.update(kind, 'RELIST', objects[kind])
    assert tracker.incidents(at(300)) == []
    again = synced(IncidentTracker(stuck_after=60, node_lost_after=120, emitted=tracker.emitted), **objects)
    assert again.incidents(at(300)) == []


def test_the_same_node_lost_again_after_coming_back_is_a_new_incident():
    tracker = synced(IncidentTracker(node_lost_after=120, max_failovers=5),
                     Node=[node('node-b', ready='Unknown')], Lease=[lease('node-b', 0)])
    assert len(tracker.incidents(at(130))) == 1
    tracker.update('Lease', 'MODIFIED', lease('node-b', 500))
    tracker.update('Node', 'MODIFIED', node('node-b', since=500))
    assert tracker.incidents(at(600)) == []
    tracker.update('Node', 'MODIFIED', node('node-b', ready='Unknown', since=640))
    again = tracker.incidents(at(700))
    assert [i['id'] for i in again] == ['node-lost:node-b:%s' % stamp(500)]


def test_the_failover_budget_lets_the_oldest_through_and_holds_the_rest():
    nodes = [node('rack-a', ready='Unknown'), node('rack-b', ready='Unknown'), node('rack-c', ready='Unknown'),
             node('pinned', ready='Unknown', labels={'volfence.csi/no-auto-failover': 'true'}),
             node('snr', ready='Unknown', labels={'remediation.medik8s.io/exclude-from-remediation': ''})]
    leases = [lease('rack-a', -100), lease('rack-b', -300), lease('rack-c', -200), lease('pinned', -900),
              lease('snr', -900)]
    tracker = synced(IncidentTracker(node_lost_after=120, max_failovers=2, failover_window=600),
                     Node=nodes, Lease=leases)
    found = dict((i['node'], i['failover']) for i in tracker.incidents(at(60)))
    assert found['rack-b']['allowed'] and found['rack-c']['allowed']
    assert not found['rack-a']['allowed'] and 'max_failovers=2' in found['rack-a']['reason']
    assert not found['pinned']['allowed'] and 'volfence.csi/no-auto-failover' in found['pinned']['reason']
    assert not found['snr']['allowed'] and 'exclude-from-remediation' in found['snr']['reason']
    # after the window, a new outage is let through again
    tracker.update('Node', 'ADDED', node('rack-d', ready='Unknown'))
    tracker.update('Lease', 'ADDED', lease('rack-d', 500))
    assert [(i['node'], i['failover']['allowed']) for i in tracker.incidents(at(700))] == [('rack-d', True)]


def test_a_detach_error_and_a_node_back_after_a_failover():
    marker = '{"boot_id": "boot-1", "fenced_at": "%s", "blocklist": ["10.0.0.2:0/1"], "networkfences": []}' % stamp(0)
    va = {'kind': 'VolumeAttachment', 'metadata': {'name': 'csi-1', 'uid': 'va-1', 'deletionTimestamp': stamp(0)},
          'spec': {'nodeName': 'node-b', 'source': {'persistentVolumeName': 'pv-1'}},
          'status': {'attached': True, 'detachError': {'message': 'rpc error: node unreachable'}}}
    waiting = pod('web-2', 'node-c', 'data', created=0)
    tracker = synced(IncidentTracker(stuck_after=60), Node=[node('node-b', boot='boot-2',
                                                                 annotations={'volfence.csi/failover': marker})],
                     Lease=[lease('node-b', 100)], VolumeAttachment=[va], Pod=[waiting],
                     PersistentVolume=[pv('pv-1', 'data', 'csi-vol-1')], PersistentVolumeClaim=[pvc('data', 'pv-1')])
    found = dict((i['kind'], i) for i in tracker.incidents(at(100)))
    # the waiting pod is itself stuck on the attachment elsewhere: diagnose's stale-volumeattachment
    assert set(found) == {'volumeattachment-detach-error', 'node-back', 'stale-volumeattachment'}
    assert found['stale-volumeattachment']['pods'] == ['app/web-2']
    assert found['node-back']['next'] == {'playbook': 'volfence.csi.node_recover', 'extra_vars': {'node': 'node-b'}}
    detach = found['volumeattachment-detach-error']
    assert detach['claims'] == ['app/data'] and detach['pods'] == ['app/web-2']
    assert detach['next']['extra_vars'] == {'pod_namespace': 'app', 'pod_name': 'web-2'}


@pytest.mark.parametrize('args, message', [
    (dict(stuck_after=-1), 'stuck_after must be between 0 and 86400, not -1'),
    (dict(node_lost_after='2m'), "node_lost_after must be a whole number, not '2m'"),
    (dict(max_failovers=True), 'max_failovers must be a whole number, not True'),
    (dict(failover_window=1.5), 'failover_window must be a whole number, not 1.5'),
    (dict(exclude_labels=[1]), 'exclude_labels must be a list of label keys'),
])
def test_bad_settings_are_named(args, message):
    values = dict(stuck_after=60, node_lost_after=120, max_failovers=1, failover_window=600, exclude_labels=[])
    values.update(args)
    with pytest.raises(ValueError) as error:
        check_settings(**values)
    assert message in str(error.value)


OUTAGES = st.lists(st.tuples(st.sampled_from(['n1', 'n2', 'n3', 'n4']), st.integers(0, 3000),
                             st.booleans()), max_size=12)


@settings(max_examples=200, deadline=None)
@given(outages=OUTAGES, max_failovers=st.integers(0, 3), window=st.integers(60, 1200),
       relists=st.sets(st.integers(0, 3200), max_size=5))
def test_no_incident_twice_and_the_budget_never_exceeded(outages, max_failovers, window, relists):
    """Whatever the nodes do (an outage: a node stops renewing its Lease at t, and maybe comes back), and
    whenever the watches break and list again: every id is emitted once, and no window of `window`
    seconds lets more than max_failovers failovers through."""
    tracker = IncidentTracker(node_lost_after=120, max_failovers=max_failovers, failover_window=window)
    state = dict((n, (node(n), lease(n, 0))) for n in ('n1', 'n2', 'n3', 'n4'))
    events = sorted(outages, key=lambda o: o[1])
    synced(tracker, Node=[v[0] for v in state.values()], Lease=[v[1] for v in state.values()])
    seen, allowed = [], []
    for moment in range(0, 3400, 20):
        # healthy nodes renew their Lease; a node in an outage does not
        for name, (node_obj, lease_obj) in list(state.items()):
            if node_ready(node_obj):
                state[name] = (node_obj, lease(name, moment))
        while events and events[0][1] <= moment:
            name, start, back = events.pop(0)
            if node_ready(state[name][0]):
                state[name] = (node(name, ready='Unknown', since=start), state[name][1])
            elif back:
                state[name] = (node(name, since=start), lease(name, start))
        for name, (node_obj, lease_obj) in state.items():
            tracker.update('Node', 'MODIFIED', node_obj)
            tracker.update('Lease', 'MODIFIED', lease_obj)
        if moment in relists or moment - 10 in relists:
            tracker.update('Node', 'BROKEN', 'gone')
            tracker.update('Node', 'RELIST', [v[0] for v in state.values()])
        for incident in tracker.incidents(at(moment)):
            seen.append(incident['id'])
            if incident['failover']['allowed']:
                allowed.append(moment)
    assert len(seen) == len(set(seen))
    for moment in allowed:
        assert len([t for t in allowed if moment <= t < moment + window]) <= max_failovers


def node_ready(node_obj):
    return node_obj['status']['conditions'][0]['status'] == 'True'


# --------------------------------------------------------------------------- recorded streams

RECORDINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'watch-streams')


def replay_recording(name, tracker, tick=1.0):
    """(seconds since the recording's start, incident) as the source would have told them: every update
    applied at its recorded time, the tracker asked after each update and every `tick` seconds between."""
    with open(os.path.join(RECORDINGS, name)) as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    started = datetime.datetime.fromisoformat(lines[0]['started'])
    told, moment = [], 0.0
    for entry in lines[1:]:
        while moment < entry['t']:
            told += [(moment, i) for i in tracker.incidents(started + datetime.timedelta(seconds=moment))]
            moment += tick
        tracker.update(entry['kind'], entry['type'], entry['payload'])
        told += [(entry['t'], i) for i in tracker.incidents(started + datetime.timedelta(seconds=entry['t']))]
    return told


def test_recorded_stale_rbd_watcher_on_the_lab():
    """stale-rbd-watcher as the lab streamed it (scripts/record_watch_stream.py during `volfence_lab scenario
    stale-rbd-watcher`): node-b's kubelet stops; its pod's replacement on node-a first waits on the
    attachment node-b keeps (Multi-Attach), then on node-b's RBD client (still being used)."""
    told = replay_recording('stale-rbd-watcher-lab.jsonl', IncidentTracker(stuck_after=5, node_lost_after=3))
    assert [(i['kind'], i['node']) for _t, i in told] == [
        ('node-lost', 'node-b'), ('stale-volumeattachment', 'node-a'), ('stale-rbd-watcher', 'node-a')]
    lost, attached, watched = [i for _t, i in told]
    assert lost['failover']['allowed'] is True
    assert lost['pods'] == ['default/nginx-c4387b8666-qcrjl'] and lost['claims'] == ['default/pvc-test']
    assert watched['pods'] == attached['pods'] == ['default/nginx-c4387b8666-6msx6']
    assert any('is still being used' in line for line in watched['evidence'])
    assert any('on node-b (node not Ready or gone)' in line for line in attached['evidence'])
    # the node is lost as soon as it is not Ready with its Lease 3 s old, before its pod is replaced
    assert told[0][0] < told[1][0]


def test_recorded_stream_with_the_defaults_and_relists_tells_nothing_early_and_nothing_twice():
    # 60 s of lab time: with the defaults (Lease 120 s, stuck 60 s) nothing is due yet
    assert replay_recording('stale-rbd-watcher-lab.jsonl', IncidentTracker()) == []
    tracker = IncidentTracker(stuck_after=5, node_lost_after=3)
    told = replay_recording('stale-rbd-watcher-lab.jsonl', tracker)
    objects = dict((kind, tracker.items(kind)) for kind in WATCHED)
    for kind in WATCHED:   # every watch expires and lists again: what it lists was told already
        tracker.update(kind, 'BROKEN', '410 Gone')
        tracker.update(kind, 'RELIST', objects[kind])
    assert tracker.incidents(datetime.datetime.now(datetime.timezone.utc)) == [] and len(told) == 3

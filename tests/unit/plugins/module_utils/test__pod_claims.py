# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A pod's claims are read in one place (_kube_objects.pod_claims): persistentVolumeClaim volumes and
generic ephemeral volumes (the claim Kubernetes makes for one is named <pod>-<volume>). Every reader
sees the same claims: the failover's volumes and release, diagnose, the event source's incidents and
the VolumeAttachment assessment; a stuck pod whose RBD volume is a generic ephemeral volume is found
by each."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    pod_claim_refs,
    pod_claims,
    volume_claim,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import diagnose, pod_volumes
from ansible_collections.volfence.csi.plugins.module_utils._decisions.incidents import WATCHED, IncidentTracker
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import failover_volumes
from ansible_collections.volfence.csi.plugins.module_utils._decisions.release import release_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import claim_users

T0 = datetime.datetime(2026, 11, 26, 3, 0, 0, tzinfo=datetime.timezone.utc)
STILL_USED = ('MountVolume.MountDevice failed for volume "pv-1" : rpc error: code = Internal desc = rbd image '
              'rbd/csi-vol-1 is still being used')
EPHEMERAL = {'volumeClaimTemplate': {'spec': {'accessModes': ['ReadWriteOnce'], 'storageClassName': 'rbd',
                                              'resources': {'requests': {'storage': '1Gi'}}}}}


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def stamp(seconds):
    return at(seconds).strftime('%Y-%m-%dT%H:%M:%SZ')


def node(name, ip, ready='True', since=0):
    return {'kind': 'Node', 'metadata': {'name': name, 'labels': {}, 'annotations': {}},
            'status': {'addresses': [{'type': 'InternalIP', 'address': ip}], 'nodeInfo': {'bootID': 'boot-1'},
                       'conditions': [{'type': 'Ready', 'status': ready, 'lastHeartbeatTime': stamp(since),
                                       'lastTransitionTime': stamp(since)}]}}


def lease(name, renewed):
    return {'kind': 'Lease', 'metadata': {'name': name, 'namespace': 'kube-node-lease'},
            'spec': {'holderIdentity': name, 'renewTime': stamp(renewed)}}


def pod(name, node_name, volumes, created=0, running=False):
    """A pod of namespace app; `volumes` as its spec lists them."""
    state = {'running': {}} if running else {'waiting': {'reason': 'ContainerCreating'}}
    return {'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'app', 'uid': 'uid-' + name,
                                        'creationTimestamp': stamp(created),
                                        'ownerReferences': [{'kind': 'StatefulSet', 'name': 'web', 'uid': 'sts-1',
                                                             'controller': True}]},
            'spec': {'nodeName': node_name, 'volumes': volumes},
            'status': {'phase': 'Running' if running else 'Pending', 'containerStatuses': [{'name': 'c', 'state': state}]}}


def ephemeral(name='data'):
    return {'name': name, 'ephemeral': EPHEMERAL}


def claim(name, claim_name):
    return {'name': name, 'persistentVolumeClaim': {'claimName': claim_name}}


def pvc(name, volume):
    return {'kind': 'PersistentVolumeClaim', 'metadata': {'name': name, 'namespace': 'app'},
            'spec': {'volumeName': volume, 'accessModes': ['ReadWriteOnce']}, 'status': {'phase': 'Bound'}}


def rbd_pv(name, image):
    return {'kind': 'PersistentVolume', 'metadata': {'name': name},
            'spec': {'accessModes': ['ReadWriteOnce'],
                     'csi': {'driver': 'rbd.csi.ceph.com', 'volumeHandle': '0001-' + image,
                             'volumeAttributes': {'pool': 'rbd', 'imageName': image}}}}


def still_used(pod_obj):
    meta = pod_obj['metadata']
    return {'kind': 'Event', 'metadata': {'name': meta['name'] + '.1', 'namespace': 'app'}, 'reason': 'FailedMount',
            'involvedObject': {'kind': 'Pod', 'name': meta['name'], 'namespace': 'app', 'uid': meta['uid']},
            'message': STILL_USED}


def test_a_pods_claims_are_its_claim_volumes_and_its_generic_ephemeral_volumes_in_order():
    web = pod('web-0', 'node-a', [claim('logs', 'logs-web-0'), {'name': 'tmp', 'emptyDir': {}}, ephemeral('data')])
    assert pod_claims(web) == ['logs-web-0', 'web-0-data']
    assert pod_claim_refs(web) == ['app/logs-web-0', 'app/web-0-data']
    assert volume_claim('web-0', ephemeral('scratch')) == 'web-0-scratch'
    assert volume_claim('web-0', {'name': 'tmp', 'emptyDir': {}}) is None


def test_a_partial_pod_has_the_claims_that_can_be_read_and_never_raises():
    assert pod_claims(None) == [] and pod_claims({}) == [] and pod_claims({'spec': {'volumes': None}}) == []
    nameless = {'spec': {'volumes': [claim('a', 'claim-a'), ephemeral('data'), 'not a volume', None]}}
    assert pod_claims(nameless) == ['claim-a']  # an ephemeral claim's name needs the pod's name


def test_every_reader_of_a_pods_claims_sees_the_generic_ephemeral_claim():
    web = pod('web-0', 'node-b', [ephemeral('data')])
    pvcs, pvs = [pvc('web-0-data', 'pv-1')], [rbd_pv('pv-1', 'csi-vol-1')]
    assert [v['pvc'] for v in pod_volumes(web, pvcs, pvs)] == ['web-0-data']
    assert claim_users([web]) == {('app', 'web-0-data'): ['app/web-0']}
    [volume] = failover_volumes('node-b', pods=[web], pvcs=pvcs, pvs=pvs, attachments=[])
    assert (volume['pv'], volume['image'], volume['claims']) == ('pv-1', 'rbd/csi-vol-1', ['app/web-0-data'])


def test_the_failover_releases_a_pod_whose_rbd_volume_is_a_generic_ephemeral_volume_once_fenced():
    web = pod('web-0', 'node-b', [ephemeral('data')])
    volumes = failover_volumes('node-b', pods=[web], pvcs=[pvc('web-0-data', 'pv-1')], pvs=[rbd_pv('pv-1', 'csi-vol-1')],
                               attachments=[])
    images = [{'spec': 'rbd/csi-vol-1', 'watchers': [{'address': '10.0.0.12:0/1'}]}]
    fence = {'fence': ['10.0.0.12:0/1'], 'kept': [], 'by_image': {'rbd/csi-vol-1': ['10.0.0.12:0/1']}, 'refused': None}
    plan = release_plan('node-b', volumes, [web], images=images, fence=fence, watchers_after=[])
    assert [p['name'] for p in plan['delete_pods']] == ['web-0'] and plan['wait_claims'] == ['app/web-0-data']


def test_diagnose_finds_a_stuck_pod_whose_rbd_volume_is_a_generic_ephemeral_volume():
    nodes = [node('node-a', '10.0.0.11'), node('node-b', '10.0.0.12', ready='Unknown'), node('node-c', '10.0.0.13')]
    stuck = pod('web-0', 'node-c', [ephemeral('data')], created=-600)
    watchers = {'rbd/csi-vol-1': [{'address': '10.0.0.12:0/3847961205', 'ip': '10.0.0.12'}]}
    [found] = diagnose([stuck], events=[], pvcs=[pvc('web-0-data', 'pv-1')], pvs=[rbd_pv('pv-1', 'csi-vol-1')], vas=[],
                       nodes=nodes, watchers=watchers, now=at(0))
    assert found['incident'] == 'stale-rbd-watcher'
    assert found['target'] == {'failed_node': 'node-b', 'watchers': ['10.0.0.12:0/3847961205']}


def test_the_event_source_finds_a_stuck_pod_whose_rbd_volume_is_a_generic_ephemeral_volume():
    old = pod('web-1', 'node-b', [ephemeral('data')], created=-600, running=True)
    new = pod('web-2', 'node-c', [ephemeral('data')], created=60)
    tracker = IncidentTracker(stuck_after=60, node_lost_after=120)
    lists = dict(Node=[node('node-b', '10.0.0.12', ready='Unknown', since=-300), node('node-c', '10.0.0.13')],
                 Lease=[lease('node-b', -300), lease('node-c', 180)], Pod=[old, new], Event=[still_used(new)],
                 PersistentVolumeClaim=[pvc('web-1-data', 'pv-0'), pvc('web-2-data', 'pv-1')],
                 PersistentVolume=[rbd_pv('pv-0', 'csi-vol-0'), rbd_pv('pv-1', 'csi-vol-1')])
    for kind in WATCHED:
        tracker.update(kind, 'RELIST', lists.get(kind, []))
    incidents = dict((i['kind'], i) for i in tracker.incidents(at(180)))
    assert incidents['stale-rbd-watcher']['pods'] == ['app/web-2']
    assert incidents['stale-rbd-watcher']['claims'] == ['app/web-2-data']
    assert incidents['node-lost']['claims'] == ['app/web-1-data']

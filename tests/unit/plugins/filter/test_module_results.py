# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters take the Ceph modules' answers as the playbooks register them (rbd_watchers_info's `images`,
the `results` of rbd_lock looped over image specs), so that no play reshapes them in Jinja; they
decide exactly as with the reshaped mapping or list."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.diagnose import FilterModule as DiagnoseFilters
from ansible_collections.volfence.csi.plugins.filter.safety import FilterModule as SafetyFilters

SAFETY = SafetyFilters().filters()
DIAGNOSE = DiagnoseFilters().filters()

LONG_AGO = '2026-01-01T00:00:00Z'


def node(name, ip, ready):
    return dict(metadata=dict(name=name),
                status=dict(addresses=[dict(type='InternalIP', address=ip)],
                            conditions=[dict(type='Ready', status='True' if ready else 'Unknown',
                                             lastTransitionTime=LONG_AGO)]))


NODES = [node('node-a', '10.0.0.11', True), node('node-b', '10.0.0.12', False)]
LOCK_B = dict(id='kubelet_lock_magic_node-b', locker='client.24128', address='10.0.0.12:0/1', node='node-b')
LOCK_A = dict(id='kubelet_lock_magic_node-a', locker='client.4100', address='10.0.0.11:0/7', node='node-a')


def lock_results():
    """What `register` keeps of rbd_lock looped over two images, one of them skipped."""
    return [dict(item='mioss/index-api-image', locks=[LOCK_B, LOCK_A], changed=False),
            dict(item='mioss/empty-image', locks=[], changed=False),
            dict(item='mioss/skipped-image', skipped=True)]


def test_lock_break_plan_takes_the_loop_results_as_the_locks_with_their_image():
    listed = [dict(LOCK_B, image='mioss/index-api-image'), dict(LOCK_A, image='mioss/index-api-image')]
    from_results = SAFETY['lock_break_plan'](lock_results(), pod_node='node-a', nodes=NODES)
    assert from_results == SAFETY['lock_break_plan'](listed, pod_node='node-a', nodes=NODES)
    assert [(lock['id'], lock['image']) for lock in from_results['break']] == [
        ('kubelet_lock_magic_node-b', 'mioss/index-api-image')]
    assert [lock['id'] for lock in from_results['kept']] == ['kubelet_lock_magic_node-a']
    assert SAFETY['lock_break_plan']([], pod_node='node-a', nodes=NODES) == dict(kept=[], **{'break': []})


def stuck_pod():
    return dict(metadata=dict(name='index-api-1', namespace='default', uid='uid-1', creationTimestamp=LONG_AGO),
                spec=dict(nodeName='node-a', volumes=[dict(name='v', persistentVolumeClaim=dict(claimName='claim'))]),
                status=dict(phase='Pending', containerStatuses=[
                    dict(name='c', state=dict(waiting=dict(reason='ContainerCreating')))]))


PVCS = [dict(metadata=dict(name='claim', namespace='default'), spec=dict(volumeName='pv'))]
PVS = [dict(metadata=dict(name='pv'), spec=dict(rbd=dict(pool='mioss', image='index-api-image')))]


def test_diagnose_takes_the_lock_results_as_the_mapping_by_image():
    by_image = dict(('mioss/' + i, locks) for i, locks in (('index-api-image', [LOCK_B, LOCK_A]), ('empty-image', [])))
    [from_results] = DIAGNOSE['diagnose_stuck_pods']([stuck_pod()], pvcs=PVCS, pvs=PVS, nodes=NODES, locks=lock_results())
    [from_mapping] = DIAGNOSE['diagnose_stuck_pods']([stuck_pod()], pvcs=PVCS, pvs=PVS, nodes=NODES, locks=by_image)
    assert from_results == from_mapping
    assert from_results['incident'] == 'stale-rbd-lock'
    assert from_results['target']['locks'] == ['kubelet_lock_magic_node-b']


def test_diagnose_takes_rbd_watchers_images_as_the_mapping_by_image():
    pvs = [dict(metadata=dict(name='pv'), spec=dict(csi=dict(
        driver='rbd.csi.ceph.com', volumeHandle='0001-0003-lab-0000000000000002-x',
        volumeAttributes=dict(pool='rbd', imageName='csi-vol-1'))))]
    watcher = dict(address='10.0.0.12:0/3847961205', ip='10.0.0.12')
    images = [dict(spec='rbd/csi-vol-1', watchers=[watcher]), dict(spec='rbd/other', watchers=[])]
    event = dict(involvedObject=dict(kind='Pod', name='index-api-1', uid='uid-1'), reason='FailedMount',
                 message='MountVolume.MountDevice failed ... rbd image rbd/csi-vol-1 is still being used')
    [from_images] = DIAGNOSE['diagnose_stuck_pods']([stuck_pod()], events=[event], pvcs=PVCS, pvs=pvs, nodes=NODES,
                                                    watchers=images)
    [from_mapping] = DIAGNOSE['diagnose_stuck_pods']([stuck_pod()], events=[event], pvcs=PVCS, pvs=pvs, nodes=NODES,
                                                     watchers={'rbd/csi-vol-1': [watcher], 'rbd/other': []})
    assert from_images == from_mapping
    assert from_images['incident'] == 'stale-rbd-watcher' and from_images['target']['failed_node'] == 'node-b'


def test_diagnose_refuses_watchers_that_are_neither_a_mapping_nor_a_list():
    with pytest.raises(AnsibleFilterError, match='watchers must be a mapping or a list'):
        DIAGNOSE['diagnose_stuck_pods']([stuck_pod()], watchers='rbd/csi-vol-1')

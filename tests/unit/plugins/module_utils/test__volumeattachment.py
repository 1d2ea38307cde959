# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import (
    DELETE,
    NODE_MISSING,
    NODE_NOT_READY,
    NODE_OUT_OF_SERVICE,
    REMOVE_FINALIZER,
    SKIP,
    WAIT,
    assess,
    attacher_finalizer,
    cleanup_plan,
    kubelet_volume_names,
    volume_in_use,
    attachment_name,
    claim_users,
    collision_version_affected,
    has_attachment_name_shape,
    matches,
    plan_delete,
    pods_using,
    sanitize_driver_name,
    unique_volume_name,
)

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import NOW
DRIVER = 'rbd.csi.ceph.com'
HANDLE = '0001-0003-lab-0000000000000002-6f2c1e3a-c7c5-11ef-9a1b-0242ac120002'
# The Dell csi-unity volume of stale-volumeattachment: <driver>^<handle> is 68 characters and starts with csi-.
UNITY = 'csi-unity.dellemc.com'
UNITY_HANDLE = 'csiunity-0123456789-iSCSI-APM0012345678-sv_42x'


def pv(name='pv-1', driver=DRIVER, handle=HANDLE, claim=('default', 'data')):
    spec = dict(csi=dict(driver=driver, volumeHandle=handle))
    if claim:
        spec['claimRef'] = dict(namespace=claim[0], name=claim[1])
    return dict(metadata=dict(name=name), spec=spec)


def va(node='node-b', pv_name='pv-1', attacher=DRIVER, name=None, handle=HANDLE, deleting=None, finalizers=None,
       attached=True):
    meta = dict(name=name or attachment_name(handle, attacher, node), uid='u-1', resourceVersion='7',
                finalizers=finalizers if finalizers is not None else [attacher_finalizer(attacher)])
    if deleting:
        meta['deletionTimestamp'] = deleting
    return dict(metadata=meta, spec=dict(attacher=attacher, nodeName=node, source=dict(persistentVolumeName=pv_name)),
                status=dict(attached=attached))


def node(name='node-b', ready='True', since='2026-11-21T05:50:00Z', taints=(), in_use=None):
    obj = dict(metadata=dict(name=name), spec=dict(taints=list(taints)),
               status=dict(conditions=[dict(type='Ready', status=ready, lastTransitionTime=since)]))
    if in_use is not None:
        obj['status']['volumesInUse'] = list(in_use)
    return obj


def pod(name='web-0', namespace='default', claim='data', phase='Running', ephemeral=False):
    volumes = [dict(name='cache', emptyDir={})]
    if ephemeral:
        volumes.append(dict(name='scratch', ephemeral=dict(volumeClaimTemplate={})))
    else:
        volumes.append(dict(name='data', persistentVolumeClaim=dict(claimName=claim)))
    return dict(metadata=dict(name=name, namespace=namespace), spec=dict(nodeName='node-b', volumes=volumes),
                status=dict(phase=phase))


def run(va_obj=None, pv_obj='default', node_obj='default', pods=None, version=(1, 30, 2), grace=300):
    return assess(va_obj or va(), pv() if pv_obj == 'default' else pv_obj, pv_known=True,
                  node=node() if node_obj == 'default' else node_obj, pods=[pod()] if pods is None else pods, cluster_version=version, not_ready_grace=grace,
                  now=NOW)


# --------------------------------------------------------------------------- names

def test_attachment_name_is_csi_plus_sha256_of_handle_driver_node():
    # pkg/volume/csi/csi_attacher.go getAttachmentName: sha256(fmt.Sprintf("%s%s%s", volName, csiDriverName,
    # nodeName)) with volName the volume handle.
    expected = 'csi-' + hashlib.sha256((HANDLE + DRIVER + 'node-b').encode()).hexdigest()
    assert attachment_name(HANDLE, DRIVER, 'node-b') == expected
    assert len(expected) == 68
    # A value computed once by hand (echo -n "h1rbd.csi.ceph.comnode-a" | sha256sum).
    assert attachment_name('h1', DRIVER, 'node-a') == \
        'csi-' + hashlib.sha256(b'h1rbd.csi.ceph.comnode-a').hexdigest()
    # The order matters: handle, driver, node.
    assert attachment_name('a', 'b', 'c') != attachment_name('c', 'b', 'a')


def test_unique_name_and_the_pre_124_shape():
    unique = unique_volume_name(UNITY, UNITY_HANDLE)
    assert unique == UNITY + '^' + UNITY_HANDLE and len(unique) == 68
    assert has_attachment_name_shape(unique)
    assert has_attachment_name_shape(attachment_name(HANDLE, DRIVER, 'n'))
    assert not has_attachment_name_shape(unique_volume_name(DRIVER, HANDLE))   # not csi-
    assert not has_attachment_name_shape(unique + 'x')                         # 69
    assert not has_attachment_name_shape(unique[:-1])                          # 67


@pytest.mark.parametrize('version, expected', [
    ((1, 23, 17), True), ((1, 21, 0), True), ((1, 24, 0), False), ((1, 30, 2), False), ((2, 0, 0), False),
    (None, None),
])
def test_collision_versions(version, expected):
    assert collision_version_affected(version) is expected


@pytest.mark.parametrize('driver, finalizer', [
    ('rbd.csi.ceph.com', 'external-attacher/rbd-csi-ceph-com'),
    ('csi-unity.dellemc.com', 'external-attacher/csi-unity-dellemc-com'),
    ('ebs.csi.aws.com', 'external-attacher/ebs-csi-aws-com'),
    ('odd_driver/', 'external-attacher/odd-driver-X'),   # SanitizeDriverName: never ends with '-'
])
def test_attacher_finalizer(driver, finalizer):
    assert attacher_finalizer(driver) == finalizer
    assert sanitize_driver_name(driver) == finalizer.split('/', 1)[1]


# --------------------------------------------------------------------------- staleness

def test_healthy_attachment_is_not_stale():
    report = run()
    assert not report['stale'] and report['stale_reasons'] == [] and report['pods'] == ['default/web-0']
    assert report['expected_name'] == report['name'] and report['node_ready'] == 'True'
    assert report['attacher_finalizer'] == 'external-attacher/rbd-csi-ceph-com'
    assert report['attachment_name_collision']['affected'] is False
    assert report['resource_version'] == '7' and report['uid'] == 'u-1'


def test_node_gone():
    report = run(node_obj=None)
    assert report['stale_reasons'] == ['node_missing'] and report['node_ready'] is None


@pytest.mark.parametrize('since, grace, stale', [
    ('2026-11-21T05:50:00Z', 300, True),    # 600 s NotReady > 300
    ('2026-11-21T05:58:00Z', 300, False),   # 120 s < 300
    ('2026-11-21T05:58:00Z', 0, True),
    (None, 300, True),                      # NotReady since an unknown time: counts
])
def test_node_not_ready_against_the_grace(since, grace, stale):
    report = run(node_obj=node(ready='Unknown', since=since), grace=grace)
    assert ('node_not_ready' in report['stale_reasons']) is stale
    assert report['node_ready'] == 'Unknown'


def test_out_of_service_taint_counts_even_when_ready():
    report = run(node_obj=node(taints=[dict(key='node.kubernetes.io/out-of-service', effect='NoExecute')]))
    assert report['stale_reasons'] == ['node_out_of_service']


def test_not_in_use():
    assert run(pods=[])['stale_reasons'] == ['not_in_use']
    # finished pods and pods of another namespace or claim do not use it
    others = [pod(phase='Succeeded'), pod(namespace='other'), pod(claim='logs')]
    assert run(pods=others)['stale_reasons'] == ['not_in_use']
    # a Terminating pod still holds it
    terminating = pod()
    terminating['metadata']['deletionTimestamp'] = '2026-11-21T05:59:00Z'
    assert not run(pods=[terminating])['stale']


def test_generic_ephemeral_volume_claims_count():
    p = pv(claim=('default', 'web-0-scratch'))
    assert pods_using(p, [pod(ephemeral=True)]) == ['default/web-0']


def test_the_claim_index_answers_as_the_scan_does():
    """volumeattachment_info looks each attachment's claim up in one index per node (2,000 attachments:
    one pass over the pods, not one per attachment); the answer is the scan's."""
    pods = [pod(), pod(name='web-1'), pod(name='old', phase='Failed'), pod(name='x', namespace='other'),
            pod(name='logs-0', claim='logs'), pod(name='eph', ephemeral=True)]
    index = claim_users(pods)
    for claim in [('default', 'data'), ('other', 'data'), ('default', 'logs'), ('default', 'eph-scratch'),
                  ('default', 'none'), None]:
        volume = pv(claim=claim)
        assert pods_using(volume, pods, index) == pods_using(volume, pods)
    assert pods_using(pv(), pods, index) == ['default/web-0', 'default/web-1']


def test_unexpected_name_and_missing_pv():
    report = run(va_obj=va(name='csi-' + '0' * 64))
    assert report['stale_reasons'] == ['unexpected_name']
    assert report['expected_name'] == attachment_name(HANDLE, DRIVER, 'node-b')
    report = run(pv_obj=None)
    assert report['stale_reasons'] == ['pv_missing'] and report['expected_name'] is None and report['pods'] is None


def test_inline_volume_of_a_migrated_plugin():
    obj = va(pv_name=None)
    obj['spec']['source'] = dict(inlineVolumeSpec=dict(csi=dict(driver=DRIVER, volumeHandle=HANDLE)))
    report = assess(obj, None, pv_known=False, node=node(), pods=[], cluster_version=(1, 30, 0), not_ready_grace=300, now=NOW)
    assert not report['stale'] and report['pods'] is None and report['volume_handle'] == HANDLE
    assert report['expected_name'] == report['name']


def test_several_reasons_in_a_fixed_order():
    report = run(node_obj=node(ready='False', taints=[dict(key='node.kubernetes.io/out-of-service')]), pods=[],
                 va_obj=va(name='csi-' + '1' * 64))
    assert report['stale_reasons'] == ['node_not_ready', 'node_out_of_service', 'not_in_use', 'unexpected_name']
    assert len(report['stale_messages']) == 4 and 'NotReady' in report['stale_messages'][0]


# --------------------------------------------------------------------------- the name collision (stale-volumeattachment)

@pytest.mark.parametrize('version, affected', [((1, 23, 5), True), ((1, 24, 0), False), (None, False)])
def test_stale_volumeattachment_collision(version, affected):
    obj = va(node='node-b', pv_name='pv-u', attacher=UNITY, handle=UNITY_HANDLE,
             finalizers=['external-attacher/csi-unity-dellemc-com'])
    report = assess(obj, pv('pv-u', UNITY, UNITY_HANDLE, claim=None), pv_known=True, node=node(), pods=[],
                    cluster_version=version, not_ready_grace=300, now=NOW)
    collision = report['attachment_name_collision']
    assert collision['unique_volume_name'] == UNITY + '^' + UNITY_HANDLE
    assert collision['volume_has_attachment_name_shape'] is True
    assert collision['affected'] is affected
    assert collision['version_affected'] is (None if version is None else affected)
    assert ('68 characters' in collision['explanation']) is affected
    assert report['attacher_finalizer'] == 'external-attacher/csi-unity-dellemc-com'


def test_matches():
    obj = va()
    assert matches(obj) and matches(obj, persistent_volume='pv-1', node='node-b', attacher=DRIVER)
    assert not matches(obj, node='node-a') and not matches(obj, attacher='x') and not matches(obj, name='y')


# --------------------------------------------------------------------------- deleting

def test_plan_delete():
    stale = run(pods=[])
    assert plan_delete(stale, True, False, 60)[0] == DELETE
    healthy = run()
    action, why = plan_delete(healthy, True, False, 60)
    assert action == SKIP and 'default/web-0' in why and 'only_stale=false' in why
    assert plan_delete(healthy, False, False, 60)[0] == DELETE


@pytest.mark.parametrize('deleting, force, action', [
    ('2026-11-21T05:58:00Z', True, REMOVE_FINALIZER),   # 120 s >= 60
    ('2026-11-21T05:59:30Z', True, WAIT),               # 30 s < 60
    ('2026-11-21T05:58:00Z', False, WAIT),
])
def test_plan_delete_of_a_stuck_deletion(deleting, force, action):
    report = run(va_obj=va(deleting=deleting), pods=[])
    assert report['deleting_seconds'] == (120 if deleting.endswith('58:00Z') else 30)
    assert plan_delete(report, True, force, 60)[0] == action


def test_other_finalizers_are_waited_for():
    report = run(va_obj=va(deleting='2026-11-21T05:00:00Z', finalizers=['example.com/other']), pods=[])
    action, why = plan_delete(report, True, True, 60)
    assert action == WAIT and 'example.com/other' in why


# --------------------------------------------------------------------------- I5: volumesInUse

CSI_IN_USE = 'kubernetes.io/csi/%s^%s' % (DRIVER, HANDLE)


def in_tree_pv(pool='replicapool', image='kubernetes-dynamic-pvc-1a2b'):
    return dict(metadata=dict(name='pv-1'), spec=dict(rbd=dict(monitors=['10.0.0.1:6789'], pool=pool, image=image),
                                                      claimRef=dict(namespace='default', name='data')))


def test_kubelet_volume_names_are_its_unique_volume_names():
    """kubelet's GetUniqueVolumeName: <plugin>/<GetVolumeName>: CSI <driver>^<handle>, in-tree rbd <pool>:<image>."""
    assert kubelet_volume_names(va(), pv()) == [CSI_IN_USE]
    assert kubelet_volume_names(va(), in_tree_pv()) == ['kubernetes.io/rbd/replicapool:kubernetes-dynamic-pvc-1a2b']
    assert kubelet_volume_names(va(), None) == []


def test_i5_attachment_in_volumes_in_use_of_its_ready_node_is_never_deleted():
    """I5 (issue 11 item 5): no pod object uses the volume any more, but the Ready node lists it in
    status.volumesInUse (kubelet is still unmounting it): not stale, and not deleted, not even with
    only_stale=false or force. Before, it was stale 'not_in_use' and deleted."""
    report = run(node_obj=node(in_use=['kubernetes.io/csi/other^x', CSI_IN_USE]), pods=[])
    assert report['volume_in_use'] is True and report['volumes_in_use_entries'] == [CSI_IN_USE]
    assert not report['stale'] and report['stale_reasons'] == [] and 'I5' in report['protected']
    for only_stale in (True, False):
        for force in (False, True):
            action, why = plan_delete(report, only_stale, force, 0)
            assert action == SKIP and 'volumesInUse' in why and 'not even with only_stale=false or force' in why
    # a deletion already in progress: its finalizer is not removed, not even with force past force_grace
    deleting = run(va_obj=va(deleting='2026-11-21T05:00:00Z'), node_obj=node(in_use=[CSI_IN_USE]), pods=[])
    action, why = plan_delete(deleting, True, True, 0)
    assert action == WAIT and 'not removed, not even with force' in why


def test_i5_only_its_own_volume_and_only_on_a_ready_node_protects_it():
    other = run(node_obj=node(in_use=['kubernetes.io/csi/%s^another-handle' % DRIVER]), pods=[])
    assert other['volume_in_use'] is False and other['stale_reasons'] == ['not_in_use'] and other['protected'] is None
    assert plan_delete(other, True, False, 60)[0] == DELETE
    # a NotReady node's volumesInUse is what it said before it stopped answering: not a reason to keep it
    down = run(node_obj=node(ready='Unknown', since='2026-11-21T05:00:00Z', in_use=[CSI_IN_USE]), pods=[])
    assert down['volume_in_use'] is True and down['protected'] is None
    assert down['stale_reasons'] == ['node_not_ready', 'not_in_use'] and plan_delete(down, True, False, 60)[0] == DELETE


@pytest.mark.parametrize('entry', ['kubernetes.io/rbd/replicapool:kubernetes-dynamic-pvc-1a2b',
                                   'kubernetes.io/rbd/[10.0.0.1:6789]:kubernetes-dynamic-pvc-1a2b',
                                   'kubernetes.io/rbd/replicapool-image-kubernetes-dynamic-pvc-1a2b'])
def test_i5_in_tree_rbd_volume_names(entry):
    obj = va()
    report = assess(obj, in_tree_pv(), pv_known=True, node=node(in_use=[entry]), pods=[], cluster_version=(1, 30, 2), not_ready_grace=300, now=NOW)
    assert report['volume_in_use'] is True and report['protected'] and not report['stale']
    assert volume_in_use(node(in_use=['kubernetes.io/rbd/replicapool:kubernetes-dynamic-pvc-1a2bc']), obj,
                         in_tree_pv()) == (False, [])


def test_i5_an_attachment_whose_volume_cannot_be_named_is_kept_while_its_driver_has_volumes_in_use():
    """A migrated in-tree volume (PV without spec.csi) or a missing PV: its handle is unknown; any volume of
    its driver that the Ready node lists may be it, so it is kept (what cannot be proven is refused)."""
    entry = 'kubernetes.io/csi/%s^mig_mons-1_image-2_7265706c' % DRIVER
    report = run(pv_obj=None, node_obj=node(in_use=[entry]), pods=[])
    assert report['volume_in_use'] is None and report['volumes_in_use_entries'] == [entry]
    assert 'cannot be told' in report['protected'] and plan_delete(report, False, True, 0)[0] == SKIP
    report = run(pv_obj=None, node_obj=node(in_use=['kubernetes.io/csi/other.driver^x']), pods=[])
    assert report['volume_in_use'] is False and report['protected'] is None and report['stale']


def _entry(name, node, stale, shape=False):
    return dict(name=name, node=node, stale=stale, stale_reasons=['node_gone'] if stale else [],
                attachment_name_collision=dict(volume_has_attachment_name_shape=shape, explanation='why ' + name))


def test_cleanup_plan_deletes_only_stale_attachments_to_other_nodes():
    entries = [_entry('va-own', 'node-a', True), _entry('va-stale', 'node-b', True),
               _entry('va-live', 'node-c', False), 'not an entry']
    plan = cleanup_plan(entries, 'node-a')
    assert [va['name'] for va in plan['stale']] == ['va-stale']
    assert [va['name'] for va in plan['kept']] == ['va-live']
    assert plan['collisions'] == []


def test_I6_cleanup_plan_keeps_a_ceph_csi_attachment_of_a_node_that_is_down_not_gone():
    """Issue 43: node-b may still hold a client of the image that no rbd status shows (frozen, cut off): removing
    its attachment alone would let the volume attach elsewhere with nothing fenced; node_failover does it."""
    def entry(name, reasons, attacher='rbd.csi.ceph.com'):
        return dict(_entry(name, 'node-b', True), stale_reasons=reasons, attacher=attacher)
    plan = cleanup_plan([entry('va-down', [NODE_NOT_READY]), entry('va-rook', [NODE_OUT_OF_SERVICE],
                                                                   'rook-ceph.rbd.csi.ceph.com'),
                         entry('va-gone', [NODE_MISSING]), entry('va-unity', [NODE_NOT_READY], 'csi-unity.dellemc.com'),
                         entry('va-name', ['unexpected_name'])], 'node-a')
    assert [va['name'] for va in plan['stale']] == ['va-gone', 'va-unity', 'va-name']
    assert [va['name'] for va in plan['kept']] == ['va-down', 'va-rook']
    assert all('node_failover -e failed_node=node-b' in va['kept_reason'] for va in plan['kept'])


def test_cleanup_plan_reports_every_collision_even_on_the_pods_own_node():
    plan = cleanup_plan([_entry('va-own', 'node-a', False, shape=True), _entry('va-b', 'node-b', True, shape=True)],
                        'node-a')
    assert [c['explanation'] for c in plan['collisions']] == ['why va-own', 'why va-b']
    assert [va['name'] for va in plan['stale']] == ['va-b']


def test_cleanup_plan_of_an_unscheduled_pod_and_of_nothing():
    assert cleanup_plan([_entry('va-b', 'node-b', False)], '')['kept'][0]['name'] == 'va-b'
    assert cleanup_plan(None, 'node-a') == dict(stale=[], kept=[], collisions=[])

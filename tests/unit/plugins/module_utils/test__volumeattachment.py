# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import hashlib

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._volumeattachment import (
    DELETE,
    REMOVE_FINALIZER,
    SKIP,
    WAIT,
    assess,
    attacher_finalizer,
    attachment_name,
    collision_version_affected,
    has_attachment_name_shape,
    matches,
    plan_delete,
    pods_using,
    sanitize_driver_name,
    unique_volume_name,
)

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 21, 6, 0, 0, tzinfo=UTC)
DRIVER = 'rbd.csi.ceph.com'
HANDLE = '0001-0003-lab-0000000000000002-6f2c1e3a-c7c5-11ef-9a1b-0242ac120002'
# The Dell csi-unity volume of seed 001: <driver>^<handle> is 68 characters and starts with csi-.
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


def node(name='node-b', ready='True', since='2026-11-21T05:50:00Z', taints=()):
    return dict(metadata=dict(name=name), spec=dict(taints=list(taints)),
                status=dict(conditions=[dict(type='Ready', status=ready, lastTransitionTime=since)]))


def pod(name='web-0', namespace='default', claim='data', phase='Running', ephemeral=False):
    volumes = [dict(name='cache', emptyDir={})]
    if ephemeral:
        volumes.append(dict(name='scratch', ephemeral=dict(volumeClaimTemplate={})))
    else:
        volumes.append(dict(name='data', persistentVolumeClaim=dict(claimName=claim)))
    return dict(metadata=dict(name=name, namespace=namespace), spec=dict(nodeName='node-b', volumes=volumes),
                status=dict(phase=phase))


def run(va_obj=None, pv_obj='default', node_obj='default', pods=None, version=(1, 30, 2), grace=300):
    return assess(va_obj or va(), pv() if pv_obj == 'default' else pv_obj, True,
                  node() if node_obj == 'default' else node_obj, [pod()] if pods is None else pods, version, grace,
                  NOW)


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


def test_unexpected_name_and_missing_pv():
    report = run(va_obj=va(name='csi-' + '0' * 64))
    assert report['stale_reasons'] == ['unexpected_name']
    assert report['expected_name'] == attachment_name(HANDLE, DRIVER, 'node-b')
    report = run(pv_obj=None)
    assert report['stale_reasons'] == ['pv_missing'] and report['expected_name'] is None and report['pods'] is None


def test_inline_volume_of_a_migrated_plugin():
    obj = va(pv_name=None)
    obj['spec']['source'] = dict(inlineVolumeSpec=dict(csi=dict(driver=DRIVER, volumeHandle=HANDLE)))
    report = assess(obj, None, False, node(), [], (1, 30, 0), 300, NOW)
    assert not report['stale'] and report['pods'] is None and report['volume_handle'] == HANDLE
    assert report['expected_name'] == report['name']


def test_several_reasons_in_a_fixed_order():
    report = run(node_obj=node(ready='False', taints=[dict(key='node.kubernetes.io/out-of-service')]), pods=[],
                 va_obj=va(name='csi-' + '1' * 64))
    assert report['stale_reasons'] == ['node_not_ready', 'node_out_of_service', 'not_in_use', 'unexpected_name']
    assert len(report['stale_messages']) == 4 and 'NotReady' in report['stale_messages'][0]


# --------------------------------------------------------------------------- the name collision (seed 001)

@pytest.mark.parametrize('version, affected', [((1, 23, 5), True), ((1, 24, 0), False), (None, False)])
def test_seed_001_collision(version, affected):
    obj = va(node='node-b', pv_name='pv-u', attacher=UNITY, handle=UNITY_HANDLE,
             finalizers=['external-attacher/csi-unity-dellemc-com'])
    report = assess(obj, pv('pv-u', UNITY, UNITY_HANDLE, claim=None), True, node(), [], version, 300, NOW)
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

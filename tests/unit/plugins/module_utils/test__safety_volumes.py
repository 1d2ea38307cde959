# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 17: a node with more than one kind of volume. Every volume the failed node has (RBD of
ceph-csi or in-tree, another CSI driver, in-tree NFS or hostPath, a PV that does not exist, an
unbound claim, inline volumes, an attachment of an inline spec) is listed, with what
node_failover did for it and why, and none makes the decision layer fail. The property-based
counterpart is in test__safety_properties.py (the I6 properties)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import table
from ansible_collections.volfence.csi.plugins.module_utils._decisions.fence import fence_plan, staged_images
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import (
    down_node_volumes,
    failover_volumes,
    node_volumes,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.release import release_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volume_sources import volume_source

NOW = datetime.datetime(2026, 3, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
RBD_CSI = dict(driver='rbd.csi.ceph.com', volumeHandle='h-rbd', volumeAttributes=dict(pool='rbd', imageName='img-1'))


def node(name, ip, ready):
    return dict(metadata=dict(name=name), status=dict(
        addresses=[dict(type='InternalIP', address=ip)],
        conditions=[dict(type='Ready', status=ready, lastTransitionTime='2026-03-04T11:00:00Z')]))


def pod(name, *volumes, **kw):
    meta = dict(name=name, namespace='ns', uid='uid-' + name)
    if kw.get('terminating', True):
        meta['deletionTimestamp'] = '2026-03-04T11:59:00Z'
    if kw.get('owned'):
        meta['ownerReferences'] = [dict(kind='ReplicaSet', name='rs', uid='rs-uid', controller=True)]
    return dict(metadata=meta, spec=dict(nodeName=kw.get('node', 'node-b'), volumes=list(volumes)))


def claim_volume(claim):
    return dict(name='v-' + claim, persistentVolumeClaim=dict(claimName=claim))


def pvc(name, pv=None):
    return dict(metadata=dict(name=name, namespace='ns'), spec=dict(volumeName=pv) if pv else {})


def pv(name, **source):
    return dict(metadata=dict(name=name), spec=source)


def va(name, node_name='node-b', pv_name=None, attacher='ebs.csi.aws.com', inline=None):
    source = dict(persistentVolumeName=pv_name) if pv_name else dict(inlineVolumeSpec=inline)
    return dict(metadata=dict(name=name), spec=dict(attacher=attacher, nodeName=node_name, source=source))


def mixed_node():
    """node-b's objects: what stale-rbd-watcher-mixed builds on the lab, and more."""
    pods = [
        pod('rbd-pod', claim_volume('rbd-claim'), owned=True),
        pod('ebs-pod', claim_volume('ebs-claim'), owned=True),
        pod('nfs-pod', claim_volume('nfs-claim')),
        pod('local-pod', claim_volume('local-claim')),
        pod('unbound-pod', claim_volume('unbound-claim'), claim_volume('no-such-claim')),
        pod('inline-pod', dict(name='scratch', nfs=dict(server='nfs.example', path='/x')),
            dict(name='cfg', configMap=dict(name='c'))),
        pod('inline-rbd-pod', dict(name='data', rbd=dict(pool='rbd', image='img-inline', monitors=['m']))),
        pod('elsewhere', claim_volume('elsewhere-claim'), node='node-a'),
    ]
    pvcs = [pvc('rbd-claim', 'pv-rbd'), pvc('ebs-claim', 'pv-ebs'), pvc('nfs-claim', 'pv-nfs'),
            pvc('local-claim', 'pv-local'), pvc('unbound-claim'), pvc('elsewhere-claim', 'pv-elsewhere')]
    pvs = [pv('pv-rbd', csi=RBD_CSI), pv('pv-ebs', csi=dict(driver='ebs.csi.aws.com', volumeHandle='vol-1')),
           pv('pv-nfs', nfs=dict(server='nfs.example', path='/e')), pv('pv-local', hostPath=dict(path='/data')),
           pv('pv-elsewhere', csi=dict(driver='ebs.csi.aws.com', volumeHandle='vol-2')),
           pv('pv-intree', rbd=dict(pool='kube', image='img-2')), pv('pv-broken', rbd=dict(pool='kube'))]
    vas = [va('va-rbd', pv_name='pv-rbd', attacher='rbd.csi.ceph.com'), va('va-ebs', pv_name='pv-ebs'),
           va('va-gone', pv_name='pv-does-not-exist'),
           va('va-migrated', attacher='rbd.csi.ceph.com',
              inline=dict(csi=dict(driver='rbd.csi.ceph.com', volumeHandle='h-m',
                                   volumeAttributes=dict(pool='rbd', imageName='img-migrated')))),
           va('va-inline-other', inline=dict(csi=dict(driver='ebs.csi.aws.com', volumeHandle='vol-3'))),
           va('va-no-source', pv_name=None, inline=None),
           va('va-elsewhere', node_name='node-a', pv_name='pv-elsewhere'),
           dict(name='va-info', node='node-b', pv='pv-intree', attacher='kubernetes.io/rbd'),
           None, 'garbage', dict(spec=None)]
    return pods, pvcs, pvs, vas


def by_name(volumes):
    return dict((v['name'], v) for v in volumes)


@pytest.mark.parametrize('spec, expected', [
    (dict(csi=RBD_CSI), ('rbd-csi', 'rbd/img-1', 'rbd.csi.ceph.com', 'ceph-csi RBD image rbd/img-1')),
    (dict(csi=dict(driver='ebs.csi.aws.com')), ('csi', None, 'ebs.csi.aws.com', 'CSI driver ebs.csi.aws.com')),
    (dict(csi=dict()), ('other', None, None, 'an unknown volume source')),
    (dict(rbd=dict(pool='kube', image='i')), ('rbd-intree', 'kube/i', 'kubernetes.io/rbd', 'in-tree RBD image kube/i')),
    (dict(rbd=dict(pool='kube')), ('other', None, 'rbd', 'in-tree rbd')),
    (dict(nfs=dict(server='s', path='/p')), ('other', None, 'nfs', 'in-tree nfs')),
    (dict(hostPath=dict(path='/d')), ('other', None, 'hostPath', 'in-tree hostPath')),
    (dict(cephfs=dict(monitors=['m'])), ('other', None, 'cephfs', 'in-tree cephfs')),
    ({}, ('other', None, None, 'an unknown volume source')),
    (None, ('other', None, None, 'an unknown volume source')),
    ('not a dict', ('other', None, None, 'an unknown volume source')),
])
def test_volume_source_names_every_kind_and_never_raises(spec, expected):
    assert volume_source(spec) == expected


def test_failover_volumes_lists_every_volume_of_a_mixed_node_and_nothing_of_others():
    pods, pvcs, pvs, vas = mixed_node()
    volumes = failover_volumes('node-b', pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    keyed = dict(((v['pv_name'] or tuple(v['attachments']) or tuple(v['claims']) or v['inline']), v) for v in volumes)
    assert keyed['pv-rbd']['image'] == 'rbd/img-1' and keyed['pv-rbd']['attachments'] == ['va-rbd']
    assert keyed['pv-rbd']['claims'] == ['ns/rbd-claim'] and keyed['pv-rbd']['pods'] == ['ns/rbd-pod']
    assert (keyed['pv-ebs']['rbd'], keyed['pv-ebs']['driver'], keyed['pv-ebs']['attachments']) == (
        False, 'ebs.csi.aws.com', ['va-ebs'])
    assert keyed['pv-nfs']['volume'] == 'in-tree nfs' and keyed['pv-nfs']['attachments'] == []
    assert keyed['pv-local']['driver'] == 'hostPath'
    assert keyed['pv-intree']['image'] == 'kube/img-2' and keyed['pv-intree']['attachments'] == ['va-info']
    gone = keyed['pv-does-not-exist']
    assert (gone['pv'], gone['source'], gone['attachments']) == (None, 'pv-missing', ['va-gone'])
    assert keyed[('va-migrated',)]['image'] == 'rbd/img-migrated'
    assert keyed[('va-migrated',)]['source'] == 'attachment-inline'
    assert keyed[('va-inline-other',)]['driver'] == 'ebs.csi.aws.com'
    assert keyed[('va-no-source',)]['driver'] == 'ebs.csi.aws.com'
    assert keyed[('ns/unbound-claim',)]['source'] == 'claim-unbound'
    assert 'bound to no PersistentVolume' in keyed[('ns/unbound-claim',)]['volume']
    assert 'does not exist' in keyed[('ns/no-such-claim',)]['volume']
    assert keyed['scratch']['source'] == 'pod-inline' and keyed['scratch']['pods'] == ['ns/inline-pod']
    assert keyed['data']['image'] == 'rbd/img-inline'
    # nothing of node-a, and the configMap is no storage volume
    assert 'pv-elsewhere' not in keyed and 'cfg' not in keyed
    assert not [v for v in volumes if 'va-elsewhere' in v['attachments']]


def test_release_plan_fences_rbd_and_reports_every_other_volume_with_what_was_done():
    pods, pvcs, pvs, vas = mixed_node()
    volumes = failover_volumes('node-b', pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    nodes = [node('node-a', '10.0.0.11', 'True'), node('node-b', '10.0.0.12', 'False')]
    images = [dict(spec='rbd/img-1', watchers=[dict(address='10.0.0.12:0/1')]),
              dict(spec='rbd/img-inline', watchers=[dict(address='10.0.0.12:0/2')]),
              dict(spec='rbd/img-migrated', watchers=[]), dict(spec='kube/img-2', watchers=[])]
    # no watcher is no proof (I6): an image node-b staged that nobody is seen to hold may have a frozen client of
    # node-b; without node-b's own addresses fenced it is not released
    blind = release_plan('node-b', volumes, pods, images=images, fence=fence_plan(images, 'node-b', nodes, now=NOW))
    assert blind['remove_attachments'] == ['va-rbd']
    assert 'a frozen or partitioned client' in by_name(blind['volumes'])['pv-intree']['how']
    plan = fence_plan(images, 'node-b', nodes, now=NOW, staged=staged_images(volumes, 'node-b'))
    assert plan['fence'] == ['10.0.0.12:0/0']  # node-b's address, whole: it cuts the two watchers too
    release = release_plan('node-b', volumes, pods, images=images, fence=plan)
    verdicts = by_name(release['volumes'])
    assert verdicts['pv-rbd']['action'] == 'released'
    assert verdicts['pv-rbd']['how'].startswith('fenced (blocklist): 10.0.0.12:0/0 (')
    assert verdicts['ns/inline-rbd-pod (volume data)']['safe'] is True
    assert release['remove_attachments'] == ['va-info', 'va-migrated', 'va-rbd']
    ebs = verdicts['pv-ebs']
    assert (ebs['safe'], ebs['rbd'], ebs['action']) == (False, False, 'kept attached')
    assert ebs['how'].startswith('not an RBD volume (CSI driver ebs.csi.aws.com): volfence.csi cannot fence it, '
                                 'its driver must detach it (VolumeAttachment va-ebs left untouched)')
    assert 'out_of_service_taint=true' in ebs['how']
    assert ebs['line'].startswith('pv-ebs (CSI driver ebs.csi.aws.com): kept attached: not an RBD volume')
    assert verdicts['pv-nfs']['action'] == 'left alone' and 'with no VolumeAttachment' in verdicts['pv-nfs']['how']
    assert "node-b's own disk" in verdicts['pv-local']['how']
    gone = verdicts['pv-does-not-exist']
    assert gone['action'] == 'kept attached' and 'was not found' in gone['how'] and 'va-gone' in gone['how']
    assert 'not bound to a PersistentVolume' in verdicts['ns/unbound-claim']['how']
    assert sorted(release['kept_attachments']) == ['va-ebs', 'va-gone', 'va-inline-other', 'va-no-source']
    assert [p['name'] for p in release['delete_pods']] == ['rbd-pod', 'inline-rbd-pod']
    kept = dict((p['pod'], p['reason']) for p in release['kept_pods'])
    assert sorted(kept) == ['ns/ebs-pod', 'ns/inline-pod', 'ns/local-pod', 'ns/nfs-pod', 'ns/unbound-pod']
    assert 'scratch' in kept['ns/inline-pod']
    assert release['wait_claims'] == ['ns/rbd-claim']
    assert sorted(v['name'] for v in release['not_rbd']) == sorted(n for n, v in verdicts.items() if not v['rbd'])
    assert all(v['line'].startswith(v['name']) for v in release['volumes'])


def test_release_plan_under_the_out_of_service_taint_releases_other_drivers_but_never_an_unknown_pv():
    pods, pvcs, pvs, vas = mixed_node()
    volumes = failover_volumes('node-b', pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    release = release_plan('node-b', volumes, pods, images=[], fence=dict(fence=[], kept=[]),
                           out_of_service_taint=True)
    verdicts = by_name(release['volumes'])
    assert verdicts['pv-ebs']['safe'] is True and verdicts['pv-ebs']['action'] == 'released under the out-of-service taint'
    assert 'va-ebs' in release['remove_attachments'] and 'va-gone' not in release['remove_attachments']
    assert verdicts['pv-rbd']['safe'] is False  # the image was not read: RBD never rides on the taint


def test_release_plan_never_raises_on_partial_objects():
    weird = [None, 'x', {}, dict(pv='pv-1'), dict(pv=None, attachments=None, claims=None),
             dict(pv='pv-2', image='rbd/i', attachments=['a'])]
    odd_pod = dict(metadata=dict(deletionTimestamp='t'), spec=dict(nodeName='node-b', volumes=[None, 'v', {}]))
    pods = [None, 'x', {}, dict(metadata=None, spec=None), odd_pod]
    release = release_plan('node-b', weird, pods, images=[None, {}], missing=[None], fence=None)
    assert all(v['line'] for v in release['volumes'])
    assert release['remove_attachments'] == []
    assert failover_volumes('node-b', pods=pods, pvcs=[None, {}], pvs=[None, {}], attachments=[None, {}]) == []


def test_node_volumes_say_what_node_failover_would_do_or_did():
    pods, pvcs, pvs, vas = mixed_node()
    volumes = failover_volumes('node-b', pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    would = by_name(node_volumes('node-b', volumes, context='diagnose'))
    assert "fences node-b's clients" in would['pv-rbd']['note']
    assert 'node_failover cannot fence it and leaves it attached' in would['pv-ebs']['note']
    assert 'does not force-delete the pods using it' in would['pv-nfs']['note']
    assert 'cannot name the volume' in would['pv-does-not-exist']['note'] and 'va-gone' in would['pv-does-not-exist']['note']
    did = by_name(node_volumes('node-b', volumes, context='recover'))
    assert 'neither fenced nor detached it; va-ebs still attached to node-b' in did['pv-ebs']['note']
    assert 'did nothing for it' in did['pv-nfs']['note']
    assert all(v['line'].startswith(v['name']) for v in did.values())


def test_down_node_volumes_lists_the_volumes_of_nodes_that_are_not_ready_and_the_table_shows_them():
    pods, pvcs, pvs, vas = mixed_node()
    nodes = [node('node-a', '10.0.0.11', 'True'), node('node-b', '10.0.0.12', 'Unknown'),
             node('node-c', '10.0.0.13', 'False'), None, {}]
    down = down_node_volumes(nodes, pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    assert [d['node'] for d in down] == ['node-b']  # node-c has no volume, node-a is Ready
    assert down[0]['ready'] == 'Unknown' and 'pv-ebs' in [v['name'] for v in down[0]['volumes']]
    lines = table([], down)
    assert 'node node-b (Ready=Unknown) holds %d volume(s):' % len(down[0]['volumes']) in lines
    assert any(line.startswith('  - pv-ebs (CSI driver ebs.csi.aws.com): not an RBD volume') for line in lines)

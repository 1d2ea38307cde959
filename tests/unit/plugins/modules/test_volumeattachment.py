# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""volumeattachment and volumeattachment_info end to end through AnsibleModule, on a fake API server."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s import volumeattachment_ops as _volumeattachment_ops
from ansible_collections.volfence.csi.plugins.modules import volumeattachment, volumeattachment_info
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import (
    VA0,
    VA1,
    api_for,
    volumeattachment_cluster as cluster,
)
from ansible_collections.volfence.csi.tests.unit.plugins.modules.module_warnings import run_main, warning_texts


def run(module, args, monkeypatch, capsys, fake, clock, check=False, diff=False):
    real = _volumeattachment_ops.VolumeAttachments.__init__

    def init(self, api, not_ready_grace=300, workers=1, **_kwargs):
        real(self, api, not_ready_grace=not_ready_grace, clock=clock, workers=workers)

    monkeypatch.setattr(_volumeattachment_ops.VolumeAttachments, '__init__', init)
    return run_main(module, args, monkeypatch, capsys, check, diff, api=lambda: api_for(fake))


def attacher(fake, method, plural, obj):
    """The external-attacher: detaches and drops its finalizer once the attachment is deleted."""
    if plural == 'volumeattachments' and method == 'DELETE' and obj['metadata'].get('deletionTimestamp'):
        del fake.store[plural][(None, obj['metadata']['name'])]


def test_info(monkeypatch, capsys):
    fake, clock, _vas = cluster()
    out, _calls = run(volumeattachment_info, {}, monkeypatch, capsys, fake, clock)
    assert not out['changed'] and out['cluster_version'] == 'v1.30.2' and out['collision_version_affected'] is False
    by_name = dict((v['name'], v) for v in out['volumeattachments'])
    assert by_name[VA0]['stale_reasons'] == ['node_not_ready', 'not_in_use'] and not by_name[VA1]['stale']
    out, _calls = run(volumeattachment_info, dict(stale_only=True), monkeypatch, capsys, fake, clock)
    assert [v['name'] for v in out['volumeattachments']] == [VA0]
    out, _calls = run(volumeattachment_info, dict(not_ready_grace=3600), monkeypatch, capsys, fake, clock)
    assert dict((v['name'], v) for v in out['volumeattachments'])[VA0]['stale_reasons'] == ['not_in_use']
    assert fake.writes() == []


def test_info_on_an_affected_version(monkeypatch, capsys):
    fake, clock, _vas = cluster(version='v1.23.5+vmware.1')
    out, _calls = run(volumeattachment_info, dict(node='node-b'), monkeypatch, capsys, fake, clock)
    assert out['collision_version_affected'] is True
    collision = out['volumeattachments'][0]['attachment_name_collision']
    assert collision['version_affected'] is True and collision['affected'] is False   # rbd^h-0 has not the shape


@pytest.mark.parametrize('args, message', [
    (dict(name='csi-nope'), 'VolumeAttachment csi-nope not found'),
    (dict(pv='pv-typo'), 'PersistentVolume pv-typo not found, and no VolumeAttachment refers to it'),
    (dict(node='Node_B'), 'is not a valid Kubernetes object name'),
])
def test_info_bad_input(monkeypatch, capsys, args, message):
    fake, clock, _vas = cluster()
    out, _calls = run(volumeattachment_info, args, monkeypatch, capsys, fake, clock)
    assert out['failed'] and message in out['msg']


def test_delete_with_check_diff_then_for_real_then_idempotent(monkeypatch, capsys):
    fake, clock, _vas = cluster()
    fake.hooks.append(attacher)
    out, _calls = run(volumeattachment, dict(attacher='rbd.csi.ceph.com'), monkeypatch, capsys, fake, clock,
                      check=True, diff=True)
    assert out['changed'] and out['deleted'] == [VA0] and fake.writes() == []
    assert out['diff'] == dict(before=dict(volumeattachments=sorted([VA0, VA1])),
                               after=dict(volumeattachments=[VA1]))
    assert out['kept'][0]['name'] == VA1 and 'default/web-1' in out['kept'][0]['why']
    assert any('skipped' in w for w in warning_texts(out))
    out, _calls = run(volumeattachment, dict(attacher='rbd.csi.ceph.com'), monkeypatch, capsys, fake, clock)
    assert out['changed'] and out['deleted'] == [VA0] and fake.get('volumeattachments', VA0) is None
    out, _calls = run(volumeattachment, dict(attacher='rbd.csi.ceph.com'), monkeypatch, capsys, fake, clock)
    assert not out['changed'] and out['deleted'] == []


def test_unknown_name_is_a_warning_unknown_pv_an_error(monkeypatch, capsys):
    fake, clock, _vas = cluster()
    out, _calls = run(volumeattachment, dict(name='csi-gone'), monkeypatch, capsys, fake, clock)
    assert not out.get('failed') and not out['changed'] and 'VolumeAttachment csi-gone not found' in warning_texts(out)[0]
    out, _calls = run(volumeattachment, dict(pv='pv-typo'), monkeypatch, capsys, fake, clock)
    assert out['failed'] and 'PersistentVolume pv-typo not found' in out['msg'] and fake.writes() == []


@pytest.mark.parametrize('args, message', [
    (dict(), 'one of the following is required: name, persistent_volume, node, attacher'),
    (dict(node='node-b', state='present'), 'value of state must be one of: absent'),
    (dict(node='node-b', wait_timeout=-1), 'wait_timeout=-1 is out of range: give 0 to 86400 seconds'),
    (dict(node='node-b', force_grace=86401), 'force_grace=86401 is out of range: give 0 to 86400 seconds'),
    (dict(node='node-b', not_ready_grace=-5), 'not_ready_grace=-5 is out of range'),
    (dict(node='node-b', wait_sleep=0), 'wait_sleep=0 is out of range: give 1 to 600 seconds'),
    (dict(name='CSI_x'), 'is not a valid Kubernetes object name'),
    # names
    (dict(name=VA0, names=[VA1]), 'parameters are mutually exclusive: name|names'),
    (dict(names=['ok', 'Not_OK']), "names[1] 'Not_OK' is not a valid Kubernetes object name"),
    (dict(names=['ok'], parallel=257), 'parallel=257 is out of range: give 1 to 256; nothing was changed'),
])
def test_bad_input_fails_without_connecting(monkeypatch, capsys, args, message):
    fake, clock, _vas = cluster()
    out, calls = run(volumeattachment, args, monkeypatch, capsys, fake, clock)
    assert out['failed'] and message in out['msg'] and calls == []


def test_stuck_deletion_fails_with_the_reason_then_force_clears_it(monkeypatch, capsys):
    fake, clock, _vas = cluster()
    out, _calls = run(volumeattachment, dict(node='node-b', wait_timeout=3), monkeypatch, capsys, fake, clock)
    assert out['failed'] and out['changed'] and 'still exists after wait_timeout=3s' in out['msg']
    assert '(changed anyway: %s)' % VA0 in out['msg']
    out, _calls = run(volumeattachment, dict(node='node-b', force=True, force_grace=30), monkeypatch, capsys, fake,
                      clock)
    assert out['changed'] and out['volumeattachments'][0]['finalizer_removed'] == 'external-attacher/rbd-csi-ceph-com'
    assert fake.get('volumeattachments', VA0) is None


def test_only_stale_false_deletes_a_healthy_one(monkeypatch, capsys):
    fake, clock, _vas = cluster()
    fake.hooks.append(attacher)
    out, _calls = run(volumeattachment, dict(name=VA1, only_stale=False), monkeypatch, capsys, fake, clock)
    assert out['changed'] and out['deleted'] == [VA1]


def test_i5_ready_node_volumes_in_use_keeps_the_attachment_even_forced(monkeypatch, capsys):
    """I5: pod web-1 is gone but node-a (Ready) still lists pv-1's volume in status.volumesInUse: the module
    deletes nothing, not even with only_stale=false and force, and says why."""
    fake, clock, _vas = cluster()
    del fake.store['pods'][('default', 'web-1')]
    fake.get('nodes', 'node-a')['status']['volumesInUse'] = ['kubernetes.io/csi/rbd.csi.ceph.com^h-1']
    for args in (dict(name=VA1), dict(name=VA1, only_stale=False, force=True, force_grace=0)):
        out, _calls = run(volumeattachment, args, monkeypatch, capsys, fake, clock)
        assert not out.get('failed') and not out['changed'] and out['deleted'] == [] and out['done'] == []
        assert out['kept'][0]['name'] == VA1 and 'status.volumesInUse' in out['kept'][0]['why']
    assert fake.writes() == []


def test_i7_partial_failure_reports_changed_done_and_failed(monkeypatch, capsys):
    """I7: two stale attachments, the DELETE of one keeps failing: the module fails, with changed=true, the
    deleted one in done/deleted and the other in failed."""
    fake, clock, _vas = cluster(node_b_ready='Unknown')
    fake.hooks.append(attacher)
    fake.get('nodes', 'node-a')['status']['conditions'][0]['status'] = 'Unknown'
    fake.faults = [dict(method='DELETE', exact='/apis/storage.k8s.io/v1/volumeattachments/' + VA1, status=500,
                        count=99)]
    out, _calls = run(volumeattachment, dict(attacher='rbd.csi.ceph.com', only_stale=False), monkeypatch, capsys,
                      fake, clock)
    assert out['failed'] and out['changed'], out
    assert out['done'] == [VA0] and out['deleted'] == [VA0] and [f['name'] for f in out['failures']] == [VA1]
    assert 'Failed to delete VolumeAttachment %s: 500' % VA1 in out['failures'][0]['error']
    assert '(changed anyway: %s)' % VA0 in out['msg']
    assert fake.get('volumeattachments', VA0) is None and fake.get('volumeattachments', VA1) is not None


def test_i7_deleted_lists_an_attachment_whose_finalizer_force_removed(monkeypatch, capsys):
    """I7: `deleted` names what this run deleted, also when it then removed the attacher's finalizer
    (before, an attachment deleted and then force-cleared was missing from `deleted`)."""
    fake, clock, _vas = cluster()
    out, _calls = run(volumeattachment, dict(node='node-b', force=True, force_grace=0), monkeypatch, capsys, fake,
                      clock)
    assert out['changed'] and out['deleted'] == [VA0] and out['done'] == [VA0] and out['failures'] == []
    assert out['volumeattachments'][0]['finalizer_removed'] and fake.get('volumeattachments', VA0) is None


@pytest.mark.parametrize('module', [volumeattachment, volumeattachment_info])
def test_a_node_that_names_nothing_is_a_loud_warning(monkeypatch, capsys, module):
    fake, clock, _vas = cluster()
    out, _calls = run(module, dict(node='node-z'), monkeypatch, capsys, fake, clock)
    assert not out.get('failed') and not out['changed'] and out['volumeattachments'] == []
    assert any('no node named node-z and no VolumeAttachment to it' in w and 'node-a, node-b' in w
               for w in warning_texts(out))
    assert fake.writes() == []
    out, _calls = run(module, dict(node='node-b'), monkeypatch, capsys, fake, clock, check=True)
    assert out['volumeattachments'] and not any('no node named' in w for w in warning_texts(out))


def many(fake, count, node='node-b'):
    """`count` more stale attachments on node-b (NotReady), each of its own PV; their names."""
    from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import attachment_name
    names = []
    for i in range(count):
        pv = 'pv-m%d' % i
        fake.add('persistentvolumes', dict(metadata=dict(name=pv), spec=dict(
            csi=dict(driver='rbd.csi.ceph.com', volumeHandle='hm-%d' % i),
            claimRef=dict(namespace='default', name='cm-%d' % i))))
        name = attachment_name('hm-%d' % i, 'rbd.csi.ceph.com', node)
        fake.add('volumeattachments', dict(metadata=dict(name=name, finalizers=['external-attacher/rbd-csi-ceph-com']),
                                           spec=dict(attacher='rbd.csi.ceph.com', nodeName=node,
                                                     source=dict(persistentVolumeName=pv))), status=dict(attached=True))
        names.append(name)
    return names


def test_names_many_in_one_call_one_list_partial_failure_then_rerun(monkeypatch, capsys):
    """names: 30 stale attachments read with one LIST, deleted in parallel; the DELETE of one keeps failing: the
    others are deleted, the message names it; a re-run (fault gone) deletes it; every safety check still applies
    (VA1, used on Ready node-a, is kept)."""
    fake, clock, _vas = cluster()
    fake.hooks.append(attacher)
    names = many(fake, 30)
    bad = names[7]
    fake.faults = [dict(method='DELETE', exact='/apis/storage.k8s.io/v1/volumeattachments/' + bad, status=500,
                        count=99)]
    args = dict(names=names + [VA1, 'csi-gone'], parallel=8)
    out, _calls = run(volumeattachment, args, monkeypatch, capsys, fake, clock)
    assert out['failed'] and out['changed']
    assert sorted(out['deleted']) == sorted(n for n in names if n != bad)
    assert [f['name'] for f in out['failures']] == [bad] and bad in out['msg']
    assert out['msg'].startswith('1 of 31 selected VolumeAttachment(s) could not be handled: %s: Failed to delete '
                                 'VolumeAttachment %s: 500' % (bad, bad))
    assert [k['name'] for k in out['kept']] == [VA1]
    assert any('1 of the 32 VolumeAttachment name(s) not found: csi-gone' in w for w in warning_texts(out))
    # one LIST to select, one per poll while waiting (the attacher detaches at once: one poll); a GET only to
    # re-read the one whose DELETE failed before retrying it
    reads = [e[1] for e in fake.log if e[0] == 'GET' and e[1].startswith('/apis/storage.k8s.io/v1/volumeattachments')]
    assert [r for r in reads if r == '/apis/storage.k8s.io/v1/volumeattachments'] == [reads[0]] * 2
    assert set(r for r in reads if r != reads[0]) == set(['/apis/storage.k8s.io/v1/volumeattachments/' + bad])
    fake.faults = []
    out, _calls = run(volumeattachment, args, monkeypatch, capsys, fake, clock)
    assert not out.get('failed') and out['changed'] and out['deleted'] == [bad]
    out, _calls = run(volumeattachment, args, monkeypatch, capsys, fake, clock)
    assert not out['changed'] and out['deleted'] == [] and [k['name'] for k in out['kept']] == [VA1]
    assert fake.get('volumeattachments', VA1) is not None


def test_names_wait_polls_with_one_list(monkeypatch, capsys):
    """Waiting for more than ten attachments: one LIST per poll, not one GET each."""
    fake, clock, _vas = cluster()
    names = many(fake, 12)
    out, _calls = run(volumeattachment, dict(names=names, force=True, force_grace=2, wait_timeout=30), monkeypatch,
                      capsys, fake, clock)
    assert not out.get('failed') and sorted(out['deleted']) == sorted(names), out
    assert all(v['gone'] and v['finalizer_removed'] for v in out['volumeattachments'])
    single = [e for e in fake.log if e[0] == 'GET' and e[1].startswith('/apis/storage.k8s.io/v1/volumeattachments/')]
    assert single == []


def test_empty_names_selects_nothing(monkeypatch, capsys):
    fake, clock, _vas = cluster()
    out, _calls = run(volumeattachment, dict(names=[]), monkeypatch, capsys, fake, clock)
    assert not out.get('failed') and not out['changed'] and out['volumeattachments'] == [] and fake.writes() == []

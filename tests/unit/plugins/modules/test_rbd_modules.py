# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rbd_watchers_info, rbd_lock_info and rbd_lock end to end through AnsibleModule, on a fake cluster fed with the
outputs captured from the lab."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.volfence.csi.plugins.module_utils._ceph import client as _ceph_client
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import CephCommandError, CephNotFoundError
from ansible_collections.volfence.csi.plugins.modules import rbd_lock, rbd_lock_info, rbd_watchers_info
from ansible_collections.volfence.csi.tests.unit.plugins.modules.module_warnings import fresh_warnings, warning_texts
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import (
    MON_IP,
    NODES,
    FakeCluster,
    fixture,
)

HOLDERS = json.loads(fixture('holders.json'))


class FakeRbd(FakeCluster):
    def __init__(self, images=None, locks=None, **kw):
        super(FakeRbd, self).__init__(**kw)
        self.images = images or {}
        self.locks = locks or {}
        self.broken, self.added = [], []

    def inspect_images(self, specs, metadata=True, workers=16, locks=False):
        out = []
        for spec in specs:
            if str(spec) not in self.images:
                out.append((spec, None, CephNotFoundError('image %s does not exist' % spec, rc=2)))
            else:
                out.append((spec, dict(self.images[str(spec)]), None))
        return out

    def image_locks(self, spec):
        return json.loads(json.dumps(self.locks.get(str(spec), dict(exclusive=None, tag=None, lockers=[]))))

    def break_lock(self, spec, locker, lock_id):
        locks = self.locks[str(spec)]
        locks['lockers'] = [lk for lk in locks['lockers'] if (lk['locker'], lk['id']) != (locker, lock_id)]
        self.broken.append((str(spec), locker, lock_id))

    def add_lock(self, spec, lock_id, tag=None):
        if self.locks.get(str(spec), {}).get('lockers'):
            raise CephCommandError('busy', rc=errno.EBUSY)
        self.locks[str(spec)] = dict(exclusive=tag is None, tag=tag or '', lockers=[
            dict(locker='client.9', id=lock_id, address=NODES['node-a'] + ':0/9')])
        self.added.append((str(spec), lock_id, tag))

    def lock_owners(self, spec):
        return None


def run(module, args, monkeypatch, capsys, client, check=False, diff=False):
    monkeypatch.setattr(_ceph_client, 'connect', lambda params, tmpdir=None: client)
    with patch_module_args(dict(args, _ansible_check_mode=check, _ansible_diff=diff)):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


def two_watchers():
    return dict(watchers=[dict(address=w['address'], client_id=w['client'], cookie=w['cookie'])
                          for w in json.loads(fixture('rbd_status_two_watchers.json'))['watchers']],
                metadata=json.loads(fixture('rbd_image_meta_list.json')))


def kubelet_lock():
    return dict(exclusive=True, tag='', lockers=[dict(locker=i['locker'], id=i['id'], address=i['address'])
                                                 for i in json.loads(fixture('rbd_lock_ls_exclusive.json'))])


NODE_IPS = dict((node, [ip]) for node, ip in NODES.items())


def test_watchers_of_many_images(monkeypatch, capsys):
    client = FakeRbd(images={'rbd/a': two_watchers(), 'rbd/ns/b': dict(watchers=[], metadata={})})
    out = run(rbd_watchers_info, dict(images=['rbd/a', 'rbd/ns/b'], node_addresses=NODE_IPS,
                                      exclude_addresses=[NODES['node-c']]), monkeypatch, capsys, client)
    assert not out['changed'] and out['in_use'] and out['watchers_total'] == 1
    a, b = out['images']
    assert a['nodes'] == ['node-b'] and a['excluded_watchers'][0]['node'] == 'node-c'
    assert sorted(c['node'] for c in a['csi_client_addresses']) == ['node-b', 'node-c']
    assert b['namespace'] == 'ns' and not b['in_use']
    assert isinstance(a['watchers'][0]['cookie'], int)


def test_missing_images_fail_clearly_or_are_reported(monkeypatch, capsys):
    client = FakeRbd(images={'rbd/a': two_watchers()})
    out = run(rbd_watchers_info, dict(pool='rbd', image='nope'), monkeypatch, capsys, client)
    assert out['failed'] and '1 image(s) not found' in out['msg'] and 'rbd/nope' in out['msg']
    out = run(rbd_watchers_info, dict(images=['rbd/a', 'rbd/nope'], ignore_missing=True), monkeypatch, capsys, client)
    assert not out.get('failed') and [m['spec'] for m in out['missing']] == ['rbd/nope']


@pytest.mark.parametrize('args, message', [
    (dict(images=['rbd']), 'pool/image'),
    (dict(pool='rbd', image='a', images=['rbd/b']), 'mutually exclusive'),
    (dict(images=['rbd/a'], node_addresses={'n': ['x']}), 'node_addresses'),
    (dict(images=['rbd/a'], exclude_addresses=['10.0.0.1/99']), 'exclude_addresses'),
])
def test_watchers_bad_input(monkeypatch, capsys, args, message):
    out = run(rbd_watchers_info, args, monkeypatch, capsys, FakeRbd())
    assert out['failed'] and message in out['msg']


def test_lock_break_fences_the_locker_first(monkeypatch, capsys):
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    holder = kubelet_lock()['lockers'][0]
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='kubelet_lock_magic_*',
                             node_addresses=NODE_IPS), monkeypatch, capsys, client, diff=True)
    assert out['changed'] and [b['id'] for b in out['broken']] == ['kubelet_lock_magic_node-b']
    assert [a['entry'] for a in out['blocklisted']] == [holder['address']]
    assert list(client.entries) == [holder['address']]  # only that client instance, not the node's IP
    names = [c.json['prefix'] for c in client.calls]
    assert names.index('osd blocklist') < len(names) and client.broken == [('rbd/img', holder['locker'], holder['id'])]
    assert out['locks_after'] == [] and out['diff']['after'] == {'locks': []}
    assert out['locks'][0]['node'] == 'node-b'


def test_lock_break_also_fences_the_holder_nodes_addresses_and_never_a_protected_one(monkeypatch, capsys):
    """Issue 43: kubelet's `rbd lock add` is not the client that maps and writes the image: the holder node's
    address, whole, is blocklisted with the locker before the lock is broken; a protected one refuses it all."""
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    holder = kubelet_lock()['lockers'][0]
    whole = '%s:0/0' % NODES['node-b']
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='kubelet_lock_magic_*',
                             blocklist_addresses=[holder['address'], whole]), monkeypatch, capsys, client)
    assert sorted(a['entry'] for a in out['blocklisted']) == sorted([holder['address'], whole])
    assert [b['id'] for b in out['broken']] == ['kubelet_lock_magic_node-b']
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='kubelet_lock_magic_*',
                             blocklist_addresses=['%s:0/0' % NODES['node-a']], protect_addresses=[NODES['node-a']]),
              monkeypatch, capsys, client)
    assert out['failed'] and client.entries == {} and client.broken == [] and out['broken'] == []


def test_lock_break_check_mode_and_protect(monkeypatch, capsys):
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='*'), monkeypatch, capsys, client,
              check=True)
    assert out['changed'] and len(out['broken']) == 1 and client.broken == [] and client.entries == {}
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='*',
                             protect_addresses=[NODES['node-b']]), monkeypatch, capsys, client)
    assert not out['changed'] and out['protected'][0]['protected_by'] == NODES['node-b'] and client.broken == []


def test_lock_break_needs_a_filter_and_never_fences_a_daemon(monkeypatch, capsys):
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent'), monkeypatch, capsys, client)
    assert out['failed'] and 'at least one of lock_id' in out['msg']
    daemon_lock = dict(exclusive=True, tag='', lockers=[dict(locker='client.1', id='x', address=MON_IP + ':0/0')])
    client = FakeRbd(locks={'rbd/img': daemon_lock})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='x'), monkeypatch, capsys, client)
    assert out['failed'] and "cluster's own daemons" in out['msg'] and 'refused' in out['msg']
    assert client.broken == [] and client.entries == {}


def test_lock_present_idempotent_and_conflicts(monkeypatch, capsys):
    client = FakeRbd()
    out = run(rbd_lock, dict(pool='rbd', image='img', state='present', lock_id='kubelet_lock_magic_node-a'),
              monkeypatch, capsys, client)
    assert out['changed'] and client.added == [('rbd/img', 'kubelet_lock_magic_node-a', None)]
    out = run(rbd_lock, dict(pool='rbd', image='img', state='present', lock_id='kubelet_lock_magic_node-a'),
              monkeypatch, capsys, client)
    assert not out['changed']
    out = run(rbd_lock, dict(pool='rbd', image='img', state='present', lock_id='other'), monkeypatch, capsys, client)
    assert out['failed'] and 'is locked by client.9' in out['msg'] and 'state=absent' in out['msg']
    out = run(rbd_lock, dict(pool='rbd', image='img', state='present', lock_id='kubelet_lock_magic_node-a',
                             tag='t'), monkeypatch, capsys, client)
    assert out['failed'] and 'already held' in out['msg']
    out = run(rbd_lock, dict(pool='rbd', image='img', state='present'), monkeypatch, capsys, client)
    assert out['failed'] and 'lock_id' in out['msg']


def test_lock_list_reports_exclusive_lock_owner(monkeypatch, capsys):
    managed = json.loads(fixture('bindings_outputs.json'))
    data = [v for k, v in managed['images'].items() if '-managed-' in k][0]['list_lockers']
    locks = dict(exclusive=data['exclusive'], tag=data['tag'],
                 lockers=[dict(locker=c, id=i, address=a) for c, i, a in data['lockers']])
    out = run(rbd_lock, dict(pool='rbd', image='img'), monkeypatch, capsys, FakeRbd(locks={'rbd/img': locks}))
    assert not out['changed'] and out['exclusive_lock_owners'][0]['address'] == data['lockers'][0][2]


# ----------------------------------------------------------------------------- issue 11

def two_shared_locks():
    return dict(exclusive=False, tag='t', lockers=[
        dict(locker='client.41', id='kubelet_lock_magic_b1', address=NODES['node-b'] + ':0/41'),
        dict(locker='client.42', id='kubelet_lock_magic_b2', address=NODES['node-b'] + ':0/42')])


class FailingBreak(FakeRbd):
    def break_lock(self, spec, locker, lock_id):
        if lock_id == 'kubelet_lock_magic_b2':
            raise CephCommandError('rbd lock rm failed (rc=5 EIO): EIO', cmd=['rbd', 'lock', 'rm'], rc=5, stderr='EIO')
        super(FailingBreak, self).break_lock(spec, locker, lock_id)


def test_I7_rbd_lock_failing_after_fencing_and_breaking_some_says_which(monkeypatch, capsys):
    """Issue 11 item 7, I7: rbd_lock used to fail without changed and without saying which locks
    were broken and which lockers blocklisted."""
    client = FailingBreak(locks={'rbd/img': two_shared_locks()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='kubelet_lock_magic_*'), monkeypatch,
              capsys, client)
    assert out['failed'] and out['changed'] is True
    assert sorted(a['entry'] for a in out['blocklisted']) == [NODES['node-b'] + ':0/41', NODES['node-b'] + ':0/42']
    assert [lk['id'] for lk in out['broken']] == ['kubelet_lock_magic_b1']
    assert [lk['id'] for lk in out['failed_locks']] == ['kubelet_lock_magic_b2'] and 'EIO' in out['failed_locks'][0]['error']
    assert [lk['id'] for lk in out['locks_after']] == ['kubelet_lock_magic_b2']
    assert client.broken == [('rbd/img', 'client.41', 'kubelet_lock_magic_b1')]


def test_I7_rbd_lock_fencing_failing_halfway_reports_the_fence_made(monkeypatch, capsys):
    client = FakeRbd(locks={'rbd/img': two_shared_locks()}, fail=[NODES['node-b'] + ':0/42'])
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='*'), monkeypatch, capsys, client)
    assert out['failed'] and out['changed'] is True and 'no lock was broken' in out['msg']
    assert [a['entry'] for a in out['blocklisted']] == [NODES['node-b'] + ':0/41']
    assert [a['entry'] for a in out['blocklist_failed']] == [NODES['node-b'] + ':0/42']
    assert out['broken'] == [] and client.broken == []


@pytest.mark.parametrize('module, args', [
    (rbd_lock, dict(pool='rbd', image='--keyring=ceph.keyring')),
    (rbd_lock, dict(pool='-rbd', image='img')),
    (rbd_lock, dict(pool='rbd', namespace='--ns', image='img')),
    (rbd_lock, dict(pool='rbd', image='img', state='present', lock_id='--keyring=x')),
    (rbd_lock, dict(pool='rbd', image='img', state='present', lock_id='id', tag='--shared')),
    (rbd_lock, dict(pool='rbd', image='img', state='absent', locker='-client.4')),
    (rbd_watchers_info, dict(pool='rbd', image='--keyring=ceph.keyring')),
    (rbd_watchers_info, dict(images=['rbd/--keyring=ceph.keyring'])),
    (rbd_watchers_info, dict(images=['rbd/--ns/img'])),
])
def test_I9_names_starting_with_a_dash_are_refused(monkeypatch, capsys, module, args):
    """Issue 11 item 9, I9: `--keyring=...` used to be accepted as an image name."""
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(module, args, monkeypatch, capsys, client)
    assert out['failed'] and 'starts with "-"' in out['msg'] and 'nothing was changed' in out['msg']
    assert client.calls == [] and client.broken == [] and client.added == []


@pytest.mark.parametrize('expire', ['inf', 'nan', -3, 1e12])
def test_I9_blocklist_expire_inf_nan_negative_and_absurd_are_clear_errors(monkeypatch, capsys, expire):
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='*', blocklist_expire=expire),
              monkeypatch, capsys, client)
    assert out['failed'] and 'blocklist_expire' in out['msg'] and client.calls == [] and client.broken == []


def test_I1_rbd_lock_protects_a_holder_written_as_ipv4_mapped_ipv6(monkeypatch, capsys):
    locks = dict(exclusive=True, tag='', lockers=[dict(locker='client.7', id='kubelet_lock_magic_node-a',
                                                       address='[::ffff:%s]:0/7' % NODES['node-a'])])
    client = FakeRbd(locks={'rbd/img': locks})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='*',
                             protect_addresses=[NODES['node-a']]), monkeypatch, capsys, client)
    assert not out['changed'] and out['broken'] == [] and len(out['protected']) == 1
    assert client.broken == [] and client.entries == {}


def test_I7_rbd_watchers_accounts_for_every_image(monkeypatch, capsys):
    class OneFails(FakeRbd):
        def inspect_images(self, specs, metadata=True, workers=16, locks=False):
            out = super(OneFails, self).inspect_images(specs, metadata, workers, locks)
            return [(s, None, CephCommandError('timed out', rc=110)) if str(s) == 'rbd/b' else (s, r, e)
                    for s, r, e in out]
    client = OneFails(images={'rbd/a': two_watchers(), 'rbd/b': two_watchers()})
    out = run(rbd_watchers_info, dict(images=['rbd/a', 'rbd/b', 'rbd/nope']), monkeypatch, capsys, client)
    assert out['failed'] and '1 of 3 image(s)' in out['msg']
    assert [i['spec'] for i in out['images']] == ['rbd/a']
    assert [m['spec'] for m in out['missing']] == ['rbd/nope'] and [f['spec'] for f in out['failed_images']] == ['rbd/b']


def test_lock_break_that_selects_nothing_warns_and_changes_nothing(monkeypatch, capsys):
    fresh_warnings(monkeypatch)
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='kubelet_lock_magic_node-bb'),
              monkeypatch, capsys, client)
    assert not out.get('failed') and not out['changed'] and out['broken'] == []
    assert client.broken == [] and client.entries == {}
    warning = [w for w in warning_texts(out) if 'no lock of rbd/img' in w][0]
    assert "lock_id 'kubelet_lock_magic_node-bb'" in warning and "Did you mean lock_id 'kubelet_lock_magic_node-b'" in warning
    # the re-run after a successful break: same warning, the image has no locks left
    fresh_warnings(monkeypatch)
    client = FakeRbd()
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', locker='client.4272'), monkeypatch, capsys, client)
    assert not out['changed'] and any("locker 'client.4272'" in w and 'The image has no locks.' in w
                                      for w in warning_texts(out))


def test_lock_break_with_a_locker_that_can_never_be_one_fails_before_reading(monkeypatch, capsys):
    client = FakeRbd(locks={'rbd/img': kubelet_lock()})
    out = run(rbd_lock, dict(pool='rbd', image='img', state='absent', lock_id='*', locker='client.abc'),
              monkeypatch, capsys, client)
    assert out['failed'] and "locker 'client.abc' is not a locker name" in out['msg'] and client.calls == []
    assert client.broken == [] and client.entries == {}


# ----------------------------------------------------------------------------- issue 16: public names

def managed_lock():
    bindings = json.loads(fixture('bindings_outputs.json'))
    data = [v for k, v in bindings['images'].items() if '-managed-' in k][0]['list_lockers']
    return dict(exclusive=data['exclusive'], tag=data['tag'],
                lockers=[dict(locker=c, id=i, address=a) for c, i, a in data['lockers']])


def deprecation_texts(out):
    return [item if isinstance(item, str) else json.dumps(item) for item in out.get('deprecations') or []]


def test_rbd_lock_info_lists_what_rbd_lock_without_state_listed(monkeypatch, capsys):
    """rbd_lock_info gives the listing of rbd_lock without state (now deprecated there, with a
    warning that points to rbd_lock_info), and writes nothing."""
    for locks in (kubelet_lock(), managed_lock()):
        client = FakeRbd(locks={'rbd/ns/img': locks})
        fresh_warnings(monkeypatch)
        info = run(rbd_lock_info, dict(image_spec='rbd/ns/img', node_addresses=NODE_IPS), monkeypatch, capsys, client)
        assert not info.get('failed') and not info['changed'] and not deprecation_texts(info)
        assert info['locks'] and [lk['id'] for lk in info['locks']] == [lk['id'] for lk in locks['lockers']]
        assert info['versions'] == FakeRbd.known_versions and info['backend'] == 'fake'
        fresh_warnings(monkeypatch)
        listed = run(rbd_lock, dict(pool='rbd', namespace='ns', image='img', node_addresses=NODE_IPS),
                     monkeypatch, capsys, client)
        assert not listed.get('failed') and not listed['changed']
        for key in ('locks', 'exclusive_lock_owners', 'lock_owners', 'backend', 'versions'):
            assert info[key] == listed[key], key
        deprecations = deprecation_texts(listed)
        assert len(deprecations) == 1 and 'volfence.csi.rbd_lock_info' in deprecations[0]
        assert '2.0.0' in deprecations[0]
        assert client.broken == [] and client.added == []
        # the kubelet's lock is an advisory one; the managed one is the exclusive-lock feature's
        owners = [lk['address'] for lk in locks['lockers'] if locks['tag'] == 'internal']
        assert [owner['address'] for owner in info['exclusive_lock_owners']] == owners
    assert owners, 'the managed-lock fixture holds an owner'


class OwnersRefused(FakeRbd):
    def lock_owners(self, spec):
        raise CephCommandError('lock_get_owners failed: EBUSY', rc=-errno.EBUSY)


def test_rbd_lock_info_says_why_librbd_could_not_name_the_owners(monkeypatch, capsys):
    fresh_warnings(monkeypatch)
    out = run(rbd_lock_info, dict(image_spec='rbd/img', query_lock_owners=True), monkeypatch, capsys,
              OwnersRefused(locks={'rbd/img': kubelet_lock()}))
    assert not out.get('failed') and out['lock_owners'] is None and out['locks']
    assert any('lock_get_owners could not tell' in w and 'EBUSY' in w for w in warning_texts(out))


def test_rbd_lock_breaks_the_image_its_spec_names(monkeypatch, capsys):
    """image_spec names the same image as pool, namespace and image: the same lock is broken."""
    for args in (dict(image_spec='rbd/ns/img'), dict(pool='rbd', namespace='ns', image='img'),
                 dict(image='rbd/ns/img')):
        client = FakeRbd(locks={'rbd/ns/img': kubelet_lock(), 'rbd/img': kubelet_lock()})
        out = run(rbd_lock, dict(args, state='absent', lock_id='kubelet_lock_magic_*'), monkeypatch, capsys, client)
        assert out['changed'] and [b[0] for b in client.broken] == ['rbd/ns/img']
        assert client.locks['rbd/img']['lockers']


def test_rbd_watchers_info_reads_the_image_its_spec_names(monkeypatch, capsys):
    client = FakeRbd(images={'rbd/ns/a': two_watchers()})
    by_spec = run(rbd_watchers_info, dict(image_spec='rbd/ns/a', node_addresses=NODE_IPS), monkeypatch, capsys, client)
    by_parts = run(rbd_watchers_info, dict(pool='rbd', namespace='ns', image='a', node_addresses=NODE_IPS),
                   monkeypatch, capsys, client)
    # as the rbd tool takes it (`rbd status rbd/ns/a`)
    as_typed = run(rbd_watchers_info, dict(image='rbd/ns/a', node_addresses=NODE_IPS), monkeypatch, capsys, client)
    assert not by_spec.get('failed') and by_spec['images'] == by_parts['images'] == as_typed['images']
    assert by_spec['images'][0]['spec'] == 'rbd/ns/a' and by_spec['in_use']


class Untouchable(FakeRbd):
    """A cluster that fails the test if a module reads or writes anything."""

    def image_locks(self, spec):
        raise AssertionError('read the locks of %s' % spec)

    def inspect_images(self, specs, metadata=True, workers=16, locks=False):
        raise AssertionError('read %s' % specs)


BAD_SPECS = [
    ('rbd', 'must be pool/image or pool/namespace/image'),
    ('rbd/a/b/c', 'must be pool/image or pool/namespace/image'),
    ('rbd//img', 'must be pool/image or pool/namespace/image'),
    ('rbd/img@snap', 'must be pool/image or pool/namespace/image'),
    ('rbd/my img', 'must be pool/image or pool/namespace/image'),
    ('', 'must be pool/image or pool/namespace/image'),
    ('-rbd/img', 'starts with "-"'),
    ('rbd/--keyring=x', 'starts with "-"'),
]


@pytest.mark.parametrize('module, extra', [
    (rbd_lock_info, {}),
    (rbd_lock, dict(state='absent', lock_id='*')),
    (rbd_lock, dict(state='present', lock_id='mine')),
    (rbd_watchers_info, {}),
])
@pytest.mark.parametrize('spec, message', BAD_SPECS)
def test_a_bad_image_spec_fails_clearly_before_anything_is_read(monkeypatch, capsys, module, extra, spec, message):
    client = Untouchable()
    out = run(module, dict(extra, image_spec=spec), monkeypatch, capsys, client)
    assert out['failed'] and out['msg'].startswith('image_spec') and message in out['msg'], out['msg']
    assert 'nothing was changed' in out['msg'] and not out.get('changed')
    assert client.broken == [] and client.added == [] and client.calls == []


@pytest.mark.parametrize('module', [rbd_lock_info, rbd_lock, rbd_watchers_info])
@pytest.mark.parametrize('args, message', [
    (dict(image_spec='rbd/img', pool='rbd'), 'mutually exclusive: image_spec|pool'),
    (dict(image_spec='rbd/img', image='img'), 'mutually exclusive: image_spec|image'),
    (dict(image_spec='rbd/img', namespace='ns'), 'mutually exclusive: image_spec|namespace'),
    (dict(image='img'), 'image img needs its pool: give image=<pool>/img (or <pool>/<namespace>/img), or pool'),
    (dict(image='rbd/img', pool='rbd'), 'image rbd/img already names its pool: give it alone, or give pool and'),
    (dict(image='rbd/ns/img', namespace='ns'), 'image rbd/ns/img already names its pool'),
    (dict(image='rbd/-x'), "image 'rbd/-x': image '-x' starts with"),
])
def test_the_image_is_named_one_way(monkeypatch, capsys, module, args, message):
    client = Untouchable()
    out = run(module, args, monkeypatch, capsys, client)
    assert out['failed'] and message in out['msg'], out['msg']
    assert client.calls == [] and client.broken == []
    if 'image_spec' not in args:   # the user did not name it, so the answer does not either
        assert 'image_spec' not in out['msg'], out['msg']


def test_a_pool_without_its_image_is_named(monkeypatch, capsys):
    out = run(rbd_watchers_info, dict(pool='rbd'), monkeypatch, capsys, Untouchable())
    assert out['failed'] and out['msg'] == 'pool rbd needs image (the image\'s name): nothing was changed', out['msg']
    for module in (rbd_lock_info, rbd_lock):
        out = run(module, dict(pool='rbd'), monkeypatch, capsys, Untouchable())
        assert out['failed'] and 'one of the following is required: image_spec, image' in out['msg'], out['msg']


@pytest.mark.parametrize('module', [rbd_lock_info, rbd_lock])
def test_the_lock_modules_need_an_image(monkeypatch, capsys, module):
    out = run(module, {}, monkeypatch, capsys, Untouchable())
    assert out['failed'] and 'one of the following is required: image_spec, image' in out['msg'], out['msg']

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    AddressMatcher,
    CephCommandError,
    CephError,
    CephRefused,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import (
    BlocklistFailure,
    LockBreakFailure,
    break_image_locks,
    ensure_blocklist,
    read_blocklist,
    read_daemon_addresses,
)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import (
    MON_IP,
    NODES,
    SUBNET,
    DyingMonitor,
    FakeCluster,
)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import failover_cluster


def test_reads_daemons_from_the_real_dumps():
    daemons = read_daemon_addresses(FakeCluster())
    assert set(str(d.addr.ip) for d in daemons) == set([MON_IP])


def test_present_adds_once_and_is_idempotent():
    cluster = FakeCluster()
    result = ensure_blocklist(cluster, 'present', addresses=[NODES['node-b']], cidrs=['10.99.0.0/24'], expire=600)
    assert result['changed'] and result['cidr_mode'] == 'range' and result['naming'] == 'blocklist'
    assert sorted(a['entry'] for a in result['actions']) == ['%s:0/0' % NODES['node-b'], 'cidr:10.99.0.0:0/24']
    assert result['before'] == [] and result['after'] == ['%s:0/0' % NODES['node-b'], 'cidr:10.99.0.0:0/24']
    assert [c.json.get('expire') for c in cluster.changes()] == [600.0, 600.0]
    again = ensure_blocklist(cluster, 'present', addresses=[NODES['node-b']], cidrs=['10.99.0.0/24'])
    assert not again['changed'] and again['actions'] == [] and again['before'] == again['after']


def test_check_mode_predicts_without_changing():
    cluster = FakeCluster()
    result = ensure_blocklist(cluster, 'present', addresses=[NODES['node-b']], check_mode=True)
    assert result['changed'] and result['after'] == ['%s:0/0' % NODES['node-b']]
    assert cluster.changes() == [] and cluster.entries == {}


def test_refusal_changes_nothing():
    cluster = FakeCluster(entries=['10.0.0.9:0/0'])
    with pytest.raises(CephRefused, match='mon.a'):
        ensure_blocklist(cluster, 'present', addresses=[NODES['node-b'], MON_IP])
    with pytest.raises(CephRefused, match='0.0.0.0/0'):
        ensure_blocklist(cluster, 'present', cidrs=['0.0.0.0/0'], max_addresses=2 ** 40)
    with pytest.raises(CephRefused, match='max_addresses=256'):
        ensure_blocklist(cluster, 'present', cidrs=['10.99.0.0/22'])
    assert cluster.changes() == [] and list(cluster.entries) == ['10.0.0.9:0/0']


def test_bad_input_fails_before_talking_to_the_cluster():
    cluster = FakeCluster()
    with pytest.raises(ValueError, match='nothing was changed'):
        ensure_blocklist(cluster, 'present', addresses=['10.0.0.1', 'bogus'], cidrs=['10.0.0.0/33'])
    assert cluster.calls == []


def test_absent_removes_plain_nonce_and_ranges():
    cluster = FakeCluster(entries=['10.0.3.12:0/0', '10.0.3.12:0/3358807331', '10.0.3.13:0/0',
                                   'cidr:10.0.4.5:0/24', 'cidr:10.0.5.0:0/24'])
    result = ensure_blocklist(cluster, 'absent', addresses=['10.0.3.12'], cidrs=['10.0.4.0/24'])
    assert result['changed'] and result['cidr_mode'] is None
    assert sorted(cluster.entries) == ['10.0.3.13:0/0', 'cidr:10.0.5.0:0/24']
    rms = sorted((c.json.get('range', ''), c.json['addr']) for c in cluster.changes())
    assert rms == sorted([('', '10.0.3.12:0/0'), ('', '10.0.3.12:0/3358807331'), ('range', '10.0.4.5/24')])
    again = ensure_blocklist(cluster, 'absent', addresses=['10.0.3.12'], cidrs=['10.0.4.0/24'])
    assert not again['changed']


def test_pre_pacific_cluster_uses_blacklist_and_per_address_adds():
    cluster = FakeCluster(naming='blacklist')
    result = ensure_blocklist(cluster, 'present', cidrs=['10.99.1.0/29'], workers=5)
    assert result['naming'] == 'blacklist' and result['cidr_mode'] == 'addresses'
    assert sorted(cluster.entries) == sorted('10.99.1.%d:0/0' % i for i in range(1, 7))
    assert all(c.json['prefix'] == 'osd blacklist' and 'blacklistop' in c.json for c in cluster.changes())
    assert cluster.workers[-1] == 5
    with pytest.raises(CephError, match='no `osd blocklist range` command'):
        ensure_blocklist(FakeCluster(ranges=False), 'present', cidrs=['10.99.1.0/29'], cidr_mode='range')


def test_forced_per_address_mode_on_a_range_capable_cluster():
    cluster = FakeCluster()
    result = ensure_blocklist(cluster, 'present', cidrs=['10.99.2.0/24'], cidr_mode='addresses')
    assert result['cidr_mode'] == 'addresses' and len(result['actions']) == 254 and len(cluster.entries) == 254


def test_range_refused_at_run_time_falls_back_to_addresses():
    cluster = FakeCluster(range_refused=True)
    result = ensure_blocklist(cluster, 'present', addresses=['10.99.3.200'], cidrs=['10.99.3.0/30'])
    assert result['cidr_mode'] == 'addresses'
    assert sorted(cluster.entries) == ['10.99.3.1:0/0', '10.99.3.200:0/0', '10.99.3.2:0/0']
    assert any('does not support range' in w for w in result['warnings'])


def test_partial_failure_reports_what_was_done():
    cluster = FakeCluster(fail=['10.99.4.2:0/0'])
    with pytest.raises(BlocklistFailure) as info:
        ensure_blocklist(cluster, 'present', cidrs=['10.99.4.0/29'], cidr_mode='addresses')
    err = info.value
    assert '1 of 6 blocklist changes failed' in err.msg and err.stderr == 'EPERM'
    assert err.result['changed'] is True  # I7
    assert [a['target'] for a in err.result['failed_actions']] == ['10.99.4.2:0/0']
    assert len(err.result['actions']) == 5 and len(err.result['after']) == 5


def test_a_fence_the_cluster_does_not_list_is_an_error():
    class Forgetful(FakeCluster):
        def mon(self, command):
            out = super(Forgetful, self).mon(command)
            self.entries.pop('10.99.5.1:0/0', None)
            return out
    with pytest.raises(BlocklistFailure, match='does not list 10.99.5.1:0/0'):
        ensure_blocklist(Forgetful(), 'present', addresses=['10.99.5.1'])


def test_read_blocklist_raises_other_errors():
    class Broken(FakeCluster):
        def mon(self, command):
            raise CephCommandError('EACCES', cmd=command.json, rc=-13, stderr='access denied')
    with pytest.raises(CephCommandError, match='EACCES'):
        read_blocklist(Broken())


# ----------------------------------------------------------------------------- issue 11: I7 and I1

def test_I7_a_monitor_dying_mid_run_keeps_the_done_and_failed_lists():
    """Issue 11 item 7, I7: the read-back error used to replace what was done and failed."""
    cluster = DyingMonitor(alive=5)
    with pytest.raises(BlocklistFailure) as info:
        ensure_blocklist(cluster, 'present', cidrs=['10.99.6.0/29'], cidr_mode='addresses', workers=1)
    result = info.value.result
    assert result['changed'] is True
    assert len(result['actions']) == 5 and len(result['failed_actions']) == 1
    assert 'timeout' in result['failed_actions'][0]['error']
    assert 'could not read the blocklist back' in result['blocklist_error']
    assert sorted(result['after']) == sorted(cluster.entries)  # the prediction is what was really done
    assert '5 blocklist change(s) made, 1 failed' in info.value.msg and 'read the blocklist back' in info.value.msg


def test_I7_a_range_add_that_times_out_keeps_the_ranges_already_added():
    cluster = DyingMonitor(alive=1)
    with pytest.raises(BlocklistFailure) as info:
        ensure_blocklist(cluster, 'present', cidrs=['10.99.7.0/28', '10.99.8.0/28'])
    result = info.value.result
    assert result['changed'] is True and [a['target'] for a in result['actions']] == ['10.99.7.0/28']
    assert [a['target'] for a in result['failed_actions']] == ['10.99.8.0/28']


def test_I7_a_monitor_dead_before_any_change_is_a_plain_error_with_nothing_written():
    cluster = DyingMonitor(alive=0)
    cluster.alive = 10 ** 9  # reads work ...
    result_before = ensure_blocklist(cluster, 'present', addresses=['10.99.9.1'], check_mode=True)
    assert result_before['changed']
    cluster.alive = 0  # ... until the monitor stops answering: no change can be made
    with pytest.raises(CephError):
        ensure_blocklist(cluster, 'present', addresses=['10.99.9.1'])
    assert cluster.entries == {}


def test_I1_ensure_blocklist_refuses_protected_and_ipv4_mapped_monitor_addresses():
    cluster = FakeCluster()
    with pytest.raises(CephRefused, match='protect_addresses: %s' % NODES['node-a']):
        ensure_blocklist(cluster, 'present', addresses=['::ffff:%s' % NODES['node-a']], protect=[NODES['node-a']])
    with pytest.raises(CephRefused, match='mon.a'):
        ensure_blocklist(cluster, 'present', addresses=['[::ffff:%s]:0/0' % MON_IP])
    with pytest.raises(CephRefused, match='mon.a'):
        ensure_blocklist(cluster, 'present', cidrs=['::ffff:%s.0/120' % SUBNET])
    with pytest.raises(ValueError, match='nothing was changed'):
        ensure_blocklist(cluster, 'present', addresses=['10.99.9.9'], protect=['node-a'])
    assert cluster.changes() == []
    # protect does not apply to removals
    ensure_blocklist(FakeCluster(entries=['%s:0/0' % NODES['node-a']]), 'absent', addresses=[NODES['node-a']],
                     protect=[NODES['node-a']])


class LockCluster(FakeCluster):
    """FakeCluster with advisory locks; `fail_break` lock ids fail to break."""

    def __init__(self, lockers, fail_break=(), **kw):
        super(LockCluster, self).__init__(**kw)
        self.lockers = list(lockers)
        self.fail_break = set(fail_break)

    def image_locks(self, spec):
        return dict(exclusive=False, tag='t', lockers=[dict(x) for x in self.lockers])

    def break_lock(self, spec, locker, lock_id):
        if lock_id in self.fail_break:
            raise CephCommandError('rbd lock rm failed: EIO', cmd=['rbd', 'lock', 'rm'], rc=5, stderr='EIO')
        self.lockers = [x for x in self.lockers if (x['locker'], x['id']) != (locker, lock_id)]


def _locks(cluster):
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import describe_locks
    return describe_locks(cluster.image_locks('rbd/img'))


def _lockers():
    return [dict(locker='client.41', id='kubelet_lock_magic_b1', address=NODES['node-b'] + ':0/41'),
            dict(locker='client.42', id='kubelet_lock_magic_b2', address=NODES['node-b'] + ':0/42')]


def test_I7_lock_break_failing_after_fencing_and_breaking_some_says_which():
    """Issue 11 item 7, I7: rbd_lock used to fail after blocklisting and breaking some locks
    without saying which, and without changed."""
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import LockFilter
    cluster = LockCluster(_lockers(), fail_break=['kubelet_lock_magic_b2'])
    with pytest.raises(LockBreakFailure) as info:
        break_image_locks(cluster, 'rbd/img', _locks(cluster), LockFilter('kubelet_lock_magic_*'),
                          protect=AddressMatcher([]), expire=600)
    result = info.value.result
    assert result['changed'] is True
    assert sorted(a['entry'] for a in result['blocklisted']) == [NODES['node-b'] + ':0/41', NODES['node-b'] + ':0/42']
    assert [lk['id'] for lk in result['broken']] == ['kubelet_lock_magic_b1']
    assert [(lk['id'], 'EIO' in lk['error']) for lk in result['failed_locks']] == [('kubelet_lock_magic_b2', True)]
    assert [lk['id'] for lk in result['locks_after']] == ['kubelet_lock_magic_b2']  # read back
    assert 'kubelet_lock_magic_b1' in info.value.msg and 'kubelet_lock_magic_b2' in info.value.msg


def test_I7_lock_break_when_fencing_fails_halfway_breaks_nothing_and_reports_the_fences():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import LockFilter
    cluster = LockCluster(_lockers(), fail=[NODES['node-b'] + ':0/42'])
    with pytest.raises(LockBreakFailure) as info:
        break_image_locks(cluster, 'rbd/img', _locks(cluster), LockFilter('*'), protect=AddressMatcher([]))
    result = info.value.result
    assert result['changed'] is True and result['broken'] == []
    assert [a['entry'] for a in result['blocklisted']] == [NODES['node-b'] + ':0/41']
    assert [a['entry'] for a in result['blocklist_failed']] == [NODES['node-b'] + ':0/42']
    assert len(result['failed_locks']) == 2 and len(cluster.lockers) == 2
    assert 'no lock was broken' in info.value.msg


def test_I1_a_lock_held_from_an_ipv4_mapped_protected_address_is_neither_fenced_nor_broken():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import LockFilter
    cluster = LockCluster([dict(locker='client.7', id='kubelet_lock_magic_a', address='[::ffff:%s]:0/7'
                                % NODES['node-a'])])
    result = break_image_locks(cluster, 'rbd/img', _locks(cluster), LockFilter('*'),
                               protect=AddressMatcher([NODES['node-a']]))
    assert not result['changed'] and result['broken'] == [] and len(result['protected']) == 1
    assert cluster.changes() == [] and len(cluster.lockers) == 1


# --------------------------------------------------------------------------- fenced clients gone

class _ImageReads(object):
    """inspect_images() answering, read after read, the next of `rounds` ({spec text: [addresses]},
    or an error for a spec); the last round repeats."""

    def __init__(self, rounds):
        self.rounds = list(rounds)
        self.reads = 0

    def inspect_images(self, specs, metadata=True, workers=16, locks=False):
        answer = self.rounds[min(self.reads, len(self.rounds) - 1)]
        self.reads += 1
        out = []
        for spec in specs:
            value = answer.get(str(spec), [])
            if isinstance(value, Exception):
                out.append((spec, None, value))
            else:
                watchers = [{'address': a, 'client_id': 4100 + i, 'cookie': i + 1} for i, a in enumerate(value)]
                out.append((spec, {'watchers': watchers}, None))
        return out


class _FakeTime(object):
    """A clock (_clock.Clock's time and sleep) that moves only when something sleeps."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _specs(*texts):
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import parse_image_spec
    return [parse_image_spec(t) for t in texts]


def test_wait_unwatched_returns_once_the_fenced_clients_are_gone():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import fence_matcher, wait_unwatched
    client = _ImageReads([{'rbd/a': ['10.0.0.2:0/55', '10.0.0.7:0/1']}, {'rbd/a': ['10.0.0.7:0/1']}])
    t = _FakeTime()
    reports, still = wait_unwatched(client, _specs('rbd/a'), fence_matcher(['10.0.0.2:0/55'], []), wait_timeout=30,
                                    clock=t)
    assert still == [] and client.reads == 2
    # the unfenced watcher (another node's client) is reported, not waited for
    assert [w['address'] for w in reports[0]['watchers']] == ['10.0.0.7:0/1']


def test_wait_unwatched_times_out_naming_the_fenced_clients_still_there():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import fence_matcher, wait_unwatched
    client = _ImageReads([{'rbd/a': ['10.0.0.2:0/55'], 'rbd/b': ['10.1.0.9:0/3']}])
    t = _FakeTime()
    _reports, still = wait_unwatched(client, _specs('rbd/a', 'rbd/b'), fence_matcher(['10.0.0.2'], ['10.1.0.0/24']),
                                     wait_timeout=5, clock=t)
    assert still == [('rbd/a', '10.0.0.2:0/55'), ('rbd/b', '10.1.0.9:0/3')]
    assert t.now == 5  # the last read comes at the deadline, not after it


def test_wait_unwatched_a_missing_image_has_no_watcher_an_unreadable_one_fails():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import CephNotFoundError
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import fence_matcher, wait_unwatched
    t = _FakeTime()
    gone = _ImageReads([{'rbd/a': CephNotFoundError('image rbd/a not found')}])
    assert wait_unwatched(gone, _specs('rbd/a'), fence_matcher(['10.0.0.2'], []), wait_timeout=5, clock=t) == ([], [])
    broken = _ImageReads([{'rbd/a': CephError('permission denied')}])
    with pytest.raises(CephError, match='permission denied'):
        wait_unwatched(broken, _specs('rbd/a'), fence_matcher(['10.0.0.2'], []), wait_timeout=5, clock=t)


@pytest.mark.parametrize('address, fenced', [
    ('10.0.0.1:0/777', True),    # ip:0/0 fences every client of the IP
    ('10.0.0.2:0/55', True),     # the exact client
    ('10.0.0.2:0/56', False),    # another client of that IP is not fenced by an exact entry
    ('10.1.0.7:0/3', True),      # inside the CIDR
    ('10.0.0.3:0/1', False),
])
def test_fence_matcher_matches_as_ceph_does(address, fenced):
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import parse_addr
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import fence_matcher
    matcher = fence_matcher(['10.0.0.1:0/0', '10.0.0.2:0/55'], ['10.1.0.0/24'])
    assert (matcher.match(parse_addr(address)) is not None) == fenced


# --------------------------------------------------------------------------- a failover's fence, in one call

def _cluster_objects(lease_b=3600):
    """node-b failed (NotReady, its Lease `lease_b` s old); node-a and node-c Ready."""
    return failover_cluster(NODES, 'node-b', failed_lease_age=lease_b)


B = NODES['node-b'] + ':0/1311344876'   # the failed node's client
C = NODES['node-c'] + ':0/3313351772'   # a Ready node's client
POD = '10.244.2.7:0/9'                  # a pod-network client no node lists


class WatchedCluster(FakeCluster):
    """FakeCluster whose images are watched: {spec: [watcher address]}. A watcher whose client the
    blocklist fences (its exact entry, or ip:0/0) is still seen by the first `linger` - 1 reads after
    its entry was added, gone from the `linger`th on (0: at once; None: never, as a client an OSD has not
    dropped yet). `errors` {spec: CephError} cannot be read; a spec in neither is missing (CephNotFoundError)."""

    def __init__(self, images, metadata=None, errors=None, linger=0, passing=None, **kw):
        super(WatchedCluster, self).__init__(**kw)
        self.images = dict((k, list(v)) for k, v in images.items())
        # {(spec, address): n}: a client that watches only during the first n reads (a CSI controller
        # that opened the image for a moment)
        self.passing = dict(passing or {})
        self.metadata = dict(metadata or {})
        self.errors = dict(errors or {})
        self.linger = linger
        self.reads = []
        self.fenced_at = {}

    def mon(self, command):
        before = set(self.entries)
        out = super(WatchedCluster, self).mon(command)
        for entry in set(self.entries) - before:
            self.fenced_at[entry] = len(self.reads)
        return out

    def _gone(self, address):
        from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import parse_addr
        addr = parse_addr(address)
        for entry in (str(addr), '%s:0/0' % (addr.ip if addr.ip.version == 4 else '[%s]' % addr.ip)):
            if entry in self.fenced_at:
                return self.linger is not None and len(self.reads) - self.fenced_at[entry] >= self.linger
        return False

    def inspect_images(self, specs, metadata=True, workers=16, locks=False):
        from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import CephNotFoundError
        self.reads.append(dict(specs=[str(s) for s in specs], metadata=metadata))
        out = []
        for spec in specs:
            key = str(spec)
            if key in self.errors:
                out.append((spec, None, self.errors[key]))
            elif key not in self.images:
                out.append((spec, None, CephNotFoundError('image %s not found' % key, rc=-2)))
            else:
                watchers = [dict(address=a, client_id=4500 + i, cookie=94000 + i)
                            for i, a in enumerate(self.images[key]) if not self._gone(a)
                            and len(self.reads) <= self.passing.get((key, a), len(self.reads))]
                raw = dict(watchers=watchers)
                if metadata:
                    raw['metadata'] = dict(self.metadata.get(key) or {})
                if locks:  # the image's lockers, as image_locks() answers (the lock_table a test sets)
                    empty = dict(exclusive=None, tag=None, lockers=[])
                    raw['locks'] = dict(getattr(self, 'lock_table', {}).get(key) or empty)
                out.append((spec, raw, None))
        return out


def _fence(cluster, specs, failed=('node-b',), lease_b=3600, **kw):
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import fence_failed_nodes
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import NodeMap
    nodes, leases = _cluster_objects(lease_b)
    t = kw.pop('time', None) or _FakeTime()
    node_map = NodeMap(dict((n, [ip]) for n, ip in NODES.items()))
    return fence_failed_nodes(cluster, _specs(*specs), failed_nodes=list(failed), nodes=nodes, leases=leases,
                              node_map=node_map, clock=t, **kw)


def test_fence_failed_nodes_fences_only_the_failed_nodes_client_and_keeps_the_ready_nodes():
    cluster = WatchedCluster({'rbd/a': [B, C], 'rbd/b': [C]}, linger=2)
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a', 'rbd/b'], expire=900, time=t)
    plan = out['plan']
    assert plan['refused'] is None
    assert plan['fence'] == [B] and plan['by_node'] == {'node-b': [B]}
    assert plan['by_image'] == {'rbd/a': [B], 'rbd/b': []}
    # I1: the Ready node's watcher is kept, on both images, each with the reason
    assert sorted((k['image'], k['address'], k['invariant']) for k in plan['kept']) == [
        ('rbd/a', C, 'I1'), ('rbd/b', C, 'I1')]
    assert all('Ready node node-c' in k['reason'] and k['other_node'] == 'node-c' for k in plan['kept'])
    # blocklisted per client, exactly that one, with the expiry asked
    assert list(cluster.entries) == [B]
    assert [(c.json['blocklistop'], c.json['addr'], c.json.get('expire')) for c in cluster.changes()] == [
        ('add', B, 900.0)]
    assert out['result']['changed'] and [a['entry'] for a in out['result']['actions']] == [B]
    # waited until the fenced client was gone (the second read after the add), not longer
    assert out['still'] == [] and len(cluster.reads) == 1 + 2 and t.now > 0
    assert cluster.reads[0]['metadata'] is True and cluster.reads[-1]['metadata'] is False
    after = dict((r['spec'], [w['address'] for w in r['watchers']]) for r in out['watchers_after'])
    assert after == {'rbd/a': [C], 'rbd/b': [C]}
    # what was read before the fence is reported, with the watchers' nodes
    before = dict((r['spec'], r['nodes']) for r in out['images'])
    assert before == {'rbd/a': ['node-b', 'node-c'], 'rbd/b': ['node-c']}
    assert out['missing'] == [] and out['failed_images'] == []


def test_fence_failed_nodes_a_fresh_lease_fences_nothing_unless_force():
    cluster = WatchedCluster({'rbd/a': [B, C]})
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a'], lease_b=5, lease_grace=120, time=t)
    assert 'node node-b renewed its Lease' in out['plan']['refused']
    assert out['plan']['fence'] == [] and out['plan']['by_node'] == {'node-b': []}
    kept = dict((k['address'], k['reason']) for k in out['plan']['kept'])
    assert kept[B].startswith('not fenced: node node-b renewed its Lease')
    assert 'Ready node node-c' in kept[C]
    # nothing fenced, the blocklist not even read, nothing waited for
    assert out['result'] is None and cluster.calls == [] and cluster.entries == {}
    assert len(cluster.reads) == 1 and t.now == 0 and out['watchers_after'] == [] and out['still'] == []

    forced = _fence(cluster, ['rbd/a'], lease_b=5, lease_grace=120, force=True)
    assert forced['plan']['refused'] is None and forced['plan']['fence'] == [B]
    assert list(cluster.entries) == [B]
    # force lets the fresh Lease pass, never the Ready node
    assert [k['address'] for k in forced['plan']['kept']] == [C]


def test_fence_failed_nodes_a_ready_failed_node_is_refused_even_with_force():
    cluster = WatchedCluster({'rbd/a': [C]})
    out = _fence(cluster, ['rbd/a'], failed=['node-c'], force=True)
    assert out['plan']['refused'] == 'node node-c is Ready' and out['plan']['fence'] == []
    assert cluster.calls == [] and cluster.entries == {}


def test_fence_failed_nodes_an_unreadable_image_fails_before_anything_is_fenced():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import FenceFailure
    denied = CephCommandError('rbd status failed: EACCES', cmd=['rbd', 'status'], rc=-13, stderr='permission denied')
    cluster = WatchedCluster({'rbd/a': [B, C], 'rbd/b': [B]}, errors={'rbd/b': denied})
    with pytest.raises(FenceFailure) as info:
        _fence(cluster, ['rbd/a', 'rbd/b'])
    err = info.value
    assert err.msg.startswith('could not read 1 of 2 image(s), first rbd/b: rbd status failed: EACCES')
    assert err.msg.endswith('; nothing was fenced')
    assert err.rc == -13 and err.stderr == 'permission denied' and err.cmd == ['rbd', 'status']
    assert err.result['failed_images'] == [dict(spec='rbd/b', error='rbd status failed: EACCES')]
    assert err.result['plan'] is None and err.result['result'] is None
    assert [r['spec'] for r in err.result['images']] == ['rbd/a']
    # no blocklist entry, and no monitor command at all
    assert cluster.calls == [] and cluster.entries == {} and len(cluster.reads) == 1


def test_fence_failed_nodes_check_mode_plans_adds_nothing_and_does_not_wait():
    cluster = WatchedCluster({'rbd/a': [B, C]}, linger=None)
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a'], check_mode=True, time=t)
    assert out['plan']['fence'] == [B] and out['plan']['by_node'] == {'node-b': [B]}
    assert out['result']['changed'] is True and [a['entry'] for a in out['result']['actions']] == [B]
    assert out['result']['after'] == [B]  # the prediction
    assert cluster.changes() == [] and cluster.entries == {}
    assert len(cluster.reads) == 1 and t.now == 0 and out['watchers_after'] == [] and out['still'] == []


def test_fence_failed_nodes_a_missing_image_is_listed_and_the_others_fenced():
    cluster = WatchedCluster({'rbd/a': [B]})
    out = _fence(cluster, ['rbd/a', 'rbd/gone'])
    assert out['missing'] == [dict(spec='rbd/gone', error='image rbd/gone not found')]
    assert [r['spec'] for r in out['images']] == ['rbd/a'] and out['failed_images'] == []
    assert out['plan']['fence'] == [B] and list(cluster.entries) == [B] and out['still'] == []
    # the wait reads the missing image too, as having no watcher
    assert cluster.reads[-1]['specs'] == ['rbd/a', 'rbd/gone']
    assert [r['spec'] for r in out['watchers_after']] == ['rbd/a']


def test_fence_failed_nodes_returns_the_clients_still_watching_after_the_timeout():
    cluster = WatchedCluster({'rbd/a': [B, C], 'rbd/b': [B]}, linger=None)
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a', 'rbd/b'], wait_timeout=7, time=t)
    assert list(cluster.entries) == [B]  # the entry is in place ...
    assert out['still'] == [('rbd/a', B), ('rbd/b', B)]  # ... but the client still watches
    assert t.now == 7 and len(cluster.reads) > 2
    after = dict((r['spec'], [w['address'] for w in r['watchers']]) for r in out['watchers_after'])
    assert after == {'rbd/a': [B, C], 'rbd/b': [B]}


def test_fence_failed_nodes_fences_a_pod_network_client_ceph_csi_recorded_for_the_failed_node():
    meta = {'rbd/a': {'.rbd.csi.ceph.com/clientaddress/0001-0009-rbd-0000000000000002-vol1/node-b': '10.244.2.7'}}
    cluster = WatchedCluster({'rbd/a': [POD, C], 'rbd/u': ['10.244.9.9:0/4']}, metadata=meta)
    out = _fence(cluster, ['rbd/a', 'rbd/u'])
    # no node lists 10.244.2.7, but ceph-csi recorded it for node-b on rbd/a: its whole IP is fenced for node-b, as
    # ceph-csi fences it (a frozen second client of that IP is cut too), and the watcher POD with it
    whole = '10.244.2.7:0/0'
    assert out['plan']['by_node'] == {'node-b': [whole]} and list(cluster.entries) == [whole]
    assert out['plan']['fenced'] == [dict(entry=whole, node='node-b', images=['rbd/a'],
                                          sources=['ceph-csi record', 'watcher'])]
    # an address nobody recorded or lists is kept (fence_unknown_watchers is off)
    kept = dict((k['address'], k['reason']) for k in out['plan']['kept'])
    assert sorted(kept) == sorted(['10.244.9.9:0/4', C]) and 'fence_unknown_watchers' in kept['10.244.9.9:0/4']
    assert out['still'] == []


def test_fence_failed_nodes_a_protected_address_refuses_the_whole_fence():
    cluster = WatchedCluster({'rbd/a': [B]})
    # ensure_blocklist refuses it again, before any change, although the plan chose it; the failure
    # keeps what was read and planned, for the report
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import FenceFailure
    with pytest.raises(FenceFailure, match='protect_addresses') as info:
        _fence(cluster, ['rbd/a'], protect=[NODES['node-b']])
    assert info.value.result['plan']['fence'] == [B] and info.value.result['images']
    assert cluster.changes() == [] and cluster.entries == {} and len(cluster.reads) == 1


def test_fence_failed_nodes_a_blocklist_change_that_fails_keeps_what_was_read_and_done():
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import FenceFailure
    other = NODES['node-b'] + ':0/77'
    cluster = WatchedCluster({'rbd/a': [B], 'rbd/b': [other]}, fail=[other])
    with pytest.raises(FenceFailure) as info:
        _fence(cluster, ['rbd/a', 'rbd/b'])
    result = info.value.result
    assert result['plan']['fence'] == [B, other]
    assert [a['entry'] for a in result['result']['actions']] == [B]
    assert [a['entry'] for a in result['result']['failed_actions']] == [other]
    assert result['result']['changed'] is True and list(cluster.entries) == [B]
    assert '1 of 2 blocklist changes failed' in info.value.msg
    # nothing is waited for on a fence that was not set
    assert len(cluster.reads) == 1 and result['still'] == []


def test_fence_failed_nodes_a_second_run_adds_nothing():
    cluster = WatchedCluster({'rbd/a': [B, C]})
    first = _fence(cluster, ['rbd/a'])
    assert first['result']['changed'] and list(cluster.entries) == [B]
    calls = len(cluster.changes())
    again = _fence(cluster, ['rbd/a'])
    # B no longer watches: nothing to fence, nothing written
    assert again['plan']['fence'] == [] and again['result'] is None and len(cluster.changes()) == calls


CONTROLLER = '10.244.0.12:0/3141592653'  # ceph-csi's controller plugin on the pod network


def test_fence_failed_nodes_reads_again_until_a_passing_controller_client_is_gone():
    # the controller plugin opened rbd/a for its ControllerUnpublish during the first two reads
    cluster = WatchedCluster({'rbd/a': [B, CONTROLLER]}, passing={('rbd/a', CONTROLLER): 2})
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a'], time=t, settle_timeout=10)
    # planned from the third read: nothing kept, so the pod can be released (I6)
    assert out['plan']['kept'] == [] and out['plan']['fence'] == [B] and list(cluster.entries) == [B]
    assert out['passed'] == [dict(image='rbd/a', address=CONTROLLER)]
    assert [r['metadata'] for r in cluster.reads[:3]] == [True, True, True] and 0 < t.now < 10
    # the images reported are those of the read the plan was made from
    assert [w['address'] for w in out['images'][0]['watchers']] == [B]


def test_fence_failed_nodes_a_watcher_that_stays_is_kept_after_the_settle_time():
    cluster = WatchedCluster({'rbd/a': [B, '10.244.9.9:0/4']})
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a'], time=t, settle_timeout=5)
    assert [(k['address'], k.get('unlisted')) for k in out['plan']['kept']] == [('10.244.9.9:0/4', True)]
    assert out['passed'] == [] and out['plan']['fence'] == [B]
    # read until the settle time passed, then fenced what was the failed node's
    planning = [r for r in cluster.reads if r['metadata']]
    assert len(planning) > 2 and t.now >= 5


def test_fence_failed_nodes_does_not_wait_for_watchers_of_listed_nodes_or_without_settle_time():
    # a Ready node's client is kept at once (it is no failed node's, and listed): no second read
    cluster = WatchedCluster({'rbd/a': [B, C]})
    t = _FakeTime()
    _fence(cluster, ['rbd/a'], time=t, settle_timeout=10)
    assert len([r for r in cluster.reads if r['metadata']]) == 1
    # settle_timeout=0 (the function's default): one read, the passing client kept
    cluster = WatchedCluster({'rbd/a': [B, CONTROLLER]}, passing={('rbd/a', CONTROLLER): 1})
    out = _fence(cluster, ['rbd/a'])
    assert [k['address'] for k in out['plan']['kept']] == [CONTROLLER] and out['passed'] == []
    assert len([r for r in cluster.reads if r['metadata']]) == 1


def test_fence_failed_nodes_a_node_not_proven_down_is_not_waited_for():
    cluster = WatchedCluster({'rbd/a': [B, CONTROLLER]})
    t = _FakeTime()
    out = _fence(cluster, ['rbd/a'], lease_b=5, lease_grace=120, time=t, settle_timeout=10)
    assert out['plan']['refused'] and t.now == 0 and len(cluster.reads) == 1

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ceph_blocklist and ceph_blocklist_info end to end through AnsibleModule, on a fake cluster."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.volfence.csi.plugins.module_utils._ceph import client as _ceph_client
from ansible_collections.volfence.csi.plugins.modules import ceph_blocklist, ceph_blocklist_info
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import (
    MON_IP,
    NODES,
    FakeCluster,
)


def run(module, args, monkeypatch, capsys, client, check=False, diff=False):
    calls = []

    def fake_connect(params, tmpdir=None):
        calls.append(params)
        return client

    monkeypatch.setattr(_ceph_client, 'connect', fake_connect)
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out), calls


def test_present_with_diff_then_idempotent(monkeypatch, capsys):
    cluster = FakeCluster()
    out, _ignored = run(ceph_blocklist, dict(addresses=[NODES['node-b']], cidrs=['10.99.0.0/24'], expire=60),
                        monkeypatch, capsys, cluster, diff=True)
    assert out['changed'] and out['backend'] == 'fake' and out['cidr_mode'] == 'range'
    assert out['diff'] == dict(before=dict(blocklist=[]),
                               after=dict(blocklist=['%s:0/0' % NODES['node-b'], 'cidr:10.99.0.0:0/24']))
    assert out['blocklist'] == out['diff']['after']['blocklist'] and cluster.closed
    out, _ignored = run(ceph_blocklist, dict(addresses=[NODES['node-b']], cidrs=['10.99.0.0/24']), monkeypatch,
                        capsys, cluster)
    assert not out['changed']


def test_check_mode_changes_nothing(monkeypatch, capsys):
    cluster = FakeCluster()
    out, _ignored = run(ceph_blocklist, dict(cidrs=['10.99.0.0/24']), monkeypatch, capsys, cluster, check=True)
    assert out['changed'] and out['blocklist'] == ['cidr:10.99.0.0:0/24'] and cluster.entries == {}


@pytest.mark.parametrize('args, message', [
    (dict(addresses=['10.0.0.300']), 'not a valid'),
    (dict(cidrs=['10.0.0.5/24']), 'host bits set'),
    (dict(addresses=[]), 'at least one address or CIDR'),
    (dict(addresses=['10.0.0.1'], expire=-5), 'expire must be positive'),
])
def test_bad_input_fails_without_connecting(monkeypatch, capsys, args, message):
    out, calls = run(ceph_blocklist, args, monkeypatch, capsys, FakeCluster())
    assert out['failed'] and message.split()[0] in out['msg'] and calls == []


def test_refusing_the_monitor(monkeypatch, capsys):
    cluster = FakeCluster()
    out, _ignored = run(ceph_blocklist, dict(addresses=[MON_IP]), monkeypatch, capsys, cluster)
    assert out['failed'] and "cluster's own daemons" in out['msg'] and 'mon.a' in out['msg']
    assert cluster.changes() == []


def test_unknown_backend_is_rejected_by_the_argument_spec(monkeypatch, capsys):
    out, calls = run(ceph_blocklist, dict(addresses=['10.0.0.1'], backend='librados'), monkeypatch, capsys,
                     FakeCluster())
    assert out['failed'] and 'backend' in out['msg'] and 'auto, rados, cli' in out['msg'] and calls == []


def test_key_is_never_echoed(monkeypatch, capsys):
    out, calls = run(ceph_blocklist, dict(addresses=['10.0.0.1'], key='AQDsecretsecretsecret=='), monkeypatch,
                     capsys, FakeCluster())
    assert 'AQDsecretsecretsecret' not in json.dumps(out)
    assert calls[0]['key'] == 'AQDsecretsecretsecret=='


def test_info_lists_entries_with_expiry_and_filters(monkeypatch, capsys):
    cluster = FakeCluster(entries=['10.0.3.12:0/0', '10.0.3.12:0/77', 'cidr:10.0.4.0:0/24'])
    out, _ignored = run(ceph_blocklist_info, {}, monkeypatch, capsys, cluster)
    assert out['count'] == out['total'] == 3 and out['range_supported'] and not out['changed']
    kinds = [(e['kind'], e['entry']) for e in out['entries']]
    assert kinds == [('address', '10.0.3.12:0/0'), ('address', '10.0.3.12:0/77'), ('range', 'cidr:10.0.4.0:0/24')]
    assert all(e['expires'].endswith('Z') and isinstance(e['expires_in'], int) for e in out['entries'])
    out, _ignored = run(ceph_blocklist_info, dict(match=['10.0.4.9']), monkeypatch, capsys, cluster)
    assert [e['cidr'] for e in out['entries']] == ['10.0.4.0/24'] and out['total'] == 3


# ----------------------------------------------------------------------------- issue 11

def test_I7_failing_after_5_of_6_adds_reports_changed_and_both_lists(monkeypatch, capsys):
    """Issue 11 item 7, I7: the module used to fail without `changed` after writing 5 entries."""
    cluster = FakeCluster(fail=['10.99.4.2:0/0'])
    out, _ignored = run(ceph_blocklist, dict(cidrs=['10.99.4.0/29'], cidr_mode='addresses'), monkeypatch, capsys,
                        cluster)
    assert out['failed'] and out['changed'] is True
    assert len(out['actions']) == 5 and [a['target'] for a in out['failed_actions']] == ['10.99.4.2:0/0']
    assert out['failed_actions'][0]['error'] == 'refused' and len(out['blocklist']) == 5
    assert sorted(out['blocklist']) == sorted(cluster.entries)


def test_I7_a_monitor_dying_mid_run_keeps_the_lists_and_adds_the_error(monkeypatch, capsys):
    from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import DyingMonitor
    cluster = DyingMonitor(alive=2)
    out, _ignored = run(ceph_blocklist, dict(addresses=['10.99.5.1', '10.99.5.2', '10.99.5.3'], parallel=1),
                        monkeypatch, capsys, cluster)
    assert out['failed'] and out['changed'] is True
    assert [a['target'] for a in out['actions']] == ['10.99.5.1:0/0', '10.99.5.2:0/0']
    assert [a['target'] for a in out['failed_actions']] == ['10.99.5.3:0/0']
    assert 'could not read the blocklist back' in out['blocklist_error'] and out['blocklist_error'] in out['msg']
    assert sorted(out['blocklist']) == ['10.99.5.1:0/0', '10.99.5.2:0/0']


@pytest.mark.parametrize('args', [
    dict(addresses=['::ffff:%s' % MON_IP]),
    dict(addresses=['[::ffff:%s]:0/0' % MON_IP]),
    dict(cidrs=['::ffff:%s.0/120' % MON_IP.rsplit('.', 1)[0]]),
    dict(addresses=['::ffff:%s' % NODES['node-a']], protect_addresses=[NODES['node-a']]),
    dict(cidrs=['%s.0/24' % NODES['node-a'].rsplit('.', 1)[0]], protect_addresses=['::ffff:%s' % NODES['node-a']]),
])
def test_I1_ipv4_mapped_and_protected_addresses_are_refused(monkeypatch, capsys, args):
    """Issue 11 item 4, I1: IPv4-mapped IPv6 passed the daemon interlock; protect_addresses is
    the Ready-node interlock for ad hoc use."""
    cluster = FakeCluster()
    out, _ignored = run(ceph_blocklist, args, monkeypatch, capsys, cluster)
    assert out['failed'] and 'refused, nothing was changed' in out['msg'] and not out.get('changed')
    assert cluster.changes() == []


def test_protect_addresses_with_garbage_fails_without_connecting(monkeypatch, capsys):
    out, calls = run(ceph_blocklist, dict(addresses=['10.0.0.1'], protect_addresses=['node-a']), monkeypatch,
                     capsys, FakeCluster())
    assert out['failed'] and "'node-a' is not an IP" in out['msg'] and calls == []


@pytest.mark.parametrize('expire', ['inf', 'nan', '-inf', -1, 1e12])
def test_I9_expire_inf_nan_negative_and_absurd_are_clear_errors(monkeypatch, capsys, expire):
    """Issue 11 item 9, I9: expire: inf used to end in a traceback (OverflowError)."""
    out, calls = run(ceph_blocklist, dict(addresses=['10.0.0.1'], expire=expire), monkeypatch, capsys, FakeCluster())
    assert out['failed'] and 'expire' in out['msg'] and 'Traceback' not in json.dumps(out) and calls == []

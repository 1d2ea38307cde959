# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 17 at the module level: bad input says what is wrong and changes nothing (fake cluster;
the lab tests in tests/integration/ceph/test_ceph_inputs.py prove the same on the real one)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import Request, check_removal
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import CephRefused, check_expire
from ansible_collections.volfence.csi.plugins.module_utils._ranges import check_range
from ansible_collections.volfence.csi.plugins.modules import ceph_blocklist, rbd_lock, rbd_watchers_info
from ansible_collections.volfence.csi.tests.unit.plugins.modules.test_ceph_blocklist import run
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import FakeCluster

ENTRIES = ('10.0.0.5:0/0', '10.1.2.3:0/0', '[fd00::5]:0/0')


# ----------------------------------------------------------------------------- item 2: removal by CIDR

@pytest.mark.parametrize('cidr', ['0.0.0.0/0', '::/0', '::ffff:0:0/96', '::/64', '::ffff:0.0.0.0/96'])
def test_check_removal_refuses_everything_always(cidr):
    for force in (False, True):
        with pytest.raises(CephRefused) as info:
            check_removal(Request([], [cidr]), max_addresses=2 ** 32, force=force)
        assert 'covers every address' in info.value.msg and 'refused always' in info.value.msg


def test_check_removal_wider_than_max_addresses_needs_force():
    with pytest.raises(CephRefused) as info:
        check_removal(Request([], ['10.0.0.0/16']), max_addresses=256)
    assert info.value.msg == ('refused, nothing was changed: 10.0.0.0/16 has 65536 addresses, more than '
                              'max_addresses=256: removing entries by it could lift fences of other nodes; raise '
                              'max_addresses or set force=true if that is really meant')
    check_removal(Request([], ['10.0.0.0/16']), max_addresses=256, force=True)
    check_removal(Request([], ['10.0.0.0/16']), max_addresses=65536)
    check_removal(Request(['10.0.0.1'], ['10.0.0.0/24']), max_addresses=256)


@pytest.mark.parametrize('args, message', [
    (dict(cidrs=['0.0.0.0/0']), '0.0.0.0/0 covers every address'),
    (dict(cidrs=['0.0.0.0/0'], force=True, max_addresses=2 ** 32), '0.0.0.0/0 covers every address'),
    (dict(cidrs=['::/0'], force=True), '::/0 covers every address'),
    (dict(cidrs=['::ffff:0:0/96'], force=True), 'every IPv4 address written as IPv4-mapped IPv6'),
    (dict(cidrs=['10.0.0.0/8']), '10.0.0.0/8 has 16777216 addresses, more than max_addresses=256'),
])
def test_absent_by_a_too_wide_cidr_removes_nothing(monkeypatch, capsys, args, message):
    cluster = FakeCluster(entries=ENTRIES)
    out, _calls = run(ceph_blocklist, dict(args, state='absent'), monkeypatch, capsys, cluster)
    assert out['failed'] and message in out['msg'] and 'nothing was changed' in out['msg'], out
    assert not out.get('changed') and cluster.changes() == [] and sorted(cluster.entries) == sorted(ENTRIES)


def test_absent_by_a_wide_cidr_with_force_removes_its_entries(monkeypatch, capsys):
    cluster = FakeCluster(entries=ENTRIES)
    out, _calls = run(ceph_blocklist, dict(state='absent', cidrs=['10.0.0.0/8'], force=True), monkeypatch, capsys,
                      cluster)
    assert out['changed'] and sorted(cluster.entries) == ['[fd00::5]:0/0'], out


# ----------------------------------------------------------------------------- item 3: expire

@pytest.mark.parametrize('value, message', [
    (-5, 'expire must be positive (seconds until the entries expire), got -5'),
    (0, 'expire must be positive'),
    (2.5e9, 'expire=2500000000.0 is more than 315360000 seconds (ten years)'),
    ('2.5e9', "expire='2.5e9' is more than 315360000 seconds"),
    ('inf', "expire must be a finite number of seconds, got 'inf'"),
    (float('nan'), 'expire must be a finite number of seconds, got nan'),
    ('abc', "expire must be a number of seconds, got 'abc'"),
    ('', "expire must be a number of seconds, got ''"),
    (True, 'expire must be a number of seconds, got True'),
    ([1], 'expire must be a number of seconds, got [1]'),
])
def test_check_expire_messages(value, message):
    with pytest.raises(ValueError) as info:
        check_expire(value)
    assert message in str(info.value) and 'nothing was changed' in str(info.value)


def test_check_expire_accepts_numbers_and_numeric_text():
    assert check_expire('604800') == 604800.0 and check_expire(' 60 ') == 60.0 and check_expire(315360000) == 315360000


@pytest.mark.parametrize('expire', ['abc', '2.5e9', 0, -5, 'nan', '1e400'])
def test_expire_of_both_modules_fails_before_connecting(monkeypatch, capsys, expire):
    out, calls = run(ceph_blocklist, dict(addresses=['10.0.0.1'], expire=expire), monkeypatch, capsys, FakeCluster())
    assert out['failed'] and out['msg'].startswith('expire') and calls == [], out
    out, calls = run(rbd_lock, dict(pool='rbd', image='x', state='absent', lock_id='*', blocklist_expire=expire),
                     monkeypatch, capsys, FakeCluster())
    assert out['failed'] and out['msg'].startswith('blocklist_expire') and calls == [], out
    assert 'Traceback' not in json.dumps(out) and "<class" not in out['msg']


# ----------------------------------------------------------------------------- item 7: other numbers

def test_check_range():
    assert check_range(5, 'parallel', 1, 256) == 5 and check_range(None, 'x', 1, 2) is None
    with pytest.raises(ValueError, match=r'^parallel=0 is out of range: give 1 to 256; nothing was changed$'):
        check_range(0, 'parallel', 1, 256)
    with pytest.raises(ValueError, match=r'^timeout=4000 is out of range: give 1 to 3600 seconds; nothing was'):
        check_range(4000, 'timeout', 1, 3600, 'seconds')
    with pytest.raises(ValueError, match=r"^parallel must be a whole number, got '5'"):
        check_range('5', 'parallel', 1, 256)
    with pytest.raises(ValueError, match=r'^parallel must be a whole number, got True'):
        check_range(True, 'parallel', 1, 256)


@pytest.mark.parametrize('module, args, message', [
    (ceph_blocklist, dict(addresses=['10.0.0.1'], parallel=0), 'parallel=0 is out of range: give 1 to 256'),
    (ceph_blocklist, dict(addresses=['10.0.0.1'], parallel=100000), 'parallel=100000 is out of range'),
    (ceph_blocklist, dict(addresses=['10.0.0.1'], max_addresses=0), 'max_addresses=0 is out of range: give 1 to'),
    (ceph_blocklist, dict(addresses=['10.0.0.1'], max_addresses=-1, state='absent'), 'max_addresses=-1 is out of'),
    (ceph_blocklist, dict(addresses=['10.0.0.1; rm -rf /']), "address '10.0.0.1; rm -rf /' is not an IP address"),
    (ceph_blocklist, dict(cidrs=['1.2.3.4/33']), "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of "
                                                 "range for IPv4: 0-32)"),
    (ceph_blocklist, dict(cidrs=['10.0.0.5/24']), "CIDR '10.0.0.5/24' is ambiguous (host bits set)"),
    (ceph_blocklist, dict(addresses=['10.0.0.1'], protect_addresses=['1.2.3.4/33']),
     "protect_addresses '1.2.3.4/33' is not an IP address, and not a CIDR (prefix length 33"),
    (rbd_watchers_info, dict(images=['rbd/x'], parallel=0), 'parallel=0 is out of range: give 1 to 256'),
    (rbd_watchers_info, dict(images=['rbd/x'], node_addresses={'node-b': ['10.0.0.1; rm -rf /']}),
     "node_addresses['node-b'] '10.0.0.1; rm -rf /' is not an IP address"),
    (rbd_watchers_info, dict(images=['rbd/x'], exclude_addresses=['1.2.3.4/33']),
     "exclude_addresses '1.2.3.4/33' is not an IP address, and not a CIDR"),
    (rbd_lock, dict(pool='rbd', image='x', state='absent', address=['10.0.0.1; rm -rf /']),
     "address '10.0.0.1; rm -rf /' is not an IP address"),
    (rbd_lock, dict(pool='rbd', image='x', state='absent', lock_id='*', protect_addresses=['1.2.3.4/33']),
     "protect_addresses '1.2.3.4/33' is not an IP address, and not a CIDR"),
])
def test_bad_numbers_and_addresses_fail_before_connecting(monkeypatch, capsys, module, args, message):
    cluster = FakeCluster()
    out, calls = run(module, args, monkeypatch, capsys, cluster)
    assert out['failed'] and message in out['msg'] and calls == [] and cluster.calls == [], out

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_ARGUMENT_SPEC,
    AddressMatcher,
    CephAddr,
    CephCommandError,
    CephParseError,
    MAX_EXPIRE_SECONDS,
    ceph_argument_spec,
    check_expire,
    check_name,
    errno_name,
    is_unknown_command,
    iso_utc,
    json_document,
    json_documents,
    parse_addr,
    parse_ceph_time,
    parse_cidr,
    stderr_summary,
)

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import fixture


# ----------------------------------------------------------------------------- JSON

def test_blocklist_ls_prints_two_arrays_and_json_loads_fails_on_them():
    text = fixture('blocklist_ls.json')
    with pytest.raises(ValueError, match='Extra data'):
        json.loads(text)
    docs = json_documents(text)
    assert len(docs) == 2
    assert all('addr' in item for item in docs[0])
    assert all('range' in item for item in docs[1])


def test_empty_blocklist_is_two_empty_arrays():
    assert fixture('blocklist_ls_empty.json').strip() == '[][]'
    assert json_documents(fixture('blocklist_ls_empty.json')) == [[], []]


def test_json_documents_accepts_bytes_whitespace_and_nothing():
    assert json_documents(b' [1]\n [2] ') == [[1], [2]]
    assert json_documents('') == []
    assert json_document('', empty={}) == {}


def test_json_documents_reports_where_it_broke():
    with pytest.raises(CephParseError) as info:
        json_documents('[1][2', 'osd blocklist ls')
    assert 'osd blocklist ls' in info.value.msg and 'character 3' in info.value.msg
    assert info.value.stdout == '[1][2'


def test_json_document_refuses_two_documents():
    with pytest.raises(CephParseError, match='found 2'):
        json_document('[][]')


def test_watcher_cookies_stay_64_bit_integers():
    status = json_document(fixture('rbd_status_two_watchers.json'))
    cookies = [w['cookie'] for w in status['watchers']]
    assert cookies and all(isinstance(c, int) and not isinstance(c, bool) for c in cookies)
    big = json_document('{"cookie": 18446744073709551615}')['cookie']
    assert big == 2 ** 64 - 1 and isinstance(big, int)


def test_image_meta_list_without_metadata_prints_nothing():
    assert fixture('rbd_image_meta_list_none.json') == ''
    assert json_document(fixture('rbd_image_meta_list_none.json'), empty={}) == {}


# ----------------------------------------------------------------------------- time

def test_parse_ceph_time_is_utc_and_keeps_microseconds():
    value = parse_ceph_time('2026-11-21T06:15:44.263371+0000')
    assert value.utcoffset() == datetime.timedelta(0)
    assert iso_utc(value) == '2026-11-21T06:15:44.263371Z'
    shifted = parse_ceph_time('2026-11-21T08:15:44.5+0200')
    assert iso_utc(shifted) == '2026-11-21T06:15:44.500000Z'
    assert parse_ceph_time('') is None and iso_utc(None) is None


def test_parse_ceph_time_rejects_garbage():
    with pytest.raises(CephParseError):
        parse_ceph_time('tomorrow')


# ----------------------------------------------------------------------------- addresses

@pytest.mark.parametrize('text, expected', [
    ('10.1.2.3', '10.1.2.3:0/0'),
    (' 10.1.2.3 ', '10.1.2.3:0/0'),
    ('10.1.2.3:0/3271234567', '10.1.2.3:0/3271234567'),
    ('10.1.2.3:6789/0', '10.1.2.3:6789/0'),
    ('10.1.2.3:6789', '10.1.2.3:6789/0'),
    ('v2:10.1.2.3:3300/0', '10.1.2.3:3300/0'),
    ('fd00:231::5', '[fd00:231::5]:0/0'),
    ('[fd00:231::6]:0/123', '[fd00:231::6]:0/123'),
    ('[fd00::1]', '[fd00::1]:0/0'),
])
def test_parse_addr_accepts_what_users_and_ceph_write(text, expected):
    assert str(parse_addr(text)) == expected


# deliberately repeated: each parser's refusals are spelled out beside its tests (the parametrize-and-raise
# shape of test__ceph_versions.py, other inputs and messages)
@pytest.mark.parametrize('text, message', [
    ('not-an-ip', "address 'not-an-ip' is not an IP address"),
    ('10.231.41.300', "'10.231.41.300' is not an IP address"),
    ('10.1.2.3/24', 'ambiguous'),
    ('10.1.2.3:0/4294967296', 'nonce'),
    ('10.1.2.3:70000/0', 'port'),
    ('', 'empty'),
    ('[fd00::1', 'is not an IP address'),
])
def test_parse_addr_rejects_malformed_input_clearly(text, message):
    with pytest.raises(ValueError, match=message):
        parse_addr(text)


def test_ceph_addr_identity_and_ip_wide():
    assert parse_addr('10.1.2.3') == CephAddr('10.1.2.3', 0, 0)
    assert parse_addr('10.1.2.3').ip_wide
    assert not parse_addr('10.1.2.3:0/5').ip_wide
    assert len(set([parse_addr('10.1.2.3'), parse_addr('10.1.2.3:0/0')])) == 1


@pytest.mark.parametrize('text, message', [
    ('10.1.2.5/24', r'ambiguous \(host bits set\): write 10.1.2.0/24'),
    ('10.1.2.0', 'no prefix length'),
    ('10.1.2.0/33', r'not a CIDR \(prefix length 33 is out of range for IPv4'),
    ('bogus/8', "'bogus' is not an IP address"),
])
def test_parse_cidr_refuses_ambiguous_or_malformed(text, message):
    with pytest.raises(ValueError, match=message):
        parse_cidr(text)


def test_parse_cidr_accepts_networks():
    assert str(parse_cidr('10.1.2.0/24')) == '10.1.2.0/24'
    assert str(parse_cidr('fd00:231::/120')) == 'fd00:231::/120'
    assert parse_cidr('0.0.0.0/0').num_addresses == 2 ** 32


def test_address_matcher_ip_cidr_and_exact():
    matcher = AddressMatcher(['10.0.0.1', '10.0.1.0/24', '10.0.2.5:0/77'])
    assert matcher.match(parse_addr('10.0.0.1:0/123')) == '10.0.0.1'
    assert matcher.match(parse_addr('10.0.1.200:0/9')) == '10.0.1.0/24'
    assert matcher.match(parse_addr('10.0.2.5:0/77')) == '10.0.2.5:0/77'
    assert matcher.match(parse_addr('10.0.2.5:0/78')) is None
    assert matcher.match(parse_addr('fd00::1')) is None
    assert not AddressMatcher([])


def test_address_matcher_rejects_bad_patterns_up_front():
    with pytest.raises(ValueError):
        AddressMatcher(['10.0.0.1', 'nope'], 'exclude_addresses')


# ----------------------------------------------------------------------------- errors

def test_stderr_summary_drops_librados_log_noise():
    stderr = fixture('blocklist_add_invalid.stderr')
    assert 'AuthRegistry' in stderr
    summary = stderr_summary(stderr)
    assert 'AuthRegistry' not in summary
    assert 'Invalid command: not-an-ip not valid IPv6 address' in summary
    assert 'Error EINVAL: invalid command' in summary


def test_unknown_command_is_recognised_from_cli_and_mon_outputs():
    cli = CephCommandError('x', rc=int(fixture('unknown_command.rc')), stderr=fixture('unknown_command.stderr'))
    assert is_unknown_command(cli)
    mon = json.loads(fixture('bindings_outputs.json'))['mon_command']
    assert is_unknown_command(CephCommandError('x', rc=mon['unknown']['ret'], stderr=mon['unknown']['outs']))
    # A bad address is EINVAL too, but not an unknown command...
    assert not is_unknown_command(CephCommandError('x', rc=mon['add_invalid']['ret'],
                                                   stderr=mon['add_invalid']['outs']))
    # ...and neither is an invalid CIDR refused by a cluster that has range commands.
    bad_range = CephCommandError('x', rc=int(fixture('blocklist_range_add_invalid.rc')),
                                 stderr=fixture('blocklist_range_add_invalid.stderr'))
    assert not is_unknown_command(bad_range)
    assert not is_unknown_command(CephCommandError('x', rc=2, stderr='command not known'))


def test_errno_name():
    assert errno_name(-22) == 'EINVAL' and errno_name(110) == 'ETIMEDOUT' and errno_name(None) == ''


def test_fail_kwargs_carry_command_rc_and_output():
    err = CephCommandError('boom', cmd=['ceph', 'osd'], rc=22, stdout='', stderr='Error EINVAL')
    assert err.fail_kwargs() == dict(msg='boom', cmd=['ceph', 'osd'], rc=22, stdout='', stderr='Error EINVAL')


def test_argument_spec_is_copied_and_keeps_secrets_out_of_logs():
    spec = ceph_argument_spec(state=dict(type='str'))
    spec['timeout']['default'] = 1
    assert CEPH_ARGUMENT_SPEC['timeout']['default'] == 30
    assert spec['key']['no_log'] is True
    assert spec['keyring']['no_log'] is False
    assert spec['backend']['choices'] == ['auto', 'rados', 'cli']
    assert 'state' in spec and 'state' not in CEPH_ARGUMENT_SPEC


# ----------------------------------------------------------------------------- issue 11

def test_I1_address_matcher_compares_ipv4_mapped_ipv6_as_ipv4():
    """rbd_lock's protect_addresses and rbd_watchers_info' exclude_addresses use this matcher: a lock
    held from [::ffff:10.0.3.11]:0/123 is held from the protected 10.0.3.11."""
    matcher = AddressMatcher(['10.0.3.11', '10.0.4.0/24', '[::ffff:10.0.5.1]:0/7', '::ffff:10.0.6.0/120'])
    assert matcher.match(parse_addr('[::ffff:10.0.3.11]:0/123')) == '10.0.3.11'
    assert matcher.match(parse_addr('::ffff:10.0.4.9')) == '10.0.4.0/24'
    assert matcher.match(parse_addr('10.0.5.1:0/7')) == '[::ffff:10.0.5.1]:0/7'
    assert matcher.match(parse_addr('10.0.5.1:0/8')) is None
    assert matcher.match(parse_addr('10.0.6.200:0/1')) == '::ffff:10.0.6.0/120'
    assert matcher.match(parse_addr('10.0.7.1')) is None


@pytest.mark.parametrize('value', [float('inf'), float('-inf'), float('nan'), 'inf', 'nan', -5, 0,
                                   MAX_EXPIRE_SECONDS + 1, 1e12, True, 'soon'])
def test_I9_expire_must_be_a_finite_sane_number(value):
    """Issue 11 item 9, I9: inf and nan used to end in a traceback (int(inf)), 1e12 in a silent 2106."""
    with pytest.raises(ValueError, match='expire'):
        check_expire(value)


def test_I9_expire_accepts_sane_numbers():
    assert check_expire(None) is None
    assert check_expire(1.5) == 1.5 and check_expire('604800') == 604800.0
    assert check_expire(MAX_EXPIRE_SECONDS) == MAX_EXPIRE_SECONDS


def test_I9_names_starting_with_a_dash_are_refused():
    assert check_name('kubelet_lock_magic_node-a', 'lock_id') == 'kubelet_lock_magic_node-a'
    assert check_name(None, 'tag') is None and check_name('', 'namespace') == ''
    with pytest.raises(ValueError, match='lock_id .--keyring=/x. starts with "-"'):
        check_name('--keyring=/x', 'lock_id')

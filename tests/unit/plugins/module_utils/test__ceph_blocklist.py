# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import (
    Request,
    check_safety,
    cluster_daemon_addresses,
    entry_info,
    entry_matches,
    hosts_of,
    parse_blocklist_docs,
    parse_protected,
    parse_entry,
    plan_absent,
    plan_present,
    predict_after,
    sorted_entries,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.blocklist_guard import network_covers
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    AddressMatcher,
    CephParseError,
    CephRefused,
    json_documents,
    parse_ceph_time,
)

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import MON_IP, SUBNET, fixture, fixture_json


def current():
    entries, has_ranges = parse_blocklist_docs(json_documents(fixture('blocklist_ls.json')))
    return entries, has_ranges


def daemons():
    return cluster_daemon_addresses(fixture_json('mon_dump.json'), fixture_json('mgr_dump.json'),
                                    fixture_json('osd_dump.json'), fixture_json('fs_dump.json'))


# ----------------------------------------------------------------------------- parsing

def test_parse_real_blocklist_with_ranges():
    entries, has_ranges = current()
    assert has_ranges
    strings = [e.entry for e in sorted_entries(entries)]
    assert strings == sorted(strings[:6]) + sorted(strings[6:])
    assert set(strings) == set([
        SUBNET + '.200:0/0', SUBNET + '.201:0/3271234567', SUBNET + '.202:0/0', SUBNET + '.77:6789/0',
        '[fd00:231::5]:0/0', '[fd00:231::6]:0/123',
        'cidr:%s.128:0/28' % SUBNET, 'cidr:[fd00:231::]:0/120'])
    ranges = [e for e in entries if e.is_range]
    assert sorted(str(e.network) for e in ranges) == sorted([SUBNET + '.128/28', 'fd00:231::/120'])
    assert all(e.until is not None for e in entries)


def test_old_style_blacklist_output_parses_the_same():
    entries, has_ranges = parse_blocklist_docs(json_documents(fixture('blacklist_ls.json')))
    assert has_ranges and len(entries) == 8


def test_one_array_means_no_range_support():
    entries, has_ranges = parse_blocklist_docs([[{'addr': '10.0.0.1:0/0', 'until': '2026-11-21T06:15:44.263371+0000'}]])
    assert not has_ranges and entries[0].entry == '10.0.0.1:0/0'
    assert parse_blocklist_docs([]) == ([], False)


def test_one_object_shape_of_newer_monitors_parses_the_same():
    # ceph/ceph#65681: the two arrays of the real capture, as keys of one object.
    addresses, ranges = json_documents(fixture('blocklist_ls.json'))
    text = json.dumps({'blocklist': addresses, 'range_blocklist': ranges})
    entries, has_ranges = parse_blocklist_docs(json_documents(text))
    expected, expected_ranges = current()
    assert has_ranges and expected_ranges
    assert [e.entry for e in entries] == [e.entry for e in expected]
    assert [e.until for e in entries] == [e.until for e in expected]
    # Empty lists in the new shape: ranges are supported, nothing is listed.
    assert parse_blocklist_docs(json_documents('{"blocklist":[],"range_blocklist":[]}')) == ([], True)
    # Without the range key (a monitor that knows no ranges): addresses only.
    entries, has_ranges = parse_blocklist_docs([{'blocklist': addresses}])
    assert not has_ranges and len(entries) == len(addresses)


def test_one_object_shape_with_unexpected_content_is_a_parse_error():
    with pytest.raises(CephParseError, match='unexpected blocklist output'):
        parse_blocklist_docs([{'entries': []}])
    with pytest.raises(CephParseError, match='unexpected blocklist output'):
        parse_blocklist_docs([{'blocklist': {'addr': '10.0.0.1:0/0'}}])
    with pytest.raises(CephParseError, match='unexpected blocklist item'):
        parse_blocklist_docs([{'blocklist': [{'until': 'x'}], 'range_blocklist': []}])


def test_range_with_host_bits_keeps_cephs_base_for_removal():
    entry = parse_entry('cidr:10.231.41.5:0/24')
    assert str(entry.network) == '10.231.41.0/24'
    assert entry.rm_argument == '10.231.41.5/24'  # `range rm` needs the base Ceph stored
    assert entry.entry == 'cidr:10.231.41.5:0/24'


def test_unexpected_entries_are_parse_errors():
    with pytest.raises(CephParseError):
        parse_blocklist_docs([[{'foo': 1}]])
    with pytest.raises(CephParseError):
        parse_blocklist_docs([{'addr': 'x'}])
    with pytest.raises(CephParseError):
        parse_entry('cidr:10.0.0.0:0/40')


def test_entry_info_has_iso_expiry_and_seconds_left():
    entries, _ignored = current()
    entry = [e for e in entries if e.is_range and e.network.version == 4][0]
    now = entry.until - datetime.timedelta(seconds=90, microseconds=500)
    info = entry_info(entry, now)
    assert info['kind'] == 'range' and info['cidr'] == SUBNET + '.128/28' and info['num_addresses'] == 16
    assert info['expires'].endswith('Z') and info['expires'].startswith('20')
    assert info['expires_in'] == 90 and info['expired'] is False
    assert entry_info(entry, entry.until + datetime.timedelta(seconds=5))['expired'] is True
    address = [e for e in entries if not e.is_range and e.addr.nonce == 123][0]
    info = entry_info(address, now)
    assert (info['ip'], info['nonce'], info['port'], info['address']) == ('fd00:231::6', 123, 0, '[fd00:231::6]:0/123')


def test_entry_matches_for_info_filtering():
    entries, _ignored = current()
    hits = [e.entry for e in entries if entry_matches(e, AddressMatcher([SUBNET + '.130']))]
    assert hits == ['cidr:%s.128:0/28' % SUBNET]
    hits = sorted(e.entry for e in entries if entry_matches(e, AddressMatcher([SUBNET + '.192/26'])))
    assert hits == sorted([SUBNET + '.200:0/0', SUBNET + '.201:0/3271234567', SUBNET + '.202:0/0'])
    hits = sorted(e.entry for e in entries if entry_matches(e, AddressMatcher(['[fd00:231::6]:0/123'])))
    assert hits == sorted(['[fd00:231::6]:0/123', 'cidr:[fd00:231::]:0/120'])


# ----------------------------------------------------------------------------- the cluster's own daemons

def test_daemon_addresses_from_real_dumps():
    found = daemons()
    roles = set(d.role for d in found)
    assert roles == set(['mon', 'mgr', 'mgr-client', 'osd', 'mds'])
    names = set('%s.%s' % (d.role, d.name) for d in found)
    assert set(['mon.a', 'mgr.x', 'osd.0', 'mds.a', 'mds.b']) <= names
    assert set(str(d.addr.ip) for d in found) == set([MON_IP])
    osd_nonces = set(d.addr.nonce for d in found if d.role == 'osd')
    assert len(osd_nonces) == 1 and 0 not in osd_nonces


def test_refuses_the_monitor_ip_and_any_cidr_containing_it():
    with pytest.raises(CephRefused) as info:
        check_safety(Request([MON_IP], [SUBNET + '.0/24']), daemons())
    message = info.value.msg
    assert 'nothing was changed' in message
    assert '%s:0/0 is an address of the cluster\'s own daemons' % MON_IP in message
    assert 'mon.a' in message and 'osd.0' in message and 'mds.a' in message
    assert '%s.0/24 contains addresses' % SUBNET in message


def test_refuses_the_whole_internet_even_with_a_huge_max():
    for cidr in ('0.0.0.0/0', '::/0'):
        with pytest.raises(CephRefused, match='every client'):
            check_safety(Request([], [cidr]), [], max_addresses=2 ** 130)


def test_refuses_cidrs_larger_than_max_addresses_unless_raised():
    with pytest.raises(CephRefused, match='more than max_addresses=256'):
        check_safety(Request([], ['10.99.0.0/23']), [])
    check_safety(Request([], ['10.99.0.0/23']), [], max_addresses=512)
    check_safety(Request([], ['10.99.0.0/24']), [])


def test_a_client_instance_on_a_daemon_host_is_not_a_daemon():
    # The admin host shares the monitor's IP in the lab: fencing one client instance there is fine,
    # fencing the IP (or a daemon's exact address) is not.
    check_safety(Request([MON_IP + ':0/12345']), daemons())
    osd = [d for d in daemons() if d.role == 'osd'][0]
    with pytest.raises(CephRefused):
        check_safety(Request([str(osd.addr)]), daemons())


def test_request_reports_every_bad_input_at_once():
    with pytest.raises(ValueError) as info:
        Request(['10.0.0.1', 'nope', '10.0.0.300'], ['10.0.0.5/24', '10.0.0.0/24'])
    message = str(info.value)
    assert message.startswith('invalid input, nothing was changed')
    assert "'nope'" in message and "'10.0.0.300'" in message and '10.0.0.5/24' in message


# ----------------------------------------------------------------------------- planning

def test_plan_present_is_idempotent_against_the_real_list():
    entries, _ignored = current()
    request = Request([SUBNET + '.200', SUBNET + '.201:0/3271234567', SUBNET + '.9'],
                      [SUBNET + '.128/28', SUBNET + '.64/28'])
    actions = plan_present(request, entries, use_ranges=True)
    assert [(a.op, a.is_range, a.target) for a in actions] == [
        ('add', False, SUBNET + '.9:0/0'), ('add', True, SUBNET + '.64/28')]
    assert actions[1].display == 'cidr:%s.64:0/28' % SUBNET
    after = predict_after(entries, actions)
    assert SUBNET + '.9:0/0' in after and 'cidr:%s.64:0/28' % SUBNET in after
    entries2 = entries + [parse_entry(SUBNET + '.9:0/0'), parse_entry('cidr:%s.64:0/28' % SUBNET)]
    assert plan_present(request, entries2, use_ranges=True) == []


def test_plan_present_per_address_fences_the_254_hosts_of_a_24():
    actions = plan_present(Request([], ['10.99.7.0/24']), [parse_entry('10.99.7.10:0/0')], use_ranges=False)
    assert len(actions) == 253
    assert actions[0].target == '10.99.7.1:0/0' and actions[-1].target == '10.99.7.254:0/0'
    assert all(not a.is_range and a.source == '10.99.7.0/24' for a in actions)
    assert len(hosts_of(Request([], ['10.99.7.0/24']).cidrs[0])) == 254
    assert [str(a) for a in hosts_of(Request([], ['10.99.7.4/31']).cidrs[0])] == ['10.99.7.4:0/0', '10.99.7.5:0/0']
    assert [str(a) for a in hosts_of(Request([], ['10.99.7.4/32']).cidrs[0])] == ['10.99.7.4:0/0']


def test_plan_present_ipv6_range_display_matches_ceph():
    actions = plan_present(Request([], ['fd00:9::/120']), [], use_ranges=True)
    assert actions[0].display == 'cidr:[fd00:9::]:0/120' and actions[0].target == 'fd00:9::/120'


def test_plan_absent_removes_plain_nonce_and_range_entries():
    entries, _ignored = current()
    actions, warnings = plan_absent(Request([SUBNET + '.201', '[fd00:231::6]:0/123'], []), entries)
    assert sorted(a.display for a in actions) == sorted([SUBNET + '.201:0/3271234567', '[fd00:231::6]:0/123'])
    assert all(a.op == 'rm' and not a.is_range for a in actions)
    # the IPv6 client stays covered by the /120 range: the user is told
    assert any('stays blocklisted by the range fd00:231::/120' in w for w in warnings)

    actions, warnings = plan_absent(Request([], [SUBNET + '.0/24']), entries)
    assert sorted((a.is_range, a.display) for a in actions) == sorted([
        (False, SUBNET + '.200:0/0'), (False, SUBNET + '.201:0/3271234567'), (False, SUBNET + '.202:0/0'),
        (False, SUBNET + '.77:6789/0'), (True, 'cidr:%s.128:0/28' % SUBNET)])
    assert warnings == []


def test_plan_absent_with_an_explicit_nonce_removes_only_that_entry():
    entries = [parse_entry('10.0.0.5:0/0'), parse_entry('10.0.0.5:0/77'), parse_entry('10.0.0.5:0/78')]
    actions, _ignored = plan_absent(Request(['10.0.0.5:0/77']), entries)
    assert [a.target for a in actions] == ['10.0.0.5:0/77']
    actions, _ignored = plan_absent(Request(['10.0.0.5']), entries)
    assert sorted(a.target for a in actions) == ['10.0.0.5:0/0', '10.0.0.5:0/77', '10.0.0.5:0/78']


def test_plan_absent_uses_cephs_stored_base_and_warns_about_wider_ranges():
    entries = [parse_entry('cidr:10.231.41.5:0/24'), parse_entry('cidr:10.0.0.0:0/16')]
    actions, warnings = plan_absent(Request([], ['10.231.41.0/24', '10.0.3.0/24']), entries)
    assert [(a.is_range, a.target) for a in actions] == [(True, '10.231.41.5/24')]
    assert warnings == ['10.0.3.0/24 stays blocklisted by the wider range 10.0.0.0/16']
    assert predict_after(entries, actions) == ['cidr:10.0.0.0:0/16']


def test_plan_absent_does_not_warn_about_a_range_it_removes():
    entries = [parse_entry('cidr:10.1.1.0:0/28'), parse_entry('10.1.1.3:0/0')]
    actions, warnings = plan_absent(Request(['10.1.1.3'], ['10.1.1.0/26']), entries)
    assert len(actions) == 2 and warnings == []


def test_parse_time_of_entries():
    entry = parse_entry('10.0.0.1:0/0', '2026-11-21T06:15:44.263371+0000')
    assert entry.until == parse_ceph_time('2026-11-21T06:15:44.263371+0000')


# ----------------------------------------------------------------------------- issue 11: I1 after normalisation

@pytest.mark.parametrize('addresses, cidrs', [
    (['::ffff:%s' % MON_IP], []),
    (['[::ffff:%s]:0/0' % MON_IP], []),
    (['v2:[::ffff:%s]:0/0' % MON_IP], []),
    ([], ['::ffff:%s.0/120' % SUBNET]),
    ([], ['::ffff:%s.0/127' % SUBNET]),
    ([], ['::/1']),  # holds every IPv4-mapped address, so ::ffff:<monitor> too
])
def test_I1_ipv4_mapped_ipv6_does_not_pass_the_daemon_interlock(addresses, cidrs):
    """Issue 11 item 4, I1: ::ffff:<mon>, [::ffff:<mon>]:0/0 and ::ffff:<subnet>/120 name the
    monitor's host; the daemon interlock compares normalised addresses and refuses them."""
    with pytest.raises(CephRefused) as info:
        check_safety(Request(addresses, cidrs), daemons(), max_addresses=2 ** 128)
    assert "cluster's own daemons" in info.value.msg and 'mon.a' in info.value.msg
    assert 'nothing was changed' in info.value.msg


def test_I1_ipv4_mapped_client_instance_of_a_daemon_is_refused_but_another_instance_is_not():
    osd = [d for d in daemons() if d.role == 'osd'][0]
    mapped = '[::ffff:%s]:%d/%d' % (osd.addr.ip, osd.addr.port, osd.addr.nonce)
    with pytest.raises(CephRefused, match='osd.0'):
        check_safety(Request([mapped]), daemons())
    check_safety(Request(['[::ffff:%s]:0/12345' % MON_IP]), daemons())


def test_I1_the_whole_ipv4_internet_written_as_ipv4_mapped_ipv6_is_refused_whatever_max_addresses():
    with pytest.raises(CephRefused, match='every client.*0.0.0.0/0 written as IPv4-mapped IPv6'):
        check_safety(Request([], ['::ffff:0.0.0.0/96']), [], max_addresses=2 ** 130)


@pytest.mark.parametrize('protect', [
    ['10.7.0.11'], ['::ffff:10.7.0.11'], ['10.7.0.11:0/987'], ['[::ffff:10.7.0.11]:0/5'], ['10.7.0.8/29'],
    ['::ffff:10.7.0.8/125'], ['10.7.0.11/24'],
])
@pytest.mark.parametrize('addresses, cidrs', [
    (['10.7.0.11'], []), (['::ffff:10.7.0.11'], []), (['10.7.0.11:0/3271234567'], []),
    (['[::ffff:10.7.0.11]:0/0'], []), ([], ['10.7.0.0/24']), ([], ['::ffff:10.7.0.0/120']), ([], ['10.7.0.8/30']),
])
def test_I1_protect_addresses_refuses_any_request_covering_a_protected_address(protect, addresses, cidrs):
    """I1 for ad hoc use: a Ready node's address given in protect_addresses is never fenced,
    whichever way (IPv4, IPv4-mapped, with a nonce, inside a CIDR) either side is written."""
    with pytest.raises(CephRefused, match='protect'):
        check_safety(Request(addresses, cidrs), [], protected=parse_protected(protect))


def test_protect_addresses_leaves_other_addresses_alone_and_rejects_garbage():
    protected = parse_protected(['10.7.0.11', 'fd00::5', '10.8.0.0/24'])
    check_safety(Request(['10.7.0.12', '[fd00::6]:0/1', '10.9.0.1'], ['10.7.0.12/31', '10.8.1.0/24']), [],
                 protected=protected)
    with pytest.raises(ValueError, match="'bogus' is not an IP"):
        parse_protected(['10.7.0.11', 'bogus'])
    assert parse_protected(None) == []


def test_network_covers_normalises_both_sides():
    import ipaddress
    net = ipaddress.ip_network
    assert network_covers(net(u'::ffff:10.1.0.0/120'), ipaddress.ip_address(u'10.1.0.9'))
    assert network_covers(net(u'10.1.0.0/24'), ipaddress.ip_address(u'::ffff:10.1.0.9'))
    assert network_covers(net(u'::/1'), net(u'10.1.0.0/24'))
    assert not network_covers(net(u'fd00::/64'), ipaddress.ip_address(u'10.1.0.9'))
    assert not network_covers(net(u'10.2.0.0/24'), net(u'10.1.0.0/24'))


def test_entry_matches_sees_ipv4_mapped_entries_as_ipv4():
    mapped = parse_entry('[::ffff:10.0.3.12]:0/0')
    mapped_range = parse_entry('cidr:[::ffff:10.0.4.0]:0/120')
    assert entry_matches(mapped, AddressMatcher(['10.0.3.12']))
    assert entry_matches(mapped, AddressMatcher(['10.0.3.0/24']))
    assert entry_matches(mapped_range, AddressMatcher(['10.0.4.7']))
    assert entry_matches(parse_entry('10.0.3.12:0/5'), AddressMatcher(['[::ffff:10.0.3.12]:0/5']))
    assert not entry_matches(mapped, AddressMatcher(['10.0.3.13']))

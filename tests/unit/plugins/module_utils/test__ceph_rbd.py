# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    normalize_lockers_bindings,
    parse_image_spec,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import AddressMatcher
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import (
    LockFilter,
    NodeMap,
    check_locker,
    csi_client_addresses,
    describe_locks,
    describe_watcher,
    exclusive_lock_owners,
    image_report,
    select_locks,
    unmatched_locks_warning,
)

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import HOLDERS, NODES, fixture_json

BINDINGS = fixture_json('bindings_outputs.json')


def bindings(kind):
    return [data for spec, data in BINDINGS['images'].items() if spec.split('/')[1].startswith('fixture-%s-' % kind)][0]


def node_map():
    return NodeMap(dict((node, [ip]) for node, ip in NODES.items()))


def raw_watchers_cli():
    return [dict(address=w['address'], client_id=w['client'], cookie=w['cookie'])
            for w in fixture_json('rbd_status_two_watchers.json')['watchers']]


def raw_watchers_bindings():
    return [dict(address=w['addr'], client_id=w['id'], cookie=w['cookie']) for w in bindings('two')['watchers_list']]


def test_cli_and_bindings_see_the_same_watchers_and_name_their_nodes():
    cli = sorted((describe_watcher(w, node_map()) for w in raw_watchers_cli()), key=lambda w: w['address'])
    assert [w['node'] for w in cli] == ['node-b', 'node-c']
    assert cli[0]['address'] == HOLDERS['node-b']['address']
    assert cli[0]['ip'] == NODES['node-b'] and cli[0]['nonce'] == int(HOLDERS['node-b']['address'].split('/')[1])
    assert cli[0]['client'] == 'client.%d' % HOLDERS['node-b']['instance_id']
    assert all(isinstance(w['cookie'], int) and w['cookie'] > 2 ** 32 for w in cli)
    binding = sorted((describe_watcher(w, node_map()) for w in raw_watchers_bindings()), key=lambda w: w['address'])
    assert [(w['address'], w['node']) for w in binding] == [(w['address'], w['node']) for w in cli]


def test_node_map_most_specific_network_wins_and_rejects_garbage():
    nodes = NodeMap({'pods-b': ['10.244.2.0/24'], 'node-b': ['10.244.2.7'], 'v6': 'fd00::1'})
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import parse_addr
    assert nodes.node_of(parse_addr('10.244.2.7:0/1')) == 'node-b'
    assert nodes.node_of(parse_addr('10.244.2.8:0/1')) == 'pods-b'
    assert nodes.node_of(parse_addr('[fd00::1]:0/5')) == 'v6'
    assert nodes.node_of(parse_addr('10.9.9.9')) is None
    with pytest.raises(ValueError, match="node_addresses\\['x'\\]"):
        NodeMap({'x': ['not-an-ip']})
    with pytest.raises(ValueError):
        NodeMap({'x': {'ip': '10.0.0.1'}})


def test_image_report_excludes_and_computes_in_use():
    spec = parse_image_spec('rbd/ns1/img')
    report = image_report(spec, {'watchers': raw_watchers_cli(), 'metadata': {}}, node_map(),
                          AddressMatcher([NODES['node-c']]))
    assert (report['pool'], report['namespace'], report['image'], report['spec']) == ('rbd', 'ns1', 'img', 'rbd/ns1/img')
    assert [w['node'] for w in report['watchers']] == ['node-b']
    assert [w['excluded_by'] for w in report['excluded_watchers']] == [NODES['node-c']]
    assert report['in_use'] and report['nodes'] == ['node-b']
    everyone = AddressMatcher([NODES['node-b'], NODES['node-c']])
    report = image_report(spec, {'watchers': raw_watchers_cli()}, None, everyone)
    assert not report['in_use'] and report['csi_client_addresses'] == []
    idle = image_report(spec, {'watchers': [], 'metadata': {}})
    assert not idle['in_use'] and idle['watchers'] == [] and idle['nodes'] == []


def test_csi_client_addresses_from_real_metadata():
    metadata = fixture_json('rbd_image_meta_list.json')
    assert metadata == dict(bindings('meta')['metadata_list'])  # CLI and bindings agree
    found = csi_client_addresses(metadata, node_map())
    by_node = dict((f['node'], f) for f in found)
    assert sorted(by_node) == ['node-b', 'node-c']  # csi.storage.k8s.io/pv/name is not an address
    assert by_node['node-b']['volume_id'] == '0001-0009-rook-ceph-0000000000000002-5f1d1b6a'
    assert by_node['node-b']['ip'] == NODES['node-b'] and by_node['node-b']['address'] is None
    assert by_node['node-b']['node_from_addresses'] == 'node-b'
    assert by_node['node-c']['volume_id'] is None  # the design document's key form
    assert by_node['node-c']['address'] == HOLDERS['node-c']['address']
    garbage = csi_client_addresses({'.rbd.csi.ceph.com/clientaddress/v/n': 'not-an-ip'})
    assert garbage[0]['ip'] is None and garbage[0]['node'] == 'n'


def test_locks_from_cli_and_bindings_agree():
    cli = fixture_json('rbd_lock_ls_exclusive.json')
    from_cli = describe_locks(dict(exclusive=True, tag='', lockers=[
        dict(locker=i['locker'], id=i['id'], address=i['address']) for i in cli]), node_map())
    assert from_cli[0]['id'] == 'kubelet_lock_magic_node-b' and from_cli[0]['node'] == 'node-b'
    assert not from_cli[0]['managed'] and exclusive_lock_owners(from_cli) == []
    from_bindings = describe_locks(normalize_lockers_bindings(bindings('locked')['list_lockers']), node_map())
    assert [(lk['id'], lk['exclusive'], lk['ip']) for lk in from_bindings] == [
        ('kubelet_lock_magic_node-b', True, NODES['node-b'])]


def test_exclusive_lock_owner_read_from_the_managed_lock():
    managed = bindings('managed')
    locks = describe_locks(normalize_lockers_bindings(managed['list_lockers']))
    assert locks[0]['managed'] and locks[0]['tag'] == 'internal'
    owners = exclusive_lock_owners(locks)
    assert [o['address'] for o in owners] == [o['owner'] for o in managed['lock_get_owners']]
    assert owners[0]['mode'] == 'exclusive'


def locks_sample():
    return describe_locks(dict(exclusive=True, tag='', lockers=[
        dict(locker='client.4272', id='kubelet_lock_magic_node-b', address='10.0.3.12:0/3358807331'),
        dict(locker='client.4300', id='kubelet_lock_magic_node-c', address='10.0.3.13:0/11'),
        dict(locker='client.4301', id='other', address='10.0.3.12:0/12'),
    ]))


def test_lock_filter_all_given_filters_must_match():
    locks = locks_sample()

    def pick(**kw):
        return [lk['id'] for lk in select_locks(locks, LockFilter(**kw))[0]]

    assert pick(lock_id='kubelet_lock_magic_*') == ['kubelet_lock_magic_node-b', 'kubelet_lock_magic_node-c']
    assert pick(lock_id='kubelet_lock_magic_*', address=['10.0.3.12']) == ['kubelet_lock_magic_node-b']
    assert pick(address='10.0.3.0/24') == ['kubelet_lock_magic_node-b', 'kubelet_lock_magic_node-c', 'other']
    assert pick(locker='4300') == ['kubelet_lock_magic_node-c']
    assert pick(locker='client.43*') == ['kubelet_lock_magic_node-c', 'other']
    assert pick(address=['10.0.3.12:0/12']) == ['other']
    assert LockFilter().empty and not LockFilter(lock_id='*').empty


def test_protected_addresses_are_never_selected():
    to_break, protected = select_locks(locks_sample(), LockFilter(lock_id='*'), AddressMatcher(['10.0.3.13']))
    assert [lk['id'] for lk in to_break] == ['kubelet_lock_magic_node-b', 'other']
    assert [(lk['id'], lk['protected_by']) for lk in protected] == [('kubelet_lock_magic_node-c', '10.0.3.13')]


def test_managed_lock_is_left_alone_unless_asked():
    locks = describe_locks(normalize_lockers_bindings(bindings('managed')['list_lockers']))
    assert select_locks(locks, LockFilter(lock_id='*'))[0] == []
    assert len(select_locks(locks, LockFilter(lock_id='*', include_managed=True))[0]) == 1


@pytest.mark.parametrize('locker', ['client.4272', '4272', 'client.42*', '*', 'client.[0-9]*', None])
def test_check_locker_accepts_locker_names_and_patterns(locker):
    assert check_locker(locker) == locker


@pytest.mark.parametrize('locker', ['client.abc', 'client.admin', 'abc', 'client.', 'client.42 ', '10.0.3.12'])
def test_check_locker_refuses_what_can_never_name_a_locker(locker):
    with pytest.raises(ValueError) as err:
        check_locker(locker)
    assert repr(locker) in str(err.value) and 'not a locker name' in str(err.value)
    assert 'client.<number>' in str(err.value) and 'nothing was changed' in str(err.value)


def test_unmatched_lock_id_warns_with_did_you_mean_and_the_image_locks():
    msg = unmatched_locks_warning('rbd/img', LockFilter(lock_id='kubelet_lock_magic_node-bb'), locks_sample())
    assert msg.startswith("no lock of rbd/img matches lock_id 'kubelet_lock_magic_node-bb': nothing was broken.")
    assert "Did you mean lock_id 'kubelet_lock_magic_node-b'" in msg
    for lock in locks_sample():
        assert repr(lock['id']) in msg and lock['locker'] in msg and lock['address'] in msg
    assert 'normal when the lock was already broken' in msg


def test_unmatched_locker_and_address_are_named_without_a_guess():
    msg = unmatched_locks_warning('rbd/img', LockFilter(lock_id='kubelet_lock_magic_*', locker='client.9999',
                                                        address=['10.0.3.99']), locks_sample())
    assert "matches lock_id 'kubelet_lock_magic_*' and locker 'client.9999' and address 10.0.3.99" in msg
    assert 'Did you mean' not in msg
    assert 'client.4272' in msg


def test_unmatched_on_an_image_without_locks_says_so():
    msg = unmatched_locks_warning('rbd/img', LockFilter(locker='4272'), [])
    assert "no lock of rbd/img matches locker '4272'" in msg and 'The image has no locks.' in msg


def test_no_warning_when_a_lock_matches_even_a_protected_one():
    assert unmatched_locks_warning('rbd/img', LockFilter(lock_id='kubelet_lock_magic_node-b'), locks_sample()) is None
    assert unmatched_locks_warning('rbd/img', LockFilter(address=['10.0.3.13']), locks_sample()) is None


def test_unmatched_names_the_managed_lock_that_needs_include_managed():
    locks = describe_locks(normalize_lockers_bindings(bindings('managed')['list_lockers']))
    msg = unmatched_locks_warning('rbd/img', LockFilter(lock_id='auto *'), locks)
    assert 'only broken with include_managed=true' in msg
    assert unmatched_locks_warning('rbd/img', LockFilter(lock_id='auto *', include_managed=True), locks) is None

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Blocklist ownership on a blocklist holding entries of each kind: a node's (today's address), a failover's
(its record), a NetworkFence's, a ceph-csi client address's (pod networking), and nobody's; and the flags
diagnose shows next to a stuck pod."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.volfence.csi.plugins.module_utils._decisions.blocklist_owners import (
    for_nodes, ownership, with_blocklist)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import table
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import MARKER_ANNOTATION


def node(name, ip, ready='True', boot='b1', record=None):
    meta = {'name': name}
    if record is not None:
        meta['annotations'] = {MARKER_ANNOTATION: json.dumps(record)}
    return {'metadata': meta, 'status': {'addresses': [{'type': 'InternalIP', 'address': ip}],
                                         'conditions': [{'type': 'Ready', 'status': ready}],
                                         'nodeInfo': {'bootID': boot}}}


def address(addr):
    ip = addr.split(':')[0]
    return dict(kind='address', entry=addr, address=addr, ip=ip, cidr=None, expires='2026-11-27T00:00:00Z')


def range_entry(cidr):
    ip, prefix = cidr.split('/')
    return dict(kind='range', entry='cidr:%s:0/%s' % (ip, prefix), address=None, ip=None, cidr=cidr,
                expires='2031-11-26T00:00:00Z')


NODES = [
    node('node-a', '10.0.0.11'),                                   # Ready
    node('node-b', '10.0.0.12', ready='Unknown', boot='b2',        # back from a reboot since its failover
         record={'boot_id': 'b1', 'fenced_at': 'T', 'blocklist': ['10.0.0.12:0/77'], 'networkfences': []}),
    node('node-c', '10.0.0.13', ready='Unknown'),
]
FENCES = [{'metadata': {'name': 'volfence-node-c'}, 'spec': {'cidrs': ['10.0.0.13/32'], 'fenceState': 'Fenced'}}]
IMAGES = [{'spec': 'rbd/pvc-1', 'csi_client_addresses': [{'ip': '10.244.1.7', 'node': 'node-c'}]}]
ENTRIES = [address('10.0.0.12:0/77'), range_entry('10.0.0.13/32'), address('10.244.1.7:0/5'),
           address('10.0.0.11:0/9'), range_entry('10.0.0.0/24'), address('192.0.2.50:0/1')]


def by_entry():
    return dict((o['entry'], o) for o in ownership(ENTRIES, NODES, FENCES, IMAGES))


def kinds(owned):
    return [(w['kind'], w['name']) for w in owned['owners']]


def flags(owned):
    return [f['flag'] for f in owned['flags']]


def test_each_entry_is_tied_to_what_it_belongs_to():
    owned = by_entry()
    assert kinds(owned['10.0.0.12:0/77']) == [('node', 'node-b'), ('failover', 'node-b')]
    assert kinds(owned['cidr:10.0.0.13:0/32']) == [('node', 'node-c'), ('networkfence', 'volfence-node-c')]
    assert kinds(owned['10.244.1.7:0/5']) == [('ceph-csi-client', 'node-c')]  # pod networking: no node lists it
    assert owned['10.244.1.7:0/5']['owners'][0]['image'] == 'rbd/pvc-1'
    assert kinds(owned['192.0.2.50:0/1']) == [] and flags(owned['192.0.2.50:0/1']) == ['unknown-owner']


def test_flags_name_what_needs_a_look():
    owned = by_entry()
    assert flags(owned['10.0.0.12:0/77']) == ['node-rebooted']
    assert 'node_recover lifts it' in owned['10.0.0.12:0/77']['flags'][0]['detail']
    assert flags(owned['10.0.0.11:0/9']) == ['covers-ready-node']
    wide = owned['cidr:10.0.0.0:0/24']
    assert flags(wide) == ['covers-ready-node', 'wider-than-a-host']
    assert [n for k, n in kinds(wide) if k == 'node'] == ['node-a', 'node-b', 'node-c']
    assert flags(owned['cidr:10.0.0.13:0/32']) == []  # a NotReady node's own host range: as it should be


def test_a_stuck_pod_sees_the_entries_of_its_node_and_of_the_holder():
    owned = ownership(ENTRIES, NODES, FENCES, IMAGES)
    assert [o['entry'] for o in for_nodes(owned, ['node-a'])] == ['10.0.0.11:0/9', 'cidr:10.0.0.0:0/24']
    diagnosis = [dict(namespace='default', pod='web-0', node='node-a', age_seconds=300, incident='stale-rbd-watcher',
                      title='t', evidence=['watcher 10.0.0.13:0/3 on node-c'], target={'failed_node': 'node-c'},
                      next=None)]
    (seen,) = with_blocklist(diagnosis, owned)
    assert [o['entry'] for o in seen['blocklist']] == ['cidr:10.0.0.13:0/32', '10.244.1.7:0/5', '10.0.0.11:0/9',
                                                       'cidr:10.0.0.0:0/24']
    assert 'blocklist entry 10.0.0.11:0/9: covers Ready node(s) node-a: their Ceph clients are cut off' in seen['evidence']
    assert diagnosis[0]['evidence'] == ['watcher 10.0.0.13:0/3 on node-c']  # the input is left as it was
    lines = table([seen], [], owned)
    assert 'blocklist: 6 entries' in lines
    assert '  - 192.0.2.50:0/1 (nobody known); unknown-owner' in lines


def test_entries_that_are_not_entries_and_an_empty_blocklist():
    assert ownership(['junk', None], NODES) == []
    assert ownership([], NODES) == [] and table([], [], []) == ['NAMESPACE  POD  NODE  AGE  INCIDENT  NEXT',
                                                                '(no stuck pods)']

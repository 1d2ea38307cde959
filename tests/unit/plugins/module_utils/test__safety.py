# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Example-based tests of the safety decision layer (plugins/module_utils/_decisions/: cluster_view,
preflight, fence, marks, release, recovery, locks, node_volumes).

Each test names the situation (items 1-6 of the safety model's first cases) or the invariant (I1-I6 of docs/safety.md)
it proves. Kubernetes objects are plain dicts as the API returns them; watchers, locks, blocklist
entries and fences as the collection's modules return them. The property-based counterpart is
test__safety_properties.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import ipaddress
import itertools
import json

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    ClusterView,
    normalize_ip,
    normalize_network,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.fence import (
    fence_cidrs,
    fence_plan,
    networkfence_plan,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.locks import lock_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import (
    MARKER_ANNOTATION,
    STARTED_ANNOTATION,
    failover_marker,
    failover_markers,
    failover_started_mark,
    read_marker,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import failover_volumes
from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import failover_preflight
from ansible_collections.volfence.csi.plugins.module_utils._decisions.recovery import (
    CEPH_CSI_AUTO_FENCE_SECONDS,
    driver_fences,
    entry_owner,
    node_states,
    fence_read_failure,
    recovery_plan,
    recovery_plans,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.release import release_plan

NOW = datetime.datetime(2026, 3, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)


# --------------------------------------------------------------------------- builders

def node(name, addresses=(), ready='True', boot_id='boot-1', volumes_in_use=(), annotations=None):
    """A Node as the API returns it. addresses: plain IPs (InternalIP) or (type, address) pairs."""
    status = {
        'addresses': [dict(type='InternalIP', address=a) if isinstance(a, str) else dict(type=a[0], address=a[1])
                      for a in addresses] + [dict(type='Hostname', address=name)],
        'nodeInfo': {'bootID': boot_id, 'kubeletVersion': 'v1.30.2'},
        'volumesInUse': list(volumes_in_use),
    }
    if ready is not None:
        status['conditions'] = [
            dict(type='MemoryPressure', status='False'),
            dict(type='Ready', status=ready, lastTransitionTime='2026-03-04T11:00:00Z'),
        ]
    meta = dict(name=name, uid='uid-' + name)
    if annotations:
        meta['annotations'] = dict(annotations)
    return dict(apiVersion='v1', kind='Node', metadata=meta, status=status)


def lease(name, age, namespace='kube-node-lease'):
    """A node Lease renewed `age` seconds before NOW."""
    renew = (NOW - datetime.timedelta(seconds=age)).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    return dict(apiVersion='coordination.k8s.io/v1', kind='Lease',
                metadata=dict(name=name, namespace=namespace),
                spec=dict(holderIdentity=name, leaseDurationSeconds=40, renewTime=renew))


def image(spec, *addresses, **kw):
    """An rbd_watchers_info image: watchers at `addresses` (Ceph's ip:port/nonce)."""
    return dict(spec=spec, watchers=[dict(address=a) for a in addresses],
                csi_client_addresses=[dict(node=n, ip=ip) for n, ip in kw.get('recorded', [])])


def address_entry(address):
    ip = address.rsplit(':', 1)[0].strip('[]')
    return dict(kind='address', entry=address, address=address, ip=ip, cidr=None)


def range_entry(cidr):
    net = ipaddress.ip_network(cidr, strict=False)
    host = '[%s]' % net.network_address if net.version == 6 else str(net.network_address)
    return dict(kind='range', entry='cidr:%s:0/%d' % (host, net.prefixlen), address=None, cidr=cidr)


def fence(name, *cidrs, **kw):
    return dict(name=name, fence_state=kw.get('state', 'Fenced'), cidrs=list(cidrs))


def lock(image_spec, address, lock_id='auto 140234', locker='client.4711'):
    return dict(image=image_spec, id=lock_id, locker=locker, address=address)


# --------------------------------------------------------------------------- addresses (item 4)

@pytest.mark.parametrize('value, expected', [
    ('10.0.0.1', '10.0.0.1'),
    ('10.0.0.1:0/3271234567', '10.0.0.1'),
    ('v2:10.0.0.1:3300/0', '10.0.0.1'),
    ('::ffff:10.0.0.1', '10.0.0.1'),
    ('::FFFF:10.0.0.1', '10.0.0.1'),
    ('::ffff:a00:1', '10.0.0.1'),
    ('[::ffff:10.0.0.1]:0/0', '10.0.0.1'),
    ('v1:[::ffff:10.0.0.1]:6789/12', '10.0.0.1'),
    ('0:0:0:0:0:ffff:0a00:0001', '10.0.0.1'),
    ('[fd00::12]:0/77', 'fd00::12'),
    ('fd00:0:0:0:0:0:0:12', 'fd00::12'),
    (ipaddress.ip_address(u'::ffff:10.0.0.1'), '10.0.0.1'),
])
def test_item4_normalize_ip_unmaps_ipv4_mapped_and_drops_port_and_nonce(value, expected):
    assert normalize_ip(value) == ipaddress.ip_address(u'%s' % expected)


@pytest.mark.parametrize('value', [None, '', 'node-a', 'node-a.example.com', '10.0.0.256', '[::1', 'cidr:10.0.0.0/24'])
def test_normalize_ip_names_no_host_for_non_addresses(value):
    assert normalize_ip(value) is None


@pytest.mark.parametrize('value, expected', [
    ('10.0.0.0/24', '10.0.0.0/24'),
    ('10.0.0.7/24', '10.0.0.0/24'),
    ('::ffff:10.0.0.0/120', '10.0.0.0/24'),
    ('::ffff:10.0.0.5/128', '10.0.0.5/32'),
    ('cidr:10.0.3.0:0/24', '10.0.3.0/24'),
    ('cidr:[::ffff:10.0.3.0]:0/120', '10.0.3.0/24'),
    ('[fd00::]:0/64', 'fd00::/64'),
    ('10.0.0.9', '10.0.0.9/32'),
    ('::ffff:10.0.0.9', '10.0.0.9/32'),
])
def test_item4_normalize_network_unmaps_ipv4_mapped_ranges(value, expected):
    assert normalize_network(value) == ipaddress.ip_network(u'%s' % expected)


def test_item4_cluster_view_sees_one_host_behind_every_form_and_address_type():
    view = ClusterView([node('node-a', [('InternalIP', '10.0.0.11'), ('ExternalIP', '::ffff:203.0.113.5')]),
                        node('node-b', [('InternalIPv6', '::ffff:10.0.0.11')])])
    assert view.owners_of('[::ffff:10.0.0.11]:0/1') == ['node-a', 'node-b']
    assert view.owners_of('203.0.113.5:0/9') == ['node-a']
    assert view.nodes_in('::ffff:10.0.0.0/120') == ['node-a', 'node-b']
    assert view.nodes_in('10.0.0.0/24', exclude='node-a') == ['node-b']


# --------------------------------------------------------------------------- I1 / item 1: shared addresses

@pytest.mark.parametrize('failed, healthy', [('node-b', 'node-a'), ('node-b', 'node-z'), ('a-failed', 'b-healthy')])
def test_item1_address_shared_with_a_ready_node_is_never_fenced_whatever_the_names_order(failed, healthy):
    nodes = [node(failed, ['10.0.0.12', '10.0.0.50'], ready='False'), node(healthy, ['10.0.0.11', '10.0.0.50'])]
    images = [image('rbd/a', '10.0.0.50:0/1', '10.0.0.12:0/2')]
    for order in (nodes, nodes[::-1]):
        plan = fence_plan(images, failed, order, now=NOW)
        assert plan['refused'] is None
        assert plan['fence'] == ['10.0.0.12:0/2']
        assert [(k['address'], k['invariant']) for k in plan['kept']] == [('10.0.0.50:0/1', 'I1')]
        assert 'Ready node %s' % healthy in plan['kept'][0]['reason']
        cidrs = fence_cidrs(failed, order, now=NOW)
        assert cidrs['cidrs'] == ['10.0.0.12/32']
        assert [k['address'] for k in cidrs['kept']] == ['10.0.0.50']


def test_item1_external_ip_shared_with_a_ready_node_is_not_fenced():
    nodes = [node('node-a', [('InternalIP', '10.0.0.11'), ('ExternalIP', '203.0.113.5')]),
             node('node-b', [('InternalIP', '10.0.0.12'), ('ExternalIP', '203.0.113.5')], ready='False')]
    plan = fence_plan([image('rbd/a', '203.0.113.5:0/7', '10.0.0.12:0/8')], 'node-b', nodes, now=NOW)
    assert plan['fence'] == ['10.0.0.12:0/8']
    assert plan['kept'][0]['address'] == '203.0.113.5:0/7' and 'node-a' in plan['kept'][0]['reason']
    assert fence_cidrs('node-b', nodes, now=NOW)['cidrs'] == ['10.0.0.12/32']


def test_item1_address_shared_by_two_down_nodes_cannot_be_tied_to_one_and_is_not_fenced():
    nodes = [node('node-b', ['10.0.0.12', '10.0.0.60'], ready='False'),
             node('node-c', [('ExternalIP', '10.0.0.60')], ready='Unknown')]
    plan = fence_plan([image('rbd/a', '10.0.0.60:0/1')], 'node-b', nodes, now=NOW)
    assert plan['fence'] == [] and 'share' in plan['kept'][0]['reason']
    assert fence_cidrs('node-b', nodes, now=NOW)['cidrs'] == ['10.0.0.12/32']


def test_item1_fence_plan_does_not_depend_on_the_order_of_nodes():
    nodes = [node('node-a', ['10.0.0.11', '10.0.0.70']), node('node-b', ['10.0.0.12', '10.0.0.70'], ready='False'),
             node('node-c', ['10.0.0.13', '10.0.0.12'], ready='False'), node('node-d', [], ready='False')]
    images = [image('rbd/a', '10.0.0.70:0/1', '10.0.0.12:0/2', '10.0.0.13:0/3', '10.244.1.5:0/4',
                    recorded=[('node-b', '10.244.1.5')])]
    plans = [fence_plan(images, 'node-b', list(order), now=NOW) for order in itertools.permutations(nodes)]
    assert all(plan == plans[0] for plan in plans)
    assert plans[0]['fence'] == ['10.244.1.5:0/0']  # ceph-csi's record: the whole IP, as ceph-csi fences it
    cidrs = [fence_cidrs('node-b', list(order), now=NOW) for order in itertools.permutations(nodes)]
    assert all(c == cidrs[0] for c in cidrs) and cidrs[0]['cidrs'] == []


def test_I1_watcher_of_another_down_node_is_not_fenced_by_this_failover():
    nodes = [node('node-b', ['10.0.0.12'], ready='False'), node('node-c', ['10.0.0.13'], ready='False')]
    plan = fence_plan([image('rbd/a', '10.0.0.13:0/1')], 'node-b', nodes, now=NOW)
    assert plan['fence'] == [] and 'not the failed node' in plan['kept'][0]['reason']


def test_I1_ceph_daemon_address_is_never_fenced_in_any_form():
    nodes = [node('node-b', ['10.0.0.12'], ready='False')]
    images = [image('rbd/a', '10.0.0.12:0/5')]
    for daemon in ('v2:10.0.0.12:3300/0', '[::ffff:10.0.0.12]:6789/0', '::ffff:10.0.0.12'):
        plan = fence_plan(images, 'node-b', nodes, daemon_addresses=[daemon], now=NOW)
        assert plan['fence'] == [] and 'Ceph daemon' in plan['kept'][0]['reason']
    assert fence_plan(images, 'node-b', nodes, daemon_addresses=['10.0.0.99:6789/0'], now=NOW)['fence'] == ['10.0.0.12:0/5']


def test_I1_pod_network_watcher_is_fenced_only_when_recorded_for_the_failed_node_or_fence_unknown():
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False')]
    recorded = fence_plan([image('rbd/a', '10.244.2.7:0/9', recorded=[('node-b', '::ffff:10.244.2.7')])],
                          'node-b', nodes, now=NOW)
    assert recorded['fence'] == ['10.244.2.7:0/0']  # the recorded IP, whole: it cuts the watcher too
    other = fence_plan([image('rbd/a', '10.244.2.7:0/9', recorded=[('node-a', '10.244.2.7')])], 'node-b', nodes, now=NOW)
    assert other['fence'] == [] and 'no node' in other['kept'][0]['reason']
    unknown = fence_plan([image('rbd/a', '10.244.2.7:0/9')], 'node-b', nodes, fence_unknown=True, now=NOW)
    assert unknown['fence'] == ['10.244.2.7:0/9']


def test_I1_unreadable_watcher_address_is_kept():
    plan = fence_plan([image('rbd/a', 'garbage')], 'node-b', [node('node-b', ['10.0.0.12'], ready='False')],
                      fence_unknown=True, now=NOW)
    assert plan['fence'] == [] and 'cannot be read' in plan['kept'][0]['reason']


def test_I1_failed_node_ready_is_refused_even_with_force():
    nodes = [node('node-b', ['10.0.0.12'])]
    for force in (False, True):
        plan = fence_plan([image('rbd/a', '10.0.0.12:0/1')], 'node-b', nodes, force=force, now=NOW)
        assert plan['fence'] == [] and 'is Ready' in plan['refused']
        cidrs = fence_cidrs('node-b', nodes, force=force, now=NOW)
        assert cidrs['cidrs'] == [] and cidrs['refused']


def test_I1_failed_node_with_fresh_lease_is_refused_unless_force():
    nodes = [node('node-b', ['10.0.0.12'], ready='Unknown')]
    images = [image('rbd/a', '10.0.0.12:0/1')]
    fresh = [lease('node-b', 30)]
    plan = fence_plan(images, 'node-b', nodes, leases=fresh, lease_grace=120, now=NOW)
    assert plan['fence'] == [] and 'Lease' in plan['refused']
    assert fence_cidrs('node-b', nodes, leases=fresh, lease_grace=120, now=NOW)['cidrs'] == []
    assert fence_plan(images, 'node-b', nodes, leases=fresh, lease_grace=120, force=True, now=NOW)['fence'] == ['10.0.0.12:0/1']
    assert fence_cidrs('node-b', nodes, leases=fresh, force=True, now=NOW)['cidrs'] == ['10.0.0.12/32']
    stale = [lease('node-b', 600)]
    assert fence_plan(images, 'node-b', nodes, leases=stale, lease_grace=120, now=NOW)['fence'] == ['10.0.0.12:0/1']
    # a Lease of the same name outside kube-node-lease is not the node's
    other_ns = [lease('node-b', 5, namespace='default')]
    assert fence_plan(images, 'node-b', nodes, leases=other_ns, now=NOW)['refused'] is None


def test_I1_missing_failed_node_is_refused():
    plan = fence_plan([image('rbd/a', '10.0.0.12:0/1')], 'node-x', [node('node-b', ['10.0.0.12'], ready='False')],
                      fence_unknown=True, now=NOW)
    assert plan['fence'] == [] and 'does not exist' in plan['refused']


# --------------------------------------------------------------------------- item 4: IPv4-mapped IPv6, address-less Ready node

@pytest.mark.parametrize('listed, watcher', [
    ('10.0.0.11', '[::ffff:10.0.0.11]:0/5'),
    ('::ffff:10.0.0.11', '10.0.0.11:0/5'),
    ('::ffff:10.0.0.11', '[::ffff:10.0.0.11]:0/5'),
    ('0:0:0:0:0:ffff:a00:b', '10.0.0.11:0/5'),
])
def test_item4_ipv4_mapped_watcher_of_a_ready_node_is_not_fenced(listed, watcher):
    nodes = [node('node-a', [listed]), node('node-b', ['10.0.0.12', '10.0.0.11'], ready='False')]
    plan = fence_plan([image('rbd/a', watcher)], 'node-b', nodes, fence_unknown=True, now=NOW)
    assert plan['fence'] == [] and 'Ready node node-a' in plan['kept'][0]['reason']
    assert fence_cidrs('node-b', nodes, now=NOW)['cidrs'] == ['10.0.0.12/32']


def test_item4_ipv4_mapped_failed_node_address_is_fenced_as_ipv4():
    nodes = [node('node-b', ['::ffff:10.0.0.12'], ready='False')]
    assert fence_plan([image('rbd/a', '10.0.0.12:0/5')], 'node-b', nodes, now=NOW)['fence'] == ['10.0.0.12:0/5']
    assert fence_cidrs('node-b', nodes, now=NOW)['cidrs'] == ['10.0.0.12/32']


def test_item4_ready_node_listing_no_ip_protects_unlisted_addresses():
    nodes = [node('node-a', []), node('node-b', ['10.0.0.12'], ready='False')]
    images = [image('rbd/a', '10.0.0.31:0/5', '10.0.0.12:0/6', recorded=[('node-b', '10.0.0.31')])]
    for fence_unknown in (False, True):
        plan = fence_plan(images, 'node-b', nodes, fence_unknown=fence_unknown, now=NOW)
        assert plan['fence'] == ['10.0.0.12:0/6']
        assert 'list no address' in plan['kept'][0]['reason']
    preflight = failover_preflight('node-b', nodes, now=NOW)
    assert preflight['addressless_ready'] == ['node-a'] and preflight['refused'] is None


def test_failover_preflight_reports_readiness_shared_addresses_and_refusal():
    nodes = [node('node-a', ['10.0.0.11', '10.0.0.50']), node('node-b', ['10.0.0.12', '::ffff:10.0.0.50'])]
    ready = failover_preflight('node-b', nodes, now=NOW)
    assert ready['refused'].startswith('refusing to fence node-b: it is Ready')
    assert ready['shared_addresses'] == {'10.0.0.50': ['node-a', 'node-b']}
    assert ready['addresses'] == ['10.0.0.12', '10.0.0.50'] and ready['ready_nodes'] == ['node-a']
    down = [node('node-b', ['10.0.0.12'], ready='False', boot_id='boot-7')]
    fresh = failover_preflight('node-b', down, leases=[lease('node-b', 10)], lease_grace=120, now=NOW)
    assert 'Lease' in fresh['refused'] and 'force=true' in fresh['refused']
    forced = failover_preflight('node-b', down, leases=[lease('node-b', 10)], force=True, now=NOW)
    assert forced['refused'] is None and forced['boot_id'] == 'boot-7'
    missing = failover_preflight('node-x', down, now=NOW)
    assert missing['exists'] is False and 'not found' in missing['refused']


# --------------------------------------------------------------------------- I2 / item 2: recovery lifts only the node's own fences

def recovered_cluster(**kw):
    """node-b recovered (Ready, fresh Lease, new bootID); node-c and node-d still dead in the same /24."""
    nodes = [node('node-a', ['10.0.0.11']),
             node('node-b', ['10.0.0.12', ('ExternalIP', '203.0.113.12')], boot_id=kw.get('boot_id', 'boot-2')),
             node('node-c', ['10.0.0.13'], ready='False'),
             node('node-d', [('InternalIP', '::ffff:10.0.0.14')], ready='Unknown')]
    leases = [lease('node-b', 5), lease('node-c', 900)]
    return nodes, leases


def marker(boot_id='boot-1', blocklist=(), networkfences=()):
    return dict(boot_id=boot_id, fenced_at='2026-03-04T10:00:00Z', blocklist=list(blocklist),
                networkfences=list(networkfences))


def test_item2_recovery_keeps_a_24_range_and_other_nodes_entries_inside_it():
    nodes, leases = recovered_cluster()
    entries = [address_entry('10.0.0.12:0/3271234567'), address_entry('10.0.0.13:0/42'),
               address_entry('[::ffff:10.0.0.14]:0/43'), range_entry('10.0.0.0/24'), range_entry('10.0.0.12/32'),
               address_entry('10.9.9.9:0/1')]
    plan = recovery_plan('node-b', nodes, entries=entries, fences=[], marker=marker(), leases=leases, now=NOW)
    assert plan['refused'] is None
    assert plan['remove_addresses'] == ['10.0.0.12:0/3271234567']
    assert plan['remove_cidrs'] == ['10.0.0.12/32']
    kept = dict((k['entry'], k['reason']) for k in plan['kept'])
    assert list(kept) == ['cidr:10.0.0.0:0/24']
    assert 'node-c' in kept['cidr:10.0.0.0:0/24'] and 'node-d' in kept['cidr:10.0.0.0:0/24']
    assert all(k['invariant'] == 'I2' for k in plan['kept'])


def test_item2_ipv4_mapped_range_covering_other_nodes_is_kept():
    nodes, leases = recovered_cluster()
    plan = recovery_plan('node-b', nodes, entries=[range_entry('::ffff:10.0.0.0/120')], fences=[], marker=marker(), leases=leases, now=NOW)
    assert plan['remove_cidrs'] == [] and 'node-c' in plan['kept'][0]['reason']


def test_item2_wide_range_covering_no_other_node_is_kept_as_it_may_fence_other_clients():
    nodes, leases = recovered_cluster()
    plan = recovery_plan('node-b', nodes, entries=[range_entry('203.0.113.0/24')], fences=[], marker=marker(), leases=leases, now=NOW)
    assert plan['remove_cidrs'] == [] and 'no node lists' in plan['kept'][0]['reason']


def test_item2_address_shared_with_a_dead_node_is_kept():
    nodes, leases = recovered_cluster()
    nodes[2] = node('node-c', ['10.0.0.13', '203.0.113.12'], ready='False')
    plan = recovery_plan('node-b', nodes, entries=[address_entry('203.0.113.12:0/9')], fences=[], marker=marker(), leases=leases, now=NOW)
    assert plan['remove_addresses'] == [] and 'node-c' in plan['kept'][0]['reason']


def test_item2_entry_recorded_by_the_failover_is_removed_even_from_an_address_the_node_no_longer_lists():
    nodes, leases = recovered_cluster()
    entries = [address_entry('10.244.3.9:0/77'), address_entry('10.244.3.9:0/78'), address_entry('10.244.3.9:0/0'),
               address_entry('10.244.3.10:0/1')]
    plan = recovery_plan('node-b', nodes, entries=entries, fences=[], marker=marker(blocklist=['[::ffff:10.244.3.9]:0/77']), leases=leases, now=NOW)
    assert plan['remove_addresses'] == ['10.244.3.9:0/77']
    # an entry blocking every client of that IP was not the failover's: kept, and said why
    assert [k['entry'] for k in plan['kept']] == ['10.244.3.9:0/0'] and 'not recorded' in plan['kept'][0]['reason']


def test_item2_networkfence_covering_several_nodes_is_kept_even_when_the_failover_made_it():
    nodes, leases = recovered_cluster()
    fences = [fence('fence-node-b', '10.0.0.12/32', '203.0.113.12/32'),
              fence('fence-subnet', '10.0.0.0/24'),
              fence('fence-b-and-c', '10.0.0.12/32', '10.0.0.13/32'),
              fence('fence-mapped', '::ffff:10.0.0.12/128', '::ffff:10.0.0.14/128'),
              fence('fence-node-c', '10.0.0.13/32'),
              fence('fence-old', '10.0.0.12/32', state='Unfenced')]
    plan = recovery_plan('node-b', nodes, entries=[], fences=fences, marker=marker(networkfences=['fence-subnet', 'fence-b-and-c']), leases=leases,
                         now=NOW)
    assert plan['unfence'] == ['fence-node-b']
    kept = dict((k['networkfence'], k['reason']) for k in plan['kept'])
    assert sorted(kept) == ['fence-b-and-c', 'fence-mapped', 'fence-subnet']
    assert 'node-c' in kept['fence-b-and-c'] and 'node-d' in kept['fence-mapped']
    assert 'node-c' in kept['fence-subnet'] and 'node-d' in kept['fence-subnet']


def test_item2_networkfence_of_the_failover_is_unfenced_and_a_foreign_wide_one_kept():
    nodes, leases = recovered_cluster()
    fences = [fence('fence-wide', '203.0.113.0/24'), fence('fence-made', '203.0.112.0/23')]
    plan = recovery_plan('node-b', nodes, entries=[], fences=fences, marker=marker(networkfences=['fence-made']), leases=leases, now=NOW)
    assert plan['unfence'] == ['fence-made']
    assert [k['networkfence'] for k in plan['kept']] == ['fence-wide']


# --------------------------------------------------------------------------- I3: recovered means restarted

def all_lifts(plan):
    return plan['remove_addresses'] + plan['remove_cidrs'] + plan['unfence']


def i3_inputs():
    entries = [address_entry('10.0.0.12:0/3271234567'), range_entry('10.0.0.12/32')]
    fences = [fence('fence-node-b', '10.0.0.12/32')]
    return entries, fences


def test_I3_unchanged_boot_id_is_refused_unless_force():
    nodes, leases = recovered_cluster(boot_id='boot-1')
    entries, fences = i3_inputs()
    plan = recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=marker(boot_id='boot-1'), leases=leases, now=NOW)
    assert all_lifts(plan) == [] and 'has not rebooted' in plan['refused']
    forced = recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=marker(boot_id='boot-1'), leases=leases, force=True, now=NOW)
    assert forced['refused'] is None and 'has not rebooted' in forced['evidence']['forced_past']
    assert all_lifts(forced) == ['10.0.0.12:0/3271234567', '10.0.0.12/32', 'fence-node-b']


@pytest.mark.parametrize('record', [None, {}, dict(boot_id=None, blocklist=['10.0.0.12:0/3271234567'])])
def test_I3_no_marker_or_no_recorded_boot_id_is_refused_unless_force(record):
    nodes, leases = recovered_cluster()
    entries, fences = i3_inputs()
    plan = recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=record, leases=leases, now=NOW)
    assert all_lifts(plan) == [] and 'cannot prove it restarted' in plan['refused']
    forced = recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=record, leases=leases, force=True, now=NOW)
    assert forced['refused'] is None and forced['remove_addresses'] == ['10.0.0.12:0/3271234567']


def test_I3_changed_boot_id_with_ready_node_and_fresh_lease_is_accepted():
    nodes, leases = recovered_cluster(boot_id='boot-2')
    entries, fences = i3_inputs()
    plan = recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=marker(boot_id='boot-1'), leases=leases, now=NOW)
    assert plan['refused'] is None
    assert plan['evidence']['boot_id'] == 'boot-2' and plan['evidence']['fenced_boot_id'] == 'boot-1'
    assert all_lifts(plan) == ['10.0.0.12:0/3271234567', '10.0.0.12/32', 'fence-node-b']


def test_I3_node_without_boot_id_not_ready_or_stale_lease_is_refused():
    entries, fences = i3_inputs()
    nodes, leases = recovered_cluster(boot_id='')
    assert 'reports no bootID' in recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=marker(), leases=leases, now=NOW)['refused']
    nodes, leases = recovered_cluster()
    nodes[1]['status']['conditions'][1]['status'] = 'False'
    assert 'not Ready' in recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=marker(), leases=leases, now=NOW)['refused']
    nodes = recovered_cluster()[0]
    for stale in ([], [lease('node-b', 3600)]):
        plan = recovery_plan('node-b', nodes, entries=entries, fences=fences, marker=marker(), leases=stale, lease_fresh=60, now=NOW)
        assert all_lifts(plan) == [] and 'Lease' in plan['refused']
    assert 'does not exist' in recovery_plan('node-x', nodes, entries=entries, fences=fences, marker=marker(), now=NOW)['refused']


def test_I3_marker_round_trips_through_the_node_annotation_and_the_report():
    failed = node('node-b', ['10.0.0.12'], ready='False', boot_id='boot-1')
    text = failover_marker(failed, blocklisted=['10.0.0.12:0/2', '10.0.0.12:0/1', '10.0.0.12:0/1'], networkfences=['fence-node-b'],
                           fenced_at='2026-03-04T10:00:00Z')
    annotated = node('node-b', ['10.0.0.12'], boot_id='boot-2', annotations={MARKER_ANNOTATION: text})
    record = read_marker(annotated)
    assert record == dict(boot_id='boot-1', fenced_at='2026-03-04T10:00:00Z',
                          blocklist=['10.0.0.12:0/1', '10.0.0.12:0/2'], networkfences=['fence-node-b'])
    report = dict(generated='2026-03-04T10:00:01Z', preflight=dict(boot_id='boot-1'),
                  fence_plan=dict(fence=['10.0.0.12:0/1']), networkfences=[])
    from_report = read_marker(node('node-b', ['10.0.0.12']), report)
    assert from_report['boot_id'] == 'boot-1' and from_report['blocklist'] == ['10.0.0.12:0/1']
    assert read_marker(node('node-b', ['10.0.0.12'])) is None
    broken = node('node-b', ['10.0.0.12'], annotations={MARKER_ANNOTATION: '{not json'})
    assert read_marker(broken) is None
    # the annotation beats the report
    assert read_marker(annotated, dict(marker=dict(boot_id='other')))['boot_id'] == 'boot-1'
    leases = recovered_cluster()[1]
    plan = recovery_plan('node-b', [annotated], entries=[address_entry('10.0.0.12:0/1')], fences=[], marker=record, leases=leases, now=NOW)
    assert plan['refused'] is None and plan['remove_addresses'] == ['10.0.0.12:0/1']


def started(boot_id='boot-1', started_at='2026-03-04T09:59:00Z'):
    return json.dumps(dict(boot_id=boot_id, started_at=started_at), sort_keys=True)


def test_I3_a_lone_start_reads_as_a_record_of_its_boot_with_nothing_recorded_fenced():
    back = node('node-b', ['10.0.0.12'], boot_id='boot-2', annotations={STARTED_ANNOTATION: started('boot-1')})
    assert read_marker(back) == dict(boot_id='boot-1', fenced_at='2026-03-04T09:59:00Z', blocklist=[],
                                     networkfences=[], started_only=True)
    # the annotation beats a report, as a record does
    assert read_marker(back, dict(marker=dict(boot_id='other')))['boot_id'] == 'boot-1'
    # rebooted since: its own address is lifted (I2), an entry at a pod address no record names is kept
    leases = recovered_cluster()[1]
    entries = [address_entry('10.0.0.12:0/1'), address_entry('10.244.3.9:0/77')]
    plan = recovery_plan('node-b', [back], entries=entries, fences=[], marker=read_marker(back), leases=leases, now=NOW)
    assert plan['refused'] is None and plan['remove_addresses'] == ['10.0.0.12:0/1']
    assert plan['kept'] == []  # 10.244.3.9 is neither its address nor recorded: not the node's to decide
    # the same boot as at the start: nothing is lifted (I3)
    same = node('node-b', ['10.0.0.12'], boot_id='boot-1', annotations={STARTED_ANNOTATION: started('boot-1')})
    plan = recovery_plan('node-b', [same], entries=entries, fences=[], marker=read_marker(same), leases=leases, now=NOW)
    assert 'has not rebooted' in plan['refused'] and all_lifts(plan) == []


def test_I3_with_a_record_and_a_start_of_the_same_boot_the_record_wins():
    record = failover_marker(node('node-b', ['10.0.0.12'], ready='False'), blocklisted=['10.0.0.12:0/1'], networkfences=['fence-node-b'],
                             fenced_at='2026-03-04T10:00:00Z')
    both = node('node-b', ['10.0.0.12'], boot_id='boot-2',
                annotations={MARKER_ANNOTATION: record, STARTED_ANNOTATION: started('boot-1')})
    assert read_marker(both) == dict(boot_id='boot-1', fenced_at='2026-03-04T10:00:00Z', blocklist=['10.0.0.12:0/1'],
                                     networkfences=['fence-node-b'])


def test_I3_a_start_of_a_later_boot_beside_a_record_holds_that_boot():
    """A record of boot-1, then the node came back without node_recover, failed again, and a failover
    began on boot-2 and was cut off after its fence: boot-2's clients may be fenced and still run. The
    record's bootID would let a node back on boot-2 lift them; the start's holds it (I3). A record
    replaces the start, so a start beside a record is always the newer."""
    record = failover_marker(node('node-b', ['10.0.0.12'], ready='False'), blocklisted=['10.244.3.9:0/77'], networkfences=[],
                             fenced_at='2026-03-04T10:00:00Z')
    annotations = {MARKER_ANNOTATION: record, STARTED_ANNOTATION: started('boot-2', '2026-03-04T11:00:00Z')}
    assert read_marker(node('node-b', ['10.0.0.12'], annotations=annotations)) == dict(
        boot_id='boot-2', fenced_at='2026-03-04T10:00:00Z', blocklist=['10.244.3.9:0/77'], networkfences=[])
    leases = recovered_cluster()[1]
    entries = [address_entry('10.0.0.12:0/5'), address_entry('10.244.3.9:0/77')]
    on_boot_2 = node('node-b', ['10.0.0.12'], boot_id='boot-2', annotations=annotations)
    plan = recovery_plan('node-b', [on_boot_2], entries=entries, fences=[], marker=read_marker(on_boot_2), leases=leases, now=NOW)
    assert 'has not rebooted' in plan['refused'] and all_lifts(plan) == []
    # rebooted past both: the node's own entry and what the earlier record lists are lifted (I2)
    on_boot_3 = node('node-b', ['10.0.0.12'], boot_id='boot-3', annotations=annotations)
    plan = recovery_plan('node-b', [on_boot_3], entries=entries, fences=[], marker=read_marker(on_boot_3), leases=leases, now=NOW)
    assert plan['refused'] is None and plan['remove_addresses'] == ['10.0.0.12:0/5', '10.244.3.9:0/77']


@pytest.mark.parametrize('text', ['{not json', '["boot-1"]', '{"started_at": "2026-03-04T09:59:00Z"}',
                                  '{"boot_id": null, "started_at": "T"}', ''])
def test_I3_an_unreadable_start_or_one_without_a_boot_id_is_no_record(text):
    alone = node('node-b', ['10.0.0.12'], boot_id='boot-2', annotations={STARTED_ANNOTATION: text})
    assert read_marker(alone) is None
    # no proof of a restart: refused, nothing lifted
    plan = recovery_plan('node-b', [alone], entries=[address_entry('10.0.0.12:0/1')], fences=[], marker=read_marker(alone),
                         leases=recovered_cluster()[1], now=NOW)
    assert 'cannot prove it restarted' in plan['refused'] and all_lifts(plan) == []
    # beside a record it changes nothing: the record is read as it is
    record = json.dumps(dict(boot_id='boot-1', fenced_at='T', blocklist=[], networkfences=[]), sort_keys=True)
    both = node('node-b', ['10.0.0.12'], annotations={MARKER_ANNOTATION: record, STARTED_ANNOTATION: text})
    assert read_marker(both) == json.loads(record)
    # a report is still read when the start cannot be
    assert read_marker(alone, dict(marker=dict(boot_id='boot-0')))['boot_id'] == 'boot-0'


def test_failover_started_mark_keeps_the_first_time_of_a_boot():
    down = node('node-b', ['10.0.0.12'], ready='False', boot_id='boot-1')
    first = failover_started_mark(down, 'T1')
    assert json.loads(first) == dict(boot_id='boot-1', started_at='T1')
    again = node('node-b', ['10.0.0.12'], ready='False', boot_id='boot-1', annotations={STARTED_ANNOTATION: first})
    assert failover_started_mark(again, 'T2') == first
    rebooted = node('node-b', ['10.0.0.12'], ready='False', boot_id='boot-2', annotations={STARTED_ANNOTATION: first})
    assert json.loads(failover_started_mark(rebooted, 'T2')) == dict(boot_id='boot-2', started_at='T2')


def test_node_states_count_a_lone_start_as_marked():
    alone = node('node-b', ['10.0.0.12'], annotations={STARTED_ANNOTATION: started()})
    assert node_states([alone, node('node-c', ['10.0.0.13'])], ['node-b', 'node-c'])['marked'] == ['node-b']


# --------------------------------------------------------------------------- I4 / item 3: live locks

def lock_cluster():
    nodes = [node('node-a', ['10.0.0.11'], volumes_in_use=['kubernetes.io/rbd/rbd:img-used']),
             node('node-b', ['10.0.0.12'], ready='False'),
             node('node-c', ['10.0.0.13'], ready='Unknown'),
             node('node-p', ['10.0.0.20'], ready='False')]
    leases = [lease('node-b', 900), lease('node-c', 15)]
    return nodes, leases


def broken(plan):
    return [(b['image'], b['address']) for b in plan['break']]


def test_item3_lock_of_a_down_node_with_a_stale_lease_is_broken():
    nodes, leases = lock_cluster()
    plan = lock_plan([lock('rbd/img', '10.0.0.12:0/1')], 'node-p', nodes, leases=leases, lease_grace=120, now=NOW)
    assert broken(plan) == [('rbd/img', '10.0.0.12:0/1')] and plan['kept'] == []


def test_item3_lock_held_by_a_ready_node_is_refused_without_force():
    nodes, leases = lock_cluster()
    plan = lock_plan([lock('rbd/img', '[::ffff:10.0.0.11]:0/1')], 'node-p', nodes, leases=leases, now=NOW)
    assert plan['break'] == [] and 'is Ready' in plan['kept'][0]['reason'] and plan['kept'][0]['invariant'] == 'I4'
    forced = lock_plan([lock('rbd/img', '10.0.0.11:0/1')], 'node-p', nodes, leases=leases, force=True, now=NOW)
    assert broken(forced) == [('rbd/img', '10.0.0.11:0/1')] and 'is Ready' in forced['break'][0]['forced_past']


def test_item3_lock_whose_ready_holder_lists_the_image_in_use_is_refused_even_with_force():
    nodes, leases = lock_cluster()
    for force in (False, True):
        plan = lock_plan([lock('rbd/img-used', '10.0.0.11:0/1')], 'node-p', nodes, leases=leases, force=force, now=NOW)
        assert plan['break'] == [] and 'volumes in use' in plan['kept'][0]['reason']


@pytest.mark.parametrize('held', [
    lock('rbd/img-used', '10.0.0.11:0/1', lock_id='kubelet_lock_magic_node-b'),
    lock('rbd/img-used', '10.0.0.50:0/1'),
])
def test_item3_lock_that_may_be_held_by_a_ready_node_using_the_image_is_refused_even_with_force(held):
    # the holder cannot be tied to one node (name and address disagree, or a shared address), but
    # one candidate is Ready and lists the image in volumesInUse: force must not break it
    nodes, leases = lock_cluster()
    nodes[0]['status']['addresses'].append(dict(type='ExternalIP', address='10.0.0.50'))
    nodes[1]['status']['addresses'].append(dict(type='InternalIP', address='::ffff:10.0.0.50'))
    for force in (False, True):
        plan = lock_plan([held], 'node-p', nodes, leases=leases, force=force, now=NOW)
        assert plan['break'] == [] and 'volumes in use' in plan['kept'][0]['reason']


def test_item3_lock_held_by_a_node_with_a_fresh_lease_is_refused_without_force():
    nodes, leases = lock_cluster()
    plan = lock_plan([lock('rbd/img', '10.0.0.13:0/1')], 'node-p', nodes, leases=leases, lease_grace=120, now=NOW)
    assert plan['break'] == [] and 'Lease' in plan['kept'][0]['reason']
    assert broken(lock_plan([lock('rbd/img', '10.0.0.13:0/1')], 'node-p', nodes, leases=leases, force=True, now=NOW))


@pytest.mark.parametrize('held', [
    lock('rbd/img', '10.244.5.5:0/1'),
    lock('rbd/img', 'garbage'),
    lock('rbd/img', '10.0.0.12:0/1', lock_id='kubelet_lock_magic_node-c'),
    lock('rbd/img', '10.244.5.5:0/1', lock_id='kubelet_lock_magic_node-ghost'),
])
def test_item3_lock_not_tied_to_one_existing_node_is_refused_without_force(held):
    nodes, leases = lock_cluster()
    plan = lock_plan([held], 'node-p', nodes, leases=leases, now=NOW)
    assert plan['break'] == [] and plan['kept'][0]['reason']
    assert len(lock_plan([held], 'node-p', nodes, leases=leases, force=True, now=NOW)['break']) == 1


def test_item3_lock_from_an_address_two_nodes_share_is_refused_without_force():
    nodes, leases = lock_cluster()
    nodes.append(node('node-e', [('ExternalIP', '10.0.0.12')], ready='False'))
    plan = lock_plan([lock('rbd/img', '10.0.0.12:0/1')], 'node-p', nodes, leases=leases, now=NOW)
    assert plan['break'] == [] and 'share' in plan['kept'][0]['reason']


def test_item3_in_tree_lock_id_ties_the_holder_when_the_address_is_unlisted():
    nodes, leases = lock_cluster()
    plan = lock_plan([lock('rbd/img', '10.244.5.5:0/1', lock_id='kubelet_lock_magic_node-b')], 'node-p', nodes, leases=leases,
                     now=NOW)
    assert len(plan['break']) == 1
    ready = lock_plan([lock('rbd/img', '10.244.5.5:0/1', lock_id='kubelet_lock_magic_node-a')], 'node-p', nodes,
                      leases=leases, now=NOW)
    assert ready['break'] == [] and 'is Ready' in ready['kept'][0]['reason']


@pytest.mark.parametrize('held', [
    lock('rbd/img', '10.0.0.20:0/1'),
    lock('rbd/img', '[::ffff:10.0.0.20]:0/1'),
    lock('rbd/img', '10.244.5.5:0/1', lock_id='kubelet_lock_magic_node-p'),
    lock('rbd/img', '10.0.0.12:0/1', lock_id='kubelet_lock_magic_node-p'),
    # held from the pod's own node under a lock id naming a down node with a stale Lease
    lock('rbd/img', '10.0.0.20:0/1', lock_id='kubelet_lock_magic_node-b'),
])
def test_item3_lock_of_the_stuck_pods_own_node_is_never_broken(held):
    nodes, leases = lock_cluster()
    for force in (False, True):
        plan = lock_plan([held], 'node-p', nodes, leases=leases, force=force, now=NOW)
        assert plan['break'] == [] and 'own node node-p' in plan['kept'][0]['reason']


# --------------------------------------------------------------------------- I6 / item 6: unfenced volumes are not released

def terminating_pod(name, *claims, **kw):
    volumes = [dict(name='v%d' % i, persistentVolumeClaim=dict(claimName=c)) for i, c in enumerate(claims)]
    volumes += kw.get('inline', [])
    meta = dict(name=name, namespace='ns', uid='uid-' + name)
    if kw.get('terminating', True):
        meta['deletionTimestamp'] = '2026-03-04T11:59:00Z'
    return dict(metadata=meta, spec=dict(nodeName='node-b', volumes=volumes))


def rbd_volume(n, image_spec='rbd/img-%d'):
    return dict(pv='pv-%d' % n, driver='rbd.csi.ceph.com', kind='rbd-csi', image=image_spec % n,
                attachments=['va-%d' % n], claims=['ns/claim-%d' % n])


def other_volume(n):
    return dict(pv='pv-%d' % n, driver='ebs.csi.aws.com', kind='csi', image=None, attachments=['va-%d' % n],
                claims=['ns/claim-%d' % n])


def i6_release(volumes, pods, **kw):
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False')]
    images = kw.pop('images')
    plan = fence_plan(images, 'node-b', nodes, now=NOW)
    return release_plan('node-b', volumes, pods, images=images, fence=plan, **kw)


def safe_map(plan):
    return dict((v['pv'], v['safe']) for v in plan['volumes'])


def test_item6_volume_with_a_kept_watcher_is_not_released():
    volumes = [rbd_volume(1), rbd_volume(2)]
    images = [image('rbd/img-1', '10.0.0.12:0/1', '10.244.9.9:0/2'), image('rbd/img-2', '10.0.0.12:0/3')]
    pods = [terminating_pod('p1', 'claim-1'), terminating_pod('p2', 'claim-2'), terminating_pod('p12', 'claim-1', 'claim-2')]
    plan = i6_release(volumes, pods, images=images, watchers_after=[image('rbd/img-1', '10.244.9.9:0/2')])
    assert safe_map(plan) == {'pv-1': False, 'pv-2': True}
    assert 'client(s) kept' in plan['volumes'][0]['how']
    assert [p['name'] for p in plan['delete_pods']] == ['p2']
    assert sorted(p['pod'] for p in plan['kept_pods']) == ['ns/p1', 'ns/p12']
    assert plan['remove_attachments'] == ['va-2'] and plan['kept_attachments'] == ['va-1']
    # nothing replaces p1 and p12: the run fails naming each, the image and why (evicted or not)
    assert [line.split(':')[0] for line in plan['kept_unsafe']] == ['pod ns/p1 stays on node-b', 'pod ns/p12 stays on node-b']
    assert all('rbd/img-1 (claim ns/claim-1): NOT made safe, client(s) kept' in line for line in plan['kept_unsafe'])


def test_I1_a_client_fenced_for_one_image_is_reported_fenced_on_every_image_it_watches():
    """ceph-csi recorded pod-network client 10.244.2.7 for node-b on img-1 only; it watches img-2 too.
    The record's entry (the whole IP, as ceph-csi fences it) cuts it on both, so img-2 is not held back for a
    "kept" watcher (I6); a different client at the same IP on img-2 (another nonce) is cut by it too."""
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False')]
    one = image('rbd/img-1', '10.244.2.7:0/9', recorded=[('node-b', '10.244.2.7')])
    two = image('rbd/img-2', '10.244.2.7:0/9', '10.0.0.12:0/3')
    for images in ([one, two], [two, one]):
        plan = fence_plan(images, 'node-b', nodes, now=NOW)
        assert sorted(plan['fence']) == ['10.0.0.12:0/3', '10.244.2.7:0/0'] and plan['kept'] == []
        assert dict((k, sorted(v)) for k, v in plan['by_image'].items()) == {
            'rbd/img-1': ['10.244.2.7:0/0'], 'rbd/img-2': ['10.0.0.12:0/3', '10.244.2.7:0/0']}
        assert sorted(plan['by_node']['node-b']) == ['10.0.0.12:0/3', '10.244.2.7:0/0']
        release = release_plan('node-b', [rbd_volume(1), rbd_volume(2)], [], images=images, fence=plan,
                               watchers_after=[image('rbd/img-1'), image('rbd/img-2')])
        assert safe_map(release) == {'pv-1': True, 'pv-2': True}
    other = image('rbd/img-2', '10.244.2.7:0/77')
    plan = fence_plan([one, other], 'node-b', nodes, now=NOW)
    assert plan['fence'] == ['10.244.2.7:0/0'] and plan['by_image']['rbd/img-2'] == ['10.244.2.7:0/0']
    assert plan['kept'] == []
    # without the record, that client is no node's and kept
    plan = fence_plan([image('rbd/img-1', '10.244.2.7:0/9'), other], 'node-b', nodes, now=NOW)
    assert plan['fence'] == [] and sorted(k['address'] for k in plan['kept']) == ['10.244.2.7:0/77', '10.244.2.7:0/9']
    assert 'set fence_unknown_watchers' in plan['kept'][0]['reason']


def test_item6_missing_image_is_not_released():
    volumes = [rbd_volume(1), rbd_volume(2)]
    images = [image('rbd/img-2', '10.0.0.12:0/3')]
    plan = i6_release(volumes, [terminating_pod('p1', 'claim-1')], images=images,
                      missing=[dict(spec='rbd/img-1')], watchers_after=[image('rbd/img-2')])
    assert safe_map(plan) == {'pv-1': False, 'pv-2': True}
    assert 'not found on Ceph' in plan['volumes'][0]['how']
    assert plan['delete_pods'] == [] and plan['remove_attachments'] == ['va-2']
    # listed both as found and missing: still not proven
    both = i6_release([rbd_volume(2)], [], images=images, missing=[dict(spec='rbd/img-2')])
    assert safe_map(both) == {'pv-2': False}


def test_item6_other_driver_is_released_only_under_the_out_of_service_taint():
    volumes = [other_volume(1)]
    pods = [terminating_pod('p1', 'claim-1')]
    plain = i6_release(volumes, pods, images=[])
    assert safe_map(plain) == {'pv-1': False} and 'cannot fence it' in plain['volumes'][0]['how']
    assert plain['delete_pods'] == [] and plain['remove_attachments'] == []
    tainted = i6_release(volumes, pods, images=[], out_of_service_taint=True)
    assert safe_map(tainted) == {'pv-1': True} and 'out-of-service' in tainted['volumes'][0]['how']
    assert [p['name'] for p in tainted['delete_pods']] == ['p1'] and tainted['remove_attachments'] == ['va-1']


def test_item6_watcher_still_there_after_the_fence_is_not_released():
    images = [image('rbd/img-1', '10.0.0.12:0/1')]
    plan = i6_release([rbd_volume(1)], [terminating_pod('p1', 'claim-1')], images=images, watchers_after=images)
    assert safe_map(plan) == {'pv-1': False} and 'still there' in plan['volumes'][0]['how']
    predicted = i6_release([rbd_volume(1)], [terminating_pod('p1', 'claim-1')], images=images, watchers_after=None)
    assert safe_map(predicted) == {'pv-1': True}


def test_item6_pods_with_unknown_claims_inline_volumes_or_missing_pv_are_kept():
    volumes = [rbd_volume(1), dict(rbd_volume(2), pv=None)]
    images = [image('rbd/img-1', '10.0.0.12:0/1'), image('rbd/img-2', '10.0.0.12:0/2')]
    pods = [terminating_pod('unknown-claim', 'claim-1', 'claim-9'),
            terminating_pod('inline', 'claim-1', inline=[dict(name='scratch', csi=dict(driver='rbd.csi.ceph.com'))]),
            terminating_pod('no-pv', 'claim-2'),
            terminating_pod('running', 'claim-1', terminating=False),
            terminating_pod('no-claims'),
            terminating_pod('ok', 'claim-1')]
    plan = i6_release(volumes, pods, images=images)
    assert safe_map(plan) == {'pv-1': True, None: False}
    # 'running' was not evicted yet: its node is provably down and its volume fenced, so it goes too
    assert [p['name'] for p in plan['delete_pods']] == ['running', 'no-claims', 'ok']
    assert 'not evicted yet' in plan['delete_pods'][0]['how'] and 'not evicted' not in plan['delete_pods'][2]['how']
    assert sorted(p['pod'] for p in plan['kept_pods']) == ['ns/inline', 'ns/no-pv', 'ns/unknown-claim']
    assert all(p['invariant'] == 'I6' for p in plan['kept_pods'])


def test_item6_a_daemonsets_pod_and_a_static_pods_mirror_are_left_on_the_node():
    images = [image('rbd/img-1', '10.0.0.12:0/1')]
    daemon = terminating_pod('agent', 'claim-1', terminating=False)
    daemon['metadata']['ownerReferences'] = [dict(kind='DaemonSet', name='agent', uid='d1', controller=True)]
    mirror = terminating_pod('etcd', terminating=False)
    mirror['metadata']['annotations'] = {'kubernetes.io/config.mirror': 'abc'}
    stateful = terminating_pod('web-0', 'claim-1', terminating=False)
    stateful['metadata']['ownerReferences'] = [dict(kind='StatefulSet', name='web', uid='s1', controller=True)]
    plan = i6_release([rbd_volume(1)], [daemon, mirror, stateful], images=images)
    assert [p['name'] for p in plan['delete_pods']] == ['web-0']
    assert plan['delete_pod_refs'] == [dict(namespace='ns', name='web-0', uid='uid-web-0')]
    kept = dict((p['pod'], p['reason']) for p in plan['kept_pods'])
    assert "DaemonSet" in kept['ns/agent'] and 'mirror' in kept['ns/etcd']
    assert plan['wait_claims'] == ['ns/claim-1']


def test_item6_out_of_service_taint_auto_only_when_every_volume_is_made_safe():
    images = [image('rbd/img-1', '10.0.0.12:0/1')]
    pods = [terminating_pod('p1', 'claim-1', terminating=False)]
    fenced = i6_release([rbd_volume(1)], pods, images=images)
    assert fenced['out_of_service']['taint'] is True and fenced['out_of_service']['requested'] == 'auto'
    assert 'every volume of node-b was made safe (1)' in fenced['out_of_service']['reason']
    with_ebs = i6_release([rbd_volume(1), other_volume(2)], pods, images=images)
    assert with_ebs['out_of_service']['taint'] is False
    assert 'pv-2' in with_ebs['out_of_service']['reason']
    assert safe_map(with_ebs) == {'pv-1': True, 'pv-2': False}  # auto never releases another driver's volume
    kept = i6_release([rbd_volume(1)], pods, images=images, watchers_after=images)
    assert kept['out_of_service']['taint'] is False
    nothing = i6_release([], [], images=[])
    assert nothing['out_of_service']['taint'] is True  # a node holding no volume: nothing to keep attached


def test_item6_out_of_service_taint_true_and_false_are_the_operators_word():
    images = [image('rbd/img-1', '10.0.0.12:0/1')]
    asked = i6_release([rbd_volume(1), other_volume(2)], [], images=images, out_of_service_taint=True)
    assert asked['out_of_service'] == dict(taint=True, requested=True, invariant='I6',
                                           reason='asked (out_of_service_taint=true): node-b declared shut down')
    assert safe_map(asked) == {'pv-1': True, 'pv-2': True}
    refused = i6_release([rbd_volume(1)], [], images=images, out_of_service_taint=False)
    assert refused['out_of_service']['taint'] is False and refused['out_of_service']['requested'] is False


def test_item6_networkfence_releases_only_watchers_inside_a_fence_reported_fenced():
    volumes = [rbd_volume(1), rbd_volume(2)]
    images = [image('rbd/img-1', '[::ffff:10.0.0.12]:0/1'),
              image('rbd/img-2', '10.0.0.12:0/2', '10.244.7.7:0/3', recorded=[('node-b', '10.244.7.7')])]
    fence_ = dict(fence=[], kept=[], by_image={}, refused=None)
    common = dict(fence_method='networkfence', images=images, fence=fence_, fenced_cidrs=['10.0.0.12/32'])
    not_ok = release_plan('node-b', volumes, [], networkfence_ok=False, **common)
    assert safe_map(not_ok) == {'pv-1': False, 'pv-2': False}
    ok = release_plan('node-b', volumes, [], networkfence_ok=True, **common)
    assert safe_map(ok) == {'pv-1': True, 'pv-2': False} and 'outside the NetworkFence' in ok['volumes'][1]['how']


def test_item6_failover_volumes_feed_release_plan_from_api_objects():
    pods = [terminating_pod('p1', 'claim-1'), terminating_pod('p2', 'claim-2'),
            dict(metadata=dict(name='elsewhere', namespace='ns'), spec=dict(nodeName='node-a', volumes=[
                dict(name='v', persistentVolumeClaim=dict(claimName='claim-3'))]))]
    pvcs = [dict(metadata=dict(name='claim-%d' % i, namespace='ns'), spec=dict(volumeName='pv-%d' % i)) for i in (1, 2, 3)]
    rbd_csi = dict(driver='rbd.csi.ceph.com', volumeHandle='h1', volumeAttributes=dict(pool='rbd', imageName='img-1'))
    pvs = [dict(metadata=dict(name='pv-1'), spec=dict(csi=rbd_csi)),
           dict(metadata=dict(name='pv-2'), spec=dict(csi=dict(driver='ebs.csi.aws.com', volumeHandle='h2')))]
    vas = [dict(metadata=dict(name='va-1'), spec=dict(nodeName='node-b', source=dict(persistentVolumeName='pv-1'))),
           dict(metadata=dict(name='va-2'), spec=dict(nodeName='node-b', source=dict(persistentVolumeName='pv-2'))),
           dict(metadata=dict(name='va-3'), spec=dict(nodeName='node-a', source=dict(persistentVolumeName='pv-3')))]
    volumes = failover_volumes('node-b', pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    assert [(v['pv'], v['image'], v['attachments'], v['claims']) for v in volumes] == [
        ('pv-1', 'rbd/img-1', ['va-1'], ['ns/claim-1']), ('pv-2', None, ['va-2'], ['ns/claim-2'])]
    plan = i6_release(volumes, pods[:2], images=[image('rbd/img-1', '10.0.0.12:0/1')])
    assert safe_map(plan) == {'pv-1': True, 'pv-2': False}
    assert [p['name'] for p in plan['delete_pods']] == ['p1'] and plan['remove_attachments'] == ['va-1']


def test_marker_text_is_json():
    assert json.loads(failover_marker(None))['boot_id'] is None


def test_I6_a_refused_fence_makes_no_rbd_volume_safe_even_without_watchers():
    """The fence plan refused (the failed node is Ready): an image with no watcher is not released."""
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='True')]
    images = [image('rbd/img-1')]
    plan = fence_plan(images, 'node-b', nodes, now=NOW)
    assert plan['refused']
    release = release_plan('node-b', [rbd_volume(1)], [terminating_pod('p1', 'claim-1')], images=images, fence=plan)
    assert safe_map(release) == {'pv-1': False} and release['delete_pods'] == []


def test_I6_pods_of_other_nodes_are_never_force_deleted():
    other = terminating_pod('elsewhere')
    other['spec']['nodeName'] = 'node-a'
    plan = i6_release([], [other, terminating_pod('here')], images=[])
    assert [p['name'] for p in plan['delete_pods']] == ['here']


def test_I4_unlisted_locker_address_while_a_ready_node_lists_no_ip_is_refused_without_force():
    nodes = [node('node-a', []), node('node-b', ['10.0.0.12'], ready='False'), node('node-c', ['10.0.0.13'])]
    held = lock('rbd/img', '10.244.7.7:0/5', lock_id='kubelet_lock_magic_node-b')
    plan = lock_plan([held], 'node-c', nodes, now=NOW)
    assert plan['break'] == [] and 'node-a' in plan['kept'][0]['reason']
    assert len(lock_plan([held], 'node-c', nodes, force=True, now=NOW)['break']) == 1


def test_I6_a_watcher_of_another_single_node_does_not_hold_back_the_release():
    """ceph-csi on the replacement's node (Ready node-a) opens the image to check it: its watcher is
    kept by the fence plan (I1) but is not the failed node's client, so node-b's volume is released."""
    volumes = [rbd_volume(1)]
    images = [image('rbd/img-1', '10.0.0.12:0/1', '10.0.0.11:0/2')]
    plan = i6_release(volumes, [terminating_pod('p1', 'claim-1')], images=images,
                      watchers_after=[image('rbd/img-1', '10.0.0.11:0/2')])
    assert safe_map(plan) == {'pv-1': True}
    assert [p['name'] for p in plan['delete_pods']] == ['p1']


# --------------------------------------------------------------------------- a rack lost at once (failed_nodes)
# One failover across several failed nodes keeps every invariant it keeps for one.

RACK = ['node-b', 'node-c']


def cluster(c_ready='False'):
    return ([node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False', boot_id='boot-b'),
             node('node-c', ['10.0.0.13'], ready=c_ready, boot_id='boot-c'), node('node-d', ['10.0.0.14'])],
            [lease('node-a', 1), lease('node-b', 600), lease('node-c', 600), lease('node-d', 1)])


def test_one_plan_fences_every_failed_nodes_clients_and_records_each_for_its_own_node():
    nodes, leases = cluster()
    images = [image('rbd/b1', '10.0.0.12:0/1'), image('rbd/c1', '10.0.0.13:0/2'),
              image('rbd/shared', '10.0.0.12:0/3', '10.0.0.14:0/4'),
              image('rbd/pod-net', '10.244.3.7:0/5', recorded=[('node-c', '10.244.3.7')])]
    plan = fence_plan(images, RACK, nodes, leases=leases, lease_grace=120, now=NOW)
    assert plan['refused'] is None
    assert sorted(plan['fence']) == ['10.0.0.12:0/1', '10.0.0.12:0/3', '10.0.0.13:0/2', '10.244.3.7:0/0']
    assert plan['by_node'] == {'node-b': ['10.0.0.12:0/1', '10.0.0.12:0/3'],
                               'node-c': ['10.0.0.13:0/2', '10.244.3.7:0/0']}
    assert [(k['address'], k.get('other_node')) for k in plan['kept']] == [('10.0.0.14:0/4', 'node-d')]
    assert 'Ready node node-d' in plan['kept'][0]['reason']
    # the same plan whatever the order the nodes are named in
    assert fence_plan(images, list(reversed(RACK)), nodes, leases=leases, now=NOW) == plan


def test_one_live_node_in_the_list_refuses_the_whole_run():
    nodes, leases = cluster(c_ready='True')
    plan = fence_plan([image('rbd/b1', '10.0.0.12:0/1')], RACK, nodes, leases=leases, now=NOW)
    assert plan['fence'] == [] and 'node node-c is Ready' in plan['refused']
    pre = failover_preflight(RACK, nodes, leases=leases, now=NOW)
    assert pre['refused'] == 'refusing to fence node-c: it is Ready. Fencing a live node cuts its storage.'
    assert fence_cidrs(RACK, nodes, leases=leases, now=NOW)['cidrs'] == []
    missing = failover_preflight(['node-b', 'node-z'], nodes, leases=leases, now=NOW)
    assert missing['refused'].startswith('node node-z not found (nodes: node-a, node-b, node-c, node-d)')


def test_preflight_describes_each_failed_node():
    nodes, leases = cluster()
    pre = failover_preflight(RACK, nodes, leases=leases, now=NOW)
    assert pre['refused'] is None and pre['failed_nodes'] == RACK
    assert pre['lines'] == ['node node-b: Ready=False, Lease age 600 s', 'node node-c: Ready=False, Lease age 600 s']
    assert pre['ready_nodes'] == ['node-a', 'node-d'] and pre['addresses'] == ['10.0.0.12', '10.0.0.13']
    assert pre['ready'] is None  # only meaningful for one node
    assert failover_preflight('node-b', nodes, leases=leases, now=NOW)['ready'] == 'False'


def test_an_unknown_watcher_cannot_be_tied_to_one_of_several_failed_nodes():
    """fence_unknown_watchers fences an address no node lists for one failed node; with several, node_recover
    could not know which node's return lifts it (I3), so it is kept."""
    nodes, leases = cluster()
    images = [image('rbd/x', '10.244.9.9:0/1')]
    assert fence_plan(images, ['node-b'], nodes, leases=leases, fence_unknown=True, now=NOW)['by_node'] == {
        'node-b': ['10.244.9.9:0/1']}
    plan = fence_plan(images, RACK, nodes, leases=leases, fence_unknown=True, now=NOW)
    assert plan['fence'] == [] and 'cannot be tied to one' in plan['kept'][0]['reason']
    both = [image('rbd/y', '10.244.9.8:0/1', recorded=[('node-b', '10.244.9.8'), ('node-c', '10.244.9.8')])]
    assert fence_plan(both, RACK, nodes, leases=leases, now=NOW)['fence'] == []


def test_volumes_and_release_cover_every_failed_node_and_no_other():
    def pod(name, claim, on):
        return dict(metadata=dict(name=name, namespace='ns', uid='uid-' + name, deletionTimestamp='2026-03-04T11:59:00Z',
                                  ownerReferences=[dict(kind='ReplicaSet', name='rs')]),
                    spec=dict(nodeName=on, volumes=[dict(name='v', persistentVolumeClaim=dict(claimName=claim))]))
    pods = [pod('pb', 'cb', 'node-b'), pod('pc', 'cc', 'node-c'), pod('pd', 'cd', 'node-d')]
    pvcs = [dict(metadata=dict(name=c, namespace='ns'), spec=dict(volumeName='pv-' + c)) for c in ('cb', 'cc', 'cd')]
    pvs = [dict(metadata=dict(name='pv-' + c), spec=dict(csi=dict(
        driver='rbd.csi.ceph.com', volumeHandle='h-' + c, volumeAttributes=dict(pool='rbd', imageName=c))))
        for c in ('cb', 'cc', 'cd')]
    vas = [dict(metadata=dict(name='va-' + c), spec=dict(nodeName=n, source=dict(persistentVolumeName='pv-' + c)))
           for c, n in (('cb', 'node-b'), ('cc', 'node-c'), ('cd', 'node-d'))]
    volumes = failover_volumes(RACK, pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    assert [(v['pv'], v['nodes']) for v in volumes] == [('pv-cb', ['node-b']), ('pv-cc', ['node-c'])]
    nodes, leases = cluster()
    images = [image('rbd/cb', '10.0.0.12:0/1'), image('rbd/cc', '10.0.0.13:0/2')]
    plan = fence_plan(images, RACK, nodes, leases=leases, now=NOW)
    release = release_plan(RACK, volumes, pods, images=images, fence=plan, watchers_after=[])
    assert [(p['name'], p['node'], p['uid']) for p in release['delete_pods']] == [
        ('pb', 'node-b', 'uid-pb'), ('pc', 'node-c', 'uid-pc')]
    assert release['remove_attachments'] == ['va-cb', 'va-cc'] and release['wait_claims'] == ['ns/cb', 'ns/cc']
    # a volume whose watcher was not fenced names its own node, not the whole list
    unfenced = release_plan(RACK, volumes, pods, images=images, fence=dict(plan, fence=['10.0.0.12:0/1']),
                            watchers_after=[])
    assert [p['name'] for p in unfenced['delete_pods']] == ['pb']
    assert unfenced['volumes'][1]['how'] == 'watcher(s) 10.0.0.13:0/2 of rbd/cc were not fenced'


def test_each_node_gets_its_own_networkfence_and_marker_and_recovers_alone():
    nodes, leases = cluster()
    cidrs = fence_cidrs(RACK, nodes, leases=leases, now=NOW)
    assert cidrs['by_node'] == {'node-b': ['10.0.0.12/32'], 'node-c': ['10.0.0.13/32']}
    fences = networkfence_plan(RACK, existing={'node-c': [dict(name='pre-c', cidrs=['10.0.0.13/32'])]}, cidrs_by_node=cidrs['by_node'])
    assert fences == [dict(node='node-b', name='volfence-node-b', cidrs=['10.0.0.12/32'], create=True),
                      dict(node='node-c', name='pre-c', cidrs=['10.0.0.13/32'], create=False)]
    plan = fence_plan([image('rbd/b1', '10.0.0.12:0/1'), image('rbd/c1', '10.0.0.13:0/2')], RACK, nodes, leases=leases,
                      now=NOW)
    markers = failover_markers(nodes, RACK, blocklisted_by_node=plan['by_node'], networkfences=fences, fenced_at='T')
    assert json.loads(markers['node-b']) == dict(boot_id='boot-b', fenced_at='T', blocklist=['10.0.0.12:0/1'],
                                                 networkfences=['volfence-node-b'])
    assert json.loads(markers['node-c'])['blocklist'] == ['10.0.0.13:0/2']
    # node_recover of node-b, from the run's report: only node-b's record, never node-c's
    report = dict(failed_nodes=RACK, fence_plan=plan, markers=markers)
    back = node('node-b', ['10.0.0.12'], boot_id='boot-b2')
    assert read_marker(back, report)['blocklist'] == ['10.0.0.12:0/1']
    assert read_marker(node('node-x', ['10.0.0.99']), report) is None
    entries = [dict(kind='address', entry=a, address=a, ip=a.split(':', maxsplit=1)[0], cidr=None)
               for a in ('10.0.0.12:0/1', '10.0.0.13:0/2')]
    live = [n for n in nodes if n['metadata']['name'] != 'node-b'] + [back]
    lifted = recovery_plan('node-b', live, entries=entries, fences=[], marker=read_marker(back, report), leases=[lease('node-b', 1)], now=NOW)
    assert lifted['refused'] is None
    assert lifted['remove_addresses'] == ['10.0.0.12:0/1']
    assert [k['entry'] for k in lifted['kept'] if 'entry' in k] in ([], ['10.0.0.13:0/2'])


def test_no_marker_when_nothing_is_fenced_for_any_node():
    nodes, _leases = cluster()
    assert failover_markers(nodes, RACK, blocklisted_by_node={'node-b': [], 'node-c': []}, networkfences=[], fenced_at='T') == {}
    assert failover_markers(nodes, RACK, blocklisted_by_node=None, networkfences=None, fenced_at='T') == {}
    # one node's fence is enough for every failed node to be recorded, as before
    markers = failover_markers(nodes, RACK, blocklisted_by_node={'node-b': ['10.0.0.12:0/1'], 'node-c': []}, networkfences=[], fenced_at='T')
    assert sorted(markers) == ['node-b', 'node-c']
    assert json.loads(markers['node-c'])['blocklist'] == []
    fences = [dict(node='node-c', name='pre-c', cidrs=['10.0.0.13/32'], create=False)]
    assert json.loads(failover_markers(nodes, RACK, blocklisted_by_node={}, networkfences=fences, fenced_at='T')['node-c'])['networkfences'] == ['pre-c']


def test_a_rack_recovers_in_one_run_each_node_lifting_only_its_own():
    def back(name, ip, boot):
        return node(name, [ip], boot_id=boot)
    nodes = [node('node-a', ['10.0.0.11']), back('node-b', '10.0.0.12', 'boot-b2'), back('node-c', '10.0.0.13', 'boot-c2')]
    leases = [lease(n, 1) for n in ('node-a', 'node-b', 'node-c')]
    entries = [dict(kind='address', entry=a, address=a, ip=a.split(':', maxsplit=1)[0], cidr=None)
               for a in ('10.0.0.12:0/1', '10.0.0.13:0/2', '10.0.0.11:0/9')] + [range_entry('10.0.0.0/24')]
    markers = {'node-b': dict(boot_id='boot-b', blocklist=['10.0.0.12:0/1'], networkfences=[]),
               'node-c': dict(boot_id='boot-c', blocklist=['10.0.0.13:0/2'], networkfences=[])}
    plan = recovery_plans(RACK, nodes, entries=entries, fences=[], markers=markers, leases=leases, now=NOW)
    assert plan['refused'] is None and sorted(plan['evidence']) == RACK
    assert plan['remove_addresses'] == ['10.0.0.12:0/1', '10.0.0.13:0/2']
    assert plan['remove_cidrs'] == []
    kept = [(k.get('entry'), k['node']) for k in plan['kept']]
    assert [n for e, n in kept if '10.0.0.0' in e] == RACK and all(e != '10.0.0.12:0/1' and e != '10.0.0.13:0/2' for e, _n in kept)
    assert plan['recovered'] == RACK and plan['held'] == {}
    # half the rack back: node-c still on the boot it was fenced on is held, its entry kept and said why (I3);
    # node-b, proven restarted, is recovered
    same = dict(markers, **{'node-c': dict(markers['node-c'], boot_id='boot-c2')})
    half = recovery_plans(RACK, nodes, entries=entries, fences=[], markers=same, leases=leases, now=NOW)
    assert half['refused'] is None and half['recovered'] == ['node-b'] and list(half['held']) == ['node-c']
    assert half['remove_addresses'] == ['10.0.0.12:0/1']
    [held] = [k for k in half['kept'] if k.get('entry') == '10.0.0.13:0/2']
    assert held['node'] == 'node-c' and held['invariant'] == 'I3'
    assert held['reason'].startswith('node node-c is not proven restarted: ') and half['held']['node-c'] in held['reason']
    # no node back: the run is refused, nothing is lifted, each node's entries kept with the reason
    both = dict(same, **{'node-b': dict(markers['node-b'], boot_id='boot-b2')})
    refused = recovery_plans(RACK, nodes, entries=entries, fences=[], markers=both, leases=leases, now=NOW)
    assert refused['refused'].startswith('node-b: ') and 'node-c: ' in refused['refused']
    assert refused['remove_addresses'] == [] and refused['recovered'] == [] and sorted(refused['held']) == RACK
    # one node: recovery_plan's answer, with recovered and held
    one = recovery_plans(['node-b'], nodes, entries=entries, fences=[], markers=markers, leases=leases, now=NOW)
    assert one == dict(recovery_plan('node-b', nodes, entries=entries, fences=[], marker=markers['node-b'], leases=leases, now=NOW),
                       recovered=['node-b'], held={}, held_reason=None)
    assert half['held_reason'] == 'node-c: ' + half['held']['node-c']


def test_a_node_whose_fences_could_not_be_read_is_held_whole_even_forced():
    """A refused NetworkFence read (403) is not "no CSI-Addons": lifting the rest would drop the record that
    names the node's fences and leave them Fenced with nothing to say so (I2)."""
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], boot_id='boot-b2'),
             node('node-c', ['10.0.0.13'], boot_id='boot-c2')]
    leases = [lease(n, 1) for n in ('node-a', 'node-b', 'node-c')]
    entries = [dict(kind='address', entry=a, address=a, ip=a.split(':', maxsplit=1)[0], cidr=None)
               for a in ('10.0.0.12:0/1', '10.0.0.13:0/2')]
    markers = {'node-b': dict(boot_id='boot-b', blocklist=['10.0.0.12:0/1'], networkfences=['volfence-node-b']),
               'node-c': dict(boot_id='boot-c', blocklist=['10.0.0.13:0/2'], networkfences=[])}
    refusal = ('Failed to list NetworkFence | /apis/csiaddons.openshift.io/v1alpha1/networkfences: 403 Forbidden: '
               'networkfences.csiaddons.openshift.io is forbidden')
    for force in (False, True):
        plan = recovery_plans(RACK, nodes, entries=entries, fences=[], markers=markers, leases=leases, now=NOW,
                              force=force, fences_unread={'node-b': refusal})
        assert plan['recovered'] == ['node-c'] and list(plan['held']) == ['node-b']
        assert plan['remove_addresses'] == ['10.0.0.13:0/2'] and plan['unfence'] == []
        [kept] = [k for k in plan['kept'] if k.get('entry') == '10.0.0.12:0/1']
        assert kept['invariant'] == 'I2' and refusal in kept['reason'] and kept['node'] == 'node-b'
        assert plan['evidence']['node-b']['fences_unread'] == refusal
    # one node, nothing of it fenced or recorded: still held, since what covers it is not known
    alone = recovery_plan('node-a', nodes, entries=[], fences=[], marker=None, leases=leases, now=NOW,
                          fences_unread=refusal)
    assert alone['refused'] and 'could not be read' in alone['refused']


def test_a_fence_read_fails_the_recovery_unless_the_cluster_has_no_networkfences():
    assert fence_read_failure(dict(fences=[], failed=False)) is None
    assert fence_read_failure(dict(skipped=True)) is None
    not_installed = dict(failed=True, msg='The cluster does not serve ...', status=404,
                         object=dict(kind='CustomResourceDefinition', name='networkfences.csiaddons.openshift.io'))
    assert fence_read_failure(not_installed) is None
    assert fence_read_failure(dict(failed=True, msg='403 Forbidden: no', status=403)) == '403 Forbidden: no'
    # failed_when: false clears `failed`; the missing fences still tell
    assert fence_read_failure(dict(failed=False, failed_when_result=False, msg='403 Forbidden: no', status=403)) \
        == '403 Forbidden: no'
    # a 404 of something else (the fence named) is a failure too
    assert fence_read_failure(dict(failed=True, msg='NetworkFence x not found',
                                   object=dict(kind='NetworkFence', name='x'))) == 'NetworkFence x not found'
    assert fence_read_failure(dict(failed=True)) == 'networkfence_info read no fences'


def test_node_states_name_what_recover_undoes():
    tainted = node('node-b', ['10.0.0.12'], annotations={MARKER_ANNOTATION: '{}'})
    tainted['spec'] = dict(unschedulable=True, taints=[dict(key='node.kubernetes.io/out-of-service', effect='NoExecute')])
    assert node_states([tainted, node('node-c', ['10.0.0.13'])], RACK) == dict(
        tainted=['node-b'], cordoned=['node-b'], marked=['node-b'])


# --------------------------------------------------------------------------- Kubernetes got there first

def waiting_pod(n, node='node-a'):
    return dict(pod='ns/web-%d' % n, uid='u%d' % n, node=node, claim='ns/data-web-%d' % n, pv='pv-%d' % n,
                image='rbd/img-%d' % n)


def test_waiting_pods_on_what_the_failed_node_held_are_waited_for_when_its_nodes_pods_are_gone():
    """An administrator's out-of-service taint removed node-b's pods and attachments: nothing of the node is
    left to release, but web-1 waits on img-1, which node-b's client still watches: fenced, then waited for."""
    images = [image('rbd/img-1', '10.0.0.12:0/1'), image('rbd/img-2', '10.0.0.11:0/2')]
    plan = i6_release([], [], images=images, waiting=[waiting_pod(1), waiting_pod(2)])
    assert plan['wait_claims'] == ['ns/data-web-1']  # img-2 is held by node-a's own client: not this failover's
    assert [(w['pod'], w['safe']) for w in plan['waiting']] == [('ns/web-1', True)]
    assert plan['waiting'][0]['how'] == 'fenced: 10.0.0.12:0/1' and plan['waiting_unsafe'] == []


def test_a_waiting_pod_whose_failed_node_watcher_was_not_fenced_fails_the_run_and_says_why():
    # ceph-csi recorded node-b on img-3 from a pod-network address no node lists; with a second
    # client at an address nobody lists, that one cannot be tied to node-b and is kept (I1)
    images = [image('rbd/img-3', '10.0.0.12:0/3', '10.99.0.7:0/4', recorded=[('node-b', '10.0.0.12')])]
    plan = i6_release([], [], images=images, waiting=[waiting_pod(3)])
    assert plan['wait_claims'] == []
    assert [w['safe'] for w in plan['waiting']] == [False]
    assert plan['waiting_unsafe'] == [plan['waiting'][0]['line']]
    assert 'ns/web-3 waits on rbd/img-3' in plan['waiting_unsafe'][0]
    assert 'NOT made safe' in plan['waiting_unsafe'][0] and '10.99.0.7:0/4' in plan['waiting_unsafe'][0]


def test_a_waiting_pod_whose_fenced_watcher_stays_is_not_safe():
    images = [image('rbd/img-1', '10.0.0.12:0/1')]
    plan = i6_release([], [], images=images, waiting=[waiting_pod(1)], watchers_after=images)
    assert plan['wait_claims'] == [] and 'still there' in plan['waiting_unsafe'][0]


def test_waiting_pods_with_an_unread_image_or_none_of_the_failed_nodes_are_left_out():
    images = [image('rbd/img-1')]  # nobody watches it: not stuck on node-b
    plan = i6_release([], [], images=images, waiting=[waiting_pod(1), waiting_pod(9), dict(pod='x'), 'bad'])
    assert plan['waiting'] == [] and plan['wait_claims'] == []


def test_a_waiting_pod_also_held_by_another_down_node_is_not_safe_its_own_nodes_check_is():
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False'),
             node('node-c', ['10.0.0.13'], ready='False')]
    images = [image('rbd/img-1', '10.0.0.12:0/1', '10.0.0.11:0/5'), image('rbd/img-2', '10.0.0.12:0/2', '10.0.0.13:0/6')]
    plan_ = fence_plan(images, 'node-b', nodes, now=NOW)
    plan = release_plan('node-b', [], [], images=images, fence=plan_, waiting=[waiting_pod(1), waiting_pod(2)])
    assert [(w['pod'], w['safe']) for w in plan['waiting']] == [('ns/web-1', True), ('ns/web-2', False)]
    assert plan['wait_claims'] == ['ns/data-web-1']
    assert 'node-c' in plan['waiting_unsafe'][0] and '10.0.0.13:0/6' in plan['waiting_unsafe'][0]


# --------------------------------------------------------------------------- beside ceph-csi's own fencing

def aged(entry, remaining):
    return dict(entry, expires_in=remaining)


ONE_HOUR = 3600
FIVE_YEARS = 157784760  # ceph-csi's NetworkFence entries


@pytest.mark.parametrize('entry, owner', [
    (aged(range_entry('10.0.0.12/32'), CEPH_CSI_AUTO_FENCE_SECONDS - 60), 'ceph-csi'),       # just added on detach
    (aged(address_entry('10.0.0.12:0/0'), CEPH_CSI_AUTO_FENCE_SECONDS - 86400), 'ceph-csi'),  # no ranges: the address
    (aged(range_entry('10.0.0.12/32'), ONE_HOUR), 'unrecorded'),          # Ceph's default expiry: someone's by hand
    (aged(range_entry('10.0.0.12/32'), FIVE_YEARS - 60), 'unrecorded'),  # a NetworkFence's
    (aged(range_entry('10.0.0.0/24'), CEPH_CSI_AUTO_FENCE_SECONDS - 60), 'unrecorded'),  # wider than one host
    (aged(address_entry('10.0.0.12:0/77'), CEPH_CSI_AUTO_FENCE_SECONDS - 60), 'unrecorded'),  # one client only
    (range_entry('10.0.0.12/32'), 'unrecorded'),                          # no expiry known
])
def test_entry_owner_tells_ceph_csis_fence_on_detach_by_its_shape_and_time(entry, owner):
    assert entry_owner(entry) == owner


def test_entry_owner_believes_the_failover_record_first():
    mine = address_entry('10.0.0.12:0/77')
    assert entry_owner(mine, marked={(normalize_ip('10.0.0.12'), 0, 77)}) == 'failover'
    theirs = aged(range_entry('10.0.0.12/32'), ONE_HOUR)
    assert entry_owner(theirs, driver=['cidr:10.0.0.12:0/32']) == 'ceph-csi'


def test_driver_fences_are_those_at_each_failed_nodes_own_addresses():
    nodes, _leases = cluster()
    auto = CEPH_CSI_AUTO_FENCE_SECONDS - 60
    entries = [aged(range_entry('10.0.0.12/32'), auto), aged(address_entry('10.0.0.13:0/0'), auto),
               aged(range_entry('10.0.0.11/32'), auto),        # node-a's: not a failed node
               aged(range_entry('10.0.0.13/32'), ONE_HOUR),    # not ceph-csi's
               address_entry('10.0.0.12:0/5')]
    assert driver_fences(entries, RACK, nodes) == {'node-b': ['cidr:10.0.0.12:0/32'], 'node-c': ['10.0.0.13:0/0']}
    assert driver_fences(entries, 'node-d', nodes) == {}


def test_a_node_only_the_driver_fenced_is_recorded_with_its_boot_so_recovery_can_lift_it():
    nodes, _leases = cluster()
    markers = failover_markers(nodes, ['node-b'], blocklisted_by_node={}, networkfences=[], fenced_at='T',
                               driver_fences_by_node={'node-b': ['cidr:10.0.0.12:0/32']})
    record = json.loads(markers['node-b'])
    assert record['boot_id'] == 'boot-b' and record['blocklist'] == [] and record['driver_fences'] == ['cidr:10.0.0.12:0/32']
    # node-b back on a new boot: the driver's entry is lifted, and said to be ceph-csi's; the failover's, the failover's
    back = [node('node-b', ['10.0.0.12'], boot_id='boot-b2')]
    entries = [aged(range_entry('10.0.0.12/32'), ONE_HOUR), address_entry('10.0.0.12:0/9')]
    marker = dict(record, blocklist=['10.0.0.12:0/9'])
    plan = recovery_plan('node-b', back, entries=entries, fences=[], marker=marker, leases=[lease('node-b', 1)], now=NOW)
    assert plan['refused'] is None and plan['remove_cidrs'] == ['10.0.0.12/32']
    assert plan['lifted'] == [dict(entry='cidr:10.0.0.12:0/32', node='node-b', added_by='ceph-csi'),
                              dict(entry='10.0.0.12:0/9', node='node-b', added_by='failover')]
    # still on the boot it was fenced on: nothing lifted (I3)
    same = recovery_plan('node-b', [node('node-b', ['10.0.0.12'], boot_id='boot-b')], entries=entries, fences=[], marker=marker,
                         leases=[lease('node-b', 1)], now=NOW)
    assert same['refused'] and same['lifted'] == [] and same['remove_cidrs'] == []
    # without any record, the driver's entry is not enough to prove a reboot
    assert recovery_plan('node-b', back, entries=entries, fences=[], marker=None, leases=[lease('node-b', 1)], now=NOW)['lifted'] == []


# --------------------------------------------------------------------------- issue 43: a client that comes back

def _out_of_service(n, ours=False):
    n.setdefault('spec', {})['taints'] = [dict(key='node.kubernetes.io/out-of-service', value='nodeshutdown',
                                               effect='NoExecute')]
    if ours:
        n['metadata'].setdefault('annotations', {})['volfence.csi/out-of-service-taint'] = 'added by volfence.csi'
    return n


def test_I6_a_node_under_someone_elses_out_of_service_taint_is_fenced_whole_even_with_no_image():
    """Kubernetes released every volume of such a node without a fence; a frozen client of it shows nowhere."""
    nodes = [node('node-a', ['10.0.0.11']), _out_of_service(node('node-b', ['10.0.0.12'], ready='False'))]
    plan = fence_plan([], 'node-b', nodes, now=NOW)
    assert plan['fence'] == ['10.0.0.12:0/0'] and plan['by_node'] == {'node-b': ['10.0.0.12:0/0']}
    assert plan['fenced'][0]['sources'] == ['out-of-service taint']
    # node_failover's own taint came after its fence: a re-run fences nothing again
    ours = [node('node-a', ['10.0.0.11']), _out_of_service(node('node-b', ['10.0.0.12'], ready='False'), ours=True)]
    assert fence_plan([], 'node-b', ours, now=NOW)['fence'] == []
    # never a Ready node's address, even under the taint
    shared = [node('node-a', ['10.0.0.12']), _out_of_service(node('node-b', ['10.0.0.12'], ready='False'))]
    assert fence_plan([], 'node-b', shared, now=NOW)['fence'] == []


def test_I6_an_image_the_failed_node_staged_with_no_client_visible_is_fenced_by_the_node_or_kept():
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False')]
    frozen = [image('rbd/a')]  # node-b's client froze: its watch expired, nothing shows it
    plan = fence_plan(frozen, 'node-b', nodes, now=NOW, staged={'rbd/a': ['node-b']})
    assert plan['fence'] == ['10.0.0.12:0/0'] and plan['by_image'] == {'rbd/a': ['10.0.0.12:0/0']}
    assert plan['fenced'][0]['sources'] == ['the node staged it']
    # the node's address is a Ceph daemon's (hyperconverged): nothing can be fenced, the image is kept (I1, I6)
    daemon = fence_plan(frozen, 'node-b', nodes, now=NOW, staged={'rbd/a': ['node-b']},
                        daemon_addresses=['10.0.0.12:6789/0'])
    assert daemon['fence'] == [] and [k['image'] for k in daemon['kept']] == ['rbd/a']
    assert 'Ceph daemon' in daemon['kept'][0]['reason']
    # the in-tree lock names node-b, not the krbd client that writes: node-b's addresses, whole
    locked = [image('rbd/a')]
    locked[0]['locks'] = [dict(id='kubelet_lock_magic_node-b', address='10.0.0.12:0/999', managed=False)]
    assert fence_plan(locked, 'node-b', nodes, now=NOW)['fence'] == ['10.0.0.12:0/0']
    # the exclusive-lock owner is the writing client itself: fenced exactly, even when it no longer watches
    owner = [image('rbd/a')]
    owner[0]['locks'] = [dict(id='auto 140', address='10.0.0.12:0/4242', managed=True)]
    assert fence_plan(owner, 'node-b', nodes, now=NOW)['fence'] == ['10.0.0.12:0/4242']
    # the replacement's exclusive lock (a Ready node's) is not this failover's
    other = [image('rbd/a')]
    other[0]['locks'] = [dict(id='auto 1', address='10.0.0.11:0/5', managed=True)]
    left = fence_plan(other, 'node-b', nodes, now=NOW)
    assert left['fence'] == [] and left['kept'] == []


def test_I4_I6_a_stale_in_tree_lock_is_broken_after_its_node_is_fenced_whole_not_only_its_locker():
    """kubelet takes kubelet_lock_magic_<node> with a short-lived `rbd lock add`: the locker is not the krbd client
    that maps and writes the image, which no longer watches once frozen or partitioned."""
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12', '10.0.0.50'], ready='False'),
             node('node-c', ['10.0.0.13', '10.0.0.50'], ready='False')]
    lock = dict(image='kube/img', id='kubelet_lock_magic_node-b', locker='client.4242', address='10.0.0.12:0/99')
    plan = lock_plan([lock], 'node-a', nodes, now=NOW)
    assert [b['fence'] for b in plan['break']] == [['10.0.0.12:0/99', '10.0.0.12:0/0']]  # 10.0.0.50 is shared
    # forced past (the holder cannot be tied to one node): the locker alone
    unknown = dict(lock, id='other', address='10.0.0.99:0/1')
    forced = lock_plan([unknown], 'node-a', nodes, force=True, now=NOW)
    assert [b['fence'] for b in forced['break']] == [['10.0.0.99:0/1']]


def test_I4_I6_a_failover_breaks_the_failed_nodes_in_tree_lock_on_a_waiting_pods_image_once_fenced():
    """The four incidents at once: node-b holds the in-tree lock of a pod that moved to node-a; the failover fences
    node-b (the lock's node, whole), then breaks the lock, and waits for the pod; a lock it could not break is named
    with its incident and the command, and not waited for."""
    from ansible_collections.volfence.csi.plugins.module_utils._decisions.locks import failover_lock_breaks
    nodes = [node('node-a', ['10.0.0.11']), node('node-b', ['10.0.0.12'], ready='False')]
    locked = image('kube/img', '10.0.0.12:0/7')
    locked['locks'] = [dict(id='kubelet_lock_magic_node-b', locker='client.42', address='10.0.0.12:0/7', managed=False),
                       dict(id='kubelet_lock_magic_node-a', locker='client.43', address='10.0.0.11:0/8', managed=False)]
    plan = fence_plan([locked], 'node-b', nodes, now=NOW)
    assert plan['fence'] == ['10.0.0.12:0/0']
    decided = failover_lock_breaks([locked], failed_nodes=['node-b'], fence=plan)
    assert [(b['image'], b['id']) for b in decided['break']] == [('kube/img', 'kubelet_lock_magic_node-b')]
    assert decided['kept'] == []  # node-a's lock is not this failover's
    waiting = [dict(pod='default/index-api-1', claim='default/c', image='kube/img', node='node-a')]
    after = [image('kube/img')]
    plan['locks_broken'], plan['locks_kept'] = decided['break'], []
    release = release_plan('node-b', [], [], images=[locked], fence=plan, watchers_after=after, waiting=waiting)
    assert release['waiting'][0]['safe'] and 'lock(s) broken' in release['waiting'][0]['how']
    assert release['wait_claims'] == ['default/c'] and release['waiting_unsafe'] == []
    plan['locks_broken'], plan['locks_kept'] = [], [dict(decided['break'][0], reason='breaking it failed: EIO')]
    release = release_plan('node-b', [], [], images=[locked], fence=plan, watchers_after=after, waiting=waiting)
    assert release['wait_claims'] == [] and 'stale-rbd-lock' in release['waiting_unsafe'][0]
    assert 'rbd_lock_cleanup -e pod_namespace=default -e pod_name=index-api-1' in release['waiting_unsafe'][0]
    # nothing fenced (a node not proven down): the lock is kept, never broken
    refused = dict(plan, refused='node node-b is Ready', fence=[])
    assert failover_lock_breaks([locked], failed_nodes=['node-b'], fence=refused)['break'] == []


def test_remaining_watchers_are_those_a_fence_entry_cuts_exact_or_whole():
    from ansible_collections.volfence.csi.plugins.module_utils._decisions.fence import remaining
    images = [image('rbd/a', '10.0.0.12:0/5', '10.0.0.11:0/6'), image('rbd/b', '[fd00::12]:0/7')]
    assert remaining(images, ['10.0.0.12:0/0', '[fd00::12]:0/0']) == ['10.0.0.12:0/5', '[fd00::12]:0/7']
    assert remaining(images, ['10.0.0.12:0/5']) == ['10.0.0.12:0/5']
    assert remaining(images, ['10.0.0.12:0/4']) == []

# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property-based tests of the safety decision layer (plugins/module_utils/_decisions/, docs/safety.md).

Hypothesis generates small cluster states: nodes listing shared, IPv6, IPv4-mapped (written
::ffff:a.b.c.d, 0:0:0:0:0:ffff:xxxx:xxxx or a.b.c.d depending on the place) or no addresses, of any
address type; Ready / NotReady / Unknown nodes with fresh, stale, future, foreign or missing Leases;
watchers at node and pod-network addresses with ports, nonces, v1:/v2: prefixes and brackets;
locks; blocklist entries and ranges; NetworkFences covering one or several nodes; attachments,
claims and volumesInUse.

Every rendered address is generated from a known host (an ipaddress object), so each invariant
(I1, I2, I3, I4, I6 of docs/safety.md) is checked by an oracle written here from that ground truth,
not by the helpers the layer uses to decide. Each property runs 10,000 derandomized examples
(reproducible, never flaky) on the controller's Python, a tenth of them on a target-only Python
(search_depth.py says why).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import datetime
import ipaddress
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import examples
from ansible_collections.volfence.csi.plugins.module_utils._decisions.fence import (
    fence_cidrs,
    fence_plan,
    watchers_to_settle,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.locks import lock_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import failover_volumes
from ansible_collections.volfence.csi.plugins.module_utils._decisions.recovery import recovery_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.release import release_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volume_sources import INLINE_VOLUME_KINDS

EXAMPLES = 10000
PROPERTY = settings(max_examples=examples(EXAMPLES), deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])

NOW = datetime.datetime(2026, 3, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
LEASE_GRACE = 120     # fence_plan / fence_cidrs / lock_plan: a Lease younger than this is fresh
LEASE_FRESH = 60      # recovery_plan: a recovered node renewed its Lease at most this long ago


def ip(text):
    return ipaddress.ip_address(u'%s' % text)


def net(text):
    return ipaddress.ip_network(u'%s' % text)


def unmapped(host):
    """The IPv4 host of an IPv4-mapped IPv6 address (the oracle's own, from ipaddress)."""
    return host.ipv4_mapped if host.version == 6 and host.ipv4_mapped else host


# --------------------------------------------------------------------------- ground truth: hosts and their spellings

NODE_NAMES = ('node-a', 'node-b', 'node-c', 'node-d')
# 10.0.0.1-6 share one /24 and /29; fd00::1 and fd00::2 one /64
NODE_IPS = tuple(ip(a) for a in ('10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.5', '10.0.1.9', '203.0.113.5',
                                 'fd00::1', 'fd00::2'))
POD_IPS = tuple(ip(a) for a in ('10.244.0.5', '10.244.0.6', 'fd00:244::7'))
ALL_IPS = NODE_IPS + POD_IPS


def host_text(host, form):
    """The host as a Kubernetes / ceph-csi field may spell it: form 0 plain, 1 IPv4-mapped
    (::ffff:a.b.c.d) or IPv6 exploded, 2 IPv4-mapped in hex or IPv6 upper-case."""
    if host.version == 4:
        if form == 1:
            return '::ffff:%s' % host
        if form == 2:
            return ipaddress.IPv6Address(u'::ffff:%s' % host).exploded
        return str(host)
    if form == 1:
        return host.exploded
    if form == 2:
        return str(host).upper()
    return str(host)


def ceph_text(host, form, port, nonce):
    """The host as Ceph prints a client or daemon: ip:port/nonce, [ipv6]:port/nonce,
    [::ffff:a.b.c.d]:port/nonce, with a v1:/v2: prefix, or the bare address."""
    if form == 3:
        return host_text(host, 0)
    if form == 1:
        inner = host_text(host, 1)
        return '[%s]:%d/%d' % (inner, port, nonce)
    plain = ('[%s]' % host) if host.version == 6 else str(host)
    text = '%s:%d/%d' % (plain, port, nonce)
    return ('v2:' + text) if form == 2 else text


# Every watcher / lock / blocklist address the generators use, with the host (None: unreadable)
# and the (host, port, nonce) Ceph keys it by.
WATCHERS = []
TRUTH = {}
KEYS = {}
for _host, _form, _nonce in itertools.product(ALL_IPS, range(4), (0, 7, 3271234567)):
    if _form == 3 and _nonce:
        continue
    _text = ceph_text(_host, _form, 0, _nonce)
    if _text not in TRUTH:
        WATCHERS.append(_text)
        TRUTH[_text] = _host
        KEYS[_text] = (_host, 0, _nonce)
for _text in ('garbage', 'node-a:0/1'):
    WATCHERS.append(_text)
    TRUTH[_text] = None
# blocklist address entries: what Ceph lists (ip:port/nonce, brackets for IPv6 and mapped forms)
ENTRY_ADDRESSES = [a for a in WATCHERS if TRUTH[a] is not None and a[0] != 'v' and '/' in a]

DAEMONS = []
for _host, _form in itertools.product(ALL_IPS, (0, 1, 2, 3)):
    _text = ceph_text(_host, _form, 3300 if _form == 2 else 6789, 0)
    DAEMONS.append((_text, _host))

# Networks as ceph_blocklist_info's cidr / NetworkFence spec.cidrs spell them, with the network.
NETWORKS = [net(n) for n in ('10.0.0.0/24', '10.0.0.0/29', '10.0.0.4/30', '10.0.0.1/32', '10.0.0.2/32',
                             '10.0.0.5/32', '10.0.1.9/32', '10.244.0.0/16', '10.244.0.5/32', '203.0.113.0/24',
                             'fd00::/64', 'fd00::1/128', 'fd00:244::7/128', '0.0.0.0/0')]
CIDRS = []
for _net in NETWORKS:
    CIDRS.append(('%s' % _net, _net))
    if _net.version == 4:
        CIDRS.append(('::ffff:%s/%d' % (_net.network_address, _net.prefixlen + 96), _net))

ADDRESS_TYPES = ('InternalIP', 'ExternalIP', 'Hostname', 'InternalDNS')
# (type, host, text): text None is the node's name (a Hostname / InternalDNS that is no IP)
ADDRESSES = [(kind, host, host_text(host, form)) for kind in ADDRESS_TYPES for host in NODE_IPS for form in range(3)]
ADDRESSES += [('Hostname', None, None), ('InternalDNS', None, None)]

READY = ('True', 'False', 'Unknown', None)          # None: no Ready condition at all
# (namespace, seconds since renewTime); None: no Lease; age None: renewTime unset
LEASES = (None, ('kube-node-lease', 10), ('kube-node-lease', 60), ('kube-node-lease', 61), ('kube-node-lease', 119),
          ('kube-node-lease', 120), ('kube-node-lease', 900), ('kube-node-lease', -30), ('kube-node-lease', None),
          ('default', 10))
BOOT_IDS = ('b1', 'b2', '')
VIU_RBD1 = 'kubernetes.io/rbd/rbd:img1'
VIU_RBD2 = 'kubernetes.io/rbd/rbd-image-img2'
VIU_CSI = 'kubernetes.io/csi/rbd.csi.ceph.com^0001-0009-rbd-h1'
VOLUMES_IN_USE = ((), (VIU_RBD1,), (VIU_RBD2,), (VIU_CSI,), (VIU_RBD1, VIU_CSI))
NODE_STATES = list(itertools.product(READY, LEASES, BOOT_IDS, VOLUMES_IN_USE, (True, False)))

Facts = collections.namedtuple('Facts', 'ready lease_age boot ips viu')
Cluster = collections.namedtuple('Cluster', 'nodes leases facts')


RENEW_TIMES = dict((age, (NOW - datetime.timedelta(seconds=age)).strftime('%Y-%m-%dT%H:%M:%SZ'))
                   for _namespace, age in (lease for lease in LEASES if lease) if age is not None)


class Digits(object):
    """The choices of one generated case, read from one hypothesis byte string, 2 bytes a digit.

    Hypothesis spends most of its time per choice it makes, so each property draws a single byte
    string and its builder reads every small choice (which node, which address, how many
    watchers...) from it: 10,000 examples per property stay fast. Shrinking moves the bytes, hence
    every digit, toward 0: the first, simplest choice (one node, no address, no watcher)."""

    def __init__(self, raw):
        self.raw, self.at = raw, 0

    def __call__(self, size):
        pair = self.raw[self.at:self.at + 2]
        self.at += 2
        return ((pair[0] << 8 | pair[1]) if len(pair) == 2 else 0) % size

    def pick(self, pool):
        return pool[self(len(pool))]

    def some(self, pool, most, least=0):
        return [self.pick(pool) for _n in range(least + self(most - least + 1))]


def generated(build):
    """A strategy of build(Digits) over one byte string (long enough for every builder here)."""
    return st.binary(min_size=400, max_size=400).map(lambda raw: build(Digits(raw)))


NAME_ORDERS = list(itertools.permutations(NODE_NAMES))


def build_cluster(digits):
    """1-4 nodes (names from NODE_NAMES, in any order), each with a readiness, Lease, bootID,
    volumesInUse and 0-3 addresses of any type and spelling."""
    names = digits.pick(NAME_ORDERS)[:1 + digits(len(NODE_NAMES))]
    nodes, leases, facts = [], [], {}
    for name in names:
        ready, lease_state, boot, viu, keep_key = digits.pick(NODE_STATES)
        addresses = digits.some(ADDRESSES, 3)
        listed = [dict(type=kind, address=text or name) for kind, _host, text in addresses]
        status = dict(nodeInfo=dict(bootID=boot), volumesInUse=list(viu))
        if listed or keep_key:
            status['addresses'] = listed
        if ready is not None:
            status['conditions'] = [dict(type='Ready', status=ready)]
        nodes.append(dict(metadata=dict(name=name), status=status))
        age = None
        if lease_state is not None:
            namespace, seconds = lease_state
            spec = dict(holderIdentity=name)
            if seconds is not None:
                spec['renewTime'] = RENEW_TIMES[seconds]
            leases.append(dict(metadata=dict(name=name, namespace=namespace), spec=spec))
            if namespace == 'kube-node-lease':
                age = seconds
        facts[name] = Facts(ready=ready, lease_age=age, boot=boot,
                            ips=frozenset(host for _kind, host, _text in addresses if host is not None), viu=set(viu))
    return Cluster(nodes, leases, facts)


FAILED_NAMES = NODE_NAMES + ('node-x',)


def owners(cluster, host):
    return set(name for name, f in cluster.facts.items() if host is not None and host in f.ips)


def covered(cluster, network, exclude):
    """Nodes other than `exclude` with an address inside the network."""
    return set(name for name, f in cluster.facts.items() if name != exclude
               for host in f.ips if host.version == network.version and host in network)


def lease_fresh_for_fence(facts):
    return facts.lease_age is not None and facts.lease_age < LEASE_GRACE


def provably_down(cluster, name, force):
    """The preflight's rule: the node exists, is not Ready and (unless force) its Lease is not fresh."""
    facts = cluster.facts.get(name)
    return facts is not None and facts.ready != 'True' and (force or not lease_fresh_for_fence(facts))


# --------------------------------------------------------------------------- I1: fence_plan and fence_cidrs

IMAGE_SPECS = ('rbd/img1', 'rbd/img2', 'rbd/ns/img3')
RECORDS = [(name, host_text(host, form)) for name in NODE_NAMES for host in POD_IPS + NODE_IPS[:2] for form in (0, 1)]


def build_images(digits, min_watchers=0):
    """rbd_watchers_info images (0-3, distinct specs), each with 0-3 (or 1-3) watchers and 0-2 ceph-csi
    records of which node staged it from which IP."""
    images = []
    for spec in IMAGE_SPECS[:digits(len(IMAGE_SPECS) + 1)]:
        watchers = digits.some(WATCHERS, 3, least=min_watchers)
        if images and digits(3) == 0:
            # one client watching several images (a node maps them all), recorded on some only
            previous = [w['address'] for w in images[-1]['watchers']]
            watchers = previous + [a for a in watchers if a not in previous]
        records = digits.some(RECORDS, 2)
        images.append(dict(spec=spec, watchers=[dict(address=a) for a in watchers],
                           csi_client_addresses=[dict(node=n, ip=text) for n, text in records]))
    return images


def build_failover(digits, min_watchers=0):
    """A cluster, the failed node's images, Ceph daemon addresses, the failed node, fence_unknown, force."""
    return (build_cluster(digits), build_images(digits, min_watchers), digits.some(DAEMONS, 2),
            digits.pick(FAILED_NAMES), bool(digits(2)), bool(digits(2)))


def entry_host(entry):
    """The host a blocklist entry of a plan names: a generated watcher's, or the whole IP of `ip:0/0` /
    `[ipv6]:0/0` (read here with ipaddress, not with the layer's helpers)."""
    if entry in TRUTH:
        return TRUTH[entry]
    host = entry[:-len(':0/0')] if entry.endswith(':0/0') else None
    return unmapped(ip(host.strip('[]'))) if host else None


def cuts(entry, address):
    """Whether the blocklist entry cuts the client at `address` (the oracle's own reading of Ceph's rule: the
    same (host, port, nonce), or an entry of port 0 and nonce 0, `ip:0/0` or a bare IP, every client of the
    IP)."""
    host = TRUTH.get(address)
    if host is None:
        return False  # an address that cannot be read cannot be proven cut
    if entry in KEYS:
        key = KEYS[entry]
        return key == KEYS.get(address) or (key[1:] == (0, 0) and key[0] == host)
    return entry.endswith(':0/0') and entry_host(entry) == host


def check_I1_fence_plan(cluster, failed, images, daemons, fence_unknown, force, plan):
    daemon_hosts = set(host for _text, host in daemons)
    assert sorted(set(plan['fence'])) == sorted(set(a for chosen in plan['by_image'].values() for a in chosen)
                                                | set(a for chosen in plan['by_node'].values() for a in chosen))
    addressless_ready = [n for n, f in cluster.facts.items() if f.ready == 'True' and not f.ips]

    def recorded_on(image):
        return set(unmapped(ip(c['ip'])) for c in image['csi_client_addresses'] if c['node'] == failed)

    recorded_anywhere = set(h for i in images for h in recorded_on(i))
    for address in plan['fence']:
        host = entry_host(address)
        assert host is not None, 'fenced an unreadable address %s' % address
        # never a failed node that may be alive
        assert provably_down(cluster, failed, force), 'fenced %s for a live or missing node %s' % (address, failed)
        holders = owners(cluster, host)
        assert not [n for n in holders if cluster.facts[n].ready == 'True'], 'fenced a Ready node\'s %s' % address
        assert len(holders) <= 1, 'fenced %s, shared by %s' % (address, sorted(holders))
        assert host not in daemon_hosts, 'fenced the Ceph daemon address %s' % address
        if holders:
            assert holders == set([failed]), 'fenced %s of node %s' % (address, sorted(holders))
        else:
            assert not addressless_ready, 'fenced unlisted %s while %s list no address' % (address, addressless_ready)
            # ceph-csi recorded the IP for the failed node (on this or another image), or fence_unknown
            assert host in recorded_anywhere or fence_unknown, 'fenced unrecorded %s' % address
    kept = set(k['address'] for k in plan['kept'])
    assert not kept & set(plan['fence']), 'reported kept, yet fenced: %s' % sorted(kept & set(plan['fence']))
    for image in images:
        for watcher in image['watchers']:
            assert [e for e in plan['fence'] if cuts(e, watcher['address'])] or watcher['address'] in kept


def check_I1_fence_cidrs(cluster, failed, force, result):
    for cidr in result['cidrs']:
        network = net(cidr)
        assert network.prefixlen == network.max_prefixlen, 'fenced the range %s' % cidr
        host = network.network_address
        assert provably_down(cluster, failed, force), 'fenced %s of a live or missing node' % cidr
        assert owners(cluster, host) == set([failed]), 'fenced %s, listed by %s' % (cidr, sorted(owners(cluster, host)))


@PROPERTY
@given(case=generated(build_failover))
def test_I1_never_fences_a_ready_or_shared_or_daemon_address(case):
    cluster, images, daemons, failed, fence_unknown, force = case
    plan = fence_plan(images, failed, cluster.nodes, leases=cluster.leases, lease_grace=LEASE_GRACE,
                      daemon_addresses=[text for text, _host in daemons], fence_unknown=fence_unknown, force=force,
                      now=NOW)
    check_I1_fence_plan(cluster, failed, images, daemons, fence_unknown, force, plan)
    # read again only for kept clients of a node proven down that no node lists (never a node's, a
    # daemon's or an unreadable address): waiting for them cannot outlast a live node's client
    daemon_hosts = set(host for _text, host in daemons)
    for image, address in watchers_to_settle(plan):
        host = TRUTH[address]
        assert (image, address) in set((k['image'], k['address']) for k in plan['kept'])
        assert host is not None and not owners(cluster, host) and host not in daemon_hosts, address
        assert provably_down(cluster, failed, force), 'waits on %s for a live node %s' % (address, failed)
    result = fence_cidrs(failed, cluster.nodes, leases=cluster.leases, lease_grace=LEASE_GRACE, force=force, now=NOW)
    check_I1_fence_cidrs(cluster, failed, force, result)


@PROPERTY
@given(case=generated(lambda digits: build_failover(digits, min_watchers=1) + (digits.pick(NAME_ORDERS),
                                                                               digits.pick(NAME_ORDERS))))
def test_I1_fence_plan_does_not_depend_on_the_order_of_nodes(case):
    cluster, images, _daemons, failed, _fence_unknown, force, node_order, lease_order = case
    nodes = [n for _rank, n in sorted(zip(node_order, cluster.nodes), key=lambda pair: pair[0])]
    leases = [n for _rank, n in sorted(zip(lease_order, cluster.leases), key=lambda pair: pair[0])]
    assert sorted(n['metadata']['name'] for n in nodes) == sorted(n['metadata']['name'] for n in cluster.nodes)
    assert fence_plan(images, failed, nodes, leases=leases, force=force, now=NOW) == \
        fence_plan(images, failed, cluster.nodes, leases=cluster.leases, force=force, now=NOW)
    assert fence_cidrs(failed, nodes, leases=leases, force=force, now=NOW) == \
        fence_cidrs(failed, cluster.nodes, leases=cluster.leases, force=force, now=NOW)


# --------------------------------------------------------------------------- I2, I3: recovery_plan

FENCE_NAMES = ('nf-1', 'nf-2', 'nf-3')


def range_entry(cidr_text, network):
    host = ('[%s]' % network.network_address) if network.version == 6 else str(network.network_address)
    if cidr_text.startswith('::ffff:'):
        host = '[%s]' % cidr_text.split('/')[0]
    return dict(kind='range', entry='cidr:%s:0/%s' % (host, cidr_text.split('/')[1]), address=None, cidr=cidr_text)


ENTRIES = [dict(kind='address', entry=a, address=a, cidr=None) for a in ENTRY_ADDRESSES]
ENTRIES += [range_entry(text, network) for text, network in CIDRS]
CIDR_TRUTH = dict(CIDRS)
FENCE_STATES = ('Fenced', 'Fenced', 'Unfenced')


def restarted(cluster, name):
    """The cluster with node `name` Ready, its Lease renewed 10 s ago and bootID b2 (what a node
    that came back looks like): it makes the recovery's accepting paths frequent."""
    nodes = []
    for node in cluster.nodes:
        if node['metadata']['name'] == name:
            status = dict(node['status'], conditions=[dict(type='Ready', status='True')], nodeInfo=dict(bootID='b2'))
            node = dict(node, status=status)
        nodes.append(node)
    leases = [lease for lease in cluster.leases if lease['metadata']['name'] != name]
    leases.append(dict(metadata=dict(name=name, namespace='kube-node-lease'), spec=dict(renewTime=RENEW_TIMES[10])))
    facts = dict(cluster.facts)
    facts[name] = facts[name]._replace(ready='True', lease_age=10, boot='b2')
    return Cluster(nodes, leases, facts)


def build_recovery(digits):
    """A cluster, the node to recover (often made to look restarted), blocklist entries (addresses
    in every spelling, ranges including IPv4-mapped ones), NetworkFences covering one or several
    nodes, a failover marker (or none) and force."""
    cluster, node, force = build_cluster(digits), digits.pick(FAILED_NAMES), bool(digits(2))
    if digits(3) and node in cluster.facts:
        cluster = restarted(cluster, node)
    entries = digits.some(ENTRIES, 4)
    fences = [dict(name=name, fence_state=digits.pick(FENCE_STATES),
                   cidrs=[text for text, _network in digits.some(CIDRS, 2, least=1)])
              for name in FENCE_NAMES[:digits(len(FENCE_NAMES) + 1)]]
    marker = None
    if digits(2):
        marker = dict(boot_id=digits.pick(('b1', 'b2', None)), fenced_at='2026-03-04T10:00:00Z',
                      blocklist=digits.some(ENTRY_ADDRESSES, 3),
                      networkfences=[name for name in FENCE_NAMES if digits(2)])
    return cluster, node, entries, fences, marker, force


RECOVERIES = generated(build_recovery)


def plan_recovery(cluster, node, entries, fences, marker, force):
    return recovery_plan(node, cluster.nodes, entries=entries, fences=fences, marker=marker, leases=cluster.leases, lease_fresh=LEASE_FRESH,
                         force=force, now=NOW)


@PROPERTY
@given(case=RECOVERIES)
def test_I2_recovery_never_lifts_what_covers_another_node(case):
    cluster, node, entries, fences, marker, force = case
    plan = plan_recovery(cluster, node, entries, fences, marker, force)
    own = (cluster.facts.get(node) or Facts(None, None, None, frozenset(), set())).ips
    marked_keys = set(KEYS[a] for a in (marker or {}).get('blocklist') or [])
    marked_hosts = set(key[0] for key in marked_keys)
    for address in plan['remove_addresses']:
        host = TRUTH[address]
        others = owners(cluster, host) - set([node])
        assert not others, 'removed %s, an address of %s' % (address, sorted(others))
        assert host in own or KEYS[address] in marked_keys, 'removed %s, neither %s\'s nor recorded' % (address, node)
    for cidr in plan['remove_cidrs']:
        network = CIDR_TRUTH[cidr]
        others = covered(cluster, network, node)
        assert not others, 'removed range %s covering %s' % (cidr, sorted(others))
        assert network.prefixlen == network.max_prefixlen, 'removed the range %s' % cidr
        assert network.network_address in own | marked_hosts
    by_name = dict((f['name'], f) for f in fences)
    for name in plan['unfence']:
        fence = by_name[name]
        assert fence['fence_state'] == 'Fenced'
        for text in fence['cidrs']:
            others = covered(cluster, CIDR_TRUTH[text], node)
            assert not others, 'unfenced %s, whose %s covers %s' % (name, text, sorted(others))
    lifted = set(plan['remove_addresses']) | set(plan['remove_cidrs']) | set(plan['unfence'])
    kept = set(k.get('entry') or k.get('networkfence') for k in plan['kept'])
    assert not lifted & kept
    # the report names who added exactly the entries removed, each once
    assert len(plan['lifted']) == len(plan['remove_addresses']) + len(plan['remove_cidrs'])
    assert all(item['added_by'] in ('failover', 'ceph-csi', 'unrecorded') for item in plan['lifted'])


@PROPERTY
@given(case=RECOVERIES)
def test_I3_recovery_requires_a_changed_boot_id_unless_force(case):
    cluster, node, entries, fences, marker, force = case
    plan = plan_recovery(cluster, node, entries, fences, marker, force)
    facts = cluster.facts.get(node)
    restarted = (facts is not None and facts.ready == 'True' and facts.lease_age is not None
                 and facts.lease_age <= LEASE_FRESH and bool(marker) and bool(marker.get('boot_id'))
                 and bool(facts.boot) and facts.boot != marker['boot_id'])
    lifted = plan['remove_addresses'] + plan['remove_cidrs'] + plan['unfence']
    if force or restarted:
        # a restarted node (or force) is accepted: what the plan lifts is then up to I2
        assert plan['refused'] is None, plan['refused']
    else:
        assert lifted == [], 'lifted %s for a node not proven restarted' % lifted
        # refused, unless there is nothing of the node's to lift or keep at all
        assert plan['refused'] or not plan['kept'], plan


# --------------------------------------------------------------------------- I4: lock_plan

LOCK_IDS = ('auto 140234', 'kubelet_lock_magic_node-a', 'kubelet_lock_magic_node-b', 'kubelet_lock_magic_node-c',
            'kubelet_lock_magic_node-d', 'kubelet_lock_magic_node-x')
LOCKS = list(itertools.product(('rbd/img1', 'rbd/img2'), LOCK_IDS, WATCHERS, (False, True)))
LOCK_CASES = generated(lambda digits: (build_cluster(digits), digits.pick(FAILED_NAMES), bool(digits(2)),
                                       digits.some(LOCKS, 3)))


def in_use(cluster, name, image, unique_names):
    viu = cluster.facts[name].viu
    return ((image == 'rbd/img1' and VIU_RBD1 in viu) or (image == 'rbd/img2' and VIU_RBD2 in viu)
            or (VIU_CSI in viu and VIU_CSI in unique_names))


@PROPERTY
@given(case=LOCK_CASES)
def test_I4_never_breaks_a_live_or_untied_or_own_lock(case):
    cluster, pod_node, force, picked = case
    locks = [dict(image=image, id=lock_id, locker='client.%d' % n, address=address,
                  unique_names=[VIU_CSI] if csi else [])
             for n, (image, lock_id, address, csi) in enumerate(picked)]
    plan = lock_plan(locks, pod_node, cluster.nodes, leases=cluster.leases, lease_grace=LEASE_GRACE, force=force, now=NOW)
    assert len(plan['break']) + len(plan['kept']) == len(locks)
    for lock in plan['break']:
        named = set([lock['id'][len('kubelet_lock_magic_'):]]) if lock['id'].startswith('kubelet_lock_magic_') else set()
        candidates = owners(cluster, TRUTH[lock['address']]) | named
        assert pod_node not in candidates, 'broke a lock of the stuck pod\'s own node: %s' % lock
        for name in candidates & set(cluster.facts):
            assert not (cluster.facts[name].ready == 'True' and in_use(cluster, name, lock['image'], lock['unique_names'])), \
                'broke a lock on %s, in use by Ready node %s' % (lock['image'], name)
        if not force:
            assert len(candidates) == 1, 'broke a lock not tied to one node: %s' % sorted(candidates)
            holder = candidates.pop()
            assert provably_down(cluster, holder, False), 'broke a lock of the live or missing node %s' % holder


# --------------------------------------------------------------------------- I6: release_plan

VOLUME_KINDS = ('rbd', 'rbd', 'rbd-no-pv', 'other', 'other-no-pv', 'rbd-inline', 'other-inline')
# what the fence did with a watcher: fenced, kept (with a reason), or neither
WATCHER_FATES = ('fenced', 'fenced', 'fenced', 'kept', 'none')


IMAGE_FOUND = ('found', 'found', 'found', 'missing', 'both', 'absent')
# whole-IP entries a plan may choose for a client no watcher shows: ip:0/0, [ipv6]:0/0
WHOLE_ENTRIES = ['%s:0/0' % (('[%s]' % h) if h.version == 6 else h) for h in ALL_IPS]
FATES = list(itertools.product(WATCHER_FATES, (False, True)))   # (fate, still there after the fence)
# a volume slot: absent or one of VOLUME_KINDS, whether its image was found, 0-3 watchers with their fate
CLAIM_NAMES = ('c0', 'c1', 'c2', 'c3', 'c9')
POD_SHAPES = list(itertools.product(('ns', 'ns', 'other'), (True, True, False), (False, False, True)))
POD_OWNERS = (None, 'ReplicaSet', 'StatefulSet', 'DaemonSet')
POD_NODES = ('node-b', 'node-b', 'node-a')


def build_release(digits):
    """The failed node's volumes (RBD with or without PV, other drivers), what rbd_watchers_info read
    before and after the fence, a fence plan that fenced or kept each watcher, NetworkFence CIDRs,
    the taint, and terminating (or not) pods using claims of those volumes, unknown claims or inline
    volumes."""
    volumes, images, missing, fenced, kept, after, by_image = [], [], [], [], [], [], {}
    inline_of = {}   # pod number -> [(volume name, RBD or not)] written inline in that pod
    for n in range(4):
        kind = digits.pick((None,) + VOLUME_KINDS)
        if kind is None:
            continue
        image = 'rbd/img%d' % n if kind.startswith('rbd') else None
        if kind.endswith('inline'):
            owner = digits(5)
            inline_of.setdefault(owner, []).append(('iv%d' % n, image is not None))
            volumes.append(dict(pv=None, driver='kubernetes.io/rbd' if image else 'nfs', kind='rbd-intree' if image
                                else 'other', image=image, source='pod-inline', inline='iv%d' % n,
                                attachments=[], claims=[], pods=['ns/pod-%d' % owner]))
        else:
            volumes.append(dict(pv=None if kind.endswith('no-pv') else 'pv-%d' % n, driver='rbd.csi.ceph.com' if image
                                else 'ebs.csi.aws.com', kind='rbd-csi' if image else 'csi', image=image,
                                attachments=['va-%d' % n], claims=['ns/c%d' % n]))
        if image is None:
            continue
        found = digits.pick(IMAGE_FOUND)
        if found in ('missing', 'both'):
            missing.append(dict(spec=image))
        if found == 'missing' or found == 'absent':
            continue
        watchers = [(address,) + digits.pick(FATES) for address in digits.some(WATCHERS, 3)]
        images.append(dict(spec=image, watchers=[dict(address=a) for a, _fate, _stays in watchers]))
        after.append(dict(spec=image, watchers=[dict(address=a) for a, _fate, stays in watchers if stays]))
        here = by_image.setdefault(image, [])
        for address, fate, _stays in watchers:
            if fate == 'fenced':
                fenced.append(address)
                here.append(address)
            elif fate == 'kept':
                kept.append(dict(address=address, image=image, reason='generated', invariant='I1'))
        if digits(3) == 0:
            # a client no watcher shows (ceph-csi's record, a lock holder, the node that staged it): its whole IP
            whole = digits.pick(WHOLE_ENTRIES)
            fenced.append(whole)
            here.append(whole)
    pods = []
    for n in range(digits(5)):
        claims = digits.some(CLAIM_NAMES, 3)
        namespace, terminating, inline = digits.pick(POD_SHAPES)
        spec_volumes = [dict(name='v%d' % i, persistentVolumeClaim=dict(claimName=c)) for i, c in enumerate(claims)]
        if inline:
            spec_volumes.append(dict(name='scratch', csi=dict(driver='rbd.csi.ceph.com')))
        for name, rbd in inline_of.get(n, []):
            spec_volumes.append(dict(name=name, rbd=dict(pool='rbd', image='img' + name[2:])) if rbd
                                else dict(name=name, nfs=dict(server='nfs.example', path='/' + name)))
        meta = dict(name='pod-%d' % n, namespace=namespace)
        if terminating:
            meta['deletionTimestamp'] = '2026-03-04T11:59:00Z'
        owner = digits.pick(POD_OWNERS)
        if owner:
            meta['ownerReferences'] = [dict(kind=owner, name='owner', uid='u-%d' % n, controller=True)]
        pods.append(dict(metadata=meta, spec=dict(nodeName=digits.pick(POD_NODES), volumes=spec_volumes)))
    options = dict(
        fence_method=digits.pick(('blocklist', 'networkfence')),
        images=images, missing=missing,
        fence=dict(fence=fenced, kept=kept, by_image=by_image, refused=None),
        watchers_after=after if digits(2) else None,
        fenced_cidrs=[text for text, _network in digits.some(CIDRS, 2)],
        networkfence_ok=bool(digits(2)),
        out_of_service_taint=digits.pick((True, False, 'auto')))
    return volumes, pods, options


def oracle_safe(volume, options):
    """I6 from the ground truth: a volume is made safe only if its PV is known and, for an RBD
    image, the image was read on Ceph, no client of it was kept, every watcher was fenced (cut by a
    blocklist entry, or inside a NetworkFence the controller reported Fenced) and is gone afterwards, every
    entry the plan chose for a client no watcher shows is inside the NetworkFence, and something was fenced
    for it: an image no watcher shows and nothing was fenced for may still be held by a frozen or
    partitioned client. Any other driver only under the out-of-service taint."""
    if volume['pv'] is None and volume.get('source') != 'pod-inline':
        return False
    image = volume['image']
    if image is None:
        return options['out_of_service_taint'] is True  # auto decides with the volumes made safe without it
    before = [i for i in options['images'] if i['spec'] == image]
    if not before or image in set(m['spec'] for m in options['missing']):
        return False
    watchers = [w['address'] for w in before[0]['watchers']]
    chosen = options['fence']['by_image'].get(image) or []
    if any(k['image'] == image for k in options['fence']['kept']):
        return False
    networks = [CIDR_TRUTH[text] for text in options['fenced_cidrs']]

    def inside(address):
        host = entry_host(address)
        return host is not None and any(host.version == n.version and host in n for n in networks)

    def cut(address):
        return inside(address) if options['fence_method'] == 'networkfence' else bool(
            [e for e in options['fence']['fence'] if cuts(e, address)])

    if options['fence_method'] == 'networkfence':
        if not options['networkfence_ok'] or not all(inside(a) for a in watchers + chosen):
            return False
    elif not all(cut(a) for a in watchers):
        return False
    if not watchers and not chosen:
        return False
    if options['watchers_after'] is not None:
        left = [w['address'] for i in options['watchers_after'] if i['spec'] == image for w in i['watchers']]
        if set(left) & set(watchers) or any(cut(a) for a in left):
            return False
    return True


@PROPERTY
@given(case=generated(build_release))
def test_I6_never_releases_a_volume_that_was_not_made_safe(case):
    volumes, pods, options = case
    plan = release_plan('node-b', volumes, pods, **options)
    safe_claims = set(c for v in volumes if oracle_safe(v, options) for c in v['claims'])
    unsafe_claims = set(c for v in volumes if not oracle_safe(v, options) for c in v['claims'])
    safe_vas = set(a for v in volumes if oracle_safe(v, options) for a in v['attachments'])
    unsafe_vas = set(a for v in volumes if not oracle_safe(v, options) for a in v['attachments'])
    assert len(plan['volumes']) == len(volumes)
    for verdict, volume in zip(plan['volumes'], volumes):
        assert verdict['safe'] == oracle_safe(volume, options), verdict
    by_ref = dict(('%s/%s' % (p['metadata']['namespace'], p['metadata']['name']), p) for p in pods)
    for deleted in plan['delete_pods']:
        pod = by_ref['%s/%s' % (deleted['namespace'], deleted['name'])]
        assert pod['spec']['nodeName'] == 'node-b', 'force-deleted a pod of another node'
        assert not [o for o in pod['metadata'].get('ownerReferences') or [] if o['kind'] == 'DaemonSet'], \
            "force-deleted a DaemonSet's pod (its controller puts it back on the node)"
        ref = '%s/%s' % (deleted['namespace'], deleted['name'])
        safe_inline = set(v['inline'] for v in volumes if v.get('source') == 'pod-inline' and ref in v['pods']
                          and oracle_safe(v, options))
        unsafe = [v['name'] for v in pod['spec']['volumes'] if any(k in v for k in INLINE_VOLUME_KINDS)
                  and v['name'] not in safe_inline]
        assert not unsafe, 'force-deleted a pod with the inline volume(s) %s, not made safe' % unsafe
        claims = set('%s/%s' % (deleted['namespace'], v['persistentVolumeClaim']['claimName'])
                     for v in pod['spec']['volumes'] if 'persistentVolumeClaim' in v)
        assert claims <= safe_claims and not claims & unsafe_claims, 'force-deleted a pod using %s' % sorted(claims)
    for name in plan['remove_attachments']:
        assert name in safe_vas and name not in unsafe_vas, 'removed the attachment %s of an unsafe volume' % name
    assert set(plan['kept_attachments']) == unsafe_vas
    # a pod of node-b kept with an RBD claim not made safe is never replaced: the run fails naming it
    unsafe_rbd = set(c for v in volumes if v.get('image') and not oracle_safe(v, options) for c in v['claims'])
    for kept in plan['kept_pods']:
        pod = by_ref[kept['pod']]
        claims = set('%s/%s' % (pod['metadata']['namespace'], v['persistentVolumeClaim']['claimName'])
                     for v in pod['spec']['volumes'] if 'persistentVolumeClaim' in v)
        named = [line for line in plan['kept_unsafe'] if line.startswith('pod %s stays' % kept['pod'])]
        if kept['reason'].startswith('claim(s)') and claims & unsafe_rbd:
            assert named, 'kept %s with RBD claim(s) %s not made safe, and the run would not fail' % (
                kept['pod'], sorted(claims & unsafe_rbd))
        elif not claims & unsafe_rbd:
            assert not named, plan['kept_unsafe']


@PROPERTY
@given(case=generated(build_release))
def test_I6_no_volume_of_another_driver_is_released_without_the_out_of_service_taint(case):
    """Issue 17: a volume that is not RBD (volfence.csi has no fence for it) is never made safe, its
    attachments never removed and its pods never force-deleted, unless the operator declared the node
    shut down (out-of-service taint); every volume is reported with what was done and why."""
    volumes, pods, options = case
    plan = release_plan('node-b', volumes, pods, **options)
    taint = options['out_of_service_taint'] is True
    not_rbd_vas = set(a for v in volumes if not v['image'] for a in v['attachments'])
    not_rbd_claims = set(c for v in volumes if not v['image'] for c in v['claims'])
    for verdict in plan['volumes']:
        assert verdict['rbd'] == bool(verdict['image'])
        if not verdict['rbd']:
            assert verdict['safe'] is False or taint, verdict
        assert verdict['action'] in ('released', 'released under the out-of-service taint', 'kept attached',
                                     'left alone')
        assert verdict['action'].startswith('released') == verdict['safe']
        assert verdict['line'].startswith(verdict['name']) and verdict['how'] in verdict['line']
    if not taint:
        assert not set(plan['remove_attachments']) & not_rbd_vas, 'removed the attachment of a volume not RBD'
        for deleted in plan['delete_pods']:
            pod = [p for p in pods if p['metadata']['name'] == deleted['name']
                   and p['metadata']['namespace'] == deleted['namespace']][0]
            claims = set('%s/%s' % (deleted['namespace'], v['persistentVolumeClaim']['claimName'])
                         for v in pod['spec']['volumes'] if 'persistentVolumeClaim' in v)
            assert not claims & not_rbd_claims, 'force-deleted a pod using a volume that is not RBD'
            assert not [v for v in pod['spec']['volumes'] if 'nfs' in v], 'force-deleted a pod with inline NFS'
    assert sorted(v['name'] for v in plan['not_rbd']) == sorted(v['name'] for v in plan['volumes'] if not v['rbd'])


@PROPERTY
@given(case=generated(build_release))
def test_I6_the_out_of_service_taint_only_when_asked_or_every_volume_was_made_safe(case):
    """The taint makes Kubernetes detach every volume of the node at once: with auto it is added
    exactly when every volume was made safe without it; true and false are the operator's word."""
    volumes, pods, options = case
    decision = release_plan('node-b', volumes, pods, **options)['out_of_service']
    asked = options['out_of_service_taint']
    if asked == 'auto':
        assert decision['taint'] == all(oracle_safe(v, options) for v in volumes), decision
    else:
        assert decision['taint'] is asked
    assert decision['requested'] == asked and decision['reason'] and decision['invariant'] == 'I6'


# --------------------------------------------------------------------------- failover_volumes: every volume listed

PV_SHAPES = ('rbd-csi', 'rbd-intree', 'other-csi', 'nfs', 'hostPath', 'broken-rbd', 'empty', 'missing')
NODES_OF_OBJECTS = ('node-b', 'node-b', 'node-a', None)


def pv_spec(shape, n):
    return {'rbd-csi': dict(csi=dict(driver='rbd.csi.ceph.com', volumeHandle='h%d' % n,
                                     volumeAttributes=dict(pool='rbd', imageName='img%d' % n))),
            'rbd-intree': dict(rbd=dict(pool='kube', image='img%d' % n)),
            'other-csi': dict(csi=dict(driver='ebs.csi.aws.com', volumeHandle='vol-%d' % n)),
            'nfs': dict(nfs=dict(server='nfs.example', path='/%d' % n)),
            'hostPath': dict(hostPath=dict(path='/data/%d' % n)),
            'broken-rbd': dict(rbd=dict(pool='kube')),
            'empty': {}}.get(shape)


def build_node_objects(digits):
    """Pods, claims, PVs and VolumeAttachments of node-b and node-a (or of no node): PVs of every
    kind, missing PVs, unbound and missing claims, inline volumes, attachments of inline specs or
    of no source, in API or volumeattachment_info shape."""
    pvs, truth = [], {}
    for n in range(5):
        shape = digits.pick(PV_SHAPES)
        truth['pv-%d' % n] = shape
        if shape != 'missing':
            pvs.append(dict(metadata=dict(name='pv-%d' % n), spec=pv_spec(shape, n)))
    pvcs = []
    for n in range(5):
        bound = digits(4)
        if bound == 3:
            continue  # the claim does not exist
        pvcs.append(dict(metadata=dict(name='c%d' % n, namespace='ns'),
                         spec=dict(volumeName='pv-%d' % digits(5)) if bound else {}))
    vas = []
    for n in range(digits(6)):
        node = digits.pick(NODES_OF_OBJECTS)
        how = digits(4)
        if how == 0:
            source = dict(persistentVolumeName='pv-%d' % digits(5))
        elif how == 1:
            source = dict(inlineVolumeSpec=pv_spec(digits.pick(PV_SHAPES), 10 + n))
        else:
            source = {}
        if digits(3) == 0 and source.get('persistentVolumeName'):
            vas.append(dict(name='va-%d' % n, node=node, pv=source['persistentVolumeName'], attacher='x'))
        else:
            spec = dict(attacher='ebs.csi.aws.com', nodeName=node, source=source)
            vas.append(dict(metadata=dict(name='va-%d' % n), spec=spec))
    pods = []
    for n in range(digits(5)):
        volumes = [dict(name='v%d' % i, persistentVolumeClaim=dict(claimName=c))
                   for i, c in enumerate(digits.some(('c0', 'c1', 'c2', 'c3', 'c4'), 2))]
        for i in range(digits(3)):
            kind = digits.pick(('nfs', 'rbd', 'csi', 'configMap', 'emptyDir', 'iscsi'))
            volumes.append({'name': 'i%d' % i, kind: dict(pool='rbd', image='inl%d' % i) if kind == 'rbd' else {}})
        pods.append(dict(metadata=dict(name='pod-%d' % n, namespace='ns'),
                         spec=dict(nodeName=digits.pick(NODES_OF_OBJECTS), volumes=volumes)))
    return pods, pvcs, pvs, vas, truth


@PROPERTY
@given(case=generated(build_node_objects))
def test_I6_every_volume_of_the_failed_node_is_listed_once_and_none_of_another_node(case):
    """Issue 17: failover_volumes never drops a volume (whatever its driver, a PV that does not
    exist, a claim bound to nothing, an inline volume, an attachment of an inline spec) and never
    lists one of another node; a volume is RBD exactly when its source names an RBD image."""
    pods, pvcs, pvs, vas, truth = case
    volumes = failover_volumes('node-b', pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas)
    own_vas = [v.get('name') or v['metadata']['name'] for v in vas
               if (v.get('spec') or {}).get('nodeName', v.get('node')) == 'node-b']
    listed_vas = [a for v in volumes for a in v['attachments']]
    assert sorted(listed_vas) == sorted(own_vas), 'attachments listed %s, node-b has %s' % (listed_vas, own_vas)
    own_pods = [p for p in pods if p['spec']['nodeName'] == 'node-b']
    own_claims = set('ns/' + v['persistentVolumeClaim']['claimName'] for p in own_pods for v in p['spec']['volumes']
                     if 'persistentVolumeClaim' in v)
    listed_claims = [c for v in volumes for c in v['claims']]
    assert sorted(listed_claims) == sorted(own_claims)
    own_inline = set(('ns/' + p['metadata']['name'], v['name']) for p in own_pods for v in p['spec']['volumes']
                     if any(k in v for k in INLINE_VOLUME_KINDS))
    listed_inline = [(v['pods'][0], v['inline']) for v in volumes if v['source'] == 'pod-inline']
    assert sorted(listed_inline) == sorted(own_inline)
    for volume in volumes:
        if volume['source'] == 'pv':
            assert bool(volume['image']) == (truth[volume['pv']] in ('rbd-csi', 'rbd-intree')), volume
        elif volume['source'] == 'pv-missing':
            assert truth.get(volume['pv_name']) in (None, 'missing') and volume['image'] is None
        assert volume['rbd'] == bool(volume['image'])


# --------------------------------------------------------------------------- I6: a client that comes back

# Issue 43: a frozen node (a paused VM, a soft lockup) or one cut from the storage network longer than
# osd_client_watch_timeout drops out of `rbd status` while its client still has the image open, and comes back
# writing when it thaws. The ground truth here is every client node-b really holds on each image, visible or
# not; the plan and the release see only what Ceph shows (watchers, ceph-csi's record, the locks).
B_ADDRESS_SETS = (('10.0.0.12',), ('10.0.0.12', '203.0.113.5'), (), ('10.0.0.12', '10.0.0.11'))


def _node(name, addresses, ready):
    return dict(metadata=dict(name=name), status=dict(
        addresses=[dict(type='InternalIP', address=a) for a in addresses],
        conditions=[dict(type='Ready', status=ready)], nodeInfo=dict(bootID='b1')))


def build_comeback(digits):
    """(nodes, daemons, truth {spec: [node-b's client addresses]}, images as Ceph shows them, volumes)."""
    b_addresses = digits.pick(B_ADDRESS_SETS)
    nodes = [_node('node-a', ['10.0.0.11'], 'True'), _node('node-b', b_addresses, 'False'),
             _node('node-c', digits.pick((['10.0.0.13'], ['10.0.0.13', '10.0.0.12'])), digits.pick(('True', 'False')))]
    daemons = digits.pick(([], [], ['10.0.0.12:6789/0']))
    truth, images, volumes = {}, [], []
    for n in range(1 + digits(3)):
        spec = 'rbd/img%d' % n
        # a node plugin connects from one address (its node's, or its pod network's): one host per image
        host = digits.pick(tuple(b_addresses) + ('10.244.1.5',))
        clients = ['%s:0/%d' % (host, 100 * n + i + 1) for i in range(digits(3))]
        visible = [c for c in clients if digits(2)]
        watchers = visible + (['10.0.0.11:0/7'] if digits(3) == 0 else [])  # ceph-csi on the replacement's node
        # ceph-csi (3.15+) records the node plugin's IP; a client at an address no node lists (pod networking,
        # Multus) is known only by that record: nothing can name such a client that neither watches nor was
        # recorded, so the truth here has none (docs/safety.md, I6)
        hosts = sorted(set(c.split(':')[0] for c in clients if c.split(':')[0] == '10.244.1.5' or digits(2)))
        records = [dict(node='node-b', ip=h) for h in hosts]
        locks = []
        if clients and digits(3) == 0:   # exclusive-lock: the writing client owns the managed lock
            locks.append(dict(id='auto 1', address=clients[0], managed=True))
        if digits(4) == 0 and b_addresses:  # the in-tree lock, taken by a short-lived `rbd lock add` on node-b
            locks.append(dict(id='kubelet_lock_magic_node-b', address='%s:0/999' % b_addresses[0], managed=False))
            clients.append('%s:0/998' % b_addresses[0])  # the krbd mapping that writes, not the locker
        truth[spec] = clients
        images.append(dict(spec=spec, watchers=[dict(address=a) for a in watchers], csi_client_addresses=records,
                           locks=locks))
        volumes.append(dict(pv='pv-%d' % n, driver='rbd.csi.ceph.com', kind='rbd-csi', image=spec,
                            attachments=['va-%d' % n], claims=['ns/c%d' % n], nodes=['node-b']))
    return nodes, daemons, truth, images, volumes


def _host_nonce(text):
    host, rest = text.rsplit(':', 1)
    return host, int(rest.split('/')[1])


def _oracle_cuts(entry, client):
    host, nonce = _host_nonce(entry)
    return host == _host_nonce(client)[0] and (nonce == 0 or entry == client)


@PROPERTY
@given(case=generated(build_comeback))
def test_I6_no_volume_is_released_while_a_failed_node_may_hold_a_client_of_it_that_is_not_fenced(case):
    """Whatever the mix of visible, expired (frozen, partitioned), recorded and lock-owning clients: a volume is
    released only when every client node-b really holds on it is cut by the fence, and the fence never cuts a
    Ready node's, a shared or a Ceph daemon's address (I1)."""
    nodes, daemons, truth, images, volumes = case
    plan = fence_plan(images, 'node-b', nodes, daemon_addresses=daemons, now=NOW,
                      staged=dict((v['image'], ['node-b']) for v in volumes))
    after = [dict(spec=i['spec'], watchers=[w for w in i['watchers']
                                            if not [e for e in plan['fence'] if _oracle_cuts(e, w['address'])]])
             for i in images]
    release = release_plan('node-b', volumes, [], images=images, fence=plan, watchers_after=after)
    listed = collections.Counter(a['address'] for n in nodes for a in n['status']['addresses'])
    ready = set(a['address'] for n in nodes if n['status']['conditions'][0]['status'] == 'True'
                for a in n['status']['addresses'])
    for entry in plan['fence']:
        host = _host_nonce(entry)[0]
        assert host not in ready and listed[host] <= 1, 'fenced %s: a Ready node\'s or a shared address' % entry
        assert host not in [d.split(':')[0] for d in daemons], 'fenced the Ceph daemon address %s' % entry
    for verdict in release['volumes']:
        if verdict['safe']:
            uncut = [c for c in truth[verdict['image']] if not [e for e in plan['fence'] if _oracle_cuts(e, c)]]
            assert not uncut, 'released %s while node-b may still write through %s: %s' % (
                verdict['image'], uncut, verdict['how'])

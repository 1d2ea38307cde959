# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the cluster as the safety rules see it (docs/safety.md).

Addresses normalised (a Ceph client ip:port/nonce, IPv4-mapped IPv6 and a plain IP naming one host
compare equal) and the nodes with their readiness, Lease age, bootID and every address, with the
owners of each address: what every decision of the layer reads before it decides.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import re

from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import OWN_TAINT_ANNOTATION
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    age_seconds,
    is_out_of_service,
    node_ready,
    node_taints,
    object_name,
)


# --------------------------------------------------------------------------- addresses (I1, I2)

_CEPH_TYPE_PREFIX = re.compile(r'^(?:v1|v2|any|legacy):', re.IGNORECASE)
_V4_WITH_PORT = re.compile(r'^(\d{1,3}(?:\.\d{1,3}){3}):\d+(?:/\d+)?$')
_BRACKETED = re.compile(r'^\[([^\]]+)\](?::\d+)?(?:/\d+)?$')


def unmap(ip):
    """An ipaddress object with IPv4-mapped IPv6 (::ffff:a.b.c.d) turned into its IPv4 address:
    the same host, which every safety comparison must see as one."""
    if ip is not None and ip.version == 6 and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def normalize_ip(value):
    """The host of anything that names one client: an IP, Ceph's ip:port/nonce or
    [ipv6]:port/nonce (optionally v1:/v2:/any: prefixed), an ipaddress object; IPv4-mapped IPv6
    unmapped, port and nonce dropped. None when `value` names no single host."""
    if value is None:
        return None
    if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return unmap(value)
    text = _CEPH_TYPE_PREFIX.sub('', str(value).strip())
    match = _BRACKETED.match(text) or _V4_WITH_PORT.match(text)
    if match:
        text = match.group(1)
    try:
        return unmap(ipaddress.ip_address(u'%s' % text))
    except ValueError:
        return None


def normalize_network(value):
    """A network as an ipaddress network with an IPv4-mapped IPv6 range (::ffff:10.0.0.0/120)
    turned into the IPv4 network it covers (10.0.0.0/24). Host bits are tolerated (this is for
    comparing, not for validating input). None when `value` is not a network or an address."""
    if isinstance(value, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        net = value
    else:
        text = str(value).strip()
        if text.startswith('cidr:'):
            text = text[5:]
        # Ceph writes a range as ip:0/prefix or [ipv6]:0/prefix
        ceph_range = re.match(r'^\[?([0-9A-Fa-f:.]+?)\]?:0/(\d+)$', text)
        if ceph_range:
            text = '%s/%s' % ceph_range.groups()
        if '/' not in text:
            ip = normalize_ip(text)
            return ipaddress.ip_network(ip) if ip is not None else None
        try:
            net = ipaddress.ip_network(u'%s' % text, strict=False)
        except ValueError:
            return None
    if net.version == 6 and net.network_address.ipv4_mapped is not None and net.prefixlen >= 96:
        return ipaddress.ip_network(u'%s/%d' % (net.network_address.ipv4_mapped, net.prefixlen - 96))
    return net


def network_contains(net, ip):
    """Whether the (normalised) network holds the (normalised) address."""
    return net is not None and ip is not None and net.version == ip.version and ip in net


def client_address_key(text):
    """(ip, port, nonce) of a Ceph client address (ip:port/nonce, [ipv6]:port/nonce, a plain IP), with
    the IP normalised, to compare addresses however Ceph or a record wrote them; None if unreadable."""
    text = _CEPH_TYPE_PREFIX.sub('', str(text or '').strip())
    bare = normalize_ip(text)
    if bare is not None and '/' not in text and not text.startswith('['):
        return (bare, 0, 0)  # a plain IP (a bare IPv6 would otherwise read its last group as a port)
    match = re.match(r'^\[?([0-9A-Fa-f:.]+?)\]?(?::(\d+))?(?:/(\d+))?$', text)
    if not match:
        return None
    ip = normalize_ip(match.group(1))
    if ip is None:
        return None
    return (ip, int(match.group(2) or 0), int(match.group(3) or 0))


def whole_ip_entry(ip):
    """The blocklist entry that cuts every client of `ip` (any port, any nonce), as ceph-csi fences a node's
    recorded address: Ceph matches ip:0/0 against every client of the IP (OSDMap::is_blocklisted). None when
    `ip` names no single host."""
    ip = normalize_ip(ip)
    if ip is None:
        return None
    return '%s:0/0' % (('[%s]' % ip) if ip.version == 6 else ip)


def entry_covers(entry, address):
    """Whether the blocklist entry `entry` (ip:port/nonce; ip:0/0 or a bare IP: the whole IP) cuts the client
    at `address`."""
    fenced, client = client_address_key(entry), client_address_key(address)
    if fenced is None or client is None or fenced[0] != client[0]:
        return False
    return fenced[1:] == (0, 0) or fenced == client


def covered_by(entries, address):
    """The entries of `entries` that cut the client at `address`, in their order."""
    return [e for e in entries or () if entry_covers(e, address)]


# --------------------------------------------------------------------------- the cluster as the rules see it

LEASE_NAMESPACE = 'kube-node-lease'


def failed_set(failed):
    """The failed node(s) as a sorted tuple: one name, or a list of names (a rack or a zone lost)."""
    if isinstance(failed, (list, tuple, set, frozenset)):
        return tuple(sorted(set(str(n) for n in failed if n)))
    return (failed,) if failed else ()


def failed_nodes_text(failed):
    """The failed node(s) in a sentence: 'node-b' or 'node-b, node-c'."""
    return ', '.join(failed_set(failed)) or '?'


def ready_without_address(readiness, addressless):
    """The nodes among `addressless` (names of nodes whose status lists no IP) that are Ready
    (readiness: {node: Ready condition status}), sorted: any address might be theirs, so no
    address no node lists can be proven not to be theirs."""
    return sorted(n for n in set(addressless) if readiness.get(n) == 'True')


class ClusterView(object):
    """Nodes as the safety rules need them: readiness, Lease age, bootID and every IP address
    (any address type, IPv4-mapped IPv6 unmapped), with the owners of each address."""

    def __init__(self, nodes, leases=None, now=None):
        self.nodes = {}
        self.owners = {}
        lease_age = {}
        for lease in leases or []:
            meta = lease.get('metadata') or {}
            if meta.get('namespace', LEASE_NAMESPACE) == LEASE_NAMESPACE and meta.get('name'):
                lease_age[meta['name']] = age_seconds((lease.get('spec') or {}).get('renewTime'), now)
        for node in nodes or []:
            name = object_name(node)
            if not name:
                continue
            addresses = []
            for entry in ((node.get('status') or {}).get('addresses') or []):
                ip = normalize_ip(entry.get('address'))
                if ip is not None and ip not in addresses:
                    addresses.append(ip)
            self.nodes[name] = dict(
                name=name,
                ready=node_ready(node),
                lease_age=lease_age.get(name),
                boot_id=(((node.get('status') or {}).get('nodeInfo') or {}).get('bootID') or None),
                addresses=addresses,
                volumes_in_use=list((node.get('status') or {}).get('volumesInUse') or []),
                # Kubernetes releases the volumes of a node under someone else's out-of-service taint without any
                # fence (I6); node_failover adds its own only once every volume of the node was made safe
                out_of_service=any(is_out_of_service(t) for t in node_taints(node))
                and OWN_TAINT_ANNOTATION not in ((node.get('metadata') or {}).get('annotations') or {}),
            )
            for ip in addresses:
                owners = self.owners.setdefault(ip, [])
                if name not in owners:
                    owners.append(name)
        for owners in self.owners.values():
            owners.sort()

    def owners_of(self, ip):
        return list(self.owners.get(normalize_ip(ip), []))

    def nodes_in(self, net, exclude=None):
        """Names of the nodes with an address inside the network, sorted."""
        net = normalize_network(net)
        return sorted(set(name for ip, names in self.owners.items() if network_contains(net, ip)
                          for name in names if name != exclude))

    def ready(self, name):
        return (self.nodes.get(name) or {}).get('ready') == 'True'

    def out_of_service(self, name):
        return bool((self.nodes.get(name) or {}).get('out_of_service'))

    def addressless_ready(self):
        """Ready nodes whose status lists no IP: no address can be proven not to be theirs."""
        return ready_without_address(dict((n, f['ready']) for n, f in self.nodes.items()),
                                     [n for n, f in self.nodes.items() if not f['addresses']])

    def alive_reason(self, name, lease_grace, allow_fresh_lease=False):
        """Why `name` must be treated as alive (None when it is provably down): Ready, or a Lease
        renewed within lease_grace seconds (unless allow_fresh_lease, the preflight's force)."""
        facts = self.nodes.get(name)
        if facts is None:
            return 'node %s does not exist' % name
        if facts['ready'] == 'True':
            return 'node %s is Ready' % name
        age = facts['lease_age']
        if not allow_fresh_lease and age is not None and age < int(lease_grace):
            return ('node %s renewed its Lease %d s ago (less than %d s): its kubelet may be alive'
                    % (name, age, int(lease_grace)))
        return None

    def alive_reasons(self, names, lease_grace, allow_fresh_lease=False):
        """Why any of `names` must be treated as alive, all reasons in one sentence (None when every
        one is provably down). One live node refuses the whole failover: the operator lists the lost
        nodes again once checked."""
        reasons = [r for r in (self.alive_reason(n, lease_grace, allow_fresh_lease) for n in failed_set(names)) if r]
        return '; '.join(reasons) or None


def daemon_ips(daemon_addresses):
    """The normalised IPs of the Ceph daemons' addresses (never fenced)."""
    out = set()
    for value in daemon_addresses or []:
        ip = normalize_ip(value)
        if ip is not None:
            out.add(ip)
    return out

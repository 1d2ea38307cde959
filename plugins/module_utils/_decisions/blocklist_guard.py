# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what the OSD blocklist may never hold, whoever asks (I1 of docs/safety.md).

The last guard of every blocklist write (the ceph_blocklist module, node_failover's fence, node_recover's
removal): the cluster's own daemons, the whole Internet, a range wider than max_addresses, a protected
address. Pure: _ceph/blocklist.py raises these refusals before anything is written.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    network_contains,
    normalize_ip,
    normalize_network,
)


def _mapped(network):
    """The IPv4-mapped IPv6 form (::ffff:a.b.c.d/96+n) of an IPv4 network; None for IPv6."""
    if network.version != 4:
        return None
    return ipaddress.ip_network(u'::ffff:%s/%d' % (network.network_address, network.prefixlen + 96))


def network_covers(network, other):
    """Whether blocklisting `network` (as given, maybe IPv6 or IPv4-mapped) would cover any address
    of `other` (an address or network, any form), comparing them normalised and also catching an
    IPv6 range that holds the IPv4-mapped form of an IPv4 `other` (::/1 holds ::ffff:10.0.0.1)."""
    if isinstance(other, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        other = ipaddress.ip_network(normalize_ip(other))
    else:
        other = normalize_network(other)
    norm = normalize_network(network)
    if norm.version == other.version and norm.overlaps(other):
        return True
    mapped = _mapped(other)
    return mapped is not None and network.version == 6 and network.overlaps(mapped)


def blocklist_refusals(request, daemons, *, max_addresses, protected=None):
    """Why blocklisting `request` (its `cidrs`, ipaddress networks, and `addresses`, Ceph client
    addresses with ip, port, nonce, ip_wide) is refused: it would cut off the cluster's own daemons
    (`daemons`: role, name, addr), the whole Internet, a CIDR larger than max_addresses, or anything
    covering a `protected` network ([(as written, network)]: for example the Ready nodes' addresses).
    Addresses are compared after normalisation (IPv4-mapped IPv6 as IPv4, port and nonce dropped for
    IP-wide entries): ::ffff:10.0.0.1,
    [::ffff:10.0.0.1]:0/0 and ::ffff:10.0.0.0/120 are refused like 10.0.0.1 and 10.0.0.0/24 (I1).
    Returns every reason (empty when nothing is refused)."""
    reasons = []
    protected = protected or []
    for network in request.cidrs:
        norm = normalize_network(network)
        if network.prefixlen == 0 or norm.prefixlen == 0:
            reasons.append('%s would blocklist every client of the cluster%s: refused whatever max_addresses says'
                           % (network, ' (it is %s written as IPv4-mapped IPv6)' % norm if norm != network else ''))
            continue
        if network.num_addresses > max_addresses:
            reasons.append('%s has %d addresses, more than max_addresses=%d (raise max_addresses explicitly '
                           'if this is really meant)' % (network, network.num_addresses, max_addresses))
        hits = [d for d in daemons if network_covers(network, d.addr.ip)]
        if hits:
            reasons.append('%s contains addresses of the cluster\'s own daemons: %s'
                           % (network, daemon_labels(hits)))
        guarded = [text for text, net in protected if network_covers(network, net)]
        if guarded:
            reasons.append('%s covers protected addresses (protect_addresses: %s)' % (network, ', '.join(guarded)))
    for addr in request.addresses:
        ip = normalize_ip(addr.ip)
        if addr.ip_wide:
            hits = [d for d in daemons if normalize_ip(d.addr.ip) == ip]
        else:
            hits = [d for d in daemons if normalize_ip(d.addr.ip) == ip
                    and (d.addr.port, d.addr.nonce) == (addr.port, addr.nonce)]
        if hits:
            reasons.append('%s is an address of the cluster\'s own daemons: %s' % (addr, daemon_labels(hits)))
        guarded = [text for text, net in protected if network_contains(net, ip)]
        if guarded:
            reasons.append('%s is a protected address (protect_addresses: %s)' % (addr, ', '.join(guarded)))
    return reasons


_MAPPED_V4 = ipaddress.ip_network(u'::ffff:0:0/96')


def removal_refusals(request, *, max_addresses, force=False):
    """Why lifting fences by the request's CIDRs is refused, before anything is read or removed: a CIDR
    that covers everything, or more than max_addresses:

    * 0.0.0.0/0, ::/0, ::ffff:0:0/96 (every IPv4 address, written as IPv4-mapped IPv6) and any IPv6
      range that holds it: refused always; force does not override (one call would lift every
      fence of the cluster);
    * a CIDR with more addresses than max_addresses: refused unless force (raise max_addresses, or
      set force, when a wide removal is really meant).

    Returns every reason (empty when nothing is refused)."""
    reasons = []
    for network in request.cidrs:
        norm = normalize_network(network)
        if network.prefixlen == 0 or norm.prefixlen == 0 or (network.version == 6 and network.supernet_of(_MAPPED_V4)):
            reasons.append('%s covers every address%s: it would lift every fence of the cluster; refused always '
                           '(force does not override it), remove entries by address or by a narrower CIDR'
                           % (network, ' (every IPv4 address written as IPv4-mapped IPv6)'
                              if norm.prefixlen == 0 and norm != network else ''))
        elif network.num_addresses > max_addresses and not force:
            reasons.append('%s has %d addresses, more than max_addresses=%d: removing entries by it could lift '
                           'fences of other nodes; raise max_addresses or set force=true if that is really meant'
                           % (network, network.num_addresses, max_addresses))
    return reasons


def daemon_labels(hits, limit=8):
    """'mon.a, mgr.x, osd.0 at 10.0.0.1' from the daemons hit."""
    names, ips = [], []
    for hit in hits:
        name = '%s.%s' % (hit.role, hit.name)
        if name not in names:
            names.append(name)
        if str(hit.addr.ip) not in ips:
            ips.append(str(hit.addr.ip))
    more = len(names) - limit
    return '%s%s at %s' % (', '.join(names[:limit]), (' and %d more' % more) if more > 0 else '', ', '.join(ips))

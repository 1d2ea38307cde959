# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the OSD blocklist as data, safety rules and change planning.

Pure functions only (no I/O): the modules fetch, these decide, the client executes.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress

from ansible_collections.volfence.csi.plugins.module_utils._addresses import parse_each
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CephAddr,
    CephParseError,
    CephRefused,
    iso_utc,
    parse_addr,
    parse_addr_or_network,
    parse_ceph_time,
    parse_cidr,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    network_contains,
    normalize_ip,
    normalize_network,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.blocklist_guard import blocklist_refusals, removal_refusals

DEFAULT_MAX_ADDRESSES = 256

# --------------------------------------------------------------------------- entries


class BlocklistEntry(object):
    """One blocklist entry: an address (ip:port/nonce) or a range (cidr:ip:0/prefix)."""

    __slots__ = ('kind', 'addr', 'network', 'base', 'until')

    def __init__(self, kind, addr=None, network=None, base=None, until=None):
        self.kind = kind          # 'address' or 'range'
        self.addr = addr          # CephAddr, for kind == 'address'
        self.network = network    # ip_network (normalised), for kind == 'range'
        self.base = base          # the range's address exactly as Ceph stored it (may have host bits)
        self.until = until        # aware UTC datetime or None

    @property
    def is_range(self):
        return self.kind == 'range'

    @property
    def entry(self):
        """The entry as `ceph osd blocklist ls` prints it (plain format)."""
        if self.is_range:
            host = ('[%s]' % self.base) if self.base.version == 6 else str(self.base)
            return 'cidr:%s:0/%d' % (host, self.network.prefixlen)
        return str(self.addr)

    @property
    def rm_argument(self):
        """What `osd blocklist [range] rm` needs to remove exactly this entry."""
        if self.is_range:
            return '%s/%d' % (self.base, self.network.prefixlen)
        return str(self.addr)

    def covers_ip(self, ip):
        if self.is_range:
            return ip.version == self.network.version and ip in self.network
        return self.addr.ip_wide and self.addr.ip == ip

    def __repr__(self):
        return 'BlocklistEntry(%r)' % self.entry


def _range_from_text(text):
    """'cidr:10.231.3.0:0/24', '10.231.3.0:0/24' or '[fd00::]:0/120' to (network, base)."""
    value = text[5:] if text.startswith('cidr:') else text
    addr = parse_addr(value, 'blocklist range')
    prefix = addr.nonce  # Ceph keeps the prefix length where an address keeps its nonce
    if prefix > addr.ip.max_prefixlen:
        raise ValueError('blocklist range %r has prefix length %d' % (text, prefix))
    network = ipaddress.ip_network(u'%s/%d' % (addr.ip, prefix), strict=False)
    return network, addr.ip


def parse_entry(text, until=None):
    """A BlocklistEntry from the way Ceph writes one (JSON value, osd dump key or plain line)."""
    text = text.strip()
    try:
        if text.startswith('cidr:'):
            network, base = _range_from_text(text)
            return BlocklistEntry('range', network=network, base=base, until=parse_ceph_time(until))
        return BlocklistEntry('address', addr=parse_addr(text, 'blocklist entry'), until=parse_ceph_time(until))
    except ValueError as exc:
        raise CephParseError('unexpected blocklist entry from Ceph: %s' % exc)


def parse_blocklist_docs(docs):
    """Entries from the JSON documents `osd blocklist ls --format json` printed.

    Returns (entries, has_ranges). Three shapes exist:

    * before Pacific 16.2.8: one array of address entries ([{"addr": ..., "until": ...}]);
    * Pacific 16.2.8 to Tentacle: two arrays back to back, addresses then ranges
      ({"range": "10.231.3.0:0/24", "until": ...}), which json.loads() cannot read as one;
    * monitors with ceph/ceph#65681 ("mon: Fix json format for osd blocklist ls"): one object
      holding both arrays, {"blocklist": [...], "range_blocklist": [...]} (the section names the
      two arrays always had, now keys of one object; go-ceph#1335 reads it so).

    A cluster lists range entries, and so supports `osd blocklist range add`, when it prints the
    second array or the range_blocklist key: that is how this collection detects it.
    """
    if not docs:
        return [], False
    entries = []
    lists, has_ranges = [], len(docs) >= 2
    for doc in docs:
        if isinstance(doc, dict):
            known = [key for key in ('blocklist', 'blacklist', 'range_blocklist', 'range_blacklist') if key in doc]
            if not known:
                raise CephParseError('unexpected blocklist output from Ceph: %r' % (doc,))
            for key in known:
                lists.append(doc[key])
            has_ranges = has_ranges or any(key.startswith('range_') for key in known)
        else:
            lists.append(doc)
    for items in lists:
        if not isinstance(items, list):
            raise CephParseError('unexpected blocklist output from Ceph: %r' % (items,))
        for item in items:
            if not isinstance(item, dict):
                raise CephParseError('unexpected blocklist item from Ceph: %r' % (item,))
            if 'range' in item:
                text = item['range']
                entries.append(parse_entry(text if text.startswith('cidr:') else 'cidr:' + text, item.get('until')))
            elif 'addr' in item:
                entries.append(parse_entry(item['addr'], item.get('until')))
            else:
                raise CephParseError('unexpected blocklist item from Ceph: %r' % (item,))
    return entries, has_ranges


def entry_info(entry, now):
    """What ceph_blocklist_info returns for one entry."""
    info = dict(entry=entry.entry, kind=entry.kind, expires=iso_utc(entry.until), expires_in=None,
                expired=None)
    if entry.until is not None:
        remaining = (entry.until - now).total_seconds()
        info['expires_in'] = int(remaining) if remaining >= 0 else -int(-remaining)
        info['expired'] = remaining <= 0
    if entry.is_range:
        info.update(cidr=str(entry.network), ip=None, port=None, nonce=None, address=None,
                    num_addresses=entry.network.num_addresses)
    else:
        info.update(cidr=None, ip=str(entry.addr.ip), port=entry.addr.port, nonce=entry.addr.nonce,
                    address=str(entry.addr), num_addresses=None)
    return info


def entry_matches(entry, matcher):
    """Whether a blocklist entry concerns any pattern of an AddressMatcher: an address entry whose
    address matches (an exact pattern also matches the IP-wide entry of its IP), or a range entry
    that contains a given IP or overlaps a given network. Both sides are compared normalised
    (IPv4-mapped IPv6 as IPv4): the matcher's values are, the entry's are here."""
    if entry.is_range:
        entry_net = normalize_network(entry.network)
    else:
        entry_ip = normalize_ip(entry.addr.ip)
    for _pattern, kind, value in matcher.compiled:
        if entry.is_range:
            if kind == 'network':
                hit = value.version == entry_net.version and entry_net.overlaps(value)
            else:
                ip = value if kind == 'ip' else value.ip
                hit = network_contains(entry_net, ip)
        elif kind == 'network':
            hit = network_contains(value, entry_ip)
        elif kind == 'ip':
            hit = entry_ip == value
        else:
            hit = ((entry_ip, entry.addr.port, entry.addr.nonce) == (value.ip, value.port, value.nonce)
                   or (entry.addr.ip_wide and entry_ip == value.ip))
        if hit:
            return True
    return False


def sorted_entries(entries):
    return sorted(entries, key=lambda e: (e.is_range, e.entry))


# --------------------------------------------------------------------------- the cluster's own daemons

def _addrvec(value):
    """CephAddrs of an 'addrvec'/'addrs' structure or a plain 'ip:port/nonce' string."""
    out = []
    if not value:
        return out
    if isinstance(value, str):
        try:
            out.append(parse_addr(value))
        except ValueError:
            pass
        return out
    vec = value.get('addrvec', []) if isinstance(value, dict) else value
    for item in vec:
        text = item.get('addr') if isinstance(item, dict) else None
        if not text:
            continue
        try:
            addr = parse_addr(text)
        except ValueError:
            continue
        out.append(CephAddr(addr.ip, addr.port, int(item.get('nonce', 0) or 0)))
    return out


class DaemonAddress(object):
    __slots__ = ('role', 'name', 'addr')

    def __init__(self, role, name, addr):
        self.role, self.name, self.addr = role, name, addr

    def label(self):
        return '%s.%s (%s)' % (self.role, self.name, self.addr)


def cluster_daemon_addresses(mon_dump=None, mgr_dump=None, osd_dump=None, fs_dump=None):
    """Every address the cluster's own daemons use, from the JSON dumps of the mon, mgr, osd and
    fs maps. Blocklisting any of them (or their IP) would cut the cluster off itself."""
    found = []

    def add(role, name, value):
        for addr in _addrvec(value):
            found.append(DaemonAddress(role, str(name), addr))

    for mon in (mon_dump or {}).get('mons', []):
        add('mon', mon.get('name'), mon.get('public_addrs') or mon.get('public_addr') or mon.get('addr'))
    mgr = mgr_dump or {}
    if mgr.get('active_name'):
        add('mgr', mgr.get('active_name'), mgr.get('active_addrs') or mgr.get('active_addr'))
    for standby in mgr.get('standbys', []):
        add('mgr', standby.get('name'), standby.get('addrs') or standby.get('addr'))
    # The mgr's own RADOS clients (rbd_support, volumes, ...): fencing them breaks mgr modules.
    for client in mgr.get('active_clients', []):
        add('mgr-client', '%s/%s' % (mgr.get('active_name'), client.get('name')), client.get('addrvec'))
    for osd in (osd_dump or {}).get('osds', []):
        for key in ('public_addrs', 'cluster_addrs', 'heartbeat_back_addrs', 'heartbeat_front_addrs'):
            add('osd', osd.get('osd'), osd.get(key) or osd.get(key[:-1]))
    fsmap = fs_dump or {}
    for fs in fsmap.get('filesystems', []):
        for info in ((fs.get('mdsmap') or {}).get('info') or {}).values():
            add('mds', info.get('name'), info.get('addrs') or info.get('addr'))
    for standby in fsmap.get('standbys', []):
        add('mds', standby.get('name'), standby.get('addrs') or standby.get('addr'))
    return found


# --------------------------------------------------------------------------- requests and safety

class Request(object):
    """What the user asked for, validated: addresses (CephAddr) and networks."""

    def __init__(self, addresses=None, cidrs=None):
        self.addresses, address_errors = parse_each(addresses, lambda text: parse_addr(text, 'address'))
        self.cidrs, cidr_errors = parse_each(cidrs, lambda text: parse_cidr(text, 'CIDR'))
        if address_errors or cidr_errors:
            raise ValueError('invalid input, nothing was changed: ' + '; '.join(address_errors + cidr_errors))


def parse_protected(values, what='protect_addresses'):
    """[(as written, normalised network)] from IPs, C(ip:port/nonce) addresses and CIDRs that must
    never be fenced (for example the Ready nodes' addresses). An address protects its whole IP, a
    CIDR its whole network (host bits tolerated: more protection, never less). IPv4-mapped IPv6 is
    normalised to IPv4. Raises ValueError naming every bad entry: a protect list that cannot be
    read must stop the run, not be ignored."""
    out, errors = [], []
    for value in values or []:
        try:
            network = normalize_network(parse_addr_or_network(value, what))
        except ValueError as exc:
            errors.append(str(exc))
            continue
        out.append((str(value), network))
    if errors:
        raise ValueError('invalid input, nothing was changed: ' + '; '.join(errors))
    return out


def check_safety(request, daemons, max_addresses=DEFAULT_MAX_ADDRESSES, protected=None):
    """Refuse (CephRefused, every reason at once) to blocklist what the blocklist may never hold
    (_decisions/blocklist_guard.blocklist_refusals). Returns nothing."""
    reasons = blocklist_refusals(request, daemons, max_addresses=max_addresses, protected=protected)
    if reasons:
        raise CephRefused('refused, nothing was changed: ' + '; '.join(reasons))


def check_removal(request, max_addresses=DEFAULT_MAX_ADDRESSES, force=False):
    """Refuse (CephRefused, every reason at once) to lift fences by a CIDR that covers everything, or
    more than max_addresses unless force (_decisions/blocklist_guard.removal_refusals). Returns nothing."""
    reasons = removal_refusals(request, max_addresses=max_addresses, force=force)
    if reasons:
        raise CephRefused('refused, nothing was changed: ' + '; '.join(reasons))


# --------------------------------------------------------------------------- planning

class Action(object):
    """One blocklist change: op 'add' or 'rm', on an address or a range."""

    __slots__ = ('op', 'is_range', 'target', 'display', 'source')

    def __init__(self, op, is_range, target, display, source):
        self.op = op                # 'add' | 'rm'
        self.is_range = is_range    # uses `osd blocklist range ...`
        self.target = target        # the argument Ceph gets: '10.1.2.3:0/0', '10.1.2.0/24'
        self.display = display      # the entry as `blocklist ls` will print it
        self.source = source        # what the user asked for that caused it

    def __repr__(self):
        return 'Action(%s %s%s)' % (self.op, 'range ' if self.is_range else '', self.target)

    def __eq__(self, other):
        return isinstance(other, Action) and (self.op, self.is_range, self.target) == (
            other.op, other.is_range, other.target)

    def __hash__(self):
        return hash((self.op, self.is_range, self.target))


def hosts_of(network):
    """The addresses per-address mode blocklists for a CIDR: every usable host (a /24 gives 254)."""
    return [CephAddr(ip) for ip in network.hosts()] if network.num_addresses > 2 else [
        CephAddr(ip) for ip in network]


def plan_present(request, entries, use_ranges):
    """Actions that make every requested address/CIDR blocklisted. Existing entries are left as
    they are (their expiry is not changed)."""
    actions = []
    exact = set(e.addr for e in entries if not e.is_range)
    ranges = set(e.network for e in entries if e.is_range)
    for addr in request.addresses:
        if addr not in exact:
            actions.append(Action('add', False, str(addr), str(addr), str(addr)))
    for network in request.cidrs:
        if use_ranges:
            if network not in ranges:
                host = ('[%s]' % network.network_address) if network.version == 6 else str(network.network_address)
                actions.append(Action('add', True, str(network), 'cidr:%s:0/%d' % (host, network.prefixlen),
                                      str(network)))
        else:
            for addr in hosts_of(network):
                if addr not in exact:
                    action = Action('add', False, str(addr), str(addr), str(network))
                    if action not in actions:
                        actions.append(action)
    return actions


def plan_absent(request, entries):
    """Actions that remove every entry matching the request, and warnings about what still covers
    a requested address or network afterwards (a wider range that was not asked for)."""
    actions = []
    for network in request.cidrs:
        for entry in entries:
            if entry.is_range:
                if entry.network.version == network.version and entry.network.subnet_of(network):
                    actions.append(Action('rm', True, entry.rm_argument, entry.entry, str(network)))
            elif entry.addr.ip.version == network.version and entry.addr.ip in network:
                actions.append(Action('rm', False, entry.rm_argument, entry.entry, str(network)))
    for addr in request.addresses:
        for entry in entries:
            if not entry.is_range and ((addr.ip_wide and entry.addr.ip == addr.ip) or entry.addr == addr):
                actions.append(Action('rm', False, entry.rm_argument, entry.entry, str(addr)))
    unique = []
    for action in actions:
        if action not in unique:
            unique.append(action)
    removed = set(action.display for action in unique)
    warnings = []
    for entry in entries:
        if not entry.is_range or entry.entry in removed:
            continue
        for addr in request.addresses:
            if entry.covers_ip(addr.ip):
                warnings.append('%s stays blocklisted by the range %s (remove that CIDR to lift it)'
                                % (addr, entry.network))
        for network in request.cidrs:
            if entry.network.version == network.version and entry.network.supernet_of(network) \
                    and entry.network != network:
                warnings.append('%s stays blocklisted by the wider range %s' % (network, entry.network))
    return unique, warnings


def predict_after(entries, actions):
    """The blocklist (plain entry strings) after `actions`, for check mode and diff."""
    after = [e.entry for e in sorted_entries(entries)]
    for action in actions:
        if action.op == 'add' and action.display not in after:
            after.append(action.display)
        elif action.op == 'rm' and action.display in after:
            after.remove(action.display)
    return after

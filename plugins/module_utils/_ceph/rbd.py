# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: RBD watchers, ceph-csi metadata and locks as data. Pure functions."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import fnmatch
import re

from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    AddressMatcher,
    parse_addr,
    parse_addr_or_network,
)

# ceph-csi records the address its node plugin connects from in the image metadata when
# fencing is enabled (ceph/ceph-csi PR #5429 "Handle non graceful node shutdown", 2025-07,
# refined by PR #5828): key `.rbd.csi.ceph.com/clientaddress/<volume id>/<node id>`, value the
# client IP (e.g. `100.64.0.5`, as shown in PR #5828's `rbd image-meta ls` output). CephFS uses
# `.cephfs.csi.ceph.com/clientaddress/<volume id>/<node id>` (internal/cephfs/core/metadata.go,
# GetClientAddressKey). The design document (docs/design/proposals/non-graceful-node-shutdown.md,
# PR #5409) wrote `.rbd.csi.ceph.com/clientAddress/<NodeId>`: both spellings are read, the key
# compared case-insensitively, the node being the key's last segment. The leading dot keeps
# ceph-csi from copying the key to clones and snapshots.
CSI_CLIENT_ADDRESS_PREFIXES = ('.rbd.csi.ceph.com/clientaddress/',)


def _ip_of(text):
    try:
        return parse_addr(text)
    except ValueError:
        return None


class NodeMap(object):
    """Names the node of an address from {node: [IP or CIDR, ...]}. Raises ValueError on bad input."""

    def __init__(self, node_addresses):
        self.entries = []
        for node, values in sorted((node_addresses or {}).items()):
            if isinstance(values, str):
                values = [values]
            if not isinstance(values, (list, tuple)):
                raise ValueError('node_addresses[%r] must be a list of IPs or CIDRs, got %r' % (node, values))
            for value in values:
                network = parse_addr_or_network(value if isinstance(value, str) else str(value),
                                                'node_addresses[%r]' % (node,))
                self.entries.append((str(node), network))

    def node_of(self, addr):
        """The node whose addresses contain addr.ip (most specific network wins), or None."""
        best = None
        for node, network in self.entries:
            if addr is not None and addr.ip.version == network.version and addr.ip in network:
                if best is None or network.prefixlen > best[1].prefixlen:
                    best = (node, network)
        return best[0] if best else None


def describe_watcher(raw, node_map=None):
    """A watcher as rbd_watchers_info returns it, from a backend's {address, client_id, cookie}."""
    addr = _ip_of(raw['address'])
    return dict(
        address=raw['address'],
        ip=str(addr.ip) if addr else None,
        nonce=addr.nonce if addr else None,
        client_id=int(raw['client_id']),
        client='client.%d' % int(raw['client_id']),
        cookie=int(raw['cookie']),  # 64-bit: stays an int end to end
        node=node_map.node_of(addr) if (node_map and addr) else None,
    )


def csi_client_addresses(metadata, node_map=None):
    """The client addresses ceph-csi recorded in the image metadata (see the comment above)."""
    found = []
    for key, value in sorted((metadata or {}).items()):
        lowered = key.lower()
        prefix = next((p for p in CSI_CLIENT_ADDRESS_PREFIXES if lowered.startswith(p)), None)
        if prefix is None:
            continue
        rest = key[len(prefix):].strip('/')
        parts = rest.split('/') if rest else []
        addr = _ip_of(str(value))
        found.append(dict(
            key=key,
            value=value,
            node=parts[-1] if parts else None,
            volume_id='/'.join(parts[:-1]) or None,
            ip=str(addr.ip) if addr else None,
            address=str(addr) if addr and not addr.ip_wide else None,
            node_from_addresses=node_map.node_of(addr) if (node_map and addr) else None,
        ))
    return found


def image_report(spec, raw, node_map=None, exclude=None):
    """Everything rbd_watchers_info returns for one image."""
    watchers, excluded = [], []
    for item in raw.get('watchers', []):
        watcher = describe_watcher(item, node_map)
        pattern = exclude.match(_ip_of(item['address'])) if exclude else None
        if pattern is not None:
            watcher['excluded_by'] = pattern
            excluded.append(watcher)
        else:
            watchers.append(watcher)
    watchers.sort(key=lambda w: (w['address'], w['cookie']))
    report = dict(
        spec=str(spec),
        pool=spec.pool,
        namespace=spec.namespace,
        image=spec.image,
        watchers=watchers,
        excluded_watchers=excluded,
        in_use=bool(watchers),
        nodes=sorted(set(w['node'] for w in watchers if w['node'])),
        csi_client_addresses=csi_client_addresses(raw.get('metadata'), node_map)
        if 'metadata' in raw else [],
    )
    if 'locks' in raw:
        report['locks'] = describe_locks(raw['locks'], node_map)
    return report


# --------------------------------------------------------------------------- locks

MANAGED_LOCK_TAG = 'internal'
MANAGED_LOCK_PREFIX = 'auto '


def describe_locks(locks, node_map=None):
    """Each lock holder as rbd_lock_info and rbd_lock return it, from a backend's {exclusive, tag, lockers}."""
    out = []
    for item in locks.get('lockers', []):
        addr = _ip_of(item['address'])
        managed = locks.get('tag') == MANAGED_LOCK_TAG and item['id'].startswith(MANAGED_LOCK_PREFIX)
        out.append(dict(
            id=item['id'],
            locker=item['locker'],
            address=item['address'],
            ip=str(addr.ip) if addr else None,
            nonce=addr.nonce if addr else None,
            exclusive=locks.get('exclusive'),
            tag=locks.get('tag'),
            managed=managed,
            node=node_map.node_of(addr) if (node_map and addr) else None,
        ))
    return out


def exclusive_lock_owners(described):
    """Owners of the exclusive-lock feature's managed lock ('auto <cookie>', tag 'internal'), read
    from the lockers. librbd's lock_get_owners() reports the same lock, but it refuses read-only
    opens (EINVAL: exclusive-lock feature is not enabled) and a read-write open would add a
    watcher of our own to the image."""
    return [dict(address=lock['address'], ip=lock['ip'], locker=lock['locker'], id=lock['id'],
                 mode='exclusive' if lock['exclusive'] else 'shared', node=lock['node'])
            for lock in described if lock['managed']]


_GLOB = '*?['
# What `rbd lock ls` (and librbd's list_lockers) shows as a locker: the entity name of the client
# instance, `client.<global id>`, always a number (other entity types never take advisory locks,
# but their names have the same shape).
_LOCKER = re.compile(r'^(?:(?:client|osd|mds|mon|mgr)\.)?[0-9]+$')


def check_locker(value):
    """`value` unchanged, or ValueError when it can never name a locker: without fnmatch wildcards,
    a locker is `client.<number>` (or a bare number, which gets the `client.` prefix). `client.abc`
    or a client's auth name (`client.admin`) match no lock ever: that is a mistake, not "nothing
    found"."""
    if value is None or any(c in value for c in _GLOB):
        return value
    if not _LOCKER.match(value):
        raise ValueError('locker %r is not a locker name: rbd lock ls shows lockers as client.<number> '
                         '(for example client.4272, the client instance holding the lock, not its auth name); '
                         'give that, a bare number or an fnmatch pattern such as client.42*: nothing was changed'
                         % (value,))
    return value


class LockFilter(object):
    """Which locks `state: absent` breaks: every given filter must match (AND)."""

    def __init__(self, lock_id=None, locker=None, address=None, include_managed=False):
        self.lock_id = lock_id
        self.locker = locker
        self.address = AddressMatcher([address] if isinstance(address, str) else (address or []), 'address')
        self.include_managed = include_managed

    @property
    def empty(self):
        return not (self.lock_id or self.locker or self.address)

    def match(self, lock):
        if lock['managed'] and not self.include_managed:
            return False
        if self.lock_id and not fnmatch.fnmatchcase(lock['id'], self.lock_id):
            return False
        if self.locker:
            locker = self.locker if self.locker.startswith('client.') or any(
                c in self.locker for c in '*?[') else 'client.' + self.locker
            if not fnmatch.fnmatchcase(lock['locker'], locker):
                return False
        if self.address and self.address.match(_ip_of(lock['address'])) is None:
            return False
        return True


def select_locks(described, lock_filter, protect=None):
    """(to_break, protected): matching locks, minus those held from a protected address."""
    to_break, protected = [], []
    for lock in described:
        if not lock_filter.match(lock):
            continue
        pattern = protect.match(_ip_of(lock['address'])) if protect else None
        if pattern is not None:
            entry = dict(lock)
            entry['protected_by'] = pattern
            protected.append(entry)
        else:
            to_break.append(lock)
    return to_break, protected


def _lock_label(lock):
    managed = ' (exclusive-lock feature)' if lock['managed'] else ''
    return '%r held by %s from %s%s' % (lock['id'], lock['locker'], lock['address'], managed)


def unmatched_locks_warning(spec, lock_filter, described):
    """The warning when `state: absent` selects no lock of `spec` at all (protected ones count as
    selected), else None. Nothing found is a normal answer there (a re-run after the lock was
    broken finds it gone), so the module warns instead of failing; the warning names the image,
    what was asked for, the locks the image has and, for a lock id close to an existing one (and
    matching none), a "did you mean"."""
    if any(lock_filter.match(lock) for lock in described):
        return None
    asked = []
    hints = []
    if lock_filter.lock_id:
        asked.append('lock_id %r' % lock_filter.lock_id)
        ids = sorted(set(lock['id'] for lock in described))
        close = [] if any(fnmatch.fnmatchcase(i, lock_filter.lock_id) for i in ids) else \
            difflib.get_close_matches(lock_filter.lock_id, ids, n=3, cutoff=0.6)
        if close:
            hints.append('lock_id %s' % ' or '.join(repr(c) for c in close))
    if lock_filter.locker:
        # no "did you mean" for lockers: their numbers are the client instances' global ids, a close
        # one is a coincidence; the image's lockers are listed below
        asked.append('locker %r' % lock_filter.locker)
    if lock_filter.address:
        asked.append('address %s' % ', '.join(str(a) for a in lock_filter.address.patterns))
    msg = 'no lock of %s matches %s: nothing was broken.' % (spec, ' and '.join(asked))
    if hints:
        msg += ' Did you mean %s?' % ' and '.join(hints)
    if described:
        msg += ' The image\'s locks: %s.' % '; '.join(_lock_label(lock) for lock in described)
        managed = [lock for lock in described if lock['managed']]
        with_managed = LockFilter(lock_filter.lock_id, lock_filter.locker, lock_filter.address.patterns, True)
        if not lock_filter.include_managed and any(with_managed.match(lock) for lock in managed):
            msg += ' The exclusive-lock feature\'s managed lock matches, but is only broken with include_managed=true.'
    else:
        msg += ' The image has no locks.'
    msg += (' That is normal when the lock was already broken (a re-run); otherwise check the filters (state=absent '
            'never fails for a lock that is not there).')
    return msg

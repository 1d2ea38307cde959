# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: whom each Ceph blocklist entry belongs to, and which entries need a look.

Pure functions over ceph_blocklist_info entries, Node and NetworkFence objects as JSON and
rbd_watchers_info images (their ceph-csi client addresses). An entry belongs to:

* a node: one of its addresses (address entries) or inside the range (range entries);
* a failover: the record node_failover left on a node (annotation volfence.csi/failover) lists it;
* a NetworkFence: one of its CIDRs holds the entry's address, or is the entry's range;
* a ceph-csi client: the address ceph-csi recorded in image metadata when a node staged the image
  (right also when the plugin runs with pod networking, where no node lists the address).

Flags: an entry that covers a Ready node (its clients are cut off), an entry of a failover whose node
has rebooted since (a candidate for node_recover to lift), a range wider than one host, an entry
nothing known owns. Unit tests: tests/unit/plugins/module_utils/test__blocklist_owners.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    node_addresses, node_ready, object_name as _name)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import normalize_ip
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import read_marker


def _network(entry):
    """The entry's network: a one-host network for an address entry, the range for a range entry."""
    try:
        if entry.get('kind') == 'range' and entry.get('cidr'):
            return ipaddress.ip_network(entry['cidr'], strict=False)
        ip = normalize_ip(entry.get('ip') or entry.get('address') or entry.get('entry'))
        return ipaddress.ip_network(ip) if ip is not None else None
    except ValueError:
        return None


def _networks(cidrs):
    out = []
    for cidr in cidrs or []:
        try:
            out.append(ipaddress.ip_network(str(cidr), strict=False))
        except ValueError:
            continue
    return out


def _overlaps(net, other):
    return net.version == other.version and net.overlaps(other)


def _boot_id(node):
    return ((node.get('status') or {}).get('nodeInfo') or {}).get('bootID')


def ownership(entries, nodes=None, fences=None, images=None):
    """For each entry: {entry, kind, expires, owners: [{kind, name, ...}], flags: [{flag, detail}]}."""
    nodes = [n for n in nodes or [] if isinstance(n, dict)]
    node_ips = [(n, [ipaddress.ip_network(str(ip)) for _kind, ip in node_addresses(n)]) for n in nodes]
    records = [(n, read_marker(n)) for n in nodes]
    fence_nets = [(f, _networks((f.get('spec') or {}).get('cidrs'))) for f in fences or [] if isinstance(f, dict)]
    recorded = []
    for image in images or []:
        for client in (image or {}).get('csi_client_addresses') or []:
            ip = normalize_ip(client.get('ip'))
            if ip is not None:
                recorded.append((ipaddress.ip_network(ip), client.get('node'), image.get('spec')))
    out = []
    for entry in entries or []:
        if not isinstance(entry, dict):
            continue
        net = _network(entry)
        owners, flags = [], []
        for node, nets in node_ips:
            if net is not None and any(_overlaps(net, n) for n in nets):
                owners.append(dict(kind='node', name=_name(node), ready=node_ready(node)))
        for node, record in records:
            listed = set((record or {}).get('blocklist') or [])
            if entry.get('entry') in listed or entry.get('address') in listed:
                owners.append(dict(kind='failover', name=_name(node), fenced_at=record.get('fenced_at'),
                                   boot_id=record.get('boot_id')))
                if record.get('boot_id') and _boot_id(node) and record['boot_id'] != _boot_id(node):
                    flags.append(dict(flag='node-rebooted', detail='node %s rebooted since its failover fenced it: '
                                                                   'node_recover lifts it' % _name(node)))
        for fence, nets in fence_nets:
            if net is not None and any(_overlaps(net, n) for n in nets):
                owners.append(dict(kind='networkfence', name=_name(fence),
                                   fence_state=(fence.get('spec') or {}).get('fenceState')))
        for client_net, node, image in recorded:
            if net is not None and _overlaps(net, client_net):
                owners.append(dict(kind='ceph-csi-client', name=node, image=image))
        ready = sorted(set(o['name'] for o in owners if o['kind'] == 'node' and o.get('ready') == 'True'))
        if ready:
            flags.insert(0, dict(flag='covers-ready-node', detail='covers Ready node(s) %s: their Ceph clients are cut '
                                                                  'off' % ', '.join(ready)))
        if entry.get('kind') == 'range' and net is not None and net.num_addresses > 1:
            flags.append(dict(flag='wider-than-a-host', detail='covers %d addresses; a node needs only its own'
                                                               % net.num_addresses))
        if not owners:
            flags.append(dict(flag='unknown-owner', detail='no node, failover, NetworkFence or ceph-csi client address '
                                                           'is known for it'))
        out.append(dict(entry=entry.get('entry'), kind=entry.get('kind'), expires=entry.get('expires'),
                        owners=owners, flags=flags))
    return out


def for_nodes(owned, names):
    """The entries of `owned` (ownership()) that belong to one of the nodes `names` (as a node, a failover
    or a ceph-csi client), for diagnose to show next to a stuck pod."""
    wanted = set(n for n in names or [] if n)
    return [o for o in owned or [] if any(owner.get('name') in wanted and owner['kind'] != 'networkfence'
                                          for owner in o['owners'])]


def with_blocklist(diagnoses, owned):
    """Each diagnosis (_decisions/diagnose.py) with `blocklist`: the blocklist entries (ownership()) that belong to
    the pod's node or to the node that holds its volume, and an evidence line for each flagged one (a
    fence on the pod's own Ready node keeps it from mounting as surely as a stale watcher)."""
    out = []
    for d in diagnoses:
        d = dict(d)
        holders = [d.get("node"), (d.get("target") or {}).get("failed_node")]
        d["blocklist"] = for_nodes(owned, holders)
        d["evidence"] = list(d["evidence"]) + [
            "blocklist entry %s: %s" % (o["entry"], "; ".join(f["detail"] for f in o["flags"]))
            for o in d["blocklist"] if o["flags"]]
        out.append(d)
    return out

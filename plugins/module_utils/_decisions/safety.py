# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the safety decision layer (docs/safety.md).

Every destructive step of the collection (fence, unfence, lock break, pod force-delete,
VolumeAttachment removal) is decided here, by pure functions over plain data (Kubernetes objects
as JSON dicts, rbd_watchers_info / rbd_lock_info / ceph_blocklist_info results). No I/O: the playbooks reach
these functions through the volfence.csi filters, the modules call them directly. Each decision
names the invariant (I1..I9 of docs/safety.md) that makes it safe, or says why it was refused.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import json
import re

from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import pv_rbd_image
from ansible_collections.volfence.csi.plugins.module_utils._k8s.objects import (
    age_seconds,
    node_ready,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import names_rbd_image, pod_claims

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


# --------------------------------------------------------------------------- the cluster as the rules see it

LEASE_NAMESPACE = 'kube-node-lease'


def _name(obj):
    return ((obj or {}).get('metadata') or {}).get('name')


def failed_set(failed):
    """The failed node(s) as a sorted tuple: one name, or a list of names (a rack or a zone lost)."""
    if isinstance(failed, (list, tuple, set, frozenset)):
        return tuple(sorted(set(str(n) for n in failed if n)))
    return (failed,) if failed else ()


def _display(failed):
    """The failed node(s) in a sentence: 'node-b' or 'node-b, node-c'."""
    return ', '.join(failed_set(failed)) or '?'


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
            name = _name(node)
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

    def addressless_ready(self):
        """Ready nodes whose status lists no IP: no address can be proven not to be theirs."""
        return sorted(n['name'] for n in self.nodes.values() if n['ready'] == 'True' and not n['addresses'])

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


def _daemon_ips(daemon_addresses):
    out = set()
    for value in daemon_addresses or []:
        ip = normalize_ip(value)
        if ip is not None:
            out.add(ip)
    return out


# --------------------------------------------------------------------------- I1: what a failover fences

def fence_plan(images, failed_node, nodes, leases=None, lease_grace=120, daemon_addresses=None,
               fence_unknown=False, force=False, now=None):
    """Split the watchers of the failed node's images into those to fence and those to keep (I1).

    images: rbd_watchers_info' `images` (watchers with `address`; csi_client_addresses with node, ip).
    failed_node: the failed node, or a list of failed nodes (a rack): one plan across them.
    nodes, leases: Node and Lease objects as k8s_info returns them. The watchers' own `node` field
    is not trusted: owners are re-derived from every address of every node, after normalising.
    A watcher is fenced only when its address is one failed node's alone (or, for pod networking,
    ceph-csi recorded that one failed node staged the image from it, or fence_unknown with a single
    failed node), every failed node is provably down, no Ready node lists the address, no two nodes
    share it, and no Ceph daemon uses it. force lets a fresh Lease pass (never a Ready node).
    Returns {fence: [address], kept: [{address, image, reason, invariant}], by_image: {spec: [address]},
    by_node: {node: [address]} (what each node's failover marker records), refused: reason or None}.
    """
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now)
    failed = failed_set(failed_node)
    daemons = _daemon_ips(daemon_addresses)
    refused = view.alive_reasons(failed, lease_grace, allow_fresh_lease=force)
    addressless = view.addressless_ready()
    fence, kept, by_image = [], [], {}
    by_node = dict((n, []) for n in failed)
    for image in images or []:
        spec = image.get('spec') or '%s/%s' % (image.get('pool'), image.get('image'))
        recorded = {}
        for client in image.get('csi_client_addresses') or []:
            ip = normalize_ip(client.get('ip'))
            if client.get('node') in failed and ip is not None:
                recorded.setdefault(ip, set()).add(client['node'])
        chosen = []
        for watcher in image.get('watchers') or []:
            address = watcher.get('address')
            ip = normalize_ip(address)
            reason = _fence_refusal(view, ip, failed, recorded, daemons, addressless, fence_unknown, refused)
            if reason is None:
                chosen.append(address)
                if address not in fence:
                    fence.append(address)
                owner = _fenced_owner(view, ip, failed, recorded)
                if address not in by_node[owner]:
                    by_node[owner].append(address)
            else:
                entry = dict(address=address, image=spec, reason=reason, invariant='I1')
                owner = _sole_other_owner(view, ip, failed, daemons)
                if owner:
                    # Another node's client (ceph-csi on the replacement's node opens the image to
                    # check it): not a failed node's, so it does not hold back the release (I6).
                    entry['other_node'] = owner
                elif ip is not None and not refused and ip not in daemons and not view.owners_of(ip):
                    # No node lists it: perhaps a driver's controller that opened the image for a
                    # moment (ceph-csi's ControllerUnpublish reads and removes its record there).
                    entry['unlisted'] = True
                kept.append(entry)
        by_image[spec] = chosen
    kept = _cut_elsewhere(kept, fence, by_image)
    return dict(fence=fence, kept=kept, by_image=by_image, by_node=by_node, refused=refused)


def watchers_to_settle(plan):
    """The kept watchers of a fence_plan that hold the release back (I6) and may be gone a moment
    later: clients at an address no node lists, of nodes proven down. A CSI controller on the pod
    network opens an image briefly (ceph-csi's ControllerUnpublish reads and removes the address it
    recorded at NodeStage; with fencing on it blocklists that address meanwhile). Read again before
    deciding, or such a client is reported unsafe and the pod kept. [(image, address)], sorted."""
    return sorted(set((k['image'], k['address']) for k in plan.get('kept') or () if k.get('unlisted')))


def _cut_elsewhere(kept, fence, by_image):
    """Kept watchers whose exact client (ip:port/nonce) is fenced for another image are cut by that
    entry on this image too: report them fenced there, or their volume would be held back (I6) for a
    client the run did fence. Only a ceph-csi record differs between images; no other reason can."""
    fenced = set(fence)
    still = []
    for entry in kept:
        if entry['address'] in fenced:
            by_image[entry['image']].append(entry['address'])
        else:
            still.append(entry)
    return still


def _fenced_owner(view, ip, failed, recorded):
    """The failed node a fenced address is recorded for: the node listing it, else the one ceph-csi
    recorded, else the only failed node (fence_unknown)."""
    owners = view.owners_of(ip)
    if owners:
        return owners[0]
    if len(recorded.get(ip) or ()) == 1:
        return next(iter(recorded[ip]))
    return failed[0]


def _sole_other_owner(view, ip, failed, daemons):
    """The one node other than the failed node(s) that lists `ip`, when exactly one node lists it
    and it is no Ceph daemon's; else None."""
    owners = view.owners_of(ip) if ip is not None else []
    if len(owners) == 1 and owners[0] not in failed and ip not in daemons:
        return owners[0]
    return None


def _fence_refusal(view, ip, failed, recorded, daemons, addressless, fence_unknown, refused):
    """None when the watcher at `ip` may be fenced, else why not."""
    if ip is None:
        return 'its address cannot be read as an IP'
    if ip in daemons:
        return '%s is an address of a Ceph daemon' % ip
    owners = view.owners_of(ip)
    ready = [n for n in owners if view.ready(n)]
    if ready:
        return 'held from %s, an address of Ready node %s' % (ip, ', '.join(ready))
    if len(owners) > 1:
        return 'held from %s, an address that nodes %s share: it cannot be tied to one node' % (
            ip, ', '.join(owners))
    if owners and owners[0] not in failed:
        return 'held from node %s, which is not the failed node' % owners[0] if len(failed) == 1 else (
            'held from node %s, which is not one of the failed nodes' % owners[0])
    if refused:
        return 'not fenced: %s' % refused
    if owners:
        return None
    if addressless:
        return ('held from %s, which no node lists, while Ready node(s) %s list no address: it may be '
                'theirs' % (ip, ', '.join(addressless)))
    if len(recorded.get(ip) or ()) > 1:
        return ('held from %s, which ceph-csi recorded for nodes %s: it cannot be tied to one node, so its '
                'fence could not be lifted with the right node' % (ip, ', '.join(sorted(recorded[ip]))))
    if ip in recorded:
        return None
    if fence_unknown and len(failed) == 1:
        return None
    if fence_unknown:
        return ('held from %s, which is no node\'s address and not recorded by ceph-csi for one of the failed '
                'nodes: with several failed nodes it cannot be tied to one, so node_recover could not lift its '
                'fence with the right node' % ip)
    return ('held from %s, which is no node\'s address and not recorded by ceph-csi as the failed node\'s '
            '(set fence_unknown_watchers to fence it)' % ip)


def remaining(images, fenced):
    """Watcher addresses of `images` that are still among `fenced` (empty once the fence took)."""
    fenced = set(fenced or [])
    return sorted(set(w.get('address') for i in images or [] for w in i.get('watchers') or []
                      if w.get('address') in fenced))


def fence_cidrs(failed_node, nodes, leases=None, lease_grace=120, force=False, now=None):
    """The host CIDRs a NetworkFence of the failed node(s) may fence (I1): each of a failed node's
    addresses that no Ready node lists and no other node shares. Returns {cidrs, by_node: {node:
    [cidr]} (one NetworkFence per node), kept, refused}."""
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now)
    failed = failed_set(failed_node)
    refused = view.alive_reasons(failed, lease_grace, allow_fresh_lease=force)
    cidrs, kept, by_node = [], [], {}
    for node in failed:
        own = by_node.setdefault(node, [])
        for ip in (view.nodes.get(node) or {}).get('addresses') or []:
            others = [n for n in view.owners_of(ip) if n != node]
            if refused:
                kept.append(dict(address=str(ip), reason='not fenced: %s' % refused, invariant='I1'))
            elif others:
                kept.append(dict(address=str(ip), reason='shared with node(s) %s' % ', '.join(others),
                                 invariant='I1'))
            else:
                own.append('%s/%d' % (ip, ip.max_prefixlen))
                cidrs.append(own[-1])
    return dict(cidrs=cidrs, by_node=by_node, kept=kept, refused=refused)


# --------------------------------------------------------------------------- the failover's marker (I2, I3)

# node_failover leaves this annotation on the failed Node: what it fenced and the bootID the node
# had then. node_recover lifts exactly that, and only once the bootID changed.
MARKER_ANNOTATION = 'volfence.csi/failover'
# ... and this one before it reads Ceph and fences: the bootID the node had when the failover began.
# The record above replaces it once the fence is done; a run cut off in between leaves it, and
# node_recover then still waits for another bootID (I3) and lifts the node's own addresses (I2).
STARTED_ANNOTATION = 'volfence.csi/failover-started'


def boot_id_of(node):
    return (((node or {}).get('status') or {}).get('nodeInfo') or {}).get('bootID') or None


def failover_started_mark(node, started_at):
    """The annotation value (JSON text) node_failover writes on a failed node before it fences: its
    bootID and when the failover began. A mark of the same boot is kept as it is (a re-run after a cut-off
    run keeps the first time), so a re-run writes nothing."""
    boot_id = boot_id_of(node)
    previous = read_started_mark(node)
    if previous and previous.get('boot_id') == boot_id:
        started_at = previous.get('started_at') or started_at
    return json.dumps(dict(boot_id=boot_id, started_at=started_at), sort_keys=True)


def read_started_mark(node):
    """The started mark of a node ({boot_id, started_at}), None when it has none or it is unreadable."""
    text = (((node or {}).get('metadata') or {}).get('annotations') or {}).get(STARTED_ANNOTATION)
    if not text:
        return None
    try:
        mark = json.loads(text)
    except ValueError:
        return None
    return mark if isinstance(mark, dict) else None


def failover_marker(node, blocklisted=None, networkfences=None, fenced_at=None, driver_fenced=None):
    """The annotation value (JSON text) node_failover leaves on the failed node. A marker of the
    same boot is extended, not replaced (a re-run after a partial failover keeps what the first run
    fenced), and keeps its time, so a re-run with nothing new writes nothing. driver_fenced: the
    entries the driver's own fencing added at the node's addresses (driver_fences()), kept under
    `driver_fences` only when there are some."""
    boot_id = boot_id_of(node)
    blocklist, fences, driver = set(blocklisted or []), set(networkfences or []), set(driver_fenced or [])
    previous = read_marker(node)
    if previous and previous.get('boot_id') == boot_id:
        blocklist |= set(previous.get('blocklist') or [])
        fences |= set(previous.get('networkfences') or [])
        driver |= set(previous.get('driver_fences') or [])
        fenced_at = previous.get('fenced_at') or fenced_at
    marker = dict(boot_id=boot_id, fenced_at=fenced_at, blocklist=sorted(blocklist), networkfences=sorted(fences))
    if driver:
        marker['driver_fences'] = sorted(driver)
    return json.dumps(marker, sort_keys=True)


def failover_markers(nodes, failed_node, blocklisted_by_node=None, networkfences=None, fenced_at=None,
                     driver_fences_by_node=None):
    """The marker of each failed node (failover_marker() text), from the fence plan's `by_node`, the
    NetworkFences set (networkfence_plan() entries, each with its node) and the entries the driver's own
    fencing added (driver_fences()): each node records only what was fenced for it, with its bootID, so
    node_recover lifts each node's fences when that node is back (I2, I3). Nothing fenced for any node,
    by the failover or by the driver: no markers, as there is nothing for node_recover to lift."""
    by_name = dict((_name(n), n) for n in nodes or [] if isinstance(n, dict))
    fences = {}
    for fence in networkfences or []:
        fences.setdefault(fence.get('node'), []).append(fence.get('name'))
    driver = driver_fences_by_node or {}
    if not fences and not any((blocklisted_by_node or {}).values()) and not any(driver.values()):
        return {}
    return dict((node, failover_marker(by_name.get(node) or {}, (blocklisted_by_node or {}).get(node) or [],
                                       fences.get(node) or [], fenced_at, driver.get(node) or []))
                for node in failed_set(failed_node))


def networkfence_plan(failed_node, existing, cidrs_by_node):
    """The NetworkFences a failover sets Fenced (I1): for each failed node its pre-created fences
    (existing: {node: networkfence_info fences}), else one new fence volfence-<node> of the node's own
    host CIDRs (fence_cidrs() by_node; none when it has no address it may fence)."""
    plan = []
    for node in failed_set(failed_node):
        fences = [f for f in (existing or {}).get(node) or [] if isinstance(f, dict) and f.get('name')]
        if fences:
            plan.extend(dict(node=node, name=f['name'], cidrs=list(f.get('cidrs') or []), create=False)
                        for f in fences)
        elif (cidrs_by_node or {}).get(node):
            plan.append(dict(node=node, name='volfence-%s' % node, cidrs=list(cidrs_by_node[node]), create=True))
    return plan


def read_marker(node=None, report=None):
    """The failover's record for a node: from its annotation, else from a node_failover JSON
    report (a dict; a report of several failed nodes has one marker per node). None when neither
    says anything."""
    text = (((node or {}).get('metadata') or {}).get('annotations') or {}).get(MARKER_ANNOTATION)
    started = read_started_mark(node)
    if text:
        try:
            marker = json.loads(text)
        except ValueError:
            marker = None
        if isinstance(marker, dict):
            if started and started.get('boot_id') and started['boot_id'] != marker.get('boot_id'):
                # a start is newer than the record beside it (a record replaces the start): a later failover,
                # cut off on another boot, may have fenced that boot's clients, so its bootID holds (I3);
                # what the record lists was fenced on an earlier boot and is lifted with it (I2)
                return dict(marker, boot_id=started['boot_id'])
            return marker
    if started and started.get('boot_id'):
        # a failover cut off after it began: its bootID holds (I3); what it fenced was not recorded, so
        # only the node's own addresses are lifted (I2), the rest expires
        return dict(boot_id=started['boot_id'], fenced_at=started.get('started_at'), blocklist=[],
                    networkfences=[], started_only=True)
    if isinstance(report, dict) and report:
        markers = report.get('markers')
        if isinstance(markers, dict):
            # a report of this run's format: a node it does not name has no record there
            marker = markers.get(_name(node)) if len(markers) > 1 or node else next(iter(markers.values()), None)
            if isinstance(marker, str):
                try:
                    marker = json.loads(marker)
                except ValueError:
                    marker = None
            return marker if isinstance(marker, dict) else None
        marker = report.get('marker')
        if isinstance(marker, dict):
            return marker
        plan = report.get('fence_plan') or {}
        return dict(boot_id=(report.get('preflight') or {}).get('boot_id'), fenced_at=report.get('generated'),
                    blocklist=list(plan.get('fence') or []), networkfences=list(report.get('networkfences') or []))
    return None


def _addr_key(text):
    """(ip, port, nonce) of a Ceph client address, with the IP normalised; None if unreadable."""
    text = _CEPH_TYPE_PREFIX.sub('', str(text or '').strip())
    match = re.match(r'^\[?([0-9A-Fa-f:.]+?)\]?(?::(\d+))?(?:/(\d+))?$', text)
    if not match:
        return None
    ip = normalize_ip(match.group(1))
    if ip is None:
        return None
    return (ip, int(match.group(2) or 0), int(match.group(3) or 0))


def driver_fences(entries, failed_node, nodes):
    """{node: [entry]}: the blocklist entries (ceph_blocklist_info) that the driver's own fencing on detach
    added at each failed node's addresses (entry_owner() 'ceph-csi'). node_failover records them with the
    node's bootID even when it fenced nothing itself (Kubernetes and ceph-csi got there first), so that
    node_recover can prove the reboot (I3) and lift them (I2)."""
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes)
    out = {}
    for node in failed_set(failed_node):
        own = set(((view.nodes.get(node) or {}).get('addresses')) or [])
        for entry in entries or []:
            if isinstance(entry, dict) and entry_owner(entry) == 'ceph-csi' and _whole_address(entry) in own:
                out.setdefault(node, []).append(entry.get('entry'))
    return out


# --------------------------------------------------------------------------- I2, I3: what a recovery lifts

# ceph-csi 3.15+ run with --enable-fencing blocklists a node's client address (recorded at NodeStage) on
# ControllerUnpublish while the node carries the out-of-service taint, for AutoBlocklistTime, three years
# (internal/util: a NetworkFence's entries last five years; ceph-csi itself tells its own entries apart by it).
CEPH_CSI_AUTO_FENCE_SECONDS = 94670856
_YEAR = 365 * 24 * 3600


def entry_owner(entry, marked=(), driver=()):
    """Who added a blocklist entry at a node's address, for the report (what may be lifted does not depend on
    it): 'failover' when the node's failover recorded it; 'ceph-csi' when the failover recorded it as the
    driver's (driver: the record's driver_fences), or for a whole-address entry (a one-host range, or every
    port and nonce) whose remaining time fits ceph-csi's fence on detach added within the last year; else
    'unrecorded'. marked: the failover record's addresses (_addr_key() tuples)."""
    if entry.get('entry') in driver:
        return 'ceph-csi'
    key = _addr_key(entry.get('address') or entry.get('entry'))
    if key is not None and key in marked:
        return 'failover'
    remaining = entry.get('expires_in')
    if _whole_address(entry) is not None and isinstance(remaining, int) and \
            CEPH_CSI_AUTO_FENCE_SECONDS - _YEAR < remaining <= CEPH_CSI_AUTO_FENCE_SECONDS:
        return 'ceph-csi'
    return 'unrecorded'


def _whole_address(entry):
    """The IP an entry cuts off whole (a one-host range, or every port and nonce of the address), else None."""
    if entry.get('kind') == 'range':
        net = normalize_network(entry.get('cidr') or entry.get('entry'))
        return net.network_address if net is not None and net.prefixlen == net.max_prefixlen else None
    key = _addr_key(entry.get('address') or entry.get('entry'))
    return key[0] if key is not None and key[1:] == (0, 0) else None


def recovery_plan(node, nodes, entries=None, fences=None, marker=None, leases=None, lease_fresh=60,
                  force=False, now=None):
    """What node_recover may lift for `node` (I2), once the node is proven restarted (I3).

    entries: ceph_blocklist_info `entries`; fences: networkfence_info `fences`; marker: read_marker().
    An entry or fence is lifted only when it covers no node other than `node` and it is `node`'s
    (an address of the node, or recorded by its failover); everything else that concerns the node is
    kept with the reason. Returns {refused, evidence, remove_addresses, remove_cidrs, unfence, kept, lifted}:
    lifted names each blocklist entry removed and who added it (entry_owner()), as kept does for those kept.
    """
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now)
    facts = view.nodes.get(node)
    evidence = dict(node=node, ready=(facts or {}).get('ready'), lease_age=(facts or {}).get('lease_age'),
                    boot_id=(facts or {}).get('boot_id'), fenced_boot_id=(marker or {}).get('boot_id'),
                    marker=marker is not None)
    refused = _recovery_refusal(node, facts, marker, lease_fresh)
    if refused and force:
        evidence['forced_past'] = refused
        refused = None
    own = set((facts or {}).get('addresses') or [])
    marked = set(k for k in (_addr_key(a) for a in (marker or {}).get('blocklist') or []) if k)
    marked_ips = set(k[0] for k in marked)
    marked_fences = set((marker or {}).get('networkfences') or [])
    driver = set((marker or {}).get('driver_fences') or [])
    out = dict(refused=refused, evidence=evidence, remove_addresses=[], remove_cidrs=[], unfence=[], kept=[],
               lifted=[])
    for entry in entries or []:
        decision = _entry_decision(view, node, own, marked, marked_ips, entry)
        if decision is None:
            continue
        kind, value, reason = decision
        if reason is not None:
            out['kept'].append(dict(entry=entry.get('entry') or value, reason=reason, invariant='I2',
                                    added_by=entry_owner(entry, marked, driver)))
            continue
        out['remove_addresses' if kind == 'address' else 'remove_cidrs'].append(value)
        out['lifted'].append(dict(entry=entry.get('entry') or value, node=node, added_by=entry_owner(entry, marked, driver)))
    for fence in fences or []:
        decision = _fence_decision(view, node, own, marked_fences, fence)
        if decision is None:
            continue
        if decision is True:
            out['unfence'].append(fence.get('name'))
        else:
            out['kept'].append(dict(networkfence=fence.get('name'), reason=decision, invariant='I2'))
    lifts = out['remove_addresses'] or out['remove_cidrs'] or out['unfence'] or out['kept']
    if refused and not lifts and not marker and facts is not None and facts['ready'] == 'True':
        # Nothing of the node's is fenced and no failover recorded one: there is nothing a missing
        # proof of restart could protect (a re-run after a finished recovery ends here).
        evidence['nothing_to_lift'] = refused
        out['refused'] = refused = None
    if refused:
        # kept, and said why: what would be lifted once the node is proven restarted
        reason = 'node %s is not proven restarted: %s' % (node, refused)
        out['kept'] = [dict(entry=v, reason=reason, invariant='I3') for v in out['remove_addresses'] + out['remove_cidrs']] \
            + [dict(networkfence=v, reason=reason, invariant='I3') for v in out['unfence']] + out['kept']
        out['remove_addresses'], out['remove_cidrs'], out['unfence'], out['lifted'] = [], [], [], []
    return out


def recovery_plans(names, nodes, entries=None, fences=None, markers=None, leases=None, lease_fresh=60,
                   force=False, now=None):
    """recovery_plan() for the nodes of one failover of several (a rack) at once: one plan. Each node
    proven restarted is recovered (I3); one that is not is held: its fences stay, each in `kept` with
    the reason, and it is in `held` ({node: why}). `refused` says why when no node can be recovered.
    What is lifted is the union of what each recovered node's own plan lifts, so an entry or fence is
    lifted only when it covers that one node (I2). markers: {node: read_marker()}. Returns
    recovery_plan()'s keys (evidence by node when several) and `recovered`, `held`, `held_reason` (one
    sentence for them, or None)."""
    names = failed_set(names)
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now)
    fences = list(dict((f.get('name'), f) for f in fences or [] if isinstance(f, dict)).values())
    plans = [(n, recovery_plan(n, view, entries, fences, (markers or {}).get(n), None, lease_fresh, force, now))
             for n in names]
    held = dict((n, p['refused']) for n, p in plans if p['refused'])
    recovered = [n for n, p in plans if not p['refused']]
    if len(plans) == 1:
        return dict(plans[0][1], recovered=recovered, held=held, held_reason=plans[0][1]['refused'])
    refused = None if recovered else '; '.join('%s: %s' % (n, p['refused']) for n, p in plans)
    out = dict(refused=refused, evidence=dict((n, p['evidence']) for n, p in plans), remove_addresses=[],
               remove_cidrs=[], unfence=[], kept=[], lifted=[], recovered=recovered, held=held,
               held_reason='; '.join('%s: %s' % (n, why) for n, why in sorted(held.items())) or None)
    for key in ('remove_addresses', 'remove_cidrs', 'unfence'):
        for _node, plan in plans:
            out[key].extend(v for v in plan[key] if v not in out[key])
    for _node, plan in plans:
        for item in plan['lifted']:
            if item['entry'] not in [i['entry'] for i in out['lifted']]:
                out['lifted'].append(item)
    lifted = set(out['remove_addresses'] + out['remove_cidrs'] + out['unfence'])
    for node, plan in plans:
        for item in plan['kept']:
            if (item.get('entry') or item.get('networkfence')) not in lifted:
                out['kept'].append(dict(item, node=node))
    return out


def node_states(nodes, names):
    """What node_recover has to undo on each named node: out-of-service taint, cordon, failover marker."""
    by_name = dict((_name(n), n) for n in nodes or [] if isinstance(n, dict))
    out = dict(tainted=[], cordoned=[], marked=[])
    for name in failed_set(names):
        node = by_name.get(name) or {}
        spec = node.get('spec') or {}
        if any((t or {}).get('key') == 'node.kubernetes.io/out-of-service' for t in spec.get('taints') or []):
            out['tainted'].append(name)
        if spec.get('unschedulable'):
            out['cordoned'].append(name)
        annotations = (node.get('metadata') or {}).get('annotations') or {}
        if MARKER_ANNOTATION in annotations or STARTED_ANNOTATION in annotations:
            out['marked'].append(name)
    return out


def _recovery_refusal(node, facts, marker, lease_fresh):
    if facts is None:
        return 'node %s does not exist' % node
    if facts['ready'] != 'True':
        return 'node %s is not Ready' % node
    age = facts['lease_age']
    if age is None or age > int(lease_fresh):
        return ('node %s has not renewed its Lease within %d s (%s)'
                % (node, int(lease_fresh), 'no Lease' if age is None else 'last %d s ago' % age))
    if not marker or not marker.get('boot_id'):
        return ('no record of the bootID node %s had when it was fenced (no %s annotation and no failover '
                'report): cannot prove it restarted since (I3)' % (node, MARKER_ANNOTATION))
    if not facts['boot_id']:
        return 'node %s reports no bootID: cannot prove it restarted since it was fenced (I3)' % node
    if facts['boot_id'] == marker['boot_id']:
        return ('node %s has not rebooted since it was fenced (bootID %s unchanged): its old clients may still '
                'run, and lifting the fence lets them write again (I3)' % (node, facts['boot_id']))
    return None


def _entry_decision(view, node, own, marked, marked_ips, entry):
    """None when the entry does not concern `node`, else (kind, value, reason or None to remove)."""
    if entry.get('kind') == 'range' or entry.get('cidr'):
        net = normalize_network(entry.get('cidr') or entry.get('entry'))
        if net is None or not (any(network_contains(net, ip) for ip in own)
                               or any(network_contains(net, ip) for ip in marked_ips)):
            return None
        value = entry.get('cidr') or str(net)
        others = view.nodes_in(net, exclude=node)
        if others:
            return ('range', value, 'range %s also covers node(s) %s, not proven recovered' % (value, ', '.join(others)))
        if net.prefixlen == net.max_prefixlen:
            return ('range', value, None)
        return ('range', value, 'range %s covers %d addresses that no node lists (other clients may be fenced by it); '
                'lift it by hand once nothing else needs it' % (value, net.num_addresses))
    key = _addr_key(entry.get('address') or entry.get('entry'))
    if key is None:
        return None
    ip = key[0]
    if ip not in own and key not in marked and not (key[1:] == (0, 0) and ip in marked_ips):
        return None
    value = entry.get('address') or entry.get('entry')
    others = [n for n in view.owners_of(ip) if n != node]
    if others:
        return ('address', value, '%s is also an address of node(s) %s, not proven recovered' % (value, ', '.join(others)))
    if ip in own or key in marked:
        return ('address', value, None)
    return ('address', value, '%s is no node\'s address and not recorded by the failover of %s' % (value, node))


def _fence_decision(view, node, own, marked_fences, fence):
    """None when the fence does not concern `node`, True to unfence it, else why it is kept."""
    cidrs = [normalize_network(c) for c in fence.get('cidrs') or []]
    name = fence.get('name')
    covers = any(network_contains(net, ip) for net in cidrs for ip in own)
    if not covers and name not in marked_fences:
        return None
    if fence.get('fence_state') != 'Fenced':
        return None
    others = sorted(set(n for net in cidrs for n in view.nodes_in(net, exclude=node)))
    if others:
        return 'NetworkFence %s also covers node(s) %s, not proven recovered' % (name, ', '.join(others))
    if name in marked_fences:
        return True
    if all(net is not None and net.prefixlen == net.max_prefixlen and net.network_address in own for net in cidrs):
        return True
    return ('NetworkFence %s covers addresses no node lists (%s); it was not set by the failover of %s'
            % (name, ', '.join(str(c) for c in fence.get('cidrs') or []), node))


# --------------------------------------------------------------------------- I4: which locks may be broken

IN_TREE_LOCK_PREFIX = 'kubelet_lock_magic_'


def lock_plan(locks, pod_node, nodes, leases=None, lease_grace=120, force=False, now=None):
    """Which RBD advisory locks on a stuck pod's images may be broken (I4).

    locks: rbd_lock_info `locks`, each with `image` added. pod_node: the stuck pod's node (its own locks
    are never broken). The holder is tied to a node by the lock's address (any node address type,
    normalised) and by an in-tree lock id kubelet_lock_magic_<node>; both must agree on one node.
    A lock is broken only when that node exists and is provably down (not Ready, Lease older than
    lease_grace); force lets through holders that are alive or cannot be tied to a node, never a
    lock of the pod's own node or one whose image its Ready holder lists in volumesInUse.
    Returns {break: [lock], kept: [lock + reason, invariant]}.
    """
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now)
    out = dict((key, []) for key in ('break', 'kept'))
    for lock in locks or []:
        hard, soft = _lock_refusal(view, lock, pod_node, lease_grace)
        reason = hard or (None if force else soft)
        if reason is None:
            entry = dict(lock)
            if soft:
                entry['forced_past'] = soft
            out['break'].append(entry)
        else:
            out['kept'].append(dict(lock, reason=reason, invariant='I4'))
    return out


def image_in_use(view, node, image, unique_names=None):
    """Whether the node's status.volumesInUse lists the RBD image `pool[/ns]/image` (in-tree rbd:
    kubernetes.io/rbd/<pool>:<image> or the older <pool>-image-<image>) or one of unique_names
    (kubernetes.io/csi/<driver>^<volumeHandle> of a CSI volume)."""
    listed = set((view.nodes.get(node) or {}).get('volumes_in_use') or [])
    if listed & set(unique_names or []):
        return True
    if not image:
        return False
    return any(names_rbd_image(v, image.split('/')[-1]) for v in listed)


def _lock_refusal(view, lock, pod_node, lease_grace):
    """(reason force cannot override, reason force can override); (None, None) to break."""
    lock_id = str(lock.get('id') or '')
    named = lock_id[len(IN_TREE_LOCK_PREFIX):] if lock_id.startswith(IN_TREE_LOCK_PREFIX) else None
    owners = view.owners_of(lock.get('address') or lock.get('ip'))
    candidates = sorted(set(owners) | (set([named]) if named else set()))
    if pod_node in candidates:
        return 'held by the stuck pod\'s own node %s' % pod_node, None
    image = lock.get('image')
    using = [n for n in candidates if view.ready(n) and image_in_use(view, n, image, lock.get('unique_names'))]
    if using:
        return 'held by Ready node %s, which lists %s among its volumes in use' % (', '.join(using), image), None
    if len(owners) > 1:
        return None, ('held from %s, an address nodes %s share: the holder cannot be tied to one node'
                      % (lock.get('address'), ', '.join(owners)))
    if named and owners and owners[0] != named:
        return None, ('named for node %s but held from %s, an address of node %s: the holder cannot be tied to one '
                      'node' % (named, lock.get('address'), owners[0]))
    holder = named or (owners[0] if owners else None)
    if not owners and view.addressless_ready():
        return None, ('held from %s, which no node lists, while Ready node(s) %s list no address: it may be theirs'
                      % (lock.get('address'), ', '.join(view.addressless_ready())))
    if holder is None:
        return None, 'held from %s, which is no node\'s address: the holder cannot be tied to a node' % lock.get('address')
    if holder not in view.nodes:
        return None, 'named for node %s, which does not exist: its client cannot be proven gone' % holder
    alive = view.alive_reason(holder, lease_grace)
    if alive:
        return None, alive
    return None, None


# --------------------------------------------------------------------------- I6: what a failover releases

# Pod volumes that are not claims and may hold a node-attached volume (or a Ceph client): listed
# among the failed node's volumes; a pod using one is force-deleted only when that volume is safe.
INLINE_VOLUME_KINDS = ('csi', 'rbd', 'cephfs', 'iscsi', 'nfs', 'fc', 'flexVolume', 'glusterfs', 'cinder',
                       'awsElasticBlockStore', 'gcePersistentDisk', 'azureDisk', 'azureFile', 'vsphereVolume',
                       'portworxVolume', 'photonPersistentDisk', 'quobyte', 'scaleIO', 'storageos', 'flocker')
# In-tree sources a PersistentVolume can have besides those (its data lives on the node itself).
NODE_LOCAL_SOURCES = ('hostPath', 'local')
# out_of_service_taint=auto: release_plan decides the taint (out_of_service_decision).
AUTO = 'auto'
OUT_OF_SERVICE_HINT = ('the out-of-service taint (power %s off, then re-run with -e out_of_service_taint=true) '
                       'would let Kubernetes %s')

# Where a volume of the failed node was found (failover_volumes' `source`).
SOURCE_PV = 'pv'                    # a PersistentVolume, through a claim or a VolumeAttachment
SOURCE_PV_MISSING = 'pv-missing'    # a claim or VolumeAttachment names a PersistentVolume that does not exist
SOURCE_CLAIM = 'claim-unbound'      # a pod's claim that is missing or bound to no PersistentVolume
SOURCE_POD_INLINE = 'pod-inline'    # a volume written in the pod spec
SOURCE_VA_INLINE = 'attachment-inline'  # a VolumeAttachment of an inline (migrated) volume spec


def volume_source(spec):
    """(kind, image, driver, label) of a PersistentVolume spec or a pod volume: kind rbd-csi,
    rbd-intree, csi or other (pv_rbd_image), image "pool[/namespace]/image" of an RBD volume else
    None, driver the CSI driver or the in-tree plugin's source name, label in the user's words.
    Never raises on a partial spec."""
    spec = spec if isinstance(spec, dict) else {}
    try:
        kind, image = pv_rbd_image({'spec': spec})
    except (AttributeError, KeyError, TypeError):
        kind, image = 'other', None
    csi = spec.get('csi')
    if isinstance(csi, dict) and csi:
        driver = csi.get('driver') or None
        if image:
            return kind, image, driver, 'ceph-csi RBD image %s' % image
        return 'csi', None, driver, 'CSI driver %s' % (driver or '(unnamed)')
    if image:
        return kind, image, 'kubernetes.io/rbd', 'in-tree RBD image %s' % image
    for key in ('rbd',) + INLINE_VOLUME_KINDS + NODE_LOCAL_SOURCES:
        if key != 'csi' and spec.get(key) is not None:
            return 'other', None, key, 'in-tree %s' % key
    return 'other', None, None, 'an unknown volume source'


def _volume_name(volume):
    """How the report names one volume: its PV, its claim, its inline volume or its attachment."""
    if volume.get('pv_name') or volume.get('pv'):
        return volume.get('pv_name') or volume.get('pv')
    if volume.get('inline') and volume.get('pods'):
        return '%s (volume %s)' % (volume['pods'][0], volume['inline'])
    if volume.get('claims'):
        return volume['claims'][0]
    return 'VolumeAttachment %s' % ', '.join(volume.get('attachments') or ['?'])


def release_plan(failed_node, volumes, pods, fence_method='blocklist', images=None, missing=None, fence=None,
                 watchers_after=None, fenced_cidrs=None, networkfence_ok=False, out_of_service_taint=AUTO,
                 waiting=None):
    """Which of the failed node's pods may be force-deleted and attachments removed (I6).

    volumes: [{pv, driver, kind, image, attachments: [VolumeAttachment names], claims: [ns/name]}] of the
    failed node (failover_volumes()). images, missing: rbd_watchers_info `images` and `missing` read before
    the fence; fence: fence_plan(); watchers_after: rbd_watchers_info `images` read after the fence (None
    in check mode: the plan's prediction is used). fenced_cidrs / networkfence_ok: the node's
    NetworkFence and whether the controller reported it Fenced.
    failed_node may be a list of failed nodes (one release step across them).
    Every volume gets `safe`, `rbd`, `action` (released, kept attached, left alone), `how` (how it
    was made safe, or why it was left alone) and `line` (all of it in one sentence for the report);
    a pod of a failed node is force-deleted only when all its claims' and inline volumes are safe,
    whether or not Kubernetes evicted it yet (the node is provably down: the preflight, I1); a
    DaemonSet's pod and a static pod's mirror are left (their controller puts them back on the node).
    An attachment is removed only when its volume is safe. A volume of another driver is released
    only under the out-of-service taint.
    out_of_service_taint: True (the operator declared the nodes shut down), False, or AUTO: the taint
    is decided here (`out_of_service`, out_of_service_decision()).
    waiting: the RBD volumes of pods that have not started elsewhere ({pod, claim, image}, failed_nodes
    `waiting`): when Kubernetes or someone removed the nodes' pods and attachments first, these are
    what the nodes still hold. One whose image a failed node's client watched (fenced, or ceph-csi
    recorded the node) is waited for; one whose failed node's watcher was not made safe is in
    `waiting_unsafe`, and the run fails (`waiting`, waiting_verdicts()).
    kept_unsafe: a line for each RBD volume not made safe of a pod kept on a failed node (evicted or not):
    nothing replaces that pod, and the run fails naming it. Volumes of other drivers are reported, not failed.
    """
    requested = out_of_service_taint
    taint = requested is True
    before = dict((i.get('spec'), i) for i in images or [] if isinstance(i, dict) and i.get('spec'))
    missing = set(m.get('spec') for m in missing or [] if isinstance(m, dict))
    after = None if watchers_after is None else dict((i.get('spec'), i) for i in watchers_after or []
                                                     if isinstance(i, dict))
    fence = fence or {}
    fenced = set(fence.get('fence') or [])
    kept_by_image = {}
    for item in fence.get('kept') or []:
        kept_by_image.setdefault(item.get('image'), []).append(item)
    nets = [normalize_network(c) for c in fenced_cidrs or []]
    failed = failed_set(failed_node)
    verdicts = []
    for volume in volumes or []:
        if not isinstance(volume, dict):
            continue
        safe, how = _volume_safety(volume, fence_method, before, missing, after, fenced, kept_by_image, nets,
                                   networkfence_ok, taint, _display(volume.get('nodes') or failed),
                                   fence.get('refused'))
        rbd = bool(volume.get('image'))
        if safe:
            action = 'released' if rbd else 'released under the out-of-service taint'
        else:
            action = 'kept attached' if volume.get('attachments') else 'left alone'
        verdict = dict(volume, name=_volume_name(volume), safe=safe, rbd=rbd, action=action, how=how, invariant='I6')
        verdict['line'] = '%s (%s): %s: %s' % (verdict['name'], volume.get('volume') or _label(volume), action, how)
        verdicts.append(verdict)
    safe_claims = set(c for v in verdicts if v['safe'] for c in v.get('claims') or [])
    unsafe_claims = set(c for v in verdicts if not v['safe'] for c in v.get('claims') or [])
    safe_inline = set((p, v.get('inline')) for v in verdicts if v['safe'] and v.get('source') == SOURCE_POD_INLINE
                      for p in v.get('pods') or [])
    delete, kept_pods, kept_unsafe = [], [], []
    for pod in pods or []:
        if not isinstance(pod, dict):
            continue
        meta = pod.get('metadata') or {}
        if (pod.get('spec') or {}).get('nodeName') not in failed:
            continue
        ref = '%s/%s' % (meta.get('namespace'), meta.get('name'))
        put_back = _put_back_on_node(pod)
        if put_back:
            kept_pods.append(dict(pod=ref, reason=put_back, invariant='I6'))
            continue
        claims = ['%s/%s' % (meta.get('namespace'), c) for c in _claims_of(pod)]
        inline = [v.get('name') for v in (pod.get('spec') or {}).get('volumes') or []
                  if isinstance(v, dict) and any(k in v for k in INLINE_VOLUME_KINDS)
                  and (ref, v.get('name')) not in safe_inline]
        bad = [c for c in claims if c in unsafe_claims or c not in safe_claims]
        if inline:
            kept_pods.append(dict(pod=ref, reason='inline volume(s) %s cannot be proven fenced' % ', '.join(
                str(n) for n in inline), invariant='I6'))
        elif bad:
            kept_pods.append(dict(pod=ref, reason='claim(s) %s not made safe' % ', '.join(sorted(bad)), invariant='I6'))
            # an RBD volume this failover could not make safe: the pod stays on the dead node, whether or not
            # Kubernetes evicted it yet, and nothing replaces it; the run fails naming it
            kept_unsafe.extend('pod %s stays on %s: %s (claim %s): NOT made safe, %s'
                               % (ref, (pod.get('spec') or {}).get('nodeName'), v['image'], claim, v['how'])
                               for claim in sorted(bad) for v in verdicts
                               if v['rbd'] and not v['safe'] and claim in (v.get('claims') or []))
        else:
            how = 'all its volumes are made safe' if claims else 'it uses no persistent volume'
            if not meta.get('deletionTimestamp'):
                how += ' (not evicted yet: its node is provably down, I1)'
            delete.append(dict(namespace=meta.get('namespace'), name=meta.get('name'), uid=meta.get('uid'),
                               node=(pod.get('spec') or {}).get('nodeName'), how=how))
    remove = sorted(set(a for v in verdicts if v['safe'] for a in v.get('attachments') or []))
    kept_vas = sorted(set(a for v in verdicts if not v['safe'] for a in v.get('attachments') or []))
    # The claims whose replacement pod the playbook waits for: those of controller-owned pods of the
    # node whose volumes were released.
    owned = set('%s/%s' % ((p.get('metadata') or {}).get('namespace'), c) for p in pods or []
                if isinstance(p, dict) and (p.get('metadata') or {}).get('ownerReferences') for c in _claims_of(p))
    held = waiting_verdicts(waiting, failed, before, after, fence, kept_by_image, nets if fence_method == 'networkfence'
                            else None, networkfence_ok)
    wait_claims = sorted(set(c for c in owned if c in safe_claims and c not in unsafe_claims)
                         | set(v['claim'] for v in held if v['safe']))
    others = [dict(name=v['name'], volume=v.get('volume') or _label(v), driver=v.get('driver'),
                   action=v['action'], how=v['how'], attachments=v.get('attachments') or [],
                   claims=v.get('claims') or [])
              for v in verdicts if not v['rbd']]
    # what volfence.csi.pod_force_delete takes: the uid makes the API refuse a same-name replacement
    refs = [dict(namespace=p['namespace'], name=p['name'], uid=p['uid']) if p.get('uid') else
            dict(namespace=p['namespace'], name=p['name']) for p in delete]
    return dict(volumes=verdicts, delete_pods=delete, delete_pod_refs=refs, kept_pods=kept_pods, remove_attachments=remove,
                kept_attachments=kept_vas, wait_claims=wait_claims, not_rbd=others, waiting=held,
                waiting_unsafe=[v['line'] for v in held if not v['safe']], kept_unsafe=kept_unsafe,
                out_of_service=out_of_service_decision(requested=requested, failed_nodes=failed, verdicts=verdicts))


def waiting_verdicts(waiting, failed, before, after, fence, kept_by_image, nets=None, networkfence_ok=False):
    """The pods waiting elsewhere on an image a failed node's client held (see release_plan): each
    with `safe` (its failed nodes' watchers fenced and gone) and `line`. A waiting pod whose image
    no failed node's client held is not this failover's and is left out."""
    out = []
    for item in waiting or []:
        if not isinstance(item, dict) or not item.get('image'):
            continue
        image = item['image']
        read = before.get(image)
        if read is None:
            continue  # not read on Ceph (gone): nothing of the failed nodes holds it
        recorded = sorted(set(c.get('node') for c in read.get('csi_client_addresses') or [] if c.get('node') in failed))
        if nets is not None:
            fenced_here = [w.get('address') for w in read.get('watchers') or []
                           if any(network_contains(n, normalize_ip(w.get('address'))) for n in nets)]
        else:
            fenced_here = list((fence.get('by_image') or {}).get(image) or [])
        if not fenced_here and not recorded:
            continue
        # ceph-csi on the waiting pod's own node opens the image to check it: that client is expected;
        # any other kept client (one no failed node can be proven to own, or another node's) keeps the pod waiting
        kept = [k for k in kept_by_image.get(image) or [] if k.get('other_node') != item.get('node')]
        still = [w.get('address') for w in ((after or {}).get(image) or {}).get('watchers') or []
                 if w.get('address') in fenced_here]
        what = 'pod %s waits on %s (claim %s)' % (item.get('pod'), image, item.get('claim'))
        if fence.get('refused'):
            safe, how = False, 'nothing was fenced: %s' % fence['refused']
        elif kept:
            reasons = '; '.join('%s (%s)' % (k['address'], k['reason']) for k in kept)
            safe, how = False, 'watcher(s) not fenced: %s' % reasons
        elif nets is not None and not networkfence_ok:
            safe, how = False, 'the NetworkFence was not reported Fenced'
        elif still:
            safe, how = False, 'fenced watcher(s) %s are still there' % ', '.join(still)
        else:
            safe, how = True, ('fenced: %s' % ', '.join(fenced_here) if fenced_here
                               else 'ceph-csi recorded %s there; no client of it holds the image now' % ', '.join(recorded))
        out.append(dict(item, safe=safe, how=how, invariant='I6',
                        line='%s: %s' % (what, how if safe else 'NOT made safe, ' + how)))
    return out


def out_of_service_decision(requested, failed_nodes, verdicts):
    """Whether node_failover taints the failed nodes node.kubernetes.io/out-of-service (docs/safety.md I6).

    The taint makes Kubernetes detach every volume of the node at once (the attach/detach controller
    skips maxWaitForUnmountDuration) and remove its Terminating pods (pod GC): the fastest release on a
    real cluster, and safe only for volumes no client of the node can still write. So, unless the
    operator said (requested True: the nodes are declared shut down; False: never), the taint is
    right exactly when every volume of the nodes was made safe (verdicts of release_plan, computed
    without the taint): an RBD volume fenced, no volume of another driver (volfence.csi cannot fence
    it), no volume that could not be named. Returns taint, requested, reason, invariant."""
    nodes = _display(failed_nodes)
    if requested is True:
        return dict(taint=True, requested=True, invariant='I6',
                    reason='asked (out_of_service_taint=true): %s declared shut down' % nodes)
    if requested is False:
        return dict(taint=False, requested=False, invariant='I6',
                    reason='not asked (out_of_service_taint=false): only what volfence.csi released is released')
    unsafe = [v for v in verdicts if not v.get('safe')]
    if unsafe:
        return dict(taint=False, requested=AUTO, invariant='I6', reason=(
            'not every volume of %s was made safe (%s): under the taint Kubernetes would detach it' % (
                nodes, ', '.join(v.get('name') or '?' for v in unsafe))))
    return dict(taint=True, requested=AUTO, invariant='I6', reason=(
        'every volume of %s was made safe (%d): Kubernetes may detach them at once and remove the '
        "node's remaining pods (non-graceful node shutdown)" % (nodes, len(verdicts))))


def _put_back_on_node(pod):
    """Why force-deleting the pod of a failed node releases nothing, or None: a DaemonSet makes its
    pod again on the same node, and a static pod's mirror belongs to the node's kubelet."""
    meta = pod.get('metadata') or {}
    if 'kubernetes.io/config.mirror' in (meta.get('annotations') or {}):
        return "a static pod's mirror: its node's kubelet owns it"
    if (controller_of(pod) or {}).get('kind') == 'DaemonSet':
        return "a DaemonSet's pod: its controller puts it back on the same node"
    return None


def _claims_of(pod):
    try:
        return pod_claims(pod)
    except (AttributeError, KeyError, TypeError):
        return [((v or {}).get('persistentVolumeClaim') or {}).get('claimName')
                for v in (pod.get('spec') or {}).get('volumes') or [] if isinstance(v, dict)
                and ((v.get('persistentVolumeClaim') or {}).get('claimName'))]


def _label(volume):
    if volume.get('image'):
        return 'RBD image %s' % volume['image']
    return 'driver %s' % (volume.get('driver') or volume.get('kind') or 'unknown')


def _volume_safety(volume, fence_method, before, missing, after, fenced, kept_by_image, nets, networkfence_ok,
                   taint, failed_node, fence_refused=None):
    image = volume.get('image')
    source = volume.get('source')
    inline = source in (SOURCE_POD_INLINE, SOURCE_VA_INLINE)
    if volume.get('pv') is None and not inline:
        attached = volume.get('attachments') or []
        left = ('; volfence.csi leaves %s alone (remove it once you know nothing writes to the volume)'
                % ', '.join(attached)) if attached else ''
        if source == SOURCE_CLAIM:
            return False, ('claim %s is not bound to a PersistentVolume: the volume cannot be named, so it cannot '
                           'be proven fenced' % ', '.join(volume.get('claims') or ['?']))
        return False, ('its PersistentVolume %s was not found: the volume cannot be named, so it cannot be proven '
                       'fenced%s' % (volume.get('pv_name') or '', left))
    if not image:
        return _other_driver_safety(volume, failed_node, taint)
    if fence_refused:
        return False, 'nothing was fenced: %s' % fence_refused
    if image in missing or image not in before:
        return False, 'image %s was not found on Ceph: cannot prove no client of %s writes to it' % (image, failed_node)
    foreign = set(k['address'] for k in kept_by_image.get(image) or [] if k.get('other_node'))
    kept = [k for k in kept_by_image.get(image) or [] if not k.get('other_node')]
    if kept:
        reasons = '; '.join('%s (%s)' % (k['address'], k['reason']) for k in kept)
        return False, 'watcher(s) kept on %s: %s' % (image, reasons)
    watchers = [w.get('address') for w in (before[image].get('watchers') or []) if w.get('address') not in foreign]
    if fence_method == 'networkfence':
        if not networkfence_ok:
            return False, 'the NetworkFence of %s was not reported Fenced' % failed_node
        outside = [a for a in watchers if not any(network_contains(n, normalize_ip(a)) for n in nets)]
        if outside:
            return False, ('watcher(s) %s of %s are outside the NetworkFence CIDRs %s'
                           % (', '.join(outside), image, ', '.join(str(n) for n in nets)))
    elif [a for a in watchers if a not in fenced]:
        return False, 'watcher(s) %s of %s were not fenced' % (', '.join(a for a in watchers if a not in fenced), image)
    if after is not None:
        still = [w.get('address') for w in ((after.get(image) or {}).get('watchers') or [])
                 if w.get('address') in watchers]
        if still:
            return False, 'fenced watcher(s) %s of %s are still there' % (', '.join(still), image)
    if not watchers:
        return True, 'no client holds %s' % image
    return True, 'fenced (%s): %s' % (fence_method, ', '.join(watchers))


def _other_driver_safety(volume, failed_node, taint):
    """I6 for a volume that is not RBD: volfence.csi has no fence for it, so it is released only
    when the operator declared the node shut down (out-of-service taint)."""
    what = volume.get('volume') or _label(volume)
    attached = volume.get('attachments') or []
    if taint:
        return True, ('not an RBD volume (%s): released under the out-of-service taint (non-graceful node shutdown: '
                      'you declared %s shut down, so Kubernetes detaches it)' % (what, failed_node))
    local = ('its data is on %s\'s own disk; ' % failed_node) if volume.get('driver') in NODE_LOCAL_SOURCES else ''
    if attached:
        return False, ('not an RBD volume (%s): %svolfence.csi cannot fence it, its driver must detach it '
                       '(VolumeAttachment %s left untouched); %s' % (
                           what, local, ', '.join(attached), OUT_OF_SERVICE_HINT % (failed_node, 'detach it')))
    return False, ('not an RBD volume (%s), with no VolumeAttachment: %svolfence.csi cannot fence it and does not '
                   'force-delete the pods using it; %s' % (
                       what, local, OUT_OF_SERVICE_HINT % (failed_node, 'delete those pods')))


# --------------------------------------------------------------------------- what the failover reads

def failover_preflight(failed_node, nodes, leases=None, lease_grace=120, force=False, now=None):
    """node_failover's preflight: every failed node exists and is provably down (not Ready; Lease
    older than lease_grace unless force). failed_node: a name, or a list (a rack): one live or
    unknown node refuses the whole run. Returns what the playbook needs, with `refused` (None or
    why), `nodes` (per failed node: ready, lease_age, boot_id, addresses) and `lines` (one sentence
    per failed node for the report)."""
    view = ClusterView(nodes, leases, now)
    failed = failed_set(failed_node)
    problems, per_node = [], {}
    for name in failed:
        facts = view.nodes.get(name)
        reason = view.alive_reason(name, lease_grace, allow_fresh_lease=bool(force))
        if facts is None:
            problems.append('node %s not found (nodes: %s)' % (name, ', '.join(sorted(view.nodes)) or 'none'))
        elif reason:
            problems.append('refusing to fence %s: %s. Fencing a live node cuts its storage.%s' % (
                name, reason.replace('node %s ' % name, 'it ', 1),
                '' if facts['ready'] == 'True' else ' Check it, then re-run with -e force=true if it is really dead.'))
        per_node[name] = dict(exists=facts is not None, ready=(facts or {}).get('ready'),
                              lease_age=(facts or {}).get('lease_age'), boot_id=(facts or {}).get('boot_id'),
                              addresses=[str(ip) for ip in (facts or {}).get('addresses') or []])
    if not failed:
        problems.append('no failed node given')
    lines = ['node %s: Ready=%s, Lease age %s s' % (n, f['ready'], f['lease_age']) for n, f in sorted(per_node.items())]
    first = per_node.get(failed[0], {}) if len(failed) == 1 else {}
    return dict(refused='; '.join(problems) or None, exists=all(f['exists'] for f in per_node.values()),
                failed_nodes=list(failed), nodes=per_node, lines=lines,
                ready=first.get('ready'), lease_age=first.get('lease_age'), boot_id=first.get('boot_id'),
                addresses=sorted(set(a for f in per_node.values() for a in f['addresses'])),
                ready_nodes=sorted(n for n in view.nodes if view.ready(n) and n not in failed),
                ready_addresses=sorted(set(str(ip) for n in view.nodes.values() if n['ready'] == 'True'
                                           for ip in n['addresses'])),
                shared_addresses=dict((str(ip), names) for ip, names in view.owners.items() if len(names) > 1),
                addressless_ready=view.addressless_ready())


def failover_volumes(failed_node, pods, pvcs, pvs, attachments):
    """Every volume the failed node has, whatever the driver: the PVs of its VolumeAttachments and
    of its pods' claims, its pods' inline volumes, attachments of inline specs or of PVs that do
    not exist, claims bound to nothing. attachments: VolumeAttachment objects or
    volumeattachment_info results. Returns [{pv, pv_name, driver, kind, image, rbd, volume, source,
    attachments, claims, pods, inline}], pv None when the PV was not found (or there is none).
    Never raises on partial objects: a volume it cannot read is listed, not dropped.
    failed_node may be a list of failed nodes: their volumes, each with the `nodes` it is on."""
    failed = failed_set(failed_node)
    by_pv = dict((_name(pv), pv) for pv in pvs or [] if isinstance(pv, dict) and _name(pv))
    by_claim = dict(('%s/%s' % ((c.get('metadata') or {}).get('namespace'), _name(c)), c)
                    for c in pvcs or [] if isinstance(c, dict))
    volumes = {}

    def entry(key, **fields):
        if key not in volumes:
            volumes[key] = dict(dict(pv=None, pv_name=None, driver=None, kind=None, image=None, rbd=False,
                                     volume=None, source=None, attachments=[], claims=[], pods=[], inline=None,
                                     nodes=[]),
                                **fields)
        return volumes[key]

    def pv_entry(pv_name):
        pv = by_pv.get(pv_name)
        if pv is None:
            return entry('pv:' + pv_name, pv_name=pv_name, source=SOURCE_PV_MISSING,
                         volume='PersistentVolume %s, which does not exist' % pv_name)
        kind, image, driver, label = volume_source(pv.get('spec'))
        return entry('pv:' + pv_name, pv=pv_name, pv_name=pv_name, driver=driver, kind=kind, image=image,
                     rbd=image is not None, volume=label, source=SOURCE_PV)

    def add(values, item):
        if item and item not in values:
            values.append(item)

    for va in attachments or []:
        if not isinstance(va, dict):
            continue
        spec = va.get('spec') or {}
        node = spec.get('nodeName', va.get('node'))
        if node not in failed:
            continue
        name = _name(va) or va.get('name')
        source = spec.get('source') or {}
        pv_name = source.get('persistentVolumeName') or va.get('persistent_volume') or va.get('pv')
        if pv_name:
            volume = pv_entry(pv_name)
        else:
            kind, image, driver, label = volume_source(source.get('inlineVolumeSpec'))
            driver = driver or spec.get('attacher') or va.get('attacher')
            volume = entry('va:%s' % name, driver=driver, kind=kind, image=image, rbd=image is not None,
                           volume='inline volume of a VolumeAttachment, %s' % (
                               label if source.get('inlineVolumeSpec') else 'attacher %s' % driver),
                           source=SOURCE_VA_INLINE)
        add(volume['attachments'], name)
        add(volume['nodes'], node)
    for pod in pods or []:
        node = (pod.get('spec') or {}).get('nodeName') if isinstance(pod, dict) else None
        if node not in failed:
            continue
        meta = pod.get('metadata') or {}
        ref = '%s/%s' % (meta.get('namespace'), meta.get('name'))
        for claim in _claims_of(pod):
            claim_ref = '%s/%s' % (meta.get('namespace'), claim)
            pv_name = ((by_claim.get(claim_ref) or {}).get('spec') or {}).get('volumeName')
            if pv_name:
                volume = pv_entry(pv_name)
            else:
                volume = entry('claim:' + claim_ref, source=SOURCE_CLAIM, volume='claim %s, %s' % (
                    claim_ref, 'bound to no PersistentVolume' if claim_ref in by_claim else 'which does not exist'))
            add(volume['claims'], claim_ref)
            add(volume['pods'], ref)
            add(volume['nodes'], node)
        for spec_volume in (pod.get('spec') or {}).get('volumes') or []:
            if not isinstance(spec_volume, dict) or not any(k in spec_volume for k in INLINE_VOLUME_KINDS):
                continue
            kind, image, driver, label = volume_source(spec_volume)
            volume = entry('inline:%s/%s' % (ref, spec_volume.get('name')), driver=driver, kind=kind, image=image,
                           rbd=image is not None, volume='inline %s in pod %s' % (label, ref),
                           source=SOURCE_POD_INLINE, inline=spec_volume.get('name'))
            add(volume['pods'], ref)
            add(volume['nodes'], node)
    for volume in volumes.values():  # the same answer whatever order the API listed the objects in
        for key in ('attachments', 'claims', 'pods', 'nodes'):
            volume[key].sort()
    return [volumes[k] for k in sorted(volumes)]


# --------------------------------------------------------------------------- a node's volumes, for diagnose and node_recover

CLEANUP = 'the volfence.csi.volumeattachment_cleanup playbook'


def node_volumes(node, volumes, context='recover'):
    """What volfence.csi does (diagnose: would do in node_failover) or did (recover: node_recover
    after a failover) for each volume of `node` (failover_volumes()), in the user's words: one
    dict per volume with name, volume, driver, rbd, attachments, claims, pods, note and line."""
    out = []
    for volume in volumes or []:
        if not isinstance(volume, dict):
            continue
        name = _volume_name(volume)
        what = volume.get('volume') or _label(volume)
        attached = volume.get('attachments') or []
        known = volume.get('pv') is not None or volume.get('source') in (SOURCE_POD_INLINE, SOURCE_VA_INLINE)
        rbd = bool(volume.get('image'))
        if not known:
            note = '%s: volfence.csi cannot name the volume, so it never fences or releases it' % what
            if attached:
                note += '; it leaves %s alone (%s removes it once stale)' % (', '.join(attached), CLEANUP)
        elif rbd and context == 'diagnose':
            note = 'RBD: node_failover -e failed_node=%s fences %s\'s clients of it, then releases it' % (node, node)
        elif rbd:
            note = ('RBD: node_failover fenced %s\'s clients of it; what is lifted and what stays is listed with the '
                    'blocklist entries and fences' % node)
        elif context == 'diagnose':
            note = 'not an RBD volume: node_failover cannot fence it and %s; %s' % (
                'leaves it attached (its driver must detach it)' if attached else
                'does not force-delete the pods using it',
                OUT_OF_SERVICE_HINT % (node, 'detach it' if attached else 'delete those pods'))
        elif attached:
            note = ('not an RBD volume: volfence.csi neither fenced nor detached it; %s still attached to %s: now '
                    'that %s is back, its driver detaches it once no pod there uses it (if it stays, %s removes it '
                    'once stale)' % (', '.join(attached), node, node, CLEANUP))
        else:
            note = 'not an RBD volume, not attached: volfence.csi did nothing for it and has nothing to lift'
        out.append(dict(name=name, volume=what, driver=volume.get('driver'), rbd=rbd, attachments=attached,
                        claims=volume.get('claims') or [], pods=volume.get('pods') or [], note=note,
                        line='%s (%s): %s' % (name, what, note)))
    return out


def down_node_volumes(nodes, pods, pvcs, pvs, attachments):
    """For each node that is not Ready: its volumes (failover_volumes()) and what node_failover
    would do for each (node_volumes(context='diagnose')). Nodes without volumes are left out."""
    out = []
    for node in nodes or []:
        name = _name(node) if isinstance(node, dict) else None
        if not name or node_ready(node) == 'True':
            continue
        volumes = failover_volumes(name, pods, pvcs, pvs, attachments)
        if volumes:
            out.append(dict(node=name, ready=node_ready(node), volumes=node_volumes(name, volumes, 'diagnose')))
    return out


# --------------------------------------------------------------------------- pods restarted after a repair

def restart_plan(pods, affected_uids, restart_unowned=False):
    """Which pods to delete so that they mount again (FUSE recovery): those whose uid is among
    affected_uids (their mount was repaired) and that a controller recreates; a pod no controller
    owns would be gone for good, so it is only listed unless restart_unowned. `wait`: the
    restarted pods a controller recreates, those whose replacement to wait for."""
    affected = set(affected_uids or [])
    restart, unowned = [], []
    for pod in pods or []:
        meta = pod.get('metadata') or {}
        if meta.get('uid') not in affected:
            continue
        if controller_of(pod) is not None or restart_unowned:
            restart.append(pod)
        else:
            unowned.append(pod)
    return dict(affected=restart + unowned, restart=restart, unowned=unowned,
                wait=[pod for pod in restart if controller_of(pod) is not None])


def _owner_key(reference):
    # the API requires an owner's uid; a hand-written object without one is matched by kind and name
    return reference.get('uid') or (reference.get('kind'), reference.get('name'))


def controller_of(pod):
    """The ownerReference of the controller that recreates `pod` (the one marked controller, else
    the first), None for a pod no controller owns: deleted, it is gone for good."""
    references = [r for r in ((pod or {}).get('metadata') or {}).get('ownerReferences') or [] if isinstance(r, dict)]
    controllers = [r for r in references if r.get('controller')]
    return (controllers or references or [None])[0]


def running_replacements(pods, pod):
    """'namespace/name' of the pods among `pods` that replace `pod`: Running, owned by the same
    controller, not `pod` itself (another uid) and not being deleted. Empty for a pod no controller
    owns (nothing replaces it)."""
    controller = controller_of(pod)
    if controller is None:
        return []
    meta = pod.get('metadata') or {}
    out = []
    for other in pods or []:
        other_meta = (other or {}).get('metadata') or {}
        if (other_meta.get('uid') == meta.get('uid') or other_meta.get('deletionTimestamp')
                or other_meta.get('namespace') != meta.get('namespace')
                or ((other or {}).get('status') or {}).get('phase') != 'Running'):
            continue
        owners = [_owner_key(r) for r in other_meta.get('ownerReferences') or [] if isinstance(r, dict)]
        if _owner_key(controller) in owners:
            out.append('%s/%s' % (other_meta.get('namespace'), other_meta.get('name')))
    return sorted(out)


def stuck_pod_restart(pod, restart_pod=True, released=False):
    """Whether to delete a stuck pod so that it mounts again, and why: only when the run released
    something it waited on (released), the user did not turn restarts off (restart_pod), and a
    controller recreates it (deleting a pod nobody owns loses it). {restart, reason}."""
    if not restart_pod:
        return dict(restart=False, reason='restart_pod is false')
    if not released:
        return dict(restart=False, reason='nothing was released, so a restart would not help')
    if controller_of(pod) is None:
        return dict(restart=False, reason='no controller would recreate it')
    return dict(restart=True, reason='its controller recreates it')

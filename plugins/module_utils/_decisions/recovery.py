# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what a recovery lifts (I2, I3 of docs/safety.md).

Once a fenced node is proven restarted (another bootID than its failover recorded), node_recover
lifts the blocklist entries and NetworkFences that are that node's alone (recovery_plan(s)); who
added each entry is said in the report (entry_owner), and the driver's own fences are recorded at
failover time (driver_fences).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    ClusterView,
    client_address_key,
    failed_set,
    network_contains,
    normalize_network,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import MARKER_ANNOTATION, STARTED_ANNOTATION
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import object_name


# ceph-csi 3.15+ run with --enable-fencing blocklists a node's client address (recorded at NodeStage) on
# ControllerUnpublish while the node carries the out-of-service taint, for AutoBlocklistTime, three years
# (internal/util: a NetworkFence's entries last five years; ceph-csi itself tells its own entries apart by it).
CEPH_CSI_AUTO_FENCE_SECONDS = 94670856
_YEAR = 365 * 24 * 3600


def entry_owner(entry, *, marked=(), driver=()):
    """Who added a blocklist entry at a node's address, for the report (what may be lifted does not depend on
    it): 'failover' when the node's failover recorded it; 'ceph-csi' when the failover recorded it as the
    driver's (driver: the record's driver_fences), or for a whole-address entry (a one-host range, or every
    port and nonce) whose remaining time fits ceph-csi's fence on detach added within the last year; else
    'unrecorded'. marked: the failover record's addresses (client_address_key() tuples)."""
    if entry.get('entry') in driver:
        return 'ceph-csi'
    key = client_address_key(entry.get('address') or entry.get('entry'))
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
    key = client_address_key(entry.get('address') or entry.get('entry'))
    return key[0] if key is not None and key[1:] == (0, 0) else None


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


def fence_read_failure(result):
    """Why a networkfence_info result read no fences, or None when it read them (it has `fences`), was skipped,
    or the cluster serves no NetworkFence (CSI-Addons not installed: a 404 naming the CRD; there is no fence to
    lift then). A failure is told by the missing `fences`, not by `failed`: the task's failed_when may clear it."""
    if result.get('skipped') or 'fences' in result:
        return None
    if result.get('status') == 404 and (result.get('object') or {}).get('kind') == 'CustomResourceDefinition':
        return None
    return result.get('msg') or 'networkfence_info read no fences'


def recovery_plan(node, nodes, *, entries=None, fences=None, marker=None, leases=None, lease_fresh=60,
                  force=False, now=None, fences_unread=None):
    """What node_recover may lift for `node` (I2), once the node is proven restarted (I3).

    entries: ceph_blocklist_info `entries`; fences: networkfence_info `fences`; marker: read_marker();
    fences_unread: why the NetworkFences covering the node could not be read (a refusal, a timeout), or
    None. Then nothing of the node is lifted, force or not: its record, which names the fences its
    failover made, would go with the rest and leave them Fenced with nothing to say so (I2).
    An entry or fence is lifted only when it covers no node other than `node` and it is `node`'s
    (an address of the node, or recorded by its failover); everything else that concerns the node is
    kept with the reason. Returns {refused, evidence, remove_addresses, remove_cidrs, unfence, kept, lifted}:
    lifted names each blocklist entry removed and who added it (entry_owner()), as kept does for those kept.
    """
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now=now)
    facts = view.nodes.get(node)
    evidence = dict(node=node, ready=(facts or {}).get('ready'), lease_age=(facts or {}).get('lease_age'),
                    boot_id=(facts or {}).get('boot_id'), fenced_boot_id=(marker or {}).get('boot_id'),
                    marker=marker is not None)
    refused = _recovery_refusal(node, facts, marker, lease_fresh)
    if refused and force:
        evidence['forced_past'] = refused
        refused = None
    held = None
    if refused:
        held = ('node %s is not proven restarted: %s' % (node, refused), 'I3')
    if fences_unread:
        evidence['fences_unread'] = fences_unread
        unread = ('the NetworkFences that may cover node %s could not be read (%s): nothing of it is lifted and '
                  'its record stays, so that no fence of it is left behind unrecorded' % (node, fences_unread))
        refused = '; '.join(r for r in (refused, unread) if r)
        held = (unread if held is None else held[0] + '; ' + unread, 'I2')
    own = set((facts or {}).get('addresses') or [])
    marked = set(k for k in (client_address_key(a) for a in (marker or {}).get('blocklist') or []) if k)
    marked_ips = set(k[0] for k in marked)
    marked_fences = set((marker or {}).get('networkfences') or [])
    driver = set((marker or {}).get('driver_fences') or [])
    out = dict(refused=refused, evidence=evidence, remove_addresses=[], remove_cidrs=[], unfence=[], kept=[],
               lifted=[])
    for entry in entries or []:
        decision = _entry_decision(view, node, entry, own=own, marked=marked, marked_ips=marked_ips)
        if decision is None:
            continue
        kind, value, reason = decision
        if reason is not None:
            out['kept'].append(dict(entry=entry.get('entry') or value, reason=reason, invariant='I2',
                                    added_by=entry_owner(entry, marked=marked, driver=driver)))
            continue
        out['remove_addresses' if kind == 'address' else 'remove_cidrs'].append(value)
        out['lifted'].append(dict(entry=entry.get('entry') or value, node=node, added_by=entry_owner(entry, marked=marked, driver=driver)))
    for fence in fences or []:
        decision = _fence_decision(view, node, fence, own=own, marked_fences=marked_fences)
        if decision is None:
            continue
        if decision is True:
            out['unfence'].append(fence.get('name'))
        else:
            out['kept'].append(dict(networkfence=fence.get('name'), reason=decision, invariant='I2'))
    lifts = out['remove_addresses'] or out['remove_cidrs'] or out['unfence'] or out['kept']
    if refused and not lifts and not marker and not fences_unread and facts is not None and facts['ready'] == 'True':
        # Nothing of the node's is fenced and no failover recorded one: there is nothing a missing
        # proof of restart could protect (a re-run after a finished recovery ends here).
        evidence['nothing_to_lift'] = refused
        out['refused'] = refused = None
    if refused:
        # kept, and said why: what would be lifted once the node is proven restarted (and its fences read)
        reason, invariant = held
        out['kept'] = [dict(entry=v, reason=reason, invariant=invariant)
                       for v in out['remove_addresses'] + out['remove_cidrs']] \
            + [dict(networkfence=v, reason=reason, invariant=invariant) for v in out['unfence']] + out['kept']
        out['remove_addresses'], out['remove_cidrs'], out['unfence'], out['lifted'] = [], [], [], []
    return out


def recovery_plans(names, nodes, *, entries=None, fences=None, markers=None, leases=None, lease_fresh=60,
                   force=False, now=None, fences_unread=None):
    """recovery_plan() for the nodes of one failover of several (a rack) at once: one plan. Each node
    proven restarted is recovered (I3); one that is not is held: its fences stay, each in `kept` with
    the reason, and it is in `held` ({node: why}). `refused` says why when no node can be recovered.
    What is lifted is the union of what each recovered node's own plan lifts, so an entry or fence is
    lifted only when it covers that one node (I2). markers: {node: read_marker()}. Returns
    recovery_plan()'s keys (evidence by node when several) and `recovered`, `held`, `held_reason` (one
    sentence for them, or None). fences_unread: {node: why its NetworkFences could not be read}."""
    names = failed_set(names)
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now=now)
    fences = list(dict((f.get('name'), f) for f in fences or [] if isinstance(f, dict)).values())
    plans = [(n, recovery_plan(n, view, entries=entries, fences=fences, marker=(markers or {}).get(n),
                               lease_fresh=lease_fresh, force=force, now=now,
                               fences_unread=(fences_unread or {}).get(n)))
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
    by_name = dict((object_name(n), n) for n in nodes or [] if isinstance(n, dict))
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


def _entry_decision(view, node, entry, *, own, marked, marked_ips):
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
    key = client_address_key(entry.get('address') or entry.get('entry'))
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


def _fence_decision(view, node, fence, *, own, marked_fences):
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

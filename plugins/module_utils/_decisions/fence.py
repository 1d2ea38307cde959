# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what a failover fences (I1 of docs/safety.md).

The watchers of the failed nodes' images to blocklist (fence_plan), the host CIDRs a NetworkFence
may hold (fence_cidrs) and the NetworkFences to set Fenced (networkfence_plan).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    ClusterView,
    daemon_ips,
    failed_set,
    normalize_ip,
)


def fence_plan(images, failed_node, nodes, *, leases=None, lease_grace=120, daemon_addresses=None,
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
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now=now)
    failed = failed_set(failed_node)
    daemons = daemon_ips(daemon_addresses)
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
            reason = _fence_refusal(view, ip, failed, recorded=recorded, daemons=daemons, addressless=addressless,
                                    fence_unknown=fence_unknown, refused=refused)
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


def _fence_refusal(view, ip, failed, *, recorded, daemons, addressless, fence_unknown, refused):
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


def fence_cidrs(failed_node, nodes, *, leases=None, lease_grace=120, force=False, now=None):
    """The host CIDRs a NetworkFence of the failed node(s) may fence (I1): each of a failed node's
    addresses that no Ready node lists and no other node shares. Returns {cidrs, by_node: {node:
    [cidr]} (one NetworkFence per node), kept, refused}."""
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now=now)
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


def networkfence_plan(failed_node, *, existing, cidrs_by_node):
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

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

from ansible_collections.volfence.csi.plugins.module_utils._decisions.locks import IN_TREE_LOCK_PREFIX
from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    ClusterView,
    client_address_key,
    covered_by,
    daemon_ips,
    failed_set,
    normalize_ip,
    whole_ip_entry,
)


# Where the clients a failed node could still hold come from (the report says which for each entry).
SOURCE_WATCHER = 'watcher'
SOURCE_RECORD = 'ceph-csi record'
SOURCE_EXCLUSIVE_LOCK = 'exclusive-lock owner'
SOURCE_LOCK = 'lock holder'
SOURCE_STAGED = 'the node staged it'
SOURCE_OUT_OF_SERVICE = 'out-of-service taint'
LOCK_SOURCES = (SOURCE_EXCLUSIVE_LOCK, SOURCE_LOCK)


def image_suspects(image, failed):
    """Every client a failed node could still hold on one image, whether it watches now or not (I6): a frozen
    or partitioned client drops out of `rbd status` after osd_client_watch_timeout (30 s) and comes back,
    writing, when it thaws. Its watchers (exact); the address ceph-csi recorded for a failed node (the whole
    IP, as ceph-csi fences it); the exclusive-lock owner (the writing librbd client itself: exact); another
    lock's holder (the whole IP: the in-tree plugin takes kubelet_lock_magic_<node> with a short-lived `rbd
    lock add`, so the locker is not the client that maps and writes the image).
    Returns [{address, whole, source, node}] (node: the failed node a record names, else None)."""
    found = [dict(address=w.get('address'), whole=False, source=SOURCE_WATCHER, node=None)
             for w in image.get('watchers') or [] if isinstance(w, dict)]
    for client in image.get('csi_client_addresses') or []:
        if isinstance(client, dict) and client.get('node') in failed and normalize_ip(client.get('ip')) is not None:
            found.append(dict(address=str(normalize_ip(client['ip'])), whole=True, source=SOURCE_RECORD,
                              node=client['node']))
    for lock in image.get('locks') or []:
        if isinstance(lock, dict) and lock.get('address'):
            managed = bool(lock.get('managed'))
            found.append(dict(address=lock['address'], whole=not managed, node=None,
                              source=SOURCE_EXCLUSIVE_LOCK if managed else SOURCE_LOCK))
    return found


def staged_images(volumes, failed_node):
    """{image spec: [failed nodes]}: the RBD images the failed nodes staged (their VolumeAttachments and pods:
    failover_volumes()), each with the failed nodes that hold it; what fence_plan falls back on when no client
    of them is visible."""
    failed = failed_set(failed_node)
    staged = {}
    for volume in volumes or []:
        if isinstance(volume, dict) and volume.get('image'):
            nodes = [n for n in volume.get('nodes') or failed if n in failed]
            staged.setdefault(volume['image'], [])
            staged[volume['image']] = sorted(set(staged[volume['image']]) | set(nodes))
    return staged


def fence_plan(images, failed_node, nodes, *, leases=None, lease_grace=120, daemon_addresses=None,
               fence_unknown=False, force=False, now=None, staged=None):
    """What to blocklist so that no client a failed node could still hold writes again (I1, I6).

    images: rbd_watchers_info' `images` (watchers with `address`; csi_client_addresses with node, ip) and, when
    read, each image's `locks` (rbd_lock_info's). staged: {image spec: [failed nodes that staged it]} (their
    VolumeAttachments and pods: failed_nodes' `volumes`).
    failed_node: the failed node, or a list of failed nodes (a rack): one plan across them.
    nodes, leases: Node and Lease objects as k8s_info returns them. The watchers' own `node` field
    is not trusted: owners are re-derived from every address of every node, after normalising.

    The clients to fence are image_suspects() of each image: watchers and the exclusive-lock owner by their exact
    address, ceph-csi's record of a failed node by its whole IP, the node of an in-tree lock and the failed node
    that staged the image by their own addresses, whole (a frozen client of theirs shows nowhere; when such an
    address may not be fenced, the image is kept only if nothing else names a client of the failed nodes there);
    and a failed node under the out-of-service taint (Kubernetes released its volumes, or will, without a fence)
    by its own addresses, whole. Each is fenced only
    when its address is one failed node's alone (or, for pod networking, ceph-csi recorded that one failed node
    there, or fence_unknown with a single failed node), every failed node is provably down, no Ready node lists
    the address, no two nodes share it, and no Ceph daemon uses it. force lets a fresh Lease pass (never a
    Ready node). A watcher or lock holder that exactly one other node lists is that node's (`other_node`) and
    holds nothing back; a lock holder that is no failed node's is not this failover's and is left out.

    Returns {fence: [blocklist entry] (exact clients, ip:0/0 for a whole IP; an exact client inside a whole IP
    fenced is not added again), fenced: [{entry, node, sources, images}], kept: [{address, image, reason,
    invariant, source}], by_image: {spec: [entries cutting the failed nodes' clients there]}, by_node: {node:
    [entry]} (what each node's record holds), refused: reason or None}.
    """
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now=now)
    failed = failed_set(failed_node)
    daemons = daemon_ips(daemon_addresses)
    refused = view.alive_reasons(failed, lease_grace, allow_fresh_lease=force)
    addressless = view.addressless_ready()
    chosen = {}    # entry -> {node, sources, images}
    kept, by_image = [], {}
    rules = dict(daemons=daemons, addressless=addressless, fence_unknown=fence_unknown, refused=refused)

    def choose(entry, node, source, spec):
        item = chosen.setdefault(entry, dict(entry=entry, node=node, sources=[], images=[]))
        if source not in item['sources']:
            item['sources'].append(source)
        if spec is not None and spec not in item['images']:
            item['images'].append(spec)
        return entry

    for image in images or []:
        spec = image.get('spec') or '%s/%s' % (image.get('pool'), image.get('image'))
        recorded = _recorded(image, failed)
        here = by_image.setdefault(spec, [])
        named = False
        for suspect in image_suspects(image, failed):
            ip = normalize_ip(suspect['address'])
            reason = _fence_refusal(view, ip, failed, recorded=recorded, **rules)
            if reason is None:
                entry = whole_ip_entry(ip) if suspect['whole'] else suspect['address']
                owner = suspect['node'] or _fenced_owner(view, ip, failed, recorded)
                here.append(choose(entry, owner, suspect['source'], spec))
                named = True
                continue
            owner = _sole_other_owner(view, ip, failed, daemons)
            holders = view.owners_of(ip) if ip is not None else []
            if suspect['source'] in LOCK_SOURCES and holders and not set(holders) & set(failed):
                continue  # another node's lock (the replacement's exclusive lock): not this failover's
            entry = dict(address=suspect['address'], image=spec, reason=reason, invariant='I1',
                         source=suspect['source'])
            if owner and suspect['source'] != SOURCE_RECORD:
                # Another node's client (ceph-csi on the replacement's node opens the image to check it):
                # not a failed node's, so it does not hold back the release (I6).
                entry['other_node'] = owner
            elif (suspect['source'] == SOURCE_WATCHER and ip is not None and not refused and ip not in daemons
                  and not view.owners_of(ip)):
                # No node lists it: perhaps a driver's controller that opened the image for a
                # moment (ceph-csi's ControllerUnpublish reads and removes its record there).
                entry['unlisted'] = True
            else:
                named = named or suspect['source'] == SOURCE_RECORD
            kept.append(entry)
        for node in _lock_nodes(image, view, failed):
            # an in-tree lock names its node, not the client that maps and writes: every address of the node
            _fence_node(view, node, failed, source=SOURCE_LOCK, spec=spec, rules=rules, choose=choose, here=here,
                        kept=kept)
        for node in [n for n in (staged or {}).get(spec) or [] if n in failed]:
            # the node that staged it, whole: a second client of the node (frozen) shows nowhere; required (kept
            # when it cannot be fenced) only when nothing else names a client of the failed nodes there
            _fence_node(view, node, failed, source=SOURCE_STAGED, spec=spec, rules=rules, choose=choose,
                        here=here, kept=kept if not named else [])
    for node in failed:
        if view.out_of_service(node):
            _fence_node(view, node, failed, source=SOURCE_OUT_OF_SERVICE, spec=None, rules=rules, choose=choose, here=[],
                        kept=kept)
    kept = _cut_elsewhere(kept, chosen, by_image)
    fence, by_node = _minimal(chosen, failed)
    for spec in by_image:
        by_image[spec] = sorted(set(e if e in fence else covered_by(fence, e)[0] for e in by_image[spec]))
    fenced = [dict(chosen[e], sources=sorted(chosen[e]['sources']), images=sorted(chosen[e]['images']))
              for e in fence]
    return dict(fence=fence, fenced=fenced, kept=kept, by_image=by_image, by_node=by_node, refused=refused)


def _recorded(image, failed):
    """{ip: set(failed nodes)} of ceph-csi's records of the failed nodes on one image."""
    recorded = {}
    for client in image.get('csi_client_addresses') or []:
        ip = normalize_ip(client.get('ip')) if isinstance(client, dict) else None
        if ip is not None and client.get('node') in failed:
            recorded.setdefault(ip, set()).add(client['node'])
    return recorded


def _lock_nodes(image, view, failed):
    """The failed nodes that hold an advisory lock of the image (not the exclusive-lock feature's): by the lock's
    address, or by its in-tree id kubelet_lock_magic_<node>."""
    nodes = set()
    for lock in image.get('locks') or []:
        if isinstance(lock, dict) and not lock.get('managed'):
            nodes.update(n for n in view.owners_of(lock.get('address')) if n in failed)
            lock_id = str(lock.get('id') or '')
            if lock_id.startswith(IN_TREE_LOCK_PREFIX) and lock_id[len(IN_TREE_LOCK_PREFIX):] in failed:
                nodes.add(lock_id[len(IN_TREE_LOCK_PREFIX):])
    return sorted(nodes)


def _fence_node(view, node, failed, *, source, spec, rules, choose, here, kept):
    """Fence a failed node's own addresses, whole (I1 as for any client). Each address it may not fence, or the
    node listing none, is kept for the image (`kept`), so the image is not released on what was fenced."""
    addresses = (view.nodes.get(node) or {}).get('addresses') or []
    for ip in addresses:
        reason = _fence_refusal(view, ip, failed, recorded={}, **rules)
        if reason is None:
            here.append(choose(whole_ip_entry(ip), node, source, spec))
        elif spec is not None:
            kept.append(dict(address=str(ip), image=spec, source=source, invariant='I1', reason=(
                '%s may still hold it (%s), but its address cannot be fenced: %s' % (node, source, reason))))
    if not addresses and spec is not None:
        kept.append(dict(address=None, image=spec, source=source, invariant='I1', reason=(
            '%s may still hold it (%s: a frozen or partitioned client drops out of rbd status), and it lists no '
            'address to fence' % (node, source))))


def _minimal(chosen, failed):
    """The entries to add, sorted, without an exact client that a whole-IP entry of the plan already cuts;
    and each node's."""
    whole = [e for e in chosen if client_address_key(e) and client_address_key(e)[1:] == (0, 0)]
    fence = sorted(e for e in chosen if e in whole or not covered_by(whole, e))
    for entry in [e for e in chosen if e not in fence]:
        cover = covered_by(whole, entry)[0]
        for source in chosen[entry]['sources']:
            if source not in chosen[cover]['sources']:
                chosen[cover]['sources'].append(source)
        chosen[cover]['images'] = sorted(set(chosen[cover]['images']) | set(chosen[entry]['images']))
    by_node = dict((n, []) for n in failed)
    for entry in fence:
        by_node.setdefault(chosen[entry]['node'], []).append(entry)
    return fence, by_node


def watchers_to_settle(plan):
    """The kept watchers of a fence_plan that hold the release back (I6) and may be gone a moment
    later: clients at an address no node lists, of nodes proven down. A CSI controller on the pod
    network opens an image briefly (ceph-csi's ControllerUnpublish reads and removes the address it
    recorded at NodeStage; with fencing on it blocklists that address meanwhile). Read again before
    deciding, or such a client is reported unsafe and the pod kept. [(image, address)], sorted."""
    return sorted(set((k['image'], k['address']) for k in plan.get('kept') or () if k.get('unlisted')))


def _cut_elsewhere(kept, chosen, by_image):
    """Kept clients that an entry chosen for another image cuts (the same exact client, or its whole IP) are
    cut on this image too: report them fenced there, or their volume would be held back (I6) for a client
    the run did fence. Only a ceph-csi record or a staging differs between images; no other reason can."""
    still = []
    for entry in kept:
        cover = covered_by(chosen, entry['address']) if entry.get('address') else []
        if cover and entry.get('source') != SOURCE_STAGED:
            by_image[entry['image']].append(cover[0])
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
    """Watcher addresses of `images` that an entry of `fenced` cuts (exact, or ip:0/0 its whole IP): empty once the
    fence took."""
    return sorted(set(w.get('address') for i in images or [] for w in i.get('watchers') or []
                      if covered_by(fenced, w.get('address'))))


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

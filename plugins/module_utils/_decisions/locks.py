# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: which RBD advisory locks may be broken (I4 of docs/safety.md)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    ClusterView,
    covered_by,
    failed_set,
    whole_ip_entry,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import names_rbd_image


IN_TREE_LOCK_PREFIX = 'kubelet_lock_magic_'


def lock_plan(locks, pod_node, nodes, *, leases=None, lease_grace=120, force=False, now=None):
    """Which RBD advisory locks on a stuck pod's images may be broken (I4).

    locks: rbd_lock_info `locks`, each with `image` added. pod_node: the stuck pod's node (its own locks
    are never broken). The holder is tied to a node by the lock's address (any node address type,
    normalised) and by an in-tree lock id kubelet_lock_magic_<node>; both must agree on one node.
    A lock is broken only when that node exists and is provably down (not Ready, Lease older than
    lease_grace); force lets through holders that are alive or cannot be tied to a node, never a
    lock of the pod's own node or one whose image its Ready holder lists in volumesInUse.
    Each lock to break has `fence`: what is blocklisted before it is broken, the locker's exact address and,
    when the holder node is tied to the lock and provably down, every address of that node that no other node
    lists, whole (ip:0/0): the in-tree plugin takes its lock with a short-lived `rbd lock add`, so the locker is not
    the client that maps and writes the image, and a frozen or partitioned mapping no longer watches (I4, I6).
    Returns {break: [lock], kept: [lock + reason, invariant]}.
    """
    view = nodes if isinstance(nodes, ClusterView) else ClusterView(nodes, leases, now=now)
    out = dict((key, []) for key in ('break', 'kept'))
    for lock in locks or []:
        hard, soft = _lock_refusal(view, lock, pod_node, lease_grace)
        reason = hard or (None if force else soft)
        if reason is None:
            entry = dict(lock, fence=[lock.get('address')] + ([] if soft else _holder_fence(view, lock)))
            if soft:
                entry['forced_past'] = soft
            out['break'].append(entry)
        else:
            out['kept'].append(dict(lock, reason=reason, invariant='I4'))
    return out


def lock_holder(view, lock):
    """The one node a lock is tied to (its address's only owner, or kubelet_lock_magic_<node>), else None."""
    lock_id = str(lock.get('id') or '')
    named = lock_id[len(IN_TREE_LOCK_PREFIX):] if lock_id.startswith(IN_TREE_LOCK_PREFIX) else None
    owners = view.owners_of(lock.get('address') or lock.get('ip'))
    if len(owners) > 1 or (named and owners and owners[0] != named):
        return None
    return named or (owners[0] if owners else None)


def _holder_fence(view, lock):
    """The holder node's own addresses, whole, that no other node lists (I1)."""
    holder = lock_holder(view, lock)
    return [whole_ip_entry(ip) for ip in (view.nodes.get(holder) or {}).get('addresses') or []
            if view.owners_of(ip) == [holder]]


def image_in_use(view, node, image, *, unique_names=None):
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
    using = [n for n in candidates if view.ready(n) and image_in_use(view, n, image, unique_names=lock.get('unique_names'))]
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


def failover_lock_breaks(images, *, failed_nodes, fence):
    """The in-tree locks (kubelet_lock_magic_<node>) a failover breaks once its fence took (I4, I6): a failed node's
    lock on any image the failover read (its own, and those pods elsewhere wait on: the pod that moved cannot mount
    while it stands), when the failed nodes are provably down (the plan was not refused) and an entry of the plan
    cuts the locker (the node was fenced first, as rbd_lock_cleanup does). images: rbd_watchers_info images with
    `locks`; fence: fence_plan(). Returns {break: [lock + image], kept: [lock + image, reason, invariant]}."""
    failed = failed_set(failed_nodes)
    entries = list((fence or {}).get('fence') or [])
    out = dict((key, []) for key in ('break', 'kept'))
    for image in images or []:
        spec = image.get('spec') if isinstance(image, dict) else None
        for lock in (image.get('locks') or []) if spec else []:
            lock_id = str(lock.get('id') or '')
            node = lock_id[len(IN_TREE_LOCK_PREFIX):] if lock_id.startswith(IN_TREE_LOCK_PREFIX) else None
            if node not in failed or lock.get('managed'):
                continue
            entry = dict(lock, image=spec, node=node)
            if (fence or {}).get('refused'):
                out['kept'].append(dict(entry, reason='nothing was fenced: %s' % fence['refused'], invariant='I4'))
            elif not covered_by(entries, lock.get('address')):
                out['kept'].append(dict(entry, invariant='I4', reason=(
                    'its locker %s was not fenced: breaking it would let a second writer in' % lock.get('address'))))
            else:
                out['break'].append(entry)
    return out

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: which Events a run posts, from what its steps did.

Pure functions (no Ansible, no client). Each returns the `events` of volfence.csi.incident_events: one
entry per action done (not planned: a check run or a step that did not run adds nothing), on the object it
concerns, with the invariant of docs/safety.md that allowed it; and one Warning on each pod the run left
stuck, saying why."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def _items(value):
    return list(value) if isinstance(value, (list, tuple)) else []


def _dict(value):
    return value if isinstance(value, dict) else {}


def _split(ref):
    """'namespace/name' -> {namespace, name}."""
    namespace, _sep, name = str(ref).partition('/')
    return dict(namespace=namespace, name=name) if name else dict(name=namespace)


def failover_events(*, fence_method, fence_plan=None, fence_actions=None, networkfences_created=None,
                    taint_added=None, deleted_pods=None, removed_attachments=None, replacements_running=None,
                    kept_pods=None, check_mode=False):
    """node_failover's Events. fence_plan: the blocklist plan (by_node: {node: [addresses]}); fence_actions:
    the blocklist entries added; networkfences_created: [{node, name}]; taint_added: nodes; deleted_pods:
    pod_force_delete's `deleted`; removed_attachments: volumeattachment's removed names; replacements_running:
    [{claim, node, pod}]; kept_pods: the release plan's pods left on the failed nodes, with why."""
    if check_mode:
        return []
    events = []
    added = set(str(_dict(a).get('entry') or a) for a in _items(fence_actions))
    if fence_method == 'blocklist':
        for node, addresses in sorted(_dict(_dict(fence_plan).get('by_node')).items()):
            done = [a for a in _items(addresses) if any(entry == a or entry.startswith(a) for entry in added)]
            if done:
                events.append(dict(what='node_fenced', regarding=dict(name=node), invariant='I1',
                                   note="%s's RBD clients blocklisted in Ceph: %s" % (node, ', '.join(done))))
    for fence in _items(networkfences_created):
        fence = _dict(fence)
        events.append(dict(what='node_fenced', regarding=dict(name=fence.get('node')), invariant='I1',
                           note='%s fenced by the CSI-Addons NetworkFence %s' % (fence.get('node'), fence.get('name'))))
    for node in _items(taint_added):
        events.append(dict(what='out_of_service_taint_added', regarding=dict(name=node), invariant='I6',
                           note='node.kubernetes.io/out-of-service taint added after %s was fenced' % node))
    for pod in _items(deleted_pods):
        pod = _dict(pod)
        events.append(dict(what='pod_force_deleted', invariant='I6',
                           regarding=dict(namespace=pod.get('namespace'), name=pod.get('name'), uid=pod.get('uid')),
                           note='force-deleted: its node failed and its volumes were made safe'))
    for name in _items(removed_attachments):
        name = _dict(name).get('name') if isinstance(name, dict) else name
        events.append(dict(what='volumeattachment_deleted', regarding=dict(name=name), invariant='I6',
                           note='removed: its node failed and the volume was made safe'))
    for running in _items(replacements_running):
        running = _dict(running)
        events.append(dict(what='replacement_running', regarding=_split(running.get('claim')), invariant='I6',
                           note='the replacement pod %s runs on %s' % (running.get('pod'), running.get('node'))))
    for kept in _items(kept_pods):
        kept = _dict(kept)
        events.append(dict(what='failover_refused', regarding=_split(kept.get('pod')), invariant=kept.get('invariant'),
                           note='left on its failed node by volfence.csi: %s' % kept.get('reason')))
    return events

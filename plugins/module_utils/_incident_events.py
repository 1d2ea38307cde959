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

from collections.abc import Mapping


# Also the filters' (plugins/filter/failover_steps.py): a step's result read the same way everywhere.
def _items(value):
    """A list; [] for anything else (a step that did not run)."""
    return list(value) if isinstance(value, (list, tuple)) else []


def _dict(value):
    """A registered result or a fact; {} for a step that did not run (skipped, failed before, or none)."""
    return value if isinstance(value, Mapping) else {}


def _split(ref):
    """'namespace/name' -> {namespace, name}."""
    namespace, _sep, name = str(ref).partition('/')
    return dict(namespace=namespace, name=name) if name else dict(name=namespace)


def _replaced_pod(running, deleted_pods, volumes):
    """('namespace/name', uid) of the force-deleted pod whose claim the replacement `running` took: the
    deleted pod of the same name (a StatefulSet's), else one that held the claim (the release plan's
    volumes); None when none was deleted by this run."""
    deleted = dict(('%s/%s' % (p.get('namespace'), p.get('name')), p.get('uid')) for p in map(_dict, _items(deleted_pods)))
    if running.get('pod') in deleted:
        return running['pod'], deleted[running['pod']]
    for volume in map(_dict, _items(volumes)):
        if running.get('claim') in _items(volume.get('claims')):
            for ref in _items(volume.get('pods')):
                if ref in deleted:
                    return ref, deleted[ref]
    return None


def failover_events(*, fence_method, fence_plan=None, fence_actions=None, networkfences_created=None,
                    taint_added=None, deleted_pods=None, removed_attachments=None, replacements_running=None,
                    kept_pods=None, volumes=None, check_mode=False):
    """node_failover's Events. fence_plan: the blocklist plan (by_node: {node: [addresses]}); fence_actions:
    the blocklist entries added; networkfences_created: [{node, name}]; taint_added: nodes; deleted_pods:
    pod_force_delete's `deleted`; removed_attachments: volumeattachment's removed names; replacements_running:
    [{claim, node, pod}]; kept_pods: the release plan's pods left on the failed nodes, with why; volumes: the
    release plan's verdicts ({claims, pods}), which tell which deleted pod a replacement took the claim from."""
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
        old = _replaced_pod(running, deleted_pods, volumes)
        events.append(dict(what='replacement_pod_running', regarding=_split(running.get('pod')), invariant='I6',
                           note='runs on %s with claim %s, which volfence.csi released from a failed node%s' % (
                               running.get('node'), running.get('claim'),
                               ': replaces pod %s (uid %s), force-deleted there' % old if old else '')))
    for kept in _items(kept_pods):
        kept = _dict(kept)
        events.append(dict(what='failover_refused', regarding=_split(kept.get('pod')), invariant=kept.get('invariant'),
                           note='left on its failed node by volfence.csi: %s' % kept.get('reason')))
    return events


def cleanup_events(report, *, lock_results=None, volumes=None):
    """rbd_lock_cleanup's and volumeattachment_cleanup's Events, from their report and, for the locks, the
    rbd_lock results (each with its `item`, the lock broken or its image, and `broken`) and the pod's volumes
    (image -> PV)."""
    report = _dict(report)
    if report.get('check_mode'):
        return []
    events = []
    for name in _items(report.get('deleted')):
        events.append(dict(what='volumeattachment_deleted', regarding=dict(name=name), invariant='I5',
                           note='removed: stale, no Ready node uses its volume'))
    pvs = dict((v.get('image'), v.get('pv_name') or v.get('pv')) for v in map(_dict, _items(volumes)) if v.get('image'))
    for result in map(_dict, _items(lock_results)):
        image = result.get('item')
        image = _dict(image).get('image') if isinstance(image, dict) else image   # the loop's lock, or the image
        for lock in map(_dict, _items(result.get('broken'))):
            if pvs.get(image):
                events.append(dict(what='rbd_lock_broken', regarding=dict(name=pvs[image]), invariant='I4',
                                   note='lock %s of %s (held by %s) broken, its holder blocklisted first' % (
                                       lock.get('id'), image, lock.get('locker') or lock.get('address'))))
    pod = _dict(report.get('pod'))
    if report.get('pod_restarted') and pod.get('name'):
        # its uid: a StatefulSet's replacement has the same name, and the Event belongs to the pod deleted
        events.append(dict(what='pod_restarted', invariant='I4' if lock_results is not None else 'I5',
                           regarding=dict((k, v) for k, v in (('namespace', pod.get('namespace')), ('name', pod['name']),
                                                              ('uid', pod.get('uid'))) if v),
                           note='deleted so that its controller starts it again: %s' % report.get('pod_restart_reason')))
        for replacement in _items(report.get('replacements_running')):
            events.append(dict(what='replacement_pod_running', regarding=_split(replacement),
                               invariant='I4' if lock_results is not None else 'I5',
                               note='replaces pod %s/%s%s, which volfence.csi deleted so that it mounts again' % (
                                   pod.get('namespace'), pod['name'], ' (uid %s)' % pod['uid'] if pod.get('uid') else '')))
    return events


def recover_events(*, recovered=None, lifted=None, removed=None, unfenced=None, taint_removed=None, check_mode=False):
    """node_recover's Events. recovered: the nodes proven restarted; lifted: the recovery plan's blocklist
    entries to remove ({entry, node, added_by}), told once `removed` (ceph_blocklist's result) changed them;
    unfenced: the networkfence loop's results (item: the fence's name); taint_removed: the nodes whose
    out-of-service taint was removed."""
    if check_mode:
        return []
    nodes = [str(n) for n in _items(recovered)]
    done = {}   # node -> what was lifted
    removed = _dict(removed)
    if removed.get('changed') and not removed.get('failed'):
        for entry in map(_dict, _items(lifted)):
            done.setdefault(entry.get('node'), []).append('blocklist entry %s' % entry.get('entry'))
    for result in map(_dict, _items(_dict(unfenced).get('results'))):
        name = str(result.get('item'))
        node = name[len('volfence-'):] if name.startswith('volfence-') else (nodes[0] if len(nodes) == 1 else None)
        if result.get('changed') and not result.get('failed') and node in nodes:
            done.setdefault(node, []).append('NetworkFence %s set Unfenced' % name)
    events = [dict(what='node_unfenced', regarding=dict(name=node), invariant='I2',
                   note='%s proven restarted; its own fences lifted: %s' % (node, ', '.join(lifts)))
              for node, lifts in sorted(done.items()) if node]
    for node in _items(taint_removed):
        events.append(dict(what='out_of_service_taint_removed', regarding=dict(name=node), invariant='I3',
                           note='node.kubernetes.io/out-of-service taint the failover added removed: %s restarted' % node))
    return events


def fuse_events(*, unmounted=None, pods=None, deleted=None, check_mode=False):
    """fuse_mount_recovery's Events. unmounted: the dead mounts unmounted (fuse_mounts' `unmounted`, each with
    its pod_uid and volume); pods: the affected pods (the restart plan's, restarted or left alone); deleted:
    the restart loop's results (item: the pod), told for each pod it deleted."""
    if check_mode:
        return []
    by_uid = dict(((_dict(p).get('metadata') or {}).get('uid'), _dict(p)) for p in _items(pods))
    volumes = {}
    for mount in map(_dict, _items(unmounted)):
        if mount.get('pod_uid') in by_uid:
            volumes.setdefault(mount['pod_uid'], []).append(str(mount.get('volume')))
    events = []
    for uid, names in sorted(volumes.items()):
        meta = by_uid[uid].get('metadata') or {}
        # no numbered invariant: the plan unmounts only mounts whose FUSE daemon is gone (_decisions/dead_mounts.py)
        events.append(dict(what='dead_mount_recovered',
                           regarding=dict(namespace=meta.get('namespace'), name=meta.get('name'), uid=uid),
                           note='dead FUSE mount(s) of volume(s) %s unmounted on its node (their FUSE daemon was gone; '
                                'a hung one is never unmounted)' % ', '.join(sorted(set(names)))))
    for result in map(_dict, _items(_dict(deleted).get('results'))):
        meta = _dict(result.get('item')).get('metadata') or {}
        if result.get('changed') and not result.get('failed') and meta.get('name'):
            events.append(dict(what='pod_restarted',
                               regarding=dict(namespace=meta.get('namespace'), name=meta.get('name')),
                               note='deleted so that its controller starts it again with a working mount'))
    return events

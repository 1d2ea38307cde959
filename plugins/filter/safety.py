# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The safety decision layer (module_utils/_decisions/, one file per runbook step; docs/safety.md) as filters, so that the
playbooks decide nothing in Jinja: every destructive step takes its list from one of these."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.volfence.csi.plugins.module_utils._decisions import cluster_view as _cluster_view
from ansible_collections.volfence.csi.plugins.module_utils._decisions import fence as _fence
from ansible_collections.volfence.csi.plugins.module_utils._decisions import locks as _locks
from ansible_collections.volfence.csi.plugins.module_utils._decisions import marks as _marks
from ansible_collections.volfence.csi.plugins.module_utils._decisions import node_volumes as _node_volumes
from ansible_collections.volfence.csi.plugins.module_utils._decisions import pod_restarts as _pod_restarts
from ansible_collections.volfence.csi.plugins.module_utils._decisions import preflight as _preflight
from ansible_collections.volfence.csi.plugins.module_utils._decisions import recovery as _recovery
from ansible_collections.volfence.csi.plugins.module_utils._decisions import release as _release
from ansible_collections.volfence.csi.plugins.module_utils._decisions import volumeattachment as _volumeattachment


def _list(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise AnsibleFilterError('%s must be a list, got %s' % (what, type(value).__name__))
    return value


def _auto_or_bool(value, what):
    """'auto' stays 'auto' (the decision layer decides); anything else is a boolean."""
    if isinstance(value, str) and value.strip().lower() == _release.AUTO:
        return _release.AUTO
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise AnsibleFilterError('%s must be auto, true or false, got %r' % (what, value))


def failover_preflight(nodes, failed_node, leases=None, lease_grace=120, force=False):
    return _preflight.failover_preflight(failed_node, _list(nodes, 'nodes'), leases=_list(leases, 'leases'),
                                         lease_grace=int(lease_grace), force=bool(force))


def node_volumes(pods, *, node, pvcs=None, pvs=None, attachments=None):
    """Every volume of the pods on `node` (or on each node of a list), whatever its driver: what a
    failover releases, and the volumes of one stuck pod for the cleanup playbooks."""
    return _node_volumes.failover_volumes(node, pods=_list(pods, 'pods'), pvcs=_list(pvcs, 'pvcs'),
                                          pvs=_list(pvs, 'pvs'), attachments=_list(attachments, 'attachments'))


def failover_fence_plan(images, *, failed_nodes, nodes, leases=None, lease_grace_seconds=120,
                        fence_unknown_watchers=False, force=False, daemon_addresses=None, volumes=None):
    return _fence.fence_plan(_list(images, 'images'), failed_nodes, _list(nodes, 'nodes'), leases=_list(leases, 'leases'),
                             lease_grace=int(lease_grace_seconds),
                             daemon_addresses=_list(daemon_addresses, 'daemon_addresses'),
                             fence_unknown=bool(fence_unknown_watchers), force=bool(force),
                             staged=_fence.staged_images(_list(volumes, 'volumes'), failed_nodes))


def failover_fence_cidrs(nodes, *, failed_nodes, leases=None, lease_grace_seconds=120, force=False):
    return _fence.fence_cidrs(failed_nodes, _list(nodes, 'nodes'), leases=_list(leases, 'leases'),
                              lease_grace=int(lease_grace_seconds), force=bool(force))


def failover_release_plan(volumes, *, failed_nodes, pods=None, fence_method='blocklist', watchers=None, missing=None,
                          fence=None, watchers_after=None, fenced_cidrs=None, networkfence_results=None,
                          out_of_service_taint=_release.AUTO, waiting=None, check_mode=False):
    # The NetworkFence is in place when a networkfence task ran (check mode: would run) and none failed.
    # In check mode nothing was fenced, so no read after the fence can confirm it: the plan is trusted.
    ran = [r for r in _list(networkfence_results, 'networkfence_results') if isinstance(r, dict) and not r.get('skipped')]
    networkfence_ok = bool(ran) and not any(r.get('failed') for r in ran)
    return _release.release_plan(
        failed_nodes, _list(volumes, 'volumes'), _list(pods, 'pods'), fence_method=fence_method,
        images=_list(watchers, 'watchers'), missing=_list(missing, 'missing'), fence=fence or {},
        watchers_after=None if watchers_after is None or check_mode else _list(watchers_after, 'watchers_after'),
        fenced_cidrs=_list(fenced_cidrs, 'fenced_cidrs'), networkfence_ok=bool(networkfence_ok),
        out_of_service_taint=_auto_or_bool(out_of_service_taint, 'out_of_service_taint'),
        waiting=_list(waiting, 'waiting'))


def node_volume_report(pods, *, nodes, pvcs=None, pvs=None, attachments=None):
    """Every volume of `nodes` (a node's name, or a list of them) and what volfence.csi did for it
    (node_recover's report), each with its `node`."""
    report = []
    for name in _cluster_view.failed_set(nodes):
        volumes = _node_volumes.failover_volumes(name, pods=_list(pods, 'pods'), pvcs=_list(pvcs, 'pvcs'),
                                                 pvs=_list(pvs, 'pvs'), attachments=_list(attachments, 'attachments'))
        report.extend(dict(line, node=name) for line in _node_volumes.node_volumes(name, volumes, context='recover'))
    return report


def failover_markers(nodes, *, failed_nodes, blocklisted_by_node=None, networkfences=None, fenced_at=None,
                     driver_fences_by_node=None):
    return _marks.failover_markers(_list(nodes, 'nodes'), failed_nodes, blocklisted_by_node=blocklisted_by_node or {},
                                   networkfences=_list(networkfences, 'networkfences'), fenced_at=fenced_at,
                                   driver_fences_by_node=driver_fences_by_node or {})


def failover_driver_fences(entries, *, failed_nodes, nodes):
    """entries: ceph_blocklist_info entries; {node: [entry]} of the driver's own fences at each failed node."""
    return _recovery.driver_fences(_list(entries, 'entries'), failed_nodes, _list(nodes, 'nodes'))


def failover_networkfence_plan(existing_results, *, failed_nodes, nodes, leases=None, lease_grace_seconds=120,
                               force=False, driver=None, secret=None, cluster_id=None):
    """existing_results: the results of networkfence_info looped over the failed nodes; a node without a
    pre-created fence gets one of its own host CIDRs (failover_fence_cidrs over `nodes` and `leases`, I1).
    Each fence of the plan also carries its `request`, an entry of the networkfence module's `fences`: a
    pre-created fence is only set Fenced (its shape is not touched); one created here gets its CIDRs and,
    when given, the `driver`, its `secret` and the `cluster_id` parameter."""
    existing = dict((r.get('item'), r.get('fences') or []) for r in _list(existing_results, 'existing_results')
                    if isinstance(r, dict) and not r.get('skipped'))
    cidrs = failover_fence_cidrs(nodes, failed_nodes=failed_nodes, leases=leases,
                                 lease_grace_seconds=lease_grace_seconds, force=force)
    plan = _fence.networkfence_plan(failed_nodes, existing=existing, cidrs_by_node=cidrs.get('by_node') or {})
    for fence in plan:
        request = dict(name=fence['name'], fence_state='Fenced')
        if fence['create']:
            request.update(cidrs=fence['cidrs'])
            request.update((key, value) for key, value in (('driver', driver), ('secret', secret)) if value)
            if cluster_id is not None:
                request['parameters'] = dict(clusterID=cluster_id)
        fence['request'] = request
    return plan


def recovery_plans(nodes, *, names, entries=None, fence_results=None, records=None, leases=None,
                   lease_fresh_seconds=60, force=False):
    """fence_results: networkfence_info results looped over the nodes (`item`: the node); a node whose read
    failed for another reason than CSI-Addons not being installed is held (recovery_plan's fences_unread)."""
    fences, unread = [], {}
    for result in _list(fence_results, 'fence_results'):
        if isinstance(result, dict):
            fences.extend(result.get('fences') or [])
            why = _recovery.fence_read_failure(result)
            if why:
                for node in [result['item']] if result.get('item') else _cluster_view.failed_set(names):
                    unread[node] = why
    return _recovery.recovery_plans(names, _list(nodes, 'nodes'), entries=_list(entries, 'entries'), fences=fences,
                                    markers=records or {}, leases=_list(leases, 'leases'),
                                    lease_fresh=int(lease_fresh_seconds), force=bool(force), fences_unread=unread)


def failover_records(nodes, *, names, report=None):
    """{node: what its failover recorded} (read_marker for each named node)."""
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in _list(nodes, 'nodes') if isinstance(n, dict))
    return dict((name, _marks.read_marker(by_name.get(name) or dict(metadata=dict(name=name)), report))
                for name in _cluster_view.failed_set(names))


def recover_node_states(nodes, *, names):
    return _recovery.node_states(_list(nodes, 'nodes'), names)


def _image_locks(values):
    """Locks with their `image`: lock dicts as they are, or the results of volfence.csi.rbd_lock
    looped over image specs, whose locks get the loop's item as their image (a result without
    locks, skipped, adds none)."""
    out = []
    for value in _list(values, 'locks'):
        if isinstance(value, dict) and ('locks' in value or 'item' in value):
            out.extend(dict(lock, image=lock.get('image') or value.get('item')) for lock in value.get('locks') or [])
        else:
            out.append(value)
    return out


def lock_break_plan(locks, *, pod_node, nodes, leases=None, lease_grace_seconds=120, force=False):
    """locks: rbd_lock `locks`, each with `image`; or the `results` of rbd_lock looped over image specs."""
    return _locks.lock_plan(_image_locks(locks), pod_node, _list(nodes, 'nodes'), leases=_list(leases, 'leases'),
                            lease_grace=int(lease_grace_seconds), force=bool(force))


def pod_restart_plan(pods, affected_uids, restart_unowned=False):
    return _pod_restarts.restart_plan(_list(pods, 'pods'), _list(affected_uids, 'affected_uids'),
                                      restart_unowned=bool(restart_unowned))


def running_replacements(pods, pod):
    return _pod_restarts.running_replacements(_list(pods, 'pods'), pod or {})


def stuck_pod_restart(pod, restart_pod=True, released=None):
    """released: what the run released for the pod (a list, or a bool); any makes a restart worth it."""
    return _pod_restarts.stuck_pod_restart(pod or {}, restart_pod=boolean(restart_pod, strict=False),
                                           released=bool(released))


def attachment_cleanup_plan(attachments, pod_node):
    return _volumeattachment.cleanup_plan(_list(attachments, 'attachments'), pod_node or '')


def failover_remaining_watchers(images, *, fenced):
    return _fence.remaining(images, fenced)


class FilterModule(object):
    def filters(self):
        return {
            'failover_preflight': failover_preflight,
            'attachment_cleanup_plan': attachment_cleanup_plan,
            'node_volumes': node_volumes,
            'failover_fence_plan': failover_fence_plan,
            'failover_fence_cidrs': failover_fence_cidrs,
            'failover_markers': failover_markers,
            'failover_networkfence_plan': failover_networkfence_plan,
            'failover_release_plan': failover_release_plan,
            'node_volume_report': node_volume_report,
            'failover_driver_fences': failover_driver_fences,
            'recovery_plans': recovery_plans,
            'failover_records': failover_records,
            'recover_node_states': recover_node_states,
            'lock_break_plan': lock_break_plan,
            'failover_remaining_watchers': failover_remaining_watchers,
            'pod_restart_plan': pod_restart_plan,
            'running_replacements': running_replacements,
            'stuck_pod_restart': stuck_pod_restart,
        }

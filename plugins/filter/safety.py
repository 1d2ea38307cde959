# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The safety decision layer (module_utils/_decisions/safety.py, docs/safety.md) as filters, so that the
playbooks decide nothing in Jinja: every destructive step takes its list from one of these."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.volfence.csi.plugins.module_utils._decisions import safety as _safety
from ansible_collections.volfence.csi.plugins.module_utils._decisions import volumeattachment as _volumeattachment


def _list(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise AnsibleFilterError('%s must be a list, got %s' % (what, type(value).__name__))
    return value


def _auto_or_bool(value, what):
    """'auto' stays 'auto' (the decision layer decides); anything else is a boolean."""
    if isinstance(value, str) and value.strip().lower() == _safety.AUTO:
        return _safety.AUTO
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise AnsibleFilterError('%s must be auto, true or false, got %r' % (what, value))


def failover_preflight(nodes, failed_node, leases=None, lease_grace=120, force=False):
    return _safety.failover_preflight(failed_node, _list(nodes, 'nodes'), _list(leases, 'leases'),
                                      int(lease_grace), bool(force))


def failover_volumes(pods, failed_node, pvcs=None, pvs=None, attachments=None):
    return _safety.failover_volumes(failed_node, _list(pods, 'pods'), _list(pvcs, 'pvcs'), _list(pvs, 'pvs'),
                                    _list(attachments, 'attachments'))


def failover_fence_plan(images, failed_node, nodes, leases=None, lease_grace=120, fence_unknown=False, force=False,
                        daemon_addresses=None):
    return _safety.fence_plan(_list(images, 'images'), failed_node, _list(nodes, 'nodes'), _list(leases, 'leases'),
                              int(lease_grace), _list(daemon_addresses, 'daemon_addresses'), bool(fence_unknown),
                              bool(force))


def failover_fence_cidrs(nodes, failed_node, leases=None, lease_grace=120, force=False):
    return _safety.fence_cidrs(failed_node, _list(nodes, 'nodes'), _list(leases, 'leases'), int(lease_grace),
                               bool(force))


def failover_release_plan(volumes, failed_node, pods=None, fence_method='blocklist', images=None, missing=None,
                          fence=None, watchers_after=None, fenced_cidrs=None, networkfence_results=None,
                          out_of_service_taint=_safety.AUTO, waiting=None):
    # The NetworkFence is in place when a networkfence task ran (check mode: would run) and none failed.
    ran = [r for r in _list(networkfence_results, 'networkfence_results') if isinstance(r, dict) and not r.get('skipped')]
    networkfence_ok = bool(ran) and not any(r.get('failed') for r in ran)
    return _safety.release_plan(failed_node, _list(volumes, 'volumes'), _list(pods, 'pods'), fence_method,
                                _list(images, 'images'), _list(missing, 'missing'), fence or {},
                                None if watchers_after is None else _list(watchers_after, 'watchers_after'),
                                _list(fenced_cidrs, 'fenced_cidrs'), bool(networkfence_ok),
                                _auto_or_bool(out_of_service_taint, 'out_of_service_taint'), _list(waiting, 'waiting'))


def node_volume_report(pods, node, pvcs=None, pvs=None, attachments=None):
    """Every volume of `node` (or of each node of a list) and what volfence.csi did for it
    (node_recover's report), each with its `node`."""
    return [dict(line, node=name) for name in _safety.failed_set(node)
            for line in _safety.node_volumes(name, _safety.failover_volumes(
                name, _list(pods, 'pods'), _list(pvcs, 'pvcs'), _list(pvs, 'pvs'), _list(attachments, 'attachments')),
                'recover')]


def failover_marker(node, blocklisted=None, networkfences=None, fenced_at=None):
    return _safety.failover_marker(node, _list(blocklisted, 'blocklisted'), _list(networkfences, 'networkfences'),
                                   fenced_at)


def failover_markers(nodes, failed_nodes, blocklisted_by_node=None, networkfences=None, fenced_at=None,
                     driver_fences_by_node=None):
    return _safety.failover_markers(_list(nodes, 'nodes'), failed_nodes, blocklisted_by_node or {},
                                    _list(networkfences, 'networkfences'), fenced_at, driver_fences_by_node or {})


def failover_driver_fences(entries, failed_nodes, nodes):
    """entries: ceph_blocklist_info entries; {node: [entry]} of the driver's own fences at each failed node."""
    return _safety.driver_fences(_list(entries, 'entries'), failed_nodes, _list(nodes, 'nodes'))


def failover_networkfence_plan(existing_results, failed_nodes, cidrs_by_node=None):
    """existing_results: the results of networkfence_info looped over the failed nodes."""
    existing = dict((r.get('item'), r.get('fences') or []) for r in _list(existing_results, 'existing_results')
                    if isinstance(r, dict) and not r.get('skipped'))
    return _safety.networkfence_plan(failed_nodes, existing, cidrs_by_node or {})


def failover_record(node, report=None):
    return _safety.read_marker(node, report)


def recovery_plan(nodes, node, entries=None, fences=None, marker=None, leases=None, lease_fresh=60, force=False):
    return _safety.recovery_plan(node, _list(nodes, 'nodes'), _list(entries, 'entries'), _list(fences, 'fences'),
                                 marker, _list(leases, 'leases'), int(lease_fresh), bool(force))


def recovery_plans(nodes, names, entries=None, fence_results=None, records=None, leases=None, lease_fresh=60,
                   force=False):
    """fence_results: networkfence_info results (a dict with `fences`, or a loop's `results`)."""
    fences = []
    for result in _list(fence_results, 'fence_results'):
        if isinstance(result, dict):
            fences.extend(result.get('fences') or [])
    return _safety.recovery_plans(names, _list(nodes, 'nodes'), _list(entries, 'entries'), fences, records or {},
                                  _list(leases, 'leases'), int(lease_fresh), bool(force))


def failover_records(nodes, names, report=None):
    """{node: what its failover recorded} (read_marker for each named node)."""
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in _list(nodes, 'nodes') if isinstance(n, dict))
    return dict((name, _safety.read_marker(by_name.get(name) or dict(metadata=dict(name=name)), report))
                for name in _safety.failed_set(names))


def recover_node_states(nodes, names):
    return _safety.node_states(_list(nodes, 'nodes'), names)


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


def lock_break_plan(locks, pod_node, nodes, leases=None, lease_grace=120, force=False):
    """locks: rbd_lock `locks`, each with `image`; or the `results` of rbd_lock looped over image specs."""
    return _safety.lock_plan(_image_locks(locks), pod_node, _list(nodes, 'nodes'), _list(leases, 'leases'),
                             int(lease_grace), bool(force))


def pod_claims(pod):
    """namespace/claim of each claim a pod uses (persistentVolumeClaim and generic ephemeral)."""
    namespace = ((pod or {}).get('metadata') or {}).get('namespace')
    return ['%s/%s' % (namespace, claim) for claim in _safety.pod_claims(pod)]


def pod_restart_plan(pods, affected_uids, restart_unowned=False):
    return _safety.restart_plan(_list(pods, 'pods'), _list(affected_uids, 'affected_uids'), bool(restart_unowned))


def running_replacements(pods, pod):
    return _safety.running_replacements(_list(pods, 'pods'), pod or {})


def stuck_pod_restart(pod, restart_pod=True, released=None):
    """released: what the run released for the pod (a list, or a bool); any makes a restart worth it."""
    return _safety.stuck_pod_restart(pod or {}, boolean(restart_pod, strict=False), bool(released))


def attachment_cleanup_plan(attachments, pod_node):
    return _volumeattachment.cleanup_plan(_list(attachments, 'attachments'), pod_node or '')


def failover_remaining_watchers(images, fenced):
    return _safety.remaining(images, fenced)


class FilterModule(object):
    def filters(self):
        return {
            'failover_preflight': failover_preflight,
            'attachment_cleanup_plan': attachment_cleanup_plan,
            'failover_volumes': failover_volumes,
            'failover_fence_plan': failover_fence_plan,
            'failover_fence_cidrs': failover_fence_cidrs,
            'failover_markers': failover_markers,
            'failover_networkfence_plan': failover_networkfence_plan,
            'failover_release_plan': failover_release_plan,
            'node_volume_report': node_volume_report,
            'failover_marker': failover_marker,
            'failover_record': failover_record,
            'failover_driver_fences': failover_driver_fences,
            'recovery_plan': recovery_plan,
            'recovery_plans': recovery_plans,
            'failover_records': failover_records,
            'recover_node_states': recover_node_states,
            'lock_break_plan': lock_break_plan,
            'failover_remaining_watchers': failover_remaining_watchers,
            'pod_claims': pod_claims,
            'pod_restart_plan': pod_restart_plan,
            'running_replacements': running_replacements,
            'stuck_pod_restart': stuck_pod_restart,
        }

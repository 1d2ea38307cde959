# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What node_failover and node_recover carry from one runbook step to the next, and their reports: plain
reshaping of the steps' results (the decisions are in plugins/filter/safety.py), in Python so that the
playbooks read like their headers and a step that never ran (an earlier one failed) is reported, not a
template error."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter import safety as _safety
from ansible_collections.volfence.csi.plugins.module_utils._incident_events import (
    _dict, _items, failover_events, recover_events)

FENCE_METHODS = ('blocklist', 'networkfence')
# The Ceph modules' connection options, and the inventory variables that hold them (doc fragment volfence.csi.ceph).
CEPH_SETTINGS = (('conf', 'volfence_ceph_conf'), ('keyring', 'volfence_ceph_keyring'), ('user', 'volfence_ceph_user'),
                 ('backend', 'volfence_ceph_backend'), ('command_prefix', 'volfence_ceph_command_prefix'))


def _failed(result):
    return bool(_dict(result).get('failed'))


def _ran(result):
    result = _dict(result)
    return bool(result) and not result.get('skipped')


def _names(items):
    return [item.get('name') for item in _items(items) if isinstance(item, Mapping)]


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None).isoformat() + 'Z'


def failover_fence_outcome(read, *, fence_method, plan=None, networkfences=None, networkfence_result=None,
                           watchers_after_result=None):
    """What node_failover's fence step did, in one shape for both fence methods (the record, the release
    and the report read it). read: the Ceph call's result, failed_nodes_fence's (blocklist: it holds the
    plan, the actions and the watchers after) or rbd_watchers_info's read before the NetworkFence;
    plan, networkfences: the fence plan and failover_networkfence_plan's fences (networkfence);
    networkfence_result, watchers_after_result: the results of the networkfence call and of the read
    that confirmed the fenced clients gone (networkfence; skipped in check mode); a result not there yet (the
    record is written before the NetworkFence is set) or skipped adds nothing."""
    if fence_method not in FENCE_METHODS:
        raise AnsibleFilterError('failover_fence_outcome: fence_method must be one of %s, got %r'
                                 % (', '.join(FENCE_METHODS), fence_method))
    read = _dict(read)
    if fence_method == 'blocklist':
        plan = _dict(read.get('plan'))
        fences = []
        results = []
        watchers_after = _items(read.get('watchers_after'))
        fenced = _items(plan.get('fence'))
    else:
        plan = _dict(plan)
        fences = [f for f in _items(networkfences) if isinstance(f, Mapping)]
        # the NetworkFence is in place when its call ran (check mode: would run) and did not fail
        results = [networkfence_result] if _ran(networkfence_result) else []
        watchers_after = _items(_dict(watchers_after_result).get('images'))
        fenced = _names(fences)
    return dict(
        fence_method=fence_method,
        watchers=_items(read.get('images')),
        missing=_items(read.get('missing')),
        plan=plan,
        fenced=fenced,
        # what each node's record lists as blocklisted for it; a NetworkFence is recorded by its name
        blocklisted_by_node=_dict(plan.get('by_node')) if fence_method == 'blocklist' else {},
        actions=_items(read.get('actions')),
        passed=_items(read.get('passed')),
        watchers_after=watchers_after,
        networkfences=fences,
        fenced_cidrs=[cidr for fence in fences for cidr in _items(fence.get('cidrs'))],
        networkfence_results=results,
    )


def failover_record_plan(entries, *, failed_nodes, nodes, blocklisted_by_node=None, networkfences=None, fenced_at=None):
    """What each failed node's record (annotation volfence.csi/failover) holds: {driver_fences, markers}.
    entries: ceph_blocklist_info's, read once the failover fenced (blocklist) or before it fences
    (networkfence); driver_fences: the driver's own fences at each node (failover_driver_fences);
    markers: failover_markers of what is fenced for each node (blocklisted_by_node: the blocklist plan's
    by_node; networkfences: failover_networkfence_plan's fences) and of those driver fences."""
    driver_fences = _safety.failover_driver_fences(entries, failed_nodes=failed_nodes, nodes=nodes)
    markers = _safety.failover_markers(nodes, failed_nodes=failed_nodes, blocklisted_by_node=blocklisted_by_node,
                                       networkfences=networkfences, fenced_at=fenced_at,
                                       driver_fences_by_node=driver_fences)
    return dict(driver_fences=driver_fences, markers=markers)


def _failed_step_line(failed_step):
    """The failed_step filter's own sentence (report.py), so that the report and the failure say it alike."""
    step = _dict(failed_step)
    return step.get('line') or '%s failed on %s (%s)' % (step.get('step'), step.get('host'), step.get('reason'))


def _report_head(generated, check_mode, failed_step, key, names):
    """What both reports begin with: when, whether a check run, the step that stopped the run, and the
    nodes: `key` (node, failed_node) is the one node of a single-node run, `key`s all of them."""
    return dict({key: names[0] if len(names) == 1 else None, key + 's': names},
                generated=generated or _utc_now(), check_mode=bool(check_mode),
                failed_step=_dict(failed_step) or None)


def failover_report(read, *, failed_nodes, fence_method, fence=None, record=None, marked=None, release=None,
                    deleted_pods=None, removed_attachments=None, tainted=None, replacements=None, failed_step=None,
                    check_mode=False, generated=None):
    """node_failover's report and its printed summary, from each step's result (read: the preflight's,
    failed_nodes state=started); a step that did not run adds nothing. Returns {report, summary,
    failed_steps}: failed_steps are the release steps that failed and the volumes not made safe, for
    which the run fails once the report is written; failed_step (tasks/record_failed_step.yml) is the
    step that stopped the run, named in the report as `failed_step`."""
    nodes = _items(failed_nodes)
    read, fence, record, marked, release = _dict(read), _dict(fence), _dict(record), _dict(marked), _dict(release)
    deleted, removed, tainted, replacements = (_dict(deleted_pods), _dict(removed_attachments), _dict(tainted),
                                               _dict(replacements))
    plan = _dict(fence.get('plan'))
    preflight = _dict(read.get('preflight'))
    out_of_service = _dict(release.get('out_of_service'))
    failed_steps = (([deleted.get('msg')] if _failed(deleted) else [])
                    + ([removed.get('msg')] if _failed(removed) else [])
                    + _items(release.get('waiting_unsafe'))
                    + _items(release.get('kept_unsafe'))
                    + ([replacements.get('msg')] if _failed(replacements) else []))
    taint_added = _items(marked.get('taint_changed_nodes')) + _items(tainted.get('taint_changed_nodes'))
    tainted_nodes = _items(marked.get('tainted_nodes')) + _items(tainted.get('tainted_nodes'))
    deleted_names = _names(deleted.get('deleted'))
    fence_names = _names(fence.get('networkfences'))
    driver_fences = _dict(record.get('driver_fences'))
    volumes = _items(release.get('volumes'))
    waiting = _items(release.get('waiting'))
    report = _report_head(generated, check_mode, failed_step, 'failed_node', nodes)
    # deliberately repeated: one report field a line, each read from its step's result (alike in shape only)
    report.update(
        preflight=preflight,
        out_of_service_taint=len(tainted_nodes) > 0,
        out_of_service=out_of_service,
        out_of_service_taint_added=taint_added,
        other_remediators=_dict(read.get('other_remediators')),
        fence_method=fence_method,
        images=_items(read.get('images')),
        watchers_before=_items(fence.get('watchers')),
        images_missing=_items(fence.get('missing')),
        fence_plan=plan,
        blocklist_actions=_items(fence.get('actions')),
        watchers_passed=_items(fence.get('passed')),
        networkfences=fence_names,
        driver_fences=driver_fences,
        marker_recorded=len(_items(marked.get('recorded_nodes'))) > 0,
        markers=_dict(record.get('markers')),
        volumes=volumes,
        volumes_not_rbd=_items(release.get('not_rbd')),
        pods_force_deleted=deleted_names,
        pods_absent=_items(deleted.get('absent')),
        pods_failed=_items(deleted.get('failures')),
        pods_kept=_items(release.get('kept_pods')),
        volumeattachments_removed=_items(removed.get('deleted')),
        volumeattachments_failed=(removed.get('msg') or '') if _failed(removed) else '',
        failed_steps=failed_steps,
        volumeattachments_kept=_items(release.get('kept_attachments')),
        claims=_items(release.get('wait_claims')),
        waiting=waiting,
        replacements_running=_items(replacements.get('running')),
    )
    stopped = ['STOPPED: ' + _failed_step_line(failed_step)] if failed_step else []
    outcome = '; '.join(stopped + (['FAILED, re-run to finish: ' + '; '.join(str(line) for line in failed_steps)]
                                   if failed_steps else [])) or 'every release step done'
    summary = [
        ('CHECK MODE: nothing was changed. ' if check_mode else '') + '; '.join(_items(preflight.get('lines'))),
        'fenced (%s, I1): %s' % (fence_method, _items(plan.get('fence')) if fence_method == 'blocklist' else fence_names),
        'watchers kept: %s' % (_items(plan.get('kept')),),
        "already fenced by the driver's own fencing on detach (ceph-csi --enable-fencing), recorded for node_recover: "
        '%s' % (driver_fences,),
        "other remediators' marks (left alone): %s" % (report['other_remediators'],),
        'out-of-service taint %s (%s); added by this run on: %s' % (
            'wanted' if out_of_service.get('taint') else 'not wanted', out_of_service.get('reason'), taint_added),
        'volumes, what was done for each and why (I6): %s' % ([v.get('line') for v in volumes],),
        'pods waiting elsewhere on what the nodes held (I6): %s' % ([w.get('line') for w in waiting],),
        'pods force-deleted (I6): %s; already gone: %s; kept: %s' % (
            deleted_names, _names(deleted.get('absent')), report['pods_kept']),
        outcome,
        'VolumeAttachments removed (I6): %s; kept: %s' % (
            _items(release.get('remove_attachments')), report['volumeattachments_kept']),
    ]
    failure = '; '.join(stopped + [str(line) for line in failed_steps])
    created = [f for f in _items(fence.get('networkfences')) if isinstance(f, Mapping) and f.get('create')] \
        if any(_dict(r).get('changed') for r in _items(fence.get('networkfence_results'))) else []
    events = failover_events(fence_method=fence_method, fence_plan=plan, fence_actions=fence.get('actions'),
                             networkfences_created=created, taint_added=taint_added,
                             deleted_pods=deleted.get('deleted'), removed_attachments=removed.get('deleted'),
                             replacements_running=replacements.get('running'), kept_pods=release.get('kept_pods'),
                             volumes=release.get('volumes'), check_mode=check_mode)
    return dict(report=report, summary=summary, failed_steps=failed_steps, failure=failure, events=events)


def recover_report(read, *, nodes, records=None, plan=None, removed=None, marks=None, uncordon=None,
                   volume_read=None, failed_step=None, check_mode=False, generated=None, unfenced=None):
    """node_recover's report and its printed summary, from each step's result (read: failed_nodes_info's
    read of the nodes; plan: recovery_plans'; volume_read: the nodes' volumes read for the report); a step
    that did not run adds nothing. Returns {report, summary, failure}: failure (empty when none) says why
    the run fails once the report is written - a step that failed (failed_step, named in the report), or
    nodes held because they are not proven restarted (I3)."""
    names = _items(nodes)
    read, plan, removed, marks = _dict(read), _dict(plan), _dict(removed), _dict(marks)
    records, uncordon, volume_read = _dict(records), _dict(uncordon), _dict(volume_read)
    objects = _dict(volume_read.get('objects'))
    if 'volumes' in volume_read:
        volumes = _safety.node_volume_report(_items(volume_read.get('pods')), nodes=names,
                                             pvcs=_items(objects.get('pvcs')), pvs=_items(objects.get('pvs')),
                                             attachments=_items(objects.get('volumeattachments')))
        volume_errors = []
    else:  # the read failed (its message says why) or did not run
        volumes = []
        volume_errors = [volume_read.get('msg') or ('not read: an earlier step failed' if failed_step else 'no answer')]
    held = _items(plan.get('held')) if not isinstance(plan.get('held'), Mapping) else list(plan['held'])
    taint_changed = _items(marks.get('taint_changed_nodes'))
    lifted = plan.get('lifted') if plan.get('lifted') is not None else []
    report = _report_head(generated, check_mode, failed_step, 'node', names)
    report.update(
        evidence=plan.get('evidence'),
        record=records.get(names[0]) if len(names) == 1 else records,
        unfenced=_items(plan.get('unfence')),
        blocklist_removed=_items(plan.get('remove_addresses')) + _items(plan.get('remove_cidrs')),
        blocklist_lifted=lifted,
        blocklist_actions=_items(removed.get('actions')),
        kept=_items(plan.get('kept')),
        recovered=_items(plan.get('recovered')),
        held=plan.get('held') if plan.get('held') is not None else [],
        taint_removed=len(taint_changed) > 0,
        uncordoned=bool(uncordon.get('changed')),
        record_removed=len(_items(marks.get('record_changed_nodes'))) > 0,
        others_taint_kept=_items(marks.get('others_taint_nodes')),
        other_remediators=_dict(read.get('other_remediators')),
        volumes=volumes,
        volumes_not_read=volume_errors,
    )
    summary = [
        '%snode %s: %s' % ('CHECK MODE: nothing was changed. ' if check_mode else '', ', '.join(names),
                           plan.get('evidence')),
        'fences set Unfenced (I2): %s' % (report['unfenced'],),
        'blocklist entries %s (I2), with who added each (failover: node_failover; ceph-csi: its fence on detach under '
        'the out-of-service taint): %s' % ('to remove' if check_mode else 'removed', lifted),
        'kept, and why: %s' % (report['kept'],),
        'recovered: %s; held, not proven restarted (I3), their fences, taint and record kept: %s' % (
            report['recovered'], report['held']),
        'out-of-service taint removed: %s, uncordoned: %s' % (report['taint_removed'], report['uncordoned']),
        "left to whoever set it (not volfence.csi): out-of-service taint on %s; other remediators' marks: %s" % (
            report['others_taint_kept'], report['other_remediators']),
        'volumes of %s: %s%s' % (', '.join(names), [v.get('line') for v in volumes],
                                 ' (could not read: %s)' % '; '.join(str(e) for e in volume_errors)
                                 if volume_errors else ''),
    ]
    failure = []
    if failed_step:
        failure.append('STOPPED: ' + _failed_step_line(failed_step))
        summary.insert(0, failure[0])
    if held:
        failure.append('refusing to unfence %s: %s. If its old clients still run, lifting the fence lets them write '
                       'again. Power-cycle it first, or re-run with -e force=true.'
                       % (', '.join(str(h) for h in held), plan.get('held_reason')))
    events = recover_events(recovered=plan.get('recovered'), lifted=lifted, removed=removed, unfenced=unfenced,
                            taint_removed=taint_changed, check_mode=check_mode)
    return dict(report=report, summary=summary, failure=' '.join(failure), events=events)


def ceph_connection(host_vars):
    """The Ceph connection settings of a host (its volfence_ceph_conf, _keyring, _user, _backend and
    _command_prefix, those it has) as the Ceph modules' options: the module_defaults of a play that runs its
    Ceph calls on the Ceph admin host (delegate_to), whose settings the inventory keeps on that host."""
    if not isinstance(host_vars, Mapping):
        raise AnsibleFilterError('ceph_connection: expects a host\'s variables (hostvars[host]), got %s'
                                 % type(host_vars).__name__)
    return dict((option, host_vars[name]) for option, name in CEPH_SETTINGS if name in host_vars)


class FilterModule(object):
    def filters(self):
        return {
            'failover_fence_outcome': failover_fence_outcome,
            'failover_record_plan': failover_record_plan,
            'failover_report': failover_report,
            'ceph_connection': ceph_connection,
            'recover_report': recover_report,
        }

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a playbook's report is made of: each targeted host's outcome of a step (host_results), the
step that failed on the Ceph or Kubernetes host (failed_step), and the report as the job's artifact
(set_stats), what an AWX job keeps after its execution environment is gone."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.module_utils import _incident_events

# AWX keeps artifacts in its database and shows them in the job's details: the whole report goes
# in when its JSON is at most this many characters, the summary always.
DEFAULT_LIMIT = 100000


def job_artifact(report, summary=None, report_path=None, limit=DEFAULT_LIMIT):
    if not isinstance(report, dict):
        raise AnsibleFilterError('job_artifact: the report must be a mapping, got %s' % type(report).__name__)
    lines = [summary] if isinstance(summary, str) else list(summary or [])
    artifact = dict(summary=lines, report_path=report_path)
    text = json.dumps(report, sort_keys=True, default=str)
    if len(text) <= int(limit):
        artifact.update(report=json.loads(text), truncated=False)
    else:
        artifact.update(truncated=True, report_size=len(text))
    return artifact


def _reason(result):
    """Why a host has no usable result of the step, or None when it has one."""
    if result is None:
        return 'no result: the run did not reach this host (an earlier failure, or not in the play)'
    if not isinstance(result, Mapping):
        return 'unexpected result: %r' % (result,)
    if result.get('unreachable'):
        return 'unreachable: %s' % (result.get('msg') or 'no message')
    if result.get('failed'):
        return 'failed: %s' % (result.get('msg') or 'no message')
    if result.get('skipped'):
        return 'skipped: %s' % (result.get('skip_reason') or 'the step did not run')
    return None


def host_results(hostvars, hosts, register):
    """Each host's registered result of one step, sorted into the hosts where it worked and those
    where it did not (failed, unreachable, skipped, never reached), so that a play over the hosts'
    results reads only the first and the report names the others."""
    if not isinstance(register, str) or not register:
        raise AnsibleFilterError('host_results: register must be the name of a registered variable, got %r'
                                 % (register,))
    if isinstance(hosts, str) or not isinstance(hosts, Sequence):
        raise AnsibleFilterError('host_results: hosts must be a list of inventory host names, got %s'
                                 % type(hosts).__name__)
    done, failed = {}, {}
    for host in hosts:
        host_vars = hostvars[host] if host in hostvars else {}
        result = host_vars.get(register) if register in host_vars else None
        reason = _reason(result)
        if reason is None:
            done[host] = result
        else:
            failed[host] = reason
    return dict(done=done, failed=failed)


def failed_step(result, *, host, step, task=None, reached=None):
    """The step (play) that failed on its host, the task and why: set in the play's rescue, it makes
    the later steps skip theirs, and the report names it (`line`, the same words everywhere). An
    unreachable host is told by the result of the step's first task, which reaches the host with
    unreachable results ignored (an unreachable host never enters a rescue); else the failed task's
    result says why. A task delegated to another host failed there: that host is named."""
    if not isinstance(host, str) or not host:
        raise AnsibleFilterError('failed_step: host must be an inventory host name, got %r' % (host,))
    if isinstance(reached, Mapping) and reached.get('unreachable'):
        reason = _reason(reached)
    else:
        reason = _reason(result) or 'failed: no message'
    if isinstance(task, Mapping):
        host = task.get('delegate_to') or host
        task = task.get('name') or task.get('action')
    step = step or None
    task = task or None
    line = '%s failed on %s%s (%s); nothing was done after it' % (
        step or 'a step', host, " at task '%s'" % task if task else '', reason)
    return dict(host=host, step=step, task=task, reason=reason, line=line)


def cleanup_events(report, *, lock_results=None, volumes=None):
    """The Events of rbd_lock_cleanup and volumeattachment_cleanup (module_utils/_incident_events.py)."""
    if not isinstance(report, Mapping):
        raise AnsibleFilterError('cleanup_events: the input must be the playbook\'s report (a mapping), got %r'
                                 % (report,))
    return _incident_events.cleanup_events(dict(report), lock_results=lock_results, volumes=volumes)


def fuse_events(unmounted, *, pods=None, deleted=None, check_mode=False):
    """The Events of fuse_mount_recovery (module_utils/_incident_events.py)."""
    return _incident_events.fuse_events(unmounted=unmounted, pods=pods, deleted=deleted, check_mode=check_mode)


class FilterModule(object):
    def filters(self):
        return {'job_artifact': job_artifact, 'host_results': host_results, 'failed_step': failed_step,
                'cleanup_events': cleanup_events, 'fuse_events': fuse_events}

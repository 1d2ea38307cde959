# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the Kubernetes Events the collection posts on the objects it acts on.

At 3 a.m. people read `kubectl describe` and `kubectl get events`, not a report on the Ansible
controller: every write made on behalf of an incident is told there, as an events.k8s.io/v1 Event on the
object it concerns, with a stable reason (ACTIONS; docs/events.md lists them), reportingController
volfence.csi, and a note naming the run's report and the invariant of docs/safety.md that allowed it.
An Event that cannot be posted is a warning, never a failed recovery (post_events)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError

REPORTING_CONTROLLER = 'volfence.csi'

# what was done -> (reason, the Event's type, its action, the kind of object it is posted on)
ACTIONS = {
    'node_fenced': ('NodeFenced', 'Normal', 'Fence', 'Node'),
    'node_unfenced': ('NodeUnfenced', 'Normal', 'Unfence', 'Node'),
    'out_of_service_taint_added': ('OutOfServiceTaintAdded', 'Normal', 'Taint', 'Node'),
    'out_of_service_taint_removed': ('OutOfServiceTaintRemoved', 'Normal', 'Untaint', 'Node'),
    'pod_force_deleted': ('PodForceDeleted', 'Normal', 'ForceDelete', 'Pod'),
    'pod_restarted': ('PodRestarted', 'Normal', 'Delete', 'Pod'),
    'volumeattachment_deleted': ('VolumeAttachmentDeleted', 'Normal', 'Delete', 'VolumeAttachment'),
    'replacement_running': ('ReplacementRunning', 'Normal', 'Observe', 'PersistentVolumeClaim'),
    # the same, told on the new pod: `kubectl describe` of it shows which pod it replaces (its old uid)
    'replacement_pod_running': ('ReplacementRunning', 'Normal', 'Observe', 'Pod'),
    'rbd_lock_broken': ('RbdLockBroken', 'Normal', 'BreakLock', 'PersistentVolume'),
    'dead_mount_recovered': ('DeadMountRecovered', 'Normal', 'Recover', 'Pod'),
    'failover_refused': ('FailoverRefused', 'Warning', 'Refuse', 'Pod'),
}
API_VERSIONS = {'Node': 'v1', 'Pod': 'v1', 'PersistentVolumeClaim': 'v1', 'PersistentVolume': 'v1',
                'VolumeAttachment': 'storage.k8s.io/v1'}
PATHS = {'Node': '/api/v1/nodes/%(name)s', 'PersistentVolume': '/api/v1/persistentvolumes/%(name)s',
         'VolumeAttachment': '/apis/storage.k8s.io/v1/volumeattachments/%(name)s',
         'Pod': '/api/v1/namespaces/%(namespace)s/pods/%(name)s',
         'PersistentVolumeClaim': '/api/v1/namespaces/%(namespace)s/persistentvolumeclaims/%(name)s'}
NOTE_LIMIT = 1024   # the API server's (pkg/apis/core/validation/events.go)


def micro_time(moment):
    """A datetime as the API server reads a MicroTime: UTC, six fraction digits (RFC3339Micro). Not
    isoformat(), which drops a zero fraction."""
    return moment.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def check_event(entry):
    """One entry of the module's `events`, checked: ValueError names what is wrong."""
    what = entry.get('what')
    if what not in ACTIONS:
        raise ValueError('events: what=%r is not one of %s' % (what, ', '.join(sorted(ACTIONS))))
    kind = ACTIONS[what][3]
    regarding = dict(entry.get('regarding') or {})
    if not regarding.get('name'):
        raise ValueError('events: %s needs regarding.name (the %s)' % (what, kind))
    if regarding.get('kind') not in (None, kind):
        raise ValueError('events: %s is told on a %s, not on a %s' % (what, kind, regarding['kind']))
    namespaced = '%(namespace)s' in PATHS[kind]
    if namespaced and not regarding.get('namespace'):
        raise ValueError('events: %s needs regarding.namespace (the %s\'s)' % (what, kind))
    return dict(entry, regarding=regarding)


def incident_event(*, what, regarding, note, now, instance, report=None, invariant=None):
    """The events.k8s.io/v1 Event telling that `what` (an ACTIONS key) was done to `regarding` ({name,
    namespace, uid}: the object), with `note`, the run's `report` and the `invariant` that allowed it."""
    reason, event_type, action, kind = ACTIONS[what]
    ref = dict(apiVersion=API_VERSIONS[kind], kind=kind, name=regarding['name'])
    for field in ('namespace', 'uid'):
        if regarding.get(field) and (field != 'namespace' or '%(namespace)s' in PATHS[kind]):
            ref[field] = regarding[field]
    tail = '; '.join(part for part in (
        'allowed by %s (docs/safety.md)' % invariant if invariant else '', 'report: %s' % report if report else '') if part)
    text = '%s (%s)' % (note, tail) if tail else note
    if len(text) > NOTE_LIMIT:
        text = text[:NOTE_LIMIT - 3] + '...'
    return {
        'apiVersion': 'events.k8s.io/v1', 'kind': 'Event',
        # the Event of a cluster-scoped object lives in default, as the API server wants it
        'metadata': {'generateName': '%s.' % regarding['name'][:200], 'namespace': ref.get('namespace') or 'default',
                     'labels': {'app.kubernetes.io/managed-by': REPORTING_CONTROLLER}},
        'eventTime': micro_time(now), 'type': event_type, 'reason': reason, 'action': action,
        'reportingController': REPORTING_CONTROLLER, 'reportingInstance': instance[:128],
        'regarding': ref, 'note': text,
    }


def post_events(api, events, *, now, instance, report=None, check_mode=False):
    """Post one Event per entry of `events` (checked with check_event). The object's uid is read when not
    given (`kubectl describe` finds Events by it); an object already gone gets its Event without one. Returns
    (posted, warnings): posted lists what was (in check mode: would be) posted; an Event that cannot be
    posted is a warning, never an error: the recovery it tells of is done."""
    posted, warnings = [], []
    for entry in events:
        regarding = dict(entry['regarding'])
        kind = ACTIONS[entry['what']][3]
        try:
            if not regarding.get('uid') and not check_mode:
                found = api.get(PATHS[kind] % dict(regarding, namespace=regarding.get('namespace') or ''),
                                missing_ok=True)
                if found:
                    regarding['uid'] = (found.get('metadata') or {}).get('uid')
            body = incident_event(what=entry['what'], regarding=regarding, note=entry.get('note') or '',
                                  invariant=entry.get('invariant'), report=report, now=now, instance=instance)
            if not check_mode:
                api.create('/apis/events.k8s.io/v1/namespaces/%s/events' % body['metadata']['namespace'], body,
                           what=('Event', body['reason']))
            posted.append(dict(reason=body['reason'], type=body['type'], regarding=body['regarding'],
                               note=body['note']))
        except K8sError as exc:
            warnings.append('the %s Event on %s %s could not be posted (the action it tells of is done): %s'
                            % (ACTIONS[entry['what']][0], kind, regarding.get('name'), exc))
    return posted, warnings


# The collection's own Events, as the API server selects them: core/v1 stores reportingController as
# reportingComponent, a field selector of Events (pkg/apis/core/v1/conversion.go).
OWN_EVENTS = 'reportingComponent=%s' % REPORTING_CONTROLLER
RECENT_LIMIT = 20


def _when(event):
    series = event.get('series') or {}
    return (series.get('lastObservedTime') or event.get('eventTime') or event.get('lastTimestamp')
            or event.get('firstTimestamp') or (event.get('metadata') or {}).get('creationTimestamp') or '')


def _newest_first(event):
    """The Events of one run share their eventTime: then the order they were written in (etcd's revision,
    the resourceVersion, which the API server gives as a number)."""
    version = str((event.get('metadata') or {}).get('resourceVersion') or '')
    return _when(event), int(version) if version.isdigit() else 0


def recent_own_events(events, limit=RECENT_LIMIT):
    """The newest `limit` of the collection's own Events (core/v1 objects, as a list returns them), newest
    first, each as {time, type, reason, object ('Kind namespace/name'), note, line}: what diagnose shows
    of what earlier runs did. The API server keeps Events for an hour by default (--event-ttl)."""
    out = []
    for event in sorted((e for e in events or [] if isinstance(e, dict)
                         and e.get('reportingComponent') == REPORTING_CONTROLLER), key=_newest_first, reverse=True)[:limit]:
        obj = event.get('involvedObject') or {}
        ref = '/'.join(part for part in (obj.get('namespace'), obj.get('name')) if part)
        entry = dict(time=_when(event), type=event.get('type'), reason=event.get('reason'),
                     object='%s %s' % (obj.get('kind'), ref), note=event.get('message') or '')
        entry['line'] = '%(time)s %(reason)s on %(object)s: %(note)s' % entry
        out.append(entry)
    return out

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which storage incidents a stream of Kubernetes objects shows: the decisions behind the
volfence.csi.storage_incidents event source (Event-Driven Ansible).

Private to volfence.csi. Pure: IncidentTracker holds the objects the source watches (what a list
then watch of each kind gives) and, asked at a moment, returns the incidents that are new at that
moment. Every rule is the one the playbooks apply, so the source never tells a rulebook something
the playbook it starts would refuse:
  - node-lost: failover_preflight (I1), the rule node_failover refuses a live node with;
  - the four stuck-pod incidents: diagnose's stuck_pods and classify_pod;
  - node-back: a node with a failover record (read_marker) and another bootID, which
    node_recover lifts (I3).
An incident has a stable id, derived from the objects (not from when it was seen), so a relist
after an expired watch, or a restarted source given the ids it already emitted, does not emit it
twice.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    age_seconds,
    node_ready,
    node_ready_condition,
    pod_claim_refs,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import (
    FUSE_DEAD,
    PLAYBOOKS,
    classify_pod,
    stuck_pods,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import MEDIK8S_EXCLUDE_LABEL
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import read_marker
from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import failover_preflight

# What the source watches: kind -> (API path of the list, field selector). Leases only in
# kube-node-lease (the nodes' heartbeats); Events only of Pods.
WATCHED = {
    'Node': ('/api/v1/nodes', None),
    'Lease': ('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', None),
    'Pod': ('/api/v1/pods', None),
    'Event': ('/api/v1/events', 'involvedObject.kind=Pod'),
    'PersistentVolumeClaim': ('/api/v1/persistentvolumeclaims', None),
    'PersistentVolume': ('/api/v1/persistentvolumes', None),
    'VolumeAttachment': ('/apis/storage.k8s.io/v1/volumeattachments', None),
}

# The Events that classify a stuck pod (diagnose reads their messages): these reasons, and a dead FUSE
# mount's, whose kubelet events are Unhealthy (the liveness probe) and Failed (the container spec).
EVENT_REASONS = ('FailedMount', 'FailedAttachVolume', 'FailedMapVolume')

TITLES = {
    'node-lost': 'node not Ready and its Lease not renewed: provably down as node_failover requires (I1)',
    'volumeattachment-detach-error': 'VolumeAttachment being deleted, its detach failing',
    'node-back': 'a failed-over node is back with a new bootID: its fences can be lifted (I3)',
}
DEFAULT_EXCLUDE_LABELS = ('volfence.csi/no-auto-failover',)


def _utc(now):
    if now is None:
        return datetime.datetime.now(datetime.timezone.utc)
    if isinstance(now, (int, float)):
        return datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
    return now


def _key(obj):
    meta = (obj or {}).get('metadata') or {}
    return (meta.get('namespace') or '', meta.get('name') or '')


def _pod_ref(pod):
    return '%s/%s' % (pod['metadata'].get('namespace'), pod['metadata'].get('name'))


# The bounds of the tracker's whole-number settings (the event source's DOCUMENTATION states them).
SETTING_BOUNDS = dict(stuck_after=(0, 86400), node_lost_after=(0, 86400), max_failovers=(0, 10000),
                      failover_window=(1, 7 * 86400))


def check_settings(stuck_after, node_lost_after, max_failovers, failover_window, exclude_labels):
    """The source's settings, checked (ValueError names each wrong one). Returned as a dict."""
    problems = []
    values = {}
    given = dict(stuck_after=stuck_after, node_lost_after=node_lost_after, max_failovers=max_failovers,
                 failover_window=failover_window)
    for name, (low, high) in SETTING_BOUNDS.items():
        value = given[name]
        if isinstance(value, bool):
            problems.append('%s must be a whole number, not %r' % (name, value))
            continue
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError):
            problems.append('%s must be a whole number, not %r' % (name, value))
            continue
        if number != value and not (isinstance(value, str) and value.strip().lstrip('+').isdigit()):
            problems.append('%s must be a whole number, not %r' % (name, value))
        elif not low <= number <= high:
            problems.append('%s must be between %d and %d, not %d' % (name, low, high, number))
        values[name] = number
    if isinstance(exclude_labels, str):
        exclude_labels = [exclude_labels]
    if not isinstance(exclude_labels, (list, tuple)) or not all(isinstance(l, str) and l for l in exclude_labels):
        problems.append('exclude_labels must be a list of label keys, not %r' % (exclude_labels,))
    else:
        values['exclude_labels'] = list(exclude_labels)
    if problems:
        raise ValueError('; '.join(problems))
    return values


class IncidentTracker(object):
    """The watched objects and the incidents already emitted.

    replace(kind, items) after a list, apply(kind, type, obj) for each watch event, then
    incidents(now) for what is new. `emitted` (ids) may be given to a new tracker to carry on
    where another stopped."""

    def __init__(self, *, stuck_after=60, node_lost_after=120, max_failovers=1, failover_window=3600,
                 exclude_labels=DEFAULT_EXCLUDE_LABELS, emitted=None, failovers=None):
        settings = check_settings(stuck_after, node_lost_after, max_failovers, failover_window, exclude_labels)
        self.stuck_after = settings['stuck_after']
        self.node_lost_after = settings['node_lost_after']
        self.max_failovers = settings['max_failovers']
        self.failover_window = settings['failover_window']
        self.exclude_labels = settings['exclude_labels']
        self.objects = dict((kind, {}) for kind in WATCHED)
        self.synced = set()
        self.emitted = set(emitted or ())
        self.failovers = list(failovers or [])   # (epoch seconds, node) of each failover let through

    # -- the watched state
    def update(self, kind, event_type, payload):
        """One update of a list-then-watch (_k8s/watch.ListWatch): RELIST with the whole list,
        BROKEN when the watch of `kind` broke (its view may be old until the next RELIST), or a
        watch event with its object."""
        if event_type == 'RELIST':
            self.replace(kind, payload)
            self.synced.add(kind)
        elif event_type == 'BROKEN':
            self.synced.discard(kind)
        else:
            self.apply(kind, event_type, payload)

    def in_sync(self):
        """Whether every kind has been listed and its watch has not broken since: only then is
        anything decided (a Lease not seen renewed because its watch broke is not a dead node)."""
        return self.synced.issuperset(WATCHED)

    def replace(self, kind, items):
        """The whole list of `kind` (a relist): objects gone from it are forgotten."""
        self.objects[kind] = dict((_key(o), o) for o in items or [] if self._wanted(kind, o))

    def apply(self, kind, event_type, obj):
        """One watch event (ADDED, MODIFIED, DELETED; BOOKMARK and ERROR change nothing)."""
        if event_type == 'DELETED':
            self.objects[kind].pop(_key(obj), None)
        elif event_type in ('ADDED', 'MODIFIED') and self._wanted(kind, obj):
            self.objects[kind][_key(obj)] = obj
        elif event_type in ('ADDED', 'MODIFIED'):
            self.objects[kind].pop(_key(obj), None)

    @staticmethod
    def _wanted(kind, obj):
        if not isinstance(obj, dict) or not (obj.get('metadata') or {}).get('name'):
            return False
        if kind == 'Event':
            return (obj.get('involvedObject') or {}).get('kind') == 'Pod' and (
                obj.get('reason') in EVENT_REASONS or FUSE_DEAD in (obj.get('message') or '').lower())
        if kind == 'Pod':
            return (obj.get('status') or {}).get('phase') not in ('Succeeded', 'Failed')
        return True

    def items(self, kind):
        return [self.objects[kind][k] for k in sorted(self.objects[kind])]

    # -- the decisions
    def incidents(self, now=None):
        """The incidents new at `now` (datetime, epoch seconds or None for the clock), each once:
        node-lost first (oldest Lease first), then stuck pods, detach errors, nodes back. None
        while a kind is not in sync (in_sync())."""
        if not self.in_sync():
            return []
        now = _utc(now)
        found = self._nodes_lost(now) + self._stuck_pods(now) + self._detach_errors(now) + self._nodes_back(now)
        new = [i for i in found if i['id'] not in self.emitted]
        for incident in new:
            self.emitted.add(incident['id'])
        return new

    def _node_pods(self, node):
        return [p for p in self.items('Pod') if (p.get('spec') or {}).get('nodeName') == node]

    def _nodes_lost(self, now):
        nodes, leases = self.items('Node'), self.items('Lease')
        renewed = dict((l['metadata']['name'], (l.get('spec') or {}).get('renewTime')) for l in leases)
        lost = []
        for node in nodes:
            name = node['metadata']['name']
            # A node without a Lease (just registered, or its heartbeat not seen yet) is never lost here:
            # only a heartbeat seen to stop is evidence.
            if node_ready(node) == 'True' or not renewed.get(name):
                continue
            preflight = failover_preflight(name, nodes, leases=leases, lease_grace=self.node_lost_after, now=now)
            if preflight['refused']:
                continue
            facts = preflight['nodes'][name]
            cond = node_ready_condition(node) or {}
            lost.append((-(facts['lease_age'] if facts['lease_age'] is not None else 0), name, node, facts, cond))
        incidents = []
        epoch = (now - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)).total_seconds()
        recent = [t for t, _n in self.failovers if epoch - t < self.failover_window]
        for _age, name, node, facts, cond in sorted(lost):
            # One outage, one id: the last renewal of its Lease does not change while the node is down,
            # and a later outage of the same node has another.
            incident_id = 'node-lost:%s:%s' % (name, renewed[name])
            if incident_id in self.emitted:
                continue
            pods = self._node_pods(name)
            allowed, why = self._failover_allowed(node, recent)
            if allowed:
                recent.append(epoch)
                self.failovers.append((epoch, name))
            incidents.append(dict(
                id=incident_id, kind='node-lost', title=TITLES['node-lost'], node=name,
                pods=sorted(_pod_ref(p) for p in pods),
                claims=sorted(set(c for p in pods for c in pod_claim_refs(p))),
                evidence=['Ready=%s since %s (%s)' % (
                    facts['ready'], cond.get('lastTransitionTime') or '?', cond.get('reason') or 'no reason given'),
                    'Lease not renewed for %s s (node_lost_after=%d)' % (facts['lease_age'], self.node_lost_after)],
                failover=dict(allowed=allowed, reason=why),
                labels=dict((node['metadata'].get('labels') or {})),
                boot_id=facts['boot_id'], addresses=facts['addresses'],
                next=dict(playbook='volfence.csi.node_failover', extra_vars=dict(failed_node=name))))
        return incidents

    def _failover_allowed(self, node, recent):
        labels = node['metadata'].get('labels') or {}
        # NodeHealthCheck's opt-out too: a node kept out of automatic remediation stays out of this one
        for label in self.exclude_labels + [MEDIK8S_EXCLUDE_LABEL]:
            if label in labels:
                return False, 'the node has the label %s: no automatic failover; a person decides' % label
        if len(recent) >= self.max_failovers:
            return False, ('%d automatic failover(s) in the last %d s already (max_failovers=%d): this node is '
                           'left to a person' % (len(recent), self.failover_window, self.max_failovers))
        return True, 'provably down (not Ready, Lease older than %d s), not excluded, within the budget of %d per %d s' % (
            self.node_lost_after, self.max_failovers, self.failover_window)

    def _stuck_pods(self, now):
        pods, events = self.items('Pod'), self.items('Event')
        stuck = stuck_pods(pods, events, threshold=self.stuck_after, now=now)
        if not stuck:
            return []
        pvcs, pvs = self.items('PersistentVolumeClaim'), self.items('PersistentVolume')
        vas, nodes = self.items('VolumeAttachment'), self.items('Node')
        incidents = []
        for pod in stuck:
            found = classify_pod(pod, events=events, pvcs=pvcs, pvs=pvs, vas=vas, nodes=nodes, now=now,
                                 threshold=self.stuck_after)
            if found['incident'] not in PLAYBOOKS:
                continue   # stuck for a reason diagnose does not know: nothing to run
            incidents.append(dict(
                id='%s:%s:%s' % (found['incident'], _pod_ref(pod), pod['metadata'].get('uid') or '-'),
                kind=found['incident'], title=found['title'], node=found['node'], pods=[_pod_ref(pod)],
                claims=pod_claim_refs(pod), evidence=found['evidence'], target=found['target'],
                age_seconds=found['age_seconds'], next=found['next']))
        return incidents

    def _detach_errors(self, now):
        incidents = []
        for va in self.items('VolumeAttachment'):
            meta, status = va['metadata'], va.get('status') or {}
            error = status.get('detachError') or {}
            if not meta.get('deletionTimestamp') or not error:
                continue
            age = age_seconds(meta.get('deletionTimestamp'), now)
            if age is not None and age < self.stuck_after:
                continue
            node = (va.get('spec') or {}).get('nodeName')
            pv_name = ((va.get('spec') or {}).get('source') or {}).get('persistentVolumeName')
            claim_ref = ((self.objects['PersistentVolume'].get(('', pv_name or '')) or {}).get('spec') or {}).get(
                'claimRef') or {}
            claim = '%s/%s' % (claim_ref.get('namespace'), claim_ref.get('name')) if claim_ref.get('name') else None
            pods = [p for p in self.items('Pod') if claim and claim in pod_claim_refs(p)]
            # volumeattachment_cleanup works from the pod the attachment keeps from starting
            waiting = [p for p in pods if (p.get('spec') or {}).get('nodeName') != node] or pods
            incidents.append(dict(
                id='volumeattachment-detach-error:%s:%s' % (meta['name'], meta.get('uid') or '-'),
                kind='volumeattachment-detach-error', title=TITLES['volumeattachment-detach-error'], node=node,
                pods=sorted(_pod_ref(p) for p in pods), claims=[claim] if claim else [],
                volumeattachment=meta['name'], pv=pv_name,
                evidence=['deleted %s s ago, detach error: %s' % (age, error.get('message') or '?')],
                next=dict(playbook='volfence.csi.volumeattachment_cleanup', extra_vars=dict(
                    pod_namespace=waiting[0]['metadata'].get('namespace'),
                    pod_name=waiting[0]['metadata'].get('name'))) if waiting else None))
        return incidents

    def _nodes_back(self, now):
        incidents = []
        for node in self.items('Node'):
            marker = read_marker(node)
            if not marker or node_ready(node) != 'True':
                continue
            boot_id = ((node.get('status') or {}).get('nodeInfo') or {}).get('bootID')
            if not boot_id or boot_id == marker.get('boot_id'):
                continue
            name = node['metadata']['name']
            incidents.append(dict(
                id='node-back:%s:%s' % (name, boot_id), kind='node-back', title=TITLES['node-back'], node=name,
                pods=[], claims=[],
                evidence=['Ready with bootID %s; fenced at %s with bootID %s: %s' % (
                    boot_id, marker.get('fenced_at') or '?', marker.get('boot_id') or '?',
                    ', '.join((marker.get('blocklist') or []) + (marker.get('networkfences') or [])) or 'nothing')],
                next=dict(playbook='volfence.csi.node_recover', extra_vars=dict(node=name))))
        return incidents

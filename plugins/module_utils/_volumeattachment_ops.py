# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: VolumeAttachment operations on top of a KubeApi.

``_volumeattachment`` decides; this file reads what it needs from the API (attachments, their
PVs, nodes, the pods on those nodes, the server version) and carries out deletions safely:
a DELETE carries the uid and resourceVersion that were assessed as preconditions, so an
attachment that changed (or was re-created under the same name) meanwhile is re-read and
re-assessed instead of deleted blindly. Many attachments (``names``) are read with one LIST, deleted
at most ``workers`` at a time, and waited for with one LIST per poll; one that fails does not stop
the others. Unit tests drive it with a fake API.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import time

from ansible_collections.volfence.csi.plugins.module_utils._k8s_common import (
    RETRYABLE_STATUSES,
    K8sApiError,
    K8sConnectionError,
    K8sError,
    K8sRefused,
    resource_path,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s_objects import parse_kube_version, utcnow
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel
from ansible_collections.volfence.csi.plugins.module_utils._volumeattachment import (
    DELETE,
    REMOVE_FINALIZER,
    SKIP,
    WAIT,
    assess,
    claim_users,
    finalizers_without,
    matches,
    plan_delete,
)

VA_KIND = 'VolumeAttachment'
PV_KIND = 'PersistentVolume'

# Above this many distinct objects, one LIST is cheaper than one GET each.
_GET_EACH_LIMIT = 10
# Node names a warning lists at most.
_NODES_SHOWN = 30


def va_path(name=None):
    return resource_path('storage.k8s.io', 'v1', 'volumeattachments', name)


class VolumeAttachments(object):
    """Reads and assesses VolumeAttachments; deletes stale ones."""

    def __init__(self, api, not_ready_grace=300, now=utcnow, sleep=time.sleep, clock=time.time, workers=1):
        self.api = api
        self.workers = workers
        self.not_ready_grace = not_ready_grace
        self.now = now
        self.sleep = sleep
        self.clock = clock
        self.warnings = []
        self.git_version = None
        self.version = None
        self._pvs = {}       # name -> PV or None (missing)
        self._nodes = {}     # name -> Node or None (missing)
        self._pods = {}      # node name -> pods
        self._claim_users = {}  # node name -> claim_users() of its pods, built once per load
        self._all_vas = None  # every VolumeAttachment, when select() listed them
        self.deleted = []    # names of the attachments this run deleted (its DELETE went through)

    # -- reading
    def read_version(self):
        try:
            self.git_version = self.api.server_version().get('gitVersion')
        except K8sError as exc:
            self.warnings.append('cannot read the server version (/version): %s; whether the pre-1.24 detach name '
                                 'collision applies is unknown' % exc.msg)
            return
        self.version = parse_kube_version(self.git_version)
        if self.version is None:
            self.warnings.append('cannot parse the server version %r' % self.git_version)

    def select(self, name=None, persistent_volume=None, node=None, attacher=None, names=None):
        """The matching VolumeAttachment objects. `names`: any of these names (read one by one when
        there are few, else with one LIST)."""
        if name is not None:
            names = [name]
        if names is not None and len(set(names)) <= _GET_EACH_LIMIT:
            vas = [va for va in (self.api.get(va_path(n), what=(VA_KIND, n), missing_ok=True)
                                 for n in sorted(set(names))) if va is not None]
        else:
            vas = self.api.list(va_path(), what=(VA_KIND, None))
            self._all_vas = vas
        if names is not None:
            wanted = set(names)
            vas = [va for va in vas if (va.get('metadata') or {}).get('name') in wanted]
        return [va for va in vas if matches(va, None, persistent_volume, node, attacher)]

    def unknown_node_warning(self, node, selected):
        """The warning for a `node` selector that names nothing: no Node of that name exists and no
        VolumeAttachment (of any volume or driver) is to it. A node that is gone but still has
        attachments is the usual case of stale attachments and gets no warning, nor does an existing
        node without attachments. None when there is nothing to say."""
        if selected:
            return None
        self._load_nodes([node])
        if self._nodes.get(node) is not None:
            return None
        vas = self._all_vas if self._all_vas is not None else self.api.list(va_path(), what=(VA_KIND, None))
        if any((va.get('spec') or {}).get('nodeName') == node for va in vas):
            return None
        names = sorted((n.get('metadata') or {}).get('name') for n in self.api.list(
            resource_path('', 'v1', 'nodes'), what=('Node', None)))
        names = [n for n in names if n]
        close = difflib.get_close_matches(node, names, n=3, cutoff=0.6)
        more = len(names) - _NODES_SHOWN
        shown = ', '.join(names[:_NODES_SHOWN]) + (' and %d more' % more if more > 0 else '')
        return ('no node named %s and no VolumeAttachment to it: check the node name%s (the cluster\'s nodes: %s); '
                'nothing was selected' % (node, (' (did you mean %s?)' % ' or '.join(close)) if close else '',
                                          shown or 'none'))

    def check_pv_exists(self, name, vas):
        """Refuse an unknown PV: one that does not exist and that no selected attachment names."""
        self._load_pvs([name])
        if self._pvs.get(name) is None and not vas:
            raise K8sRefused('PersistentVolume %s not found, and no VolumeAttachment refers to it: check the name '
                             '(nothing was changed)' % name, obj=dict(kind=PV_KIND, name=name))

    def _load_pvs(self, names):
        wanted = sorted(set(n for n in names if n and n not in self._pvs))
        if not wanted:
            return
        if len(wanted) <= _GET_EACH_LIMIT:
            for name in wanted:
                self._pvs[name] = self.api.get(resource_path('', 'v1', 'persistentvolumes', name),
                                               what=(PV_KIND, name), missing_ok=True)
        else:
            listed = dict((pv['metadata']['name'], pv)
                          for pv in self.api.list(resource_path('', 'v1', 'persistentvolumes'), what=(PV_KIND, None)))
            for name in wanted:
                self._pvs[name] = listed.get(name)

    def _load_nodes(self, names):
        wanted = sorted(set(n for n in names if n and n not in self._nodes))
        if not wanted:
            return
        if len(wanted) <= _GET_EACH_LIMIT:
            for name in wanted:
                self._nodes[name] = self.api.get(resource_path('', 'v1', 'nodes', name), what=('Node', name),
                                                 missing_ok=True)
        else:
            listed = dict((n['metadata']['name'], n)
                          for n in self.api.list(resource_path('', 'v1', 'nodes'), what=('Node', None)))
            for name in wanted:
                self._nodes[name] = listed.get(name)

    def _load_pods(self, nodes):
        wanted = sorted(set(n for n in nodes if n and n not in self._pods))
        if not wanted:
            return
        for node in wanted:
            self._claim_users.pop(node, None)
        if len(wanted) <= _GET_EACH_LIMIT:
            for node in wanted:
                self._pods[node] = self.api.list(resource_path('', 'v1', 'pods'), what=('Pod', None),
                                                 field_selector='spec.nodeName=' + node)
        else:
            for node in wanted:
                self._pods[node] = []
            for pod in self.api.list(resource_path('', 'v1', 'pods'), what=('Pod', None)):
                node = (pod.get('spec') or {}).get('nodeName')
                if node in self._pods:
                    self._pods[node].append(pod)

    def assess_all(self, vas):
        """Reports of the given attachments, reading their PVs, nodes and pods as needed."""
        self._load_pvs([((va.get('spec') or {}).get('source') or {}).get('persistentVolumeName') for va in vas])
        nodes = [(va.get('spec') or {}).get('nodeName') for va in vas]
        self._load_nodes(nodes)
        self._load_pods([n for n in nodes if self._nodes.get(n) is not None])
        return [self.assess_one(va) for va in vas]

    def assess_one(self, va):
        spec = va.get('spec') or {}
        pv_name = (spec.get('source') or {}).get('persistentVolumeName')
        node_name = spec.get('nodeName')
        pods = self._pods.get(node_name, [])
        index = self._claim_users.get(node_name)
        if index is None:
            index = claim_users(pods)
            if node_name in self._pods:  # the node's pods are loaded: the index holds until they are reloaded
                self._claim_users[node_name] = index
        return assess(va, self._pvs.get(pv_name) if pv_name else None, bool(pv_name), self._nodes.get(node_name),
                      pods, self.version, self.not_ready_grace, self.now(), index)

    # -- deleting
    def delete(self, reports, only_stale=True, force=False, force_grace=60, wait=True, wait_timeout=120,
               wait_sleep=1.0, check_mode=False):
        """Delete the stale attachments among `reports` (or all with only_stale=False).

        Returns (results, failures): one result per report (its report plus `action`, `why`,
        `changed`, `gone`); failures are (name, K8sError) pairs of attachments that could not be
        handled, after the others were.
        """
        results = []
        failures = []
        todo = []
        for report in reports:
            action, why = plan_delete(report, only_stale, force, force_grace)
            result = dict(report, action=action, why=why, changed=False, gone=False)
            results.append(result)
            if check_mode or action in (SKIP, WAIT):
                result['changed'] = action in (DELETE, REMOVE_FINALIZER)
                continue
            todo.append(result)
        # Each attachment is planned, deleted and re-read on its own: one that fails does not stop the others.
        for result, _value, exc in run_parallel(lambda r: self._act(r, only_stale, force, force_grace), todo,
                                                self.workers, errors=(K8sError,)):
            if exc is not None:
                failures.append((result['name'], exc))
                result['error'] = exc.msg
        if wait and not check_mode:
            self._wait_gone([r for r in results if r['action'] != SKIP and 'error' not in r], only_stale, force,
                            force_grace, wait_timeout, wait_sleep, failures)
        return results, failures

    def _act(self, result, only_stale, force, force_grace, attempts=None):
        """Carry out result['action'], re-reading and re-planning on conflicts and server errors."""
        attempts = attempts if attempts is not None else self.api.retries + 1
        name = result['name']
        for attempt in range(attempts):
            last = attempt + 1 >= attempts
            action = result['action']
            try:
                if action == DELETE:
                    self._delete(result)
                    result['changed'] = True
                    self._deleted(name)
                elif action == REMOVE_FINALIZER:
                    self._remove_finalizer(result)
                    result['changed'] = True
                    result['finalizer_removed'] = result['attacher_finalizer']
                return
            except K8sApiError as exc:
                if exc.status == 404:
                    result['gone'] = True
                    return
                if last or not (exc.status == 409 or exc.status in RETRYABLE_STATUSES):
                    raise
            except K8sConnectionError:
                if last:
                    raise
            # Something changed, or the answer was lost: look again before deciding again.
            self.sleep(min(0.2 * (2 ** attempt), 2.0))
            fresh = self.api.get(va_path(name), what=(VA_KIND, name), missing_ok=True)
            if fresh is None:
                result['gone'] = True
                result['changed'] = result['changed'] or action == DELETE
                if action == DELETE:
                    self._deleted(name)
                return
            report = self.assess_one(fresh)
            new_action, why = plan_delete(report, only_stale, force, force_grace)
            if action == DELETE and report['deletion_timestamp']:
                result.update(report)
                result['changed'] = True   # our DELETE went through before its answer was lost
                self._deleted(name)
                return
            result.update(report)
            result.update(action=new_action, why=why)
            if new_action in (SKIP, WAIT):
                return

    def _deleted(self, name):
        if name not in self.deleted:   # one thread per name: no other thread adds this name
            self.deleted.append(name)

    def _delete(self, result):
        body = dict(apiVersion='v1', kind='DeleteOptions',
                    preconditions=dict(uid=result['uid'], resourceVersion=result.get('resource_version')))
        if not body['preconditions']['resourceVersion']:
            del body['preconditions']['resourceVersion']
        answer = self.api.delete(va_path(result['name']), what=(VA_KIND, result['name']), body=body)
        if answer is None:
            result['gone'] = True
        elif answer.get('kind') == VA_KIND:
            result['deletion_timestamp'] = (answer.get('metadata') or {}).get('deletionTimestamp')
            if not result['deletion_timestamp']:
                result['gone'] = True

    def _remove_finalizer(self, result):
        patch = dict(metadata=dict(
            finalizers=finalizers_without(result['finalizers'], result['attacher_finalizer']),
            resourceVersion=result.get('resource_version')))
        if not patch['metadata']['resourceVersion']:
            del patch['metadata']['resourceVersion']
        answer = self.api.merge_patch(va_path(result['name']), patch, what=(VA_KIND, result['name']))
        result['finalizers'] = list((answer.get('metadata') or {}).get('finalizers') or [])

    def _wait_gone(self, results, only_stale, force, force_grace, wait_timeout, wait_sleep, failures):
        deadline = self.clock() + wait_timeout
        pending = [r for r in results if not r['gone']]
        while pending:
            still = []
            listed = None
            if len(pending) > _GET_EACH_LIMIT:
                try:
                    listed = dict((va['metadata']['name'], va) for va in self.api.list(va_path(), what=(VA_KIND, None)))
                except K8sError as exc:
                    for result in pending:
                        failures.append((result['name'], exc))
                        result['error'] = exc.msg
                    return
            for result in pending:
                name = result['name']
                if listed is not None:
                    fresh = listed.get(name)
                else:
                    try:
                        fresh = self.api.get(va_path(name), what=(VA_KIND, name), missing_ok=True)
                    except K8sError as exc:
                        failures.append((name, exc))
                        result['error'] = exc.msg
                        continue
                if fresh is None or fresh['metadata'].get('uid') != result['uid']:
                    result['gone'] = True
                    continue
                report = self.assess_one(fresh)
                result.update(report)
                action, why = plan_delete(report, only_stale, force, force_grace)
                if action == REMOVE_FINALIZER:
                    result.update(action=action, why=why)
                    try:
                        self._act(result, only_stale, force, force_grace)
                    except K8sError as exc:
                        failures.append((name, exc))
                        result['error'] = exc.msg
                        continue
                    if result['gone']:
                        continue
                still.append(result)
            pending = still
            if not pending:
                break
            if self.clock() >= deadline:
                for result in pending:
                    msg = ('VolumeAttachment %s still exists after wait_timeout=%ss: %s' % (
                        result['name'], wait_timeout, describe_blocker(result, force, force_grace)))
                    result['error'] = msg
                    failures.append((result['name'], K8sError(msg, obj=dict(kind=VA_KIND, name=result['name']))))
                return
            self.sleep(wait_sleep)


def describe_blocker(result, force, force_grace):
    fins = result.get('finalizers') or []
    if result.get('detach_error'):
        return 'the attacher reports a detach error: %s' % result['detach_error'].get('message')
    if not result.get('deletion_timestamp'):
        return 'it is not being deleted'
    if fins:
        hint = '' if force else '; force=true removes %s once the deletion is older than force_grace=%ss' % (
            result.get('attacher_finalizer'), force_grace)
        return 'finalizers %s are still set%s' % (', '.join(fins), hint)
    return 'the API server has not removed it yet'

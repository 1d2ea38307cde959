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

from ansible_collections.volfence.csi.plugins.module_utils._clock import SYSTEM_CLOCK
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sApiError,
    K8sError,
    K8sRefused,
    resource_path,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import (
    list_grouped,
    read_named,
    wait_until_settled,
    write_with_reread,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import parse_kube_version
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import (
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

# Node names a warning lists at most.
_NODES_SHOWN = 30


def va_path(name=None):
    return resource_path('storage.k8s.io', 'v1', 'volumeattachments', name)


def pv_path(name=None):
    return resource_path('', 'v1', 'persistentvolumes', name)


def node_path(name=None):
    return resource_path('', 'v1', 'nodes', name)


class VolumeAttachments(object):
    """Reads and assesses VolumeAttachments; deletes stale ones."""

    def __init__(self, api, *, not_ready_grace=300, clock=SYSTEM_CLOCK, workers=1):
        self.api = api
        self.workers = workers
        self.not_ready_grace = not_ready_grace
        self.clock = clock  # the time of the waits, and the date the attachments' ages are judged against
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
        if names is not None:
            vas = [va for _name, va in sorted(read_named(self.api, va_path, VA_KIND, names).items())]
        else:
            vas = self.api.list(va_path(), what=(VA_KIND, None))
            self._all_vas = vas
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
        names = sorted((n.get('metadata') or {}).get('name') for n in self.api.list(node_path(), what=('Node', None)))
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
        self._load_named(self._pvs, pv_path, PV_KIND, names)

    def _load_nodes(self, names):
        self._load_named(self._nodes, node_path, 'Node', names)

    def _load_named(self, cache, path, kind, names):
        """Reads the objects of `names` not in `cache` yet into it (None for those that do not exist)."""
        wanted = set(n for n in names if n and n not in cache)
        found = read_named(self.api, path, kind, wanted)
        for name in wanted:
            cache[name] = found.get(name)

    def _load_pods(self, nodes):
        wanted = set(n for n in nodes if n and n not in self._pods)
        for node in wanted:
            self._claim_users.pop(node, None)
        pods = resource_path('', 'v1', 'pods')
        self._pods.update(list_grouped(
            wanted, lambda node: self.api.list(pods, what=('Pod', None), field_selector='spec.nodeName=' + node),
            lambda: self.api.list(pods, what=('Pod', None)), lambda pod: (pod.get('spec') or {}).get('nodeName')))

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
        return assess(va, self._pvs.get(pv_name) if pv_name else None, pv_known=bool(pv_name),
                      node=self._nodes.get(node_name), pods=pods, cluster_version=self.version,
                      not_ready_grace=self.not_ready_grace, now=self.clock.now(), pod_index=index)

    # -- deleting
    def delete(self, reports, *, only_stale=True, force=False, force_grace=60, wait=True, wait_timeout=120,
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
            self._wait_gone([r for r in results if r['action'] != SKIP and 'error' not in r], failures,
                            only_stale=only_stale, force=force, force_grace=force_grace, wait_timeout=wait_timeout,
                            wait_sleep=wait_sleep)
        return results, failures

    def _act(self, result, only_stale, force, force_grace):
        """Carry out result['action'], re-reading and re-planning on conflicts and server errors."""
        name = result['name']

        def write():
            try:
                if result['action'] == DELETE:
                    self._delete(result)
                    result['changed'] = True
                    self._deleted(name)
                elif result['action'] == REMOVE_FINALIZER:
                    self._remove_finalizer(result)
                    result['changed'] = True
                    result['finalizer_removed'] = result['attacher_finalizer']
            except K8sApiError as exc:
                if exc.status != 404:
                    raise
                result['gone'] = True

        def reread():
            """Something changed, or the answer was lost: look again before deciding again."""
            action = result['action']
            fresh = self.api.get(va_path(name), what=(VA_KIND, name), missing_ok=True)
            if fresh is None:
                result['gone'] = True
                result['changed'] = result['changed'] or action == DELETE
                if action == DELETE:
                    self._deleted(name)
                return True
            report = self.assess_one(fresh)
            new_action, why = plan_delete(report, only_stale, force, force_grace)
            result.update(report)
            if action == DELETE and report['deletion_timestamp']:
                result['changed'] = True   # our DELETE went through before its answer was lost
                self._deleted(name)
                return True
            result.update(action=new_action, why=why)
            return True if new_action in (SKIP, WAIT) else None
        write_with_reread(write, reread, self.api.retries, self.clock.sleep)

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

    def _wait_gone(self, results, failures, *, only_stale, force, force_grace, wait_timeout, wait_sleep):
        def poll_round(pending):
            try:
                current = read_named(self.api, va_path, VA_KIND, [r['name'] for r in pending])
            except K8sError as exc:
                for result in pending:
                    failures.append((result['name'], exc))
                    result['error'] = exc.msg
                return []
            still = []
            for result in pending:
                name = result['name']
                fresh = current.get(name)
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
            return still
        for result in wait_until_settled([r for r in results if not r['gone']], poll_round, wait_timeout=wait_timeout,
                                         wait_sleep=wait_sleep, clock=self.clock):
            msg = ('VolumeAttachment %s still exists after wait_timeout=%ss: %s' % (
                result['name'], wait_timeout, describe_blocker(result, force, force_grace)))
            result['error'] = msg
            failures.append((result['name'], K8sError(msg, obj=dict(kind=VA_KIND, name=result['name']))))


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

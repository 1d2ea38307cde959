# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: pods in bulk, for pod_force_delete and replacement_pods_info.

* Force-deleting a list of pods: one DELETE per pod (grace period 0 by default), at most
  `workers` at a time, each with the pod's uid as a precondition when it is known, so a
  replacement pod of the same name (a StatefulSet's) is never deleted: the API answers 409 and
  the pod counts as ``absent`` (replaced), as does a pod already gone (404). A failure of one
  pod does not stop the others; the caller gets the three lists and fails naming each failure.
* The Running pods of claims: the pods of the claims' namespaces with the field selector
  ``status.phase=Running``, paged (``limit``/``continue``); a pod on an excluded node (a failed
  node) or being deleted does not count.

Input checks and the classification of answers are pure functions; ``PodDeleter`` and
``ReplacementPods`` talk to a KubeApi. Unit tests: tests/unit/plugins/module_utils/test__pods.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible_collections.volfence.csi.plugins.module_utils._clock import SYSTEM_CLOCK
from ansible_collections.volfence.csi.plugins.module_utils._k8s.gather import DEFAULT_PAGE, check_namespace
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sApiError, K8sError, resource_path
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import (
    count_message,
    is_retryable_write_error,
    list_grouped,
    wait_until_settled,
    write_with_reread,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import pod_claims

POD_KIND = 'Pod'

# Outcomes of one pod.
DELETED = 'deleted'
ABSENT = 'absent'
FAILED = 'failed'
RETRY = 'retry'


# --------------------------------------------------------------------------- input (pure)

def _namespace_ok(value, where):
    try:
        return check_namespace(value)
    except ValueError:
        raise ValueError('%s: namespace %r is not a namespace name (at most 63 lowercase letters, digits and "-")'
                         % (where, value))


def check_pods(pods):
    """The pods to delete as [{namespace, name, uid}] (uid None when not given), in the given order,
    each once; ValueError naming every wrong entry. The same pod twice with two different uids is
    refused (which one is meant cannot be told)."""
    if not isinstance(pods, list):
        raise ValueError('pods must be a list of {namespace, name, uid}')
    problems = []
    out = []
    seen = {}
    for index, pod in enumerate(pods):
        where = 'pods[%d]' % index
        if not isinstance(pod, dict):
            problems.append('%s must be a mapping with namespace and name, got %r' % (where, pod))
            continue
        namespace, name, uid = pod.get('namespace'), pod.get('name'), pod.get('uid')
        try:
            _namespace_ok(namespace, where)
            check_object_name(name, '%s name' % where)
            if uid is not None and (not isinstance(uid, str) or not uid.strip()):
                raise ValueError('%s uid must be a non-empty string when given' % where)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        uid = uid.strip() if uid else None
        key = (namespace, name)
        if key in seen:
            if seen[key] != uid:
                problems.append('%s: pod %s/%s is listed twice with different uids (%s, %s)' % (
                    where, namespace, name, seen[key] or 'none', uid or 'none'))
            continue
        seen[key] = uid
        out.append(dict(namespace=namespace, name=name, uid=uid))
    if problems:
        raise ValueError('; '.join(problems))
    return out


def check_claims(claims):
    """The claims as sorted unique (namespace, claim) pairs from "namespace/claim" strings; ValueError
    naming every wrong one."""
    if not isinstance(claims, list):
        raise ValueError('claims must be a list of "namespace/claim"')
    problems = []
    out = set()
    for index, text in enumerate(claims):
        where = 'claims[%d]' % index
        if not isinstance(text, str) or text.count('/') != 1:
            problems.append('%s: %r is not "namespace/claim"' % (where, text))
            continue
        namespace, claim = text.split('/')
        try:
            _namespace_ok(namespace, where)
            check_object_name(claim, '%s claim' % where)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        out.add((namespace, claim))
    if problems:
        raise ValueError('; '.join(problems))
    return sorted(out)


def check_node_names(names, what):
    """The node names, each checked (DNS-1123 subdomain); ValueError naming every wrong one."""
    problems = []
    for index, name in enumerate(names or []):
        try:
            check_object_name(name, '%s[%d]' % (what, index))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError('; '.join(problems))
    return sorted(set(names or []))


# --------------------------------------------------------------------------- deleting (pure parts)

def pod_path(namespace, name=None):
    return resource_path('', 'v1', 'pods', name, namespace)


def delete_body(grace_period, uid=None):
    """The DeleteOptions of a force-delete: the grace period, and the uid as a precondition."""
    body = dict(apiVersion='v1', kind='DeleteOptions', gracePeriodSeconds=grace_period)
    if uid:
        body['preconditions'] = dict(uid=uid)
    return body


def error_outcome(exc, uid):
    """What a failed DELETE means: ABSENT (404; or 409 on a uid precondition: another pod of that name
    exists now), RETRY (429/5xx, another conflict, or no answer) or FAILED (anything else)."""
    if isinstance(exc, K8sApiError):
        if exc.status == 404:
            return ABSENT
        if exc.status == 409 and uid and 'precondition' in (exc.api_message or exc.msg or '').lower():
            return ABSENT
    return RETRY if is_retryable_write_error(exc) else FAILED


def user_error(exc):
    """The error of a pod in the user's words: the API's status, reason and message."""
    if isinstance(exc, K8sApiError) and exc.status is not None:
        text = '%s %s' % (exc.status, exc.reason or '')
        if exc.api_message:
            text = '%s: %s' % (text.rstrip(), exc.api_message)
        return text.rstrip()
    return getattr(exc, 'msg', None) or str(exc)


def failure_message(failed, total, deleted, absent):
    """The module's message when some pods could not be deleted: each one and why, and what became of
    the others."""
    msg = count_message('pod(s) could not be force-deleted',
                        ['%s/%s: %s' % (f['namespace'], f['name'], f['error']) for f in failed], total)
    if deleted or absent:
        msg += ' (the other %d were handled: %d deleted, %d already gone or replaced)' % (
            deleted + absent, deleted, absent)
    return msg + '; a re-run retries the failed ones'


class PodDeleter(object):
    """Force-deletes pods, at most `workers` at a time."""

    def __init__(self, api, *, workers=16, sleep=time.sleep):
        self.api = api
        self.workers = workers
        self.sleep = sleep

    def run(self, pods, grace_period=0, check_mode=False):
        """dict(deleted, absent, failures) for the checked `pods` (check_pods). `deleted`: the pods this
        run deleted (in check mode: would delete), [{namespace, name, uid}]; `absent`: gone or replaced,
        [{namespace, name, why}]; `failures`: [{namespace, name, error}] (not `failed`: Ansible's own
        key of a failed result)."""
        func = self._look if check_mode else (lambda pod: self._delete(pod, grace_period))
        out = dict(deleted=[], absent=[], failures=[])
        for pod, answer, error in run_parallel(func, pods, self.workers, errors=(K8sError,)):
            ref = dict(namespace=pod['namespace'], name=pod['name'])
            if error is not None:
                out['failures'].append(dict(ref, error=user_error(error)))
                continue
            outcome, detail = answer
            if outcome == DELETED:
                out['deleted'].append(dict(ref, uid=detail))
            else:
                out['absent'].append(dict(ref, why=detail))
        return out

    def _look(self, pod):
        """Check mode: what a delete would do."""
        current = self.api.get(pod_path(pod['namespace'], pod['name']), what=(POD_KIND, pod['name'], pod['namespace']),
                               missing_ok=True)
        return self._present_or_absent(pod, current) or (DELETED, current['metadata'].get('uid'))

    @staticmethod
    def _present_or_absent(pod, current):
        """(ABSENT, why) when `current` (the pod as read now) is gone or another pod; else None."""
        if current is None:
            return ABSENT, 'not found: already gone'
        uid = (current.get('metadata') or {}).get('uid')
        if pod['uid'] and uid != pod['uid']:
            return ABSENT, 'replaced: the pod of that name now has uid %s, not %s; it is left alone' % (uid, pod['uid'])
        return None

    def _delete(self, pod, grace_period):
        """(DELETED, uid) or (ABSENT, why); K8sError when it failed."""
        namespace, name, uid = pod['namespace'], pod['name'], pod['uid']
        what = (POD_KIND, name, namespace)
        path = pod_path(namespace, name)

        def delete():
            try:
                answer = self.api.request('DELETE', path, body=delete_body(grace_period, uid), what=what)
            except K8sError as exc:
                if error_outcome(exc, uid) != ABSENT:
                    raise
                if exc.status == 404:
                    return ABSENT, 'not found: already gone'
                return ABSENT, 'replaced: %s; the pod of that name is another one, it is left alone' % (
                    exc.api_message or exc.msg)
            return DELETED, ((answer or {}).get('metadata') or {}).get('uid') or uid

        def reread():
            current = self.api.get(path, what=what, missing_ok=True)
            if current is None:
                return DELETED, uid   # the DELETE whose answer was lost (or failed late) went through
            return self._present_or_absent(pod, current)
        return write_with_reread(delete, reread, self.api.retries, self.sleep)


# --------------------------------------------------------------------------- replacement pods

def replacement_status(claims, pods, exclude_nodes=()):
    """(running, waiting): for each (namespace, claim) of `claims`, the first Running pod (by name) that
    uses it, is not being deleted and is on a node outside `exclude_nodes`, as {claim, pod, node}; the
    claims ("namespace/claim") without one."""
    excluded = set(exclude_nodes or ())
    by_claim = {}
    for pod in sorted(pods or [], key=lambda p: ((p.get('metadata') or {}).get('namespace') or '',
                                                 (p.get('metadata') or {}).get('name') or '')):
        meta = pod.get('metadata') or {}
        node = (pod.get('spec') or {}).get('nodeName')
        if (pod.get('status') or {}).get('phase') != 'Running' or meta.get('deletionTimestamp'):
            continue
        if not node or node in excluded:
            continue
        for claim in pod_claims(pod):
            by_claim.setdefault((meta.get('namespace'), claim), dict(pod=meta.get('name'), node=node))
    running, waiting = [], []
    for namespace, claim in claims:
        name = '%s/%s' % (namespace, claim)
        found = by_claim.get((namespace, claim))
        if found:
            running.append(dict(claim=name, pod='%s/%s' % (namespace, found['pod']), node=found['node']))
        else:
            waiting.append(name)
    return running, waiting


class ReplacementPods(object):
    """Finds (and waits for) the Running pods of claims, asking the API only for Running pods of the
    claims' namespaces."""

    FIELD_SELECTOR = 'status.phase=Running'

    def __init__(self, api, *, page=DEFAULT_PAGE, clock=SYSTEM_CLOCK):
        self.api = api
        self.page = page
        self.clock = clock
        self.polls = 0
        self.listed = 0

    def running_pods(self, namespaces):
        """The Running pods of `namespaces` (one paged list each, or one cluster-wide when there are many)."""
        by_namespace = list_grouped(
            namespaces,
            lambda namespace: self.api.list(pod_path(namespace), what=(POD_KIND, None, namespace),
                                            field_selector=self.FIELD_SELECTOR, page=self.page),
            lambda: self.api.list(pod_path(None), what=(POD_KIND, None), field_selector=self.FIELD_SELECTOR,
                                  page=self.page),
            lambda pod: (pod.get('metadata') or {}).get('namespace'))
        pods = [pod for _namespace, listed in sorted(by_namespace.items()) for pod in listed]
        self.listed += len(pods)
        return pods

    def poll(self, claims, exclude_nodes=()):
        """(running, waiting) now."""
        self.polls += 1
        return replacement_status(claims, self.running_pods(ns for ns, _c in claims), exclude_nodes)

    def wait(self, claims, exclude_nodes=(), wait_timeout=120, wait_sleep=1):
        """(running, waiting, timed_out): polls the waiting claims' namespaces until no claim waits or
        `wait_timeout` passed. A claim once seen with a Running pod stays in `running`."""
        running = []

        def poll_round(waiting):
            found, still = self.poll(waiting, exclude_nodes)
            running.extend(found)
            return [c for c in waiting if '%s/%s' % c in still]
        waiting = wait_until_settled(claims, poll_round, wait_timeout=wait_timeout, wait_sleep=wait_sleep,
                                     clock=self.clock)
        return sorted(running, key=lambda r: r['claim']), ['%s/%s' % c for c in waiting], bool(waiting)

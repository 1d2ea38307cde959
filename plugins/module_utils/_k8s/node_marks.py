# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what a failover writes on its failed nodes, and what node_recover lifts.

Three marks, one PATCH per node, all nodes in parallel (the failed_nodes module):
* the failover's start, annotation volfence.csi/failover-started (_safety.failover_started_mark text):
  the node's bootID when the failover began, written before anything is fenced (state=started, I3);
* the failover's record, annotation volfence.csi/failover (_safety.failover_marker text): what was
  fenced for the node and its bootID (I2, I3); it replaces the start;
* the node.kubernetes.io/out-of-service:NoExecute taint (non-graceful node shutdown), when asked,
  with the annotation volfence.csi/out-of-service-taint that says the collection added it, so that
  node_recover never removes a taint someone else set (_decisions/remediators.py), unless told.

``marks_patch`` is the pure decision: the merge patch that brings a node to the wanted marks, or
None when it has them. A patch that changes the taints carries the node's resourceVersion (a
taint list is replaced whole; a node changed meanwhile gets a 409, a re-read and a new patch).
Unit tests: tests/unit/plugins/module_utils/test__node_marks.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import time

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, resource_path
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import count_message, write_with_reread
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel
from ansible_collections.volfence.csi.plugins.module_utils._k8s.objects import (
    OUT_OF_SERVICE_TAINT as OUT_OF_SERVICE_KEY, is_out_of_service, merge_patch_applied)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import (
    OWN_TAINT_ANNOTATION, out_of_service_owner)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.safety import (
    MARKER_ANNOTATION, STARTED_ANNOTATION, boot_id_of, failover_started_mark)

OUT_OF_SERVICE_TAINT = {'key': OUT_OF_SERVICE_KEY, 'value': 'nodeshutdown', 'effect': 'NoExecute'}
OWN_TAINT_NOTE = 'added by volfence.csi node_failover; node_recover removes it'


def marks_patch(node, state, record=None, taint=False, remove_others_taint=False, finished=False):
    """(patch, changes) for `node` (a Node object): the JSON merge patch that brings it to `state`, or
    (None, []) when it is there already. `changes` names what the patch does, in words.

    started: the failover's start written (its bootID; `record` is the time the failover began), kept
    as it is when one of the same boot is there, and not written when a record of the same boot is
    there (a re-run: the record holds the bootID already). present: the annotation set to `record` (when a
    record is given), which replaces the start (so does `finished`: the run that wrote the start
    fenced nothing for the node), the out-of-service taint added (when `taint`) with the annotation
    that says it is ours, in the same patch; a taint someone else set is left as it is (and stays
    theirs). absent: the record and the start removed; with `taint`, our out-of-service taint
    removed, and someone else's only with `remove_others_taint`."""
    if state not in ('present', 'absent', 'started'):
        raise ValueError('state must be present, absent or started, not %r' % (state,))
    metadata = node.get('metadata') or {}
    annotations = metadata.get('annotations') or {}
    taints = list((node.get('spec') or {}).get('taints') or [])
    tainted = any(is_out_of_service(t) for t in taints)
    ours = OWN_TAINT_ANNOTATION in annotations
    patch, changes, notes = {}, [], {}
    if state == 'started':
        mark = failover_started_mark(node, record)
        boot_id = boot_id_of(node)
        if boot_id is not None and _boot(annotations.get(MARKER_ANNOTATION)) == boot_id:
            pass  # a record of this boot already holds the bootID (a re-run): nothing to add
        elif annotations.get(STARTED_ANNOTATION) != mark:
            notes[STARTED_ANNOTATION] = mark
            changes.append('failover start written')
    elif state == 'present':
        if record is not None and annotations.get(MARKER_ANNOTATION) != record:
            notes[MARKER_ANNOTATION] = record
            changes.append('record %s' % ('replaced' if MARKER_ANNOTATION in annotations else 'written'))
        if STARTED_ANNOTATION in annotations and (record is not None or finished):
            notes[STARTED_ANNOTATION] = None
            changes.append('failover start removed')
        if taint and not tainted:
            patch['spec'] = {'taints': taints + [dict(OUT_OF_SERVICE_TAINT)]}
            notes[OWN_TAINT_ANNOTATION] = OWN_TAINT_NOTE
            changes.append('out-of-service taint added')
    else:
        if MARKER_ANNOTATION in annotations:
            notes[MARKER_ANNOTATION] = None
            changes.append('record removed')
        if STARTED_ANNOTATION in annotations:
            notes[STARTED_ANNOTATION] = None
            changes.append('failover start removed')
        if taint and tainted and (ours or remove_others_taint):
            patch['spec'] = {'taints': [t for t in taints if not is_out_of_service(t)]}
            changes.append('out-of-service taint removed' if ours else "someone else's out-of-service taint removed")
        if taint and ours:
            notes[OWN_TAINT_ANNOTATION] = None
            if not tainted:
                changes.append('note of an out-of-service taint already gone removed')
    if notes:
        patch['metadata'] = {'annotations': notes}
    if not patch:
        return None, []
    if 'spec' in patch and metadata.get('resourceVersion'):
        patch.setdefault('metadata', {})['resourceVersion'] = metadata['resourceVersion']
    return patch, changes


def marks_of(node):
    """What a node carries of the marks: {'record': text or None, 'started': text or None,
    'out_of_service_taint': bool, 'out_of_service_taint_by': 'volfence.csi', 'other' or None}."""
    annotations = (node.get('metadata') or {}).get('annotations') or {}
    return dict(record=annotations.get(MARKER_ANNOTATION), started=annotations.get(STARTED_ANNOTATION),
                out_of_service_taint=any(is_out_of_service(t) for t in (node.get('spec') or {}).get('taints') or []),
                out_of_service_taint_by=out_of_service_owner(node))


def check_request(nodes, records):
    """The node names, each once, in the order given; ValueError for an empty name or a record of a node
    not listed (a typo would otherwise mark nothing and say nothing)."""
    names = []
    for name in nodes or []:
        if not isinstance(name, str) or not name.strip():
            raise ValueError('nodes: every entry must be a node name, got %r; nothing was changed' % (name,))
        if name not in names:
            names.append(name)
    stray = sorted(set(records or {}) - set(names))
    if stray:
        raise ValueError('records given for nodes not in nodes: %s; nothing was changed' % ', '.join(stray))
    bad = sorted(k for k, v in (records or {}).items() if not isinstance(v, str))
    if bad:
        raise ValueError('records: each record must be text (the failover_markers filter makes it), not for %s; '
                         'nothing was changed' % ', '.join(bad))
    return names


class NodeMarks(object):
    """Brings many nodes to the wanted marks, a GET and at most one PATCH each, `workers` at a time."""

    def __init__(self, api, workers=16, sleep=time.sleep, retries=3):
        self.api = api
        self.workers = workers
        self.sleep = sleep
        self.retries = retries

    def _path(self, name):
        return resource_path('', 'v1', 'nodes', name)

    def _one(self, name, state, record, taint, remove_others, check_mode, finished=False):
        what = ('Node', name)
        node = self.api.get(self._path(name), what=what, missing_ok=True)
        if node is None:
            return dict(name=name, missing=True)
        before = marks_of(node)
        patch, changes = marks_patch(node, state, record, taint, remove_others, finished)
        if patch is None or check_mode:
            return dict(name=name, changes=changes, before=before,
                        after=before if patch is None else marks_of(merge_patch_applied(node, patch)))
        patch_now = [patch]
        gone = object()  # reread's answer when the node was deleted meanwhile

        def write():
            return self.api.merge_patch(self._path(name), patch_now[0], what=what)

        def reread():
            fresh = self.api.get(self._path(name), what=what, missing_ok=True)
            if fresh is None:
                return gone
            again, _changes = marks_patch(fresh, state, record, taint, remove_others, finished)
            if again is None:  # the write went through before its answer was lost, or another did it
                return fresh
            patch_now[0] = again
            return None

        outcome = write_with_reread(write, reread, self.retries, self.sleep)
        if outcome is gone:
            return dict(name=name, missing=True)
        return dict(name=name, changes=changes, before=before, after=marks_of(outcome))

    def run(self, names, state, records=None, taint=False, check_mode=False, remove_others_taint=False,
            finished=()):
        """{'changed': [{name, changes}], 'unchanged': [names], 'missing': [names],
        'failures': [{name, error}], 'marks': {name: {before, after}}}. With state=started, records
        gives each node the time its failover began; `finished`: the nodes whose start goes even without
        a record (see marks_patch)."""
        records = records or {}
        finished = set(finished or ())
        out = dict(changed=[], unchanged=[], missing=[], failures=[], marks={})
        answers = run_parallel(lambda name: self._one(name, state, records.get(name), taint, remove_others_taint,
                                                      check_mode, name in finished),
                               names, self.workers, errors=(K8sError,))
        for name, result, error in answers:
            if error is not None:
                out['failures'].append(dict(name=name, error=error.msg))
            elif result.get('missing'):
                out['missing'].append(name)
            else:
                out['marks'][name] = dict(before=result['before'], after=result['after'])
                if result['changes']:
                    out['changed'].append(dict(name=name, changes=result['changes']))
                else:
                    out['unchanged'].append(name)
        return out


def changed_marks(marks):
    """(taint_changed, record_changed): the sorted names of the nodes whose out-of-service taint, and
    whose record, differ after the run from before it (`marks`: NodeMarks.run's {name: {before, after}})."""
    def differ(key):
        return sorted(n for n, m in marks.items() if m['before'][key] != m['after'][key])
    return differ('out_of_service_taint'), differ('record')


def started_marks(marks):
    """The sorted names of the nodes whose failover start the run wrote: none before, or one of another
    boot (a start of the same boot already there is an earlier, cut-off run's)."""
    return sorted(n for n, m in marks.items() if m['after'].get('started') and (
        m['before'].get('started') is None or _boot(m['before']['started']) != _boot(m['after']['started'])))


def _boot(text):
    """The boot_id of a record or start text; None when there is none or it is unreadable."""
    try:
        return json.loads(text).get('boot_id')
    except (TypeError, ValueError, AttributeError):
        return None


def failure_message(failures, total, state):
    return count_message('nodes could not be %s' % ('marked' if state == 'present' else 'cleared'),
                         ['%s: %s' % (f['name'], f['error']) for f in failures], total, shown=10)

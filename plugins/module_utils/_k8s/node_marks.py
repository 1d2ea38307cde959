# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what a failover writes on its failed nodes, and what node_recover lifts.

Three marks, one PATCH per node, all nodes in parallel (the failed_nodes module):
* the failover's start, annotation volfence.csi/failover-started (_decisions/marks.failover_started_mark text):
  the node's bootID when the failover began, written before anything is fenced (state=started, I3);
* the failover's record, annotation volfence.csi/failover (_decisions/marks.failover_marker text): what was
  fenced for the node and its bootID (I2, I3); it replaces the start;
* the node.kubernetes.io/out-of-service:NoExecute taint (non-graceful node shutdown), when asked,
  with the annotation volfence.csi/out-of-service-taint that says the collection added it, so that
  node_recover never removes a taint someone else set (_decisions/remediators.py), unless told.

The decision, the merge patch that brings a node to the wanted marks, is _decisions/marks.marks_patch;
this file reads the nodes and writes the patches (a node changed meanwhile gets a 409, a re-read and a
new patch). Unit tests: tests/unit/plugins/module_utils/test__node_marks.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, resource_path
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import count_message, write_with_reread
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import merge_patch_applied
from ansible_collections.volfence.csi.plugins.module_utils._decisions.marks import boot_id_in, marks_of, marks_patch


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

    def __init__(self, api, *, workers=16, sleep=time.sleep, retries=3):
        self.api = api
        self.workers = workers
        self.sleep = sleep
        self.retries = retries

    def _path(self, name):
        return resource_path('', 'v1', 'nodes', name)

    def _one(self, name, state, *, record, taint, remove_others_taint, check_mode, finished):
        what = ('Node', name)
        node = self.api.get(self._path(name), what=what, missing_ok=True)
        if node is None:
            return dict(name=name, missing=True)
        before = marks_of(node)
        patch, changes = marks_patch(node, state, record, taint=taint, remove_others_taint=remove_others_taint,
                                     finished=finished)
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
            again, _changes = marks_patch(fresh, state, record, taint=taint, remove_others_taint=remove_others_taint,
                                          finished=finished)
            if again is None:  # the write went through before its answer was lost, or another did it
                return fresh
            patch_now[0] = again
            return None

        outcome = write_with_reread(write, reread, self.retries, self.sleep)
        if outcome is gone:
            return dict(name=name, missing=True)
        return dict(name=name, changes=changes, before=before, after=marks_of(outcome))

    def run(self, names, state, records=None, *, taint=False, check_mode=False, remove_others_taint=False,
            finished=()):
        """{'changed': [{name, changes}], 'unchanged': [names], 'missing': [names],
        'failures': [{name, error}], 'marks': {name: {before, after}}}. With state=started, records
        gives each node the time its failover began; `finished`: the nodes whose start goes even without
        a record (see marks_patch)."""
        records = records or {}
        finished = set(finished or ())
        out = dict(changed=[], unchanged=[], missing=[], failures=[], marks={})
        answers = run_parallel(lambda name: self._one(name, state, record=records.get(name), taint=taint,
                                                      remove_others_taint=remove_others_taint, check_mode=check_mode,
                                                      finished=name in finished),
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
        m['before'].get('started') is None or boot_id_in(m['before']['started']) != boot_id_in(m['after']['started'])))


def failure_message(failures, total, state):
    return count_message('nodes could not be %s' % ('marked' if state == 'present' else 'cleared'),
                         ['%s: %s' % (f['name'], f['error']) for f in failures], total, shown=10)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: who else remediates a node, and which out-of-service taint is ours.

Pure functions over Node objects as JSON. Other remediators leave marks on the node:

* the ``node.kubernetes.io/out-of-service:NoExecute`` taint (non-graceful node shutdown) is set by
  medik8s Self Node Remediation and Fence Agents Remediation, by some cloud controller managers
  and operators, and by people (``kubectl taint``); its value is free text (``nodeshutdown`` by
  convention), so it does not tell who set it;
* medik8s remediators add ``medik8s.io/remediation:NoExecute`` with their name as the value
  (``self-node-remediation``, ``fence-agents-remediation``);
* NodeHealthCheck skips nodes labelled ``remediation.medik8s.io/exclude-from-remediation``.

The collection tells its own out-of-service taint by the annotation OWN_TAINT_ANNOTATION, written
in the same PATCH that adds the taint (_k8s/node_marks.py): a taint without it is someone else's,
which node_recover leaves alone unless told (docs/safety.md, I3).
Unit tests: tests/unit/plugins/module_utils/test__remediators.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    OUT_OF_SERVICE_TAINT as OUT_OF_SERVICE_KEY, is_out_of_service)

OWN_TAINT_ANNOTATION = 'volfence.csi/out-of-service-taint'
MEDIK8S_TAINT_KEY = 'medik8s.io/remediation'
MEDIK8S_EXCLUDE_LABEL = 'remediation.medik8s.io/exclude-from-remediation'
MEDIK8S_REMEDIATORS = {
    'self-node-remediation': 'medik8s Self Node Remediation',
    'fence-agents-remediation': 'medik8s Fence Agents Remediation',
}


def _taints(node):
    return [t for t in ((node or {}).get('spec') or {}).get('taints') or [] if isinstance(t, dict)]


def _metadata(node):
    return (node or {}).get('metadata') or {}


def taint_is_ours(node):
    """Whether the node's out-of-service taint was added by this collection (its annotation is there)."""
    return OWN_TAINT_ANNOTATION in (_metadata(node).get('annotations') or {})


def out_of_service_owner(node):
    """'volfence.csi', 'other' or None (no out-of-service taint)."""
    if not any(is_out_of_service(t) for t in _taints(node)):
        return None
    return 'volfence.csi' if taint_is_ours(node) else 'other'


def other_remediators(node):
    """What others have done on the node to remediate it, as a list of {mark, by, since, note}: an
    out-of-service taint the collection did not add, a medik8s remediation taint, NodeHealthCheck's
    exclusion label. Empty when there is none. The failover and recovery reports show them; the
    collection never removes them unless told."""
    found = []
    for taint in _taints(node):
        since = taint.get('timeAdded')
        if is_out_of_service(taint) and not taint_is_ours(node):
            found.append(dict(mark='taint %s=%s:NoExecute' % (OUT_OF_SERVICE_KEY, taint.get('value') or ''),
                              by='not volfence.csi (a remediation operator, a cloud controller or a person)',
                              since=since,
                              note='node_recover leaves it; remove it once the node is back, or run node_recover '
                                   'with remove_others_taint=true'))
        elif taint.get('key') == MEDIK8S_TAINT_KEY:
            value = taint.get('value') or ''
            found.append(dict(mark='taint %s=%s:%s' % (MEDIK8S_TAINT_KEY, value, taint.get('effect') or ''),
                              by=MEDIK8S_REMEDIATORS.get(value, 'a medik8s remediator (%s)' % (value or 'unnamed')),
                              since=since,
                              note='a medik8s remediation of this node is under way; it lifts its own taint'))
    labels = _metadata(node).get('labels') or {}
    if MEDIK8S_EXCLUDE_LABEL in labels:
        found.append(dict(mark='label %s=%s' % (MEDIK8S_EXCLUDE_LABEL, labels[MEDIK8S_EXCLUDE_LABEL]),
                          by='NodeHealthCheck configuration', since=None,
                          note='medik8s does not remediate this node'))
    return found


def other_remediators_by_node(nodes, names):
    """{name: other_remediators(node)} for the named nodes that have any."""
    wanted = set(names or [])
    out = {}
    for node in nodes or []:
        if not isinstance(node, dict):
            continue
        name = _metadata(node).get('name')
        if name in wanted:
            found = other_remediators(node)
            if found:
                out[name] = found
    return out

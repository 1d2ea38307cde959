# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the marks a failover leaves on a failed node (I2, I3 of docs/safety.md).

Before it fences, node_failover marks the node with its bootID (the start mark); once fenced, it
records what it fenced (the failover marker), and may taint it out-of-service. node_recover reads both
(read_marker): it lifts what the record lists, and only once the node runs another boot; it removes
the taint only when the collection added it. marks_patch is the one merge patch that brings a node to
the wanted marks (_k8s/node_marks.py writes it).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import failed_set
from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import OWN_TAINT_ANNOTATION, out_of_service_owner
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import OUT_OF_SERVICE_TAINT as OUT_OF_SERVICE_KEY, is_out_of_service, object_name


# node_failover leaves this annotation on the failed Node: what it fenced and the bootID the node
# had then. node_recover lifts exactly that, and only once the bootID changed.
MARKER_ANNOTATION = 'volfence.csi/failover'
# ... and this one before it reads Ceph and fences: the bootID the node had when the failover began.
# The record above replaces it once the fence is done; a run cut off in between leaves it, and
# node_recover then still waits for another bootID (I3) and lifts the node's own addresses (I2).
STARTED_ANNOTATION = 'volfence.csi/failover-started'


def boot_id_of(node):
    return (((node or {}).get('status') or {}).get('nodeInfo') or {}).get('bootID') or None


def failover_started_mark(node, started_at):
    """The annotation value (JSON text) node_failover writes on a failed node before it fences: its
    bootID and when the failover began. A mark of the same boot is kept as it is (a re-run after a cut-off
    run keeps the first time), so a re-run writes nothing."""
    boot_id = boot_id_of(node)
    previous = read_started_mark(node)
    if previous and previous.get('boot_id') == boot_id:
        started_at = previous.get('started_at') or started_at
    return json.dumps(dict(boot_id=boot_id, started_at=started_at), sort_keys=True)


def read_started_mark(node):
    """The started mark of a node ({boot_id, started_at}), None when it has none or it is unreadable."""
    text = (((node or {}).get('metadata') or {}).get('annotations') or {}).get(STARTED_ANNOTATION)
    if not text:
        return None
    try:
        mark = json.loads(text)
    except ValueError:
        return None
    return mark if isinstance(mark, dict) else None


def failover_marker(node, *, blocklisted=None, networkfences=None, fenced_at=None, driver_fenced=None):
    """The annotation value (JSON text) node_failover leaves on the failed node. A marker of the
    same boot is extended, not replaced (a re-run after a partial failover keeps what the first run
    fenced), and keeps its time, so a re-run with nothing new writes nothing. driver_fenced: the
    entries the driver's own fencing added at the node's addresses (driver_fences()), kept under
    `driver_fences` only when there are some."""
    boot_id = boot_id_of(node)
    blocklist, fences, driver = set(blocklisted or []), set(networkfences or []), set(driver_fenced or [])
    previous = read_marker(node)
    if previous and previous.get('boot_id') == boot_id:
        blocklist |= set(previous.get('blocklist') or [])
        fences |= set(previous.get('networkfences') or [])
        driver |= set(previous.get('driver_fences') or [])
        fenced_at = previous.get('fenced_at') or fenced_at
    marker = dict(boot_id=boot_id, fenced_at=fenced_at, blocklist=sorted(blocklist), networkfences=sorted(fences))
    if driver:
        marker['driver_fences'] = sorted(driver)
    return json.dumps(marker, sort_keys=True)


def failover_markers(nodes, failed_node, *, blocklisted_by_node=None, networkfences=None, fenced_at=None,
                     driver_fences_by_node=None):
    """The marker of each failed node (failover_marker() text), from the fence plan's `by_node`, the
    NetworkFences set (networkfence_plan() entries, each with its node) and the entries the driver's own
    fencing added (driver_fences()): each node records only what was fenced for it, with its bootID, so
    node_recover lifts each node's fences when that node is back (I2, I3). Nothing fenced for any node,
    by the failover or by the driver: no markers, as there is nothing for node_recover to lift."""
    by_name = dict((object_name(n), n) for n in nodes or [] if isinstance(n, dict))
    fences = {}
    for fence in networkfences or []:
        fences.setdefault(fence.get('node'), []).append(fence.get('name'))
    driver = driver_fences_by_node or {}
    if not fences and not any((blocklisted_by_node or {}).values()) and not any(driver.values()):
        return {}
    return dict((node, failover_marker(by_name.get(node) or {},
                                       blocklisted=(blocklisted_by_node or {}).get(node) or [],
                                       networkfences=fences.get(node) or [], fenced_at=fenced_at,
                                       driver_fenced=driver.get(node) or []))
                for node in failed_set(failed_node))


def read_marker(node=None, report=None):
    """The failover's record for a node: from its annotation, else from a node_failover JSON
    report (a dict; a report of several failed nodes has one marker per node). None when neither
    says anything."""
    text = (((node or {}).get('metadata') or {}).get('annotations') or {}).get(MARKER_ANNOTATION)
    started = read_started_mark(node)
    if text:
        try:
            marker = json.loads(text)
        except ValueError:
            marker = None
        if isinstance(marker, dict):
            if started and started.get('boot_id') and started['boot_id'] != marker.get('boot_id'):
                # a start is newer than the record beside it (a record replaces the start): a later failover,
                # cut off on another boot, may have fenced that boot's clients, so its bootID holds (I3);
                # what the record lists was fenced on an earlier boot and is lifted with it (I2)
                return dict(marker, boot_id=started['boot_id'])
            return marker
    if started and started.get('boot_id'):
        # a failover cut off after it began: its bootID holds (I3); what it fenced was not recorded, so
        # only the node's own addresses are lifted (I2), the rest expires
        return dict(boot_id=started['boot_id'], fenced_at=started.get('started_at'), blocklist=[],
                    networkfences=[], started_only=True)
    if isinstance(report, dict) and report:
        markers = report.get('markers')
        if isinstance(markers, dict):
            # a report of this run's format: a node it does not name has no record there
            marker = markers.get(object_name(node)) if len(markers) > 1 or node else next(iter(markers.values()), None)
            if isinstance(marker, str):
                try:
                    marker = json.loads(marker)
                except ValueError:
                    marker = None
            return marker if isinstance(marker, dict) else None
        marker = report.get('marker')
        if isinstance(marker, dict):
            return marker
        plan = report.get('fence_plan') or {}
        return dict(boot_id=(report.get('preflight') or {}).get('boot_id'), fenced_at=report.get('generated'),
                    blocklist=list(plan.get('fence') or []), networkfences=list(report.get('networkfences') or []))
    return None


def boot_id_in(text):
    """The boot_id of a record or start text; None when there is none or it is unreadable."""
    try:
        return json.loads(text).get('boot_id')
    except (TypeError, ValueError, AttributeError):
        return None


# The out-of-service taint node_failover adds (non-graceful node shutdown), and the note beside it that
# says the collection added it, so that node_recover never removes a taint someone else set.
OUT_OF_SERVICE_TAINT = {'key': OUT_OF_SERVICE_KEY, 'value': 'nodeshutdown', 'effect': 'NoExecute'}
OWN_TAINT_NOTE = 'added by volfence.csi node_failover; node_recover removes it'


def marks_patch(node, state, record=None, *, taint=False, remove_others_taint=False, finished=False):
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
        if boot_id is not None and boot_id_in(annotations.get(MARKER_ANNOTATION)) == boot_id:
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

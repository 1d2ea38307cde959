# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the preflights. node_failover's (failover_preflight: every failed node
exists and is provably down, I1 of docs/safety.md), and the pure helpers of the preflight modules
(k8s_preflight, failed_nodes_info): which pods replaced a pod that is gone, and how a missing node or
pod is told."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import ClusterView, failed_set

# The suffix the API server appends to a generateName: 5 characters of this alphabet
# (k8s.io/apimachinery/pkg/util/rand, no vowels and no look-alike characters).
_GENERATED_SUFFIX = re.compile(r'^[bcdfghjklmnpqrstvwxz2456789]{5}$')


def replacement_pods(name, pods):
    """The pods that replaced the pod `name` (gone): the other pods generated from the same
    generateName, that is by the same ReplicaSet, Job or DaemonSet revision. A StatefulSet's
    replacement keeps its name and needs no following. Sorted, Running first."""
    found = []
    for pod in pods or []:
        meta = pod.get('metadata') or {}
        prefix = meta.get('generateName') or ''
        if (prefix and name.startswith(prefix) and _GENERATED_SUFFIX.match(name[len(prefix):])
                and meta.get('name') != name and not meta.get('deletionTimestamp')):
            found.append(pod)
    return sorted(found, key=lambda p: ((p.get('status') or {}).get('phase') != 'Running', p['metadata']['name']))


def some_names(names, limit=8):
    """Up to `limit` of `names`, sorted, and how many more: for messages naming what exists."""
    names = sorted(names)
    return ', '.join(names[:limit]) + (', ... %d more' % (len(names) - limit) if len(names) > limit else '')


def missing_node(name, cluster_nodes):
    """The user's words for a node that does not exist, with the cluster's nodes."""
    return 'no node named %s (the cluster\'s nodes: %s)' % (name, some_names(cluster_nodes) or 'none')


def failover_preflight(failed_node, nodes, *, leases=None, lease_grace=120, force=False, now=None):
    """node_failover's preflight: every failed node exists and is provably down (not Ready; Lease
    older than lease_grace unless force). failed_node: a name, or a list (a rack): one live or
    unknown node refuses the whole run. Returns what the playbook needs, with `refused` (None or
    why), `nodes` (per failed node: ready, lease_age, boot_id, addresses) and `lines` (one sentence
    per failed node for the report)."""
    view = ClusterView(nodes, leases, now=now)
    failed = failed_set(failed_node)
    problems, per_node = [], {}
    for name in failed:
        facts = view.nodes.get(name)
        reason = view.alive_reason(name, lease_grace, allow_fresh_lease=bool(force))
        if facts is None:
            problems.append('node %s not found (nodes: %s)' % (name, ', '.join(sorted(view.nodes)) or 'none'))
        elif reason:
            problems.append('refusing to fence %s: %s. Fencing a live node cuts its storage.%s' % (
                name, reason.replace('node %s ' % name, 'it ', 1),
                '' if facts['ready'] == 'True' else ' Check it, then re-run with -e force=true if it is really dead.'))
        per_node[name] = dict(exists=facts is not None, ready=(facts or {}).get('ready'),
                              lease_age=(facts or {}).get('lease_age'), boot_id=(facts or {}).get('boot_id'),
                              addresses=[str(ip) for ip in (facts or {}).get('addresses') or []])
    if not failed:
        problems.append('no failed node given')
    lines = ['node %s: Ready=%s, Lease age %s s' % (n, f['ready'], f['lease_age']) for n, f in sorted(per_node.items())]
    first = per_node.get(failed[0], {}) if len(failed) == 1 else {}
    return dict(refused='; '.join(problems) or None, exists=all(f['exists'] for f in per_node.values()),
                failed_nodes=list(failed), nodes=per_node, lines=lines,
                ready=first.get('ready'), lease_age=first.get('lease_age'), boot_id=first.get('boot_id'),
                addresses=sorted(set(a for f in per_node.values() for a in f['addresses'])),
                ready_nodes=sorted(n for n in view.nodes if view.ready(n) and n not in failed),
                ready_addresses=sorted(set(str(ip) for n in view.nodes.values() if n['ready'] == 'True'
                                           for ip in n['addresses'])),
                shared_addresses=dict((str(ip), names) for ip, names in view.owners.items() if len(names) > 1),
                addressless_ready=view.addressless_ready())

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers of the preflight modules (k8s_preflight, failed_nodes_info): which pods replaced a pod
that is gone, and how a missing node or pod is told."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

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

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the plan of the node_fences role (one Unfenced NetworkFence per node).

A pure function over plain data (Node and NetworkFence objects as JSON, the role's variables); no
I/O. The role reaches it through the filter volfence.csi.node_fences_plan and hands its entries to
one call of volfence.csi.networkfence, which validates and carries them out.

Rules: a node's fence is created Unfenced; an existing Unfenced fence of the set gets its CIDRs and
labels updated (never its fenceState); a Fenced fence is left alone entirely; with prune, a fence of
the set whose node no longer exists (or whose node now has a fence of another name, after a change of
the name prefix) is deleted if Unfenced, and if Fenced only with prune_fenced (the module then
unfences it before deleting it); the fence of a selected node is never pruned, whatever its node
label says. Fences without the role's labels, or of another set, are never changed or deleted.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import node_addresses, object_name as _name
from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import normalize_cidrs

MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'volfence.csi.node_fences'
SET_LABEL = 'node-fences.volfence.io/set'
NODE_LABEL = 'node-fences.volfence.io/node'

MAX_LABEL_VALUE = 63
MAX_NAME = 253
_CUT_NAME = 242
_TRAILING_SEPARATORS = re.compile(r'[-.]+$')
_NAME_PREFIX = re.compile(r'^[a-z0-9]([-a-z0-9.]*[-a-z0-9])?$')
_LABEL_VALUE = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')


def option_problems(opts, prefix='node_fences.'):
    """Every option of a plan that cannot be made (the role's variables, or volfence.csi.networkfence's
    node_fences), each named with `prefix`: set, name_prefix, address_types, extra_cidrs."""
    problems = []
    if not _LABEL_VALUE.match(opts.get('set') or ''):
        problems.append('%sset must be a label value: at most 63 letters, digits, "-", "_", "." (got %r)'
                        % (prefix, opts.get('set')))
    name_prefix = opts.get('name_prefix') or ''
    if len(name_prefix) > 200 or (name_prefix and not _NAME_PREFIX.match(name_prefix)):
        problems.append('%sname_prefix must be empty or at most 200 lowercase letters, digits, "-" and ".", '
                        'starting with a letter or digit (got %r)' % (prefix, name_prefix))
    if not opts.get('address_types'):
        problems.append('%saddress_types must not be empty' % prefix)
    extra = opts.get('extra_cidrs') or {}
    if not isinstance(extra, dict):
        problems.append('%sextra_cidrs must map node names to lists of CIDRs' % prefix)
        extra = {}
    for node, cidrs in sorted(extra.items()):
        if not isinstance(cidrs, list) or not all(isinstance(c, str) for c in cidrs):
            problems.append('%sextra_cidrs must map node names to lists of CIDRs (got %r for %s)'
                            % (prefix, cidrs, node))
            continue
        try:
            normalize_cidrs(cidrs)
        except ValueError as exc:
            problems.append('%sextra_cidrs of %s: %s' % (prefix, node, exc))
    return problems


def check_options(opts, prefix='node_fences.'):
    """Raises ValueError naming the first problem of option_problems()."""
    problems = option_problems(opts, prefix)
    if problems:
        raise ValueError(problems[0])


def role_problems(role_vars):
    """Every problem of the node_fences role's variables (node_fences_*) that its argument spec cannot
    express: the plan's options (option_problems) and the relations between the fence's shape
    (a NetworkFenceClass, or the deprecated driver with its secret and parameters), and the bounds."""
    v = dict(role_vars or {})
    problems = option_problems(dict(set=v.get('node_fences_set'), name_prefix=v.get('node_fences_name_prefix'),
                                    address_types=v.get('node_fences_address_types'),
                                    extra_cidrs=v.get('node_fences_extra_cidrs')), 'node_fences_')
    fence_class, driver = v.get('node_fences_network_fence_class') or '', v.get('node_fences_driver') or ''
    secret_name, secret_namespace = v.get('node_fences_secret_name') or '', v.get('node_fences_secret_namespace') or ''
    if v.get('node_fences_state', 'present') != 'absent' and bool(fence_class) == bool(driver):
        problems.append('give exactly one of node_fences_network_fence_class (a NetworkFenceClass) or node_fences_driver '
                        '(the deprecated shape, with node_fences_secret_name and node_fences_secret_namespace); got class '
                        '%s and driver %s' % (json.dumps(fence_class), json.dumps(driver)))
    if driver and not (secret_name and secret_namespace):
        problems.append('node_fences_driver needs node_fences_secret_name and node_fences_secret_namespace '
                        '(the secret the driver fences with)')
    if fence_class and (secret_name or secret_namespace or v.get('node_fences_parameters')):
        problems.append('node_fences_secret_* and node_fences_parameters belong in the NetworkFenceClass %s, '
                        'not in fences that use it' % fence_class)
    if int(v.get('node_fences_wait_timeout', 0)) < 0:
        problems.append('node_fences_wait_timeout must be 0 or more')
    if int(v.get('node_fences_parallel', 1)) < 1:
        problems.append('node_fences_parallel must be at least 1')
    return problems


def _sha256(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def node_key(node):
    """The node label value of a node's fence: its name, or a hash for names over 63 characters."""
    return node if len(node) <= MAX_LABEL_VALUE else _sha256(node)[:40]


def fence_name(prefix, node):
    """prefix + node name; over 253 characters cut to 242 (without trailing '-'/'.') plus '-' and a hash."""
    full = prefix + node
    if len(full) <= MAX_NAME:
        return full
    return _TRAILING_SEPARATORS.sub('', full[:_CUT_NAME]) + '-' + _sha256(node)[:10]


def host_cidr(ip):
    """The host CIDR of an IP: /128 for IPv6, /32 for IPv4."""
    return '%s/%d' % (ip, 128 if ':' in ip else 32)


def _labels(obj):
    return ((obj or {}).get('metadata') or {}).get('labels') or {}


def _fenced(fence):
    return ((fence or {}).get('spec') or {}).get('fenceState') == 'Fenced'


def is_ours(fence, fence_set):
    """Whether the fence carries the role's labels of this set (the only fences it may change)."""
    labels = _labels(fence)
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SET_LABEL) == fence_set


def plan(nodes, fences, *, all_nodes=None, state='present', node_selector='', address_types=('InternalIP',),
         extra_cidrs=None, name_prefix='volfence-', fence_set='default', labels=None, prune=True,
         prune_fenced=False):
    """The node_fences plan.

    nodes: the selected Node objects (ignored with state absent); fences: every NetworkFence;
    all_nodes: every Node, or None when not read (needed only to prune with a node selector).

    Returns {nodes, entries, fenced, kept_fenced, pruned, nodes_without_addresses, conflicts,
    needs_all_nodes, warnings}: entries are volfence.csi.networkfence `fences` items; needs_all_nodes
    says that a fence of the set belongs to a node that is not selected, so every node must be read
    (then plan again with all_nodes) to tell a deleted node from an unselected one.
    """
    present = state == 'present'
    selected = list(nodes or []) if present else []
    types = list(address_types or [])
    extra_cidrs = extra_cidrs or {}
    fences = list(fences or [])
    by_name = dict((_name(f), f) for f in fences)
    # API order is by name; sorting makes the plan independent of the order it was given in.
    ours = sorted((f for f in fences if is_ours(f, fence_set)), key=_name)
    our_names = set(_name(f) for f in ours)

    addresses = {}
    for node in selected:
        addresses[_name(node)] = [str(ip) for kind, ip in node_addresses(node) if not types or kind in types]

    out = dict(nodes=len(selected), entries=[], fenced=[], kept_fenced=[], pruned=[], nodes_without_addresses=[],
               conflicts=[], needs_all_nodes=False, warnings=[])
    wanted = {}
    for node in sorted(addresses, key=lambda n: (n.lower(), n)):
        key = node_key(node)
        name = fence_name(name_prefix, node)
        wanted[key] = name
        cidrs = [host_cidr(ip) for ip in addresses[node]] + [str(c) for c in extra_cidrs.get(node) or []]
        fence_labels = dict(labels or {})
        fence_labels.update({MANAGED_BY_LABEL: MANAGED_BY, SET_LABEL: fence_set, NODE_LABEL: key})
        existing = by_name.get(name)
        if existing is not None and name not in our_names:
            out['conflicts'].append(name)
        elif existing is not None and _fenced(existing):
            out['fenced'].append(name)
        elif not cidrs:
            out['nodes_without_addresses'].append(node)
        elif existing is not None:
            out['entries'].append(dict(name=name, cidrs=cidrs, labels=fence_labels))
        else:
            out['entries'].append(dict(name=name, cidrs=cidrs, labels=fence_labels, fence_state='Unfenced'))

    all_keys = None if all_nodes is None else set(node_key(_name(n)) for n in all_nodes)
    wanted_names = set(wanted.values())
    for fence in ours:
        name = _name(fence)
        key = _labels(fence).get(NODE_LABEL, '')
        orphan = False
        if not present:
            orphan = True
        elif name in wanted_names:
            # A selected node's own fence, whatever its node label says (missing, or another node's):
            # it is updated above (labels included), never pruned. The retired template pruned it too,
            # so the one module call got the name twice and failed.
            pass
        elif not prune:
            pass
        elif key in wanted:
            orphan = wanted[key] != name
        elif all_keys is None:
            if node_selector:
                out['needs_all_nodes'] = True
            else:
                orphan = True
        elif key not in all_keys:
            orphan = True
        if not orphan:
            continue
        if (fence.get('metadata') or {}).get('deletionTimestamp'):
            out['warnings'].append(name + ' is already being deleted')
        elif _fenced(fence) and not prune_fenced:
            out['kept_fenced'].append(name)
        else:
            out['pruned'].append(name)
            out['entries'].append(dict(name=name, state='absent'))
    return out

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan of the node_fences role (plugins/module_utils/_decisions/node_fences.py), as a filter."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import plan as _plan, role_problems


def _objects(value, what, option):
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(o, dict) for o in value):
        raise AnsibleFilterError('node_fences_plan: %s must be a list of %s objects (as kubernetes.core.k8s_info '
                                 'returns them in resources), got %s' % (option, what, type(value).__name__))
    return list(value)


def _flag(value, option):
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise AnsibleFilterError('node_fences_plan: %s must be true or false, got %s' % (option, to_text(value)))


def node_fences_plan(nodes, *, fences, all_nodes=None, state='present', node_selector='', address_types=None,
                     extra_cidrs=None, name_prefix='volfence-', fence_set='default', labels=None, prune=True,
                     prune_fenced=False):
    """{nodes, entries, fenced, kept_fenced, pruned, nodes_without_addresses, conflicts, needs_all_nodes,
    warnings}: the one volfence.csi.networkfence call of the node_fences role and what it reports."""
    if state not in ('present', 'absent'):
        raise AnsibleFilterError('node_fences_plan: state must be present or absent, got %s' % to_text(state))
    if extra_cidrs is not None and (not isinstance(extra_cidrs, dict) or any(
            isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)) for v in extra_cidrs.values())):
        raise AnsibleFilterError('node_fences_plan: extra_cidrs must map node names to lists of CIDRs')
    if labels is not None and not isinstance(labels, dict):
        raise AnsibleFilterError('node_fences_plan: labels must be a mapping of label names to values')
    if address_types is not None and (isinstance(address_types, (str, bytes))
                                      or not isinstance(address_types, (list, tuple))):
        raise AnsibleFilterError('node_fences_plan: address_types must be a list of node address types')
    return _plan(_objects(nodes, 'Node', 'the nodes'), _objects(fences, 'NetworkFence', 'fences'),
                 all_nodes=None if all_nodes is None else _objects(all_nodes, 'Node', 'all_nodes'),
                 state=state, node_selector=to_text(node_selector or ''),
                 address_types=['InternalIP'] if address_types is None else list(address_types),
                 extra_cidrs=dict(extra_cidrs or {}), name_prefix=to_text(name_prefix or ''),
                 fence_set=to_text(fence_set), labels=dict(labels or {}), prune=_flag(prune, 'prune'),
                 prune_fenced=_flag(prune_fenced, 'prune_fenced'))


def node_fences_problems(role_vars):
    """What is wrong with the node_fences role's variables (a mapping of node_fences_* to their values)."""
    if not isinstance(role_vars, dict):
        raise AnsibleFilterError('node_fences_problems: the variables must be a mapping, got %s' % type(role_vars).__name__)
    return role_problems(role_vars)


class FilterModule(object):
    def filters(self):
        return {'node_fences_plan': node_fences_plan, 'node_fences_problems': node_fences_problems}

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks the roles (csi_addons, node_fences) share before anything is read or changed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import csi_addons_problems as _csi_addons_problems
from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import stat_problem


def kubeconfig_problems(stat_result, path, variable):
    """[] or ['<variable>: <path> <problem>'] from the registered ansible.builtin.stat of the kubeconfig
    (a skipped stat, no kubeconfig given, has none)."""
    if not isinstance(stat_result, dict):
        raise AnsibleFilterError('kubeconfig_problems: the stat result must be a mapping, got %s'
                                 % type(stat_result).__name__)
    if stat_result.get('skipped') or 'stat' not in stat_result:
        return []
    problem = stat_problem(stat_result['stat'], 'kubeconfig file')
    return ['%s: %s %s' % (variable, path, problem)] if problem else []


def csi_addons_problems(role_vars):
    """Every problem of the csi_addons role's variables that its argument spec cannot express."""
    if not isinstance(role_vars, dict):
        raise AnsibleFilterError('csi_addons_problems: the variables must be a mapping, got %s' % type(role_vars).__name__)
    try:
        return _csi_addons_problems(role_vars)
    except TypeError as err:  # a value check_type_bool cannot read as true or false
        raise AnsibleFilterError('csi_addons_problems: %s' % err)


class FilterModule(object):
    def filters(self):
        return {'kubeconfig_problems': kubeconfig_problems, 'csi_addons_problems': csi_addons_problems}

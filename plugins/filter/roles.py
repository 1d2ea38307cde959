# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks the roles (csi_addons, node_fences) share before anything is read or changed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.module_utils._inputs import stat_problem


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


class FilterModule(object):
    def filters(self):
        return {'kubeconfig_problems': kubeconfig_problems}

# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubeconfig check both roles make before anything is read (volfence.csi.kubeconfig_problems,
_inputs.stat_problem): from ansible.builtin.stat's answer on the role's host."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.roles import FilterModule as RolesFilters
from ansible_collections.volfence.csi.plugins.module_utils._inputs import FileChecks, stat_problem

FILTERS = RolesFilters().filters()


def stat_of(path):
    """What ansible.builtin.stat answers for the keys the check reads."""
    if not os.path.exists(path):
        return dict(exists=False)
    return dict(exists=True, isdir=os.path.isdir(path), readable=os.access(path, os.R_OK))


def test_a_usable_file_a_missing_one_and_a_directory(tmp_path):
    kubeconfig = tmp_path / 'kubeconfig'
    kubeconfig.write_text(u'apiVersion: v1\n')
    check = FILTERS['kubeconfig_problems']
    assert check(dict(stat=stat_of(str(kubeconfig))), str(kubeconfig), 'node_fences_kubeconfig') == []
    assert check(dict(stat=stat_of(str(tmp_path / 'gone'))), '/x/gone', 'csi_addons_kubeconfig') == [
        'csi_addons_kubeconfig: /x/gone does not exist']
    assert check(dict(stat=stat_of(str(tmp_path))), '/tmp', 'node_fences_kubeconfig') == [
        'node_fences_kubeconfig: /tmp is a directory, not a kubeconfig file']
    assert check(dict(stat=dict(exists=True, isdir=False, readable=False)), '/k', 'v') == ['v: /k is not readable']


def test_no_kubeconfig_given_has_no_problem():
    assert FILTERS['kubeconfig_problems'](dict(skipped=True, changed=False), '', 'node_fences_kubeconfig') == []
    with pytest.raises(AnsibleFilterError, match='must be a mapping'):
        FILTERS['kubeconfig_problems']('/tmp', '/tmp', 'v')


def test_the_words_are_those_of_the_controller_side_check(tmp_path):
    kubeconfig = tmp_path / 'kubeconfig'
    kubeconfig.write_text(u'x')
    for path in (str(kubeconfig), str(tmp_path / 'gone')):
        assert stat_problem(stat_of(path)) == FileChecks().readable_file(path)

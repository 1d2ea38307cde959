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
from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import FileChecks, stat_problem

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


# the role's defaults (roles/csi_addons/defaults/main.yml) as the role's tasks hand them to the filter
CSI_ADDONS_DEFAULTS = dict(
    csi_addons_manifest_source='https://github.com/csi-addons/kubernetes-csi-addons/releases/download/v0.14.0',
    csi_addons_manifest_files=['crds.yaml', 'rbac.yaml', 'setup-controller.yaml'],
    csi_addons_namespace='csi-addons-system', csi_addons_deployment='csi-addons-controller-manager',
    csi_addons_image_registry='', csi_addons_image_tag='', csi_addons_wait_timeout='300',
    csi_addons_manifest_timeout='30', csi_addons_force=False, csi_addons_remove_crds=False)


def csi_addons(**changes):
    return FILTERS['csi_addons_problems'](dict(CSI_ADDONS_DEFAULTS, **changes))


def test_csi_addons_defaults_and_a_local_mirror_have_no_problem():
    assert csi_addons() == []
    assert csi_addons(csi_addons_manifest_source='/srv/mirror', csi_addons_image_registry='registry.local:5000/mirror',
                      csi_addons_image_tag='v0.12.0', csi_addons_force='true', csi_addons_remove_crds='true') == []


@pytest.mark.parametrize('changes, problem', [
    (dict(csi_addons_manifest_source='ftp://mirror/x'),
     'csi_addons_manifest_source must be an http(s):// URL or an absolute directory (got "ftp://mirror/x")'),
    (dict(csi_addons_manifest_source='relative/dir'), 'csi_addons_manifest_source must be an http(s):// URL'),
    (dict(csi_addons_manifest_files=[]), 'csi_addons_manifest_files must not be empty'),
    (dict(csi_addons_namespace='Bad_Namespace'), 'csi_addons_namespace must be a DNS label (got "Bad_Namespace")'),
    (dict(csi_addons_namespace='ns\n'), 'csi_addons_namespace must be a DNS label'),
    (dict(csi_addons_deployment='-x'), 'csi_addons_deployment must be a DNS subdomain'),
    (dict(csi_addons_image_registry='quay.io/x:v1'), 'csi_addons_image_registry must be host[:port][/path], without tag'),
    (dict(csi_addons_image_tag='v1 2'), 'csi_addons_image_tag must be an image tag'),
    (dict(csi_addons_wait_timeout='-1'), 'csi_addons_wait_timeout must be 0 or more'),
    (dict(csi_addons_manifest_timeout=0), 'csi_addons_manifest_timeout must be more than 0'),
    (dict(csi_addons_force=True), 'csi_addons_force only applies with csi_addons_remove_crds=true'),
])
def test_each_csi_addons_problem_is_named(changes, problem):
    problems = csi_addons(**changes)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_csi_addons_problems_are_all_named_at_once():
    problems = csi_addons(csi_addons_namespace='A', csi_addons_deployment='B', csi_addons_manifest_timeout='0')
    assert [p.split(' ')[0] for p in problems] == ['csi_addons_namespace', 'csi_addons_deployment',
                                                   'csi_addons_manifest_timeout']


def test_csi_addons_problems_needs_a_mapping():
    with pytest.raises(AnsibleFilterError, match='must be a mapping'):
        FILTERS['csi_addons_problems'](['csi_addons_namespace'])

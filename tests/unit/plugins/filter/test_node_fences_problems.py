# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is wrong with the node_fences role's variables (_node_fences.role_problems, the filter
volfence.csi.node_fences_problems its validate.yml asks), checked with the same rules the plan's
module checks its node_fences options with (option_problems, check_options)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import derandomized
from ansible_collections.volfence.csi.plugins.filter.node_fences import FilterModule as NodeFencesFilters
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import (
    check_options,
    option_problems,
    role_problems,
)

PROPERTY = derandomized(2000)
FILTERS = NodeFencesFilters().filters()

DEFAULTS = dict(node_fences_state='present', node_fences_network_fence_class='', node_fences_driver='',
                node_fences_secret_name='', node_fences_secret_namespace='', node_fences_parameters={},
                node_fences_name_prefix='volfence-', node_fences_set='default',
                node_fences_address_types=['InternalIP'], node_fences_extra_cidrs={}, node_fences_wait_timeout=300,
                node_fences_parallel=16)


def role(**changes):
    return dict(DEFAULTS, **changes)


def test_a_class_alone_or_a_driver_with_its_secret_is_valid():
    assert role_problems(role(node_fences_network_fence_class='ceph-rbd')) == []
    assert role_problems(role(node_fences_driver='rbd.csi.ceph.com', node_fences_secret_name='s',
                              node_fences_secret_namespace='ns', node_fences_parameters=dict(clusterID='c'))) == []
    assert role_problems(role(node_fences_state='absent')) == []  # removal needs no shape


def test_every_problem_is_named_at_once_with_the_roles_variable_names():
    problems = role_problems(role(node_fences_set='a/b', node_fences_name_prefix='Fence_', node_fences_address_types=[],
                                  node_fences_extra_cidrs={'node-a': '10.0.0.0/8'}, node_fences_wait_timeout=-1,
                                  node_fences_parallel='0'))
    assert [p.split(' ')[0] for p in problems] == [
        'node_fences_set', 'node_fences_name_prefix', 'node_fences_address_types', 'node_fences_extra_cidrs', 'give',
        'node_fences_wait_timeout', 'node_fences_parallel']
    assert 'got class "" and driver ""' in problems[4]


def test_the_shape_relations():
    both = role_problems(role(node_fences_network_fence_class='c', node_fences_driver='d', node_fences_secret_name='s',
                              node_fences_secret_namespace='ns'))
    assert [p.split(' ')[0] for p in both] == ['give', 'node_fences_secret_*']
    assert role_problems(role(node_fences_driver='d', node_fences_secret_name='s')) == [
        'node_fences_driver needs node_fences_secret_name and node_fences_secret_namespace (the secret the driver '
        'fences with)']
    assert role_problems(role(node_fences_network_fence_class='c', node_fences_parameters=dict(clusterID='x'))) == [
        'node_fences_secret_* and node_fences_parameters belong in the NetworkFenceClass c, not in fences that use it']


def test_extra_cidrs_are_checked_as_the_module_checks_them():
    [problem] = role_problems(role(node_fences_network_fence_class='c', node_fences_extra_cidrs={'node-a': ['10.0.0.0/33']}))
    assert problem.startswith('node_fences_extra_cidrs of node-a: ')
    with pytest.raises(ValueError, match=r'^node_fences\.extra_cidrs of node-a: '):
        check_options(dict(set='default', address_types=['InternalIP'], extra_cidrs={'node-a': ['10.0.0.0/33']}))


def test_the_filter_wants_a_mapping():
    assert FILTERS['node_fences_problems'](role(node_fences_network_fence_class='c')) == []
    with pytest.raises(AnsibleFilterError, match='must be a mapping'):
        FILTERS['node_fences_problems'](['node_fences_set'])


OPTIONS = st.fixed_dictionaries(dict(
    set=st.sampled_from(['default', 'a/b', '', 'x' * 64, 'rack-3_b.c']),
    name_prefix=st.sampled_from(['volfence-', '', 'Fence_', 'a' * 201, 'f.']),
    address_types=st.sampled_from([['InternalIP'], [], ['InternalIP', 'ExternalIP']]),
    extra_cidrs=st.sampled_from([{}, {'n': ['10.0.0.0/24']}, {'n': '10.0.0.0/24'}, {'n': ['10.0.0.0/33']}, ['x'],
                                 {'n': ['fd00::/64', '10.1.0.1']}]),
))


@PROPERTY
@given(opts=OPTIONS)
def test_property_the_module_refuses_exactly_what_the_role_reports(opts):
    problems = option_problems(opts)
    if problems:
        with pytest.raises(ValueError) as raised:
            check_options(opts)
        assert str(raised.value) == problems[0]
    else:
        check_options(opts)
    role_vars = role(node_fences_network_fence_class='c', node_fences_set=opts['set'],
                     node_fences_name_prefix=opts['name_prefix'], node_fences_address_types=opts['address_types'],
                     node_fences_extra_cidrs=opts['extra_cidrs'])
    assert role_problems(role_vars) == [p.replace('node_fences.', 'node_fences_', 1) for p in problems]


@PROPERTY
@given(fence_class=st.sampled_from(['', 'c']), driver=st.sampled_from(['', 'd']), name=st.sampled_from(['', 's']),
       namespace=st.sampled_from(['', 'ns']), parameters=st.sampled_from([{}, {'clusterID': 'x'}]),
       state=st.sampled_from(['present', 'absent']))
def test_property_a_shape_is_valid_only_when_whole(fence_class, driver, name, namespace, parameters, state):
    problems = role_problems(role(node_fences_state=state, node_fences_network_fence_class=fence_class,
                                  node_fences_driver=driver, node_fences_secret_name=name,
                                  node_fences_secret_namespace=namespace, node_fences_parameters=parameters))
    class_shape = fence_class and not driver and not name and not namespace and not parameters
    driver_shape = driver and not fence_class and name and namespace
    no_shape_needed = state == 'absent' and not (driver and not (name and namespace)) and not (
        fence_class and (name or namespace or parameters))
    assert (problems == []) is bool(class_shape or driver_shape or no_shape_needed)

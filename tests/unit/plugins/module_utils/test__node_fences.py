# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/_decisions/node_fences.py on its own (standard library only, so also on the target
Pythons). The generated-cluster properties and the equivalence with the retired Jinja template are
controller tests: tests/unit/plugins/filter/test_node_fences_plan.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._decisions import node_fences as nf

OURS = {nf.MANAGED_BY_LABEL: nf.MANAGED_BY, nf.SET_LABEL: 'default'}


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_names_keys_and_cidrs():
    long_name = 'n' * 250
    assert nf.node_key('worker-1') == 'worker-1' and nf.node_key('x' * 63) == 'x' * 63
    assert nf.node_key(long_name) == _sha(long_name)[:40]
    node = 'a' * 232 + '.-' + 'b' * 19
    cut = nf.fence_name('volfence-', node)
    assert cut == ('volfence-' + node)[:242].rstrip('-.') + '-' + _sha(node)[:10] and len(cut) <= 253
    assert nf.fence_name('volfence-', 'w1') == 'volfence-w1'
    assert nf.host_cidr('fd00::1') == 'fd00::1/128' and nf.host_cidr('10.0.0.1') == '10.0.0.1/32'


def test_plan_of_a_small_cluster():
    nodes = [{'metadata': {'name': 'b'}, 'status': {'addresses': [{'type': 'InternalIP', 'address': '10.0.0.2'},
                                                                  {'type': 'ExternalIP', 'address': '203.0.113.2'}]}},
             {'metadata': {'name': 'a'}, 'status': {'addresses': [{'type': 'Hostname', 'address': 'a'}]}}]
    fences = [{'metadata': {'name': 'volfence-b', 'labels': dict(OURS, **{nf.NODE_LABEL: 'b'})},
               'spec': {'fenceState': 'Unfenced', 'cidrs': ['10.0.0.9/32']}},
              {'metadata': {'name': 'volfence-gone', 'labels': dict(OURS, **{nf.NODE_LABEL: 'gone'})},
               'spec': {'fenceState': 'Unfenced'}},
              {'metadata': {'name': 'theirs', 'labels': {nf.NODE_LABEL: 'gone'}}, 'spec': {'fenceState': 'Unfenced'}}]
    plan = nf.plan(nodes, fences, extra_cidrs={'b': ['10.1.0.0/28']})
    assert plan == dict(
        nodes=2, entries=[dict(name='volfence-b', cidrs=['10.0.0.2/32', '10.1.0.0/28'], labels=dict(OURS, **{nf.NODE_LABEL: 'b'})),
                          dict(name='volfence-gone', state='absent')],
        fenced=[], kept_fenced=[], pruned=['volfence-gone'], nodes_without_addresses=['a'], conflicts=[],
        needs_all_nodes=False, warnings=[])
    removal = nf.plan(nodes, fences, state='absent')
    assert removal['nodes'] == 0 and removal['pruned'] == ['volfence-b', 'volfence-gone']


def test_a_selected_nodes_own_fence_is_never_pruned_whatever_its_node_label():
    """Found by the property test: the retired template pruned a selected node's fence whose node label
    was missing or named another node (an Unfenced one was then both updated and deleted, a Fenced one
    unfenced and deleted with prune_fenced)."""
    nodes = [{'metadata': {'name': 'a'}, 'status': {'addresses': [{'type': 'InternalIP', 'address': '10.0.0.1'}]}},
             {'metadata': {'name': 'b'}, 'status': {'addresses': [{'type': 'InternalIP', 'address': '10.0.0.2'}]}}]
    fences = [{'metadata': {'name': 'volfence-a', 'labels': dict(OURS)}, 'spec': {'fenceState': 'Unfenced'}},
              {'metadata': {'name': 'volfence-b', 'labels': dict(OURS, **{nf.NODE_LABEL: 'a'})},
               'spec': {'fenceState': 'Fenced'}}]
    plan = nf.plan(nodes, fences, prune_fenced=True)
    assert plan['pruned'] == [] and plan['kept_fenced'] == [] and plan['fenced'] == ['volfence-b']
    assert plan['entries'] == [dict(name='volfence-a', cidrs=['10.0.0.1/32'], labels=dict(OURS, **{nf.NODE_LABEL: 'a'}))]


GOOD_OPTIONS = dict(set='default', name_prefix='volfence-', address_types=['InternalIP'],
                    extra_cidrs={'a': ['10.0.0.0/24']})


@pytest.mark.parametrize('change, message', [
    (dict(set='a/b'), "node_fences.set must be a label value: at most 63 letters, digits, \"-\", \"_\", \".\" (got 'a/b')"),
    (dict(set=''), 'node_fences.set must be a label value'),
    (dict(name_prefix='Fence_'), "node_fences.name_prefix must be empty or at most 200 lowercase letters"),
    (dict(name_prefix='a' * 201), 'node_fences.name_prefix must be empty or at most 200'),
    (dict(address_types=[]), 'node_fences.address_types must not be empty'),
    (dict(extra_cidrs={'a': '10.0.0.0/8'}), "node_fences.extra_cidrs must map node names to lists of CIDRs "
                                            "(got '10.0.0.0/8' for a)"),
    (dict(extra_cidrs={'a': ['10.0.0.5/8']}), "node_fences.extra_cidrs of a: CIDR '10.0.0.5/8' is ambiguous"),
    (dict(extra_cidrs={'a': ['not-a-cidr']}), "node_fences.extra_cidrs of a: CIDR 'not-a-cidr' is not an IP address"),
])
def test_check_options_names_what_is_wrong(change, message):
    with pytest.raises(ValueError) as info:
        nf.check_options(dict(GOOD_OPTIONS, **change))
    assert message in str(info.value)


def test_check_options_accepts_the_role_defaults_and_an_empty_prefix():
    nf.check_options(GOOD_OPTIONS)
    nf.check_options(dict(GOOD_OPTIONS, name_prefix='', extra_cidrs={}))

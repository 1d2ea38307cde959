# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_fences plan (plugins/module_utils/_decisions/node_fences.py, filter volfence.csi.node_fences_plan).
A controller test (it renders with Ansible's Templar), hence under filter/, not module_utils/.

It replaced roles/node_fences/templates/plan.json.j2 (issue 16). That template is kept as a fixture
(fixtures/node_fences_plan.json.j2, exactly the last version the role used) and rendered by Ansible's
own Templar: on generated clusters the Python plan decides exactly what the template decided. The
invariants are checked on their own: every selected node with an address gets exactly one fence with
its current addresses; a fence of the set is deleted only when its node is gone (or has a fence of
another name); fences the role did not make are never changed or deleted; the order of nodes and
fences does not matter."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.diagnose import node_addresses as node_addresses_filter
from ansible_collections.volfence.csi.plugins.filter.node_fences import FilterModule
from ansible_collections.volfence.csi.plugins.module_utils._decisions import node_fences as nf

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'node_fences_plan.json.j2')
PLAN = FilterModule().filters()['node_fences_plan']
OURS = {nf.MANAGED_BY_LABEL: nf.MANAGED_BY, nf.SET_LABEL: 'default'}
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------- generated clusters

def _long(stem, length):
    return (stem + '-' + 'x' * length)[:length].rstrip('-.') or stem


NODE_NAMES = ['a', 'b', 'c', 'node-1', 'node-2', 'w.example.com', _long('long', 70), _long('huge', 250),
              _long('huge', 240) + '.z', _long('edge', 63), _long('edge2', 64)]
IPS = ['10.0.0.1', '10.0.0.2', '10.0.0.3', 'fd00::1', 'fd00::2', '::ffff:10.0.0.9', '192.0.2.7', 'not-an-ip', 'host-a']
TYPES = ['InternalIP', 'ExternalIP', 'Hostname', 'InternalDNS']
PREFIXES = ['volfence-', '', 'nf.', _long('p', 200)]


@st.composite
def node_objects(draw, name):
    addresses = draw(st.lists(st.tuples(st.sampled_from(TYPES), st.sampled_from(IPS)), max_size=4))
    labels = draw(st.sampled_from([{}, {'role': 'storage'}]))
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels},
            'status': {'addresses': [{'type': t, 'address': a} for t, a in addresses]}}


@st.composite
def fence_objects(draw, name, node_names):
    owner = draw(st.sampled_from(['ours', 'ours', 'other-set', 'foreign', 'unlabelled', 'null-labels']))
    key = draw(st.sampled_from([nf.node_key(n) for n in node_names] + ['gone', '']))
    labels = {'ours': dict(OURS), 'other-set': dict(OURS, **{nf.SET_LABEL: 'cephfs'}),
              'foreign': {'team': 'storage'}, 'unlabelled': {}, 'null-labels': None}[owner]
    if labels is not None and owner != 'unlabelled' and draw(st.booleans()):
        labels[nf.NODE_LABEL] = key
    metadata = {'name': name, 'labels': labels}
    if draw(st.integers(0, 9)) == 0:
        metadata['deletionTimestamp'] = '2026-01-01T00:00:00Z'
    spec = draw(st.sampled_from([{'fenceState': 'Unfenced', 'cidrs': ['10.0.0.1/32']},
                                 {'fenceState': 'Fenced', 'cidrs': ['10.0.0.2/32']}, {'fenceState': 'Unfenced'}]))
    return {'apiVersion': 'csiaddons.openshift.io/v1alpha1', 'kind': 'NetworkFence', 'metadata': metadata, 'spec': spec}


@st.composite
def clusters(draw):
    all_names = draw(st.lists(st.sampled_from(NODE_NAMES), unique=True, max_size=7))
    nodes = [draw(node_objects(n)) for n in all_names]
    selector = draw(st.sampled_from(['', 'role=storage']))
    selected = [n for n in nodes if not selector or n['metadata']['labels'].get('role') == 'storage']
    prefix = draw(st.sampled_from(PREFIXES))
    candidates = sorted(set([nf.fence_name(p, n) for p in PREFIXES[:3] for n in NODE_NAMES] + ['unrelated']))
    fence_names = draw(st.lists(st.sampled_from(candidates), unique=True, max_size=8))
    fences = [draw(fence_objects(n, NODE_NAMES)) for n in fence_names]
    options = dict(
        state=draw(st.sampled_from(['present', 'present', 'absent'])),
        node_selector=selector,
        address_types=draw(st.sampled_from([['InternalIP'], ['InternalIP', 'ExternalIP'], ['ExternalIP'],
                                            ['Hostname']])),
        extra_cidrs=draw(st.sampled_from([{}, {'a': ['10.9.0.0/28']}, {'b': ['fd00:9::/64', '10.8.0.0/30'],
                                                                       'gone': ['10.7.0.0/29']}])),
        name_prefix=prefix, fence_set='default',
        labels=draw(st.sampled_from([{}, {'team': 'storage'}])),
        prune=draw(st.booleans()), prune_fenced=draw(st.booleans()))
    all_nodes = nodes if draw(st.booleans()) else None
    return selected, fences, all_nodes, options


# --------------------------------------------------------------------------- the template, as the role rendered it

_TEMPLAR = {}


# The template's one collection filter, volfence.csi.node_addresses (plugins/filter/diagnose.py), is
# called directly: Ansible's plugin loader resolves FQCN filters only through the collection finder,
# which cannot be installed once ansible_collections was imported as a plain package (pytest with
# PYTHONPATH). The rest of the template is rendered by Ansible's Templar as the role rendered it.
_ADDRESSES_CALL = "selected | volfence.csi.node_addresses(types=node_fences_address_types)"


def render_template(selected, fences, all_nodes, options):
    """The retired template, rendered by Ansible's Templar with the role's variables."""
    if not _TEMPLAR:
        from ansible.parsing.dataloader import DataLoader
        from ansible.template import Templar
        try:
            from ansible.template import trust_as_template
        except ImportError:  # ansible-core < 2.19: every template string is trusted
            def trust_as_template(text):
                return text
        with open(FIXTURE) as handle:
            text = handle.read()
        assert text.count(_ADDRESSES_CALL) == 1
        _TEMPLAR['text'] = trust_as_template(text.replace(_ADDRESSES_CALL, 'node_fences__test_addresses'))
        _TEMPLAR['loader'] = DataLoader()
        _TEMPLAR['Templar'] = Templar
    variables = dict(
        node_fences_state=options['state'], node_fences_node_selector=options['node_selector'],
        node_fences_address_types=options['address_types'], node_fences_extra_cidrs=options['extra_cidrs'],
        node_fences_name_prefix=options['name_prefix'], node_fences_set=options['fence_set'],
        node_fences_labels=options['labels'], node_fences_prune=options['prune'],
        node_fences_prune_fenced=options['prune_fenced'],
        node_fences__managed_by_label=nf.MANAGED_BY_LABEL, node_fences__managed_by=nf.MANAGED_BY,
        node_fences__set_label=nf.SET_LABEL, node_fences__node_label=nf.NODE_LABEL,
        # the API lists fences by name; the node read is skipped (no resources) with state absent
        node_fences__fences={'resources': sorted(fences, key=lambda f: f['metadata']['name'])},
        node_fences__nodes={'resources': selected} if options['state'] == 'present' else {'skipped': True})
    variables['node_fences__test_addresses'] = node_addresses_filter(
        selected if options['state'] == 'present' else [], types=options['address_types'])
    if all_nodes is not None:
        variables['node_fences__all_nodes'] = {'resources': all_nodes}
    templar = _TEMPLAR['Templar'](loader=_TEMPLAR['loader'], variables=variables)
    return json.loads(templar.template(_TEMPLAR['text']))


# 100 new random clusters a run (400 before: 130 s, the unit stage's longest test, each example a render
# by Ansible's Templar): each run searches afresh, and what the plan must hold is checked by the
# properties below, with 1,000 to 2,000 examples each (README, "What runs where").
@settings(max_examples=100, **SETTINGS)
@given(clusters())
def test_the_python_plan_decides_exactly_what_the_template_decided(cluster):
    """Exactly, except where the template was wrong: it treated the fence of a selected node as an orphan
    when that fence's node label was missing or named another node. An Unfenced one was both updated
    and pruned (the one module call got its name twice and failed), a Fenced one was unfenced and
    deleted with prune_fenced (and with a node selector every node was read for it). The Python plan
    never prunes a selected node's own fence."""
    selected, fences, all_nodes, options = cluster
    plan = PLAN(selected, fences=fences, all_nodes=all_nodes, **options)
    template = render_template(selected, fences, all_nodes, options)
    own = set(nf.fence_name(options['name_prefix'], n['metadata']['name']) for n in selected) \
        if options['state'] == 'present' else set()
    for key in ('pruned', 'kept_fenced'):
        assert not own & set(plan[key])
        template[key] = [name for name in template[key] if name not in own]
    assert not [w for w in plan['warnings'] if w.split(' ')[0] in own]
    template['warnings'] = [w for w in template['warnings'] if w.split(' ')[0] not in own]
    template['entries'] = [e for e in template['entries'] if not (e['name'] in own and e.get('state') == 'absent')]
    if template['needs_all_nodes'] and not plan['needs_all_nodes']:
        # the template also read every node for such a fence, the Python plan only for other nodes' fences
        keys = set(nf.node_key(n['metadata']['name']) for n in selected)
        assert not [f for f in fences if nf.is_ours(f, 'default') and f['metadata']['name'] not in own
                    and f['metadata']['labels'].get(nf.NODE_LABEL, '') not in keys]
        template['needs_all_nodes'] = False
    assert plan == template


def test_the_template_equivalence_covers_every_outcome():
    """The generated clusters reach every branch of the plan (else the equivalence proves little)."""
    seen = set()
    rnd = random.Random(16)
    for _i in range(300):
        selected, fences, all_nodes, options = _draw(rnd)
        plan = PLAN(selected, fences=fences, all_nodes=all_nodes, **options)
        for key in ('fenced', 'kept_fenced', 'pruned', 'nodes_without_addresses', 'conflicts', 'warnings'):
            if plan[key]:
                seen.add(key)
        if plan['needs_all_nodes']:
            seen.add('needs_all_nodes')
        if any('fence_state' in e for e in plan['entries']):
            seen.add('create')
        if any('fence_state' not in e and 'state' not in e for e in plan['entries']):
            seen.add('update')
    assert seen == {'fenced', 'kept_fenced', 'pruned', 'nodes_without_addresses', 'conflicts', 'warnings',
                    'needs_all_nodes', 'create', 'update'}


def _draw(rnd):
    """A cluster drawn with a seeded random generator, like clusters() (reproducible, for the coverage check)."""
    names = rnd.sample(NODE_NAMES, rnd.randint(0, 7))
    nodes = []
    for name in names:
        addresses = [{'type': rnd.choice(TYPES), 'address': rnd.choice(IPS)} for _j in range(rnd.randint(0, 4))]
        nodes.append({'metadata': {'name': name, 'labels': rnd.choice([{}, {'role': 'storage'}])},
                      'status': {'addresses': addresses}})
    selector = rnd.choice(['', 'role=storage'])
    selected = [n for n in nodes if not selector or n['metadata']['labels'].get('role') == 'storage']
    candidates = sorted(set([nf.fence_name(p, n) for p in PREFIXES[:3] for n in NODE_NAMES]))
    fences = []
    for name in rnd.sample(candidates, rnd.randint(0, 8)):
        labels = rnd.choice([dict(OURS), dict(OURS), {'team': 'storage'}, None])
        if labels is not None and rnd.random() < 0.7:
            labels[nf.NODE_LABEL] = rnd.choice([nf.node_key(n) for n in NODE_NAMES] + ['gone'])
        metadata = {'name': name, 'labels': labels}
        if rnd.random() < 0.1:
            metadata['deletionTimestamp'] = '2026-01-01T00:00:00Z'
        fences.append({'metadata': metadata, 'spec': {'fenceState': rnd.choice(['Fenced', 'Unfenced'])}})
    options = dict(state=rnd.choice(['present', 'present', 'absent']), node_selector=selector,
                   address_types=rnd.choice([['InternalIP'], ['ExternalIP']]), extra_cidrs={},
                   name_prefix=rnd.choice(PREFIXES[:3]), fence_set='default', labels={},
                   prune=rnd.random() < 0.8, prune_fenced=rnd.random() < 0.5)
    return selected, fences, (nodes if rnd.random() < 0.5 else None), options


# --------------------------------------------------------------------------- the invariants

def _addresses(node, types):
    out = []
    for entry in node['status']['addresses']:
        try:
            import ipaddress
            ip = ipaddress.ip_address(entry['address'])
        except ValueError:
            continue
        if ip not in [i for _t, i in out]:
            out.append((entry['type'], ip))
    return [nf.host_cidr(str(ip)) for t, ip in out if t in types]


@settings(max_examples=2000, **SETTINGS)
@given(clusters())
def test_every_selected_node_gets_exactly_one_fence_with_its_current_addresses(cluster):
    selected, fences, all_nodes, options = cluster
    plan = PLAN(selected, fences=fences, all_nodes=all_nodes, **options)
    if options['state'] == 'absent':
        assert plan['nodes'] == 0 and all(e['state'] == 'absent' for e in plan['entries'])
        return
    by_name = dict((f['metadata']['name'], f) for f in fences)
    writes = [e for e in plan['entries'] if e.get('state') != 'absent']
    assert len(set(e['name'] for e in writes)) == len(writes)
    for node in selected:
        node_name = node['metadata']['name']
        name = nf.fence_name(options['name_prefix'], node_name)
        assert len(name) <= 253
        cidrs = _addresses(node, options['address_types']) + list(options['extra_cidrs'].get(node_name, []))
        mine = [e for e in writes if e['name'] == name]
        existing = by_name.get(name)
        if existing is not None and not nf.is_ours(existing, 'default'):
            assert name in plan['conflicts'] and not mine
        elif existing is not None and (existing.get('spec') or {}).get('fenceState') == 'Fenced':
            assert name in plan['fenced'] and not mine  # a Fenced fence is left alone: no state, no CIDRs
        elif not cidrs:
            assert node_name in plan['nodes_without_addresses'] and not mine
        else:
            assert len(mine) == 1 and mine[0]['cidrs'] == cidrs
            assert mine[0]['labels'][nf.NODE_LABEL] == nf.node_key(node_name)
            assert mine[0].get('fence_state', 'Unfenced') == 'Unfenced' and (existing is None) == ('fence_state' in mine[0])
            assert name not in plan['pruned']


@settings(max_examples=2000, **SETTINGS)
@given(clusters())
def test_a_fence_of_the_set_is_deleted_only_when_its_node_is_gone_and_others_are_never_touched(cluster):
    selected, fences, all_nodes, options = cluster
    plan = PLAN(selected, fences=fences, all_nodes=all_nodes, **options)
    by_name = dict((f['metadata']['name'], f) for f in fences)
    selected_names = set(n['metadata']['name'] for n in selected)
    for entry in plan['entries']:
        existing = by_name.get(entry['name'])
        # fences the role did not make (or of another set) are never changed nor deleted
        assert existing is None or nf.is_ours(existing, 'default')
        if entry.get('state') != 'absent':
            continue
        assert entry['name'] in plan['pruned']
        assert not existing['metadata'].get('deletionTimestamp')
        assert (existing.get('spec') or {}).get('fenceState') != 'Fenced' or options['prune_fenced']
        if options['state'] == 'absent':
            continue
        assert options['prune']
        key = existing['metadata']['labels'].get(nf.NODE_LABEL, '')
        wanted = [n for n in selected_names if nf.node_key(n) == key]
        if wanted:  # its node has a fence of another name now
            assert all(nf.fence_name(options['name_prefix'], n) != entry['name'] for n in wanted)
        elif options['node_selector']:
            assert all_nodes is not None and key not in [nf.node_key(n['metadata']['name']) for n in all_nodes]
        else:
            assert key not in [nf.node_key(n) for n in selected_names]
    if not options['prune'] and options['state'] == 'present':
        assert plan['pruned'] == [] and plan['kept_fenced'] == []


@settings(max_examples=1000, **SETTINGS)
@given(clusters(), st.randoms(use_true_random=False))
def test_the_plan_does_not_depend_on_the_order_of_nodes_and_fences(cluster, rnd):
    selected, fences, all_nodes, options = cluster
    plan = PLAN(selected, fences=fences, all_nodes=all_nodes, **options)
    shuffled = list(selected)
    rnd.shuffle(shuffled)
    fences_shuffled = list(fences)
    rnd.shuffle(fences_shuffled)
    all_shuffled = None if all_nodes is None else rnd.sample(all_nodes, len(all_nodes))
    assert PLAN(shuffled, fences=fences_shuffled, all_nodes=all_shuffled, **options) == plan


# --------------------------------------------------------------------------- examples

def node(name, *addresses):
    return {'metadata': {'name': name}, 'status': {'addresses': [{'type': t, 'address': a} for t, a in addresses]}}


def fence(name, state='Unfenced', key=None, labels=None):
    labels = dict(OURS if labels is None else labels)
    if key is not None:
        labels[nf.NODE_LABEL] = key
    return {'metadata': {'name': name, 'labels': labels}, 'spec': {'fenceState': state, 'cidrs': ['10.0.0.1/32']}}


def test_a_second_run_plans_updates_only_for_its_own_unfenced_fences():
    plan = PLAN([node('a', ('InternalIP', '10.0.0.1')), node('b', ('InternalIP', '10.0.0.2'))],
                fences=[fence('volfence-a', key='a'), fence('volfence-b', 'Fenced', key='b'),
                        fence('volfence-gone', key='gone'), fence('volfence-gone2', 'Fenced', key='gone2'),
                        fence('theirs', key='gone', labels={'team': 'x'})])
    assert plan['entries'] == [
        {'name': 'volfence-a', 'cidrs': ['10.0.0.1/32'],
         'labels': dict(OURS, **{nf.NODE_LABEL: 'a'})},
        {'name': 'volfence-gone', 'state': 'absent'}]
    assert plan['fenced'] == ['volfence-b'] and plan['kept_fenced'] == ['volfence-gone2']
    assert plan['pruned'] == ['volfence-gone'] and plan['nodes'] == 2


def test_with_a_selector_an_unselected_node_needs_every_node():
    fences = [fence('volfence-b', key='b'), fence('volfence-c', key='c')]
    first = PLAN([node('a', ('InternalIP', '10.0.0.1'))], fences=fences, node_selector='role=storage')
    assert first['needs_all_nodes'] and first['pruned'] == []
    again = PLAN([node('a', ('InternalIP', '10.0.0.1'))], fences=fences, all_nodes=[node('a'), node('b')],
                 node_selector='role=storage')
    assert not again['needs_all_nodes'] and again['pruned'] == ['volfence-c']


@pytest.mark.parametrize('call, message', [
    (lambda: PLAN('nodes', fences=[]), 'the nodes must be a list of Node objects'),
    (lambda: PLAN([], fences=[1]), 'fences must be a list of NetworkFence objects'),
    (lambda: PLAN([], fences=[], state='gone'), 'state must be present or absent'),
    (lambda: PLAN([], fences=[], extra_cidrs={'a': '10.0.0.0/8'}), 'extra_cidrs must map node names to lists of CIDRs'),
    (lambda: PLAN([], fences=[], prune='maybe'), 'prune must be true or false'),
    (lambda: PLAN([], fences=[], address_types='InternalIP'), 'address_types must be a list'),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import (
    CREATE,
    DELETE,
    NONE,
    UNFENCE_DELETE,
    UPDATE,
    NodeIndex,
    build_requests,
    coverage_refusals,
    fence_driver,
    fence_outcome,
    fence_report,
    normalize_cidr,
    normalize_cidrs,
    plan_fence,
    same_cidrs,
)

SECRET = dict(name='csi-rbd-secret', namespace='ceph-csi')


def params(**kwargs):
    base = dict(name=None, fences=None, state='present', fence_state=None, cidrs=None, driver=None, secret=None,
                parameters=None, network_fence_class=None, labels=None)
    base.update(kwargs)
    return base


def one(**kwargs):
    return build_requests(params(**kwargs))[0]


def fence(name='nf', state='Fenced', cidrs=('10.0.3.12/32',), cls=None, driver='rbd.csi.ceph.com', secret=None,
          parameters=None, labels=None, status=None, generation=1, deleting=None):
    spec = dict(fenceState=state, cidrs=list(cidrs))
    if cls:
        spec['networkFenceClassName'] = cls
    else:
        spec.update(driver=driver, secret=dict(secret or SECRET))
        if parameters:
            spec['parameters'] = dict(parameters)
    meta = dict(name=name, uid='u-' + name, resourceVersion='5', generation=generation,
                finalizers=['csiaddons.openshift.io/network-fence'])
    if labels:
        meta['labels'] = dict(labels)
    if deleting:
        meta['deletionTimestamp'] = deleting
    obj = dict(apiVersion='csiaddons.openshift.io/v1alpha1', kind='NetworkFence', metadata=meta, spec=spec)
    if status:
        obj['status'] = status
    return obj


def nodes():
    def n(name, ip, ready):
        return dict(metadata=dict(name=name), status=dict(
            addresses=[dict(type='InternalIP', address=ip), dict(type='Hostname', address=name)],
            conditions=[dict(type='Ready', status=ready)]))
    return [n('node-a', '10.0.3.11', 'True'), n('node-b', '10.0.3.12', 'Unknown'), n('node-c', '10.0.3.13', 'True'),
            n('node-v6', 'fd00::13', 'True')]


# --------------------------------------------------------------------------- CIDRs

@pytest.mark.parametrize('value, expected', [
    ('10.0.3.12/32', '10.0.3.12/32'), ('10.0.3.12', '10.0.3.12/32'), (' 10.0.3.0/24 ', '10.0.3.0/24'),
    ('fd00::/120', 'fd00::/120'), ('FD00:0:0::0/120', 'fd00::/120'), ('fd00::13', 'fd00::13/128'),
    ('10.0.0.0/255.255.255.0', '10.0.0.0/24'),
])
def test_normalize_cidr(value, expected):
    assert normalize_cidr(value) == expected


@pytest.mark.parametrize('value, message', [
    ('10.0.3.5/24', "CIDR '10.0.3.5/24' is ambiguous (host bits set): write 10.0.3.0/24 for the whole network, "
                    "or 10.0.3.5/32 for the single address"),
    ('fd00::13/120', 'is ambiguous (host bits set): write fd00::/120 for the whole network'),
    ('10.0.3.300/32', "is not a CIDR ('10.0.3.300' is not an IP address)"),
    ('10.0.3.0/33', 'is not a CIDR (prefix length 33 is out of range for IPv4: 0-32)'),
    ('fd00::/129', 'is not a CIDR (prefix length 129 is out of range for IPv6: 0-128)'),
    ('node-b', "CIDR 'node-b' is not an IP address"),
    ('10.0.0.1; rm -rf /', "CIDR '10.0.0.1; rm -rf /' is not a CIDR ('10.0.0.1; rm -rf' is not an IP address)"),
    ('0.0.0.0/0', 'would fence every address'),
    ('::/0', 'would fence every address'),
    ('', 'CIDR is empty'),
])
def test_bad_cidrs(value, message):
    with pytest.raises(ValueError) as info:
        normalize_cidr(value)
    assert message in str(info.value)


def test_normalize_cidrs_dedupes_and_lists_every_error():
    assert normalize_cidrs(['10.0.3.12', '10.0.3.12/32', 'fd00::/120']) == ['10.0.3.12/32', 'fd00::/120']
    with pytest.raises(ValueError) as info:
        normalize_cidrs(['10.0.3.5/24', 'x', '10.0.3.12'])
    assert 'host bits' in str(info.value) and "'x' is not an IP address" in str(info.value)


def test_same_cidrs_ignores_order_and_spelling():
    assert same_cidrs(['10.0.3.12/32', 'fd00::/120'], ['FD00::/120', '10.0.3.12'])
    assert not same_cidrs(['10.0.3.12/32'], ['10.0.3.13/32'])


# --------------------------------------------------------------------------- node coverage

def test_coverage():
    index = NodeIndex(nodes())
    assert index.coverage(['10.0.3.12/32']) == [dict(name='node-b', ready='Unknown', addresses=['10.0.3.12'],
                                                     cidrs=['10.0.3.12/32'])]
    covered = index.coverage(['10.0.3.0/24', '10.0.3.12/32'])
    assert [(n['name'], n['ready'], n['cidrs']) for n in covered] == [
        ('node-a', 'True', ['10.0.3.0/24']), ('node-b', 'Unknown', ['10.0.3.0/24', '10.0.3.12/32']),
        ('node-c', 'True', ['10.0.3.0/24'])]
    assert [n['name'] for n in index.coverage(['fd00::/120'])] == ['node-v6']
    assert index.coverage(['192.168.0.0/16']) == []


def test_coverage_refusals_only_for_newly_fenced_ready_nodes():
    index = NodeIndex(nodes())
    create = plan_fence(one(name='nf', cidrs=['10.0.3.8/29', '10.0.3.12'], fence_state='Fenced',
                            network_fence_class='rbd'), None)
    assert create.newly_fenced == ['10.0.3.8/29', '10.0.3.12/32']
    refusals = coverage_refusals([create], index)
    assert refusals == ['NetworkFence nf would fence Ready node(s) node-a (10.0.3.11 via 10.0.3.8/29), '
                        'node-c (10.0.3.13 via 10.0.3.8/29)']
    assert coverage_refusals([plan_fence(one(name='nf', cidrs=['10.0.3.12'], fence_state='Fenced',
                                             network_fence_class='rbd'), None)], index) == []
    unfenced = plan_fence(one(name='nf', cidrs=['10.0.3.0/24'], fence_state='Unfenced', network_fence_class='x'),
                          None)
    assert coverage_refusals([unfenced], index) == []
    # a fence already Fenced on node-a's address is left alone; adding node-b's is fine
    existing = fence(cidrs=['10.0.3.11/32'])
    update = plan_fence(one(name='nf', cidrs=['10.0.3.11/32', '10.0.3.12/32']), existing)
    assert update.newly_fenced == ['10.0.3.12/32'] and coverage_refusals([update], index) == []
    # Unfenced -> Fenced re-fences everything
    flip = plan_fence(one(name='nf', fence_state='Fenced'), fence(state='Unfenced', cidrs=['10.0.3.11/32']))
    assert flip.newly_fenced == ['10.0.3.11/32'] and len(coverage_refusals([flip], index)) == 1


def node_obj(name, ready, *addresses):
    """A Node listing `addresses` as (type, address) pairs (a bare string is an InternalIP)."""
    listed = [dict(type='InternalIP', address=a) if isinstance(a, str) else dict(type=a[0], address=a[1])
              for a in addresses]
    return dict(metadata=dict(name=name), status=dict(addresses=listed + [dict(type='Hostname', address=name)],
                                                      conditions=[dict(type='Ready', status=ready)]))


def fenced(*cidrs):
    return plan_fence(one(name='nf', cidrs=list(cidrs), fence_state='Fenced', network_fence_class='rbd'), None)


@pytest.mark.parametrize('cidr', ['::ffff:10.0.3.11/128', '::ffff:10.0.3.0/120', '::ffff:a00:30b/128',
                                  '::ffff:10.0.3.8/125', '::ffff:10.0.3.11'])
def test_i1_ipv4_mapped_ipv6_cidrs_cover_the_ready_node(cidr):
    """I1 (issue 11 item 4): an IPv4-mapped IPv6 CIDR is the IPv4 range it maps; it no longer passes the
    Ready-node interlock (before: ::ffff:10.0.3.11/128 covered nothing)."""
    index = NodeIndex(nodes())
    assert [n['name'] for n in index.coverage([normalize_cidr(cidr)]) if n['ready'] == 'True'][:1] == ['node-a']
    refusals = coverage_refusals([fenced(cidr)], index)
    assert refusals and 'would fence Ready node(s) node-a (10.0.3.11 via' in refusals[0]


def test_i1_a_node_listing_a_mapped_address_is_seen_as_its_ipv4():
    """I1: a node whose status lists ::ffff:10.0.3.21 (any address type) is covered by 10.0.3.21/32."""
    index = NodeIndex([node_obj('node-m', 'True', ('ExternalIP', '::ffff:10.0.3.21'))])
    assert index.coverage(['10.0.3.21/32']) == [dict(name='node-m', ready='True', addresses=['10.0.3.21'],
                                                     cidrs=['10.0.3.21/32'])]
    assert 'node-m (10.0.3.21 via 10.0.3.16/28)' in coverage_refusals([fenced('10.0.3.16/28')], index)[0]


@pytest.mark.parametrize('ready_first', [True, False])
@pytest.mark.parametrize('spelling', ['10.0.3.30', '::ffff:10.0.3.30'])
def test_i1_an_address_shared_with_a_ready_node_is_refused_whatever_the_names_order(ready_first, spelling):
    """I1 (issue 11 item 1, networkfence side): an address two nodes list, one of them Ready, is refused
    whatever the names' order and spelling (ExternalIP included)."""
    names = ('aaa', 'zzz') if ready_first else ('zzz', 'aaa')
    index = NodeIndex([node_obj(names[0], 'True', '10.0.3.31', ('ExternalIP', spelling)),
                       node_obj(names[1], 'Unknown', '10.0.3.30')])
    refusals = coverage_refusals([fenced('10.0.3.30/32')], index)
    assert 'would fence Ready node(s) %s (10.0.3.30 via 10.0.3.30/32)' % names[0] in refusals[0]
    assert refusals[1] == 'NetworkFence nf would fence address(es) that several nodes list: 10.0.3.30 (nodes aaa, ' \
                          'zzz, via 10.0.3.30/32)'


def test_i1_an_address_two_not_ready_nodes_share_is_refused():
    index = NodeIndex([node_obj('node-x', 'Unknown', '10.0.3.40'), node_obj('node-y', 'False', '10.0.3.41',
                                                                            ('ExternalIP', '10.0.3.40'))])
    assert coverage_refusals([fenced('10.0.3.41/32')], index) == []
    assert coverage_refusals([fenced('10.0.3.40/32')], index) == [
        'NetworkFence nf would fence address(es) that several nodes list: 10.0.3.40 (nodes node-x, node-y, via '
        '10.0.3.40/32)']


def test_i1_a_ready_node_without_any_ip_blocks_fencing_unlisted_addresses():
    """I1 (issue 11 item 4): while a Ready node lists no IP, a CIDR holding an address no node lists could be
    that node's and is refused (the message names the node); CIDRs whose every address NotReady nodes list
    stay allowed."""
    both = [node_obj('node-a', 'True', '10.0.3.11'), node_obj('node-b', 'Unknown', '10.0.3.12'),
            node_obj('node-b2', 'False', '10.0.3.13'), node_obj('node-noip', 'True'),
            node_obj('node-down-noip', 'Unknown')]
    index = NodeIndex(both)
    assert index.addressless_ready() == ['node-noip']
    assert coverage_refusals([fenced('10.0.3.12/32')], index) == []
    assert coverage_refusals([fenced('10.0.3.12/32', '10.0.3.13/32')], index) == []
    assert coverage_refusals([fenced('10.0.3.12/31')], index) == []     # 10.0.3.12 and .13: both listed
    for cidr in ('10.0.3.99/32', '10.0.3.0/24', '10.0.3.14/31', '::ffff:10.0.3.99/128'):
        (msg,) = [m for m in coverage_refusals([fenced(cidr)], index) if 'list no IP address' in m]
        assert 'Ready node(s) node-noip list no IP address' in msg and cidr in msg and 'node-down-noip' not in msg
    # once that node is not Ready, or lists an address, unlisted addresses are fine again
    index = NodeIndex(both[:3] + [node_obj('node-noip', 'Unknown')])
    assert coverage_refusals([fenced('10.0.3.99/32')], index) == []
    index = NodeIndex(both[:3] + [node_obj('node-noip', 'True', 'fd00::99')])
    assert coverage_refusals([fenced('10.0.3.99/32')], index) == []


@pytest.mark.parametrize('cidr', ['::ffff:0:0/96', '::fffe:0:0/95', '::/64'])
def test_i1_a_range_holding_every_mapped_ipv4_address_is_refused_as_input(cidr):
    with pytest.raises(ValueError) as info:
        normalize_cidr(cidr)
    assert 'every IPv4 address' in str(info.value)


def test_mapped_cidrs_are_written_with_their_ipv4_and_still_covered():
    assert normalize_cidr('::ffff:a00:30c') == '::ffff:10.0.3.12/128'
    assert normalize_cidr('::FFFF:10.0.3.0/120') == '::ffff:10.0.3.0/120'
    assert [n['name'] for n in NodeIndex(nodes()).coverage(['::/64'])] == ['node-a', 'node-b', 'node-c']


# --------------------------------------------------------------------------- requests

def test_fences_inherit_the_top_level_options():
    reqs = build_requests(params(fence_state='Unfenced', network_fence_class='rbd', labels=dict(team=1), fences=[
        dict(name='fence-a', cidrs=['10.0.3.11'], fence_state=None, state=None),
        dict(name='fence-b', cidrs=['10.0.3.12/32'], fence_state='Fenced')]))
    assert [(r['name'], r['fence_state'], r['network_fence_class'], r['cidrs']) for r in reqs] == [
        ('fence-a', 'Unfenced', 'rbd', ['10.0.3.11/32']), ('fence-b', 'Fenced', 'rbd', ['10.0.3.12/32'])]
    assert reqs[0]['labels'] == dict(team='1') and reqs[0]['state'] == 'present'


@pytest.mark.parametrize('kwargs, message', [
    (dict(), 'give name (one fence) or fences (many)'),
    (dict(name='a', fences=[dict(name='b')]), 'either name (and cidrs) or fences'),
    (dict(fences=[]), 'fences is empty'),
    (dict(name='Bad_Name'), 'is not a valid Kubernetes object name'),
    (dict(fences=[dict(name='a'), dict(name='a')]), 'NetworkFence a is given twice'),
    (dict(name='a', fence_state='fenced'), 'fence_state must be Fenced or Unfenced'),
    (dict(name='a', cidrs=[]), 'cidrs is empty'),
    (dict(name='a', cidrs=['10.0.3.5/24']), 'host bits set'),
    (dict(name='a', driver='d', network_fence_class='c'), 'not both'),
    (dict(name='a', network_fence_class='c', secret=SECRET), 'secret belongs in the NetworkFenceClass c'),
    (dict(name='a', driver='d', secret=dict(name='s')), 'secret needs both name and namespace'),
    (dict(name='a', driver='d', secret=SECRET, parameters=dict(flag=True)), 'parameters.flag must be a string'),
    (dict(fences=[dict(name='a', colour='red')]), 'unknown option(s) colour'),
])
def test_bad_requests(kwargs, message):
    with pytest.raises(ValueError) as info:
        build_requests(params(**kwargs))
    assert message in str(info.value)


def test_every_problem_is_listed_at_once():
    with pytest.raises(ValueError) as info:
        build_requests(params(fences=[dict(name='a', cidrs=['x']), dict(name='b', cidrs=['10.0.0.1/8'])]))
    assert 'NetworkFence a' in str(info.value) and 'NetworkFence b' in str(info.value)


# --------------------------------------------------------------------------- plans

def test_create_with_a_class_and_with_the_older_shape():
    plan = plan_fence(one(name='nf', cidrs=['10.0.3.12'], fence_state='Fenced', network_fence_class='rbd',
                          labels=dict(app='x')), None)
    assert plan.action == CREATE
    assert plan.body == dict(apiVersion='csiaddons.openshift.io/v1alpha1', kind='NetworkFence',
                             metadata=dict(name='nf', labels=dict(app='x')),
                             spec=dict(fenceState='Fenced', cidrs=['10.0.3.12/32'], networkFenceClassName='rbd'))
    plan = plan_fence(one(name='nf', cidrs=['10.0.3.12'], fence_state='Unfenced', driver='rbd.csi.ceph.com',
                          secret=SECRET, parameters=dict(clusterID='lab')), None)
    assert plan.body['spec'] == dict(fenceState='Unfenced', cidrs=['10.0.3.12/32'], driver='rbd.csi.ceph.com',
                                     secret=SECRET, parameters=dict(clusterID='lab'))
    assert plan.newly_fenced == [] and plan.after()['fenceState'] == 'Unfenced'


@pytest.mark.parametrize('kwargs, missing', [
    (dict(cidrs=['10.0.3.12'], network_fence_class='c'), 'fence_state'),
    (dict(fence_state='Fenced', network_fence_class='c'), 'cidrs'),
    (dict(fence_state='Fenced', cidrs=['10.0.3.12']), 'network_fence_class (or the deprecated driver with secret)'),
    (dict(fence_state='Fenced', cidrs=['10.0.3.12'], driver='d'), 'secret (required with driver'),
])
def test_create_needs_everything(kwargs, missing):
    with pytest.raises(ValueError) as info:
        plan_fence(one(name='nf', **kwargs), None)
    assert 'NetworkFence nf does not exist; to create it give' in str(info.value) and missing in str(info.value)


def test_update_only_what_differs():
    existing = fence(cidrs=['10.0.3.12/32', 'fd00::/120'], labels=dict(a='1'))
    assert plan_fence(one(name='nf', cidrs=['fd00::/120', '10.0.3.12'], fence_state='Fenced'), existing).action == NONE
    assert plan_fence(one(name='nf', driver='rbd.csi.ceph.com', secret=SECRET, labels=dict(a='1')),
                      existing).action == NONE
    plan = plan_fence(one(name='nf', fence_state='Unfenced', labels=dict(b='2')), existing)
    assert plan.action == UPDATE and plan.patch == dict(spec=dict(fenceState='Unfenced'),
                                                        metadata=dict(labels=dict(b='2')))
    assert plan.after()['labels'] == dict(a='1', b='2') and plan.after()['cidrs'] == existing['spec']['cidrs']
    plan = plan_fence(one(name='nf', cidrs=['10.0.3.13']), existing)
    assert plan.patch == dict(spec=dict(cidrs=['10.0.3.13/32'])) and plan.fence_state == 'Fenced'
    assert 'cidrs' in plan.why


@pytest.mark.parametrize('kwargs, field', [
    (dict(driver='other.csi.example.com'), 'spec.driver is immutable'),
    (dict(network_fence_class='rbd'), 'spec.networkFenceClassName is immutable'),
    (dict(driver='rbd.csi.ceph.com', secret=dict(name='other', namespace='ceph-csi')), 'spec.secret is immutable'),
    (dict(driver='rbd.csi.ceph.com', secret=SECRET, parameters=dict(clusterID='x')), 'spec.parameters is immutable'),
])
def test_immutable_fields_are_explained(kwargs, field):
    with pytest.raises(ValueError) as info:
        plan_fence(one(name='nf', **kwargs), fence())
    assert field in str(info.value) and 'state=absent' in str(info.value)


def test_a_fence_being_deleted_cannot_be_updated():
    with pytest.raises(ValueError) as info:
        plan_fence(one(name='nf', fence_state='Unfenced'), fence(deleting='2026-11-21T05:00:00Z'))
    assert 'is being deleted' in str(info.value)


def test_absent_unfences_first_unless_forced():
    assert plan_fence(one(name='nf', state='absent'), None).action == NONE
    plan = plan_fence(one(name='nf', state='absent'), fence())
    assert plan.action == UNFENCE_DELETE and plan.patch == dict(spec=dict(fenceState='Unfenced'))
    assert plan.fence_state == 'Unfenced' and plan.after() is None
    assert plan_fence(one(name='nf', state='absent'), fence(), force=True).action == DELETE
    assert plan_fence(one(name='nf', state='absent'), fence(state='Unfenced')).action == DELETE
    assert plan_fence(one(name='nf', state='absent'), fence(deleting='2026-11-21T05:00:00Z')).action == NONE


# --------------------------------------------------------------------------- reading and results

def test_driver_of_both_shapes():
    classes = dict(rbd=dict(metadata=dict(name='rbd'), spec=dict(provisioner='rbd.csi.ceph.com')))
    assert fence_driver(fence(cls='rbd'), classes) == 'rbd.csi.ceph.com'
    assert fence_driver(fence(cls='missing'), classes) is None
    assert fence_driver(fence(driver='x.example.com'), {}) == 'x.example.com'


def test_fence_report():
    report = fence_report(fence(status=dict(result='Succeeded', message='fencing operation successful')), {},
                          NodeIndex(nodes()))
    assert report['result'] == 'Succeeded' and report['secret'] == SECRET and report['network_fence_class'] is None
    assert [n['name'] for n in report['nodes']] == ['node-b']


@pytest.mark.parametrize('status, generation, state, outcome', [
    (None, 1, 'Fenced', None),
    (dict(result='Succeeded', message='fencing operation successful'), 1, 'Fenced', 'Succeeded'),
    (dict(result='Failed', message='rpc error: code = Internal'), 1, 'Fenced', 'Failed'),
    # the previous answer: the success message of the other state
    (dict(result='Succeeded', message='fencing operation successful'), 2, 'Unfenced', None),
    (dict(result='Succeeded', message='unfencing operation successful'), 2, 'Unfenced', 'Succeeded'),
    # a stand-in's observedGeneration is honoured
    (dict(result='Succeeded', message='fencing operation successful', observedGeneration=1), 2, 'Fenced', None),
    (dict(result='Succeeded', message='fencing operation successful', observedGeneration=2), 2, 'Fenced',
     'Succeeded'),
])
def test_fence_outcome(status, generation, state, outcome):
    assert fence_outcome(fence(state=state, status=status, generation=generation), state) == outcome

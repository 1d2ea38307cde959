# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 17 item 4: networkfence never fences a Ceph monitor listed in ceph-csi's configuration."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sRefused
from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import (
    build_requests,
    csi_monitors,
    parse_monitor,
)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import (
    networkfence_cluster,
    networkfence_params as params,
)


def cluster(**kw):
    """A cluster whose ceph-csi ConfigMap each test writes itself (with_monitors)."""
    return networkfence_cluster(monitors=None, **kw)


@pytest.mark.parametrize('text, ips, hosts', [
    ('10.0.3.1:6789', ['10.0.3.1'], []),
    ('10.0.3.1', ['10.0.3.1'], []),
    ('[fd00::1]:6789', ['fd00::1'], []),
    ('fd00::1', ['fd00::1'], []),
    ('[v2:10.0.3.1:3300/0,v1:10.0.3.1:6789/0]', ['10.0.3.1'], []),
    ('[v2:[fd00::2]:3300/0,v1:[fd00::2]:6789/0]', ['fd00::2'], []),
    ('v2:10.0.3.1:3300', ['10.0.3.1'], []),
    ('10.0.3.1:6789,10.0.3.2:6789', ['10.0.3.1', '10.0.3.2'], []),
    ('[::ffff:10.0.3.9]:6789', ['10.0.3.9'], []),
    ('rook-ceph-mon-a.rook-ceph.svc:6789', [], ['rook-ceph-mon-a.rook-ceph.svc']),
    ('mon1', [], ['mon1']),
])
def test_parse_monitor_reads_every_form_ceph_csi_accepts(text, ips, hosts):
    found_ips, found_hosts = parse_monitor(text)
    assert [str(ip) for ip in found_ips] == ips and found_hosts == hosts


def configmap(name, namespace, key, clusters):
    return dict(metadata=dict(name=name, namespace=namespace),
                data={key: clusters if isinstance(clusters, str) else json.dumps(clusters)})


def test_csi_monitors_reads_both_configmap_shapes_and_warns_on_garbage():
    monitors, warnings = csi_monitors([
        configmap('ceph-csi-config', 'ceph-csi', 'config.json',
                  [dict(clusterID='lab', monitors=['10.0.3.1:6789', 'mon-b.example:6789'])]),
        configmap('rook-ceph-csi-config', 'rook-ceph', 'csi-cluster-config-json',
                  [dict(clusterID='rook-ceph', monitors=['[v2:10.0.4.1:3300/0,v1:10.0.4.1:6789/0]'])]),
        configmap('ceph-csi-config', 'other', 'config.json', '[{"clusterID": '),
        dict(metadata=dict(name='ceph-csi-config', namespace='empty'), data={}),
    ])
    assert [(m['configmap'], m['cluster_id'], m['addresses'], m['hosts']) for m in monitors] == [
        ('ceph-csi/ceph-csi-config', 'lab', ['10.0.3.1'], []),
        ('ceph-csi/ceph-csi-config', 'lab', [], ['mon-b.example']),
        ('rook-ceph/rook-ceph-csi-config', 'rook-ceph', ['10.0.4.1'], []),
    ]
    assert len(warnings) == 2 and 'other/ceph-csi-config key config.json is not valid JSON' in warnings[0]
    assert 'empty/ceph-csi-config has none of the keys' in warnings[1]


def with_monitors(fake, monitors=('10.0.3.12:6789',), namespace='ceph-csi', name='ceph-csi-config',
                  key='config.json'):
    if 'configmaps' not in fake.served['v1']:
        fake.served['v1'].append('configmaps')
    fake.add('configmaps', configmap(name, namespace, key, [dict(clusterID='lab', monitors=list(monitors))]))


def cluster_with_fence(monitors, fence_state, cidrs):
    """A cluster whose ceph-csi configuration lists `monitors`, holding NetworkFence nf-b (class rbd)
    `fence_state` over `cidrs`."""
    fake, nf = cluster()
    with_monitors(fake, monitors)
    fake.add('networkfences', dict(metadata=dict(name='nf-b'), spec=dict(
        networkFenceClassName='rbd', fenceState=fence_state, cidrs=cidrs)))
    return fake, nf


def fence(cidrs, **extra):
    return build_requests(params(name='nf-b', network_fence_class='rbd', cidrs=cidrs, fence_state='Fenced', **extra))


@pytest.mark.parametrize('monitor, cidr', [
    ('10.0.3.12:6789', '10.0.3.12/32'),
    ('[v2:10.0.3.12:3300/0,v1:10.0.3.12:6789/0]', '10.0.3.0/28'),
    ('[v2:10.0.3.12:3300/0,v1:10.0.3.12:6789/0]', '::ffff:10.0.3.12/128'),
])
def test_fencing_a_monitor_is_refused_and_writes_nothing(monitor, cidr):
    fake, nf = cluster()
    with_monitors(fake, [monitor])
    before = len(fake.writes())
    with pytest.raises(K8sRefused) as info:
        nf.plan(fence([cidr]))
    assert 'would fence Ceph monitor address(es) 10.0.3.12 (monitor %s of clusterID lab in ConfigMap ' \
           'ceph-csi/ceph-csi-config' % monitor in info.value.msg and 'Nothing was changed' in info.value.msg
    assert len(fake.writes()) == before
    assert nf.monitors['configmaps'] == ['ceph-csi/ceph-csi-config'] and nf.monitors['checked'][0]['monitor'] == monitor


def test_force_fences_a_monitor_with_a_warning_and_other_cidrs_pass():
    fake, nf = cluster()
    with_monitors(fake, ['10.0.3.12:6789'], namespace='rook-ceph', name='rook-ceph-csi-config',
                  key='csi-cluster-config-json')
    plans = nf.plan(fence(['10.0.3.12/32']), force=True)
    assert plans and any('Ceph monitor' in w and '(force=true)' in w for w in nf.warnings)
    _fake, nf2 = cluster()
    with_monitors(_fake, ['10.0.3.99:6789'])
    assert nf2.plan(fence(['10.0.3.12/32']))[0].action == 'create'
    assert nf2.monitors['checked'][0]['addresses'] == ['10.0.3.99']


def test_setting_an_existing_fence_fenced_checks_the_monitors():
    _fake, nf = cluster_with_fence(['10.0.3.12'], 'Unfenced', ['10.0.3.12/32'])
    with pytest.raises(K8sRefused, match='Ceph monitor'):
        nf.plan(build_requests(params(name='nf-b', fence_state='Fenced')))


def test_unfencing_and_an_empty_source_list_do_not_read_configmaps():
    fake, nf = cluster_with_fence(['10.0.3.12'], 'Fenced', ['10.0.3.12/32'])
    nf.plan(build_requests(params(name='nf-b', fence_state='Unfenced')))
    assert not [e for e in fake.log if 'configmaps' in e[1]] and nf.monitors['configmaps'] == []
    fake2, nf2 = cluster()
    with_monitors(fake2, ['10.0.3.12'])
    nf2.monitor_configmaps = []
    nf2.plan(fence(['10.0.3.12/32']))
    assert not [e for e in fake2.log if 'configmaps' in e[1]]


def test_host_name_monitors_are_reported_unchecked_with_a_warning():
    fake, nf = cluster()
    with_monitors(fake, ['rook-ceph-mon-a.rook-ceph.svc:6789'])
    nf.plan(fence(['10.0.3.12/32']))
    assert nf.monitors['unchecked'] == ['rook-ceph-mon-a.rook-ceph.svc (clusterID lab in ConfigMap '
                                        'ceph-csi/ceph-csi-config)']
    assert any('cannot be checked' in w and 'rook-ceph-mon-a.rook-ceph.svc' in w for w in nf.warnings)


def test_a_namespaced_source_is_read_with_one_get_and_a_forbidden_list_warns():
    fake, nf = cluster()
    with_monitors(fake, ['10.0.3.12'], namespace='ceph-csi', name='my-csi-config')
    nf.monitor_configmaps = ['ceph-csi/my-csi-config']
    with pytest.raises(K8sRefused, match='Ceph monitor'):
        nf.plan(fence(['10.0.3.12/32']))
    fake2, nf2 = cluster()
    with_monitors(fake2, ['10.0.3.12'])
    fake2.faults.append(dict(method='GET', path='/api/v1/configmaps', status=403, reason='Forbidden',
                             message='configmaps is forbidden', count=5))
    with pytest.raises(K8sRefused) as info:
        nf2.plan(fence(['10.0.3.12/32']))
    assert 'the Ceph monitors could not be checked against nf-b: could not read the ceph-csi ConfigMap(s) ' \
           'ceph-csi-config' in info.value.msg and 'Nothing was changed' in info.value.msg
    assert nf2.plan(fence(['10.0.3.12/32']), force=True)
    assert any('could not read the ceph-csi ConfigMap(s) ceph-csi-config' in w and '(force=true)' in w
               for w in nf2.warnings)


@pytest.mark.parametrize('setup, why', [
    (lambda fake: None, 'no ceph-csi ConfigMap of Ceph monitors was found (looked for ceph-csi-config, '
                        'rook-ceph-csi-config)'),
    (lambda fake: with_monitors(fake, []), 'the ceph-csi ConfigMap(s) ceph-csi/ceph-csi-config list no Ceph monitor'),
    (lambda fake: fake.add('configmaps', configmap('ceph-csi-config', 'ceph-csi', 'config.json', '[{"clus')),
     'ConfigMap ceph-csi/ceph-csi-config key config.json is not valid JSON'),
])
def test_monitors_that_cannot_be_read_refuse_the_fence_unless_force(setup, why):
    """The lab's ceph-csi once had no ConfigMap: a NetworkFence over its monitor was set Fenced with only a
    warning. Where nothing can tell whether the CIDRs hold a monitor, the call is refused, writing nothing."""
    def built():
        fake, nf = cluster()
        if 'configmaps' not in fake.served['v1']:
            fake.served['v1'].append('configmaps')
        setup(fake)
        return fake, nf
    fake, nf = built()
    before = len(fake.writes())
    with pytest.raises(K8sRefused) as info:
        nf.plan(fence(['10.0.3.12/32']))
    assert why in info.value.msg and 'Nothing was changed' in info.value.msg, info.value.msg
    assert len(fake.writes()) == before and why in nf.monitors['unread']
    _fake, forced = built()
    assert forced.plan(fence(['10.0.3.12/32']), force=True)[0].action == 'create'
    assert any(why in w and '(force=true)' in w for w in forced.warnings)
    _fake, off = built()
    off.monitor_configmaps = []
    assert off.plan(fence(['10.0.3.12/32']))[0].action == 'create' and off.monitors['unread'] is None


def unfenced(cidrs):
    return build_requests(params(name='nf-b', network_fence_class='rbd', cidrs=cidrs, fence_state='Unfenced'))


def test_creating_an_unfenced_fence_holding_a_monitor_is_refused_too():
    fake, nf = cluster()
    with_monitors(fake, ['[v2:10.0.3.12:3300/0,v1:10.0.3.12:6789/0]'])
    before = len(fake.writes())
    with pytest.raises(K8sRefused) as info:
        nf.plan(unfenced(['10.0.3.0/28']))
    assert 'NetworkFence nf-b would hold Ceph monitor address(es) 10.0.3.12' in info.value.msg
    assert 'while Unfenced: one patch to Fenced would cut the monitor off' in info.value.msg
    assert 'Nothing was changed' in info.value.msg and len(fake.writes()) == before
    plans = nf.plan(unfenced(['10.0.3.0/28']), force=True)
    assert plans[0].action == 'create' and any('would hold Ceph monitor' in w and '(force=true)' in w
                                               for w in nf.warnings)


def test_adding_a_monitor_cidr_to_an_unfenced_fence_is_refused_other_changes_are_not_checked():
    _fake, nf = cluster_with_fence(['10.0.3.12:6789'], 'Unfenced', ['10.0.3.13/32'])
    with pytest.raises(K8sRefused, match='would hold Ceph monitor address'):
        nf.plan(unfenced(['10.0.3.13/32', '10.0.3.12/32']))
    # a fence that already held the address before (not written by this call) and gets only labels:
    # the CIDRs are not changed, nothing is checked
    fake2, nf2 = cluster_with_fence(['10.0.3.12:6789'], 'Unfenced', ['10.0.3.12/32'])
    plans = nf2.plan(build_requests(params(name='nf-b', labels={'a': 'b'})))
    assert plans[0].action == 'update' and plans[0].monitor_checked == []
    assert not [e for e in fake2.log if 'configmaps' in e[1]]
    # removing CIDRs writes no new one: nothing to check either
    _fake3, nf3 = cluster_with_fence(['10.0.3.12:6789'], 'Unfenced', ['10.0.3.12/32', '10.0.3.13/32'])
    assert nf3.plan(unfenced(['10.0.3.13/32']))[0].monitor_checked == []


def test_an_unfenced_fence_away_from_the_monitors_is_created():
    fake, nf = cluster()
    with_monitors(fake, ['10.0.3.99:6789'])
    plans = nf.plan(unfenced(['10.0.3.12/32']))
    assert plans[0].action == 'create' and nf.monitors['checked'][0]['addresses'] == ['10.0.3.99']

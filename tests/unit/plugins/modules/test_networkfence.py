# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""networkfence and networkfence_info end to end through AnsibleModule, on a fake API server."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s.networkfence_ops import NetworkFences
from ansible_collections.volfence.csi.plugins.modules import networkfence, networkfence_info
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import Controller, api_for, ticking_clock
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import networkfence_cluster as cluster
from ansible_collections.volfence.csi.tests.unit.plugins.modules.module_warnings import run_main, warning_texts


def run(module, args, monkeypatch, capsys, fake, check=False, diff=False):
    monkeypatch.setattr(NetworkFences, '__init__', _quick_init)
    return run_main(module, args, monkeypatch, capsys, check, diff, api=lambda: api_for(fake))


_REAL_INIT = NetworkFences.__init__


def _quick_init(self, api, workers=16, clock=None, **kwargs):
    _REAL_INIT(self, api, workers=workers, clock=ticking_clock(), **kwargs)


FENCE = dict(name='nf-b', network_fence_class='rbd', cidrs=['10.0.3.12'], fence_state='Fenced')


def test_check_mode_and_diff_then_apply_then_idempotent(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    out, _calls = run(networkfence, FENCE, monkeypatch, capsys, fake, check=True, diff=True)
    assert out['changed'] and fake.writes() == []
    assert out['diff'] == dict(before={}, after=dict(fenceState='Fenced', cidrs=['10.0.3.12/32'],
                                                     networkFenceClassName='rbd'))
    assert out['fences'][0]['action'] == 'create' and out['fences'][0]['nodes'][0]['name'] == 'node-b'
    out, _calls = run(networkfence, FENCE, monkeypatch, capsys, fake, diff=True)
    assert out['changed'] and out['fences'][0]['outcome'] == 'Succeeded'
    assert out['fences'][0]['result'] == 'Succeeded' and out['summary']['created'] == 1
    writes = len(fake.writes())
    out, _calls = run(networkfence, FENCE, monkeypatch, capsys, fake, diff=True)
    assert not out['changed'] and out['summary']['unchanged'] == 1 and len(fake.writes()) == writes
    assert out['diff'] == dict(before={}, after={})


def test_check_mode_update_predicts_the_result(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    run(networkfence, FENCE, monkeypatch, capsys, fake)
    writes = len(fake.writes())
    out, _calls = run(networkfence, dict(name='nf-b', cidrs=['10.0.3.12', '10.0.3.14']), monkeypatch, capsys, fake,
                      check=True, diff=True)
    assert out['changed'] and len(fake.writes()) == writes
    assert out['fences'][0]['cidrs'] == ['10.0.3.12/32', '10.0.3.14/32']
    assert out['diff']['before']['cidrs'] == ['10.0.3.12/32']
    assert out['diff']['after']['cidrs'] == ['10.0.3.12/32', '10.0.3.14/32']


@pytest.mark.parametrize('args, message', [
    (dict(name='nf', cidrs=['10.0.3.5/24'], fence_state='Fenced', network_fence_class='rbd'), 'ambiguous (host bits set)'),
    (dict(name='nf', cidrs=['not-an-ip'], fence_state='Fenced', network_fence_class='rbd'), "'not-an-ip' is not an IP address"),
    (dict(name='nf', fence_state='fenced'), 'value of fence_state must be one of: Fenced, Unfenced'),
    (dict(name='nf', fences=[dict(name='x')]), 'mutually exclusive'),
    (dict(name='nf', driver='d', network_fence_class='c'), 'mutually exclusive'),
    (dict(fences=[dict(name='a', fence_state='Fenced', cidrs=['10.0.0.1/8'])]), 'ambiguous (host bits set)'),
    (dict(name='nf', wait_sleep=0), 'wait_sleep=0 is out of range: give 1 to 600 seconds; nothing was changed'),
    (dict(name='nf', parallel=0), 'parallel=0 is out of range: give 1 to 256'),
    (dict(name='nf', parallel=100000), 'parallel=100000 is out of range: give 1 to 256'),
    (dict(name='nf', wait_timeout=-1), 'wait_timeout=-1 is out of range: give 0 to 86400 seconds'),
    (dict(name='nf', wait_timeout=10 ** 12), 'wait_timeout=1000000000000 is out of range'),
    (dict(name='nf', request_timeout=0), 'request_timeout=0 is out of range: give 1 to 3600 seconds'),
    (dict(name='nf', request_timeout=10 ** 10), 'request_timeout=10000000000 is out of range'),
    (dict(name='nf', api_retries=-1), 'api_retries=-1 is out of range: give 0 to 20'),
    (dict(name='nf', cidrs=['1.2.3.4/33'], fence_state='Fenced', network_fence_class='c'),
     "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4: 0-32)"),
    (dict(name='nf', cidrs=['10.0.0.1; rm -rf /'], fence_state='Fenced', network_fence_class='c'),
     "CIDR '10.0.0.1; rm -rf /' is not a CIDR ('10.0.0.1; rm -rf' is not an IP address)"),
    (dict(cidrs=['10.0.0.1']), 'one of the following is required: name, fences'),
])
def test_bad_input_fails_without_connecting(monkeypatch, capsys, args, message):
    fake, _fences = cluster()
    out, calls = run(networkfence, args, monkeypatch, capsys, fake)
    assert out['failed'] and message in out['msg'] and calls == [] and fake.log == []


def test_refusal_changes_nothing_and_force_overrides(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    args = dict(FENCE, name='nf-a', cidrs=['10.0.3.11'])
    out, _calls = run(networkfence, args, monkeypatch, capsys, fake)
    assert out['failed'] and 'would fence Ready node(s) node-a' in out['msg'] and fake.writes() == []
    out, _calls = run(networkfence, dict(args, force=True), monkeypatch, capsys, fake)
    assert out['changed'] and any('force=true' in w for w in warning_texts(out))


def test_failure_reports_what_was_done(monkeypatch, capsys):
    fake, _fences = cluster(Controller(refuse=['10.0.3.14/32']))
    out, _calls = run(networkfence, dict(network_fence_class='rbd', fence_state='Fenced', fences=[
        dict(name='nf-b', cidrs=['10.0.3.12']), dict(name='nf-d', cidrs=['10.0.3.14'])]), monkeypatch, capsys, fake)
    assert out['failed'] and out['msg'].startswith('1 of 2 NetworkFence(s) failed: NetworkFence nf-d')
    assert 'Changed anyway: nf-b, nf-d' in out['msg']
    assert out['summary'] == dict(created=2, updated=0, deleted=0, unchanged=0, failed=1)
    assert [f.get('error') is None for f in out['fences']] == [True, False]
    assert out['object'] == dict(kind='NetworkFence', name='nf-d')


def test_i7_partial_failure_reports_changed_done_and_failures(monkeypatch, capsys):
    """I7: of three fences, the create of nf-e keeps failing (500) and nf-d is answered Failed by the controller:
    the module fails with changed=true, done naming the two it wrote, failures the two that failed."""
    fake, _fences = cluster(Controller(refuse=['10.0.3.14/32']))

    def transport(method, url, body, headers, timeout):
        if method == 'POST' and b'"nf-e"' in (body or b''):
            return fake._status(500, 'InternalError', 'etcdserver: request timed out')
        return fake(method, url, body, headers, timeout)
    out, _calls = run(networkfence, dict(network_fence_class='rbd', fence_state='Fenced', parallel=1, fences=[
        dict(name='nf-b', cidrs=['10.0.3.12']), dict(name='nf-d', cidrs=['10.0.3.14']),
        dict(name='nf-e', cidrs=['10.0.3.15'])]), monkeypatch, capsys, transport)
    assert out['failed'] and out['changed'], out
    assert out['done'] == ['nf-b', 'nf-d']
    assert sorted(f['name'] for f in out['failures']) == ['nf-d', 'nf-e']
    assert 'Failed to create NetworkFence nf-e: 500' in [f['error'] for f in out['failures'] if f['name'] == 'nf-e'][0]
    assert fake.get('networkfences', 'nf-e') is None and fake.get('networkfences', 'nf-b') is not None


def test_absent(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    run(networkfence, FENCE, monkeypatch, capsys, fake)
    out, _calls = run(networkfence, dict(name='nf-b', state='absent'), monkeypatch, capsys, fake, check=True,
                      diff=True)
    assert out['changed'] and out['fences'][0]['action'] == 'unfence_and_delete' and out['diff']['after'] == {}
    assert fake.get('networkfences', 'nf-b')['spec']['fenceState'] == 'Fenced'
    out, _calls = run(networkfence, dict(name='nf-b', state='absent'), monkeypatch, capsys, fake)
    assert out['changed'] and out['fences'][0]['state'] == 'absent' and fake.get('networkfences', 'nf-b') is None
    out, _calls = run(networkfence, dict(name='nf-b', state='absent'), monkeypatch, capsys, fake)
    assert not out['changed']


def test_api_key_is_never_echoed(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    out, calls = run(networkfence, dict(FENCE, api_key='sha256~SECRETTOKEN'), monkeypatch, capsys, fake)
    assert 'SECRETTOKEN' not in json.dumps(out) and calls[0]['api_key'] == 'sha256~SECRETTOKEN'


def test_info(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    run(networkfence, dict(network_fence_class='rbd', fence_state='Unfenced', fences=[
        dict(name='nf-a', cidrs=['10.0.3.11']), dict(name='nf-b', cidrs=['10.0.3.12'], fence_state='Fenced')]),
        monkeypatch, capsys, fake)
    writes = len(fake.writes())
    out, _calls = run(networkfence_info, {}, monkeypatch, capsys, fake)
    assert [f['name'] for f in out['fences']] == ['nf-a', 'nf-b'] and not out['changed']
    assert out['classes'] == [dict(name='rbd', provisioner='rbd.csi.ceph.com', parameters={'clusterID': 'lab'})]
    assert sorted(n['node_id'] for n in out['csiaddons_nodes']) == ['node-a', 'node-b', 'node-c']
    out, _calls = run(networkfence_info, dict(node='node-b'), monkeypatch, capsys, fake)
    assert [f['name'] for f in out['fences']] == ['nf-b']
    out, _calls = run(networkfence_info, dict(fence_state='Unfenced', driver='rbd.csi.ceph.com'), monkeypatch,
                      capsys, fake)
    assert [f['name'] for f in out['fences']] == ['nf-a']
    out, _calls = run(networkfence_info, dict(name='nope'), monkeypatch, capsys, fake)
    assert out['failed'] and out['msg'] == 'NetworkFence nope not found'
    assert len(fake.writes()) == writes


NODE_FENCES = dict(network_fence_class='rbd', node_fences=dict(set='default'))


def test_node_fences_creates_one_unfenced_fence_per_node_then_writes_nothing(monkeypatch, capsys):
    fake, _fences = cluster(Controller())
    out, _calls = run(networkfence, NODE_FENCES, monkeypatch, capsys, fake)
    assert not out.get('failed'), out.get('msg')
    assert out['summary'] == dict(created=3, updated=0, deleted=0, unchanged=0, failed=0)
    assert out['node_fences'] == dict(installed=True, nodes=3, fenced=[], kept_fenced=[], pruned=[],
                                      nodes_without_addresses=[], warnings=[])
    assert sorted(out['done']) == ['volfence-node-a', 'volfence-node-b', 'volfence-node-c']
    assert all(f['fence_state'] == 'Unfenced' for f in out['fences'])
    writes = len(fake.writes())
    out, _calls = run(networkfence, NODE_FENCES, monkeypatch, capsys, fake)
    assert not out['changed'] and out['summary']['unchanged'] == 3 and len(fake.writes()) == writes


def test_node_fences_check_mode_without_the_crds_says_so_and_a_real_run_fails(monkeypatch, capsys):
    from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import SERVED
    served = dict(SERVED)
    del served['csiaddons.openshift.io/v1alpha1']
    fake, _fences = cluster(served=served)
    out, _calls = run(networkfence, NODE_FENCES, monkeypatch, capsys, fake, check=True)
    assert not out.get('failed') and out['node_fences']['installed'] is False and out['fences'] == []
    out, _calls = run(networkfence, NODE_FENCES, monkeypatch, capsys, fake)
    assert out['failed'] and 'the CSI-Addons CRDs are not installed' in out['msg'] and fake.writes() == []


@pytest.mark.parametrize('args, message', [
    (dict(NODE_FENCES, state='absent'), 'with node_fences, the state of the set is node_fences.state'),
    (dict(NODE_FENCES, fence_state='Fenced'), 'parameters are mutually exclusive: node_fences|fence_state'),
    (dict(NODE_FENCES, force=True), 'parameters are mutually exclusive: node_fences|force'),
    (dict(NODE_FENCES, name='nf'), 'parameters are mutually exclusive: node_fences|name'),
    (dict(node_fences=dict(set='default')), 'node_fences needs network_fence_class'),
    (dict(NODE_FENCES, node_fences=dict(set='a/b')), 'node_fences.set must be a label value'),
    (dict(NODE_FENCES, node_fences=dict(extra_cidrs={'a': ['10.0.0.5/8']})), 'is ambiguous (host bits set)'),
])
def test_node_fences_bad_input_fails_without_connecting(monkeypatch, capsys, args, message):
    fake, _fences = cluster()
    out, calls = run(networkfence, args, monkeypatch, capsys, fake)
    assert out['failed'] and message in out['msg'] and calls == [] and fake.log == [], out['msg']

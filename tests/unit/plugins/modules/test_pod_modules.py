# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pod_force_delete and replacement_pods_info end to end through AnsibleModule, on a fake API server."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.modules import pod_force_delete, replacement_pods_info
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import FakeKube, api_for, pod, pods_world
from ansible_collections.volfence.csi.tests.unit.plugins.modules.module_warnings import run_main


def run(module, args, monkeypatch, capsys, fake, check=False, diff=False):
    return run_main(module, args, monkeypatch, capsys, check, diff, api=lambda: api_for(fake, retries=1))


def test_force_delete_check_diff_real_partial_rerun(monkeypatch, capsys):
    fake, uids = pods_world(4)
    pods = [dict(namespace='shop', name=n, uid=uids[n]) for n in sorted(uids)]
    out, _calls = run(pod_force_delete, dict(pods=pods, parallel=2), monkeypatch, capsys, fake, check=True, diff=True)
    assert out['changed'] and len(out['deleted']) == 4 and fake.writes() == []
    assert out['diff'] == dict(before=dict(pods=['shop/p-%d' % i for i in range(4)]), after=dict(pods=[]))
    fake.faults = [dict(method='DELETE', exact='/api/v1/namespaces/shop/pods/p-2', status=500, count=99)]
    out, _calls = run(pod_force_delete, dict(pods=pods, parallel=2), monkeypatch, capsys, fake)
    assert out['failed'] and out['changed'] and len(out['deleted']) == 3
    assert out['failures'] == [dict(namespace='shop', name='p-2', error='500 InternalError: boom')]
    assert out['msg'].startswith('1 of 4 pod(s) could not be force-deleted: shop/p-2: 500 InternalError: boom')
    fake.faults = []
    out, _calls = run(pod_force_delete, dict(pods=pods), monkeypatch, capsys, fake)
    assert not out.get('failed') and out['changed'] and [d['name'] for d in out['deleted']] == ['p-2']
    out, _calls = run(pod_force_delete, dict(pods=pods), monkeypatch, capsys, fake)
    assert not out['changed'] and len(out['absent']) == 4 and out['deleted'] == []


@pytest.mark.parametrize('args, message', [
    (dict(pods=[dict(namespace='shop', name='p-0')], parallel=0), 'parallel=0 is out of range: give 1 to 256'),
    (dict(pods=[dict(namespace='shop', name='p-0')], grace_period=-1), 'grace_period=-1 is out of range'),
    (dict(pods=[dict(namespace='shop', name='P_0')]), "pods[0] name 'P_0' is not a valid Kubernetes object name"),
    (dict(pods=[dict(namespace='shop')]), 'name'),
    (dict(pods=[dict(namespace='shop', name='p-0', uid='a'), dict(namespace='shop', name='p-0', uid='b')]),
     'listed twice with different uids'),
    (dict(pods=[dict(namespace='shop', name='p-0')], parallel='many'), 'parallel must be an integer'),
])
def test_force_delete_bad_input_changes_nothing_and_connects_not(monkeypatch, capsys, args, message):
    fake, _uids = pods_world(1)
    out, calls = run(pod_force_delete, args, monkeypatch, capsys, fake)
    assert out['failed'] and message in out['msg'] and calls == [] and fake.log == []
    assert 'Traceback' not in out['msg'] and "<class" not in out['msg']


def test_force_delete_empty_list_connects_not(monkeypatch, capsys):
    fake, _uids = pods_world(1)
    out, calls = run(pod_force_delete, dict(pods=[]), monkeypatch, capsys, fake)
    assert not out['changed'] and out['deleted'] == out['absent'] == out['failures'] == [] and calls == []


def test_replacement_pods_info_now_and_wait_timeout(monkeypatch, capsys):
    fake = FakeKube()
    fake.add('pods', pod('db-0', 'node-c', ['data-db-0']))
    fake.add('pods', pod('db-1-old', 'node-b', ['data-db-1']))
    args = dict(claims=['shop/data-db-0', 'shop/data-db-1'], exclude_nodes=['node-b'])
    out, _calls = run(replacement_pods_info, args, monkeypatch, capsys, fake)
    assert not out['changed'] and out['running'] == [dict(claim='shop/data-db-0', pod='shop/db-0', node='node-c')]
    assert out['waiting'] == ['shop/data-db-1'] and out['polls'] == 1 and out['requests'] == 1
    out, _calls = run(replacement_pods_info, dict(args, wait=True, wait_timeout=0), monkeypatch, capsys, fake)
    assert out['failed'] and out['waiting'] == ['shop/data-db-1'] and len(out['running']) == 1
    assert out['msg'] == ('1 of 2 claim(s) still have no Running pod outside node-b after wait_timeout=0s: '
                          'shop/data-db-1')
    assert fake.writes() == []


@pytest.mark.parametrize('args, message', [
    (dict(claims=['data-db-0']), "claims[0]: 'data-db-0' is not \"namespace/claim\"; nothing was read"),
    (dict(claims=['shop/x'], exclude_nodes=['Node_B']), "exclude_nodes[0] 'Node_B' is not a valid"),
    (dict(claims=['shop/x'], wait_sleep=0), 'wait_sleep=0 is out of range: give 1 to 600 seconds'),
    (dict(claims=['shop/x'], wait_timeout=86401), 'wait_timeout=86401 is out of range'),
])
def test_replacement_pods_info_bad_input(monkeypatch, capsys, args, message):
    out, calls = run(replacement_pods_info, args, monkeypatch, capsys, FakeKube())
    assert out['failed'] and message in out['msg'] and calls == []

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    age_seconds,
    check_object_name,
    describe,
    has_taint,
    node_addresses,
    node_not_ready_for,
    node_ready,
    node_summary,
    parse_kube_version,
    parse_time,
)

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import NOW, UTC


def node(name='node-b', ready='True', since='2026-11-21T05:50:00Z', taints=(), addresses=()):
    obj = dict(metadata=dict(name=name), spec=dict(taints=list(taints)),
               status=dict(addresses=list(addresses)))
    if ready is not None:
        obj['status']['conditions'] = [dict(type='MemoryPressure', status='False'),
                                       dict(type='Ready', status=ready, lastTransitionTime=since)]
    return obj


@pytest.mark.parametrize('value, expected', [
    ('2026-11-21T05:50:00Z', datetime.datetime(2026, 11, 21, 5, 50, tzinfo=UTC)),
    ('2026-11-21T05:50:00.123456Z', datetime.datetime(2026, 11, 21, 5, 50, 0, 123456, tzinfo=UTC)),
    ('2026-11-21T05:50:00.1234567890Z', datetime.datetime(2026, 11, 21, 5, 50, 0, 123456, tzinfo=UTC)),
    ('2026-11-21T07:50:00+02:00', datetime.datetime(2026, 11, 21, 5, 50, tzinfo=UTC)),
    ('2026-11-21T03:20:00-0230', datetime.datetime(2026, 11, 21, 5, 50, tzinfo=UTC)),
    ('2026-11-21T05:50:00', datetime.datetime(2026, 11, 21, 5, 50, tzinfo=UTC)),
    (None, None),
    ('', None),
])
def test_parse_time(value, expected):
    assert parse_time(value) == expected


def test_parse_time_refuses_garbage_and_age_tolerates_it():
    with pytest.raises(ValueError):
        parse_time('yesterday')
    assert age_seconds('yesterday', NOW) is None
    assert age_seconds(None, NOW) is None
    assert age_seconds('2026-11-21T05:50:00Z', NOW) == 600
    assert age_seconds('2026-11-21T06:00:30Z', NOW) == -30


def test_node_readiness():
    assert node_ready(node()) == 'True' and node_not_ready_for(node(), NOW) == 0
    assert node_ready(node(ready='Unknown')) == 'Unknown'
    assert node_not_ready_for(node(ready='Unknown'), NOW) == 600
    assert node_not_ready_for(node(ready='False', since=None), NOW) is None
    assert node_ready(node(ready=None)) == 'Unknown' and node_not_ready_for(node(ready=None), NOW) is None
    assert node_ready(None) == 'Unknown'


def test_taints_and_addresses():
    n = node(taints=[dict(key='node.kubernetes.io/out-of-service', effect='NoExecute')],
             addresses=[dict(type='InternalIP', address='10.0.3.12'), dict(type='Hostname', address='node-b'),
                        dict(type='ExternalIP', address='2001:db8::12'), dict(type='InternalIP', address='10.0.3.12')])
    assert has_taint(n, 'node.kubernetes.io/out-of-service')
    assert not has_taint(n, 'node.kubernetes.io/unreachable')
    assert [(t, str(a)) for t, a in node_addresses(n)] == [('InternalIP', '10.0.3.12'), ('ExternalIP', '2001:db8::12')]
    assert node_summary(n, NOW) == dict(name='node-b', ready='True', not_ready_seconds=0,
                                        taints=['node.kubernetes.io/out-of-service'],
                                        addresses=['10.0.3.12', '2001:db8::12'])
    assert node_summary(None) is None


@pytest.mark.parametrize('name', ['node-b', 'csi-' + 'a' * 64, 'pvc-0c5f4b2e-6d43', 'a.b-c', 'x' * 253])
def test_valid_names(name):
    assert check_object_name(name) == name


@pytest.mark.parametrize('name', ['', 'Node-B', '-a', 'a-', 'a..b', 'a_b', 'x' * 254, None, 12])
def test_invalid_names(name):
    with pytest.raises(ValueError):
        check_object_name(name)


@pytest.mark.parametrize('value, expected', [
    ('v1.23.5', (1, 23, 5)), ('v1.22.9+vmware.1', (1, 22, 9)), ('v1.24.0-rc.1', (1, 24, 0)),
    ('1.30', (1, 30, 0)), ('v1.27.3-eks-a5565ad', (1, 27, 3)), ('', None), (None, None), ('latest', None),
])
def test_parse_kube_version(value, expected):
    assert parse_kube_version(value) == expected


def test_describe():
    assert describe('Pod', 'web-0', 'default') == 'Pod default/web-0'
    assert describe('VolumeAttachment', 'csi-1') == 'VolumeAttachment csi-1'
    assert describe('Version', None) == 'Version'

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Kubernetes operations both k8s module families share, on a KubeApi talking to FakeKube."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sApiError,
    K8sConnectionError,
    K8sError,
    resource_path,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import (
    EACH_LIMIT,
    count_message,
    get_each,
    is_retryable_write_error,
    list_grouped,
    read_named,
    wait_until_settled,
    write_with_reread,
)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import FakeKube, SleepClock, api_for


def node_path(name=None):
    return resource_path('', 'v1', 'nodes', name)


def nodes(count):
    fake = FakeKube()
    for i in range(count):
        fake.add('nodes', dict(metadata=dict(name='node-%02d' % i)))
    return fake


# --------------------------------------------------------------------------- reading

def test_a_few_names_are_read_one_get_each_and_missing_ones_are_left_out():
    fake = nodes(3)
    found = read_named(api_for(fake), node_path, 'Node', ['node-01', 'node-00', 'gone', 'node-01', None])
    assert sorted(found) == ['node-00', 'node-01']
    assert found['node-01']['metadata']['name'] == 'node-01'
    assert [(e[0], e[1]) for e in fake.log] == [('GET', '/api/v1/nodes/gone'), ('GET', '/api/v1/nodes/node-00'),
                                                ('GET', '/api/v1/nodes/node-01')]


def test_more_names_than_the_limit_are_read_with_one_list():
    fake = nodes(EACH_LIMIT + 5)
    wanted = ['node-%02d' % i for i in range(EACH_LIMIT + 1)] + ['gone']
    found = read_named(api_for(fake), node_path, 'Node', wanted)
    assert sorted(found) == wanted[:-1]
    assert [(e[0], e[1]) for e in fake.log] == [('GET', '/api/v1/nodes')]
    assert read_named(api_for(fake), node_path, 'Node', []) == {}


def test_list_grouped_lists_each_key_or_everything_once():
    fake = FakeKube()
    for i in range(EACH_LIMIT + 2):
        fake.add('pods', dict(metadata=dict(name='p', namespace='ns-%02d' % i)))
    api = api_for(fake)

    def each(namespace):
        return api.list(resource_path('', 'v1', 'pods', namespace=namespace), what=('Pod', None, namespace))

    def everything():
        return api.list(resource_path('', 'v1', 'pods'), what=('Pod', None))

    def namespace_of(pod):
        return pod['metadata']['namespace']

    few = list_grouped(['ns-01', 'ns-00', 'ns-01', 'ns-empty'], each, everything, namespace_of)
    assert sorted(few) == ['ns-00', 'ns-01', 'ns-empty'] and few['ns-empty'] == []
    assert [p['metadata']['namespace'] for p in few['ns-01']] == ['ns-01']
    assert [e[1] for e in fake.log] == ['/api/v1/namespaces/%s/pods' % n for n in ('ns-00', 'ns-01', 'ns-empty')]
    del fake.log[:]
    many = ['ns-%02d' % i for i in range(EACH_LIMIT + 1)]
    grouped = list_grouped(many, each, everything, namespace_of)
    assert sorted(grouped) == many and all(len(grouped[n]) == 1 for n in many)   # ns-11 is listed, not kept
    assert [e[1] for e in fake.log] == ['/api/v1/pods']


def test_get_each_reads_in_parallel_keeps_the_order_and_leaves_out_what_is_missing():
    fake = nodes(5)
    refs = [(node_path(name), ('Node', name)) for name in ('node-04', 'gone', 'node-00', 'node-02')]
    found = get_each(api_for(fake), refs, 3)
    assert [n['metadata']['name'] for n in found] == ['node-04', 'node-00', 'node-02']
    assert sorted(e[1] for e in fake.log) == sorted(ref[0] for ref in refs)
    fake.faults.append(dict(method='GET', path='/node-00', status=403, reason='Forbidden'))
    with pytest.raises(K8sApiError) as info:
        get_each(api_for(fake), refs, 3)
    assert info.value.status == 403


# --------------------------------------------------------------------------- writing

def api_error(status):
    return K8sApiError('Failed to update Node n: %d' % status, status=status)


@pytest.mark.parametrize('exc, retryable', [
    (api_error(409), True), (api_error(429), True), (api_error(500), True), (api_error(503), True),
    (K8sConnectionError('no answer'), True),
    (api_error(403), False), (api_error(404), False), (api_error(422), False), (K8sError('refused'), False),
])
def test_which_write_errors_are_worth_a_reread(exc, retryable):
    assert is_retryable_write_error(exc) is retryable


class Writes(object):
    """A write failing with the given errors first; counts writes, re-reads and pauses."""

    def __init__(self, errors, reread_says=None):
        self.errors = list(errors)
        self.reread_says = reread_says
        self.writes = 0
        self.rereads = 0
        self.sleeps = []

    def write(self):
        self.writes += 1
        if self.errors:
            raise self.errors.pop(0)
        return 'written'

    def reread(self):
        self.rereads += 1
        return self.reread_says

    def run(self, retries=3):
        return write_with_reread(self.write, self.reread, retries, self.sleeps.append)


def test_a_conflict_is_reread_then_written_again():
    writes = Writes([api_error(409), K8sConnectionError('lost')])
    assert writes.run() == 'written'
    assert (writes.writes, writes.rereads) == (3, 2) and writes.sleeps == [0.2, 0.4]


def test_a_reread_that_finds_the_write_done_ends_the_retries_with_its_answer():
    writes = Writes([K8sConnectionError('lost')], reread_says='it went through')
    assert writes.run() == 'it went through'
    assert (writes.writes, writes.rereads) == (1, 1)


def test_a_client_error_is_not_retried_and_retries_are_bounded():
    writes = Writes([api_error(403)])
    with pytest.raises(K8sApiError) as caught:
        writes.run()
    assert caught.value.status == 403 and (writes.writes, writes.rereads) == (1, 0)
    writes = Writes([api_error(500)] * 10)
    with pytest.raises(K8sApiError) as caught:
        writes.run(retries=2)
    assert caught.value.status == 500 and (writes.writes, writes.rereads) == (3, 2)
    writes = Writes([api_error(500)] * 10)
    with pytest.raises(K8sApiError):
        writes.run(retries=6)
    assert writes.sleeps == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0]   # doubling, at most 2 s


# --------------------------------------------------------------------------- waiting

def test_waiting_ends_when_nothing_is_pending():
    clock = SleepClock()
    left = {'a': 2, 'b': 0, 'c': 1}   # rounds each item still needs

    def poll_round(pending):
        still = [item for item in pending if left[item] > 0]
        for item in still:
            left[item] -= 1
        return still
    assert wait_until_settled(['a', 'b', 'c'], poll_round, wait_timeout=60, wait_sleep=5, clock=clock) == []
    assert clock.sleeps == [5, 5]


def test_waiting_stops_at_the_deadline_with_a_last_round_there_and_returns_what_is_pending():
    clock = SleepClock()
    rounds = []

    def poll_round(pending):
        rounds.append(clock.t)
        return [item for item in pending if item != 'quick']
    assert wait_until_settled(['quick', 'slow'], poll_round, wait_timeout=7, wait_sleep=3, clock=clock) == ['slow']
    assert rounds == [0, 3, 6, 7] and clock.t == 7   # the last pause is cut to the deadline
    assert wait_until_settled([], poll_round, wait_timeout=7, wait_sleep=3, clock=clock) == [] and len(rounds) == 4
    rounds[:] = []
    assert wait_until_settled(['slow'], poll_round, wait_timeout=0, wait_sleep=3, clock=clock) == ['slow'] and len(rounds) == 1


# --------------------------------------------------------------------------- reporting

def test_count_message_names_each_failure_or_the_first_ones_and_how_many_more():
    assert count_message('pod(s) could not be deleted', ['a: 403', 'b: 500'], 7) == (
        '2 of 7 pod(s) could not be deleted: a: 403; b: 500')
    details = ['fence-%d: boom' % i for i in range(5)]
    assert count_message('NetworkFence(s) failed', details, 9, shown=2, more_hint='see fences[].error') == (
        '5 of 9 NetworkFence(s) failed: fence-0: boom; fence-1: boom; ... (3 more, see fences[].error)')
    assert count_message('x failed', details, 5, shown=2) == '5 of 5 x failed: fence-0: boom; fence-1: boom; ... (3 more)'
    assert count_message('x failed', details, 5, shown=5) == '5 of 5 x failed: ' + '; '.join(details)

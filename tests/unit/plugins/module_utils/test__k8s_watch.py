# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ListWatch: list, watch from the list's version, resume after the server ends a watch, list again
after 410 Gone or a break, back off (bounded) between failed attempts."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sConnectionError, TransportError
from ansible_collections.volfence.csi.plugins.module_utils._k8s.watch import BROKEN, RELIST, ListWatch


def obj(name, version):
    return {'metadata': {'name': name, 'resourceVersion': str(version)}}


class Stop(object):
    """A threading.Event stand-in that is set after `after` waits or when asked; records the waits."""

    def __init__(self):
        self.flag = False
        self.waits = []

    def is_set(self):
        return self.flag

    def set(self):
        self.flag = True

    def wait(self, seconds):
        self.waits.append(seconds)
        return self.flag


class ScriptedApi(object):
    """Answers each list and watch from a script; a step may be an exception to raise."""

    def __init__(self, lists, watches, stop):
        self.lists, self.watches, self.stop = list(lists), list(watches), stop
        self.calls = []

    def list_versioned(self, path, field_selector=None, page=500):
        self.calls.append(('list', None))
        if not self.lists:
            self.stop.set()   # the script is over
            return [], 'end'
        step = self.lists.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    def watch(self, path, version, timeout, field_selector=None):
        self.calls.append(('watch', version))
        if not self.watches:
            self.stop.set()
            return
        step = self.watches.pop(0)
        if isinstance(step, Exception):
            raise step
        for event in step:
            if isinstance(event, Exception):
                raise event
            yield event


def run(lists, watches):
    stop = Stop()
    api = ScriptedApi(lists, watches, stop)
    got = []
    watch = ListWatch(api, 'Node', '/api/v1/nodes', backoff=0.5, backoff_max=2.0)
    watch.run(lambda kind, etype, payload: got.append((etype, payload)), stop)
    return got, api.calls, stop.waits, watch


def test_list_then_watch_from_its_version_and_resume_after_the_server_ends_the_watch():
    got, calls, waits, watch = run(
        lists=[([obj('a', 5)], '10')],
        watches=[[{'type': 'ADDED', 'object': obj('b', 11)}, {'type': 'BOOKMARK', 'object': obj('', 15)}],
                 [{'type': 'MODIFIED', 'object': obj('a', 16)}]])
    assert [e for e, _p in got] == [RELIST, 'ADDED', 'MODIFIED']   # a bookmark moves the version only
    assert calls == [('list', None), ('watch', '10'), ('watch', '15'), ('watch', '16')]
    assert waits == [] and watch.lists == 1


def test_410_gone_lists_again_and_says_the_view_was_broken():
    got, calls, _waits, watch = run(
        lists=[([], '10'), ([obj('a', 40)], '40')],
        watches=[[{'type': 'ERROR', 'object': {'code': 410, 'message': 'too old resource version: 10 (30)'}}], []])
    assert [e for e, _p in got] == [RELIST, BROKEN, RELIST]
    assert '410 Gone' in got[1][1]
    assert calls == [('list', None), ('watch', '10'), ('list', None), ('watch', '40'), ('watch', '40')]
    assert watch.lists == 2


def test_a_watch_without_answer_is_sent_again_once_at_once_then_it_is_a_break():
    reset = TransportError('the connection was closed without an answer')
    got, calls, waits, _watch = run(
        lists=[([], '1'), ([obj('a', 7)], '7')],
        watches=[[{'type': 'ADDED', 'object': obj('b', 3)}, reset], reset, [], [reset], reset])
    # the first drop: sent again at once, from the version of the last event (3), not the list's (1);
    # the second in a row: a break, listed again after the backoff
    assert calls[:5] == [('list', None), ('watch', '1'), ('watch', '3'), ('list', None), ('watch', '7')]
    assert [e for e, _p in got][:4] == [RELIST, 'ADDED', BROKEN, RELIST]
    # a watch that ended normally in between resets the one retry: drop, again at once, drop: a break
    assert calls[5:8] == [('watch', '7'), ('watch', '7'), ('list', None)]
    assert waits == [0.5, 0.5]


def test_a_broken_watch_or_list_backs_off_doubling_up_to_the_bound_then_resets():
    down = K8sConnectionError('The Kubernetes API is not reachable: connection refused')
    got, calls, waits, _watch = run(
        lists=[([], '1'), down, down, down, down, ([obj('a', 9)], '9'), ([], '9')],
        watches=[down, [], down])
    assert waits == [0.5, 1.0, 2.0, 2.0, 2.0, 0.5]
    assert [e for e, _p in got].count(BROKEN) == 6
    assert [e for e, _p in got if e != BROKEN] == [RELIST, RELIST, RELIST]

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import threading

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel


def test_results_in_order_errors_per_item_and_bounded_concurrency():
    lock = threading.Lock()
    state = dict(now=0, peak=0)
    release = threading.Event()

    def work(item):
        with lock:
            state['now'] += 1
            state['peak'] = max(state['peak'], state['now'])
            if state['now'] >= 3:
                release.set()
        release.wait(60)   # for the third worker, however loaded the machine; a bound only against a hang
        with lock:
            state['now'] -= 1
        if item % 4 == 0:
            raise ValueError('bad %d' % item)
        return item * 10

    out = run_parallel(work, range(1, 13), 3, errors=(ValueError,))
    assert [item for item, _r, _e in out] == list(range(1, 13))
    assert [r for _i, r, e in out if e is None] == [i * 10 for i in range(1, 13) if i % 4]
    assert [str(e) for _i, _r, e in out if e is not None] == ['bad 4', 'bad 8', 'bad 12']
    assert state['peak'] == 3


def test_empty_one_worker_and_unexpected_errors_propagate():
    assert run_parallel(lambda i: i, [], 8) == []
    assert run_parallel(lambda i: i + 1, [1, 2], 0) == [(1, 2, None), (2, 3, None)]
    with pytest.raises(KeyError):
        run_parallel(lambda i: {}[i], [1, 2], 2, errors=(ValueError,))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The clock the waiting backends are given once (_clock.Clock)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import time

from ansible_collections.volfence.csi.plugins.module_utils._clock import SYSTEM_CLOCK, Clock
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import wait_until_settled


def test_the_system_clock_reads_the_system_time_and_an_aware_utc_date():
    before = time.time()
    assert before <= SYSTEM_CLOCK.time() <= time.time()
    now = SYSTEM_CLOCK.now()
    assert now.tzinfo is not None and now.utcoffset() == datetime.timedelta(0)
    assert SYSTEM_CLOCK.sleep is time.sleep


def test_a_clock_made_of_a_tests_time_and_sleep_drives_a_wait_without_waiting():
    t = [0.0]
    clock = Clock(time=lambda: t[0], sleep=lambda seconds: t.__setitem__(0, t[0] + seconds))
    rounds = []

    def poll_round(pending):
        rounds.append(t[0])
        return pending
    assert wait_until_settled(['slow'], poll_round, wait_timeout=5, wait_sleep=2, clock=clock) == ['slow']
    assert rounds == [0.0, 2.0, 4.0, 5.0] and t[0] == 5.0

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the clock of the code that waits, given once to what waits.

A backend that polls until something settles (a fence taking effect, an attachment going away)
reads the time, pauses, and judges ages against the date. It takes one ``clock`` (a keyword of its
constructor, or of the waiting function: fence_failed_nodes, wait_unwatched, wait_until_settled)
instead of separate sleep and time callables passed along from call to call; unit tests give a fake
clock whose time moves only when something sleeps. What only pauses between retries (KubeApi,
NodeMarks, PodDeleter) takes a ``sleep`` keyword the same way, once. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import time as _time


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


class Clock(object):
    """time() in seconds (for deadlines), sleep(seconds), now() as an aware UTC datetime (for ages
    of API objects). By default the system's; any object with these three methods will do."""

    def __init__(self, time=_time.time, sleep=_time.sleep, now=_utc_now):
        self.time = time
        self.sleep = sleep
        self.now = now


SYSTEM_CLOCK = Clock()

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the documented ranges of the modules' numeric options.

Pure Python, unit-tested. Every module checks its numbers here before it connects or changes
anything, so an out-of-range value gets one clear message: ``parallel=0 is out of range: give
1 to 256; nothing was changed``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Seconds a single call may wait (Ceph `timeout`, Kubernetes `request_timeout`, FUSE
# `probe_timeout`): an hour is far beyond any healthy answer, and threading's join() overflows on
# absurd values (OverflowError: timeout value is too large).
MAX_CALL_TIMEOUT = 3600
# Seconds a module may wait for a controller or kubelet (`wait_timeout`), and grace periods.
MAX_WAIT_SECONDS = 86400
# the longest Lease age a failover waits for before it takes a node for dead (a day)
MAX_LEASE_GRACE = 86400
# Seconds between two polls while waiting.
MAX_SLEEP_SECONDS = 600
# Parallel requests or commands one module runs at once.
MAX_PARALLEL = 256
# Retries of a Kubernetes read.
MAX_API_RETRIES = 20


def check_range(value, what, low, high, unit=''):
    """`value` (an int) unchanged, or ValueError naming the option, the value and the range. None
    stays None (an option not given)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError('%s must be a whole number%s, got %r; nothing was changed'
                         % (what, (' of %s' % unit) if unit else '', value))
    if value < low or value > high:
        raise ValueError('%s=%d is out of range: give %d to %d%s; nothing was changed'
                         % (what, value, low, high, (' %s' % unit) if unit else ''))
    return value

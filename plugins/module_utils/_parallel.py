# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: bounded parallelism for the Kubernetes modules' bulk writes.

Threads over one connection pool (KubeApi's transport is thread-safe: urllib3's pool). Standard
library only, unit-tested (tests/unit/plugins/module_utils/test__parallel.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

try:
    from concurrent.futures import ThreadPoolExecutor
except ImportError:  # pragma: no cover
    ThreadPoolExecutor = None


def run_parallel(func, items, workers, errors=(Exception,)):
    """[(item, result, error)] in the order of `items`: func(item) for each, at most `workers` at a
    time. An exception of one of the `errors` classes is returned as that item's error (the other
    items go on); any other exception propagates."""
    items = list(items)
    if not items:
        return []
    workers = max(1, min(int(workers or 1), len(items)))

    def call(item):
        try:
            return item, func(item), None
        except errors as exc:  # pylint: disable=broad-except
            return item, None, exc

    if workers == 1 or ThreadPoolExecutor is None:
        return [call(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(call, items))

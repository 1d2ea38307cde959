# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""List, then watch, one kind of object, as an informer does: the EDA event source's view of the
cluster.

Private to volfence.csi. ListWatch.run() lists the kind, hands the whole list over, then watches
from the list's resourceVersion and hands over every change. When the server ends a watch (its
timeout), it resumes from the last version seen; a watch request that gets no answer is sent again
once, at once (a kept-alive connection the server had closed). When the version is too old (410
Gone) or the watch breaks again (the API server restarted, the connection dropped), it lists again:
what changed while it was away is in the new list, so nothing is lost, and the consumer's incident
ids keep anything from being told twice. Between a break and the new list, the kind is marked not
synced, so that nothing is decided on a view that may be old. Failed attempts back off, doubling up
to a bound.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import threading

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, TransportError

# What a watch event of each type does: the consumer gets (kind, type, object).
RELIST = 'RELIST'      # (kind, 'RELIST', [objects]): the whole list
BROKEN = 'BROKEN'      # (kind, 'BROKEN', reason): the view of kind may be old until the next RELIST


class ListWatch(object):
    """One kind's list and watch. deliver(kind, type, payload) is called from run()'s thread."""

    def __init__(self, api, kind, path, *, field_selector=None, watch_timeout=300, backoff=0.5, backoff_max=30.0,
                 page=500):
        self.api = api
        self.kind = kind
        self.path = path
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.page = page
        self.lists = 0       # lists done (the first, then one per 410 or break)
        self.watches = 0     # watch requests sent
        self.version = None  # the last resourceVersion seen; None: list again

    def run(self, deliver, stop):
        """Until `stop` (a threading.Event) is set."""
        self.version, delay, retried = None, self.backoff, False
        while not stop.is_set():
            reason = None
            try:
                if self.version is None:
                    items, self.version = self.api.list_versioned(self.path, field_selector=self.field_selector,
                                                                  page=self.page)
                    self.lists += 1
                    deliver(self.kind, RELIST, items)
                    delay = self.backoff
                self._watch_once(deliver, stop)
                if self.version is not None:
                    delay, retried = self.backoff, False
            except TransportError as exc:
                if self.version is not None and not retried:
                    # Once, at once, from the last version seen: a kept-alive connection the server had
                    # closed gives no answer at all, and the server replays from that version.
                    retried = True
                    continue
                reason = str(exc)
            except K8sError as exc:
                reason = str(exc)
            except Exception as exc:  # pylint: disable=broad-except
                # the kubernetes library's own errors (a dropped chunked stream)
                reason = '%s: %s' % (type(exc).__name__, exc)
            if reason is None:
                continue
            self.version, retried = None, False
            deliver(self.kind, BROKEN, reason)
            stop.wait(delay)
            delay = min(delay * 2, self.backoff_max)

    def _watch_once(self, deliver, stop):
        """One watch request from self.version, which follows every event (None after a 410 Gone: list again)."""
        self.watches += 1
        for event in self.api.watch(self.path, self.version, self.watch_timeout, field_selector=self.field_selector):
            if stop.is_set():
                return
            etype, obj = event.get('type'), event.get('object') or {}
            if etype == 'ERROR':
                if obj.get('code') == 410:
                    self.version = None
                    deliver(self.kind, BROKEN, 'watch expired (410 Gone): %s' % (obj.get('message') or ''))
                    return
                raise K8sError('the watch of %s failed: %s %s' % (self.path, obj.get('code'), obj.get('message')))
            self.version = (obj.get('metadata') or {}).get('resourceVersion') or self.version
            if etype != 'BOOKMARK':
                deliver(self.kind, etype, obj)


def start_watches(watches, deliver, stop):
    """A daemon thread running each ListWatch; returns the threads."""
    threads = []
    for watch in watches:
        thread = threading.Thread(target=watch.run, args=(deliver, stop), name='volfence-watch-%s' % watch.kind,
                                  daemon=True)
        thread.start()
        threads.append(thread)
    return threads

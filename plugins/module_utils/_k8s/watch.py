# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""List, then watch, one kind of object, as an informer does: the EDA event source's view of the
cluster.

Private to volfence.csi. ListWatch.run() lists the kind, hands the whole list over, then watches
from the list's resourceVersion and hands over every change. When the server ends a watch (its
timeout), it resumes from the last version seen. When the version is too old (410 Gone) or the
watch breaks (the API server restarted, the connection dropped), it lists again: what changed
while it was away is in the new list, so nothing is lost, and the consumer's incident ids keep
anything from being told twice. Between a break and the new list, the kind is marked not synced, so
that nothing is decided on a view that may be old. Failed attempts back off, doubling up to a
bound.
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

    def __init__(self, api, kind, path, field_selector=None, watch_timeout=300, backoff=0.5, backoff_max=30.0,
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

    def run(self, deliver, stop):
        """Until `stop` (a threading.Event) is set."""
        version, delay = None, self.backoff
        while not stop.is_set():
            try:
                if version is None:
                    items, version = self.api.list_versioned(self.path, field_selector=self.field_selector,
                                                             page=self.page)
                    self.lists += 1
                    deliver(self.kind, RELIST, items)
                    delay = self.backoff
                version = self._watch_once(version, deliver, stop)
                if version is not None:
                    delay = self.backoff
            except (K8sError, TransportError) as exc:
                version = None
                deliver(self.kind, BROKEN, str(exc))
                stop.wait(delay)
                delay = min(delay * 2, self.backoff_max)
            except Exception as exc:  # pylint: disable=broad-except
                # the kubernetes library's own errors (a dropped chunked stream): list again
                version = None
                deliver(self.kind, BROKEN, '%s: %s' % (type(exc).__name__, exc))
                stop.wait(delay)
                delay = min(delay * 2, self.backoff_max)

    def _watch_once(self, version, deliver, stop):
        """The version to resume from after one watch request; None to list again (410 Gone)."""
        self.watches += 1
        for event in self.api.watch(self.path, version, self.watch_timeout, field_selector=self.field_selector):
            if stop.is_set():
                return version
            etype, obj = event.get('type'), event.get('object') or {}
            if etype == 'ERROR':
                if obj.get('code') == 410:
                    deliver(self.kind, BROKEN, 'watch expired (410 Gone): %s' % (obj.get('message') or ''))
                    return None
                raise K8sError('the watch of %s failed: %s %s' % (self.path, obj.get('code'), obj.get('message')))
            version = (obj.get('metadata') or {}).get('resourceVersion') or version
            if etype != 'BOOKMARK':
                deliver(self.kind, etype, obj)
        return version


def start_watches(watches, deliver, stop):
    """A daemon thread running each ListWatch; returns the threads."""
    threads = []
    for watch in watches:
        thread = threading.Thread(target=watch.run, args=(deliver, stop), name='volfence-watch-%s' % watch.kind,
                                  daemon=True)
        thread.start()
        threads.append(thread)
    return threads

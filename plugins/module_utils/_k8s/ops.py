# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the Kubernetes operations both k8s module families share, on a KubeApi.

* Reading by name (``read_named``, ``list_grouped``): one request each for a few objects, one LIST
  of the whole collection for many (``EACH_LIMIT``); ``get_each``: objects of many collections (claims
  of many namespaces), a GET each, in parallel.
* Writing with re-reads (``write_with_reread``): a write that meets a conflict, a server error or
  a lost answer is tried again only after the object was read again, since the write may have gone
  through, or the object may have changed so that nothing is left to write.
* Waiting (``wait_until_settled``): rounds of reads until nothing is pending or the time is up.
* The failure summary (``count_message``): "N of M <things> <failed>: each one and why".

Used by _networkfence_ops, _volumeattachment_ops, _pods and _diagnose_k8s. Unit tests:
tests/unit/plugins/module_utils/test__k8s_ops.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    RETRYABLE_STATUSES,
    K8sApiError,
    K8sConnectionError,
    K8sError,
)
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel

# Up to this many objects, one request each (a GET, or a LIST with a selector); above it, one LIST
# of the whole collection is cheaper.
EACH_LIMIT = 10


# --------------------------------------------------------------------------- reading

def list_grouped(keys, list_each, list_all, key_of, limit=EACH_LIMIT):
    """{key: [objects]} for each of `keys`: list_each(key) for up to `limit` keys, else one list_all()
    whose objects are grouped by key_of(object) (objects of other keys are dropped)."""
    keys = sorted(set(k for k in keys if k))
    if len(keys) <= limit:
        return dict((key, list_each(key)) for key in keys)
    grouped = dict((key, []) for key in keys)
    for obj in list_all():
        key = key_of(obj)
        if key in grouped:
            grouped[key].append(obj)
    return grouped


def _name(obj):
    return (obj.get('metadata') or {}).get('name')


def read_named(api, path, kind, names, limit=EACH_LIMIT):
    """{name: object} of those of `names` that exist: one GET each for up to `limit` names, else one
    LIST. `path(name)` is an object's REST path, `path()` its collection's."""
    def get(name):
        obj = api.get(path(name), what=(kind, name), missing_ok=True)
        return [] if obj is None else [obj]
    grouped = list_grouped(names, get, lambda: api.list(path(), what=(kind, None)), _name, limit)
    return dict((name, objs[0]) for name, objs in grouped.items() if objs)


def get_each(api, refs, workers):
    """The objects that exist of `refs` [(path, what)], a GET each, at most `workers` at a time, in the
    order asked. An error propagates: the read is incomplete, so no decision may be taken on it."""
    answers = run_parallel(lambda ref: api.get(ref[0], what=ref[1], missing_ok=True), refs, workers, errors=())
    return [obj for _ref, obj, _error in answers if obj is not None]


# --------------------------------------------------------------------------- writing

def is_retryable_write_error(exc):
    """Whether a failed write may succeed when tried again after a re-read: a conflict (409), a server
    error or throttling (429, 5xx), or no answer at all."""
    if isinstance(exc, K8sApiError):
        return exc.status == 409 or exc.status in RETRYABLE_STATUSES
    return isinstance(exc, K8sConnectionError)


def write_with_reread(write, reread, retries, sleep):
    """write()'s result. After a retryable error (is_retryable_write_error), up to `retries` times:
    a pause (0.2 s, doubling, at most 2 s), then reread(), which returns None to write again, or
    anything else to stop (the write went through before its answer was lost, or nothing is left to
    write): that is then the result. Other errors, and the last one, propagate."""
    attempts = retries + 1
    for attempt in range(attempts):
        try:
            return write()
        except K8sError as exc:
            if attempt + 1 >= attempts or not is_retryable_write_error(exc):
                raise
        sleep(min(0.2 * (2 ** attempt), 2.0))
        settled = reread()
        if settled is not None:
            return settled
    return None  # pragma: no cover (the last attempt returns or raises)


# --------------------------------------------------------------------------- waiting

def wait_until_settled(pending, poll_round, *, wait_timeout, wait_sleep, clock):
    """The items still pending once `wait_timeout` seconds have passed ([] when all settled before).

    poll_round(pending) reads the pending items once (one LIST, or a GET each), settles those it can
    (recording their outcome or failure itself) and returns the others; rounds are `wait_sleep` seconds
    apart, and the last one comes at the deadline, not after it. `clock`: the backend's (_clock.Clock)."""
    deadline = clock.time() + wait_timeout
    pending = list(pending)
    while pending:
        pending = list(poll_round(pending))
        if not pending or clock.time() >= deadline:
            break
        clock.sleep(max(0.0, min(wait_sleep, deadline - clock.time())))
    return pending


# --------------------------------------------------------------------------- reporting

def count_message(what, details, total, shown=None, more_hint=None):
    """'<N> of <total> <what>: <detail>; <detail>' for the N `details` (one per failed object): all of
    them, or the first `shown` and '; ... (<K> more, <more_hint>)'."""
    listed = details if shown is None else details[:shown]
    text = '%d of %d %s: %s' % (len(details), total, what, '; '.join(listed))
    if len(listed) < len(details):
        text += '; ... (%d more%s)' % (len(details) - len(listed), (', ' + more_hint) if more_hint else '')
    return text

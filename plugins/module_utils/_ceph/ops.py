# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: Ceph operations the modules share, on top of a connected client.

The client (``_ceph/client.py``) talks to Ceph; the pure modules (``_ceph/blocklist.py``,
``_ceph/rbd.py``, ``_decisions/fence.py``) decide; this file strings them together. Unit tests drive it with a fake client.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno

from ansible_collections.volfence.csi.plugins.module_utils._clock import SYSTEM_CLOCK
from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import (
    Request,
    check_removal,
    check_safety,
    cluster_daemon_addresses,
    parse_blocklist_docs,
    parse_protected,
    plan_absent,
    plan_present,
    predict_after,
    sorted_entries,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    DEFAULT_IMAGE_WORKERS,
    DEFAULT_WORKERS,
    blocklist_change_command,
    blocklist_ls_command,
    dump_command,
    parse_image_spec,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    AddressMatcher,
    CephCommandError,
    CephError,
    CephNotFoundError,
    check_expire,
    is_unknown_command,
    json_document,
    json_documents,
    parse_addr,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.fence import fence_plan, watchers_to_settle
from ansible_collections.volfence.csi.plugins.module_utils._decisions.locks import failover_lock_breaks
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import (
    describe_locks,
    exclusive_lock_owners,
    image_report,
    select_locks,
)


class BlocklistState(object):
    """The blocklist as read from the cluster, with the command naming the cluster uses."""

    def __init__(self, naming, entries, has_ranges):
        self.naming = naming          # 'blocklist' (Pacific+) or 'blacklist' (older)
        self.entries = entries
        self.has_ranges = has_ranges  # the cluster lists (and so supports) range entries

    @property
    def range_supported(self):
        return self.has_ranges and self.naming == 'blocklist'

    def strings(self):
        return [e.entry for e in sorted_entries(self.entries)]


def read_blocklist(client, naming=None):
    """The current blocklist. Without `naming`, tries `osd blocklist ls` and falls back to
    `osd blacklist ls` when the cluster does not know the new name (before Pacific)."""
    names = [naming] if naming else ['blocklist', 'blacklist']
    last = None
    for name in names:
        command = blocklist_ls_command(name)
        try:
            outbuf, _outs = client.mon(command)
        except CephCommandError as exc:
            if name == 'blocklist' and len(names) > 1 and is_unknown_command(exc):
                last = exc
                continue
            raise
        entries, has_ranges = parse_blocklist_docs(json_documents(outbuf, command.describe()))
        return BlocklistState(name, entries, has_ranges)
    raise last  # pragma: no cover - the loop returns or raises


def read_daemon_addresses(client):
    """Addresses of the cluster's monitors, managers, OSDs and MDSs (mon/mgr/osd/fs dump)."""
    kinds = ('mon dump', 'mgr dump', 'osd dump', 'fs dump')
    dumps = {}
    for command, result, error in client.mon_many([dump_command(k) for k in kinds], workers=len(kinds)):
        kind = command.json['prefix']
        if error is not None:
            raise error
        dumps[kind] = json_document(result[0], command.describe(), empty={})
    return cluster_daemon_addresses(dumps.get('mon dump'), dumps.get('mgr dump'), dumps.get('osd dump'),
                                    dumps.get('fs dump'))


def execute_actions(client, naming, actions, expire=None, workers=DEFAULT_WORKERS):
    """Run blocklist actions: ranges one at a time, addresses in parallel (bounded by `workers`;
    over one connection with the bindings, as parallel processes with the CLI).

    Returns (done, failed, range_unsupported): actions that succeeded, [(action, CephError)],
    and whether a range command was refused as unknown (then the remaining ranges are skipped).
    """
    done, failed = [], []
    for action in [a for a in actions if a.is_range]:
        command = blocklist_change_command(naming, action.op, action.target, expire, True)
        try:
            client.mon(command)
        except CephError as exc:  # a timeout (CephConnectionError) too: keep what was done (I7)
            if is_unknown_command(exc):
                return done, failed, True
            failed.append((action, exc))
            continue
        done.append(action)
    singles = [a for a in actions if not a.is_range]
    commands = dict((id(a), blocklist_change_command(naming, a.op, a.target, expire, False)) for a in singles)
    by_command = dict((id(commands[id(a)]), a) for a in singles)
    for command, _result, error in client.mon_many([commands[id(a)] for a in singles], workers):
        action = by_command[id(command)]
        if error is None:
            done.append(action)
        else:
            failed.append((action, error))
    return done, failed, False


def action_dict(action):
    return dict(op=action.op, range=action.is_range, target=action.target, entry=action.display,
                requested=action.source)


class BlocklistFailure(CephError):
    """Some blocklist changes failed, or what was done could not be verified; `result` tells what
    was done (actions), what failed (failed_actions, each with its error) and whether anything was
    written (changed), as ceph_blocklist reports it (I7)."""

    def __init__(self, msg, result, first_error):
        super(BlocklistFailure, self).__init__(msg, cmd=first_error.cmd, rc=first_error.rc,
                                               stdout=first_error.stdout, stderr=first_error.stderr)
        self.result = result


def ensure_blocklist(client, state, *, addresses=None, cidrs=None, expire=None, cidr_mode='auto',
                     max_addresses=256, workers=DEFAULT_WORKERS, check_mode=False, current=None,
                     daemons=None, protect=None, force=False):
    """Make the blocklist match the request. Validates everything, then refuses unsafe requests
    (the cluster's daemons, `protect`: IPs/CIDRs never to fence, see check_safety), before
    changing anything, and removals by a CIDR that covers everything (always) or more than
    `max_addresses` (unless `force`, see check_removal) before reading anything. Returns the result
    dict ceph_blocklist reports.

    Once something was sent, every outcome is reported honestly (I7): a partial failure, a monitor
    that stops answering mid-run, or a read-back that fails raises BlocklistFailure whose
    `result` keeps `actions` (done), `failed_actions` and `changed` (true when anything was
    written), with `blocklist_error` when the blocklist could not be read back."""
    request = Request(addresses, cidrs)  # ValueError on bad input: nothing done yet
    expire = check_expire(expire)
    protected = parse_protected(protect)
    if state != 'present':
        check_removal(request, max_addresses, force)
    if current is None:
        current = read_blocklist(client)
    before = current.strings()
    warnings = []
    if state == 'present':
        if daemons is None:
            daemons = read_daemon_addresses(client)
        check_safety(request, daemons, max_addresses, protected)
        if cidr_mode == 'range' and request.cidrs and not current.range_supported:
            raise CephError('cidr_mode=range: this cluster has no `osd blocklist range` command '
                            '(its blocklist lists no range entries); use cidr_mode=auto or addresses')
        use_ranges = cidr_mode == 'range' or (cidr_mode == 'auto' and current.range_supported)
        actions = plan_present(request, current.entries, use_ranges)
    else:
        use_ranges = None
        actions, warnings = plan_absent(request, current.entries)
    mode = 'range' if use_ranges else ('addresses' if use_ranges is not None else None)
    result = dict(changed=bool(actions), naming=current.naming, cidr_mode=mode, warnings=warnings,
                  actions=[action_dict(a) for a in actions], failed_actions=[],
                  before=before, after=predict_after(current.entries, actions), blocklist_error=None)
    if check_mode or not actions:
        return result
    done, failed, unsupported = execute_actions(client, current.naming, actions, expire, workers)
    stop = None
    if unsupported:
        # Detected only now (the cluster listed range entries yet refused the command): fall back
        # to one entry per address, as ceph-csi does.
        if cidr_mode == 'range':
            stop = CephError('the cluster refused `osd %s range add`; use cidr_mode=auto or addresses'
                             % current.naming)
        else:
            fallback = [a for a in plan_present(request, current.entries, False) if a not in done]
            more_done, more_failed, _unsupported = execute_actions(client, current.naming, fallback, expire,
                                                                   workers)
            done += more_done
            failed += more_failed
            result['cidr_mode'] = 'addresses'
            result['warnings'].append('the cluster does not support range blocklisting: blocklisted each address '
                                      'of the CIDRs instead')
    return _finish(client, current, result, done, failed, stop=stop)


def _finish(client, current, result, done, failed, *, stop=None):
    """Fill `result` with what was done and failed, read the blocklist back, and raise
    BlocklistFailure (keeping both lists, adding the error) unless everything worked."""
    result['actions'] = [action_dict(a) for a in done]
    result['failed_actions'] = [dict(action_dict(a), error=e.msg) for a, e in failed]
    result['changed'] = bool(done)
    try:
        result['after'] = read_blocklist(client, current.naming).strings()
    except CephError as exc:
        # The monitor stopped answering after the changes: report them all the same, with the
        # prediction as the blocklist and this error beside the lists (never instead of them).
        result['after'] = predict_after(current.entries, done)
        result['blocklist_error'] = 'could not read the blocklist back after the changes: %s' % exc.msg
        result['warnings'].append(result['blocklist_error'])
        raise BlocklistFailure('%d blocklist change(s) made, %d failed%s; %s' % (
            len(done), len(failed), (' (first error: %s)' % failed[0][1].msg) if failed else '',
            result['blocklist_error']), result, failed[0][1] if failed else exc)
    if stop is not None:
        raise BlocklistFailure('%s (%d change(s) were made before)' % (stop.msg, len(done)), result, stop)
    unseen = [a for a in done if a.op == 'add' and a.display not in result['after']]
    if unseen and not failed:
        # Never report a fence that is not there (e.g. an old monitor taking a CIDR for an address).
        raise BlocklistFailure('the cluster accepted %d blocklist addition(s) but does not list %s: check '
                               '`ceph osd %s ls` before relying on this fence'
                               % (len(unseen), ', '.join(a.display for a in unseen), current.naming),
                               result, CephError('not listed after add'))
    if failed:
        raise BlocklistFailure('%d of %d blocklist changes failed (the %d others were made): first error: %s'
                               % (len(failed), len(failed) + len(done), len(done), failed[0][1].msg),
                               result, failed[0][1])
    return result


# --------------------------------------------------------------------------- advisory locks

# The options of read_image_locks, shared by rbd_lock_info and rbd_lock (documentation: the
# LOCK_LISTING fragment of doc_fragments/ceph.py).
LOCK_LISTING_OPTIONS = dict(
    node_addresses=dict(type='dict', default={}),
    query_lock_owners=dict(type='bool', default=False),
)


def read_image_locks(client, spec, node_map=None, query_lock_owners=False):
    """(listing, warnings): what rbd_lock_info returns of `spec` (and rbd_lock before any change):
    its locks (`locks`), the exclusive-lock feature's owners among them (`exclusive_lock_owners`)
    and, with `query_lock_owners`, librbd's own answer (`lock_owners`, else None). librbd not
    answering is informational: a warning that says why, never a failure."""
    locks = describe_locks(client.image_locks(spec), node_map)
    listing = dict(locks=locks, exclusive_lock_owners=exclusive_lock_owners(locks), lock_owners=None)
    warnings = []
    if query_lock_owners:
        try:
            listing['lock_owners'] = client.lock_owners(spec)
        except CephError as exc:
            warnings.append('lock_get_owners could not tell the exclusive-lock owners of %s: %s%s' % (
                spec, exc.msg, ' (EBUSY: the lock is an advisory lock, not the exclusive-lock feature\'s)'
                if exc.rc is not None and abs(int(exc.rc)) == errno.EBUSY else ''))
    return listing, warnings


def _lock_key(lock):
    return (lock['id'], lock['locker'])


class LockBreakFailure(CephError):
    """Fencing a locker or breaking a lock failed; `result` is what rbd_lock reports: the lockers
    blocklisted, the locks broken, those that failed (each with its error) and `changed` (I7)."""

    def __init__(self, msg, result, first_error):
        super(LockBreakFailure, self).__init__(msg, cmd=first_error.cmd, rc=first_error.rc,
                                               stdout=first_error.stdout, stderr=first_error.stderr)
        self.result = result


def break_image_locks(client, spec, locks, lock_filter, *, protect=None, blocklist_locker=True, expire=None,
                      check_mode=False, node_map=None, also_fence=()):
    """Break the locks of `spec` that `lock_filter` selects, except those held from `protect` (an
    AddressMatcher), after blocklisting each locker's exact address and `also_fence` (the holder node's own
    addresses: an in-tree lock's locker is not the client that writes) when `blocklist_locker`.

    Returns the rbd_lock result (broken, protected, blocklisted, blocklist_failed, failed_locks,
    changed, locks_after).
    Nothing is broken when blocklisting fails. A lock that fails to break does not stop the
    others; any failure raises LockBreakFailure whose `result` says what was blocklisted, what was
    broken and what failed, with `changed` true when anything was written (I7)."""
    to_break, protected = select_locks(locks, lock_filter, protect)
    result = dict(broken=[], protected=protected, blocklisted=[], blocklist_failed=[], failed_locks=[], changed=False,
                  locks_after=locks, locks_after_error=None)
    if not to_break:
        return result
    if blocklist_locker:
        addresses = sorted(set(lock['address'] for lock in to_break) | set(also_fence or ()))
        try:
            fenced = ensure_blocklist(client, 'present', addresses=addresses, expire=expire, check_mode=check_mode,
                                      protect=protect.patterns if protect else None)
        except BlocklistFailure as exc:
            result['blocklisted'] = exc.result['actions']
            result['blocklist_failed'] = exc.result['failed_actions']
            result['changed'] = exc.result['changed']
            result['failed_locks'] = [dict(lock, error='not broken: blocklisting the lockers failed') for lock in to_break]
            raise LockBreakFailure('blocklisting the lockers failed, no lock was broken (%d blocklist entr%s '
                                   'added): %s' % (len(result['blocklisted']),
                                                   'y was' if len(result['blocklisted']) == 1 else 'ies were',
                                                   exc.msg), result, exc)
        result['blocklisted'] = fenced['actions']
        result['changed'] = fenced['changed']
    errors = []
    for lock in to_break:
        if not check_mode:
            try:
                client.break_lock(spec, lock['locker'], lock['id'])
            except CephError as exc:
                if exc.rc is not None and abs(int(exc.rc)) == errno.ENOENT:
                    continue  # released meanwhile: nothing left to break
                result['failed_locks'].append(dict(lock, error=exc.msg))
                errors.append(exc)
                continue
        result['broken'].append(lock)
    result['changed'] = result['changed'] or bool(result['broken'])
    gone = set(_lock_key(lock) for lock in result['broken'])
    result['locks_after'] = [lock for lock in locks if _lock_key(lock) not in gone]
    if result['changed'] and not check_mode:
        try:
            result['locks_after'] = describe_locks(client.image_locks(spec), node_map)
        except CephError as exc:  # keep the lists, add the error (I7)
            result['locks_after_error'] = 'could not read the locks of %s back: %s' % (spec, exc.msg)
            if not errors:
                errors.append(exc)
    if errors:
        first = result['failed_locks'][0] if result['failed_locks'] else None
        raise LockBreakFailure('%s%d of %d lock(s) of %s broken (%s), %d failed (%s); blocklisted: %s%s' % (
            ('breaking lock %r held by %s failed: %s; ' % (first['id'], first['locker'], first['error']))
            if first else '',
            len(result['broken']), len(to_break), spec,
            ', '.join(lock['id'] for lock in result['broken']) or 'none',
            len(result['failed_locks']), ', '.join(lock['id'] for lock in result['failed_locks']) or 'none',
            ', '.join(a['entry'] for a in result['blocklisted']) or 'none',
            ('; ' + result['locks_after_error']) if result['locks_after_error'] else ''), result, errors[0])
    return result


# --------------------------------------------------------------------------- fenced clients gone

def fence_matcher(addresses, cidrs):
    """An AddressMatcher of the clients a blocklist request fences, as Ceph matches them: ip:port/nonce
    that client; ip, or ip:0/0, every client of the IP; a CIDR every client inside it."""
    patterns = []
    for text in addresses or []:
        addr = parse_addr(text, 'addresses entry')
        patterns.append(str(addr.ip) if addr.ip_wide else text)
    return AddressMatcher(patterns + list(cidrs or []), 'addresses')


def fenced_watchers(reports, fenced):
    """The watchers of `reports` (image_report() dicts) whose address `fenced` (an AddressMatcher of
    the blocklisted addresses and CIDRs) matches: [(image spec, address)], sorted."""
    return sorted((r['spec'], w['address']) for r in reports for w in r.get('watchers') or []
                  if fenced.match(parse_addr(w['address'], 'watcher address')) is not None)


def wait_unwatched(client, specs, fenced, *, wait_timeout, clock=SYSTEM_CLOCK, workers=DEFAULT_IMAGE_WORKERS):
    """(reports, still): the images `specs` read until none is watched by a fenced client, or
    `wait_timeout` seconds passed. The OSDs drop a blocklisted client's watches once they see the
    new OSD map; until then the fence has not taken effect (I6). reports: image_report() of each
    image that exists (a missing image has no watcher); still: fenced_watchers() of the last read.
    An image that cannot be read raises its CephError: the fence could not be confirmed."""
    deadline = clock.time() + wait_timeout
    delay = 0.1
    while True:
        reports = []
        for spec, raw, error in client.inspect_images(specs, metadata=False, workers=workers):
            if error is None:
                reports.append(image_report(spec, raw))
            elif not isinstance(error, CephNotFoundError):
                raise error
        still = fenced_watchers(reports, fenced)
        if not still or clock.time() >= deadline:
            return reports, still
        clock.sleep(max(0.0, min(delay, deadline - clock.time())))
        delay = min(delay * 2, 2.0)


# --------------------------------------------------------------------------- a failover's fence, in one call

class FenceFailure(CephError):
    """A failover's fence that could not be planned or set: `result` keeps what was read and done (I7)."""

    def __init__(self, msg, result, cause=None):
        kwargs = cause.fail_kwargs() if cause is not None else {}
        kwargs.pop('msg', None)
        super(FenceFailure, self).__init__(msg, **kwargs)
        self.result = result


def fence_failed_nodes(client, specs, *, failed_nodes, nodes, leases, node_map, lease_grace=120, fence_unknown=False,
                       force=False, expire=None, protect=None, check_mode=False, wait_timeout=60, settle_timeout=0,
                       clock=SYSTEM_CLOCK, workers=DEFAULT_WORKERS, image_workers=DEFAULT_IMAGE_WORKERS, staged=None):
    """node_failover's fence in one Ceph session: read who watches the failed nodes' images (`specs`), decide
    with _decisions.fence.fence_plan exactly which of them are `failed_nodes`' clients (I1: never a Ready node's,
    a shared or a daemon's address; `nodes`, `leases`: the Node and Lease objects, `node_map`: the NodeMap of
    the nodes' addresses), blocklist those (ensure_blocklist refuses daemons and `protect` again), then wait
    until they no longer watch (I6: nothing is released on a fence that has not taken effect).
    Each image is read with its locks too: a frozen or partitioned client no longer watches, but still owns its
    exclusive lock, or its node still holds the in-tree lock; `staged` ({spec: [failed nodes]}, fence.staged_images)
    names the images a failed node staged, whose node is fenced whole when no client of it is visible (fence_plan).

    A plan that keeps watchers no node lists (_decisions.fence.watchers_to_settle: perhaps a CSI controller
    that opened the image for a moment) is read and made again, up to `settle_timeout` seconds, until they
    are gone; `passed` lists those seen before that the last read no longer shows.

    Returns {images, missing, plan, result (ensure_blocklist's, None when nothing is fenced), watchers_after,
    still, passed}. An image that cannot be read (other than a missing one) fails before anything is fenced."""
    def read_and_plan():
        """One read of the images and the fence plan made from it; FenceFailure when an image cannot be read."""
        images, missing, errors = [], [], []
        for spec, raw, error in client.inspect_images(specs, metadata=True, workers=image_workers, locks=True):
            if error is None:
                images.append(image_report(spec, raw, node_map))
            elif isinstance(error, CephNotFoundError):
                missing.append(dict(spec=str(spec), error=error.msg))
            else:
                errors.append((spec, error))
        out = dict(images=images, missing=missing, plan=None, result=None, watchers_after=[], still=[], passed=[],
                   failed_images=[dict(spec=str(spec), error=error.msg) for spec, error in errors])
        if errors:
            spec, first = errors[0]
            raise FenceFailure('could not read %d of %d image(s), first %s: %s; nothing was fenced'
                               % (len(errors), len(specs), spec, first.msg), out, first)
        out['plan'] = fence_plan(images, list(failed_nodes), nodes, leases=leases, lease_grace=lease_grace,
                                 fence_unknown=fence_unknown, force=force, staged=staged)
        return out

    deadline = clock.time() + settle_timeout if settle_timeout else None
    delay, seen = 0.2, set()
    while True:
        out = read_and_plan()
        settle = watchers_to_settle(out['plan'])
        if not settle or deadline is None or clock.time() >= deadline:
            break
        seen.update(settle)
        clock.sleep(max(0.0, min(delay, deadline - clock.time())))
        delay = min(delay * 2, 2.0)
    out['passed'] = [dict(image=image, address=address) for image, address in sorted(seen - set(settle))]
    fence = out['plan']['fence']
    if not fence:
        _break_failed_nodes_locks(client, out, failed_nodes, check_mode)  # none: a lock's node was not fenced
        return out
    try:
        out['result'] = ensure_blocklist(client, 'present', addresses=fence, expire=expire, cidr_mode='addresses',
                                         workers=workers, check_mode=check_mode, protect=protect)
    except BlocklistFailure as exc:
        out['result'] = exc.result
        raise FenceFailure(exc.msg, out, exc)
    except CephError as exc:  # refused (a daemon's or a protected address) or not sent: nothing was fenced
        raise FenceFailure(exc.msg, out, exc)
    if not check_mode:
        try:
            out['watchers_after'], out['still'] = wait_unwatched(client, specs, fence_matcher(fence, []),
                                                                 wait_timeout=wait_timeout, clock=clock,
                                                                 workers=image_workers)
        except CephError as exc:
            raise FenceFailure('the blocklist entries are in place, but the fenced clients could not be '
                               'confirmed gone: %s' % exc.msg, out, exc)
    if not out['still']:
        _break_failed_nodes_locks(client, out, failed_nodes, check_mode)
    return out


def _break_failed_nodes_locks(client, out, failed_nodes, check_mode):
    """Break the failed nodes' in-tree locks once their fence took (_decisions.locks.failover_lock_breaks): a pod
    that moved cannot mount while kubelet_lock_magic_<failed node> stands. plan['locks_broken'] lists those broken
    (in check mode, those that would be), plan['locks_kept'] those left with the reason, a failure among them."""
    decided = failover_lock_breaks(out['images'], failed_nodes=failed_nodes, fence=out['plan'])
    broken, kept = [], list(decided['kept'])
    for lock in decided['break']:
        if not check_mode:
            try:
                client.break_lock(parse_image_spec(lock['image']), lock['locker'], lock['id'])
            except CephError as exc:
                if exc.rc is None or abs(int(exc.rc)) != errno.ENOENT:  # ENOENT: released meanwhile
                    kept.append(dict(lock, reason='breaking it failed: %s' % exc.msg, invariant='I7'))
                    continue
        broken.append(lock)
    out['plan']['locks_broken'], out['plan']['locks_kept'] = broken, kept

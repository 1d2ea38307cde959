# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: Ceph operations the modules share, on top of a connected client.

The client (``_ceph_client``) talks to Ceph; the pure modules (``_ceph_blocklist``,
``_ceph_rbd``) decide; this file strings them together. Unit tests drive it with a fake client.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._ceph_blocklist import (
    Request,
    check_safety,
    cluster_daemon_addresses,
    parse_blocklist_docs,
    plan_absent,
    plan_present,
    predict_after,
    sorted_entries,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph_client import (
    DEFAULT_WORKERS,
    blocklist_change_command,
    blocklist_ls_command,
    dump_command,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph_common import (
    CephCommandError,
    CephError,
    is_unknown_command,
    json_documents,
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
        from ansible_collections.volfence.csi.plugins.module_utils._ceph_common import json_document
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
        except CephCommandError as exc:
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
    """Some blocklist changes failed; `result` tells what was done."""

    def __init__(self, msg, result, first_error):
        super(BlocklistFailure, self).__init__(msg, cmd=first_error.cmd, rc=first_error.rc,
                                               stdout=first_error.stdout, stderr=first_error.stderr)
        self.result = result


def ensure_blocklist(client, state, addresses=None, cidrs=None, expire=None, cidr_mode='auto',
                     max_addresses=256, workers=DEFAULT_WORKERS, check_mode=False, current=None,
                     daemons=None):
    """Make the blocklist match the request. Validates everything, then refuses unsafe requests,
    before changing anything. Returns the result dict ceph_blocklist reports."""
    request = Request(addresses, cidrs)  # ValueError on bad input: nothing done yet
    if current is None:
        current = read_blocklist(client)
    before = current.strings()
    warnings = []
    if state == 'present':
        if daemons is None:
            daemons = read_daemon_addresses(client)
        check_safety(request, daemons, max_addresses)
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
                  before=before, after=predict_after(current.entries, actions))
    if check_mode or not actions:
        return result
    done, failed, unsupported = execute_actions(client, current.naming, actions, expire, workers)
    if unsupported:
        # Detected only now (the cluster listed range entries yet refused the command): fall back
        # to one entry per address, as ceph-csi does.
        if cidr_mode == 'range':
            raise CephError('the cluster refused `osd %s range add`; use cidr_mode=auto or addresses'
                            % current.naming)
        fallback = [a for a in plan_present(request, current.entries, False) if a not in done]
        more_done, more_failed, _unsupported = execute_actions(client, current.naming, fallback, expire, workers)
        done += more_done
        failed += more_failed
        result['cidr_mode'] = 'addresses'
        result['warnings'].append('the cluster does not support range blocklisting: blocklisted each address '
                                  'of the CIDRs instead')
    result['actions'] = [action_dict(a) for a in done]
    result['failed_actions'] = [dict(action_dict(a), error=e.msg) for a, e in failed]
    result['changed'] = bool(done)
    result['after'] = read_blocklist(client, current.naming).strings()
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

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ceph fakes of the unit tests: FakeCluster, a client whose monitor keeps a blocklist in memory and
answers dumps with captured ones, DyingMonitor, and the lab addresses of the captured fixtures. A module
of its own, so that test modules import fakes from here, never from each other."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import json
import os

from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CephCommandError,
    CephConnectionError,
    CephError,
    parse_addr,
)

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'ceph')
# The lab's holders (node: address, node-b/node-c: their clients) when the fixtures were captured.
HOLDERS = json.load(open(os.path.join(FIXTURES, 'holders.json')))
NODES = HOLDERS['nodes']
SUBNET = NODES['node-a'].rsplit('.', 1)[0]
MON_IP = SUBNET + '.1'
UNTIL = '2026-11-21T06:15:44.263371+0000'
_REQUIRED = object()


def fixture(name, default=_REQUIRED):
    """The text of a captured output; `default` for one not captured, when a default is given (an empty
    output or an rc of 0 is not written)."""
    path = os.path.join(FIXTURES, name)
    if default is not _REQUIRED and not os.path.exists(path):
        return default
    with open(path) as handle:
        return handle.read()


def fixture_json(name):
    return json.loads(fixture(name))


class FakeCluster(object):
    """A client whose monitor keeps a blocklist in memory and answers dumps with captured ones.

    naming: 'blocklist' (Pacific+) or 'blacklist' (older: 'osd blocklist' is unknown);
    ranges: whether `ls` prints the range array and `range add` exists.
    """

    name = 'fake'
    # What connect() reads after connecting (issue 12), as the lab's Pacific answered it.
    known_versions = dict(
        client=dict(backend='fake', version='16.2.15', release='pacific', error=None),
        cluster=dict(version='16.2.15', release='pacific', versions=['16.2.15'], mixed=False, error=None))

    def __init__(self, naming='blocklist', ranges=True, entries=(), fail=(), range_refused=False):
        self.naming = naming
        self.ranges = ranges and naming == 'blocklist'
        self.range_refused = range_refused
        self.entries = dict((e, UNTIL) for e in entries)
        self.fail = set(fail)
        self.calls = []
        self.workers = []

    def close(self):
        self.closed = True

    def changes(self):
        return [c for c in self.calls if c.json['prefix'] in ('osd blocklist', 'osd blacklist')]

    def mon(self, command):
        self.calls.append(command)
        j = command.json
        prefix = j['prefix']
        if prefix.startswith('osd blocklist') and self.naming == 'blacklist':
            raise CephCommandError('unknown', cmd=j, rc=-22, stdout='', stderr='command not known')
        if prefix in ('mon dump', 'mgr dump', 'osd dump', 'fs dump'):
            return fixture(prefix.replace(' ', '_') + '.json'), ''
        if prefix.endswith(' ls'):
            addrs = [dict(addr=e, until=u) for e, u in self.entries.items() if not e.startswith('cidr:')]
            ranges = [dict(range=e[5:], until=u) for e, u in self.entries.items() if e.startswith('cidr:')]
            out = json.dumps(addrs) + (json.dumps(ranges) if self.ranges else '')
            return out, 'listed %d entries' % len(self.entries)
        op, target = j[self.naming + 'op'], j['addr']
        if target in self.fail:
            raise CephCommandError('refused', cmd=j, rc=-1, stdout='', stderr='EPERM')
        if 'range' in j:
            if not self.ranges or self.range_refused:
                raise CephCommandError('x', cmd=j, rc=-22, stderr='command not known')
            network = ipaddress.ip_network(target, strict=False)
            base = target.split('/')[0]
            entry = 'cidr:%s:0/%d' % ('[%s]' % base if network.version == 6 else base, network.prefixlen)
        else:
            entry = str(parse_addr(target))
        if op == 'add':
            self.entries[entry] = UNTIL
        else:
            self.entries.pop(entry, None)
        return '', 'done'

    def mon_many(self, commands, workers=64):
        self.workers.append(workers)
        out = []
        for command in commands:
            try:
                out.append((command, self.mon(command), None))
            except CephError as exc:
                out.append((command, None, exc))
        return out


class DyingMonitor(FakeCluster):
    """A monitor that answers `alive` blocklist changes, then stops answering: every later
    command (changes, the read-back) times out, as a monitor that dies mid-run does."""

    def __init__(self, alive, **kw):
        super(DyingMonitor, self).__init__(**kw)
        self.alive = alive

    def mon(self, command):
        if command.json['prefix'] in ('osd blocklist', 'osd blacklist'):
            if self.alive <= 0:
                raise CephConnectionError('no answer within 3s (timeout)', cmd=command.json, rc=-110)
            self.alive -= 1
        elif self.alive <= 0:
            raise CephConnectionError('no answer within 3s (timeout)', cmd=command.json, rc=-110)
        return super(DyingMonitor, self).mon(command)

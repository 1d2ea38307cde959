# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: shared Ceph options, errors, JSON and address parsing.

Pure Python (standard library and the decision layer's address helpers, _decisions/cluster_view.py,
3.6+ compatible), no Ansible imports: everything here is unit-tested on outputs captured from a real cluster
(tests/unit/plugins/module_utils/fixtures/ceph/).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import errno as errno_mod
import ipaddress
import json
import math
import re

from ansible_collections.volfence.csi.plugins.module_utils._errors import DetailedError
from ansible_collections.volfence.csi.plugins.module_utils._addresses import (
    cidr_error,
    parse_network,
    quoted,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    normalize_ip,
    normalize_network,
)

# --------------------------------------------------------------------------- shared options

CEPH_ARGUMENT_SPEC = dict(
    # cluster, conf, keyring, user and mon_host fall back to CEPH_ARGS and CEPH_CONF (CephSettings)
    cluster=dict(type='str'),
    conf=dict(type='path'),
    keyring=dict(type='path', no_log=False),
    key=dict(type='str', no_log=True),
    user=dict(type='str', aliases=['id']),
    mon_host=dict(type='str'),
    timeout=dict(type='int', default=30),
    backend=dict(type='str', default='auto', choices=['auto', 'rados', 'cli']),
    command_prefix=dict(type='list', elements='str'),
)

CEPH_MUTUALLY_EXCLUSIVE = [('keyring', 'key')]

# The options of CEPH_ARGS that name the cluster and the client, as the `ceph` CLI reads them
# (src/ceph.in: CEPH_ARGS split on whitespace and appended to argv, then parse_cmdargs: -c/--conf,
# --cluster, -i/--id/--user, -n/--name; librados' parse_argv: -k/--keyring, -m/--mon_host).
_CEPH_ARGS_OPTIONS = {
    '-c': 'conf', '--conf': 'conf', '-k': 'keyring', '--keyring': 'keyring', '--cluster': 'cluster',
    '-i': 'user', '--id': 'user', '--user': 'user', '-n': 'name', '--name': 'name',
    '-m': 'mon_host', '--mon_host': 'mon_host', '--mon-host': 'mon_host',
}


def ceph_environment(environ):
    """What the environment says of the cluster, as Ceph's own tools read it: ({option: (value,
    source)}, the rest of CEPH_ARGS as a list). Options: conf, keyring, cluster, user, mon_host.
    CEPH_ARGS' -c wins over CEPH_CONF (the `ceph` CLI reads CEPH_CONF only when no -c is given);
    the last of a repeated option wins, as in argparse. Raises ValueError for an option without
    its value or a --name that is not a client's."""
    found, rest = {}, []
    words = (environ.get('CEPH_ARGS') or '').split()
    index = 0
    while index < len(words):
        word = words[index]
        flag, equals, value = word.partition('=')
        name = _CEPH_ARGS_OPTIONS.get(flag if equals and flag.startswith('--') else word)
        if name is None:
            rest.append(word)
            index += 1
            continue
        if not equals:
            index += 1
            if index >= len(words):
                raise ValueError('CEPH_ARGS: %s needs a value: nothing was done' % word)
            value = words[index]
        index += 1
        if name == 'name':
            if not value.startswith('client.'):
                raise ValueError('CEPH_ARGS: --name %s is not a client (client.<id>): nothing was done' % value)
            name, value = 'user', value[len('client.'):]
        found[name] = (value, 'CEPH_ARGS')
    if 'conf' not in found and environ.get('CEPH_CONF'):
        found['conf'] = (environ['CEPH_CONF'], 'CEPH_CONF')
    return found, rest


def ceph_argument_spec(**extra):
    """A fresh copy of the shared Ceph options, updated with a module's own options."""
    spec = dict((name, dict(option)) for name, option in CEPH_ARGUMENT_SPEC.items())
    spec.update(extra)
    return spec


# --------------------------------------------------------------------------- names and numbers (I9)

# Ceph stores a blocklist expiry as 32-bit seconds since the epoch: `ceph osd blocklist add <ip> 1e12`
# is accepted and silently becomes 2106-02-07 (seen on the lab's Pacific). Ten years is already
# longer than any fence should outlive the node's reboot.
MAX_EXPIRE_SECONDS = 10 * 365 * 86400


def check_name(value, what):
    """`value` unchanged, or ValueError when it would be read as a command-line option (I9):
    user-given pool, namespace, image, lock id, locker, tag and connection names must not start
    with '-' (`--keyring=/x` as an image name would otherwise reach the rbd CLI as an option)."""
    if isinstance(value, str) and value.startswith('-'):
        raise ValueError('%s %r starts with "-": names given to the Ceph modules must not start with "-" '
                         '(the ceph/rbd tools would read it as an option): nothing was changed' % (what, value))
    return value


def check_expire(value, what='expire'):
    """A blocklist expiry in seconds as a float (None stays None), or ValueError (I9): it
    must be a number (or a string holding one), finite, above 0 and at most MAX_EXPIRE_SECONDS (ten
    years). Text, inf, nan, 0, negative and absurd values are refused with a message naming the
    value, instead of a traceback or a silent 2106 expiry."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError('%s must be a number of seconds, got %r: nothing was changed' % (what, value))
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError('%s must be a number of seconds, got %r: nothing was changed' % (what, value))
    if math.isnan(number) or math.isinf(number):
        raise ValueError('%s must be a finite number of seconds, got %r: for a long fence give e.g. 604800 '
                         '(a week); nothing was changed' % (what, value))
    if number <= 0:
        raise ValueError('%s must be positive (seconds until the entries expire), got %r: nothing was changed'
                         % (what, value))
    if number > MAX_EXPIRE_SECONDS:
        raise ValueError('%s=%r is more than %d seconds (ten years): Ceph would cap it at 2106; give at most '
                         '%d: nothing was changed' % (what, value, MAX_EXPIRE_SECONDS, MAX_EXPIRE_SECONDS))
    return number


# --------------------------------------------------------------------------- errors

class CephError(DetailedError):
    """A Ceph operation failed. Carries the command and its full output for the user."""

    FAIL_DETAILS = tuple((name, name) for name in ('cmd', 'rc', 'stdout', 'stderr', 'versions'))

    def __init__(self, msg, *, cmd=None, rc=None, stdout=None, stderr=None, versions=None):
        super(CephError, self).__init__(msg)
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.versions = versions  # the client's and cluster's Ceph releases, when known


class CephCommandError(CephError):
    """A mon command or CLI call returned an error code."""


class CephConnectionError(CephError):
    """Could not connect to the cluster (monitors unreachable, auth failed, timeout)."""


class CephNotFoundError(CephError):
    """A pool, namespace or image does not exist."""


class CephParseError(CephError):
    """Ceph printed something this collection cannot parse."""


class CephRefused(CephError):
    """A safety rule refused the request; nothing was changed."""


def errno_name(rc):
    """'EINVAL' for 22 or -22; '' when unknown."""
    if rc is None:
        return ''
    return errno_mod.errorcode.get(abs(int(rc)), '')


_LOG_LINE = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+[+-]\d{4} [0-9a-f]+ +-?\d+ ')


def stderr_summary(stderr, limit=3):
    """The meaningful lines of a Ceph tool's stderr, without librados' timestamped log noise."""
    if not stderr:
        return ''
    lines = [line.strip() for line in stderr.splitlines()]
    kept = [line for line in lines if line and not _LOG_LINE.match(line)]
    if not kept:
        kept = [line for line in lines if line]
    return ' | '.join(kept[-limit:]) if len(kept) <= limit else ' | '.join([kept[0]] + kept[-(limit - 1):])


# What an unknown command looks like: the monitors answer 'command not known' (mon_command), the
# CLI 'no valid command found; 10 closest matches: ...'. A cluster without range blocklisting
# rejects the `range` word of `osd blocklist range add` with 'range not in add|rm' (the same
# marker ceph-csi relies on). A bad argument ('Invalid command: x not valid IPv6 address') is
# EINVAL too, but is not an unknown command.
_UNKNOWN_COMMAND_MARKERS = ('command not known', 'no valid command found', 'unrecognized command',
                            'not in add|rm')


def is_unknown_command(err):
    """Whether a CephCommandError says the cluster does not know the command (EINVAL + marker)."""
    if not isinstance(err, CephCommandError) or err.rc is None or abs(int(err.rc)) != errno_mod.EINVAL:
        return False
    text = ('%s %s' % (err.stderr or '', err.stdout or '')).lower()
    return any(marker in text for marker in _UNKNOWN_COMMAND_MARKERS)


# --------------------------------------------------------------------------- JSON

def json_documents(text, what='Ceph output'):
    """Every JSON document in `text`, in order.

    `ceph osd blocklist ls --format json` prints two arrays back to back (addresses, then
    ranges): json.loads() fails on that with "Extra data". Integers stay integers (watcher
    cookies are 64-bit): nothing here goes through float.
    """
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    decoder = json.JSONDecoder()
    docs = []
    index = 0
    length = len(text)
    while True:
        while index < length and text[index] in ' \t\r\n':
            index += 1
        if index >= length:
            return docs
        try:
            doc, index = decoder.raw_decode(text, index)
        except ValueError as exc:
            raise CephParseError('could not parse %s as JSON at character %d: %s' % (what, index, exc),
                                 stdout=text)
        docs.append(doc)


def json_document(text, what='Ceph output', empty=None):
    """The single JSON document in `text` (`empty` when there is none)."""
    docs = json_documents(text, what)
    if not docs:
        return empty
    if len(docs) > 1:
        raise CephParseError('expected one JSON document in %s, found %d' % (what, len(docs)), stdout=text)
    return docs[0]


# --------------------------------------------------------------------------- time

def parse_ceph_time(text):
    """'2026-11-21T06:15:44.263371+0000' (as Ceph prints it) to an aware UTC datetime; None if empty."""
    if not text:
        return None
    text = text.strip()
    match = re.match(r'^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$', text)
    if not match:
        raise CephParseError('unexpected time format from Ceph: %r' % text)
    date, clock, fraction, zone = match.groups()
    micro = int((fraction or '.0')[1:].ljust(6, '0')[:6])
    value = datetime.datetime.strptime(date + ' ' + clock, '%Y-%m-%d %H:%M:%S').replace(microsecond=micro)
    offset = datetime.timedelta(0)
    if zone and zone != 'Z':
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        offset = sign * datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return (value - offset).replace(tzinfo=_UTC)


class _Utc(datetime.tzinfo):
    def utcoffset(self, dt):
        return datetime.timedelta(0)

    def dst(self, dt):
        return datetime.timedelta(0)

    def tzname(self, dt):
        return 'UTC'


_UTC = _Utc()


def utc_now():
    return datetime.datetime.now(_UTC)


def iso_utc(value):
    """ISO 8601 in UTC with a Z suffix, e.g. 2026-11-21T06:15:44.263371Z."""
    if value is None:
        return None
    return value.astimezone(_UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


# --------------------------------------------------------------------------- addresses

MAX_NONCE = 2 ** 32 - 1

_V4_FULL = re.compile(r'^(?P<ip>\d{1,3}(?:\.\d{1,3}){3}):(?P<port>\d+)(?:/(?P<nonce>\d+))?$')
_V6_FULL = re.compile(r'^\[(?P<ip>[0-9A-Fa-f:.]+)\](?::(?P<port>\d+))?(?:/(?P<nonce>\d+))?$')
_TYPE_PREFIX = re.compile(r'^(?:v1|v2|any|legacy):', re.IGNORECASE)


class CephAddr(object):
    """A Ceph entity address: ip, port, nonce. `str()` is Ceph's own form, e.g.
    10.1.2.3:0/0 or [fd00::5]:0/123."""

    __slots__ = ('ip', 'port', 'nonce')

    def __init__(self, ip, port=0, nonce=0):
        self.ip = ipaddress.ip_address(u'%s' % ip) if not isinstance(
            ip, (ipaddress.IPv4Address, ipaddress.IPv6Address)) else ip
        self.port = int(port)
        self.nonce = int(nonce)

    @property
    def ip_wide(self):
        """True for ip:0/0, the form that blocks every client from that IP."""
        return self.port == 0 and self.nonce == 0

    @property
    def host(self):
        return ('[%s]' % self.ip) if self.ip.version == 6 else str(self.ip)

    def __str__(self):
        return '%s:%d/%d' % (self.host, self.port, self.nonce)

    def __repr__(self):
        return 'CephAddr(%r)' % str(self)

    def _key(self):
        return (self.ip.version, int(self.ip), self.port, self.nonce)

    def __eq__(self, other):
        return isinstance(other, CephAddr) and self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())


def parse_addr(text, what='address'):
    """Parse what a user or Ceph writes for a client: an IPv4 or IPv6 address, or Ceph's
    ip:port/nonce ([ipv6]:port/nonce), optionally prefixed v1:/v2:/any:. Raises ValueError in the
    user's words (_addresses): "not an IP address", a CIDR where one client is expected
    "ambiguous", a bad CIDR "not a CIDR (prefix length 33 is out of range for IPv4)"."""
    if not isinstance(text, str):
        raise ValueError('%s %s is not an IP address (it is a %s, not a string)'
                         % (what, quoted(text), type(text).__name__))
    raw = text.strip()
    value = _TYPE_PREFIX.sub('', raw)
    if not value:
        raise ValueError('%s is empty' % what)
    match = _V4_FULL.match(value) or _V6_FULL.match(value)
    if match:
        ip_text, port, nonce = match.group('ip'), match.group('port') or '0', match.group('nonce') or '0'
    elif '/' in value:
        problem = cidr_error(value)
        if problem is None:
            raise ValueError("%s %s is ambiguous (a network where one address is expected): for a subnet use the "
                             "cidrs option, for one client write ip:port/nonce (e.g. 10.0.0.5:0/123456)"
                             % (what, quoted(raw)))
        if problem.startswith('not a CIDR (') and 'is not an IP address' in problem:
            raise ValueError('%s %s is not an IP address' % (what, quoted(raw)))
        raise ValueError('%s %s is not an IP address, and %s' % (what, quoted(raw), problem))
    else:
        ip_text, port, nonce = value, '0', '0'
    try:
        ip = ipaddress.ip_address(u'%s' % ip_text)
    except ValueError:
        raise ValueError('%s %s is not an IP address (nor ip:port/nonce)' % (what, quoted(raw)))
    if int(port) > 65535:
        raise ValueError('%s %s: port %s is out of range (0-65535)' % (what, quoted(raw), port))
    if int(nonce) > MAX_NONCE:
        raise ValueError('%s %s: nonce %s is out of range (0-%d)' % (what, quoted(raw), nonce, MAX_NONCE))
    return CephAddr(ip, int(port), int(nonce))


def parse_cidr(text, what='CIDR'):
    """A network such as 10.1.2.0/24 or fd00::/120. Host bits must be zero: 10.1.2.5/24 is refused
    because it is ambiguous at 3 a.m. (the subnet, or the node 10.1.2.5?). Raises ValueError with
    the messages of _addresses.parse_network."""
    return parse_network(text, what)


def parse_addr_or_network(text, what='address'):
    """The network an option value stands for: an IP or a Ceph ip:port/nonce address as its single-IP
    network, a CIDR (host bits tolerated: options that protect or name addresses) as itself. Not
    normalised. ValueError in the user's words (see parse_addr and _addresses.parse_network)."""
    try:
        return ipaddress.ip_network(parse_addr(text, what).ip)
    except ValueError as exc:
        if not isinstance(text, str) or '/' not in text:
            raise
        first = exc
    try:
        return parse_network(text, what, strict=False)
    except ValueError:
        raise first


class AddressMatcher(object):
    """Matches client addresses against user patterns: an IP (any client from it), a CIDR (any
    client inside), or an exact ip:port/nonce. Bad patterns raise ValueError at construction."""

    def __init__(self, patterns, what='address'):
        self.patterns = list(patterns or [])
        self.compiled = []
        # Values are compiled normalised (IPv4-mapped IPv6 as IPv4, see _decisions/cluster_view.normalize_ip), and
        # match() normalises the address it is given: ::ffff:10.0.0.5 is 10.0.0.5 (I1).
        for pattern in self.patterns:
            text = str(pattern).strip()
            if _looks_like_cidr(text):
                network = normalize_network(ipaddress.ip_network(u'%s' % text, strict=False))
                self.compiled.append((pattern, 'network', network))
                continue
            addr = parse_addr(text, what)
            if addr.ip_wide and not _has_explicit_nonce(text):
                self.compiled.append((pattern, 'ip', normalize_ip(addr.ip)))
            else:
                self.compiled.append((pattern, 'exact', normalized_addr(addr)))

    def __bool__(self):
        return bool(self.patterns)

    __nonzero__ = __bool__

    def match(self, addr):
        """The pattern (as the user wrote it) that matches `addr` (a CephAddr), else None."""
        if addr is None:
            return None
        addr = normalized_addr(addr)
        for pattern, kind, value in self.compiled:
            if kind == 'network':
                if addr.ip.version == value.version and addr.ip in value:
                    return pattern
            elif kind == 'ip':
                if addr.ip == value:
                    return pattern
            elif addr == value:
                return pattern
        return None


def normalized_addr(addr):
    """`addr` (a CephAddr) with an IPv4-mapped IPv6 IP turned into its IPv4 address."""
    ip = normalize_ip(addr.ip)
    return addr if ip == addr.ip else CephAddr(ip, addr.port, addr.nonce)


def _has_explicit_nonce(text):
    return bool(_V4_FULL.match(_TYPE_PREFIX.sub('', text.strip())) or
                re.match(r'^\[.*\]:\d+', _TYPE_PREFIX.sub('', text.strip())))


def _looks_like_cidr(text):
    """10.0.0.0/24 or fd00::/64 (not 10.0.0.1:0/123, not [fd00::1]:0/5)."""
    if '/' not in text or text.startswith('[') or _V4_FULL.match(text):
        return False
    try:
        ipaddress.ip_network(u'%s' % text, strict=False)
        return True
    except ValueError:
        return False

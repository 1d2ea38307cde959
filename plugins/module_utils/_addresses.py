# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the one place that reads IP addresses and CIDRs given by users.

Pure Python (standard library only, 3.6+ compatible), unit-tested. Every module option that takes
addresses or CIDRs goes through here, so a bad value gets the same message everywhere, in the
user's words:

* ``10.0.0.1; rm -rf /``: ``address '10.0.0.1; rm -rf /' is not an IP address``;
* ``1.2.3.4/33``: ``CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4)``;
* ``10.0.0.5/24``: ``CIDR '10.0.0.5/24' is ambiguous (host bits set): ...``.

Values are quoted as written (``%r``), never interpreted further.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import re

_PREFIX_DIGITS = re.compile(r'^\d+$')


def quoted(value):
    """The value as the user wrote it, quoted: '10.0.0.1; rm -rf /'."""
    return repr(value if isinstance(value, str) else value)


def _text(value, what):
    if not isinstance(value, str):
        raise ValueError('%s %s is not an IP address or CIDR (it is a %s, not a string)'
                         % (what, quoted(value), type(value).__name__))
    text = value.strip()
    if not text:
        raise ValueError('%s is empty' % what)
    return text


def ip_error(text):
    """Why `text` (stripped) is not an IP address, or None when it is one."""
    try:
        ipaddress.ip_address(u'%s' % text)
    except ValueError:
        return 'not an IP address'
    return None


def _prefix_length(addr, prefix):
    """(length, None) for a prefix length (or an IPv4 netmask such as 255.255.255.0) valid for `addr`,
    else (None, why)."""
    prefix = prefix.strip()
    if not _PREFIX_DIGITS.match(prefix):
        if addr.version == 4 and '.' in prefix:
            try:
                return ipaddress.IPv4Network(u'0.0.0.0/%s' % prefix).prefixlen, None
            except ValueError:
                return None, 'netmask %s is not a valid IPv4 netmask' % quoted(prefix)
        return None, 'prefix length %s is not a number' % quoted(prefix)
    if int(prefix) > addr.max_prefixlen:
        return None, 'prefix length %d is out of range for IPv%d: 0-%d' % (
            int(prefix), addr.version, addr.max_prefixlen)
    return int(prefix), None


def _split(text):
    """(address, prefix length) of a CIDR text with a '/', or raises ValueError(why) in the user's words."""
    host, _sep, prefix = text.partition('/')
    try:
        addr = ipaddress.ip_address(u'%s' % host.strip())
    except ValueError:
        raise ValueError('not a CIDR (%s is not an IP address)' % quoted(host.strip()))
    length, why = _prefix_length(addr, prefix)
    if why is not None:
        raise ValueError('not a CIDR (%s)' % why)
    return addr, length


def cidr_error(text):
    """Why `text` (with a '/') is not a CIDR, in the user's words, or None when it is a network
    (host bits set or not: that is checked by parse_network)."""
    try:
        _split(text)
    except ValueError as exc:
        return str(exc)
    return None


def parse_network(value, what='CIDR', bare=None, strict=True):
    """An IPv4Network or IPv6Network from a CIDR such as 10.1.2.0/24 or fd00::/120.

    `bare`: what a value without a prefix length is: None refuses it (with a hint), 'host' takes it
    as a single-address network (/32, /128). `strict`: host bits set (10.1.2.5/24) are refused as
    ambiguous (the subnet, or the node 10.1.2.5?); with strict=False they are dropped (for lists of
    addresses to protect, where a wider network is more protection, never less).
    Raises ValueError with a message naming the option (`what`) and the value as written."""
    text = _text(value, what)
    if '/' not in text:
        problem = ip_error(text)
        if problem is not None:
            raise ValueError('%s %s is %s (nor a CIDR such as 10.0.3.0/24)' % (what, quoted(value), problem))
        addr = ipaddress.ip_address(u'%s' % text)
        if bare == 'host':
            return ipaddress.ip_network(u'%s/%d' % (addr, addr.max_prefixlen))
        raise ValueError('%s %s has no prefix length (write %s/%d for that address alone)'
                         % (what, quoted(value), addr, addr.max_prefixlen))
    try:
        addr, length = _split(text)
    except ValueError as exc:
        raise ValueError('%s %s is %s' % (what, quoted(value), exc))
    loose = ipaddress.ip_network(u'%s/%d' % (addr, length), strict=False)
    if strict and loose.network_address != addr:
        raise ValueError('%s %s is ambiguous (host bits set): write %s for the whole network, or %s/%d for the '
                         'single address' % (what, quoted(value), loose, addr, loose.max_prefixlen))
    return loose


def parse_each(values, parse):
    """(parsed, errors): parse(value) of each of `values` in order, each result once, and the message of
    each ValueError it raised, so that a refusal names every bad entry, not only the first."""
    parsed, errors = [], []
    for value in values or []:
        try:
            result = parse(value)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if result not in parsed:
            parsed.append(result)
    return parsed, errors

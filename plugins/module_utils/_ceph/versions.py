# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: Ceph releases of the client and the cluster, and cephx key types.

Pure functions (standard library only) except bindings_client_version(), which asks the loaded
libceph-common for its version. Unit-tested on real version strings and real keys
(tests/unit/plugins/module_utils/test__ceph_versions.py).

Why this exists: Ceph 19.2.6 (Squid) and 20.2.4 (Tentacle) create cephx keys of a new
type, ``aes256k`` (CVE-2025-30156). An older client (for example Debian's Pacific 16.2.15
``python3-rados``) cannot even parse such a key: librados fails to connect with "RADOS I/O error
(error connecting to the cluster)", the CLI with "auth: failed to load <keyring>: (5)
Input/output error". The key itself tells what happened, so the modules read it and say so.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii
import datetime
import os
import re
import struct

# Ceph's CryptoKey encoding (src/auth/Crypto.cc, CryptoKey::encode): a little-endian u16 type,
# the creation time (utime_t: u32 seconds, u32 nanoseconds), a u16 length, then the secret. The
# types are CEPH_CRYPTO_* of src/include/ceph_fs.h: NONE 0, AES 1, AES256KRB5 2 ("aes256k", the
# name `ceph auth ... --key-type` and `ceph-authtool -t` use). Checked on real keys: Pacific's
# ceph-authtool writes "AQ..." (01 00), Tentacle 20.2.4's writes "Ag..." (02 00) with a 32-byte secret.
KEY_TYPE_NAMES = {0: 'none', 1: 'aes', 2: 'aes256k'}
KEY_TYPE_AES256K = 2
_KEY_HEADER = struct.Struct('<HIIH')

# The first releases that create (and so read) aes256k keys.
AES256K_RELEASES = ((19, 2, 6), (20, 2, 4))
AES256K_WORDS = 'Ceph >= 19.2.6 (Squid) or >= 20.2.4 (Tentacle)'

ROOK_TOOLBOX_PREFIX = '[kubectl, -n, rook-ceph, exec, deploy/rook-ceph-tools, --]'
CEPHADM_PREFIX = '[cephadm, shell, --]'


# --------------------------------------------------------------------------- keys

def decode_key(text):
    """The parts of a cephx key as a keyring holds it (base64 of Ceph's CryptoKey encoding):
    {'type': 2, 'type_name': 'aes256k', 'length': 32, 'created': '2026-11-23T04:17:38Z'}.
    Raises ValueError naming what is wrong (not base64, too short, length mismatch)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError('the key is empty')
    try:
        raw = base64.b64decode(text.strip().encode('ascii'), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ValueError('the key is not base64')
    if len(raw) < _KEY_HEADER.size:
        raise ValueError('the key is too short to be a cephx key (%d bytes)' % len(raw))
    key_type, seconds, nanoseconds, length = _KEY_HEADER.unpack(raw[:_KEY_HEADER.size])
    if len(raw) - _KEY_HEADER.size != length:
        raise ValueError('the key says its secret has %d bytes, it has %d' % (length, len(raw) - _KEY_HEADER.size))
    created = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds, microseconds=nanoseconds // 1000)
    return dict(type=key_type, type_name=KEY_TYPE_NAMES.get(key_type, 'type %d' % key_type), length=length,
                created=created.strftime('%Y-%m-%dT%H:%M:%SZ'))


_SECTION = re.compile(r'^\s*\[([^\]]+)\]\s*$')
_KEY_LINE = re.compile(r'^\s*key\s*=\s*(\S+)\s*$')


def keyring_keys(text):
    """{entity: base64 key} of a keyring file's text ([client.admin] / key = ...)."""
    keys, section = {}, None
    for line in (text or '').splitlines():
        if line.lstrip().startswith(('#', ';')):
            continue
        match = _SECTION.match(line)
        if match:
            section = match.group(1).strip()
            continue
        match = _KEY_LINE.match(line)
        if match and section:
            keys[section] = match.group(1)
    return keys


def keyring_candidates(cluster, entity, keyring=None, conf=None):
    """The keyring files the client reads for `entity`: the given one, else the keyring set in the
    configuration file, else Ceph's defaults (/etc/ceph/$cluster.$name.keyring, ...)."""
    if keyring:
        return [keyring]
    paths = []
    configured = _conf_keyring(conf, entity) if conf else None
    if configured:
        paths += [p.strip() for p in configured.split(',') if p.strip()]
    paths += ['/etc/ceph/$cluster.$name.keyring', '/etc/ceph/$cluster.keyring', '/etc/ceph/keyring']
    return [p.replace('$cluster', cluster).replace('$name', entity) for p in paths]


def _conf_keyring(conf, entity):
    """The `keyring` option of ceph.conf for `entity` ([client.x] over [client] over [global])."""
    try:
        with open(conf) as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    found, section = {}, None
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            section = match.group(1).strip()
            continue
        match = re.match(r'^\s*keyring\s*=\s*(.+?)\s*$', line)
        if match and section:
            found[section] = match.group(1)
    for section in (entity, 'client', 'global'):
        if section in found:
            return found[section]
    return None


def find_key(entity, keyring_paths, key=None):
    """(where, decoded key) of `entity`'s key: from `key` (the module's key option) or the first
    readable keyring that has it; (where, None) with an error text when it cannot be read."""
    if key:
        try:
            return 'the key option', decode_key(key)
        except ValueError as exc:
            return 'the key option', dict(error=str(exc))
    for path in keyring_paths:
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as handle:
                keys = keyring_keys(handle.read())
        except (IOError, OSError, UnicodeDecodeError):
            continue
        if entity in keys:
            try:
                return path, decode_key(keys[entity])
            except ValueError as exc:
                return path, dict(error=str(exc))
    return None, None


# --------------------------------------------------------------------------- versions

_VERSION_TEXT = re.compile(r'ceph version (\S+)(?: \(([0-9a-f]+)\))?(?: (\w+))?(?: \((\w+)\))?')
_PLAIN_VERSION = re.compile(r'^\d+\.\d+\.\d+')
_RELEASES = {14: 'nautilus', 15: 'octopus', 16: 'pacific', 17: 'quincy', 18: 'reef', 19: 'squid',
             20: 'tentacle', 21: 'umbrella'}


def version_tuple(version):
    """(16, 2, 15) from '16.2.15' (or '16.2.15-1-g...'); None when it is not a version."""
    match = _PLAIN_VERSION.match(version or '')
    if not match:
        return None
    return tuple(int(part) for part in match.group(0).split('.'))


def release_name(version):
    parts = version_tuple(version)
    return _RELEASES.get(parts[0]) if parts else None


def parse_version_text(text):
    """{'version': '16.2.15', 'release': 'pacific'} from 'ceph version 16.2.15 (618f...) pacific
    (stable)' (what `ceph --version` and the `version`/`versions` mon commands say) or from a bare
    '16.2.15'; None when `text` says no version."""
    text = (text or '').strip()
    match = _VERSION_TEXT.search(text)
    if match and version_tuple(match.group(1)):
        return dict(version=match.group(1), release=match.group(3) or release_name(match.group(1)))
    if version_tuple(text):
        return dict(version=text.split()[0], release=release_name(text))
    return None


def client_info(backend, text=None, error=None):
    """What `versions.client` says: the backend and the Ceph release of its library or CLI."""
    parsed = parse_version_text(text) if text else None
    if text and parsed is None and error is None:
        error = 'could not read a Ceph version in %r' % text[:200]
    return dict(backend=backend, version=parsed['version'] if parsed else None,
                release=parsed['release'] if parsed else None, error=error)


def cluster_info(versions_doc=None, version_doc=None, error=None):
    """What `versions.cluster` says, from the `versions` mon command ({'mon': {'ceph version ...':
    1}, ..., 'overall': {...}}) or else the `version` one ({'version': 'ceph version ...'}, the
    answering monitor's): the oldest version running (the one that limits what the cluster
    does), its release, every distinct version, and whether they differ."""
    counts = {}
    if isinstance(versions_doc, dict):
        overall = versions_doc.get('overall')
        groups = [overall] if isinstance(overall, dict) and overall else [
            v for k, v in versions_doc.items() if k != 'overall' and isinstance(v, dict)]
        for group in groups:
            for text, count in group.items():
                parsed = parse_version_text(text)
                if parsed:
                    counts[parsed['version']] = counts.get(parsed['version'], 0) + (count or 0)
    elif isinstance(version_doc, dict):
        parsed = parse_version_text(version_doc.get('version'))
        if parsed:
            counts[parsed['version']] = 1
    if not counts:
        return dict(version=None, release=None, versions=[], mixed=False,
                    error=error or 'the cluster named no Ceph version')
    ordered = sorted(counts, key=lambda v: (version_tuple(v), v))
    return dict(version=ordered[0], release=release_name(ordered[0]), versions=ordered, mixed=len(ordered) > 1,
                error=error)


def reads_key_type(client_version, key_type):
    """Whether a client of `client_version` can read a key of `key_type`: True, False, or None
    when its version is unknown."""
    if key_type in (0, 1):
        return True
    parts = version_tuple(client_version)
    if parts is None:
        return None
    if key_type == KEY_TYPE_AES256K:
        return any(parts >= first and parts[0] == first[0] for first in AES256K_RELEASES) or parts[0] > 20
    return False


def describe_client(client):
    what = {'rados': 'the rados/rbd Python bindings of this Python', 'cli': 'the ceph/rbd command line tools'}.get(
        client.get('backend'), client.get('backend'))
    if client.get('version'):
        return 'Ceph %s%s (%s)' % (client['version'], (' ' + client['release']) if client.get('release') else '', what)
    return 'a Ceph client of unknown version (%s)' % what


def unreadable_key_message(entity, where, key, client, command_prefix=False):
    """The message for a connect failure whose cause is a key this client cannot read, or None
    when the key is one the client reads (or could not be read at all)."""
    if not key or 'type' not in key:
        return None
    reads = reads_key_type(client.get('version'), key['type'])
    if reads is True or (reads is None and key['type'] != KEY_TYPE_AES256K):
        return None
    if key['type'] == KEY_TYPE_AES256K:
        cluster = ('an %s key (cephx key type %d, CVE-2025-30156), which only %s make: the cluster runs one of those'
                   % (key['type_name'], key['type'], AES256K_WORDS))
        newer = AES256K_WORDS
    else:
        cluster = 'a key of cephx type %d, which this client does not know: a newer Ceph made it' % key['type']
        newer = 'the cluster\'s own release'
    return ('cannot connect as %s: the key in %s is %s; this client, %s, cannot read it. Ways out: run the Ceph '
            'modules with a newer client (the python3-rados/python3-rbd bindings or ceph-common of %s, for example '
            'in the execution environment); or use backend=cli with a command_prefix that runs the cluster\'s own '
            'tools: cephadm shell on a cephadm host (command_prefix: %s) or the Rook toolbox (command_prefix: %s)%s. '
            'Nothing was changed.'
            % (entity, where, cluster, describe_client(client), newer, CEPHADM_PREFIX, ROOK_TOOLBOX_PREFIX,
               ' (the prefix given runs a client too old as well)' if command_prefix else ''))


# --------------------------------------------------------------------------- the bindings' own release

_COMMON_LIB = 'libceph-common.so'
# C++ names (no extern "C") of src/common/version.h: const char *ceph_version_to_str() and
# ceph_release_to_str(); present in libceph-common 16.2, 18.2 and 20.2 (checked with nm -D).
_VERSION_SYMBOL = '_Z19ceph_version_to_strv'
_RELEASE_SYMBOL = '_Z19ceph_release_to_strv'


def bindings_client_version(maps_path='/proc/self/maps'):
    """(version text, error) of the Ceph library the rados bindings of this Python run on.

    rados.Rados.version() is no use: it is librados' API version, 3.0.0 in every release from
    Nautilus to Tentacle. Package metadata would name what is installed, not what is loaded (pip
    wheels, containers, a LD_LIBRARY_PATH build). So this asks the library actually loaded:
    importing rados maps librados.so.2 and with it libceph-common.so.2, whose
    ceph_version_to_str() returns the version it was built as ('16.2.15'). The library is found
    in /proc/self/maps (it lives in a private directory, /usr/lib/<arch>/ceph, that the dynamic
    loader would not search by name) and opened again by its path, which only takes another
    reference to the already loaded copy."""
    try:
        import ctypes
    except ImportError as exc:  # pragma: no cover - CPython always has it
        return None, 'ctypes is not available: %s' % exc
    paths = []
    try:
        with open(maps_path) as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 6 and _COMMON_LIB in os.path.basename(fields[-1]) and fields[-1] not in paths:
                    paths.append(fields[-1])
    except (IOError, OSError) as exc:
        return None, 'could not list the loaded libraries (%s): %s' % (maps_path, exc)
    if not paths:
        return None, 'libceph-common is not loaded (are the rados bindings imported?)'
    errors = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            version = getattr(lib, _VERSION_SYMBOL)
            version.restype, version.argtypes = ctypes.c_char_p, []
            text = version().decode('ascii', 'replace')
            release = ''
            if hasattr(lib, _RELEASE_SYMBOL):
                name = getattr(lib, _RELEASE_SYMBOL)
                name.restype, name.argtypes = ctypes.c_char_p, []
                release = ' ' + name().decode('ascii', 'replace')
            return 'ceph version %s%s' % (text, release), None
        except (OSError, AttributeError, ValueError) as exc:
            errors.append('%s: %s' % (path, exc))
    return None, 'could not ask libceph-common for its version: %s' % '; '.join(errors)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 12: key types, versions and the message for a key the client cannot read.

The keys are real ones (throwaway, of no cluster that still exists): written by each release's
ceph-authtool (`--create-keyring --gen-key`, as a lab's keyring is made) and copied from the
keyring files; the version texts are what `ceph --version`, `ceph version` and `ceph versions`
printed on the lab's clusters."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph.versions import (
    bindings_client_version,
    client_info,
    cluster_info,
    decode_key,
    find_key,
    keyring_candidates,
    keyring_keys,
    parse_version_text,
    reads_key_type,
    unreadable_key_message,
)

# ceph-authtool 20.2.4 (Debian forky): the default key type is aes256k.
KEYRING_20 = '[client.admin]\n\tkey = AgBCvgNrW4UgGSAAmJHqK4GMyUWfPzJjUR1ALO46dmBqWK0qdpZXB0Hbc3Q=\n'
# ceph-authtool 16.2.15 (the lab's admin keyring on Pacific) and 18.2.7: aes.
KEYRING_16 = ('[client.admin]\n\tkey = AQBEvgNrCcm9OBAA11uSxfmFoNsqfRlRDPooVg==\n\tcaps mds = "allow *"\n'
              '\tcaps mon = "allow *"\n')
KEY_18 = 'AQCwvgNrISnsLBAAb0vCDCN/WGe+OtBqfFYbSA=='

V16 = 'ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)'
V18 = 'ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)'
V20 = 'ceph version 20.2.4 (7f793731f1b39eb4f465e960113d2363c311b964) tentacle (stable)'


def test_decode_real_keys_of_each_release():
    key20 = decode_key(keyring_keys(KEYRING_20)['client.admin'])
    assert key20['type'] == 2 and key20['type_name'] == 'aes256k' and key20['length'] == 32
    key16 = decode_key(keyring_keys(KEYRING_16)['client.admin'])
    assert key16['type'] == 1 and key16['type_name'] == 'aes' and key16['length'] == 16
    key18 = decode_key(KEY_18)
    assert key18['type'] == 1 and key18['length'] == 16
    assert key20['created'].startswith('2026-11-') and key20['created'].endswith('Z')


# deliberately repeated: each parser's refusals are spelled out beside its tests (the parametrize-and-raise
# shape of test__ceph_common.py and test__safety.py, other inputs and messages)
@pytest.mark.parametrize('text, error', [
    ('', 'empty'),
    ('not a key!', 'not base64'),
    ('AQBE', 'too short'),
    ('AQBEvgNrCcm9OBAA11uSxfmFoNsqfRlRDPoo', 'secret has 16 bytes'),
])
def test_decode_bad_keys_say_what_is_wrong(text, error):
    with pytest.raises(ValueError, match=error):
        decode_key(text)


def test_keyring_keys_reads_sections_and_skips_comments():
    text = '# made by hand\n[client.a]\nkey = AQBEvgNrCcm9OBAA11uSxfmFoNsqfRlRDPooVg==\n;[client.b]\n' + KEYRING_20
    assert sorted(keyring_keys(text)) == ['client.a', 'client.admin']
    assert keyring_keys('') == {}


def test_find_key_from_file_and_key_option(tmp_path):
    path = tmp_path / 'ceph.client.admin.keyring'
    path.write_text(KEYRING_20)
    where, key = find_key('client.admin', [str(tmp_path / 'missing'), str(path)])
    assert where == str(path) and key['type_name'] == 'aes256k'
    assert find_key('client.other', [str(path)]) == (None, None)
    where, key = find_key('client.admin', [], key=KEY_18)
    assert where == 'the key option' and key['type'] == 1
    assert find_key('client.admin', [], key='???')[1] == {'error': 'the key is not base64'}


def test_keyring_candidates_follow_ceph(tmp_path):
    conf = tmp_path / 'ceph.conf'
    conf.write_text('[global]\nkeyring = /g/$cluster.keyring\n[client.admin]\n keyring = /a/$name.keyring\n')
    assert keyring_candidates('ceph', 'client.admin', keyring='/k') == ['/k']
    assert keyring_candidates('lab', 'client.admin', conf=str(conf))[0] == '/a/client.admin.keyring'
    assert keyring_candidates('lab', 'client.x', conf=str(conf))[0] == '/g/lab.keyring'
    assert keyring_candidates('ceph', 'client.x')[0] == '/etc/ceph/ceph.client.x.keyring'


@pytest.mark.parametrize('text, version, release', [
    (V16, '16.2.15', 'pacific'),
    (V18, '18.2.7', 'reef'),
    (V20 + '\n', '20.2.4', 'tentacle'),
    # Debian forky's 20.2.4 daemons, as `ceph versions` names them on the lab
    ('ceph version 20.2.4 (7f793731f1b39eb4f465e960113d2363c311b964) tentacle (stable - RelWithDebInfo)',
     '20.2.4', 'tentacle'),
    ('ceph version 20.2.4 tentacle', '20.2.4', 'tentacle'),
    ('19.2.6', '19.2.6', 'squid'),
])
def test_parse_version_text(text, version, release):
    assert parse_version_text(text) == dict(version=version, release=release)


def test_parse_version_text_without_a_version():
    assert parse_version_text('') is None
    assert parse_version_text('usage: ceph ...') is None
    info = client_info('cli', 'usage: ceph ...')
    assert info['version'] is None and 'could not read a Ceph version' in info['error']


def test_cluster_info_from_versions_and_version():
    with open(os.path.join(os.path.dirname(__file__), 'fixtures', 'ceph', 'versions.json')) as handle:
        doc = json.load(handle)  # `ceph versions` of the Pacific lab (scripts/capture_ceph_fixtures.py)
    assert cluster_info(doc) == dict(version='16.2.15', release='pacific', versions=['16.2.15'], mixed=False,
                                     error=None)
    upgrading = {'mon': {V20: 1}, 'osd': {V18: 2}, 'overall': {V20: 1, V18: 2}}
    info = cluster_info(upgrading)
    assert info['version'] == '18.2.7' and info['versions'] == ['18.2.7', '20.2.4'] and info['mixed']
    assert cluster_info(None, {'version': V20})['release'] == 'tentacle'
    empty = cluster_info(error='not connected: x')
    assert empty['version'] is None and empty['error'] == 'not connected: x'


@pytest.mark.parametrize('version, key_type, reads', [
    ('16.2.15', 1, True), ('16.2.15', 2, False), ('18.2.7', 2, False), ('19.2.5', 2, False),
    ('19.2.6', 2, True), ('20.2.3', 2, False), ('20.2.4', 2, True), ('21.1.0', 2, True),
    (None, 2, None), (None, 1, True), ('20.2.4', 7, False),
])
def test_reads_key_type(version, key_type, reads):
    assert reads_key_type(version, key_type) is reads


def test_message_names_both_versions_and_the_ways_out():
    key = decode_key(keyring_keys(KEYRING_20)['client.admin'])
    client = client_info('rados', V16)
    msg = unreadable_key_message('client.admin', '/lab/ceph.client.admin.keyring', key, client)
    assert 'Ceph 16.2.15 pacific (the rados/rbd Python bindings of this Python)' in msg
    assert 'aes256k' in msg and 'Ceph >= 19.2.6 (Squid) or >= 20.2.4 (Tentacle)' in msg
    assert '/lab/ceph.client.admin.keyring' in msg and 'client.admin' in msg
    assert 'cephadm shell on a cephadm host (command_prefix: [cephadm, shell, --])' in msg
    assert 'deploy/rook-ceph-tools' in msg and 'backend=cli' in msg
    assert 'Nothing was changed' in msg
    cli = unreadable_key_message('client.admin', 'k', key, client_info('cli', V18))
    assert 'Ceph 18.2.7 reef (the ceph/rbd command line tools)' in cli


def test_no_message_when_the_client_reads_the_key():
    key20 = decode_key(keyring_keys(KEYRING_20)['client.admin'])
    assert unreadable_key_message('client.admin', 'k', key20, client_info('rados', V20)) is None
    key16 = decode_key(keyring_keys(KEYRING_16)['client.admin'])
    assert unreadable_key_message('client.admin', 'k', key16, client_info('rados', V16)) is None
    assert unreadable_key_message('client.admin', 'k', None, client_info('rados', V16)) is None
    assert unreadable_key_message('client.admin', 'k', {'error': 'x'}, client_info('rados', V16)) is None
    # A client whose version could not be read still gets the aes256k explanation.
    unknown = client_info('rados', None, 'libceph-common is not loaded')
    assert 'unknown version' in unreadable_key_message('client.admin', 'k', key20, unknown)


def test_bindings_client_version_without_libceph_common(tmp_path):
    maps = tmp_path / 'maps'
    maps.write_text('7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n')
    assert bindings_client_version(str(maps)) == (None, 'libceph-common is not loaded (are the rados bindings '
                                                        'imported?)')
    text, error = bindings_client_version(str(tmp_path / 'absent'))
    assert text is None and 'could not list the loaded libraries' in error

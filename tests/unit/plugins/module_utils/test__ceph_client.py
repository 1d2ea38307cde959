# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import threading
import time

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._ceph import client as _ceph_client
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    CephSettings,
    CliBackend,
    blocklist_change_command,
    blocklist_ls_command,
    connect,
    dump_command,
    image_spec,
    normalize_lockers_bindings,
    parse_image_spec,
    parse_lock_header,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CephCommandError,
    CephConnectionError,
    CephError,
    CephNotFoundError,
    is_unknown_command,
)

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import fixture


def params(**kw):
    out = dict(cluster='ceph', conf=None, keyring=None, key=None, user='admin', mon_host=None, timeout=30,
               backend='cli', command_prefix=None)
    out.update(kw)
    return out


class FakeRunner(object):
    """Answers CLI calls with captured outputs: {(tool, first args...): fixture base name}."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv, timeout):
        self.calls.append((argv, timeout))
        tool_index = next(i for i, a in enumerate(argv) if a in ('ceph', 'rbd'))
        for key, base in self.answers.items():
            if all(k in argv[tool_index:] for k in key):
                rc = int(fixture(base + '.rc', '0'))
                out = fixture(base + '.json', '') if not base.endswith('.txt') else fixture(base, '')
                err = fixture(base + '.stderr', '') if not base.endswith('.txt') else ''
                return rc, out, err
        raise AssertionError('unexpected call %r' % (argv,))


# ----------------------------------------------------------------------------- commands

def test_blocklist_commands_in_both_forms():
    add = blocklist_change_command('blocklist', 'add', '10.0.0.1:0/0', 3600, False)
    assert add.argv == ['osd', 'blocklist', 'add', '10.0.0.1:0/0', '3600']
    assert add.json == {'prefix': 'osd blocklist', 'blocklistop': 'add', 'addr': '10.0.0.1:0/0', 'expire': 3600.0,
                        'format': 'json'}
    rng = blocklist_change_command('blocklist', 'add', '10.0.3.0/24', 1.5, True)
    assert rng.argv == ['osd', 'blocklist', 'range', 'add', '10.0.3.0/24', '1.5']
    assert rng.json['range'] == 'range' and rng.json['expire'] == 1.5
    # The monitors refuse an integer expire in JSON (EINVAL): it is always sent as a float.
    assert isinstance(add.json['expire'], float) and json.dumps(add.json['expire']) == '3600.0'
    assert isinstance(blocklist_change_command('blocklist', 'add', '10.0.0.1:0/0', '60', False).json['expire'], float)
    rm = blocklist_change_command('blacklist', 'rm', '10.0.0.1:0/0', 3600, False)
    assert rm.argv == ['osd', 'blacklist', 'rm', '10.0.0.1:0/0']
    assert rm.json == {'prefix': 'osd blacklist', 'blacklistop': 'rm', 'addr': '10.0.0.1:0/0', 'format': 'json'}
    assert blocklist_ls_command('blacklist').json['prefix'] == 'osd blacklist ls'
    assert dump_command('fs dump').argv == ['fs', 'dump'] and dump_command('fs dump').describe() == 'ceph fs dump'


def test_the_json_mon_commands_match_what_the_bindings_sent_to_the_real_cluster():
    mon = json.loads(fixture('bindings_outputs.json'))['mon_command']
    assert mon['rm_absent']['command'] == blocklist_change_command(
        'blocklist', 'rm', mon['rm_absent']['command']['addr']).json
    assert mon['blocklist_ls']['command'] == blocklist_ls_command().json


# ----------------------------------------------------------------------------- image specs

def test_parse_image_spec():
    assert str(parse_image_spec('rbd/img')) == 'rbd/img'
    spec = parse_image_spec('rbd/ns1/img')
    assert (spec.pool, spec.namespace, spec.image) == ('rbd', 'ns1', 'img')
    for bad in ('img', 'rbd/', 'a/b/c/d', 'rbd/img@snap', 'rbd/im g', '', None):
        with pytest.raises(ValueError):
            parse_image_spec(bad)
    assert str(image_spec('rbd', '', 'img')) == 'rbd/img'
    with pytest.raises(ValueError):
        image_spec('rbd', None, 'a/b')


# ----------------------------------------------------------------------------- settings and connect

def test_missing_keyring_fails_before_anything(tmp_path):
    with pytest.raises(CephConnectionError, match='keyring file /nonexistent/ceph.keyring does not exist'):
        CephSettings(params(keyring='/nonexistent/ceph.keyring'))
    # With a prefix the path is the container's: not checked here.
    CephSettings(params(keyring='/nonexistent/ceph.keyring', command_prefix=['cephadm', 'shell', '--']))


def test_settings_validation():
    assert CephSettings(params(user='client.csi')).user == 'csi'
    with pytest.raises(ValueError, match='backend must be one of'):
        CephSettings(params(backend='librados'))
    with pytest.raises(ValueError, match='command_prefix only applies'):
        CephSettings(params(backend='rados', command_prefix=['x']))
    with pytest.raises(ValueError, match='timeout'):
        CephSettings(params(timeout=0))


def test_backend_rados_without_bindings_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_ceph_client, 'import_bindings', lambda: (None, 'No module named rados'))
    with pytest.raises(CephError, match='python3-rados and python3-rbd'):
        connect(params(backend='rados'))


def test_auto_falls_back_to_the_cli_without_bindings(monkeypatch):
    monkeypatch.setattr(_ceph_client, 'import_bindings', lambda: (None, 'No module named rados'))
    monkeypatch.setattr(_ceph_client, '_which', lambda tool: '/usr/bin/' + tool)
    assert connect(params(backend='auto')).name == 'cli'


def test_auto_with_a_prefix_uses_the_cli(monkeypatch):
    monkeypatch.setattr(_ceph_client, 'import_bindings', lambda: ((object(), object()), None))
    assert connect(params(backend='auto', command_prefix=['cephadm', 'shell', '--'])).name == 'cli'


def test_key_goes_to_a_private_temporary_keyring_removed_on_close(tmp_path):
    client = CliBackend(CephSettings(params(key='AQDUKQFre+WlERAAv/MgyEtHaPxE5wTv6CIpjw==', user='csi')),
                        str(tmp_path))
    path = client.keyring
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    assert open(path).read() == '[client.csi]\n\tkey = AQDUKQFre+WlERAAv/MgyEtHaPxE5wTv6CIpjw==\n'
    assert 'AQDUKQ' not in ' '.join(client.base('ceph'))
    client.close()
    assert not os.path.exists(path)


# ----------------------------------------------------------------------------- CLI backend

def test_cli_argv_with_prefix_and_timeouts():
    client = CliBackend(CephSettings(params(conf='/etc/ceph/ceph.conf', command_prefix=['kubectl', 'exec', '--'],
                                            mon_host='10.0.0.1', timeout=7)))
    client.settings.keyring = None
    argv = client.base('ceph')
    assert argv[:4] == ['kubectl', 'exec', '--', 'ceph']
    assert ['--id', 'admin'] == argv[argv.index('--id'):argv.index('--id') + 2]
    assert '--connect-timeout' in argv and argv[argv.index('--connect-timeout') + 1] == '7'
    assert argv[argv.index('--mon_host') + 1] == '10.0.0.1'
    assert '--connect-timeout' not in client.base('rbd')


def test_cli_cannot_ask_for_lock_owners_and_says_so():
    client = CliBackend(CephSettings(params()), runner=FakeRunner({}))
    with pytest.raises(CephError) as raised:
        client.lock_owners(image_spec('rbd', '', 'img'))
    assert 'rbd/img was not asked' in raised.value.msg and 'backend=rados' in raised.value.msg


def test_cli_mon_command_returns_stdout_and_the_status_line():
    runner = FakeRunner({('osd', 'blocklist', 'ls'): 'blocklist_ls'})
    client = CliBackend(CephSettings(params()), runner=runner)
    out, outs = client.mon(blocklist_ls_command())
    assert out.strip().startswith('[{') and outs == 'listed 8 entries'
    argv = runner.calls[0][0]
    assert argv[-5:] == ['osd', 'blocklist', 'ls', '--format', 'json']
    assert runner.calls[0][1] == 30 + 15


def test_cli_errors_carry_command_rc_stdout_stderr():
    runner = FakeRunner({('osd', 'blocklist', 'add'): 'blocklist_add_invalid'})
    client = CliBackend(CephSettings(params()), runner=runner)
    with pytest.raises(CephCommandError) as info:
        client.mon(blocklist_change_command('blocklist', 'add', 'not-an-ip'))
    err = info.value
    assert err.rc == 22 and 'EINVAL' in err.msg
    assert 'ceph osd blocklist add not-an-ip' in err.msg
    assert 'not valid IPv6 address' in err.msg and 'AuthRegistry' not in err.msg
    assert err.cmd[-4:] == ['add', 'not-an-ip', '--format', 'json']
    assert 'AuthRegistry' in err.stderr  # the full stderr is kept for the user
    assert not is_unknown_command(err)


def test_cli_unknown_command_is_detected():
    runner = FakeRunner({('frobnicate',): 'unknown_command'})
    client = CliBackend(CephSettings(params()), runner=runner)
    with pytest.raises(CephCommandError) as info:
        client.mon(dump_command('osd frobnicate ls'))
    assert is_unknown_command(info.value)


def test_cli_missing_image_and_pool_are_not_found_errors():
    client = CliBackend(CephSettings(params()), runner=FakeRunner({
        ('status', 'rbd/fixture-does-not-exist'): 'rbd_status_missing_image',
        ('status', 'fixture-no-pool/img'): 'rbd_status_missing_pool'}))
    with pytest.raises(CephNotFoundError, match='error opening image fixture-does-not-exist'):
        client.inspect_image(parse_image_spec('rbd/fixture-does-not-exist'))
    with pytest.raises(CephNotFoundError, match="error opening pool 'fixture-no-pool'"):
        client.inspect_image(parse_image_spec('fixture-no-pool/img'))


def test_cli_timeout_is_a_connection_error():
    client = CliBackend(CephSettings(params(timeout=3)), runner=lambda argv, timeout: (-1, '', ''))
    with pytest.raises(CephConnectionError, match='no answer within 3s'):
        client.mon(blocklist_ls_command())
    client = CliBackend(CephSettings(params(mon_host='10.0.0.9')),
                        runner=lambda argv, timeout: (1, '', 'timed out\n'))
    with pytest.raises(CephConnectionError, match='monitors at 10.0.0.9 reachable'):
        client.mon(blocklist_ls_command())


def test_cli_inspect_image_parses_real_status_and_metadata():
    client = CliBackend(CephSettings(params()), runner=FakeRunner({
        ('status',): 'rbd_status_two_watchers', ('image-meta', 'list'): 'rbd_image_meta_list'}))
    result = client.inspect_image(parse_image_spec('rbd/x'))
    assert len(result['watchers']) == 2
    assert all(isinstance(w['cookie'], int) and w['client_id'] > 0 for w in result['watchers'])
    assert '.rbd.csi.ceph.com/clientAddress/node-c' in result['metadata']


def test_cli_image_locks_from_json_and_plain_output():
    for base, exclusive, tag in (('rbd_lock_ls_exclusive', True, ''), ('rbd_lock_ls_shared', False, 'volfence-tag'),
                                 ('rbd_lock_ls_managed', True, '')):
        client = CliBackend(CephSettings(params()), runner=FakeRunner({
            ('lock', 'ls', '--format'): base, ('lock', 'ls'): base + '.txt'}))
        locks = client.image_locks(parse_image_spec('rbd/x'))
        assert locks['exclusive'] is exclusive and locks['tag'] == tag
        assert len(locks['lockers']) == 1 and locks['lockers'][0]['locker'].startswith('client.')
    client = CliBackend(CephSettings(params()), runner=FakeRunner({('lock', 'ls'): 'rbd_lock_ls_none'}))
    assert client.image_locks(parse_image_spec('rbd/x')) == dict(exclusive=None, tag=None, lockers=[])


def test_parse_lock_header():
    assert parse_lock_header(fixture('rbd_lock_ls_shared.txt')) == (False, 'volfence-tag')
    assert parse_lock_header(fixture('rbd_lock_ls_exclusive.txt')) == (True, '')
    assert parse_lock_header(fixture('rbd_lock_ls_none.txt')) == (None, None)


def test_cli_lock_commands():
    runner = FakeRunner({('lock', 'add'): 'rbd_lock_ls_none', ('lock', 'rm'): 'rbd_lock_ls_none'})
    client = CliBackend(CephSettings(params()), runner=runner)
    client.add_lock(parse_image_spec('rbd/x'), 'kubelet_lock_magic_node-a')
    client.add_lock(parse_image_spec('rbd/ns/x'), 'id2', tag='t')
    client.break_lock(parse_image_spec('rbd/x'), 'client.4272', 'kubelet_lock_magic_node-b')
    tails = [c[0][c[0].index('lock'):] for c in runner.calls]
    # I9: options first, then `--`, then every name (the rbd CLI's end of options)
    assert tails == [['lock', 'add', '--', 'rbd/x', 'kubelet_lock_magic_node-a'],
                     ['lock', 'add', '--shared', 't', '--', 'rbd/ns/x', 'id2'],
                     ['lock', 'rm', '--', 'rbd/x', 'kubelet_lock_magic_node-b', 'client.4272']]


def test_parallel_runs_are_bounded_and_keep_order():
    active, peak, lock = [0], [0], threading.Lock()

    def runner(argv, timeout):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return 0, '', 'blocklisting %s' % argv[-3]

    client = CliBackend(CephSettings(params()), runner=runner)
    commands = [blocklist_change_command('blocklist', 'add', '10.9.0.%d:0/0' % i) for i in range(1, 41)]
    results = client.mon_many(commands, workers=8)
    assert [r[0] for r in results] == commands
    assert all(r[2] is None for r in results)
    assert 1 < peak[0] <= 8


# ----------------------------------------------------------------------------- bindings outputs

def test_bindings_lockers_normalised_from_real_outputs():
    images = json.loads(fixture('bindings_outputs.json'))['images']
    by_kind = dict((spec.split('/')[1].split('-')[1], data) for spec, data in images.items())
    assert normalize_lockers_bindings(by_kind['idle']['list_lockers']) == dict(exclusive=None, tag=None, lockers=[])
    locked = normalize_lockers_bindings(by_kind['locked']['list_lockers'])
    assert locked['exclusive'] is True and locked['lockers'][0]['id'] == 'kubelet_lock_magic_node-b'
    shared = normalize_lockers_bindings(by_kind['shared']['list_lockers'])
    assert shared['exclusive'] is False and shared['tag'] == 'volfence-tag'
    managed = normalize_lockers_bindings(by_kind['managed']['list_lockers'])
    assert managed['tag'] == 'internal' and managed['lockers'][0]['id'].startswith('auto ')
    # lock_get_owners reports the same client as the managed lock's locker
    assert by_kind['managed']['lock_get_owners'][0]['owner'] == managed['lockers'][0]['address']


class CapturedRbd(object):
    """rbd.Image as the real bindings behaved on the captured managed image: lock_get_owners
    answers on a read-write open, and fails with the captured error on a read-only one."""

    class Error(Exception):
        pass

    class ImageNotFound(Error):
        pass

    def __init__(self, captured):
        self.captured = captured
        self.opened = []

    def Image(self, ioctx, name, read_only=False):
        self.opened.append((name, read_only))
        captured = self.captured

        class Image(object):
            def lock_get_owners(self):
                if read_only:
                    raise CapturedRbd.Error(captured['read_only_lock_get_owners_error'])
                spec = [s for s in captured['images'] if s.endswith('/' + name)][0]
                return iter(captured['images'][spec]['lock_get_owners'])

            def close(self):
                pass
        return Image()


class OneIoctxCluster(object):
    def open_ioctx(self, pool):
        return object()


def test_bindings_lock_owners_open_the_image_read_write():
    captured = json.loads(fixture('bindings_outputs.json'))
    spec = [s for s, data in captured['images'].items() if 'lock_get_owners' in data][0]
    bindings = CapturedRbd(captured)
    client = _ceph_client.RadosBackend(CephSettings(params(backend='rados')), (object(), bindings))
    client.cluster = OneIoctxCluster()
    owners = client.lock_owners(parse_image_spec(spec))
    assert owners == [dict(address=o['owner'], mode='exclusive') for o in captured['images'][spec]['lock_get_owners']]
    assert bindings.opened == [(spec.split('/', 1)[1], False)]


# ----------------------------------------------------------------------------- issue 11: I8 and I9

# deliberately repeated: the lab's alive() (tools/lab), which the unit tests cannot import: ansible-test
# runs them where only the collection is installed
def _alive(pid):
    """Whether `pid` runs (a zombie waiting for its parent counts as gone)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (IOError, OSError):
        return False


def _wait_gone(pid, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline and _alive(pid):
        time.sleep(0.05)
    return not _alive(pid)


# A command_prefix stand-in for `cephadm shell --` / `kubectl exec ... --`: the direct child (sh)
# starts the real work as a grandchild, which inherits stdout, and waits for it.
GRANDCHILD = 'sleep 120 & echo $! > "%s"; wait'


def test_I8_timeout_kills_the_whole_process_group_of_a_cli_call(tmp_path):
    """Issue 11 item 8, I8: the timeout used to kill the direct child only; the sleeping
    grandchild kept stdout open, so the call still waited for it (120 s) and it ran on."""
    pidfile = str(tmp_path / 'grandchild.pid')
    started = time.time()
    rc, _out, _err = _ceph_client._run(['sh', '-c', GRANDCHILD % pidfile], 1)
    elapsed = time.time() - started
    grandchild = int(open(pidfile).read())
    # the defect waited for the grandchild (120 s); half of that tells the two apart on a loaded machine
    assert rc == -1 and elapsed < 60, elapsed
    assert _wait_gone(grandchild), 'grandchild %d still runs' % grandchild


def test_I8_cli_backend_with_a_command_prefix_is_bounded_and_leaves_nothing_behind(tmp_path):
    pidfile = str(tmp_path / 'grandchild.pid')
    client = CliBackend(CephSettings(params(timeout=1, command_prefix=['sh', '-c', GRANDCHILD % pidfile, 'sh'])))
    client.grace = 1
    started = time.time()
    with pytest.raises(CephConnectionError, match='no answer within 1s'):
        client.mon(blocklist_ls_command())
    assert time.time() - started < 60   # not the grandchild's 120 s
    assert _wait_gone(int(open(pidfile).read()))


def test_a_finished_cli_call_is_returned_normally():
    assert _ceph_client._run(['sh', '-c', 'echo out; echo err >&2; exit 3'], 5) == (3, 'out\n', 'err\n')
    assert _ceph_client._run(['/nonexistent/tool'], 5)[0] == 127


@pytest.mark.parametrize('call', [
    lambda: parse_image_spec('rbd/--keyring=ceph.keyring'),
    lambda: parse_image_spec('-rbd/img'),
    lambda: parse_image_spec('rbd/-ns/img'),
    lambda: image_spec('rbd', '', '--keyring=ceph.keyring'),
    lambda: image_spec('--pool', '', 'img'),
    lambda: image_spec('rbd', '--ns', 'img'),
    lambda: CephSettings(params(user='--keyring=/x')),
    lambda: CephSettings(params(cluster='-x')),
    lambda: CephSettings(params(mon_host='--mon_host=1.2.3.4')),
])
def test_I9_names_starting_with_a_dash_are_refused_before_any_call(call):
    """Issue 11 item 9, I9: `--keyring=...` used to be accepted as an image name."""
    with pytest.raises(ValueError, match='starts with "-"'):
        call()


def test_I9_mon_commands_never_carry_an_option_as_a_positional():
    with pytest.raises(ValueError, match='starts with "-"'):
        blocklist_change_command('blocklist', 'add', '--keyring=/x')
    for bad in (float('inf'), float('nan'), -1):
        with pytest.raises(ValueError, match='expire'):
            blocklist_change_command('blocklist', 'add', '10.0.0.1:0/0', bad)


def test_I9_rbd_names_from_the_cluster_go_after_the_end_of_options():
    runner = FakeRunner({('lock', 'rm'): 'rbd_lock_ls_none', ('status',): 'rbd_status_two_watchers',
                         ('image-meta', 'list'): 'rbd_image_meta_list'})
    client = CliBackend(CephSettings(params()), runner=runner)
    client.break_lock(parse_image_spec('rbd/x'), '--conf=/tmp/evil', '--keyring=/etc/passwd')
    client.inspect_image(parse_image_spec('rbd/x'))
    for argv, _timeout in runner.calls:
        end = argv.index('--')
        assert all(not a.startswith('-') for a in argv[end + 1:]) or argv[end + 1:] == [
            'rbd/x', '--keyring=/etc/passwd', '--conf=/tmp/evil']
        assert '--format' not in argv[end:]
    assert runner.calls[0][0][-4:] == ['--', 'rbd/x', '--keyring=/etc/passwd', '--conf=/tmp/evil']


def test_I8_every_ceph_call_is_bounded_by_timeout_in_both_backends():
    """The Pacific bindings ignore Rados.connect(timeout=) and mon_command(timeout=) (their
    docstrings say so): the bounds are librados options, which both backends set to `timeout`."""
    seen = {}

    class FakeRados(object):
        Error = Exception

        class Rados(object):
            def __init__(self, **kw):
                seen.update(kw['conf'])

            def connect(self, timeout=0):
                pass

    client = _ceph_client.RadosBackend(CephSettings(params(timeout=7, backend='rados')), (FakeRados, object()))
    client.connect()
    for option in ('client_mount_timeout', 'rados_mon_op_timeout', 'rados_osd_op_timeout'):
        assert seen[option] == '7'
    cli = CliBackend(CephSettings(params(timeout=7)))
    for tool in ('ceph', 'rbd'):
        argv = cli.base(tool)
        for option in ('--client_mount_timeout', '--rados_mon_op_timeout', '--rados_osd_op_timeout'):
            assert argv[argv.index(option) + 1] == '7'
    assert cli.base('ceph')[cli.base('ceph').index('--connect-timeout') + 1] == '7'


# ----------------------------------------------------------------------------- issue 12: releases and keys

# What Pacific's `ceph` printed on the lab, given a keyring whose key is Tentacle's aes256k (rc 1).
PACIFIC_STDERR_ON_AES256K = (
    '2026-11-23T04:17:45.722+0000 7f86eec9d6c0 -1 auth: error parsing file /k: error setting modifier for '
    '[client.admin] type=key val=AgBCvgNrW4UgGSAAmJHqK4GMyUWfPzJjUR1ALO46dmBqWK0qdpZXB0Hbc3Q=: Malformed input\n'
    '2026-11-23T04:17:45.722+0000 7f86eec9d6c0 -1 auth: failed to load /k: (5) Input/output error\n'
    '2026-11-23T04:17:45.730+0000 7f86eec9d6c0 -1 monclient: keyring not found\n'
    '[errno 5] RADOS I/O error (error connecting to the cluster)\n')
AES256K_KEYRING = '[client.admin]\n\tkey = AgBCvgNrW4UgGSAAmJHqK4GMyUWfPzJjUR1ALO46dmBqWK0qdpZXB0Hbc3Q=\n'
AES_KEYRING = '[client.admin]\n\tkey = AQBEvgNrCcm9OBAA11uSxfmFoNsqfRlRDPooVg==\n'


def scripted(answers):
    """A CLI runner: `ceph --version` and mon commands answered from (words, rc, out, err)."""
    calls = []

    def run(argv, timeout):
        calls.append(argv)
        for words, rc, out, err in answers:
            if all(w in argv for w in words):
                return rc, out, err
        raise AssertionError('unexpected call %r' % (argv,))
    return run, calls


def test_cli_versions_from_rbd_version_and_the_versions_command():
    v20 = 'ceph version 20.2.4 (7f793731f1b39eb4f465e960113d2363c311b964) tentacle (stable - RelWithDebInfo)'
    runner, calls = scripted([
        (['--version'], 0, 'ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)\n', ''),
        (['versions'], 0, json.dumps({'mon': {v20: 1}, 'osd': {v20: 1}, 'overall': {v20: 2}}), ''),
    ])
    client = CliBackend(CephSettings(params(command_prefix=['cephadm', 'shell', '--'])), runner=runner)
    assert client.versions() == dict(
        client=dict(backend='cli', version='18.2.7', release='reef', error=None),
        cluster=dict(version='20.2.4', release='tentacle', versions=['20.2.4'], mixed=False, error=None))
    assert calls[0] == ['cephadm', 'shell', '--', 'rbd', '--version']  # the prefix's own tools


def test_cli_cluster_version_falls_back_to_the_version_command():
    runner, _calls = scripted([
        (['versions'], 13, '', 'Error EACCES: access denied'),
        (['version'], 0, '{"version":"ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific '
                         '(stable)"}', ''),
    ])
    client = CliBackend(CephSettings(params()), runner=runner)
    info = client.cluster_version()
    assert info['version'] == '16.2.15' and info['release'] == 'pacific' and info['error'] is None


def test_cli_unreadable_key_fails_with_both_versions(tmp_path):
    keyring = tmp_path / 'ceph.client.admin.keyring'
    keyring.write_text(AES256K_KEYRING)
    runner, _calls = scripted([
        (['--version'], 0, 'ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)\n', ''),
        (['osd', 'blocklist', 'ls'], 1, '', PACIFIC_STDERR_ON_AES256K),
    ])
    client = CliBackend(CephSettings(params(keyring=str(keyring))), runner=runner)
    with pytest.raises(CephConnectionError) as caught:
        client.mon(blocklist_ls_command())
    msg = caught.value.msg
    assert msg.startswith('cannot connect as client.admin: the key in %s is an aes256k key' % keyring)
    assert 'Ceph 16.2.15 pacific (the ceph/rbd command line tools)' in msg and 'cephadm shell' in msg
    assert caught.value.versions['client']['version'] == '16.2.15'
    assert caught.value.versions['cluster']['version'] is None
    assert 'error connecting to the cluster' in caught.value.versions['cluster']['error']
    assert caught.value.rc == 1 and 'failed to load' in caught.value.stderr


def test_cli_connect_failure_with_a_readable_key_keeps_cephs_own_message(tmp_path):
    keyring = tmp_path / 'ceph.client.admin.keyring'
    keyring.write_text(AES_KEYRING)
    runner, _calls = scripted([
        (['--version'], 0, 'ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)\n', ''),
        (['osd', 'blocklist', 'ls'], 1, '', '[errno 5] RADOS I/O error (error connecting to the cluster)\n'),
    ])
    client = CliBackend(CephSettings(params(keyring=str(keyring))), runner=runner)
    with pytest.raises(CephCommandError) as caught:
        client.mon(blocklist_ls_command())
    assert 'aes256k' not in caught.value.msg and 'error connecting to the cluster' in caught.value.msg


class _Ended(Exception):
    """What a module's fail_json does: end the run (here as an exception carrying its result)."""


class _SessionModule(object):
    params = {}
    tmpdir = None

    def fail_json(self, **kwargs):
        raise _Ended(kwargs)


class _SessionClient(object):
    name = 'rados'
    known_versions = {'client': {'backend': 'rados'}}

    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


def test_module_session_closes_the_client_and_reports_an_error_with_what_was_done(monkeypatch):
    client = _SessionClient()
    monkeypatch.setattr(_ceph_client, 'connect', lambda params, tmpdir=None: client)
    done = {'changed': True, 'broken': ['lock-1']}
    with pytest.raises(_Ended) as ended:
        with _ceph_client.module_session(_SessionModule(), partial=done):
            done['blocklisted'] = ['10.0.0.2:0/1']
            raise CephCommandError('lock break refused', rc=16)
    result = ended.value.args[0]
    assert client.closed == 1
    assert result['msg'] == 'lock break refused' and result['rc'] == 16
    assert result['changed'] is True and result['broken'] == ['lock-1'] and result['blocklisted'] == ['10.0.0.2:0/1']
    assert result['backend'] == 'rados' and result['versions'] == client.known_versions


def test_module_session_closes_the_client_on_success_and_on_a_value_error(monkeypatch):
    client = _SessionClient()
    monkeypatch.setattr(_ceph_client, 'connect', lambda params, tmpdir=None: client)
    with _ceph_client.module_session(_SessionModule()) as got:
        assert got is client
    assert client.closed == 1
    with pytest.raises(_Ended) as ended:
        with _ceph_client.module_session(_SessionModule()):
            raise ValueError('images: not a pool/image spec')
    assert ended.value.args[0] == {'msg': 'images: not a pool/image spec'} and client.closed == 2


def test_module_session_when_connecting_fails_names_no_client(monkeypatch):
    def refuse(params, tmpdir=None):
        raise CephCommandError('cannot connect as client.admin', rc=1)
    monkeypatch.setattr(_ceph_client, 'connect', refuse)
    with pytest.raises(_Ended) as ended:
        with _ceph_client.module_session(_SessionModule()):
            raise AssertionError('the block must not run without a client')
    assert ended.value.args[0]['msg'] == 'cannot connect as client.admin'


# ----------------------------------------------------------------------------- the environment Ceph's tools read

def unset(**kw):
    """A module's params with the options CEPH_ARGS may fill left unset (as the user left them)."""
    return params(**dict(dict(cluster=None, user=None), **kw))


def test_ceph_args_and_ceph_conf_fill_what_the_options_leave_unset(tmp_path):
    conf, keyring, other = tmp_path / 'lab.conf', tmp_path / 'lab.keyring', tmp_path / 'other.conf'
    for path in (conf, keyring, other):
        path.write_text(u'[global]\n')
    environ = dict(CEPH_CONF=str(other),
                   CEPH_ARGS='-c %s -k %s -n client.ops --cluster lab --connect-timeout 10' % (conf, keyring))
    s = CephSettings(unset(), environ=environ)
    assert (s.conf, s.keyring, s.user, s.cluster) == (str(conf), str(keyring), 'ops', 'lab')
    assert s.extra_args == ['--connect-timeout', '10']   # the tools still get what the settings did not take
    assert s.said('conf') == 'conf (from CEPH_ARGS)'
    # an option given to the module wins; CEPH_CONF is read when CEPH_ARGS has no -c, as `ceph` does
    s = CephSettings(unset(user='admin', cluster='ceph'), environ=dict(CEPH_CONF=str(other), CEPH_ARGS='--id=ops'))
    assert (s.conf, s.user, s.cluster, s.extra_args) == (str(other), 'admin', 'ceph', [])
    assert s.said('conf') == 'conf (from CEPH_CONF)' and s.said('user') == 'user'
    s = CephSettings(unset(), environ={})
    assert (s.conf, s.keyring, s.user, s.cluster, s.mon_host) == (None, None, 'admin', 'ceph', None)


@pytest.mark.parametrize('ceph_args, message', [
    ('-k', 'CEPH_ARGS: -k needs a value: nothing was done'),
    ('--name osd.0', 'CEPH_ARGS: --name osd.0 is not a client (client.<id>): nothing was done'),
    ('--id -x', 'user (from CEPH_ARGS) \'-x\' starts with "-"'),
])
def test_a_bad_ceph_args_is_named(ceph_args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        CephSettings(unset(), environ=dict(CEPH_ARGS=ceph_args))


def test_a_conf_from_the_environment_that_is_missing_says_where_it_came_from(tmp_path):
    with pytest.raises(CephConnectionError, match=re.escape('conf (from CEPH_CONF) file %s/none.conf does not exist'
                                                            % tmp_path)):
        CephSettings(unset(), environ=dict(CEPH_CONF=str(tmp_path / 'none.conf')))


def test_the_tools_get_only_what_the_settings_left_of_ceph_args(monkeypatch, tmp_path):
    """The ceph CLI appends CEPH_ARGS to its argv (the last option wins): an option given to the module
    must not be overridden by it, so the tools see only the rest."""
    keyring = tmp_path / 'k'
    keyring.write_text(u'')
    monkeypatch.setenv('CEPH_ARGS', '-k %s --id ops --rados_mon_op_timeout 7' % keyring)
    s = CephSettings(unset(user='admin'))
    assert s.user == 'admin' and s.keyring == str(keyring)
    assert s.tool_environment()['CEPH_ARGS'] == '--rados_mon_op_timeout 7'
    monkeypatch.setenv('CEPH_ARGS', '--id ops')
    assert 'CEPH_ARGS' not in CephSettings(unset()).tool_environment()

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 12: every Ceph module returns `versions`, on success and when connecting failed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.volfence.csi.plugins.module_utils._ceph import client as _ceph_client
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import CephConnectionError
from ansible_collections.volfence.csi.plugins.modules import ceph_blocklist, ceph_blocklist_info, rbd_lock, rbd_lock_info, rbd_watchers_info
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.ceph_fakes import FakeCluster

CONNECT_FAILED = dict(client=dict(backend='rados', version='16.2.15', release='pacific', error=None),
                      cluster=dict(version=None, release=None, versions=[], mixed=False,
                                   error='not connected: [errno 5] RADOS I/O error (error connecting to the cluster)'))

MODULES = [
    (ceph_blocklist_info, dict()),
    (ceph_blocklist, dict(addresses=['10.0.0.1'])),
    (rbd_watchers_info, dict(images=['rbd/img'])),
    (rbd_lock, dict(pool='rbd', image='img')),
    (rbd_lock_info, dict(image_spec='rbd/img')),
]


def run(module, args, monkeypatch, capsys, connect):
    monkeypatch.setattr(_ceph_client, 'connect', connect)
    with patch_module_args(dict(args, _ansible_check_mode=True)):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize('module, args', MODULES)
def test_connect_failure_returns_both_versions_and_the_backend(module, args, monkeypatch, capsys):
    def fail(params, tmpdir=None):
        raise CephConnectionError('cannot connect as client.admin: the key in k is an aes256k key', rc=5,
                                  stderr='[errno 5] RADOS I/O error', versions=CONNECT_FAILED)
    out = run(module, args, monkeypatch, capsys, fail)
    assert out['failed'] and out['msg'].startswith('cannot connect as client.admin')
    assert out['versions'] == CONNECT_FAILED and out['backend'] == 'rados'
    assert not out.get('changed')


def test_success_returns_the_versions_read_after_connecting(monkeypatch, capsys):
    cluster = FakeCluster()
    out = run(ceph_blocklist_info, {}, monkeypatch, capsys, lambda params, tmpdir=None: cluster)
    assert not out.get('failed') and out['versions'] == FakeCluster.known_versions
    out = run(ceph_blocklist, dict(addresses=['10.0.0.1']), monkeypatch, capsys, lambda params, tmpdir=None: cluster)
    assert not out.get('failed') and out['versions'] == FakeCluster.known_versions

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import tempfile

import pytest


@pytest.fixture(autouse=True)
def no_ceph_environment(monkeypatch):
    """The Ceph modules read CEPH_ARGS and CEPH_CONF as Ceph's tools do: a shell that sourced a lab's
    env file must not change what a unit test sees. Tests of that reading set them themselves."""
    monkeypatch.delenv('CEPH_ARGS', raising=False)
    monkeypatch.delenv('CEPH_CONF', raising=False)


@pytest.fixture(scope='session', autouse=True)
def temporary_files_in_pytests_folder(tmp_path_factory):
    """A module run as patch_module_args runs it (no _ansible_remote_tmp) makes its AnsibleModule.tmpdir in
    tempfile's folder and leaves its removal to the interpreter's exit, which ansible-test's unit runs never
    reached: each `make test` left 116 empty ansible-moduletmp-* folders in /tmp (58 a Python). In pytest's
    own folder instead, which pytest prunes."""
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp('tmp'))
    yield
    tempfile.tempdir = before

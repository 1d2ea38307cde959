# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest


@pytest.fixture(autouse=True)
def no_ceph_environment(monkeypatch):
    """The Ceph modules read CEPH_ARGS and CEPH_CONF as Ceph's tools do: a shell that sourced a lab's
    env file must not change what a unit test sees. Tests of that reading set them themselves."""
    monkeypatch.delenv('CEPH_ARGS', raising=False)
    monkeypatch.delenv('CEPH_CONF', raising=False)

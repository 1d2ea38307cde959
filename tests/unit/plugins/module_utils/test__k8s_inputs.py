# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 17 item 6: a kubeconfig or API that cannot be used is named, with the reason."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import socket

import urllib3

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import kubeconfig_problem, transport_reason


def test_kubeconfig_problems(tmp_path):
    folder = str(tmp_path)
    assert kubeconfig_problem('/no/such', 'kubeconfig option') == (
        'kubeconfig /no/such does not exist (from the kubeconfig option); nothing was done')
    assert kubeconfig_problem(folder, 'kubeconfig option') == (
        'kubeconfig %s is not a file (a directory?) (from the kubeconfig option); nothing was done' % folder)
    path = tmp_path / 'config'
    path.write_text(u'apiVersion: v1\n')
    assert 'is not readable by this user' in kubeconfig_problem(str(path), 'x', access=lambda p, m: False)
    assert kubeconfig_problem(str(path), 'x') is None
    assert kubeconfig_problem('/no/such:%s' % path, 'x') is None          # one usable path is enough
    assert '/no/such does not exist; %s is not a file' % folder in kubeconfig_problem('/no/such:' + folder, 'x')


def test_transport_reasons():
    refused = urllib3.exceptions.NewConnectionError(None, 'Failed to establish a new connection: [Errno 111] '
                                                          'Connection refused')
    assert transport_reason(urllib3.exceptions.MaxRetryError(None, '/x', refused)).startswith('connection refused')
    assert transport_reason(ConnectionRefusedError(errno.ECONNREFUSED, 'Connection refused')).startswith(
        'connection refused')
    assert transport_reason(socket.gaierror(-2, 'Name or service not known')).startswith(
        'its host name does not resolve')
    assert transport_reason(urllib3.exceptions.ReadTimeoutError(None, '/x', 'Read timed out.')).startswith(
        'no answer within request_timeout')
    assert transport_reason(urllib3.exceptions.SSLError('certificate verify failed')).startswith('TLS failed')
    assert transport_reason(OSError('boom')) == 'the connection failed: boom'

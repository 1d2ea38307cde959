# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fencing readiness (module_utils/_decisions/readiness.py) as a filter: the readiness playbook joins the
Kubernetes checks of fencing_readiness_info and the Ceph side's answer, and decides nothing in Jinja."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.module_utils._decisions import readiness as _readiness


def fencing_readiness(k8s_checks, ceph_result=None, fail_on='fail', probe_added=None, probe_removed=None):
    if not isinstance(k8s_checks, list):
        raise AnsibleFilterError('fencing_readiness: the Kubernetes checks must be a list, got %s'
                                 % type(k8s_checks).__name__)
    if fail_on not in ('fail', 'warn', 'never'):
        raise AnsibleFilterError('fencing_readiness: fail_on must be fail, warn or never, got %r' % (fail_on,))
    return _readiness.report(k8s_checks, ceph_result, fail_on, probe_added, probe_removed)


class FilterModule(object):
    def filters(self):
        return {'fencing_readiness': fencing_readiness}

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


def fencing_readiness(k8s_checks, *, ceph_result=None, fail_on='fail', probe_added=None, probe_removed=None,
                      failed_step=None):
    """failed_step: the step that failed on its host (the failed_step filter), when one did; the
    Kubernetes checks are then null when the Kubernetes side was not read."""
    if k8s_checks is None and failed_step:
        k8s_checks = []
    if not isinstance(k8s_checks, list):
        raise AnsibleFilterError('fencing_readiness: the Kubernetes checks must be a list, got %s'
                                 % type(k8s_checks).__name__)
    if fail_on not in ('fail', 'warn', 'never'):
        raise AnsibleFilterError('fencing_readiness: fail_on must be fail, warn or never, got %r' % (fail_on,))
    if failed_step is not None and not isinstance(failed_step, dict):
        raise AnsibleFilterError('fencing_readiness: failed_step must be a mapping (host, step, reason), got %s'
                                 % type(failed_step).__name__)
    return _readiness.report(k8s_checks, ceph_result=ceph_result, fail_on=fail_on, probe_added=probe_added,
                             probe_removed=probe_removed, failed_step=failed_step)


class FilterModule(object):
    def filters(self):
        return {'fencing_readiness': fencing_readiness}

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what the Ceph and the Kubernetes errors share, a message and the details a
module fails with. Standard library only (the Ceph layer imports no Ansible)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class DetailedError(Exception):
    """An error a module reports whole: `msg`, and each detail of FAIL_DETAILS ((attribute, fail_json
    key) pairs, set by the subclass) that is known."""

    FAIL_DETAILS = ()

    def __init__(self, msg):
        super(DetailedError, self).__init__(msg)
        self.msg = msg

    def fail_kwargs(self):
        """Keyword arguments for AnsibleModule.fail_json(): msg and the details that are not None."""
        out = dict(msg=self.msg)
        for name, key in self.FAIL_DETAILS:
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        return out

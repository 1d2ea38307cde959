# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A playbook's report as the job's artifact (set_stats): what an AWX job keeps after its
execution environment is gone."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError

# AWX keeps artifacts in its database and shows them in the job's details: the whole report goes
# in when its JSON is at most this many characters, the summary always.
DEFAULT_LIMIT = 100000


def job_artifact(report, summary=None, report_path=None, limit=DEFAULT_LIMIT):
    if not isinstance(report, dict):
        raise AnsibleFilterError('job_artifact: the report must be a mapping, got %s' % type(report).__name__)
    lines = [summary] if isinstance(summary, str) else list(summary or [])
    artifact = dict(summary=lines, report_path=report_path)
    text = json.dumps(report, sort_keys=True, default=str)
    if len(text) <= int(limit):
        artifact.update(report=json.loads(text), truncated=False)
    else:
        artifact.update(truncated=True, report_size=len(text))
    return artifact


class FilterModule(object):
    def filters(self):
        return {'job_artifact': job_artifact}

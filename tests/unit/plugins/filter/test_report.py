# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report as a job artifact (plugins/filter/report.py)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.report import job_artifact


def test_a_report_that_fits_is_kept_whole_with_its_summary():
    report = {'failed_node': 'node-b', 'pods_force_deleted': ['web-0'], 'fence_plan': {'fence': ['10.0.0.2:0/1']}}
    artifact = job_artifact(report, ['fenced (blocklist, I1): [10.0.0.2:0/1]'], '/srv/r.json')
    assert artifact == {'summary': ['fenced (blocklist, I1): [10.0.0.2:0/1]'], 'report_path': '/srv/r.json',
                        'report': report, 'truncated': False}
    assert json.loads(json.dumps(artifact)) == artifact


def test_a_report_too_large_leaves_the_summary_and_says_so():
    report = {'pods': ['pod-%05d' % i for i in range(20000)]}
    size = len(json.dumps(report, sort_keys=True))
    artifact = job_artifact(report, 'one table', None, limit=size - 1)
    assert artifact == {'summary': ['one table'], 'report_path': None, 'truncated': True, 'report_size': size}
    assert job_artifact(report, [], None, limit=size)['truncated'] is False


def test_values_that_are_not_json_become_text_and_bad_input_is_named():
    artifact = job_artifact({'when': object.__name__, 'n': 1}, None)
    assert artifact['report'] == {'when': 'object', 'n': 1} and artifact['summary'] == []
    with pytest.raises(AnsibleFilterError, match='the report must be a mapping, got list'):
        job_artifact(['not', 'a', 'report'])

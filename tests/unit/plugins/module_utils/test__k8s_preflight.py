# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import replacement_pods


def pod(name, generate=None, phase='Running', deleting=False):
    meta = {'name': name}
    if generate:
        meta['generateName'] = generate
    if deleting:
        meta['deletionTimestamp'] = '2026-11-23T00:00:00Z'
    return {'metadata': meta, 'status': {'phase': phase}}


def test_the_replacement_of_a_deployment_pod_is_found_by_its_generate_name():
    pods = [pod('web-5d9f7c6b8-x2k4q', 'web-5d9f7c6b8-', 'Pending'), pod('web-5d9f7c6b8-b7zzt', 'web-5d9f7c6b8-'),
            pod('web-6f00000000-abcde', 'web-6f00000000-'), pod('web-5d9f7c6b8-old42', 'web-5d9f7c6b8-', deleting=True),
            pod('other-0')]
    found = replacement_pods('web-5d9f7c6b8-h9vpl', pods)
    assert [p['metadata']['name'] for p in found] == ['web-5d9f7c6b8-b7zzt', 'web-5d9f7c6b8-x2k4q']


def test_no_replacement_for_names_not_generated():
    pods = [pod('web-0', 'web-'), pod('index-api-abcde', 'index-api-')]
    assert replacement_pods('web-1', pods) == [], 'a StatefulSet pod keeps its name'
    assert replacement_pods('index-api-aeiou', pods) == [], 'vowels are never in a generated suffix'
    assert replacement_pods('index-api', pods) == []
    assert replacement_pods('web-5d9f7c6b8-h9vpl', None) == []

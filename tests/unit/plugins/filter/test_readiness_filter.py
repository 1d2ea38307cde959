# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fencing_readiness filter (plugins/filter/readiness.py): named inputs, and a step that failed on its host."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.readiness import fencing_readiness

K8S_GONE = {'host': 'k8s-api', 'step': 'Readiness | the Kubernetes side', 'task': 'Reach the host',
            'reason': 'unreachable: Connection refused'}


def test_the_kubernetes_side_not_read_is_the_failed_step_and_nothing_else():
    out = fencing_readiness(None, fail_on='fail', failed_step=K8S_GONE)
    assert [c['check'] for c in out['checks']] == ['failed-step'] and out['failed']
    assert 'k8s-api' in out['checks'][0]['detail']


def test_the_inputs_are_named_and_checked():
    with pytest.raises(TypeError):
        fencing_readiness([], None, 'fail')  # pylint: disable=too-many-function-args
    with pytest.raises(AnsibleFilterError, match='the Kubernetes checks must be a list'):
        fencing_readiness(None)
    with pytest.raises(AnsibleFilterError, match='failed_step must be a mapping'):
        fencing_readiness([], failed_step='k8s-api')
    with pytest.raises(AnsibleFilterError, match='fail_on must be fail, warn or never'):
        fencing_readiness([], fail_on='sometimes')

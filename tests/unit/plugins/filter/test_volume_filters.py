# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters that report a node's volumes (issue 17): what the playbooks call, with what they pass."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.filter.diagnose import FilterModule as DiagnoseFilters
from ansible_collections.volfence.csi.plugins.filter.safety import FilterModule as SafetyFilters

SAFETY = SafetyFilters().filters()
DIAGNOSE = DiagnoseFilters().filters()

PODS = [dict(metadata=dict(name='ebs-pod', namespace='ns', deletionTimestamp='2026-03-04T11:59:00Z'),
             spec=dict(nodeName='node-b', volumes=[dict(name='d', persistentVolumeClaim=dict(claimName='ebs'))]))]
PVCS = [dict(metadata=dict(name='ebs', namespace='ns'), spec=dict(volumeName='pv-ebs'))]
PVS = [dict(metadata=dict(name='pv-ebs'), spec=dict(csi=dict(driver='ebs.csi.aws.com', volumeHandle='vol-1')))]
VAS = [dict(metadata=dict(name='va-ebs'), spec=dict(attacher='ebs.csi.aws.com', nodeName='node-b',
                                                    source=dict(persistentVolumeName='pv-ebs'))),
       dict(metadata=dict(name='va-gone'), spec=dict(attacher='ebs.csi.aws.com', nodeName='node-b',
                                                     source=dict(persistentVolumeName='pv-gone')))]
NODES = [dict(metadata=dict(name='node-b'), status=dict(conditions=[dict(type='Ready', status='Unknown')]))]


def test_failover_filters_report_a_volume_of_another_driver_as_kept_attached():
    volumes = SAFETY['node_volumes'](PODS, node='node-b', pvcs=PVCS, pvs=PVS, attachments=VAS)
    plan = SAFETY['failover_release_plan'](
        volumes, failed_nodes='node-b', pods=PODS, fence_method='blocklist', watchers=[], missing=[], fence={},
        watchers_after=[], fenced_cidrs=[], networkfence_results=[], out_of_service_taint=False)
    assert plan['remove_attachments'] == [] and plan['delete_pods'] == []
    assert [(v['name'], v['action']) for v in plan['not_rbd']] == [('pv-ebs', 'kept attached'), ('pv-gone', 'kept attached')]
    tainted = SAFETY['failover_release_plan'](volumes, failed_nodes='node-b', pods=PODS, out_of_service_taint=True)
    assert tainted['remove_attachments'] == ['va-ebs']


def test_node_volume_report_filter():
    report = SAFETY['node_volume_report'](PODS, nodes='node-b', pvcs=PVCS, pvs=PVS, attachments=VAS)
    assert [v['name'] for v in report] == ['pv-ebs', 'pv-gone']
    assert 'neither fenced nor detached' in report[0]['note']
    assert SAFETY['node_volume_report'](None, nodes='node-b') == []
    with pytest.raises(AnsibleFilterError, match='pvs must be a list'):
        SAFETY['node_volume_report'](PODS, nodes='node-b', pvcs=PVCS, pvs='pv-ebs', attachments=VAS)


def test_down_node_volumes_and_the_table():
    down = DIAGNOSE['down_node_volumes'](NODES, PODS, PVCS, PVS, VAS)
    assert [d['node'] for d in down] == ['node-b'] and len(down[0]['volumes']) == 2
    lines = DIAGNOSE['diagnosis_table']([], down)
    assert 'node node-b (Ready=Unknown) holds 2 volume(s):' in lines
    assert DIAGNOSE['diagnosis_table']([]) == DIAGNOSE['diagnosis_table']([], None)
    with pytest.raises(AnsibleFilterError, match='must be a list of Node objects'):
        DIAGNOSE['down_node_volumes']({'items': []})

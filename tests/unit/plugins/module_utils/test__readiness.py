# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fencing readiness, check by check: a ready cluster passes; each failure the field reports (no
CSIAddonsNode, a Failed one, no NetworkFenceClass, a fence with an outdated CIDR, two nodes sharing an
address, an old Kubernetes, an unreachable Ceph) is named with its fix."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import plan as node_fences_plan
from ansible_collections.volfence.csi.plugins.module_utils._decisions.readiness import (
    address_checks, ceph_checks, ceph_csi_checks, csi_addons_checks, node_fences_check, overall, probe_check, report, version_check)

DRIVER = 'rbd.csi.ceph.com'


def node(name, ip, ready='True'):
    return {'metadata': {'name': name},
            'status': {'addresses': [{'type': 'InternalIP', 'address': ip}] if ip else [],
                       'conditions': [{'type': 'Ready', 'status': ready}]}}


NODES = [node('node-a', '10.0.0.11'), node('node-b', '10.0.0.12'), node('node-c', '10.0.0.13')]
CLASSES = {'rbd-fence': {'metadata': {'name': 'rbd-fence'}, 'spec': {'provisioner': DRIVER}}}


def addons(name, node_id, state='Connected', driver=DRIVER):
    return dict(name=name, namespace='rook-ceph', driver=driver, node_id=node_id, state=state, message=None)


ADDONS = [addons('csi-rbdplugin-provisioner-5f6c-x', 'node-a')] + [
    addons('csi-rbdplugin-%s' % n['metadata']['name'], n['metadata']['name']) for n in NODES]


def fences_of(nodes):
    """The fences the node_fences role makes for `nodes` (its own plan), as the API returns them."""
    out = []
    for entry in node_fences_plan(nodes, [], state='present')['entries']:
        out.append({'metadata': {'name': entry['name'], 'labels': entry['labels']},
                    'spec': {'cidrs': entry['cidrs'], 'fenceState': 'Unfenced'}})
    return out


def verdicts(checks):
    return dict((c['check'], c['verdict']) for c in checks)


def test_a_ready_cluster_passes_every_check():
    checks = ([version_check('v1.31.2')] + address_checks(NODES)
              + csi_addons_checks(NODES, DRIVER, fences_served=True, classes=CLASSES, addons_served=True, addons_nodes=ADDONS)
              + [node_fences_check(NODES, fences_of(NODES))])
    assert set(verdicts(checks).values()) == {'pass'}, checks
    assert overall(checks) == 'pass' and all(c['fix'] is None for c in checks)


def test_old_kubernetes_is_a_warning_with_the_reason():
    check = version_check('v1.23.5+vmware.1')
    assert check['verdict'] == 'warn' and 'does not detach volumes before 1.26' in check['detail']
    assert 'attachment-name collision' in check['detail'] and 'upgrade Kubernetes' in check['fix']
    assert 'attachment-name' not in version_check('v1.25.0')['detail']
    assert version_check(None)['verdict'] == 'warn'


def test_two_nodes_sharing_an_address_fail_and_an_addressless_node_warns():
    checks = verdicts(address_checks(NODES + [node('node-d', '10.0.0.12'), node('node-e', None)]))
    assert checks == {'node-addresses': 'warn', 'node-address-sharing': 'fail'}
    detail = address_checks(NODES + [node('node-d', '10.0.0.12')])[1]['detail']
    assert detail == 'addresses listed by more than one node: 10.0.0.12 (node-b, node-d)'


def test_no_csi_addons_only_warns_the_blocklist_still_works():
    checks = csi_addons_checks(NODES, DRIVER, fences_served=False, classes={}, addons_served=False, addons_nodes=[])
    assert verdicts(checks) == {'csi-addons': 'warn'} and 'blocklist method does not need it' in checks[0]['detail']


def test_missing_class_and_no_csiaddonsnode_for_the_driver():
    checks = csi_addons_checks(NODES, DRIVER, fences_served=True, classes={}, addons_served=True,
                               addons_nodes=[addons('other', 'node-a', driver='cephfs.csi.ceph.com')])
    assert verdicts(checks) == {'csi-addons': 'pass', 'networkfence-class': 'warn', 'csiaddonsnode': 'fail'}
    assert 'no connections for driver' in checks[2]['detail'] and 'csi_addons_sidecar' in checks[2]['fix']


def test_a_failed_controller_and_a_node_without_its_csiaddonsnode():
    sidecars = [addons('csi-rbdplugin-provisioner-5f6c-x', 'node-a', state='Failed'),
                addons('csi-rbdplugin-node-a', 'node-a'), addons('csi-rbdplugin-node-b', 'node-b', state='Failed')]
    nodes = NODES + [node('node-down', '10.0.0.99', ready='Unknown')]  # a node that is not Ready is not expected
    checks = csi_addons_checks(nodes, DRIVER, fences_served=True, classes=CLASSES, addons_served=True, addons_nodes=sidecars)
    assert verdicts(checks)['csiaddonsnode-controller'] == 'fail' and verdicts(checks)['csiaddonsnode'] == 'pass'
    nodes_check = checks[-1]
    assert nodes_check['verdict'] == 'warn'
    assert nodes_check['detail'] == ('Ready nodes without a CSIAddonsNode for rbd.csi.ceph.com: node-c; '
                                     'not Connected: node-b (Failed)')


def test_outdated_cidr_fails_and_fenced_or_missing_fences_warn():
    fences = fences_of(NODES)
    moved = [node('node-a', '10.0.0.11'), node('node-b', '10.0.0.42'), node('node-c', '10.0.0.13')]
    check = node_fences_check(moved, fences)
    assert check['verdict'] == 'fail'
    assert 'volfence-node-b has 10.0.0.12/32, the node now 10.0.0.42/32' in check['detail']
    fences[0]['spec']['fenceState'] = 'Fenced'
    check = node_fences_check(NODES + [node('node-d', '10.0.0.14')], fences)
    assert check['verdict'] == 'warn'
    assert 'already Fenced: volfence-node-a' in check['detail'] and 'nodes without a fence: volfence-node-d' in check['detail']
    assert node_fences_check(NODES, [])['verdict'] == 'warn'


def test_ceph_checks_from_blocklist_info():
    good = dict(backend='rados', total=2, range_supported=True,
                versions=dict(client=dict(release='tentacle', version='20.2.4'),
                              cluster=dict(release='tentacle', version='20.2.4', versions=['20.2.4'], mixed=False,
                                           error=None)))
    assert set(verdicts(ceph_checks(good)).values()) == {'pass'}
    mixed = dict(good, range_supported=False, versions=dict(good['versions'], cluster=dict(
        good['versions']['cluster'], mixed=True, versions=['18.2.7', '20.2.4'])))
    assert verdicts(ceph_checks(mixed)) == {'ceph-connection': 'pass', 'ceph-versions': 'warn',
                                            'ceph-range-fence': 'warn'}
    failed = ceph_checks(dict(failed=True, msg='error connecting to the cluster: timed out'))
    assert failed[0]['verdict'] == 'fail' and 'timed out' in failed[0]['detail'] and 'keyring' in failed[0]['fix']


def test_fence_permission_probe():
    ok = dict(changed=True, actions=[])
    assert probe_check(ok, ok)['verdict'] == 'pass'
    denied = probe_check(dict(failed=True, msg='[errno 13] RADOS permission denied'), dict(skipped=True))
    assert denied['verdict'] == 'fail' and 'permission denied' in denied['detail'] and "profile rbd" in denied['fix']
    stuck = probe_check(ok, dict(failed=True, msg='access denied'))
    assert stuck['verdict'] == 'warn' and 'could not be removed' in stuck['detail'] and 'expires' in stuck['fix']
    for skipped in (None, dict(skipped=True, changed=False)):
        assert probe_check(skipped, skipped)['verdict'] == 'warn'


def test_report_joins_the_sides_and_fails_from_the_chosen_verdict():
    k8s = [version_check('v1.31.2'), version_check('v1.22.1')]
    ceph = dict(backend='cli', total=0, range_supported=True,
                versions=dict(client={}, cluster=dict(release='tentacle', version='20.2.4', mixed=False, error=None)))
    ok = dict(changed=True)
    out = report(k8s, ceph, 'fail', ok, ok)
    assert [c['check'] for c in out['checks']] == ['kubernetes-version', 'kubernetes-version', 'ceph-connection',
                                                   'ceph-versions', 'ceph-range-fence', 'ceph-fence-permission']
    assert out['verdict'] == 'warn' and out['counts'] == {'pass': 5, 'warn': 1, 'fail': 0} and not out['failed']
    assert report(k8s, ceph, 'warn', ok, ok)['failed'] and not report(k8s, ceph, 'never', ok, ok)['failed']
    assert out['summary'][0] == 'fencing readiness: WARN, 5 pass, 1 warn, 0 fail'
    assert out['summary'][2].startswith('WARN kubernetes-version: v1.22.1') and '-> fix: upgrade' in out['summary'][2]
    # no Ceph side: said, not hidden; an unreachable Ceph: its failure, and no probe check without a connection
    assert report(k8s[:1], None)['checks'][-1]['check'] == 'ceph'
    down = report(k8s[:1], dict(failed=True, msg='timed out'))
    assert down['failed'] and [c['check'] for c in down['checks']] == ['kubernetes-version', 'ceph-connection']


def test_a_step_that_failed_on_its_host_is_a_failed_check_and_no_side_it_kept_from_running_is_missing():
    k8s = [version_check('v1.31.2')]
    ceph_gone = dict(host='ceph-admin', step='Readiness | the Ceph side', reason='unreachable: Connection refused')
    out = report(k8s, None, 'never', failed_step=ceph_gone)
    assert [c['check'] for c in out['checks']] == ['kubernetes-version', 'failed-step']
    failed = out['checks'][-1]
    assert failed['verdict'] == 'fail' and 'Readiness | the Ceph side failed on ceph-admin' in failed['detail']
    assert 'unreachable: Connection refused' in failed['detail'] and 'ceph-admin' in failed['fix']
    assert out['verdict'] == 'fail' and not out['failed']  # fail_on=never: the playbook fails the run itself
    k8s_gone = dict(host='k8s-api', step='Readiness | the Kubernetes side', reason='failed: no Python')
    assert [c['check'] for c in report([], None, failed_step=k8s_gone)['checks']] == ['failed-step']


def controller(name, args, driver=DRIVER):
    return {'metadata': {'name': name, 'namespace': 'rook-ceph'},
            'spec': {'template': {'spec': {'containers': [
                {'name': 'csi-provisioner', 'args': ['--csi-address=$(ADDRESS)']},
                {'name': 'csi-rbdplugin', 'args': ['--drivername=%s' % driver, '--type=rbd', '--controllerserver=true']
                 + args}]}}}}


CSIDRIVERS = [{'metadata': {'name': DRIVER}, 'spec': {'attachRequired': True}}]
CLASSES_SC = [{'metadata': {'name': 'ceph-rbd'}, 'provisioner': DRIVER,
               'parameters': {'csi.storage.k8s.io/controller-publish-secret-name': 'csi-rbd-provisioner',
                              'csi.storage.k8s.io/controller-publish-secret-namespace': 'rook-ceph'}}]


def test_ceph_csi_with_fencing_on_passes():
    checks = ceph_csi_checks(DRIVER, CSIDRIVERS, CLASSES_SC, [controller('csi-rbdplugin-provisioner',
                                                                         ['--enable-fencing=true'])])
    assert set(verdicts(checks).values()) == {'pass'}, checks
    assert checks[2]['fences'] == ['volfence.csi node_failover', 'ceph-csi on detach (out-of-service taint)']
    assert checks[2]['unfences'] == ['volfence.csi node_recover', 'ceph-csi through CSI-Addons (GetFenceClients)']
    operator = [{'metadata': {'name': DRIVER}, 'spec': {'enableFencing': True}}]
    assert verdicts(ceph_csi_checks(DRIVER, CSIDRIVERS, CLASSES_SC, [], operator))['ceph-csi-fencing'] == 'pass'


def test_ceph_csi_without_fencing_warns_that_only_the_collection_fences_and_each_missing_setting_is_named():
    checks = ceph_csi_checks(DRIVER, [{'metadata': {'name': DRIVER}, 'spec': {'attachRequired': False}}],
                             [dict(CLASSES_SC[0], parameters={})],
                             [controller('csi-rbdplugin-provisioner', []),
                              controller('other', ['--enable-fencing'], driver='cephfs.csi.ceph.com')])
    assert verdicts(checks) == {'csidriver': 'warn', 'controller-publish-secret': 'warn', 'ceph-csi-fencing': 'warn'}
    assert 'rook-ceph/csi-rbdplugin-provisioner' in checks[2]['detail'] and '--enable-fencing=true' in checks[2]['fix']
    assert checks[2]['fences'] == ['volfence.csi node_failover'] and checks[2]['unfences'] == ['volfence.csi node_recover']
    assert 'ceph-rbd' in checks[1]['detail']
    nothing = verdicts(ceph_csi_checks(DRIVER, [], [], []))
    assert nothing == {'csidriver': 'fail', 'controller-publish-secret': 'warn', 'ceph-csi-fencing': 'warn'}

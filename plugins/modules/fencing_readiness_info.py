#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: fencing_readiness_info
short_description: Would fencing a node work if it died now? The Kubernetes side, check by check
version_added: 0.3.0
description:
  - Reads the cluster once (the server version, every Node, CSIDriver, StorageClass and Deployment, ceph-csi-operator's
    Drivers when served, and when CSI-Addons is installed every NetworkFence, NetworkFenceClass and CSIAddonsNode)
    and answers, check by check, whether each fencing path of the collection would work on the cluster it points
    at, with what to fix for each check that does not pass.
  - C(kubernetes-version) - the out-of-service taint detaches volumes (1.26 and later); before 1.24, the
    attachment-name collision.
  - C(node-addresses), C(node-address-sharing) - every node has an address of O(address_types), and no two nodes
    share one (invariant I1 never fences a shared address).
  - C(csidriver), C(controller-publish-secret), C(ceph-csi-fencing) - the driver's CSIDriver requires attachment, its
    StorageClasses name the controller-publish secret, and who fences and unfences on this cluster (C(fences) and
    C(unfences) of the check) - with fencing on in its controller plugin (C(--enable-fencing) on the cephcsi
    container of a Deployment with C(--controllerserver=true) and C(--drivername=<driver>), or ceph-csi-operator's
    C(Driver.spec.enableFencing)) ceph-csi also fences on detach under the out-of-service taint, and node_recover
    lifts its entries with the failover's; with it off, only node_failover fences (V(warn)).
  - C(csi-addons), C(networkfence-class), C(csiaddonsnode), C(csiaddonsnode-controller), C(csiaddonsnode-nodes) -
    the NetworkFence API, a NetworkFenceClass for O(driver), the CSIAddonsNodes that carry fence requests (without
    any, a NetworkFence fails with "no connections for driver"), the controller plugin's one Connected (found by
    its name), one Connected per Ready node.
  - C(node-fences) - the C(volfence.csi.node_fences) role's pre-created fences of O(node_fences_set), one per
    node, Unfenced, with the node's current addresses (an outdated CIDR fences the wrong address).
  - C(kubernetes-rights) - the identity in use holds every Kubernetes right of O(rights), asked of the API server
    one by one (SelfSubjectAccessReview); each missing one is named as C(kubectl auth can-i) asks it, with what
    needs it. The collection ships these rights as ClusterRoles in C(rbac/kubernetes/).
  - Read-only. The C(volfence.csi.readiness) playbook adds the Ceph side and writes the report.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.k8s.ACTIONGROUP
options:
  driver:
    description:
      - The CSI driver whose volumes are fenced.
    type: str
    default: rbd.csi.ceph.com
  node_fences_set:
    description:
      - The set of the C(volfence.csi.node_fences) role's fences to check (its C(node_fences_set)).
    type: str
    default: default
  node_fences_name_prefix:
    description:
      - The name prefix of those fences (the role's C(node_fences_name_prefix)).
    type: str
    default: volfence-
  address_types:
    description:
      - The node address types that count as a node's own (those the failover fences).
    type: list
    elements: str
    default: [InternalIP]
  rights:
    description:
      - The duty whose Kubernetes rights the C(kubernetes-rights) check asks for. V(failover) - what the playbooks
        that act need (C(rbac/kubernetes/volfence-failover.yml), which includes the read-only rights); V(read) - what
        diagnose, readiness and the event source need (C(rbac/kubernetes/volfence-read.yml)); V(none) - no check.
    type: str
    choices: [failover, read, none]
    default: failover
seealso:
  - module: volfence.csi.networkfence_info
  - module: volfence.csi.ceph_blocklist_info
'''

EXAMPLES = r'''
- name: Would fencing work if a node died now?
  volfence.csi.fencing_readiness_info:
  register: readiness

- name: The checks that do not pass, and their fix
  ansible.builtin.debug:
    msg: "{{ readiness.checks | rejectattr('verdict', 'equalto', 'pass') | list }}"

- name: With the read-only token of a diagnosis job - does it hold what diagnose and readiness need?
  volfence.csi.fencing_readiness_info:
    rights: read
  register: read_only

- name: The rights it lacks, as kubectl auth can-i asks them
  ansible.builtin.debug:
    var: read_only.missing_rights
'''

RETURN = r'''
checks:
  description: One entry per check, in the order above - C(check) (its name), C(verdict) (V(pass), V(warn) or
    V(fail)), C(detail) (what was found) and C(fix) (what to do; null on a pass). The C(ceph-csi-fencing) check
    also has C(fences) and C(unfences), the components that fence and unfence a lost node on this cluster.
  returned: always
  type: list
  elements: dict
  sample: [{check: node-address-sharing, verdict: fail, detail: "addresses listed by more than one node: 10.0.0.5
            (worker2, worker5)", fix: "never fenced (invariant I1): give each node an address of its own"}]
missing_rights:
  description: The rights of O(rights) the identity lacks, each as C(kubectl auth can-i) asks it; empty when it holds
    them all or O(rights=none).
  returned: always
  type: list
  elements: str
  sample: ["kubectl auth can-i patch nodes --all-namespaces"]
verdict:
  description: The worst verdict of the checks.
  returned: always
  type: str
  sample: warn
server_version:
  description: The API server's C(gitVersion).
  returned: always
  type: str
  sample: v1.31.2
'''

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sError, connect, k8s_module, resource_path)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.networkfence_ops import NetworkFences
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import option_problems
from ansible_collections.volfence.csi.plugins.module_utils._decisions.readiness import (
    address_checks, ceph_csi_checks, csi_addons_checks, node_fences_check, overall, version_check)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.rights import (
    review_attributes, rights_check, rights_for)


def main():
    module = k8s_module(
        argument_spec=dict(
            driver=dict(type='str', default='rbd.csi.ceph.com'),
            node_fences_set=dict(type='str', default='default'),
            node_fences_name_prefix=dict(type='str', default='volfence-'),
            address_types=dict(type='list', elements='str', default=['InternalIP']),
            rights=dict(type='str', choices=['failover', 'read', 'none'], default='failover'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = option_problems(dict(set=p['node_fences_set'], name_prefix=p['node_fences_name_prefix'],
                                    address_types=['checked below']), 'node_fences_')
    if not p['address_types'] or not all(t.strip() for t in p['address_types']):
        problems.append('address_types must name at least one address type (InternalIP, ExternalIP), none empty')
    if not p['driver'].strip():
        problems.append('driver must not be empty')
    if problems:
        module.fail_json(msg='; '.join(problems))
    try:
        api = connect(module)
        version = (api.server_version() or {}).get('gitVersion')
        nodes = api.list(resource_path('', 'v1', 'nodes'), what=('Node', None))
        ops = NetworkFences(api)
        fences_served = api.served('csiaddons.openshift.io', 'v1alpha1', 'networkfences')
        fences = list(ops.read_fences().values()) if fences_served else []
        classes = ops.read_classes() if fences_served else {}
        addons_served, addons = ops.addons_nodes()
        csidrivers = api.list(resource_path('storage.k8s.io', 'v1', 'csidrivers'), what=('CSIDriver', None))
        storageclasses = api.list(resource_path('storage.k8s.io', 'v1', 'storageclasses'), what=('StorageClass', None))
        deployments = api.list(resource_path('apps', 'v1', 'deployments'), what=('Deployment', None))
        operator_drivers = []
        if api.served('csi.ceph.io', 'v1', 'drivers'):
            operator_drivers = api.list(resource_path('csi.ceph.io', 'v1', 'drivers'), what=('Driver', None))
        answers = []
        if p['rights'] != 'none':
            for right in rights_for(p['rights']):
                review = api.create(resource_path('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews'),
                                    dict(apiVersion='authorization.k8s.io/v1', kind='SelfSubjectAccessReview',
                                         spec=dict(resourceAttributes=review_attributes(right))),
                                    what=('SelfSubjectAccessReview', None))
                answers.append((right, bool((review.get('status') or {}).get('allowed'))))
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())
    checks = [version_check(version)]
    checks.extend(address_checks(nodes, p['address_types']))
    checks.extend(ceph_csi_checks(p['driver'], csidrivers, storageclasses, deployments, operator_drivers))
    checks.extend(csi_addons_checks(nodes, p['driver'], fences_served=fences_served, classes=classes,
                                    addons_served=addons_served, addons_nodes=addons))
    if fences_served:
        checks.append(node_fences_check(nodes, fences, p['node_fences_set'], p['node_fences_name_prefix'],
                                        p['address_types']))
    missing = []
    if p['rights'] != 'none':
        checks.append(rights_check(p['rights'], answers))
        missing = checks[-1].pop('missing')
    module.exit_json(changed=False, checks=checks, verdict=overall(checks), server_version=version,
                     missing_rights=missing)


if __name__ == '__main__':
    main()

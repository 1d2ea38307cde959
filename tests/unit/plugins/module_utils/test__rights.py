# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes rights of each duty (_decisions/rights.py) and the RBAC the collection ships (rbac/kubernetes/):
the files grant every right of their duty and no rule that no right needs (issue 45)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.volfence.csi.plugins.module_utils._decisions.rights import (
    FAILOVER, READ, RIGHTS, can_i, review_attributes, rights_check, rights_for)

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))))


def shipped(duty):
    """{(kind, namespace): [rules]} of the roles the duty's file binds to its ServiceAccount, with those of the
    files it needs (the failover account is bound to the read-only roles too)."""
    objects = []
    for name in ('read', 'failover') if duty == FAILOVER else ('read',):
        with open(os.path.join(COLLECTION, 'rbac', 'kubernetes', 'volfence-%s.yml' % name)) as handle:
            document = yaml.safe_load(handle)
        assert document['kind'] == 'List'
        objects.extend(document['items'])
    account = 'volfence-' + duty
    roles = dict(((o['kind'], o['metadata'].get('namespace'), o['metadata']['name']), o.get('rules') or [])
                 for o in objects if o['kind'] in ('Role', 'ClusterRole'))
    granted = {}
    for binding in (o for o in objects if o['kind'] in ('RoleBinding', 'ClusterRoleBinding')):
        if not any(s['kind'] == 'ServiceAccount' and s['name'] == account for s in binding['subjects']):
            continue
        ref = binding['roleRef']
        namespace = binding['metadata'].get('namespace') if binding['kind'] == 'RoleBinding' else None
        rules = roles[(ref['kind'], namespace if ref['kind'] == 'Role' else None, ref['name'])]
        granted.setdefault(namespace, []).extend(rules)
    return granted


def allows(rule, right):
    resource = right['resource'] + ('/' + right['subresource'] if right['subresource'] else '')
    return (right['verb'] in rule['verbs'] and right['group'] in rule['apiGroups'] and resource in rule['resources']
            and (not rule.get('resourceNames') or right['name'] in rule['resourceNames']))


@pytest.mark.parametrize('duty', [READ, FAILOVER])
def test_the_shipped_files_grant_each_right_of_their_duty_and_nothing_else(duty):
    granted = shipped(duty)
    for right in rights_for(duty):
        # a cluster-wide grant, or a Role's in the right's own namespace
        rules = granted.get(None, []) + (granted.get(right['namespace'], []) if right['namespace'] else [])
        assert any(allows(rule, right) for rule in rules), can_i(right)
    for namespace, rules in granted.items():
        for rule in rules:
            for verb in rule['verbs']:
                for resource in rule['resources']:
                    for name in rule.get('resourceNames') or ['']:
                        needed = [r for r in rights_for(duty) if r['verb'] == verb and r['name'] == name
                                  and (r['resource'] + ('/' + r['subresource'] if r['subresource'] else '')) == resource
                                  and r['group'] in rule['apiGroups'] and (r['namespace'] or None) == namespace]
                        assert needed, 'no right of the %s duty needs %s %s %s in %s' % (
                            duty, verb, resource, name, namespace)


def test_failover_needs_the_read_rights_and_its_own():
    assert rights_for(READ) == [r for r in RIGHTS if r['duty'] == READ]
    assert rights_for(FAILOVER) == list(RIGHTS) and len(RIGHTS) > len(rights_for(READ))
    with pytest.raises(ValueError):
        rights_for('admin')


def test_each_right_is_asked_as_kubectl_and_a_review_would():
    [patch_nodes] = [r for r in RIGHTS if r['verb'] == 'patch' and r['resource'] == 'nodes']
    assert can_i(patch_nodes) == 'kubectl auth can-i patch nodes --all-namespaces'
    assert review_attributes(patch_nodes) == dict(verb='patch', resource='nodes')
    [status] = [r for r in RIGHTS if r['subresource'] == 'status']
    assert can_i(status) == 'kubectl auth can-i patch networkfences.csiaddons.openshift.io --subresource=status ' \
                            '--all-namespaces'
    leases = [r for r in RIGHTS if r['resource'] == 'leases' and r['verb'] == 'list']
    assert can_i(leases[0]) == 'kubectl auth can-i list leases.coordination.k8s.io -n kube-node-lease'
    assert review_attributes(leases[0]) == dict(verb='list', group='coordination.k8s.io', resource='leases',
                                                namespace='kube-node-lease')
    named = [r for r in RIGHTS if r['resource'] == 'configmaps' and r['verb'] == 'get']
    assert [can_i(r) for r in named] == ['kubectl auth can-i get configmaps/ceph-csi-config --all-namespaces',
                                         'kubectl auth can-i get configmaps/rook-ceph-csi-config --all-namespaces']


def test_the_rights_check_names_each_missing_right_and_what_needs_it():
    rights = rights_for(FAILOVER)
    passed = rights_check(FAILOVER, [(r, True) for r in rights])
    assert passed['verdict'] == 'pass' and passed['missing'] == [] and passed['fix'] is None
    missing = [r for r in rights if r['verb'] == 'patch' and r['resource'] == 'nodes']
    failed = rights_check(FAILOVER, [(r, r not in missing) for r in rights])
    assert failed['verdict'] == 'fail' and failed['missing'] == ['kubectl auth can-i patch nodes --all-namespaces']
    assert 'lacks 1 of the %d rights of the failover duty' % len(rights) in failed['detail']
    assert "the failover's record and taint on the node" in failed['detail']
    assert 'rbac/kubernetes/volfence-failover.yml' in failed['fix']

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the Kubernetes rights each duty of the collection needs (issue 45).

One list, read off the calls the code makes (plugins/module_utils/_k8s/ and the kubernetes.core tasks of the
playbooks): the shipped RBAC (rbac/kubernetes/) grants exactly these (tests/unit/plugins/module_utils/
test__rights.py), the lab's tests run the playbooks under it, and fencing_readiness_info asks the API server
(SelfSubjectAccessReview) for each one, naming the missing ones before an outage does.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.readiness import FAIL, PASS, check

READ, FAILOVER = 'read', 'failover'
DUTIES = (READ, FAILOVER)
LEASE_NAMESPACE = 'kube-node-lease'
# ceph-csi's ConfigMap of Ceph monitors, and Rook's (networkfence's default monitor_configmaps)
MONITOR_CONFIGMAPS = ('ceph-csi-config', 'rook-ceph-csi-config')


def _rights(duty, verbs, group, resources, *, why, subresource='', names=(), namespace=''):
    return [dict(duty=duty, verb=verb, group=group, resource=resource, subresource=subresource, name=name,
                 namespace=namespace, why=why)
            for resource in resources for verb in verbs for name in (names or ('',))]


# diagnose, readiness and the storage_incidents event source
_READ = (
    _rights(READ, ('get', 'list', 'watch'), '', ('nodes', 'pods', 'persistentvolumeclaims', 'persistentvolumes',
                                                 'events'),
            why='the failed nodes, their pods, claims and volumes, the pods\' Warning Events')
    + _rights(READ, ('get', 'list', 'watch'), 'storage.k8s.io', ('volumeattachments',), why='the attachments')
    + _rights(READ, ('list',), 'storage.k8s.io', ('csidrivers', 'storageclasses'), why='readiness: the CSI drivers')
    + _rights(READ, ('list',), 'apps', ('deployments',), why='readiness: the CSI controller plugins')
    + _rights(READ, ('list',), 'csi.ceph.io', ('drivers',), why='readiness: ceph-csi-operator\'s Drivers')
    + _rights(READ, ('get', 'list'), 'csiaddons.openshift.io', ('networkfences', 'networkfenceclasses',
                                                                'csiaddonsnodes'), why='the NetworkFences')
    + _rights(READ, ('get', 'list', 'watch'), 'coordination.k8s.io', ('leases',), why='the nodes\' heartbeats',
              namespace=LEASE_NAMESPACE)
)
# node_failover, node_recover, rbd_lock_cleanup, volumeattachment_cleanup, fuse_mount_recovery: the read rights too
_FAILOVER = (
    _rights(FAILOVER, ('patch',), '', ('nodes',), why='the failover\'s record and taint on the node, uncordon')
    + _rights(FAILOVER, ('delete',), '', ('pods',), why='force-delete or restart the pods')
    + _rights(FAILOVER, ('delete', 'patch'), 'storage.k8s.io', ('volumeattachments',),
              why='delete stale attachments (patch: force_detach)')
    + _rights(FAILOVER, ('create', 'patch'), 'csiaddons.openshift.io', ('networkfences',), why='fence and unfence')
    + _rights(FAILOVER, ('patch',), 'csiaddons.openshift.io', ('networkfences',),
              why='clear a fence\'s last result before waiting', subresource='status')
    + _rights(FAILOVER, ('get', 'list'), '', ('configmaps',), why='ceph-csi\'s Ceph monitors, which no fence may cut',
              names=MONITOR_CONFIGMAPS)
    + _rights(FAILOVER, ('create',), 'events.k8s.io', ('events',), why='the Events that tell each step')
)
RIGHTS = tuple(_READ + _FAILOVER)


def rights_for(duty):
    """The rights a duty needs: read's, and for failover read's and its own."""
    if duty not in DUTIES:
        raise ValueError('duty must be one of %s, got %r' % (', '.join(DUTIES), duty))
    return [r for r in RIGHTS if r['duty'] == READ or duty == FAILOVER]


def can_i(right):
    """The right as `kubectl auth can-i` asks it."""
    resource = right['resource'] + ('.' + right['group'] if right['group'] else '')
    words = ['kubectl auth can-i', right['verb'], resource + ('/' + right['name'] if right['name'] else '')]
    if right['subresource']:
        words.append('--subresource=' + right['subresource'])
    words.append('-n ' + right['namespace'] if right['namespace'] else '--all-namespaces')
    return ' '.join(words)


def review_attributes(right):
    """The resourceAttributes of the SelfSubjectAccessReview that asks for the right."""
    return dict((key, right[key]) for key in ('verb', 'group', 'resource', 'subresource', 'name', 'namespace')
                if right[key])


def rights_check(duty, answers):
    """The readiness check `kubernetes-rights`: answers is [(right, allowed)] for rights_for(duty)."""
    missing = [right for right, allowed in answers if not allowed]
    if not missing:
        return dict(check('kubernetes-rights', PASS, 'the identity holds the %d rights of the %s duty'
                          % (len(answers), duty)), missing=[])
    shipped = 'rbac/kubernetes/volfence-%s.yml' % duty
    detail = 'the identity lacks %d of the %d rights of the %s duty: %s' % (
        len(missing), len(answers), duty, '; '.join('%s (%s)' % (can_i(r), r['why']) for r in missing))
    return dict(check('kubernetes-rights', FAIL, detail,
                      'bind the identity to the ClusterRoles of %s, as shipped with the collection' % shipped),
                missing=[can_i(r) for r in missing])

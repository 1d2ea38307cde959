#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: volumeattachment
short_description: Delete stale CSI VolumeAttachments so a volume can attach elsewhere
version_added: 0.1.0
description:
  - Deletes C(storage.k8s.io/v1) VolumeAttachments selected by name (or a list of names), PersistentVolume, node
    and attacher (combined; at least one is required), by default only the stale ones, as
    M(volfence.csi.volumeattachment_info) assesses them. A VolumeAttachment left on a failed node keeps a
    ReadWriteOnce volume from attaching to the node where its pod now runs (C(Multi-Attach error)), and the
    pod stays in C(ContainerCreating).
  - Each DELETE carries the uid and resourceVersion of the attachment that was assessed as preconditions,
    so an attachment that changed meanwhile (or was re-created under the same name) is read and assessed
    again instead of being deleted blindly.
  - The external-attacher detaches the volume and removes its finalizer. When it cannot (its node is gone),
    O(force=true) removes that finalizer (C(external-attacher/<driver>)) once the deletion is older than
    O(force_grace), and only that finalizer.
  - With O(wait=true) (the default) the module returns once the attachments are gone.
  - Many attachments are handled in one call, at most O(parallel) at a time, each with every check above. When one
    cannot be handled, the others still are; the module then fails naming each one that failed and why, and a
    re-run finishes the job (attachments already gone are not selected again).
  - Deleting an attachment whose volume is in use on a healthy node detaches it under a running pod. That
    is why O(only_stale=true) is the default; attachments that are not stale are skipped and reported.
  - An attachment whose volume its Ready node lists in C(status.volumesInUse) (kubelet still uses it, or is
    still unmounting it) is never deleted and its finalizer never removed, not even with O(only_stale=false)
    or O(force=true); it is skipped and reported.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.k8s.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Reports the attachments that would be deleted and the finalizers that would be removed.
  diff_mode:
    support: full
    details:
      - The diff lists the selected attachments before and after.
options:
  state:
    description:
      - V(absent) is the only state; the module deletes attachments; creating them is the attach/detach
        controller's job.
    type: str
    choices: [absent]
    default: absent
  name:
    description:
      - Name of one VolumeAttachment. If it does not exist the module changes nothing and warns.
      - Mutually exclusive with O(names).
    type: str
  names:
    description:
      - Names of VolumeAttachments, handled in one call. Those that do not exist are named in a warning, not a
        failure (a re-run after a partial failure finds the deleted ones gone).
      - With more than ten names the attachments are read with one list request.
      - An empty list selects nothing.
      - Mutually exclusive with O(name).
    type: list
    elements: str
  persistent_volume:
    description:
      - Attachments of this PersistentVolume. The module fails if the PersistentVolume does not exist and
        no attachment refers to it.
    type: str
    aliases: [pv]
  node:
    description:
      - Attachments to this node.
      - A node that no longer exists is the usual reason attachments are stale; its attachments are selected
        without a warning. When no node of that name exists and no VolumeAttachment is to it (a typo), the
        module warns, listing the cluster's nodes, and selects nothing; it does not fail, since a node
        without attachments is a normal answer.
    type: str
  attacher:
    description:
      - Attachments of this CSI driver.
    type: str
    aliases: [driver]
  only_stale:
    description:
      - Delete only stale attachments (see M(volfence.csi.volumeattachment_info) for the reasons). Others are
        skipped and reported with a warning.
      - V(false) deletes every selected attachment, even one a pod on a Ready node uses, except those whose
        volume that Ready node lists in C(status.volumesInUse).
    type: bool
    default: true
  not_ready_grace:
    description:
      - Seconds a node must have been not Ready before its attachments are stale for that reason.
      - From 0 to 86400.
    type: int
    default: 300
  force:
    description:
      - Remove the external-attacher's finalizer (C(external-attacher/<driver with every character other
        than letters, digits and - as ->)) from an attachment whose deletion has been pending for
        O(force_grace) seconds. Other finalizers are left alone.
      - Only when the attacher cannot detach (its node is gone or fenced); the storage side may still
        consider the volume attached to the old node.
      - Never for an attachment whose volume its Ready node lists in C(status.volumesInUse).
    type: bool
    default: false
  force_grace:
    description:
      - Seconds a deletion must have been pending before O(force) removes the finalizer. With O(wait), the
        module waits for that moment (within O(wait_timeout)).
      - From 0 to 86400.
    type: int
    default: 60
  wait:
    description:
      - Wait until the deleted attachments are gone.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait. The module fails when an attachment is still there, saying what holds it.
      - From 0 to 86400.
    type: int
    default: 120
  wait_sleep:
    description:
      - Seconds between checks while waiting. With more than ten attachments to wait for, each check is one list
        request.
      - From 1 to 600.
    type: int
    default: 1
  parallel:
    description:
      - How many attachments are deleted (or their finalizer removed) at once.
      - From 1 to 256.
    type: int
    default: 16
seealso:
  - module: volfence.csi.volumeattachment_info
  - module: volfence.csi.networkfence
'''

EXAMPLES = r'''
- name: Delete the stale attachments of a PersistentVolume
  volfence.csi.volumeattachment:
    persistent_volume: pvc-0c5f4b2e-6d43-4e41-9d2a-3f1c8f0b9a11
    not_ready_grace: 60

- name: Preview what would be deleted on a failed node
  volfence.csi.volumeattachment:
    node: worker-3
  check_mode: true
  diff: true

- name: Delete an attachment the pre-1.24 detach left behind, removing the attacher's finalizer after 30 s
  volfence.csi.volumeattachment:
    name: csi-5f0d6c4b8e0c3a1f9e7d2b6a4c8e0f1a3b5d7c9e1f2a4b6c8d0e2f4a6b8c0d2e
    only_stale: false
    force: true
    force_grace: 30
    wait_timeout: 180

- name: Remove the stale attachments of the volumes a failover made safe, in one call
  volfence.csi.volumeattachment:
    names: "{{ release_plan.remove_attachments }}"
    not_ready_grace: 60
    parallel: 32
    wait_timeout: 300

- name: Same connection for every volfence.csi Kubernetes module
  module_defaults:
    group/volfence.csi.k8s:
      kubeconfig: /etc/kubernetes/admin.conf
  block:
    - name: Delete stale attachments of the rbd driver on worker-3
      volfence.csi.volumeattachment:
        node: worker-3
        attacher: rbd.csi.ceph.com
'''

RETURN = r'''
volumeattachments:
  description:
    - The selected attachments as M(volfence.csi.volumeattachment_info) reports them, each with what was done.
      With O(wait=true) the reports are those of the last read while waiting.
  returned: always
  type: list
  elements: dict
  contains:
    action:
      description: V(delete), V(remove_finalizer) (its deletion was stuck), V(wait) (its deletion was already
        in progress) or V(skip) (not stale).
      type: str
    why:
      description: The reason for the action.
      type: str
    changed:
      description: Whether the module changed (or in check mode would change) it.
      type: bool
    gone:
      description: Whether it no longer exists.
      type: bool
    finalizer_removed:
      description: The finalizer removed by O(force), when one was.
      type: str
    error:
      description: Why it could not be handled (the module then fails).
      type: str
deleted:
  description:
    - Names of the attachments this run deleted (in check mode, that would be deleted), including those whose
      attacher's finalizer it then removed.
  returned: always
  type: list
  elements: str
done:
  description:
    - Names of the attachments the module changed (deleted, or their finalizer removed), also when it fails
      on others.
  returned: always
  type: list
  elements: str
failures:
  description:
    - The attachments that could not be handled, each with C(name) and C(error) (empty on success). The module
      fails when there is any, and still returns RV(done) and C(changed).
  returned: always
  type: list
  elements: dict
  sample: [{name: csi-5f0d6c4b, error: "Failed to delete VolumeAttachment csi-5f0d6c4b: 500 InternalError"}]
kept:
  description: The selected attachments left alone because they are not stale, each with C(name) and C(why).
  returned: always
  type: list
  elements: dict
cluster_version:
  description: The API server's C(gitVersion), or null if it could not be read.
  returned: always
  type: str
diff:
  description: The names of the selected attachments before and after.
  returned: when diff mode is on
  type: dict
  sample: {before: {volumeattachments: [csi-1a2b]}, after: {volumeattachments: []}}
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._ranges import (
    MAX_PARALLEL,
    MAX_SLEEP_SECONDS,
    MAX_WAIT_SECONDS,
    check_range,
)

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import count_message
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import DELETE, SKIP
from ansible_collections.volfence.csi.plugins.module_utils._k8s.volumeattachment_ops import VolumeAttachments

SELECTORS = ('name', 'persistent_volume', 'node', 'attacher')
# The names of one name or names shown in a warning at most.
_MISSING_SHOWN = 20


def main():
    module = k8s_module(
        argument_spec=dict(
            state=dict(type='str', default='absent', choices=['absent']),
            name=dict(type='str'),
            names=dict(type='list', elements='str'),
            persistent_volume=dict(type='str', aliases=['pv']),
            node=dict(type='str'),
            attacher=dict(type='str', aliases=['driver']),
            only_stale=dict(type='bool', default=True),
            not_ready_grace=dict(type='int', default=300),
            force=dict(type='bool', default=False),
            force_grace=dict(type='int', default=60),
            wait=dict(type='bool', default=True),
            wait_timeout=dict(type='int', default=120),
            wait_sleep=dict(type='int', default=1),
            parallel=dict(type='int', default=16),
        ),
        required_one_of=[SELECTORS + ('names',)],
        mutually_exclusive=[('name', 'names')],
        supports_check_mode=True,
    )
    p = module.params
    try:
        for key in ('name', 'persistent_volume', 'node'):
            if p[key] is not None:
                check_object_name(p[key], key)
        problems = []
        for index, name in enumerate(p['names'] or []):
            try:
                check_object_name(name, 'names[%d]' % index)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise ValueError('; '.join(problems))
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
        for key in ('not_ready_grace', 'force_grace', 'wait_timeout'):
            check_range(p[key], key, 0, MAX_WAIT_SECONDS, 'seconds')
        check_range(p['wait_sleep'], 'wait_sleep', 1, MAX_SLEEP_SECONDS, 'seconds')
    except ValueError as exc:
        module.fail_json(msg=nothing_changed(exc))

    try:
        api = connect(module)
        vas = VolumeAttachments(api, not_ready_grace=p['not_ready_grace'], workers=p['parallel'])
        vas.read_version()
        selected = vas.select(*[p[k] for k in SELECTORS], names=p['names'])
        if p['persistent_volume'] is not None:
            vas.check_pv_exists(p['persistent_volume'], selected)
        if p['node'] is not None:
            unknown = vas.unknown_node_warning(p['node'], selected)
            if unknown:
                vas.warnings.append(unknown)
        if p['name'] is not None and not selected:
            vas.warnings.append('VolumeAttachment %s not found%s: nothing to delete' % (
                p['name'], '' if not any(p[k] for k in SELECTORS[1:]) else ' (or it does not match the other selectors)'))
        if p['names']:
            found = set(va['metadata']['name'] for va in selected)
            missing = sorted(set(n for n in p['names'] if n not in found))
            if missing:
                vas.warnings.append('%d of the %d VolumeAttachment name(s) not found%s: %s%s; nothing to delete for '
                                    'them' % (len(missing), len(set(p['names'])),
                                              '' if not any(p[k] for k in SELECTORS[1:])
                                              else ' (or they do not match the other selectors)',
                                              ', '.join(missing[:_MISSING_SHOWN]),
                                              ' and %d more' % (len(missing) - _MISSING_SHOWN)
                                              if len(missing) > _MISSING_SHOWN else ''))
        reports = vas.assess_all(selected)
        results, failures = vas.delete(reports, only_stale=p['only_stale'], force=p['force'],
                                       force_grace=p['force_grace'], wait=p['wait'], wait_timeout=p['wait_timeout'],
                                       wait_sleep=p['wait_sleep'], check_mode=module.check_mode)
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())

    results.sort(key=lambda r: r['name'])
    for result in results:
        if result['action'] == SKIP:
            vas.warnings.append('VolumeAttachment %s skipped: %s' % (result['name'], result['why']))
    for warning in vas.warnings:
        module.warn(warning)
    before = sorted(r['name'] for r in reports)
    output = dict(
        changed=any(r['changed'] for r in results),
        volumeattachments=results,
        deleted=(sorted(r['name'] for r in results if r['changed'] and r['action'] == DELETE) if module.check_mode
                 else sorted(vas.deleted)),
        kept=[dict(name=r['name'], why=r['why']) for r in results if r['action'] == SKIP],
        done=[r['name'] for r in results if r['changed']],
        failures=[dict(name=name, error=exc.msg) for name, exc in failures],
        cluster_version=vas.git_version,
    )
    if module._diff:
        after = [r['name'] for r in results if not r['gone'] and not (module.check_mode and r['changed'])]
        output['diff'] = dict(before=dict(volumeattachments=before), after=dict(volumeattachments=after))
    if failures:
        first = failures[0][1]
        msg = count_message('selected VolumeAttachment(s) could not be handled',
                            ['%s: %s' % (name, exc.msg) for name, exc in failures], len(results))
        done = [r['name'] for r in results if r['changed']]
        if done:
            msg += ' (changed anyway: %s)' % ', '.join(done)
        module.fail_json(msg=msg, **dict(output, **dict((k, v) for k, v in first.fail_kwargs().items() if k != 'msg')))
    module.exit_json(**output)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: volumeattachment_info
short_description: Find stale CSI VolumeAttachments and say why they are stale
version_added: 0.1.0
description:
  - Lists C(storage.k8s.io/v1) VolumeAttachments, selected by name, PersistentVolume, node and attacher
    (all optional, combined), and assesses each one.
  - An attachment is stale when at least one of these holds (RV(volumeattachments[].stale_reasons)).
    C(node_missing) its node does not exist; C(node_not_ready) its node has not been Ready for
    O(not_ready_grace) seconds; C(node_out_of_service) its node is tainted
    C(node.kubernetes.io/out-of-service); C(not_in_use) no pod on that node uses the volume; C(pv_missing)
    its PersistentVolume does not exist; C(unexpected_name) its name is not the one Kubernetes computes
    for that volume and node (C(csi-) + sha256 of volume handle, driver and node name, as
    C(getAttachmentName) in C(pkg/volume/csi/csi_attacher.go)).
  - An attachment whose volume its Ready node lists in C(status.volumesInUse) (kubelet still has it mounted,
    or is unmounting it) is never stale, whatever else holds (RV(volumeattachments[].protected)); an
    attachment whose volume cannot be named (no volume handle) counts as listed when that node lists any
    volume of its driver.
  - Reports the pre-1.24 detach name collision (the Dell csi-unity bug, kubernetes/kubernetes#97230) per
    attachment, see RV(volumeattachments[].attachment_name_collision).
  - Fails with a clear error for an unknown VolumeAttachment name or an unknown PersistentVolume.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.k8s.ACTIONGROUP
options:
  name:
    description:
      - Name of one VolumeAttachment. The module fails if it does not exist.
    type: str
  persistent_volume:
    description:
      - Only attachments of this PersistentVolume (C(spec.source.persistentVolumeName)).
      - The module fails if the PersistentVolume does not exist and no attachment refers to it.
    type: str
    aliases: [pv]
  node:
    description:
      - Only attachments to this node (C(spec.nodeName)).
      - A node that no longer exists is the usual reason attachments are stale; its attachments are selected
        without a warning. When no node of that name exists and no VolumeAttachment is to it (a typo), the
        module warns, listing the cluster's nodes, and selects nothing; it does not fail, since a node
        without attachments is a normal answer.
    type: str
  attacher:
    description:
      - Only attachments of this CSI driver (C(spec.attacher)), for example C(rbd.csi.ceph.com).
    type: str
    aliases: [driver]
  stale_only:
    description:
      - Return only the stale attachments.
    type: bool
    default: false
  not_ready_grace:
    description:
      - Seconds a node must have been not Ready (since its Ready condition last changed) before its
        attachments count as stale for that reason. Kubernetes itself waits 300 seconds before it evicts
        pods from an unreachable node.
      - From 0 to 86400.
    type: int
    default: 300
seealso:
  - module: volfence.csi.volumeattachment
  - module: volfence.csi.networkfence
  - name: kubernetes/kubernetes#97230
    description: Volumeattachments are not removed when the volume's unique name looks like an attachment name.
    link: https://github.com/kubernetes/kubernetes/issues/97230
'''

EXAMPLES = r'''
- name: What holds the volume of a stuck pod?
  volfence.csi.volumeattachment_info:
    persistent_volume: pvc-0c5f4b2e-6d43-4e41-9d2a-3f1c8f0b9a11
  register: va

- name: Show why each attachment is stale
  ansible.builtin.debug:
    msg: "{{ item.name }} on {{ item.node }}: {{ item.stale_messages }}"
  loop: "{{ va.volumeattachments | selectattr('stale') }}"
  loop_control:
    label: "{{ item.name }}"

- name: Stale attachments of a failed node, counting it failed after one minute
  volfence.csi.volumeattachment_info:
    node: worker-3
    not_ready_grace: 60
    stale_only: true
    kubeconfig: /etc/kubernetes/admin.conf

- name: Attachments hit by the pre-1.24 detach name collision
  volfence.csi.volumeattachment_info:
    attacher: csi-unity.dellemc.com
  register: unity

- name: Report them
  ansible.builtin.debug:
    msg: "{{ unity.volumeattachments | selectattr('attachment_name_collision.affected') | map(attribute='name') }}"
'''

RETURN = r'''
volumeattachments:
  description: The selected VolumeAttachments, sorted by name, each assessed.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
      sample: csi-5f0d6c4b8e0c3a1f9e7d2b6a4c8e0f1a3b5d7c9e1f2a4b6c8d0e2f4a6b8c0d2e
    uid:
      description: Its uid.
      type: str
    resource_version:
      description: Its resourceVersion when it was read.
      type: str
    persistent_volume:
      description: The PersistentVolume it attaches (null for an inline volume of a migrated in-tree plugin).
      type: str
    node:
      description: The node it attaches the volume to.
      type: str
    attacher:
      description: The CSI driver that attaches it.
      type: str
      sample: rbd.csi.ceph.com
    attached:
      description: C(status.attached).
      type: bool
    attach_error:
      description: C(status.attachError) (C(message), C(time)), or null.
      type: dict
    detach_error:
      description: C(status.detachError) (C(message), C(time)), or null.
      type: dict
    deletion_timestamp:
      description: When its deletion was requested, or null.
      type: str
    deleting_seconds:
      description: Seconds since its deletion was requested, or null.
      type: int
    finalizers:
      description: Its finalizers.
      type: list
      elements: str
    attacher_finalizer:
      description: The external-attacher's finalizer for its driver (C(external-attacher/) + the driver with
        characters other than letters, digits and C(-) as C(-)).
      type: str
      sample: external-attacher/rbd-csi-ceph-com
    volume_handle:
      description: The CSI volume handle (C(spec.csi.volumeHandle) of the PersistentVolume), or null if unknown.
      type: str
    expected_name:
      description: The name Kubernetes gives the attachment of this volume to this node, or null if unknown.
      type: str
    node_ready:
      description: The node's Ready condition (V(True), V(False), V(Unknown)); null when the node does not exist.
      type: str
    node_not_ready_seconds:
      description: Seconds since the node stopped being Ready (0 when Ready; null if unknown or no node).
      type: int
    pods:
      description: C(namespace/name) of the pods on the node that use the volume (null when unknown).
      type: list
      elements: str
    volume_in_use:
      description:
        - Whether the node's C(status.volumesInUse) lists the attachment's volume, as
          C(kubernetes.io/csi/<driver>^<volumeHandle>) or, for in-tree rbd, C(kubernetes.io/rbd/<pool>:<image>).
        - Null when that cannot be told (no node, or no volume handle while the node lists volumes of the driver).
      type: bool
    volumes_in_use_entries:
      description: The C(status.volumesInUse) entries that name (or may name) the volume.
      type: list
      elements: str
    protected:
      description: Why the attachment must not be deleted (its Ready node lists the volume in C(status.volumesInUse)),
        or null.
      type: str
    stale:
      description: Whether any stale reason applies and the attachment is not RV(volumeattachments[].protected).
      type: bool
    stale_reasons:
      description: Codes of the reasons, among C(node_missing), C(node_not_ready), C(node_out_of_service),
        C(not_in_use), C(pv_missing), C(unexpected_name).
      type: list
      elements: str
      sample: [node_not_ready, not_in_use]
    stale_messages:
      description: The same reasons in words, in the same order.
      type: list
      elements: str
    attachment_name_collision:
      description:
        - The pre-1.24 detach name collision. Before Kubernetes 1.24 (fixed by kubernetes/kubernetes#106557),
          detach took a volume unique name C(<driver>^<volumeHandle>) of 68 characters starting with C(csi-)
          for an attachment name, deleted no attachment, and left this one behind.
      type: dict
      contains:
        unique_volume_name:
          description: C(<driver>^<volumeHandle>), or null if unknown.
          type: str
        volume_has_attachment_name_shape:
          description: Whether it is 68 characters long and starts with C(csi-).
          type: bool
        version_affected:
          description: Whether the cluster version (RV(cluster_version)) is older than 1.24; null if unknown.
          type: bool
        affected:
          description: Both.
          type: bool
        explanation:
          description: The finding in words, or null.
          type: str
cluster_version:
  description: The API server's C(gitVersion) (C(/version)), or null if it could not be read.
  returned: always
  type: str
  sample: v1.23.5
collision_version_affected:
  description: Whether this Kubernetes version has the pre-1.24 detach name collision; null if unknown.
  returned: always
  type: bool
'''


from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_WAIT_SECONDS, check_range

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import collision_version_affected
from ansible_collections.volfence.csi.plugins.module_utils._k8s.volumeattachment_ops import VolumeAttachments


def main():
    module = k8s_module(
        argument_spec=dict(
            name=dict(type='str'),
            persistent_volume=dict(type='str', aliases=['pv']),
            node=dict(type='str'),
            attacher=dict(type='str', aliases=['driver']),
            stale_only=dict(type='bool', default=False),
            not_ready_grace=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        for key in ('name', 'persistent_volume', 'node'):
            if p[key] is not None:
                check_object_name(p[key], key)
        check_range(p['not_ready_grace'], 'not_ready_grace', 0, MAX_WAIT_SECONDS, 'seconds')
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    try:
        api = connect(module)
        vas = VolumeAttachments(api, not_ready_grace=p['not_ready_grace'])
        vas.read_version()
        selected = vas.select(p['name'], p['persistent_volume'], p['node'], p['attacher'])
        if p['name'] is not None and not selected:
            module.fail_json(msg='VolumeAttachment %s not found%s' % (
                p['name'], '' if not any(p[k] for k in ('persistent_volume', 'node', 'attacher'))
                else ' (or it does not match persistent_volume/node/attacher)'),
                object=dict(kind='VolumeAttachment', name=p['name']))
        if p['node'] is not None:
            unknown = vas.unknown_node_warning(p['node'], selected)
            if unknown:
                vas.warnings.append(unknown)
        if p['persistent_volume'] is not None:
            vas.check_pv_exists(p['persistent_volume'], selected)
        reports = vas.assess_all(selected)
    except K8sError as exc:
        module.fail_json(**exc.fail_kwargs())

    if p['stale_only']:
        reports = [r for r in reports if r['stale']]
    for warning in vas.warnings:
        module.warn(warning)
    module.exit_json(changed=False, volumeattachments=sorted(reports, key=lambda r: r['name']),
                     cluster_version=vas.git_version, collision_version_affected=collision_version_affected(vas.version))


if __name__ == '__main__':
    main()

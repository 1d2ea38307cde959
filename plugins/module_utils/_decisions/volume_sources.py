# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the volume-source taxonomy of the safety rules (I6 of docs/safety.md).

Which pod volumes may hold a node-attached volume, where a volume of a failed node was found, what
kind of volume a PersistentVolume spec or a pod volume is (an RBD image or another driver's), and
how the report names it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import pv_rbd_image


# Pod volumes that are not claims and may hold a node-attached volume (or a Ceph client): listed
# among the failed node's volumes; a pod using one is force-deleted only when that volume is safe.
INLINE_VOLUME_KINDS = ('csi', 'rbd', 'cephfs', 'iscsi', 'nfs', 'fc', 'flexVolume', 'glusterfs', 'cinder',
                       'awsElasticBlockStore', 'gcePersistentDisk', 'azureDisk', 'azureFile', 'vsphereVolume',
                       'portworxVolume', 'photonPersistentDisk', 'quobyte', 'scaleIO', 'storageos', 'flocker')
# In-tree sources a PersistentVolume can have besides those (its data lives on the node itself).
NODE_LOCAL_SOURCES = ('hostPath', 'local')
# What the report says of a volume volfence.csi cannot fence (not RBD): what the taint would do.
OUT_OF_SERVICE_HINT = ('the out-of-service taint (power %s off, then re-run with -e out_of_service_taint=true) '
                       'would let Kubernetes %s')

# Where a volume of the failed node was found (failover_volumes' `source`).
SOURCE_PV = 'pv'                    # a PersistentVolume, through a claim or a VolumeAttachment
SOURCE_PV_MISSING = 'pv-missing'    # a claim or VolumeAttachment names a PersistentVolume that does not exist
SOURCE_CLAIM = 'claim-unbound'      # a pod's claim that is missing or bound to no PersistentVolume
SOURCE_POD_INLINE = 'pod-inline'    # a volume written in the pod spec
SOURCE_VA_INLINE = 'attachment-inline'  # a VolumeAttachment of an inline (migrated) volume spec


def volume_source(spec):
    """(kind, image, driver, label) of a PersistentVolume spec or a pod volume: kind rbd-csi,
    rbd-intree, csi or other (pv_rbd_image), image "pool[/namespace]/image" of an RBD volume else
    None, driver the CSI driver or the in-tree plugin's source name, label in the user's words.
    Never raises on a partial spec."""
    spec = spec if isinstance(spec, dict) else {}
    try:
        kind, image = pv_rbd_image({'spec': spec})
    except (AttributeError, KeyError, TypeError):
        kind, image = 'other', None
    csi = spec.get('csi')
    if isinstance(csi, dict) and csi:
        driver = csi.get('driver') or None
        if image:
            return kind, image, driver, 'ceph-csi RBD image %s' % image
        return 'csi', None, driver, 'CSI driver %s' % (driver or '(unnamed)')
    if image:
        return kind, image, 'kubernetes.io/rbd', 'in-tree RBD image %s' % image
    for key in ('rbd',) + INLINE_VOLUME_KINDS + NODE_LOCAL_SOURCES:
        if key != 'csi' and spec.get(key) is not None:
            return 'other', None, key, 'in-tree %s' % key
    return 'other', None, None, 'an unknown volume source'


def volume_name(volume):
    """How the report names one volume: its PV, its claim, its inline volume or its attachment."""
    if volume.get('pv_name') or volume.get('pv'):
        return volume.get('pv_name') or volume.get('pv')
    if volume.get('inline') and volume.get('pods'):
        return '%s (volume %s)' % (volume['pods'][0], volume['inline'])
    if volume.get('claims'):
        return volume['claims'][0]
    return 'VolumeAttachment %s' % ', '.join(volume.get('attachments') or ['?'])


def volume_label(volume):
    """What the volume is, in the user's words, when its listing did not say: its RBD image or driver."""
    if volume.get('image'):
        return 'RBD image %s' % volume['image']
    return 'driver %s' % (volume.get('driver') or volume.get('kind') or 'unknown')

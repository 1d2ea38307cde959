# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: every volume a node has, whatever the driver, and what volfence.csi does
(diagnose: would do) or did (node_recover) for each, in the user's words."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import failed_set
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volume_sources import (
    INLINE_VOLUME_KINDS,
    OUT_OF_SERVICE_HINT,
    SOURCE_CLAIM,
    SOURCE_POD_INLINE,
    SOURCE_PV,
    SOURCE_PV_MISSING,
    SOURCE_VA_INLINE,
    volume_label,
    volume_name,
    volume_source,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import node_ready, object_name, pod_claims


def failover_volumes(failed_node, *, pods, pvcs, pvs, attachments):
    """Every volume the failed node has, whatever the driver: the PVs of its VolumeAttachments and
    of its pods' claims, its pods' inline volumes, attachments of inline specs or of PVs that do
    not exist, claims bound to nothing. attachments: VolumeAttachment objects or
    volumeattachment_info results. Returns [{pv, pv_name, driver, kind, image, rbd, volume, source,
    attachments, claims, pods, inline}], pv None when the PV was not found (or there is none).
    Never raises on partial objects: a volume it cannot read is listed, not dropped.
    failed_node may be a list of failed nodes: their volumes, each with the `nodes` it is on."""
    failed = failed_set(failed_node)
    by_pv = dict((object_name(pv), pv) for pv in pvs or [] if isinstance(pv, dict) and object_name(pv))
    by_claim = dict(('%s/%s' % ((c.get('metadata') or {}).get('namespace'), object_name(c)), c)
                    for c in pvcs or [] if isinstance(c, dict))
    volumes = {}

    def entry(key, **fields):
        if key not in volumes:
            volumes[key] = dict(dict(pv=None, pv_name=None, driver=None, kind=None, image=None, rbd=False,
                                     volume=None, source=None, attachments=[], claims=[], pods=[], inline=None,
                                     nodes=[]),
                                **fields)
        return volumes[key]

    def pv_entry(pv_name):
        pv = by_pv.get(pv_name)
        if pv is None:
            return entry('pv:' + pv_name, pv_name=pv_name, source=SOURCE_PV_MISSING,
                         volume='PersistentVolume %s, which does not exist' % pv_name)
        kind, image, driver, label = volume_source(pv.get('spec'))
        return entry('pv:' + pv_name, pv=pv_name, pv_name=pv_name, driver=driver, kind=kind, image=image,
                     rbd=image is not None, volume=label, source=SOURCE_PV)

    def add(values, item):
        if item and item not in values:
            values.append(item)

    for va in attachments or []:
        if not isinstance(va, dict):
            continue
        spec = va.get('spec') or {}
        node = spec.get('nodeName', va.get('node'))
        if node not in failed:
            continue
        name = object_name(va) or va.get('name')
        source = spec.get('source') or {}
        pv_name = source.get('persistentVolumeName') or va.get('persistent_volume') or va.get('pv')
        if pv_name:
            volume = pv_entry(pv_name)
        else:
            kind, image, driver, label = volume_source(source.get('inlineVolumeSpec'))
            driver = driver or spec.get('attacher') or va.get('attacher')
            volume = entry('va:%s' % name, driver=driver, kind=kind, image=image, rbd=image is not None,
                           volume='inline volume of a VolumeAttachment, %s' % (
                               label if source.get('inlineVolumeSpec') else 'attacher %s' % driver),
                           source=SOURCE_VA_INLINE)
        add(volume['attachments'], name)
        add(volume['nodes'], node)
    for pod in pods or []:
        node = (pod.get('spec') or {}).get('nodeName') if isinstance(pod, dict) else None
        if node not in failed:
            continue
        meta = pod.get('metadata') or {}
        ref = '%s/%s' % (meta.get('namespace'), meta.get('name'))
        for claim in pod_claims(pod):
            claim_ref = '%s/%s' % (meta.get('namespace'), claim)
            pv_name = ((by_claim.get(claim_ref) or {}).get('spec') or {}).get('volumeName')
            if pv_name:
                volume = pv_entry(pv_name)
            else:
                volume = entry('claim:' + claim_ref, source=SOURCE_CLAIM, volume='claim %s, %s' % (
                    claim_ref, 'bound to no PersistentVolume' if claim_ref in by_claim else 'which does not exist'))
            add(volume['claims'], claim_ref)
            add(volume['pods'], ref)
            add(volume['nodes'], node)
        for spec_volume in (pod.get('spec') or {}).get('volumes') or []:
            if not isinstance(spec_volume, dict) or not any(k in spec_volume for k in INLINE_VOLUME_KINDS):
                continue
            kind, image, driver, label = volume_source(spec_volume)
            volume = entry('inline:%s/%s' % (ref, spec_volume.get('name')), driver=driver, kind=kind, image=image,
                           rbd=image is not None, volume='inline %s in pod %s' % (label, ref),
                           source=SOURCE_POD_INLINE, inline=spec_volume.get('name'))
            add(volume['pods'], ref)
            add(volume['nodes'], node)
    for volume in volumes.values():  # the same answer whatever order the API listed the objects in
        for key in ('attachments', 'claims', 'pods', 'nodes'):
            volume[key].sort()
    return [volumes[k] for k in sorted(volumes)]


# --------------------------------------------------------------------------- a node's volumes, for diagnose and node_recover

CLEANUP = 'the volfence.csi.volumeattachment_cleanup playbook'


def node_volumes(node, volumes, *, context='recover'):
    """What volfence.csi does (diagnose: would do in node_failover) or did (recover: node_recover
    after a failover) for each volume of `node` (failover_volumes()), in the user's words: one
    dict per volume with name, volume, driver, rbd, attachments, claims, pods, note and line."""
    out = []
    for volume in volumes or []:
        if not isinstance(volume, dict):
            continue
        name = volume_name(volume)
        what = volume.get('volume') or volume_label(volume)
        attached = volume.get('attachments') or []
        known = volume.get('pv') is not None or volume.get('source') in (SOURCE_POD_INLINE, SOURCE_VA_INLINE)
        rbd = bool(volume.get('image'))
        if not known:
            note = '%s: volfence.csi cannot name the volume, so it never fences or releases it' % what
            if attached:
                note += '; it leaves %s alone (%s removes it once stale)' % (', '.join(attached), CLEANUP)
        elif rbd and context == 'diagnose':
            note = 'RBD: node_failover -e failed_node=%s fences %s\'s clients of it, then releases it' % (node, node)
        elif rbd:
            note = ('RBD: node_failover fenced %s\'s clients of it; what is lifted and what stays is listed with the '
                    'blocklist entries and fences' % node)
        elif context == 'diagnose':
            note = 'not an RBD volume: node_failover cannot fence it and %s; %s' % (
                'leaves it attached (its driver must detach it)' if attached else
                'does not force-delete the pods using it',
                OUT_OF_SERVICE_HINT % (node, 'detach it' if attached else 'delete those pods'))
        elif attached:
            note = ('not an RBD volume: volfence.csi neither fenced nor detached it; %s still attached to %s: now '
                    'that %s is back, its driver detaches it once no pod there uses it (if it stays, %s removes it '
                    'once stale)' % (', '.join(attached), node, node, CLEANUP))
        else:
            note = 'not an RBD volume, not attached: volfence.csi did nothing for it and has nothing to lift'
        out.append(dict(name=name, volume=what, driver=volume.get('driver'), rbd=rbd, attachments=attached,
                        claims=volume.get('claims') or [], pods=volume.get('pods') or [], note=note,
                        line='%s (%s): %s' % (name, what, note)))
    return out


def down_node_volumes(nodes, *, pods, pvcs, pvs, attachments):
    """For each node that is not Ready: its volumes (failover_volumes()) and what node_failover
    would do for each (node_volumes(context='diagnose')). Nodes without volumes are left out."""
    out = []
    for node in nodes or []:
        name = object_name(node) if isinstance(node, dict) else None
        if not name or node_ready(node) == 'True':
            continue
        volumes = failover_volumes(name, pods=pods, pvcs=pvcs, pvs=pvs, attachments=attachments)
        if volumes:
            out.append(dict(node=name, ready=node_ready(node), volumes=node_volumes(name, volumes, context='diagnose')))
    return out

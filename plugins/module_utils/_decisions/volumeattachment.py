# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: VolumeAttachment logic, pure (no I/O), unit-tested.

Names (Kubernetes pkg/volume/csi/csi_attacher.go):

* ``getAttachmentName(volName, csiDriverName, nodeName)`` is ``"csi-%x" % sha256(volName +
  csiDriverName + nodeName)`` where volName is the PV's ``spec.csi.volumeHandle``: the name the
  attach/detach controller gives the VolumeAttachment it creates.
* The unique volume name of a CSI volume is ``<driver>^<volumeHandle>`` (``volNameSep = "^"``).
* Before Kubernetes 1.24, ``csiAttacher.Detach(volumeName, node)`` first asked
  ``isAttachmentName(volumeName)``: ``strings.HasPrefix(s, "csi-") && len(s) == 68`` (68 =
  "csi-" + 64 hex digits). A unique volume name of exactly that shape (a driver named
  ``csi-...`` such as Dell's ``csi-unity.dellemc.com`` with a handle of the right length) was
  taken for an attachment name: Detach deleted the VolumeAttachment of THAT name (which does not
  exist, so "not found, object deleted" and success) and the real VolumeAttachment stayed,
  blocking the volume on the old node (kubernetes/kubernetes#97230). kubernetes/kubernetes#106557
  (Kubernetes 1.24) made isAttachmentName require ``^csi-[0-9a-f]{64}$``; a unique name always
  contains "^", so it no longer matches.

The external-attacher's finalizer is ``external-attacher/`` + the driver name with every
character outside ``[a-zA-Z0-9-]`` replaced by ``-`` (and an ``X`` appended if that ends with
``-``): kubernetes-csi/external-attacher pkg/connection/util.go SanitizeDriverName.

``Node.status.volumesInUse`` (I5): kubelet lists there, until it has unmounted them, the volumes it
mounts, by their unique volume name ``GetUniqueVolumeName(pluginName, plugin.GetVolumeName(spec))``
= ``<plugin name>/<volume name>`` (pkg/volume/util/volumehelper): for CSI
``kubernetes.io/csi/<driver>^<volumeHandle>`` (csiPlugin.GetVolumeName, ``volNameSep = "^"``; a
migrated in-tree volume appears under its CSI driver with its translated handle), for in-tree rbd
``kubernetes.io/rbd/<pool>:<image>`` (rbdPlugin.GetVolumeName; old releases put the monitor list in
place of the pool). An attachment whose volume its Ready node lists there is never deleted (I5).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import re

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    OUT_OF_SERVICE_TAINT,
    age_seconds,
    has_taint,
    node_not_ready_for,
    node_ready,
    pod_claims,
)

ATTACHER_FINALIZER_PREFIX = 'external-attacher/'
ATTACHMENT_NAME_LENGTH = 68
COLLISION_FIXED_IN = (1, 24)

# Stale reasons (codes) and how they read.
NODE_MISSING = 'node_missing'
NODE_NOT_READY = 'node_not_ready'
NODE_OUT_OF_SERVICE = 'node_out_of_service'
NOT_IN_USE = 'not_in_use'
UNEXPECTED_NAME = 'unexpected_name'
PV_MISSING = 'pv_missing'


CSI_PLUGIN_NAME = 'kubernetes.io/csi'
RBD_PLUGIN_NAME = 'kubernetes.io/rbd'


def attachment_name(volume_handle, driver, node):
    """The VolumeAttachment name Kubernetes uses for this volume handle, driver and node."""
    digest = hashlib.sha256((volume_handle + driver + node).encode('utf-8')).hexdigest()
    return 'csi-' + digest


def unique_volume_name(driver, volume_handle):
    """The attach/detach controller's unique name of a CSI volume."""
    return '%s^%s' % (driver, volume_handle)


def has_attachment_name_shape(value):
    """What Kubernetes < 1.24 took for an attachment name: 68 characters starting with csi-."""
    return len(value) == ATTACHMENT_NAME_LENGTH and value.startswith('csi-')


def sanitize_driver_name(driver):
    name = re.sub(r'[^a-zA-Z0-9-]', '-', driver)
    if name.endswith('-'):
        name += 'X'
    return name


def attacher_finalizer(driver):
    """The finalizer the external-attacher of `driver` puts on its VolumeAttachments."""
    return ATTACHER_FINALIZER_PREFIX + sanitize_driver_name(driver)


def collision_version_affected(version):
    """True when a (major, minor, patch) version has the pre-1.24 detach name collision, False
    when it does not, None when the version is unknown."""
    if not version:
        return None
    return tuple(version[:2]) < COLLISION_FIXED_IN


# --------------------------------------------------------------------------- one attachment

def va_source(va, pv):
    """(driver, volume handle) of the volume a VolumeAttachment attaches, from its PV (or from an
    inline volume spec of a migrated in-tree volume); (attacher, None) when unknown."""
    spec = va.get('spec') or {}
    csi = None
    if pv is not None:
        csi = (pv.get('spec') or {}).get('csi')
    if csi is None:
        csi = ((spec.get('source') or {}).get('inlineVolumeSpec') or {}).get('csi')
    if csi and csi.get('volumeHandle'):
        return csi.get('driver') or spec.get('attacher'), csi['volumeHandle']
    return spec.get('attacher'), None


def _rbd_source(va, pv):
    """(pool, image) of an in-tree rbd PersistentVolume (or inline spec), else None."""
    rbd = ((pv or {}).get('spec') or {}).get('rbd')
    if rbd is None:
        rbd = (((va.get('spec') or {}).get('source') or {}).get('inlineVolumeSpec') or {}).get('rbd')
    if rbd and rbd.get('image'):
        return rbd.get('pool') or 'rbd', rbd['image']
    return None


def kubelet_volume_names(va, pv):
    """The unique volume names under which kubelet lists this attachment's volume in its node's
    status.volumesInUse: ``kubernetes.io/csi/<driver>^<volumeHandle>``, and for an in-tree rbd volume
    ``kubernetes.io/rbd/<pool>:<image>``. [] when the volume cannot be named."""
    names = []
    driver, handle = va_source(va, pv)
    if driver and handle:
        names.append('%s/%s' % (CSI_PLUGIN_NAME, unique_volume_name(driver, handle)))
    rbd = _rbd_source(va, pv)
    if rbd:
        names.append('%s/%s:%s' % (RBD_PLUGIN_NAME, rbd[0], rbd[1]))
    return names


def names_rbd_image(entry, image):
    """Whether a volumesInUse entry is the in-tree rbd volume of `image` (its name, no pool):
    kubernetes.io/rbd/<pool or monitors>:<image>, or the older <pool>-image-<image>."""
    return (entry.startswith(RBD_PLUGIN_NAME + '/')
            and (entry.endswith(':' + image) or entry.endswith('-image-' + image)))


def volume_in_use(node, va, pv):
    """(in_use, entries): whether the node's status.volumesInUse lists this attachment's volume, and the
    entries that say so. in_use is True when an entry is the volume's name (or, for in-tree rbd, names its
    image after any pool or monitor list); None when the volume cannot be named (no volume handle) but the
    node lists volumes of its driver, any of which may be it; False otherwise."""
    listed = [str(v) for v in ((node or {}).get('status') or {}).get('volumesInUse') or []]
    names = kubelet_volume_names(va, pv)
    entries = [v for v in listed if v in names]
    rbd = _rbd_source(va, pv)
    if rbd:
        entries += [v for v in listed if v not in entries and names_rbd_image(v, rbd[1])]
    if entries:
        return True, entries
    driver, handle = va_source(va, pv)
    if handle is None and driver:
        candidates = [v for v in listed if v.startswith('%s/%s^' % (CSI_PLUGIN_NAME, driver))]
        if candidates:
            return None, candidates
    return False, []


def claim_of(pv):
    """(namespace, name) of the PVC bound to a PV, or None."""
    ref = ((pv or {}).get('spec') or {}).get('claimRef') or {}
    if ref.get('name') and ref.get('namespace'):
        return ref['namespace'], ref['name']
    return None


def claim_users(pods):
    """{(namespace, claim): sorted 'namespace/name' of the pods (not Succeeded/Failed) using it}: one
    pass over a node's pods, so that each of its attachments is a lookup, not a scan."""
    index = {}
    for pod in pods:
        if (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed'):
            continue
        namespace = pod['metadata'].get('namespace')
        for name in pod_claims(pod):
            index.setdefault((namespace, name), []).append('%s/%s' % (namespace, pod['metadata']['name']))
    for users in index.values():
        users.sort()
    return index


def pods_using(pv, pods, index=None):
    """'namespace/name' of the pods (not Succeeded/Failed) among `pods` whose volumes use the PV.
    index: claim_users(pods), when several PVs are looked up among the same pods."""
    claim = claim_of(pv)
    if claim is None:
        return []
    return list((claim_users(pods) if index is None else index).get(tuple(claim), []))


def _volume_error(err):
    if not err:
        return None
    return dict(message=err.get('message'), time=err.get('time'))


def assess(va, pv, *, pv_known, node, pods, cluster_version, not_ready_grace, now=None, pod_index=None):
    """The report of one VolumeAttachment.

    `pv`: its PersistentVolume or None; `pv_known`: whether the PV was looked up (False for
    inline volumes); `node`: its Node or None when the node does not exist; `pods`: the pods on
    that node (pod_index: their claim_users(), when many attachments of the node are assessed);
    `cluster_version`: (major, minor, patch) or None.
    """
    meta = va.get('metadata') or {}
    spec = va.get('spec') or {}
    status = va.get('status') or {}
    name = meta.get('name')
    node_name = spec.get('nodeName')
    attacher = spec.get('attacher')
    pv_name = (spec.get('source') or {}).get('persistentVolumeName')
    driver, handle = va_source(va, pv)
    expected = attachment_name(handle, driver, node_name) if handle and driver and node_name else None
    reasons = []
    messages = []

    def stale(code, text):
        reasons.append(code)
        messages.append(text)

    if node is None:
        stale(NODE_MISSING, 'node %s does not exist' % node_name)
        ready, not_ready = None, None
    else:
        ready = node_ready(node)
        not_ready = node_not_ready_for(node, now)
        if ready != 'True':
            if not_ready is None or not_ready >= not_ready_grace:
                stale(NODE_NOT_READY, 'node %s has been %s for %s (grace %ss)' % (
                    node_name, 'NotReady' if ready == 'False' else 'Ready=%s' % ready,
                    'an unknown time' if not_ready is None else '%ds' % not_ready, not_ready_grace))
        if has_taint(node, OUT_OF_SERVICE_TAINT):
            stale(NODE_OUT_OF_SERVICE, 'node %s is tainted %s' % (node_name, OUT_OF_SERVICE_TAINT))
    if pv_name and pv_known and pv is None:
        stale(PV_MISSING, 'PersistentVolume %s does not exist' % pv_name)
    in_use, in_use_entries = (None, []) if node is None else volume_in_use(node, va, pv)
    protected = None
    if ready == 'True' and in_use:
        protected = ('node %s is Ready and lists the volume in status.volumesInUse (%s): kubelet still uses it '
                     '(I5)' % (node_name, ', '.join(in_use_entries)))
    elif ready == 'True' and in_use is None:
        protected = ('node %s is Ready and lists volumes of %s in status.volumesInUse (%s), and which volume this '
                     'attachment is cannot be told: it may still be in use (I5)' % (
                         node_name, driver, ', '.join(in_use_entries)))
    users = None
    if pv is not None:
        users = pods_using(pv, pods, pod_index)
        if not users and protected is None:
            stale(NOT_IN_USE, 'no pod on node %s uses PersistentVolume %s' % (node_name, pv_name))
    if expected is not None and expected != name:
        stale(UNEXPECTED_NAME, 'the name differs from the name Kubernetes gives this attachment (%s)' % expected)

    unique = unique_volume_name(driver, handle) if driver and handle else None
    shape = has_attachment_name_shape(unique) if unique else None
    version_affected = collision_version_affected(cluster_version)
    if shape and version_affected:
        explanation = ('%s is %d characters and starts with "csi-": this Kubernetes version (< 1.24) takes it for an '
                       'attachment name when detaching, deletes no VolumeAttachment and leaves this one behind'
                       % (unique, len(unique)))
    elif shape and version_affected is None:
        explanation = ('%s has the shape of an attachment name; the cluster version is unknown, so whether detach '
                       'mishandles it (Kubernetes < 1.24) cannot be told' % unique)
    elif shape:
        explanation = ('%s has the shape of an attachment name, but Kubernetes >= 1.24 detaches it correctly'
                       % unique)
    else:
        explanation = None
    deletion = meta.get('deletionTimestamp')
    finalizers = list(meta.get('finalizers') or [])
    return dict(
        name=name,
        uid=meta.get('uid'),
        resource_version=meta.get('resourceVersion'),
        persistent_volume=pv_name,
        node=node_name,
        attacher=attacher,
        attached=bool(status.get('attached')),
        attach_error=_volume_error(status.get('attachError')),
        detach_error=_volume_error(status.get('detachError')),
        deletion_timestamp=deletion,
        deleting_seconds=age_seconds(deletion, now) if deletion else None,
        finalizers=finalizers,
        attacher_finalizer=attacher_finalizer(attacher) if attacher else None,
        volume_handle=handle,
        expected_name=expected,
        node_ready=ready,
        node_not_ready_seconds=not_ready,
        pods=users,
        volume_in_use=in_use,
        volumes_in_use_entries=in_use_entries,
        protected=protected,
        stale=bool(reasons) and protected is None,
        stale_reasons=reasons,
        stale_messages=messages,
        attachment_name_collision=dict(
            unique_volume_name=unique,
            volume_has_attachment_name_shape=shape,
            version_affected=version_affected,
            affected=bool(shape and version_affected),
            explanation=explanation,
        ),
    )


def matches(va, name=None, persistent_volume=None, node=None, attacher=None):
    spec = va.get('spec') or {}
    return ((name is None or va['metadata']['name'] == name)
            and (persistent_volume is None or (spec.get('source') or {}).get('persistentVolumeName') == persistent_volume)
            and (node is None or spec.get('nodeName') == node)
            and (attacher is None or spec.get('attacher') == attacher))


def cleanup_plan(attachments, pod_node):
    """What the volumeattachment_cleanup playbook deletes, from the volumeattachment_info entries of the
    stuck pod's volumes: {stale: those to another node than the pod's that assess() found stale (the
    module deletes them with only_stale, re-assessing each: I5), kept: the other ones to another node
    (reported, not touched), collisions: the attachment-name collision reports of volumes whose unique
    name has the attachment-name shape}. Attachments to the pod's own node are its own: never listed."""
    stale, kept, collisions = [], [], []
    for va in attachments or []:
        if not isinstance(va, dict):
            continue
        collision = va.get('attachment_name_collision') or {}
        if collision.get('volume_has_attachment_name_shape'):
            collisions.append(collision)
        if va.get('node') == pod_node:
            continue
        unfenced = _down_node_rbd_client(va) if va.get('stale') else None
        if unfenced:
            kept.append(dict(va, kept_reason=unfenced, invariant='I6'))
        else:
            (stale if va.get('stale') else kept).append(va)
    return dict(stale=stale, kept=kept, collisions=collisions)


def _down_node_rbd_client(va):
    """Why a stale attachment of a ceph-csi RBD volume on a node that is down, not gone, is not removed here, or
    None. Its node may still hold a client of the image that no `rbd status` shows (frozen, or cut off longer than
    the OSD's watch timeout) and comes back writing: removing the attachment lets the volume attach elsewhere with
    nothing fenced (I6). node_failover fences the node first, then removes it."""
    reasons = set(va.get('stale_reasons') or ())
    if not str(va.get('attacher') or '').endswith('rbd.csi.ceph.com') or NODE_MISSING in reasons:
        return None
    if not reasons & set([NODE_NOT_READY, NODE_OUT_OF_SERVICE]):
        return None
    return ('node %s is down, not gone: it may still hold a client of this RBD volume that shows in no rbd status '
            '(frozen, or cut off), so removing the attachment alone would let a second writer in; '
            'ansible-playbook volfence.csi.node_failover -e failed_node=%s fences the node first, then removes it'
            % (va.get('node'), va.get('node')))


# --------------------------------------------------------------------------- deleting

DELETE = 'delete'
REMOVE_FINALIZER = 'remove_finalizer'
WAIT = 'wait'                 # deletion in progress, nothing to do (yet)
SKIP = 'skip'


def plan_delete(report, only_stale, force, force_grace):
    """(action, why) for one assessed VolumeAttachment.

    I5: an attachment whose volume its Ready node lists in status.volumesInUse (report['protected']) is
    never deleted and its finalizer never removed, whatever only_stale and force say."""
    if report.get('protected'):
        if report['deletion_timestamp'] is None:
            return SKIP, 'kept: %s; it is not deleted, not even with only_stale=false or force' % report['protected']
        return WAIT, ('deletion in progress; the finalizers are not removed, not even with force: %s'
                      % report['protected'])
    if only_stale and not report['stale']:
        why = 'not stale'
        if report['pods']:
            why += ': used by %s on %s node %s' % (', '.join(report['pods']),
                                                   'Ready' if report['node_ready'] == 'True' else 'its',
                                                   report['node'])
        return SKIP, why + '; set only_stale=false to delete it anyway'
    if report['deletion_timestamp'] is None:
        return DELETE, 'stale: %s' % '; '.join(report['stale_messages']) if report['stale'] else 'only_stale=false'
    fin = report['attacher_finalizer']
    if fin and fin in report['finalizers']:
        waited = report['deleting_seconds']
        if force and waited is not None and waited >= force_grace:
            return REMOVE_FINALIZER, 'deletion stuck for %ds (force_grace %ss) on finalizer %s' % (
                waited, force_grace, fin)
        if force:
            return WAIT, 'deletion in progress for %ss; %s is removed after force_grace=%ss' % (
                'an unknown time' if waited is None else '%d' % waited, fin, force_grace)
        return WAIT, 'deletion in progress, waiting for %s to detach (force=true removes %s after force_grace)' % (
            report['attacher'], fin)
    return WAIT, 'deletion in progress (finalizers: %s)' % (', '.join(report['finalizers']) or 'none')


def finalizers_without(finalizers, finalizer):
    return [f for f in finalizers if f != finalizer]

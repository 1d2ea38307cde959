# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: what a failover releases (I6 of docs/safety.md).

Which of the failed nodes' pods may be force-deleted and VolumeAttachments removed, given what was
fenced (release_plan); which pods waiting elsewhere were made safe (waiting_verdicts); whether to
taint the nodes out-of-service (out_of_service_decision).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    covered_by,
    failed_nodes_text,
    failed_set,
    network_contains,
    normalize_ip,
    normalize_network,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volume_sources import (
    INLINE_VOLUME_KINDS,
    NODE_LOCAL_SOURCES,
    OUT_OF_SERVICE_HINT,
    SOURCE_CLAIM,
    SOURCE_POD_INLINE,
    SOURCE_VA_INLINE,
    volume_label,
    volume_name,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import controller_of, pod_claims

# out_of_service_taint=auto: release_plan decides the taint (out_of_service_decision).
AUTO = 'auto'


def release_plan(failed_node, volumes, pods, *, fence_method='blocklist', images=None, missing=None, fence=None,
                 watchers_after=None, fenced_cidrs=None, networkfence_ok=False, out_of_service_taint=AUTO,
                 waiting=None):
    """Which of the failed node's pods may be force-deleted and attachments removed (I6).

    volumes: [{pv, driver, kind, image, attachments: [VolumeAttachment names], claims: [ns/name]}] of the
    failed node (failover_volumes()). images, missing: rbd_watchers_info `images` and `missing` read before
    the fence; fence: fence_plan(); watchers_after: rbd_watchers_info `images` read after the fence (None
    in check mode: the plan's prediction is used). fenced_cidrs / networkfence_ok: the node's
    NetworkFence and whether the controller reported it Fenced.
    failed_node may be a list of failed nodes (one release step across them).
    Every volume gets `safe`, `rbd`, `action` (released, kept attached, left alone), `how` (how it
    was made safe, or why it was left alone) and `line` (all of it in one sentence for the report);
    a pod of a failed node is force-deleted only when all its claims' and inline volumes are safe,
    whether or not Kubernetes evicted it yet (the node is provably down: the preflight, I1); a
    DaemonSet's pod and a static pod's mirror are left (their controller puts them back on the node).
    An attachment is removed only when its volume is safe. A volume of another driver is released
    only under the out-of-service taint.
    out_of_service_taint: True (the operator declared the nodes shut down), False, or AUTO: the taint
    is decided here (`out_of_service`, out_of_service_decision()).
    waiting: the RBD volumes of pods that have not started elsewhere ({pod, claim, image}, failed_nodes
    `waiting`): when Kubernetes or someone removed the nodes' pods and attachments first, these are
    what the nodes still hold. One whose image a failed node's client watched (fenced, or ceph-csi
    recorded the node) is waited for; one whose failed node's watcher was not made safe is in
    `waiting_unsafe`, and the run fails (`waiting`, waiting_verdicts()).
    kept_unsafe: a line for each RBD volume not made safe of a pod kept on a failed node (evicted or not):
    nothing replaces that pod, and the run fails naming it. Volumes of other drivers are reported, not failed.
    """
    requested = out_of_service_taint
    taint = requested is True
    before = dict((i.get('spec'), i) for i in images or [] if isinstance(i, dict) and i.get('spec'))
    missing = set(m.get('spec') for m in missing or [] if isinstance(m, dict))
    after = None if watchers_after is None else dict((i.get('spec'), i) for i in watchers_after or []
                                                     if isinstance(i, dict))
    fence = fence or {}
    kept_by_image = {}
    for item in fence.get('kept') or []:
        kept_by_image.setdefault(item.get('image'), []).append(item)
    nets = [normalize_network(c) for c in fenced_cidrs or []]
    failed = failed_set(failed_node)
    verdicts = []
    for volume in volumes or []:
        if not isinstance(volume, dict):
            continue
        safe, how = _volume_safety(volume, fence_method=fence_method, before=before, missing=missing, after=after,
                                   fence=fence, kept_by_image=kept_by_image, nets=nets,
                                   networkfence_ok=networkfence_ok, taint=taint,
                                   failed_node=failed_nodes_text(volume.get('nodes') or failed),
                                   fence_refused=fence.get('refused'))
        rbd = bool(volume.get('image'))
        if safe:
            action = 'released' if rbd else 'released under the out-of-service taint'
        else:
            action = 'kept attached' if volume.get('attachments') else 'left alone'
        verdict = dict(volume, name=volume_name(volume), safe=safe, rbd=rbd, action=action, how=how, invariant='I6')
        verdict['line'] = '%s (%s): %s: %s' % (verdict['name'], volume.get('volume') or volume_label(volume), action, how)
        verdicts.append(verdict)
    safe_claims = set(c for v in verdicts if v['safe'] for c in v.get('claims') or [])
    unsafe_claims = set(c for v in verdicts if not v['safe'] for c in v.get('claims') or [])
    safe_inline = set((p, v.get('inline')) for v in verdicts if v['safe'] and v.get('source') == SOURCE_POD_INLINE
                      for p in v.get('pods') or [])
    delete, kept_pods, kept_unsafe = [], [], []
    for pod in pods or []:
        if not isinstance(pod, dict):
            continue
        meta = pod.get('metadata') or {}
        if (pod.get('spec') or {}).get('nodeName') not in failed:
            continue
        ref = '%s/%s' % (meta.get('namespace'), meta.get('name'))
        put_back = _put_back_on_node(pod)
        if put_back:
            kept_pods.append(dict(pod=ref, reason=put_back, invariant='I6'))
            continue
        claims = ['%s/%s' % (meta.get('namespace'), c) for c in pod_claims(pod)]
        inline = [v.get('name') for v in (pod.get('spec') or {}).get('volumes') or []
                  if isinstance(v, dict) and any(k in v for k in INLINE_VOLUME_KINDS)
                  and (ref, v.get('name')) not in safe_inline]
        bad = [c for c in claims if c in unsafe_claims or c not in safe_claims]
        if inline:
            kept_pods.append(dict(pod=ref, reason='inline volume(s) %s cannot be proven fenced' % ', '.join(
                str(n) for n in inline), invariant='I6'))
        elif bad:
            kept_pods.append(dict(pod=ref, reason='claim(s) %s not made safe' % ', '.join(sorted(bad)), invariant='I6'))
            # an RBD volume this failover could not make safe: the pod stays on the dead node, whether or not
            # Kubernetes evicted it yet, and nothing replaces it; the run fails naming it
            kept_unsafe.extend('pod %s stays on %s: %s (claim %s): NOT made safe, %s'
                               % (ref, (pod.get('spec') or {}).get('nodeName'), v['image'], claim, v['how'])
                               for claim in sorted(bad) for v in verdicts
                               if v['rbd'] and not v['safe'] and claim in (v.get('claims') or []))
        else:
            how = 'all its volumes are made safe' if claims else 'it uses no persistent volume'
            if not meta.get('deletionTimestamp'):
                how += ' (not evicted yet: its node is provably down, I1)'
            delete.append(dict(namespace=meta.get('namespace'), name=meta.get('name'), uid=meta.get('uid'),
                               node=(pod.get('spec') or {}).get('nodeName'), how=how))
    remove = sorted(set(a for v in verdicts if v['safe'] for a in v.get('attachments') or []))
    kept_vas = sorted(set(a for v in verdicts if not v['safe'] for a in v.get('attachments') or []))
    # The claims whose replacement pod the playbook waits for: those of controller-owned pods of the
    # node whose volumes were released.
    owned = set('%s/%s' % ((p.get('metadata') or {}).get('namespace'), c) for p in pods or []
                if isinstance(p, dict) and (p.get('metadata') or {}).get('ownerReferences') for c in pod_claims(p))
    held = waiting_verdicts(waiting, failed, before=before, after=after, fence=fence, kept_by_image=kept_by_image,
                            nets=nets if fence_method == 'networkfence' else None, networkfence_ok=networkfence_ok)
    wait_claims = sorted(set(c for c in owned if c in safe_claims and c not in unsafe_claims)
                         | set(v['claim'] for v in held if v['safe']))
    others = [dict(name=v['name'], volume=v.get('volume') or volume_label(v), driver=v.get('driver'),
                   action=v['action'], how=v['how'], attachments=v.get('attachments') or [],
                   claims=v.get('claims') or [])
              for v in verdicts if not v['rbd']]
    # what volfence.csi.pod_force_delete takes: the uid makes the API refuse a same-name replacement
    refs = [dict(namespace=p['namespace'], name=p['name'], uid=p['uid']) if p.get('uid') else
            dict(namespace=p['namespace'], name=p['name']) for p in delete]
    return dict(volumes=verdicts, delete_pods=delete, delete_pod_refs=refs, kept_pods=kept_pods, remove_attachments=remove,
                kept_attachments=kept_vas, wait_claims=wait_claims, not_rbd=others, waiting=held,
                waiting_unsafe=[v['line'] for v in held if not v['safe']], kept_unsafe=kept_unsafe,
                out_of_service=out_of_service_decision(requested=requested, failed_nodes=failed, verdicts=verdicts))


def waiting_verdicts(waiting, failed, *, before, after, fence, kept_by_image, nets=None, networkfence_ok=False):
    """The pods waiting elsewhere on an image a failed node's client held (see release_plan): each
    with `safe` (its failed nodes' watchers fenced and gone) and `line`. A waiting pod whose image
    no failed node's client held is not this failover's and is left out."""
    out = []
    for item in waiting or []:
        if not isinstance(item, dict) or not item.get('image'):
            continue
        image = item['image']
        read = before.get(image)
        if read is None:
            continue  # not read on Ceph (gone): nothing of the failed nodes holds it
        recorded = sorted(set(c.get('node') for c in read.get('csi_client_addresses') or [] if c.get('node') in failed))
        if nets is not None:
            fenced_here = [w.get('address') for w in read.get('watchers') or [] if _inside(nets, w.get('address'))]
        else:
            fenced_here = list((fence.get('by_image') or {}).get(image) or [])
        broken = [k for k in fence.get('locks_broken') or [] if isinstance(k, dict) and k.get('image') == image]
        if not fenced_here and not recorded and not broken:
            continue
        # ceph-csi on the waiting pod's own node opens the image to check it: that client is expected;
        # any other kept client (one no failed node can be proven to own, or another node's) keeps the pod waiting
        kept = [k for k in kept_by_image.get(image) or [] if k.get('other_node') != item.get('node')]
        still = [w.get('address') for w in ((after or {}).get(image) or {}).get('watchers') or []
                 if (_inside(nets, w.get('address')) if nets is not None else covered_by(fenced_here, w.get('address')))]
        what = 'pod %s waits on %s (claim %s)' % (item.get('pod'), image, item.get('claim'))
        locked = [k for k in fence.get('locks_kept') or [] if isinstance(k, dict) and k.get('image') == image]
        if locked:
            # stale-rbd-lock: the pod cannot mount while the failed node's in-tree lock stands; not waited for
            pod_ns, _sep, pod_name = str(item.get('pod')).partition('/')
            held = '; '.join('%s held by %s from %s (%s)' % (k.get('id'), k.get('locker'), k.get('address'),
                                                             k.get('reason')) for k in locked)
            safe, how = False, ('stale-rbd-lock: %s; the pod cannot mount while it stands: ansible-playbook '
                                'volfence.csi.rbd_lock_cleanup -e pod_namespace=%s -e pod_name=%s'
                                % (held, pod_ns, pod_name))
        elif fence.get('refused'):
            safe, how = False, 'nothing was fenced: %s' % fence['refused']
        elif kept:
            reasons = '; '.join('%s (%s)' % (k['address'], k['reason']) for k in kept)
            safe, how = False, 'watcher(s) not fenced: %s' % reasons
        elif nets is not None and not networkfence_ok:
            safe, how = False, 'the NetworkFence was not reported Fenced'
        elif still:
            safe, how = False, 'fenced watcher(s) %s are still there' % ', '.join(still)
        else:
            safe, how = True, ('fenced: %s' % ', '.join(fenced_here) if fenced_here
                               else 'ceph-csi recorded %s there; no client of it holds the image now' % ', '.join(recorded))
            if broken:
                how += '; stale in-tree lock(s) broken: %s' % ', '.join(
                    '%s held by %s' % (k.get('id'), k.get('locker')) for k in broken)
        out.append(dict(item, safe=safe, how=how, invariant='I6',
                        line='%s: %s' % (what, how if safe else 'NOT made safe, ' + how)))
    return out


def out_of_service_decision(requested, failed_nodes, verdicts):
    """Whether node_failover taints the failed nodes node.kubernetes.io/out-of-service (docs/safety.md I6).

    The taint makes Kubernetes detach every volume of the node at once (the attach/detach controller
    skips maxWaitForUnmountDuration) and remove its Terminating pods (pod GC): the fastest release on a
    real cluster, and safe only for volumes no client of the node can still write. So, unless the
    operator said (requested True: the nodes are declared shut down; False: never), the taint is
    right exactly when every volume of the nodes was made safe (verdicts of release_plan, computed
    without the taint): an RBD volume fenced, no volume of another driver (volfence.csi cannot fence
    it), no volume that could not be named. Returns taint, requested, reason, invariant."""
    nodes = failed_nodes_text(failed_nodes)
    if requested is True:
        return dict(taint=True, requested=True, invariant='I6',
                    reason='asked (out_of_service_taint=true): %s declared shut down' % nodes)
    if requested is False:
        return dict(taint=False, requested=False, invariant='I6',
                    reason='not asked (out_of_service_taint=false): only what volfence.csi released is released')
    unsafe = [v for v in verdicts if not v.get('safe')]
    if unsafe:
        return dict(taint=False, requested=AUTO, invariant='I6', reason=(
            'not every volume of %s was made safe (%s): under the taint Kubernetes would detach it' % (
                nodes, ', '.join(v.get('name') or '?' for v in unsafe))))
    return dict(taint=True, requested=AUTO, invariant='I6', reason=(
        'every volume of %s was made safe (%d): Kubernetes may detach them at once and remove the '
        "node's remaining pods (non-graceful node shutdown)" % (nodes, len(verdicts))))


def _put_back_on_node(pod):
    """Why force-deleting the pod of a failed node releases nothing, or None: a DaemonSet makes its
    pod again on the same node, and a static pod's mirror belongs to the node's kubelet."""
    meta = pod.get('metadata') or {}
    if 'kubernetes.io/config.mirror' in (meta.get('annotations') or {}):
        return "a static pod's mirror: its node's kubelet owns it"
    if (controller_of(pod) or {}).get('kind') == 'DaemonSet':
        return "a DaemonSet's pod: its controller puts it back on the same node"
    return None


def _inside(nets, address):
    ip = normalize_ip(address)
    return any(network_contains(n, ip) for n in nets or ())


def _volume_safety(volume, *, fence_method, before, missing, after, fence, kept_by_image, nets, networkfence_ok,
                   taint, failed_node, fence_refused=None):
    """(safe, how) of one volume (I6): an RBD volume is safe when every client a failed node could still hold
    on it (fence_plan's image_suspects: its watchers, ceph-csi's record, its lock holders, else the node's own
    addresses) is cut by the fence and the fenced watchers are gone. No watcher alone proves nothing: a frozen
    or partitioned client drops out of `rbd status` and comes back."""
    image = volume.get('image')
    source = volume.get('source')
    inline = source in (SOURCE_POD_INLINE, SOURCE_VA_INLINE)
    if volume.get('pv') is None and not inline:
        attached = volume.get('attachments') or []
        left = ('; volfence.csi leaves %s alone (remove it once you know nothing writes to the volume)'
                % ', '.join(attached)) if attached else ''
        if source == SOURCE_CLAIM:
            return False, ('claim %s is not bound to a PersistentVolume: the volume cannot be named, so it cannot '
                           'be proven fenced' % ', '.join(volume.get('claims') or ['?']))
        return False, ('its PersistentVolume %s was not found: the volume cannot be named, so it cannot be proven '
                       'fenced%s' % (volume.get('pv_name') or '', left))
    if not image:
        return _other_driver_safety(volume, failed_node, taint)
    if fence_refused:
        return False, 'nothing was fenced: %s' % fence_refused
    if image in missing or image not in before:
        return False, 'image %s was not found on Ceph: cannot prove no client of %s writes to it' % (image, failed_node)
    foreign = set(k['address'] for k in kept_by_image.get(image) or [] if k.get('other_node'))
    kept = [k for k in kept_by_image.get(image) or [] if not k.get('other_node')]
    if kept:
        reasons = '; '.join('%s%s (%s)' % (k.get('address') or '', ' [%s]' % k['source'] if k.get('source') else '',
                                           k['reason']) for k in kept)
        return False, 'client(s) kept on %s: %s' % (image, reasons)
    watchers = [w.get('address') for w in (before[image].get('watchers') or []) if w.get('address') not in foreign]
    cut = list((fence.get('by_image') or {}).get(image) or [])
    entries = fence.get('fence') or []
    if fence_method == 'networkfence':
        if not networkfence_ok:
            return False, 'the NetworkFence of %s was not reported Fenced' % failed_node
        outside = [a for a in watchers + cut if not _inside(nets, a)]
        if outside:
            return False, ('client(s) %s of %s are outside the NetworkFence CIDRs %s'
                           % (', '.join(sorted(set(outside))), image, ', '.join(str(n) for n in nets)))
    else:
        unfenced = [a for a in watchers if not covered_by(entries, a)]
        if unfenced:
            return False, 'watcher(s) %s of %s were not fenced' % (', '.join(unfenced), image)
    if not cut and not watchers:
        return False, ('no client of %s is visible on %s and nothing of %s was fenced for it: a frozen or '
                       'partitioned client drops out of rbd status and comes back' % (failed_node, image, failed_node))
    if after is not None:
        still = [w.get('address') for w in ((after.get(image) or {}).get('watchers') or [])
                 if w.get('address') in watchers or (
                     _inside(nets, w.get('address')) if fence_method == 'networkfence'
                     else covered_by(entries, w.get('address')))]
        if still:
            return False, 'fenced watcher(s) %s of %s are still there' % (', '.join(still), image)
    sources = dict((f.get('entry'), f.get('sources') or []) for f in fence.get('fenced') or [] if isinstance(f, dict))
    told = ', '.join('%s (%s)' % (e, ', '.join(sources[e])) if sources.get(e) else e for e in sorted(set(cut)))
    if fence_method == 'networkfence':
        return True, 'fenced (networkfence): %s' % ', '.join(sorted(set(watchers + cut)))
    return True, 'fenced (%s): %s' % (fence_method, told)


def _other_driver_safety(volume, failed_node, taint):
    """I6 for a volume that is not RBD: volfence.csi has no fence for it, so it is released only
    when the operator declared the node shut down (out-of-service taint)."""
    what = volume.get('volume') or volume_label(volume)
    attached = volume.get('attachments') or []
    if taint:
        return True, ('not an RBD volume (%s): released under the out-of-service taint (non-graceful node shutdown: '
                      'you declared %s shut down, so Kubernetes detaches it)' % (what, failed_node))
    local = ('its data is on %s\'s own disk; ' % failed_node) if volume.get('driver') in NODE_LOCAL_SOURCES else ''
    if attached:
        return False, ('not an RBD volume (%s): %svolfence.csi cannot fence it, its driver must detach it '
                       '(VolumeAttachment %s left untouched); %s' % (
                           what, local, ', '.join(attached), OUT_OF_SERVICE_HINT % (failed_node, 'detach it')))
    return False, ('not an RBD volume (%s), with no VolumeAttachment: %svolfence.csi cannot fence it and does not '
                   'force-delete the pods using it; %s' % (
                       what, local, OUT_OF_SERVICE_HINT % (failed_node, 'delete those pods')))

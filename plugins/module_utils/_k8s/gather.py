# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Kubernetes reads of the playbooks, with selectors: diagnose (module stuck_pods_info, `gather`)
and node_failover / node_recover (module failed_nodes_info, `gather_failed_nodes`).

Private to volfence.csi. `gather` asks the API only for what the diagnosis needs, one list per
kind, paged with limit/continue (KubeApi.list), with field selectors the real API server supports
(FIELD_SELECTORS), then joins in Python:

- pods that have not started (status.phase other than Running, Succeeded, Failed), and the pods a
  Warning event names for a container that could not start or a dead FUSE mount (kubelet posts
  one on every retry), read one by one: a Running pod whose container waits in
  CreateContainerError, or whose FUSE mount died, is found without listing every Running pod;
- the Warning events of pods (the evidence of the classification);
- the nodes, and the pods of each node that is not Ready (spec.nodeName);
- the claims and PersistentVolumes of those pods, read by name;
- the VolumeAttachments (the API has no selector for them), of which only those of the volumes
  concerned and of the nodes that are not Ready are kept.

The classification itself stays in _decisions/diagnose (stuck_pods, diagnose) and
_decisions/node_volumes (down_node_volumes): the result of gather() fed to them gives what they give on the whole
cluster's lists (tests/unit/plugins/module_utils/test__diagnose_k8s.py proves it on generated
clusters). `api` is anything with get(path, what, missing_ok), list(path, what, label_selector,
field_selector, page) and server_version(): KubeApi, or a fake in unit tests.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import re

from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import (
    FUSE_DEAD,
    diagnose,
    pv_rbd_image,
    stuck_pods,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    check_object_name, node_addresses, node_ready)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import missing_node
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_LEASE_GRACE, check_range
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import get_each
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError
from ansible_collections.volfence.csi.plugins.module_utils._k8s.events import OWN_EVENTS, recent_own_events
from ansible_collections.volfence.csi.plugins.module_utils._decisions.remediators import other_remediators_by_node
from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import LEASE_NAMESPACE, failed_set
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import (
    down_node_volumes,
    failover_volumes,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.preflight import failover_preflight
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import pod_claims

# Pods that have not started: Pending (and Unknown, a pod whose node stopped reporting).
PODS_NOT_STARTED = 'status.phase!=Running,status.phase!=Succeeded,status.phase!=Failed'
# The Warning events of pods: FailedMount, FailedAttachVolume (Multi-Attach), Failed (container).
POD_WARNINGS = 'involvedObject.kind=Pod,type=Warning'

# The field selectors the real API server accepts, by kind (k8s.io/kubernetes pkg/apis/core/v1
# conversion.go; metadata.name and metadata.namespace for every kind). gather() uses no other.
FIELD_SELECTORS = {
    'Pod': ('metadata.name', 'metadata.namespace', 'spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName',
            'spec.serviceAccountName', 'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.podIPs',
            'status.nominatedNodeName'),
    'Event': ('metadata.name', 'metadata.namespace', 'involvedObject.kind', 'involvedObject.namespace',
              'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion',
              'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent',
              'source', 'type'),
    'Node': ('metadata.name', 'spec.unschedulable'),
}

# Warning reasons of a pod whose containers could not start (kubelet's "Failed" is posted for
# CreateContainerError and CreateContainerConfigError), or whose volume could not be mounted or attached.
START_FAILURE_REASONS = ('Failed', 'FailedMount', 'FailedMapVolume', 'FailedAttachVolume', 'FailedCreatePodContainer')

DEFAULT_PAGE = 500
READ_WORKERS = 8  # parallel GETs of claims and PVs by name, over one connection pool
MAX_PAGE = 10000


def check_gather_request(nodes, lease_grace, page):
    """ValueError naming the bad value of a failed-nodes read (failed_nodes_info, failed_nodes state=started),
    before connecting."""
    if not nodes:
        raise ValueError('nodes: give at least one node')
    for name in nodes:
        check_object_name(name, 'node')
    check_range(lease_grace, 'lease_grace_seconds', 0, MAX_LEASE_GRACE, 'seconds')
    check_range(page, 'page_size', 1, MAX_PAGE)


def missing_message(gathered):
    """The user's words for the named nodes that do not exist, with the cluster's nodes."""
    names = [_meta(n).get('name') for n in gathered['nodes']]
    return '; '.join(missing_node(name, names) for name in gathered['missing']) + '; nothing was changed'


_NAMESPACE_RE = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')


def check_namespace(name):
    """`name` unchanged, or ValueError when it cannot be a namespace's name (DNS-1123 label)."""
    if not isinstance(name, str) or len(name) > 63 or not _NAMESPACE_RE.match(name):
        raise ValueError('namespaces: %r is not a namespace name (at most 63 lowercase letters, digits and "-"); '
                         'nothing was read' % (name,))
    return name


def _meta(obj):
    return (obj or {}).get('metadata') or {}


def _key(obj):
    meta = _meta(obj)
    return meta.get('namespace'), meta.get('name')


def slim(obj):
    """A copy of an API object without what no rule reads and that can be large: managedFields,
    the last-applied annotation, a node's image list."""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    meta = dict(_meta(obj))
    meta.pop('managedFields', None)
    annotations = meta.get('annotations')
    if isinstance(annotations, dict) and 'kubectl.kubernetes.io/last-applied-configuration' in annotations:
        meta['annotations'] = dict((k, v) for k, v in annotations.items()
                                   if k != 'kubectl.kubernetes.io/last-applied-configuration')
    if 'metadata' in obj:
        out['metadata'] = meta
    status = out.get('status')
    if isinstance(status, dict) and 'images' in status:
        out['status'] = dict((k, v) for k, v in status.items() if k != 'images')
    return out


def pods_named_by_warnings(events):
    """(namespace, name) of the pods that Warning events name for a container that could not
    start, a volume that could not be mounted or attached, or a dead FUSE mount; sorted."""
    found = set()
    for event in events or []:
        obj = event.get('involvedObject') or {}
        if obj.get('kind') not in (None, 'Pod') or not obj.get('name'):
            continue
        if event.get('reason') in START_FAILURE_REASONS or FUSE_DEAD in (event.get('message') or '').lower():
            found.add((obj.get('namespace') or _meta(event).get('namespace'), obj['name']))
    return sorted(found, key=lambda k: (k[0] or '', k[1]))


def events_of(pods, events):
    """The events that the classification reads for `pods` (by name, and uid when it has one)."""
    names = set(_meta(p).get('name') for p in pods)
    uids = set(_meta(p).get('uid') for p in pods)
    return [e for e in events or [] if (e.get('involvedObject') or {}).get('name') in names
            and (e.get('involvedObject') or {}).get('uid') in uids | set([None])]


def claim_refs(pods):
    """(namespace, claim) of every claim of `pods` (persistentVolumeClaim and generic ephemeral), sorted."""
    refs = set()
    for pod in pods:
        for claim in pod_claims(pod):
            refs.add((_meta(pod).get('namespace'), claim))
    return sorted(refs, key=lambda r: (r[0] or '', r[1]))


def attachments_concerned(vas, pv_names, node_names):
    """The VolumeAttachments of the PVs `pv_names` (any node) or of the nodes `node_names`."""
    out = []
    for va in vas or []:
        spec = va.get('spec') or {}
        if ((spec.get('source') or {}).get('persistentVolumeName') in pv_names
                or spec.get('nodeName') in node_names):
            out.append(va)
    return out


def rbd_images(diagnoses):
    """{'rbd-csi': [...], 'rbd-intree': [...]}: the RBD images of the diagnosed pods' volumes."""
    images = {'rbd-csi': [], 'rbd-intree': []}
    for entry in diagnoses:
        for volume in entry.get('volumes') or []:
            kind, image = volume.get('kind'), volume.get('image')
            if kind in images and image and image not in images[kind]:
                images[kind].append(image)
    return images


def addresses_by_node(nodes):
    """{node: [IP, ...]} (every IP a node lists), for the node_addresses option of the Ceph modules."""
    return dict((_meta(n).get('name'), [str(ip) for _kind, ip in node_addresses(n)]) for n in nodes or [])


def _paths(resource_path, plural, namespaces, group='', version='v1'):
    if namespaces:
        return [resource_path(group, version, plural, namespace=ns) for ns in namespaces]
    return [resource_path(group, version, plural)]


def gather(api, resource_path, *, namespaces=None, threshold=120, page=DEFAULT_PAGE, now=None, workers=READ_WORKERS):
    """Read what the diagnosis needs and join it (see the module docstring). Returns a dict:
    server_version, objects (pods: the stuck pods; events, pvcs, pvs, volumeattachments, nodes:
    what their classification reads; networkfences, whose blocklist entries are theirs), stuck (the first classification, without watchers or
    locks), images (rbd-csi and rbd-intree lists), node_addresses, nodes_not_ready
    (_decisions/node_volumes.down_node_volumes), volfence_events (the collection's own recent Events,
    events.recent_own_events) with volfence_events_error (why they could not be read, else None) and
    listed (how many objects of each kind were read)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    namespaces = sorted(set(namespaces or []))
    listed = dict(pods=0, events=0, nodes=0, pvcs=0, pvs=0, volumeattachments=0, networkfences=0)
    version = (api.server_version() or {}).get('gitVersion')

    nodes = api.list(resource_path('', 'v1', 'nodes'), what=('Node', None), page=page)
    listed['nodes'] = len(nodes)

    candidates = {}
    for path in _paths(resource_path, 'pods', namespaces):
        for pod in api.list(path, what=('Pod', None), field_selector=PODS_NOT_STARTED, page=page):
            candidates[_key(pod)] = pod
    warnings = []
    for path in _paths(resource_path, 'events', namespaces):
        warnings.extend(api.list(path, what=('Event', None), field_selector=POD_WARNINGS, page=page))
    listed['events'] = len(warnings)
    for namespace, name in pods_named_by_warnings(warnings):
        if (namespace, name) in candidates or not namespace or (namespaces and namespace not in namespaces):
            continue
        pod = api.get(resource_path('', 'v1', 'pods', name, namespace), what=('Pod', name, namespace),
                      missing_ok=True)
        if pod is not None:
            candidates[(namespace, name)] = pod
    stuck = stuck_pods(list(candidates.values()), warnings, threshold, now)

    down = [_meta(n).get('name') for n in nodes if _meta(n).get('name') and node_ready(n) != 'True']
    down_pods = {}
    for node in down:
        for path in _paths(resource_path, 'pods', namespaces):
            for pod in api.list(path, what=('Pod', None), field_selector='spec.nodeName=%s' % node, page=page):
                down_pods[_key(pod)] = pod
    listed['pods'] = len(candidates) + len(down_pods)

    pvcs = get_each(api, [(resource_path('', 'v1', 'persistentvolumeclaims', claim, namespace),
                           ('PersistentVolumeClaim', claim, namespace))
                          for namespace, claim in claim_refs(stuck + list(down_pods.values()))], workers)
    listed['pvcs'] = len(pvcs)
    pv_names = set(((c.get('spec') or {}).get('volumeName')) for c in pvcs) - set([None, ''])
    all_vas = api.list(resource_path('storage.k8s.io', 'v1', 'volumeattachments'), what=('VolumeAttachment', None),
                       page=page)
    listed['volumeattachments'] = len(all_vas)
    vas = attachments_concerned(all_vas, pv_names, set(down))
    pv_names |= set(((va.get('spec') or {}).get('source') or {}).get('persistentVolumeName') for va in vas
                    if (va.get('spec') or {}).get('nodeName') in down) - set([None, ''])
    pvs = get_each(api, [(resource_path('', 'v1', 'persistentvolumes', name), ('PersistentVolume', name))
                         for name in sorted(pv_names)], workers)
    listed['pvs'] = len(pvs)

    # the NetworkFences, when CSI-Addons is installed: the blocklist entries they made are theirs
    fences = []
    if api.served('csiaddons.openshift.io', 'v1alpha1', 'networkfences'):
        fences = api.list(resource_path('csiaddons.openshift.io', 'v1alpha1', 'networkfences'),
                          what=('NetworkFence', None), page=page)
    listed['networkfences'] = len(fences)

    # What earlier runs of the collection did, as they told it in the cluster. The Events of cluster-scoped
    # objects (nodes, attachments, volumes) live in default. A refusal to list them (RBAC) is said, not fatal.
    own, own_error = [], None
    try:
        for path in _paths(resource_path, 'events', sorted(set(namespaces) | set(['default'])) if namespaces else None):
            own.extend(api.list(path, what=('Event', None), field_selector=OWN_EVENTS, page=page))
    except K8sError as exc:
        own_error = str(exc)

    events = events_of(stuck, warnings)
    first = diagnose(stuck, events=events, pvcs=pvcs, pvs=pvs, vas=vas, nodes=nodes, git_version=version,
                     threshold=threshold, now=now)
    images = rbd_images(first)
    objects = dict(pods=[slim(p) for p in stuck], events=[slim(e) for e in events], pvcs=[slim(c) for c in pvcs],
                   pvs=[slim(p) for p in pvs], volumeattachments=[slim(v) for v in vas],
                   nodes=[slim(n) for n in nodes], networkfences=[slim(f) for f in fences])
    return dict(server_version=version, objects=objects, stuck=first,
                images=images, node_addresses=addresses_by_node(nodes),
                nodes_not_ready=down_node_volumes(nodes, pods=list(down_pods.values()), pvcs=pvcs, pvs=pvs,
                                                  attachments=vas),
                volfence_events=recent_own_events(own), volfence_events_error=own_error, listed=listed)


# --------------------------------------------------------------------------- node_failover / node_recover


def waiting_volumes(api, resource_path, pods, workers=READ_WORKERS):
    """[{pod, uid, node, claim, pv, image}]: the RBD volumes of pods that have not started, their claims
    and PersistentVolumes read by name (what a failover waits on when the nodes' own pods are gone)."""
    claims = get_each(api, [(resource_path('', 'v1', 'persistentvolumeclaims', claim, namespace),
                             ('PersistentVolumeClaim', claim, namespace)) for namespace, claim in claim_refs(pods)],
                      workers)
    bound = dict(((_meta(c).get('namespace'), _meta(c).get('name')), (c.get('spec') or {}).get('volumeName'))
                 for c in claims)
    pvs = get_each(api, [(resource_path('', 'v1', 'persistentvolumes', name), ('PersistentVolume', name))
                         for name in sorted(set(bound.values()) - set([None, '']))], workers)
    images = dict((_meta(pv).get('name'), pv_rbd_image(pv)[1]) for pv in pvs)
    out = []
    for pod in pods:
        meta = _meta(pod)
        for namespace, claim in claim_refs([pod]):
            pv = bound.get((namespace, claim))
            if images.get(pv):
                out.append(dict(pod='%s/%s' % (meta.get('namespace'), meta.get('name')), uid=meta.get('uid'),
                                node=(pod.get('spec') or {}).get('nodeName'), claim='%s/%s' % (namespace, claim),
                                pv=pv, image=images[pv]))
    return out


def gather_failed_nodes(api, resource_path, names, *, lease_grace=120, force=False, volumes=True,
                        page=DEFAULT_PAGE, now=None, workers=READ_WORKERS):
    """What node_failover (and, with volumes=False, node_recover) reads before deciding, asked
    only for what the failed nodes need, then joined:

    - every node and every node Lease (the safety rules need the live nodes' addresses and
      Leases to keep their watchers: I1), paged;
    - with `volumes`: the pods on each failed node (spec.nodeName), their claims and the PVs read
      by name, the VolumeAttachments (no selector exists for them) of which only the failed
      nodes' are kept.

    Returns server_version, missing (the names no node has), nodes, leases, pods (slimmed),
    objects (the claims, PVs and VolumeAttachments read, slimmed), preflight (_decisions/preflight.failover_preflight),
    volumes (_decisions/node_volumes.failover_volumes), images (the RBD images of those volumes), node_addresses,
    listed (objects read per kind) and other_remediators (what others did on the failed nodes to remediate
    them, _decisions/remediators.py). Fed the whole cluster's lists, failover_preflight and failover_volumes give the same answer (unit-tested)."""
    failed = failed_set(names)
    version = (api.server_version() or {}).get('gitVersion')
    nodes = api.list(resource_path('', 'v1', 'nodes'), what=('Node', None), page=page)
    leases = api.list(resource_path('coordination.k8s.io', 'v1', 'leases', namespace=LEASE_NAMESPACE),
                      what=('Lease', None, LEASE_NAMESPACE), page=page)
    known = set(_meta(n).get('name') for n in nodes)
    listed = dict(nodes=len(nodes), leases=len(leases), pods=0, pvcs=0, pvs=0, volumeattachments=0)
    pods, pvcs, pvs, vas = [], [], [], []
    if volumes:
        for name in failed:
            if name in known:
                pods.extend(api.list(resource_path('', 'v1', 'pods'), what=('Pod', None),
                                     field_selector='spec.nodeName=%s' % name, page=page))
        pvcs = get_each(api, [(resource_path('', 'v1', 'persistentvolumeclaims', claim, namespace),
                               ('PersistentVolumeClaim', claim, namespace)) for namespace, claim in claim_refs(pods)],
                        workers)
        all_vas = api.list(resource_path('storage.k8s.io', 'v1', 'volumeattachments'),
                           what=('VolumeAttachment', None), page=page)
        listed['volumeattachments'] = len(all_vas)
        vas = [va for va in all_vas if (va.get('spec') or {}).get('nodeName') in failed]
        pv_names = set((c.get('spec') or {}).get('volumeName') for c in pvcs)
        pv_names |= set(((va.get('spec') or {}).get('source') or {}).get('persistentVolumeName') for va in vas)
        pvs = get_each(api, [(resource_path('', 'v1', 'persistentvolumes', name), ('PersistentVolume', name))
                             for name in sorted(pv_names - set([None, '']))], workers)
        listed.update(pods=len(pods), pvcs=len(pvcs), pvs=len(pvs))
    joined = failover_volumes(failed, pods=pods, pvcs=pvcs, pvs=pvs, attachments=vas) if volumes else []
    images = []
    for volume in joined:
        if volume.get('image') and volume['image'] not in images:
            images.append(volume['image'])
    waiting = []
    if volumes:
        # Kubernetes (the out-of-service taint), another remediator or a person may have removed the
        # nodes' pods and attachments already: the pods that have not started elsewhere may wait on
        # what the nodes' clients still hold. Their RBD images are read too; only the failed nodes'
        # clients of them are ever fenced (fence_plan, I1).
        not_started = api.list(resource_path('', 'v1', 'pods'), what=('Pod', None), field_selector=PODS_NOT_STARTED,
                               page=page)
        elsewhere = [p for p in not_started if (p.get('spec') or {}).get('nodeName') not in failed]
        listed['pods'] += len(elsewhere)
        waiting = waiting_volumes(api, resource_path, elsewhere, workers)
        for item in waiting:
            if item['image'] not in images:
                images.append(item['image'])
    return dict(server_version=version, missing=[n for n in failed if n not in known],
                nodes=[slim(n) for n in nodes], leases=[slim(lease) for lease in leases],
                pods=[slim(p) for p in pods],
                objects=dict(pvcs=[slim(c) for c in pvcs], pvs=[slim(v) for v in pvs],
                             volumeattachments=[slim(va) for va in vas]),
                preflight=failover_preflight(failed, nodes, leases=leases, lease_grace=lease_grace, force=force,
                                             now=now),
                volumes=joined, images=images, waiting=waiting, node_addresses=addresses_by_node(nodes), listed=listed,
                other_remediators=other_remediators_by_node(nodes, failed))

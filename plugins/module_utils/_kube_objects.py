# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: pure helpers over Kubernetes objects as plain dicts (JSON).

Standard library only, no Ansible or kubernetes imports, so everything here is unit-tested
directly (tests/unit/plugins/module_utils/test__k8s_objects.py): timestamps, node readiness,
taints and addresses, object names, the server version, a pod's claims and controller. Both sides
import it: the decision layer (_decisions) reads objects with it, and the I/O packages (_k8s, the
modules) too, so neither imports the other for it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import datetime
import ipaddress
import re

OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service'

_UTC = datetime.timezone.utc

# --------------------------------------------------------------------------- time


def utcnow():
    return datetime.datetime.now(_UTC)


_TIME_RE = re.compile(r'^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:?\d\d)?$')


def parse_time(value):
    """An RFC 3339 timestamp as the API server writes it (``2026-01-02T03:04:05Z``, optionally
    with a fraction or an offset) as an aware datetime; None for None or ''.
    Raises ValueError for anything else."""
    if not value:
        return None
    match = _TIME_RE.match(str(value).strip())
    if not match:
        raise ValueError('not an RFC 3339 timestamp: %r' % (value,))
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    micro = int((fraction or '0')[:6].ljust(6, '0'))
    moment = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro,
                               tzinfo=_UTC)
    if offset and offset not in ('Z', 'z'):
        sign = 1 if offset[0] == '+' else -1
        digits = offset[1:].replace(':', '')
        moment -= sign * datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return moment


def age_seconds(value, now=None):
    """Whole seconds elapsed since the timestamp `value` (negative if in the future), None if unset
    or unparsable."""
    try:
        moment = parse_time(value)
    except ValueError:
        return None
    if moment is None:
        return None
    return int(((now or utcnow()) - moment).total_seconds())


# --------------------------------------------------------------------------- nodes


def node_ready_condition(node):
    """The node's Ready condition dict, or None."""
    for cond in ((node or {}).get('status') or {}).get('conditions') or []:
        if cond.get('type') == 'Ready':
            return cond
    return None


def node_ready(node):
    """'True', 'False' or 'Unknown' as the Ready condition says ('Unknown' without one)."""
    cond = node_ready_condition(node)
    return (cond or {}).get('status') or 'Unknown'


def node_not_ready_for(node, now=None):
    """Seconds the node has not been Ready (since the Ready condition's last transition); 0 when it
    is Ready; None when it is not Ready and the duration is unknown."""
    cond = node_ready_condition(node)
    if cond is not None and cond.get('status') == 'True':
        return 0
    if cond is None:
        return None
    return age_seconds(cond.get('lastTransitionTime'), now)


def object_name(obj):
    """metadata.name of an API object as a dict; None when it has none."""
    return ((obj or {}).get('metadata') or {}).get('name')


def node_taints(node):
    return list(((node or {}).get('spec') or {}).get('taints') or [])


def has_taint(node, key):
    return any(t.get('key') == key for t in node_taints(node))


def is_out_of_service(taint):
    """The out-of-service taint as Kubernetes matches it: by key and NoExecute; its value is free text."""
    return isinstance(taint, dict) and taint.get('key') == OUT_OF_SERVICE_TAINT and taint.get('effect') == 'NoExecute'


def merge_patch_applied(target, patch):
    """`target` with the JSON merge patch `patch` applied (RFC 7386), as the API server applies it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch_applied(out.get(key), value)
    return out


def node_addresses(node):
    """The node's IP addresses (any status.addresses entry whose address parses as an IP, whatever
    its type: InternalIP, ExternalIP), as (type, ipaddress object) pairs, in the order given."""
    out = []
    seen = set()
    for entry in ((node or {}).get('status') or {}).get('addresses') or []:
        try:
            addr = ipaddress.ip_address(str(entry.get('address', '')).strip())
        except ValueError:
            continue  # Hostname, InternalDNS, ...
        if addr not in seen:
            seen.add(addr)
            out.append((entry.get('type') or '', addr))
    return out


def node_summary(node, now=None):
    """What the modules report about a node."""
    if node is None:
        return None
    return dict(
        name=node['metadata']['name'],
        ready=node_ready(node),
        not_ready_seconds=node_not_ready_for(node, now),
        taints=[t.get('key') for t in node_taints(node)],
        addresses=[str(a) for _t, a in node_addresses(node)],
    )


# --------------------------------------------------------------------------- names and versions

_SUBDOMAIN_RE = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')


def check_object_name(name, what='name'):
    """Raise ValueError unless `name` is a valid DNS-1123 subdomain, the rule for the names of
    nodes, VolumeAttachments, PersistentVolumes and NetworkFences."""
    if not isinstance(name, str) or not name:
        raise ValueError('%s must be a non-empty string' % what)
    if len(name) > 253 or not _SUBDOMAIN_RE.match(name):
        raise ValueError('%s %r is not a valid Kubernetes object name (lowercase letters, digits, "-" and ".", '
                         'starting and ending with a letter or digit, at most 253 characters)' % (what, name))
    return name


_VERSION_RE = re.compile(r'^v?(\d+)\.(\d+)(?:\.(\d+))?')


def parse_kube_version(git_version):
    """(major, minor, patch) of a /version gitVersion such as ``v1.23.5+vmware.1`` or
    ``v1.22.9-eks-a1b2``; None if it cannot be read."""
    match = _VERSION_RE.match(str(git_version or '').strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def object_ref(kind, name, namespace=None):
    """The dict the modules return to name an object in errors and results."""
    ref = dict(kind=kind, name=name)
    if namespace:
        ref['namespace'] = namespace
    return ref


def describe(kind, name, namespace=None):
    """``VolumeAttachment csi-1234`` / ``Pod default/web-0`` for messages."""
    if name is None:
        return kind
    return '%s %s%s' % (kind, (namespace + '/') if namespace else '', name)


# --------------------------------------------------------------------------- pods


def volume_claim(pod_name, volume):
    """The PersistentVolumeClaim name one pod volume uses: its persistentVolumeClaim's claimName, or
    for a generic ephemeral volume the claim Kubernetes makes for it, <pod>-<volume>. None for a
    volume that uses no claim (or that cannot be read)."""
    if not isinstance(volume, dict):
        return None
    claim = (volume.get('persistentVolumeClaim') or {}).get('claimName')
    if claim:
        return claim
    if volume.get('ephemeral') is not None and pod_name and volume.get('name'):
        return '%s-%s' % (pod_name, volume['name'])
    return None


def pod_claims(pod):
    """The PVC names a pod's volumes refer to (persistentVolumeClaim and generic ephemeral), in the
    order of its volumes. Never raises on a partial pod."""
    pod_name = object_name(pod)
    volumes = ((pod or {}).get('spec') or {}).get('volumes') or []
    return [c for c in (volume_claim(pod_name, v) for v in volumes) if c]


def pod_claim_refs(pod):
    """'namespace/claim' of each claim the pod uses (pod_claims()), sorted."""
    namespace = ((pod or {}).get('metadata') or {}).get('namespace')
    return sorted('%s/%s' % (namespace, claim) for claim in pod_claims(pod))


def controller_of(pod):
    """The ownerReference of the controller that recreates `pod` (the one marked controller, else
    the first), None for a pod no controller owns: deleted, it is gone for good."""
    references = [r for r in ((pod or {}).get('metadata') or {}).get('ownerReferences') or [] if isinstance(r, dict)]
    controllers = [r for r in references if r.get('controller')]
    return (controllers or references or [None])[0]

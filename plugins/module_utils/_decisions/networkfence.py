# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: CSI-Addons NetworkFence logic, pure (no I/O), unit-tested.

The API, from csi-addons/kubernetes-csi-addons api/csiaddons/v1alpha1/:

networkfence_types.go -- NetworkFence, cluster-scoped, group csiaddons.openshift.io, v1alpha1,
status subresource:

* ``spec.networkFenceClassName`` (string; CEL ``self == oldSelf``: "networkFenceClassName is
  immutable"). The newer shape: driver, secret and parameters come from the class.
* ``spec.driver`` (string; deprecated: "specifying driver in networkfence is deprecated, please
  use networkFenceClassName instead"; CEL: "driver is immutable").
* ``spec.fenceState``: ``Fenced`` | ``Unfenced`` (enum, required, default Fenced). Mutable.
* ``spec.cidrs``: list of CIDR blocks (required). Mutable: no CEL rule on it.
* ``spec.secret``: ``{name, namespace}`` (deprecated; CEL on the struct and on name and
  namespace: "secret is immutable", "name is immutable", "namespace is immutable").
* ``spec.parameters``: map[string]string (deprecated; CEL: "parameters are immutable").
* Spec-level CEL: "one of driver or networkFenceClassName must be present"; "secret must be
  present when networkFenceClassName is not specified". With both, the class wins.
* ``status.result``: ``Succeeded`` | ``Failed``; ``status.message`` ("fencing operation
  successful", "unfencing operation successful", or the error); ``status.conditions``.
  There is no observedGeneration: the controller reconciles on generation changes only
  (GenerationChangedPredicate) and overwrites result/message (internal/controller/csiaddons/
  networkfence_controller.go).

networkfenceclass_types.go -- NetworkFenceClass, cluster-scoped: ``spec.provisioner`` (the CSI
driver, required, immutable) and ``spec.parameters`` (map, immutable; the controller takes the
secret from its ``csiaddons.openshift.io/networkfence-secret-name``/``-namespace`` keys).

csiaddonsnode_types.go -- CSIAddonsNode, namespaced: ``spec.driver.{name, nodeID, endpoint}``,
``status.state`` ``Connected`` | ``Failed``. The controller sends fence requests to the leading
connected CSIAddonsNode of the driver; with none connected, nothing acts on a fence.

On deletion the controller only removes its finalizer (``csiaddons.openshift.io/network-fence``):
deleting a Fenced fence does NOT unfence its CIDRs. So ``state=absent`` unfences first.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import json
import re

from ansible_collections.volfence.csi.plugins.module_utils._addresses import parse_each, parse_network
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    check_object_name,
    node_addresses,
    node_ready,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.cluster_view import (
    network_contains,
    normalize_ip,
    normalize_network,
    ready_without_address,
)

GROUP = 'csiaddons.openshift.io'
VERSION = 'v1alpha1'
API_VERSION = GROUP + '/' + VERSION
FENCES = 'networkfences'
CLASSES = 'networkfenceclasses'
ADDONS_NODES = 'csiaddonsnodes'

FENCED = 'Fenced'
UNFENCED = 'Unfenced'
FENCE_STATES = (FENCED, UNFENCED)
SUCCEEDED = 'Succeeded'
FAILED = 'Failed'
SUCCESS_MESSAGES = {FENCED: 'fencing operation successful', UNFENCED: 'unfencing operation successful'}

# Actions of a plan
CREATE = 'create'
UPDATE = 'update'
DELETE = 'delete'
UNFENCE_DELETE = 'unfence_and_delete'
NONE = 'none'

# Options a `fences` entry inherits from the module's top-level options.
INHERITED = ('state', 'fence_state', 'driver', 'secret', 'parameters', 'network_fence_class', 'labels')
ENTRY_OPTIONS = ('name', 'cidrs') + INHERITED


# --------------------------------------------------------------------------- CIDRs

# IPv4-mapped IPv6 (::ffff:a.b.c.d): the same hosts as IPv4 (I1 compares normalised addresses).
_MAPPED_V4 = ipaddress.ip_network(u'::ffff:0:0/96')
_ALL_V4 = ipaddress.ip_network(u'0.0.0.0/0')


def normalize_cidr(value):
    """The canonical form of a CIDR block (``10.0.3.0/24``, ``fd00::/120``); a bare address becomes
    a single-address block (``/32``, ``/128``). ValueError with a clear message otherwise (the
    messages of _addresses.parse_network: not an IP address, not a CIDR, ambiguous)."""
    if value is None:
        raise ValueError('CIDR is empty')
    text = value.strip() if isinstance(value, str) else str(value).strip()
    net = parse_network(text, 'CIDR', bare='host')
    if net.prefixlen == 0:
        raise ValueError('%r would fence every address; refused' % (text,))
    if net.version == 6 and net.supernet_of(_MAPPED_V4):
        raise ValueError('%r holds every IPv4-mapped IPv6 address (::ffff:0:0/96), that is every IPv4 address; '
                         'refused' % (text,))
    return _cidr_text(net)


def _cidr_text(net):
    """str(net), with an IPv4-mapped IPv6 range written ::ffff:a.b.c.d/prefix (Python < 3.13 writes
    ::ffff:a00:30c, which nobody recognises as 10.0.3.12)."""
    if net.version == 6 and net.prefixlen >= 96 and net.network_address.ipv4_mapped is not None:
        return '::ffff:%s/%d' % (net.network_address.ipv4_mapped, net.prefixlen)
    return str(net)


def normalize_cidrs(values):
    """Canonical, duplicate-free CIDRs in the order given. Raises ValueError listing every bad one."""
    out, errors = parse_each(values, normalize_cidr)
    if errors:
        raise ValueError('; '.join(errors))
    return out


def _cidr_key(value):
    try:
        return normalize_cidr(value)
    except ValueError:
        return str(value)


def same_cidrs(a, b):
    return set(_cidr_key(c) for c in a or []) == set(_cidr_key(c) for c in b or [])


def compared_networks(cidr):
    """The normalised networks a CIDR covers, for the I1 comparisons: an IPv4-mapped IPv6 range as the
    IPv4 range it is (``::ffff:10.0.0.0/120`` is 10.0.0.0/24), and an IPv6 range that holds the whole
    mapped range (``::/64``) also as every IPv4 address. [] for something that is not a CIDR."""
    net = normalize_network(cidr)
    if net is None:
        return []
    out = [net]
    if net.version == 6 and net.supernet_of(_MAPPED_V4):
        out.append(_ALL_V4)
    return out


class NodeIndex(object):
    """Node addresses, normalised (IPv4-mapped IPv6 unmapped: cluster_view.normalize_ip), indexed for the I1
    coverage checks (a /32 is one dict look-up). Every address type counts (InternalIP, ExternalIP, ...);
    an address several nodes list is kept for each of them."""

    def __init__(self, nodes):
        self.ready = {}
        self.by_addr = {}       # normalised address -> [node names], in the order listed
        self.all = []           # (normalised address, node name)
        self.addressless = []   # nodes whose status lists no IP address at all
        for node in nodes or []:
            name = node['metadata']['name']
            self.ready[name] = node_ready(node)
            seen = []
            for _type, addr in node_addresses(node):
                addr = normalize_ip(addr)
                if addr is None or addr in seen:
                    continue
                seen.append(addr)
                self.by_addr.setdefault(addr, []).append(name)
                self.all.append((addr, name))
            if not seen:
                self.addressless.append(name)

    def addressless_ready(self):
        """Names of the Ready nodes that list no IP: any address might be theirs."""
        return ready_without_address(self.ready, self.addressless)

    def _addresses_in(self, cidr):
        """The listed (normalised) addresses inside `cidr`."""
        nets = compared_networks(cidr)
        out = []
        for net in nets:
            if net.prefixlen == net.max_prefixlen:
                if net.network_address in self.by_addr and net.network_address not in out:
                    out.append(net.network_address)
                continue
            for addr in self.by_addr:
                if network_contains(net, addr) and addr not in out:
                    out.append(addr)
        return out

    def covered(self, cidr):
        """{node name: [addresses]} of the nodes with an address inside `cidr`."""
        out = {}
        for addr in self._addresses_in(cidr):
            for name in self.by_addr[addr]:
                out.setdefault(name, []).append(str(addr))
        return out

    def shared(self, cidrs):
        """[(address, [node names], [cidrs])] of the addresses inside the CIDRs that several nodes list."""
        found = {}
        for cidr in cidrs or []:
            for addr in self._addresses_in(cidr):
                if len(self.by_addr[addr]) > 1:
                    found.setdefault(addr, []).append(cidr)
        return [(str(addr), sorted(self.by_addr[addr]), found[addr]) for addr in sorted(found, key=_address_sort_key)]

    def holds_unlisted(self, cidr):
        """Whether `cidr` holds at least one address that no node lists (True for what is not a CIDR)."""
        nets = compared_networks(cidr)
        if not nets:
            return True
        for net in nets:
            if net.num_addresses > len(self.by_addr):
                return True
            if len(self._addresses_in(str(net))) < net.num_addresses:
                return True
        return False

    def coverage(self, cidrs):
        """[{name, ready, addresses, cidrs}] of the nodes the CIDRs cover, sorted by name."""
        nodes = {}
        for cidr in cidrs or []:
            for name, addrs in self.covered(cidr).items():
                entry = nodes.setdefault(name, dict(name=name, ready=self.ready.get(name), addresses=[], cidrs=[]))
                entry['cidrs'].append(cidr)
                for addr in addrs:
                    if addr not in entry['addresses']:
                        entry['addresses'].append(addr)
        return [nodes[name] for name in sorted(nodes)]


def _address_sort_key(addr):
    """IPv4 before IPv6, each in numeric order."""
    return addr.version, int(addr)


# --------------------------------------------------------------------------- requests

def _string_map(value, what):
    """A map[string]string from an Ansible dict: numbers become strings, booleans and nested values
    are refused (their string form would be ambiguous)."""
    if value is None:
        return None
    out = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValueError('%s.%s must be a string (quote it: "%s"), got %r' % (what, key, item, item))
        out[str(key)] = str(item)
    return out


def build_requests(params):
    """The fence requests of a module call: one per `fences` entry (inheriting the top-level
    options) or one from `name`. Raises ValueError listing every problem; nothing is changed."""
    errors = []
    if params.get('fences') is not None:
        if params.get('name') is not None or params.get('cidrs') is not None:
            raise ValueError('give either name (and cidrs) or fences, not both')
        raw = params['fences']
        if not raw:
            raise ValueError('fences is empty: give at least one fence')
    else:
        if not params.get('name'):
            raise ValueError('give name (one fence) or fences (many)')
        raw = [dict(name=params['name'], cidrs=params.get('cidrs'))]
    requests = []
    seen = set()
    for index, entry in enumerate(raw):
        req = dict((key, params.get(key)) for key in INHERITED)
        req.update((key, value) for key, value in (entry or {}).items() if value is not None and key in ENTRY_OPTIONS)
        unknown = sorted(set((entry or {}).keys()) - set(ENTRY_OPTIONS))
        where = 'fences[%d]' % index if params.get('fences') is not None else 'the fence'
        if unknown:
            errors.append('%s: unknown option(s) %s' % (where, ', '.join(unknown)))
        try:
            req['name'] = check_object_name(req.get('name'), 'name of %s' % where)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        where = 'NetworkFence %s' % req['name']
        if req['name'] in seen:
            errors.append('%s is given twice' % where)
        seen.add(req['name'])
        req['state'] = req.get('state') or 'present'
        if req['state'] not in ('present', 'absent'):
            errors.append('%s: state must be present or absent, got %r' % (where, req['state']))
        if req.get('fence_state') is not None and req['fence_state'] not in FENCE_STATES:
            errors.append('%s: fence_state must be Fenced or Unfenced, got %r' % (where, req['fence_state']))
        if req.get('cidrs') is not None:
            if not req['cidrs'] and req['state'] == 'present':
                errors.append('%s: cidrs is empty' % where)
            try:
                req['cidrs'] = normalize_cidrs(req['cidrs'])
            except ValueError as exc:
                errors.append('%s: %s' % (where, exc))
        if req.get('driver') is not None and req.get('network_fence_class') is not None:
            errors.append('%s: give either network_fence_class (the current shape) or driver with secret (the '
                          'deprecated one), not both' % where)
        if req.get('network_fence_class') is not None:
            for key in ('secret', 'parameters'):
                if req.get(key) is not None:
                    errors.append('%s: %s belongs in the NetworkFenceClass %s, not in a fence that uses a class'
                                  % (where, key, req['network_fence_class']))
        secret = req.get('secret')
        if secret is not None and (not secret.get('name') or not secret.get('namespace')):
            errors.append('%s: secret needs both name and namespace' % where)
        try:
            req['parameters'] = _string_map(req.get('parameters'), 'parameters')
            req['labels'] = _string_map(req.get('labels'), 'labels')
        except ValueError as exc:
            errors.append('%s: %s' % (where, exc))
        requests.append(req)
    if errors:
        raise ValueError('; '.join(errors))
    return requests


# --------------------------------------------------------------------------- existing fences

def fence_driver(fence, classes):
    """The CSI driver a fence is for: its class's provisioner, else spec.driver; None if unknown."""
    spec = (fence or {}).get('spec') or {}
    class_name = spec.get('networkFenceClassName')
    if class_name:
        cls = (classes or {}).get(class_name)
        return ((cls or {}).get('spec') or {}).get('provisioner')
    return spec.get('driver') or None


def summary(fence):
    """The desired-state fields of a fence, for diffs (None for no fence)."""
    if fence is None:
        return None
    spec = fence.get('spec') or {}
    out = dict(fenceState=spec.get('fenceState'), cidrs=list(spec.get('cidrs') or []))
    for key in ('networkFenceClassName', 'driver', 'secret', 'parameters'):
        if spec.get(key):
            out[key] = spec[key]
    labels = (fence.get('metadata') or {}).get('labels')
    if labels:
        out['labels'] = dict(labels)
    return out


def fence_report(fence, classes, index):
    """What the modules return about a NetworkFence object."""
    meta = fence.get('metadata') or {}
    spec = fence.get('spec') or {}
    status = fence.get('status') or {}
    secret = spec.get('secret') or None
    cidrs = list(spec.get('cidrs') or [])
    return dict(
        name=meta.get('name'),
        fence_state=spec.get('fenceState'),
        cidrs=cidrs,
        driver=fence_driver(fence, classes),
        network_fence_class=spec.get('networkFenceClassName') or None,
        secret=dict(name=secret.get('name'), namespace=secret.get('namespace')) if secret else None,
        parameters=dict(spec.get('parameters') or {}),
        labels=dict(meta.get('labels') or {}),
        result=status.get('result'),
        message=status.get('message'),
        conditions=list(status.get('conditions') or []),
        finalizers=list(meta.get('finalizers') or []),
        deletion_timestamp=meta.get('deletionTimestamp'),
        generation=meta.get('generation'),
        nodes=index.coverage(cidrs) if index is not None else [],
    )


def class_report(cls):
    spec = cls.get('spec') or {}
    return dict(name=cls['metadata']['name'], provisioner=spec.get('provisioner'),
                parameters=dict(spec.get('parameters') or {}))


def addons_node_report(obj):
    driver = (obj.get('spec') or {}).get('driver') or {}
    status = obj.get('status') or {}
    return dict(name=obj['metadata']['name'], namespace=obj['metadata'].get('namespace'), driver=driver.get('name'),
                node_id=driver.get('nodeID'), endpoint=driver.get('endpoint'), state=status.get('state'),
                message=status.get('message'))


# --------------------------------------------------------------------------- planning

class Plan(object):
    """What to do with one fence. `body` for a create, `patch` (a merge patch without the
    resourceVersion) for an update."""

    def __init__(self, req, existing, action, *, body=None, patch=None, cidrs=None, fence_state=None,
                 newly_fenced=None, why=None, new_cidrs=None):
        self.req = req
        self.name = req['name']
        self.existing = existing
        self.action = action
        self.body = body
        self.patch = patch
        self.cidrs = cidrs or []            # the fence's CIDRs once the plan is carried out
        self.fence_state = fence_state      # its fenceState then
        self.newly_fenced = newly_fenced or []
        # CIDRs the plan writes into the fence that it did not hold before (created or added),
        # whatever the fence state: an Unfenced fence is one patch away from fencing them
        self.new_cidrs = new_cidrs or []
        self.why = why
        # filled in while carrying it out
        self.obj = existing
        self.changed = False
        self.outcome = None
        self.error = None
        self.gone = existing is None

    @property
    def writes(self):
        return self.action != NONE

    @property
    def monitor_checked(self):
        """The CIDRs the Ceph monitor check covers: those newly fenced and those newly written into
        the fence in any state, without duplicates."""
        out = []
        keys = set()
        for cidr in list(self.newly_fenced) + list(self.new_cidrs):
            key = _cidr_key(cidr)
            if key not in keys:
                keys.add(key)
                out.append(cidr)
        return out

    def after(self):
        """The predicted summary after the plan (for diffs and check mode)."""
        if self.action in (DELETE, UNFENCE_DELETE):
            return None
        if self.action == CREATE:
            return summary(self.body)
        if self.existing is None:
            return None
        predicted = summary(self.existing)
        if self.patch:
            spec = self.patch.get('spec') or {}
            if 'fenceState' in spec:
                predicted['fenceState'] = spec['fenceState']
            if 'cidrs' in spec:
                predicted['cidrs'] = list(spec['cidrs'])
            labels = (self.patch.get('metadata') or {}).get('labels')
            if labels:
                predicted['labels'] = dict(predicted.get('labels') or {}, **labels)
        return predicted


def _immutable_conflicts(req, existing):
    spec = existing.get('spec') or {}
    name = req['name']
    problems = []

    def conflict(field, have, want):
        problems.append('spec.%s is immutable (the CSI-Addons CRD rejects any change: "%s is immutable"); '
                        'NetworkFence %s has %r and the task asks for %r' % (field, field, name, have, want))
    have_class = spec.get('networkFenceClassName') or None
    have_driver = spec.get('driver') or None
    if req.get('network_fence_class') is not None and req['network_fence_class'] != have_class:
        conflict('networkFenceClassName', have_class, req['network_fence_class'])
    if req.get('driver') is not None and req['driver'] != have_driver:
        conflict('driver', have_driver, req['driver'])
    if req.get('secret') is not None:
        have = spec.get('secret') or {}
        want = dict(name=req['secret'].get('name'), namespace=req['secret'].get('namespace'))
        if dict(name=have.get('name'), namespace=have.get('namespace')) != want:
            conflict('secret', have or None, want)
    if req.get('parameters') is not None and dict(spec.get('parameters') or {}) != req['parameters']:
        conflict('parameters', dict(spec.get('parameters') or {}), req['parameters'])
    return problems


def plan_fence(req, existing, force=False):
    """The Plan for one request against the existing object (or None). Raises ValueError when the
    request cannot be carried out (nothing is changed then)."""
    name = req['name']
    if req['state'] == 'absent':
        if existing is None:
            return Plan(req, None, NONE, why='does not exist')
        if (existing.get('metadata') or {}).get('deletionTimestamp'):
            return Plan(req, existing, NONE, why='already being deleted')
        state = (existing.get('spec') or {}).get('fenceState')
        if state == FENCED and not force:
            return Plan(req, existing, UNFENCE_DELETE, fence_state=UNFENCED,
                        patch=dict(spec=dict(fenceState=UNFENCED)), cidrs=list(existing['spec'].get('cidrs') or []),
                        why='Fenced: unfence first (deleting a fence does not lift it), then delete')
        return Plan(req, existing, DELETE, why='Fenced, deleted without unfencing (force)' if state == FENCED
                    else 'delete')

    if existing is None:
        missing = []
        if req.get('fence_state') is None:
            missing.append('fence_state')
        if not req.get('cidrs'):
            missing.append('cidrs')
        if req.get('network_fence_class') is None and req.get('driver') is None:
            missing.append('network_fence_class (or the deprecated driver with secret)')
        elif req.get('driver') is not None and req.get('secret') is None:
            missing.append('secret (required with driver; CRD rule "secret must be present when networkFenceClassName '
                           'is not specified")')
        if missing:
            raise ValueError('NetworkFence %s does not exist; to create it give %s' % (name, ', '.join(missing)))
        spec = dict(fenceState=req['fence_state'], cidrs=list(req['cidrs']))
        if req.get('network_fence_class') is not None:
            spec['networkFenceClassName'] = req['network_fence_class']
        else:
            spec['driver'] = req['driver']
            spec['secret'] = dict(name=req['secret']['name'], namespace=req['secret']['namespace'])
            if req.get('parameters'):
                spec['parameters'] = dict(req['parameters'])
        metadata = dict(name=name)
        if req.get('labels'):
            metadata['labels'] = dict(req['labels'])
        body = dict(apiVersion=API_VERSION, kind='NetworkFence', metadata=metadata, spec=spec)
        return Plan(req, None, CREATE, body=body, cidrs=spec['cidrs'], fence_state=spec['fenceState'],
                    newly_fenced=spec['cidrs'] if spec['fenceState'] == FENCED else [], why='does not exist',
                    new_cidrs=spec['cidrs'])

    meta = existing.get('metadata') or {}
    spec = existing.get('spec') or {}
    if meta.get('deletionTimestamp'):
        raise ValueError('NetworkFence %s is being deleted (since %s, finalizers: %s); wait until it is gone or use '
                         'another name' % (name, meta['deletionTimestamp'], ', '.join(meta.get('finalizers') or [])
                                           or 'none'))
    problems = _immutable_conflicts(req, existing)
    if problems:
        raise ValueError('; '.join(problems) + '. To change them, unfence and delete the fence (state=absent) and '
                         'create it again, or use another name')
    have_state = spec.get('fenceState')
    have_cidrs = list(spec.get('cidrs') or [])
    want_state = req.get('fence_state') or have_state
    want_cidrs = req['cidrs'] if req.get('cidrs') is not None else have_cidrs
    spec_patch = {}
    if want_state != have_state:
        spec_patch['fenceState'] = want_state
    if not same_cidrs(want_cidrs, have_cidrs):
        spec_patch['cidrs'] = list(want_cidrs)
    labels_patch = {}
    for key, value in (req.get('labels') or {}).items():
        if (meta.get('labels') or {}).get(key) != value:
            labels_patch[key] = value
    patch = {}
    if spec_patch:
        patch['spec'] = spec_patch
    if labels_patch:
        patch['metadata'] = dict(labels=labels_patch)
    newly = []
    if want_state == FENCED:
        if have_state != FENCED:
            newly = list(want_cidrs)
        else:
            have_keys = set(_cidr_key(c) for c in have_cidrs)
            newly = [c for c in want_cidrs if _cidr_key(c) not in have_keys]
    if not patch:
        return Plan(req, existing, NONE, cidrs=have_cidrs, fence_state=have_state, why='up to date')
    what = []
    if 'fenceState' in spec_patch:
        what.append('fenceState %s -> %s' % (have_state, want_state))
    if 'cidrs' in spec_patch:
        what.append('cidrs %s -> %s' % (have_cidrs, want_cidrs))
    if labels_patch:
        what.append('labels')
    added = []
    if 'cidrs' in spec_patch:
        have_keys = set(_cidr_key(c) for c in have_cidrs)
        added = [c for c in want_cidrs if _cidr_key(c) not in have_keys]
    return Plan(req, existing, UPDATE, patch=patch, cidrs=list(want_cidrs), fence_state=want_state,
                newly_fenced=newly, why=', '.join(what), new_cidrs=added)


def coverage_refusals(plans, index):
    """Messages for the plans that would newly fence (I1, after normalising IPv4-mapped IPv6):

    * an address a Ready node lists (any address type);
    * an address that several nodes list (fencing it fences all of them);
    * while a Ready node lists no IP address at all: any address that no node lists, since it could be
      that node's (a CIDR whose every address is listed by NotReady nodes stays allowed).

    The module refuses them unless forced."""
    out = []
    addressless = index.addressless_ready()
    for plan in plans:
        if not plan.newly_fenced or plan.fence_state != FENCED:
            continue
        ready = [n for n in index.coverage(plan.newly_fenced) if n['ready'] == 'True']
        if ready:
            out.append('NetworkFence %s would fence Ready node(s) %s' % (plan.name, ', '.join(
                '%s (%s via %s)' % (n['name'], ', '.join(n['addresses']), ', '.join(n['cidrs'])) for n in ready)))
        shared = index.shared(plan.newly_fenced)
        if shared:
            out.append('NetworkFence %s would fence address(es) that several nodes list: %s' % (plan.name, ', '.join(
                '%s (nodes %s, via %s)' % (addr, ', '.join(names), ', '.join(cidrs)) for addr, names, cidrs in shared)))
        if addressless:
            unlisted = [c for c in plan.newly_fenced if index.holds_unlisted(c)]
            if unlisted:
                out.append('NetworkFence %s would fence %s, which hold(s) addresses no node lists, while Ready node(s) '
                           '%s list no IP address: those addresses could be theirs' % (
                               plan.name, ', '.join(unlisted), ', '.join(addressless)))
    return out


# What each kind of refusal would cost, said once with the refusals (the module stops unless forced).
READY_NODE_REFUSAL = ('. Fencing a Ready node cuts a healthy node off its storage; check the CIDRs, or set force=true '
                      'if that is really intended')
MONITOR_REFUSAL = ('. Fencing a monitor\'s address cuts the clients there off the cluster; check the CIDRs '
                   '(monitor_configmaps names where ceph-csi lists the monitors), or set force=true if that is '
                   'really intended (monitor_configmaps=[] turns the check off)')


def plan_requests(requests, existing, *, classes, classes_served, force=False):
    """The plan of each NetworkFence request (plan_fence), and why a request cannot be planned: a
    NetworkFenceClass it names that does not exist (or cannot, when the cluster serves no
    networkfenceclasses), or plan_fence's own refusal. existing: {name: fence}; classes: {name: class}.
    Returns (plans, problems)."""
    plans, problems = [], []
    for req in requests:
        cls = req.get('network_fence_class')
        if cls is not None and req['state'] == 'present' and cls not in classes:
            problems.append('NetworkFenceClass %s (for NetworkFence %s) %s' % (
                cls, req['name'], 'does not exist' if classes_served else
                'cannot exist: the cluster does not serve networkfenceclasses (CSI-Addons too old?)'))
            continue
        try:
            plans.append(plan_fence(req, existing.get(req['name']), force))
        except ValueError as exc:
            problems.append(str(exc))
    return plans, problems


def refused_unless_forced(refusals, *, consequence, force=False):
    """(problems, warnings) of refusals to fence what must not be fenced (coverage_refusals: a Ready
    node's address, I1; monitor_refusals: a Ceph monitor's): one problem naming them all and what
    fencing them would cost, which stops the run; with force, a warning for each instead."""
    if not refusals:
        return [], []
    if not force:
        return ['; '.join(refusals) + consequence], []
    return [], [r + ' (force=true)' for r in refusals]


def plan_warnings(plans, index):
    """What the report warns about plans that may be carried out: a fence left Fenced over Ready
    nodes (they cannot use their storage), a new fence that uses the deprecated driver/secret/parameters."""
    warnings = []
    for plan in plans:
        if plan.action == NONE and plan.existing is not None and plan.fence_state == FENCED:
            ready = [n['name'] for n in index.coverage(plan.cidrs) if n['ready'] == 'True']
            if ready:
                warnings.append('NetworkFence %s fences Ready node(s) %s: they cannot use their storage; '
                                'unfence once they have been rebooted' % (plan.name, ', '.join(ready)))
        if plan.action == CREATE and plan.req.get('driver'):
            warnings.append('NetworkFence %s uses driver/secret/parameters, deprecated upstream; prefer '
                            'network_fence_class' % plan.name)
    return warnings


# --------------------------------------------------------------------------- results

def fence_outcome(fence, fence_state):
    """Succeeded/Failed once the controller has answered for the fence's current spec, else None.

    The upstream status has no observedGeneration (a stand-in's is honoured if present), so the
    modules clear result/message before they change a fence's spec; a Succeeded whose message is
    the success message of the other fence state is the previous answer and does not count."""
    meta = fence.get('metadata') or {}
    status = fence.get('status') or {}
    observed = status.get('observedGeneration')
    generation = meta.get('generation')
    if observed is not None and generation is not None and observed < generation:
        return None
    result = status.get('result')
    if result == SUCCEEDED:
        other = UNFENCED if fence_state == FENCED else FENCED
        if status.get('message') == SUCCESS_MESSAGES.get(other):
            return None
        return SUCCEEDED
    if result == FAILED:
        return FAILED
    return None


# --------------------------------------------------------------------------- Ceph monitors

# Where ceph-csi's configuration lists the monitors of each clusterID: ceph-csi's own ConfigMap
# (deploy/*/kubernetes/csi-config-map.yaml: key config.json) and the one Rook writes for the
# ceph-csi it deploys (pkg/operator/ceph/csi: ConfigName rook-ceph-csi-config, ConfigKey
# csi-cluster-config-json). Both hold a JSON list of {clusterID, monitors: [...], ...}.
DEFAULT_MONITOR_CONFIGMAPS = ('ceph-csi-config', 'rook-ceph-csi-config')
MONITOR_CONFIG_KEYS = ('config.json', 'csi-cluster-config-json')

_MON_TYPE = re.compile(r'^(?:v1|v2|any|legacy):', re.IGNORECASE)
_MON_V4_PORT = re.compile(r'^(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?(?:/\d+)?$')
_MON_V6_PORT = re.compile(r'^\[([0-9A-Fa-f:.]+)\](?::\d+)?(?:/\d+)?$')
_MON_HOST = re.compile(r'^([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::\d+)?$')


def _split_addrvec(text):
    """The elements of a monitor entry: '[v2:1.2.3.4:3300/0,v1:1.2.3.4:6789/0]' (an addrvec), or
    several entries separated by commas or spaces, or one entry."""
    text = text.strip()
    if text.startswith('[') and text.endswith(']') and _MON_TYPE.match(text[1:]):
        text = text[1:-1]
    parts = []
    depth = 0
    current = ''
    for char in text:
        if char == '[':
            depth += 1
        elif char == ']':
            depth -= 1
        if depth == 0 and char in ', ':
            if current:
                parts.append(current)
            current = ''
            continue
        current += char
    if current:
        parts.append(current)
    out = []
    for part in parts:
        if part.startswith('[') and part.endswith(']') and _MON_TYPE.match(part[1:]):
            out.extend(_split_addrvec(part))
        else:
            out.append(part)
    return out


def parse_monitor(text):
    """(IP addresses, host names) of one monitor entry as ceph-csi's configuration lists it:
    ``10.0.0.1:6789``, ``10.0.0.1``, ``[fd00::1]:6789``, ``fd00::1``,
    ``[v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0]``, ``v2:10.0.0.1:3300``, or a host name
    (``rook-ceph-mon-a.rook-ceph.svc:6789``), which cannot be checked without DNS. Addresses are
    normalised (IPv4-mapped IPv6 as IPv4), without duplicates. What is neither is returned as a
    host name too (reported as unchecked, never silently dropped)."""
    ips, hosts = [], []
    for part in _split_addrvec(str(text)):
        value = _MON_TYPE.sub('', part.strip())
        if not value:
            continue
        ip = None
        match = _MON_V4_PORT.match(value) or _MON_V6_PORT.match(value)
        candidate = match.group(1) if match else value
        try:
            ip = normalize_ip(ipaddress.ip_address(u'%s' % candidate))
        except ValueError:
            ip = None
        if ip is not None:
            if ip not in ips:
                ips.append(ip)
            continue
        host = _MON_HOST.match(value)
        name = host.group(1) if host else value
        if name not in hosts:
            hosts.append(name)
    return ips, hosts


def csi_monitors(configmaps):
    """(monitors, warnings) from ceph-csi ConfigMaps (Kubernetes objects). monitors:
    [{configmap, cluster_id, monitor, addresses, hosts}], one per monitor entry, with the IPs
    (normalised, as strings) and the host names it names. A ConfigMap without a known key or whose
    JSON cannot be read gives a warning (its monitors are then not checked)."""
    monitors, warnings = [], []
    for cm in configmaps or []:
        meta = cm.get('metadata') or {}
        where = '%s/%s' % (meta.get('namespace'), meta.get('name'))
        data = cm.get('data') or {}
        keys = [k for k in MONITOR_CONFIG_KEYS if k in data]
        if not keys:
            warnings.append('ConfigMap %s has none of the keys %s: its monitors were not checked'
                            % (where, ', '.join(MONITOR_CONFIG_KEYS)))
            continue
        for key in keys:
            try:
                clusters = json.loads(data[key] or '[]')
            except ValueError as exc:
                warnings.append('ConfigMap %s key %s is not valid JSON (%s): its monitors were not checked'
                                % (where, key, exc))
                continue
            if not isinstance(clusters, list):
                warnings.append('ConfigMap %s key %s is not a JSON list of clusters: its monitors were not checked'
                                % (where, key))
                continue
            for cluster in clusters:
                if not isinstance(cluster, dict):
                    continue
                for entry in cluster.get('monitors') or []:
                    ips, hosts = parse_monitor(entry)
                    monitors.append(dict(configmap=where, key=key, cluster_id=cluster.get('clusterID'),
                                         monitor=str(entry), addresses=[str(ip) for ip in ips], hosts=hosts))
    return monitors, warnings


def monitor_refusals(plans, monitors):
    """Messages for the plans that would newly fence a CIDR holding a Ceph monitor's IP, or write
    one into a fence in any state (created Unfenced, or CIDRs added while Unfenced: such a fence is
    one patch away from fencing the monitor). Compared normalised, an IPv6 range holding the whole
    IPv4-mapped range counting as every IPv4 address. Fencing a monitor's address cuts every client
    of that node off the cluster, the monitor's own peers included. The module refuses them unless
    forced."""
    out = []
    for plan in plans:
        if not plan.monitor_checked:
            continue
        hits = []
        for cidr in plan.monitor_checked:
            nets = compared_networks(cidr)
            for mon in monitors:
                for addr in mon['addresses']:
                    ip = ipaddress.ip_address(u'%s' % addr)
                    if any(network_contains(net, ip) for net in nets):
                        hits.append('%s (monitor %s of clusterID %s in ConfigMap %s, via %s)' % (
                            addr, mon['monitor'], mon['cluster_id'], mon['configmap'], cidr))
        if hits and plan.fence_state == FENCED:
            out.append('NetworkFence %s would fence Ceph monitor address(es) %s' % (plan.name, ', '.join(hits)))
        elif hits:
            out.append('NetworkFence %s would hold Ceph monitor address(es) %s while %s: one patch to Fenced would '
                       'cut the monitor off' % (plan.name, ', '.join(hits), plan.fence_state or UNFENCED))
    return out


def unchecked_monitors(monitors):
    """The host names among the monitors: they cannot be checked against CIDRs (no DNS here)."""
    out = []
    for mon in monitors:
        for host in mon['hosts']:
            label = '%s (clusterID %s in ConfigMap %s)' % (host, mon['cluster_id'], mon['configmap'])
            if label not in out:
                out.append(label)
    return out


def unread_monitors(sources, configmaps, problems, monitors):
    """Why the Ceph monitors could not be checked, or None when they were: no ConfigMap of `sources` found
    (a cluster whose ceph-csi keeps them elsewhere, or none at all), one that could not be read or parsed
    (`problems`), or ConfigMaps that list no monitor. A fence over a monitor nobody could check may cut
    every client there off the cluster: the module refuses it unless force (or an empty source list)."""
    if problems:
        return '; '.join(problems)
    if not configmaps:
        return ('no ceph-csi ConfigMap of Ceph monitors was found (looked for %s)' % ', '.join(sources))
    if not monitors:
        return 'the ceph-csi ConfigMap(s) %s list no Ceph monitor' % ', '.join(
            '%s/%s' % ((c.get('metadata') or {}).get('namespace'), (c.get('metadata') or {}).get('name'))
            for c in configmaps)
    return None

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Kubernetes API fakes of the unit tests: FakeKube, an in-memory API server behind KubeApi's
transport interface, and api_for(), a KubeApi on it. A module of its own, so that test modules import
fakes from here, never from each other."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import datetime
import json
import socket
import threading
import time
import uuid

try:
    from urllib.parse import parse_qs, unquote, urlsplit
except ImportError:  # pragma: no cover
    pass

from ansible_collections.volfence.csi.plugins.module_utils import _clock
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import KubeApi, TransportError
from ansible_collections.volfence.csi.plugins.module_utils._k8s.networkfence_ops import NetworkFences
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import merge_patch_applied
from ansible_collections.volfence.csi.plugins.module_utils._decisions.volumeattachment import attachment_name
from ansible_collections.volfence.csi.plugins.module_utils._k8s.volumeattachment_ops import VolumeAttachments

UTC = datetime.timezone.utc
# The tests' "now": where the fake clocks start, and what their objects' times are written against.
NOW = datetime.datetime(2026, 11, 21, 6, 0, 0, tzinfo=UTC)

# The API groups the fake serves: group/version -> plurals (cluster-scoped unless in NAMESPACED).
SERVED = {
    'v1': ['nodes', 'persistentvolumes', 'pods', 'namespaces'],
    'storage.k8s.io/v1': ['volumeattachments'],
    'csiaddons.openshift.io/v1alpha1': ['networkfences', 'networkfenceclasses', 'csiaddonsnodes'],
}
CUSTOM = ('networkfences', 'networkfenceclasses', 'csiaddonsnodes')


merge = merge_patch_applied  # RFC 7386, as the API server applies it


class FakeKube(object):
    """An in-memory API server behind KubeApi's transport interface.

    Objects are stored per plural. Faults: dicts with `method`, `path` (substring) or `exact` (the
    whole path), and either
    `status` (answer that instead; with `apply: True` the request is carried out first, so the
    answer is "lost"), or `transport: True` (no answer); `count` (default 1).
    """

    def __init__(self, version='v1.30.2', served=None, page=500, now=None):
        self.version = version
        self.served = copy.deepcopy(SERVED if served is None else served)
        self.store = {}          # plural -> {(namespace, name): obj}
        self.log = []            # (method, path, query, body)
        self.faults = []
        self.page = page
        self.rv = 100
        self.now = now or (lambda: datetime.datetime(2026, 11, 21, 6, 0, 0, tzinfo=UTC))
        self.hooks = []          # callables(fake, method, plural, obj) run after each write

    # -- seeding and inspection
    def add(self, plural, obj, status=None):
        obj = copy.deepcopy(obj)
        meta = obj.setdefault('metadata', {})
        meta.setdefault('uid', str(uuid.uuid4()))
        meta.setdefault('generation', 1)
        meta['resourceVersion'] = self._next_rv()
        if status is not None:
            obj['status'] = status
        self.store.setdefault(plural, {})[(meta.get('namespace'), meta['name'])] = obj
        return obj

    def get(self, plural, name, namespace=None):
        return self.store.get(plural, {}).get((namespace, name))

    def writes(self):
        return [entry for entry in self.log if entry[0] != 'GET']

    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    # -- the transport
    def __call__(self, method, url, body, headers, timeout):
        parts = urlsplit(url)
        path = unquote(parts.path)
        query = dict((k, v[0]) for k, v in parse_qs(parts.query).items())
        data = json.loads(body.decode('utf-8')) if body else None
        self.log.append((method, path, query, data))
        for fault in self.faults:
            if fault.get('count', 1) <= 0:
                continue
            if fault.get('method', method) != method or fault.get('path', '') not in path:
                continue
            if fault.get('exact') is not None and fault['exact'] != path:
                continue
            fault['count'] = fault.get('count', 1) - 1
            if fault.get('transport'):
                if fault.get('apply'):
                    self._route(method, path, query, data, headers)
                raise TransportError('ReadTimeoutError: read timed out')
            if fault.get('apply'):
                self._route(method, path, query, data, headers)
            return self._status(fault['status'], fault.get('reason', 'InternalError'), fault.get('message', 'boom'))
        return self._route(method, path, query, data, headers)

    @staticmethod
    def _answer(code, obj):
        return code, 'OK', {}, json.dumps(obj).encode('utf-8')

    def _status(self, code, reason, message, name=None, kind=None):
        body = dict(kind='Status', apiVersion='v1', status='Failure', message=message, reason=reason, code=code,
                    details=dict(name=name, kind=kind))
        return code, reason, {}, json.dumps(body).encode('utf-8')

    def _route(self, method, path, query, data, headers):
        if path == '/version':
            return self._answer(200, dict(gitVersion=self.version, major='1', minor=self.version.split('.')[1]))
        segments = [s for s in path.split('/') if s]
        if segments[0] == 'api':
            gv, rest = segments[1], segments[2:]
        else:
            gv, rest = '/'.join(segments[1:3]), segments[3:]
        if gv not in self.served:
            return 404, 'Not Found', {}, b'404 page not found'
        if not rest:
            return self._answer(200, dict(kind='APIResourceList', groupVersion=gv,
                                          resources=[dict(name=p) for p in self.served[gv]]))
        namespace = None
        if rest[0] == 'namespaces' and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        if plural not in self.served[gv]:
            return 404, 'Not Found', {}, b'404 page not found'
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        objects = self.store.setdefault(plural, {})
        if name is None:
            if method == 'GET':
                return self._list(plural, objects, namespace, query)
            if method == 'POST':
                return self._create(gv, plural, objects, data, namespace)
            return self._status(405, 'MethodNotAllowed', 'method not allowed')
        key = (namespace, name)
        obj = objects.get(key)
        if obj is None:
            return self._status(404, 'NotFound', '%s "%s" not found' % (plural, name), name, plural)
        if method == 'GET':
            return self._answer(200, obj)
        if method == 'PATCH':
            return self._patch(plural, objects, key, obj, data, sub, headers)
        if method == 'DELETE':
            return self._delete(plural, objects, key, obj, data)
        return self._status(405, 'MethodNotAllowed', 'method not allowed')

    def _list(self, plural, objects, namespace, query):
        items = [o for (ns, _n), o in sorted(objects.items(), key=lambda kv: (kv[0][0] or '', kv[0][1]))
                 if namespace is None or ns == namespace]
        selector = query.get('fieldSelector')
        if selector:
            field, value = selector.split('=', 1)
            cur = None
            kept = []
            for item in items:
                cur = item
                for part in field.split('.'):
                    cur = (cur or {}).get(part)
                if (cur or '') == value:
                    kept.append(item)
            items = kept
        start = int(query.get('continue') or 0)
        limit = min(int(query.get('limit') or self.page), self.page)
        page = items[start:start + limit]
        meta = dict(resourceVersion=str(self.rv))
        if start + limit < len(items):
            meta['continue'] = str(start + limit)
        return self._answer(200, dict(kind='List', metadata=meta, items=page))

    def _create(self, gv, plural, objects, data, namespace):
        meta = data.get('metadata') or {}
        key = (namespace, meta.get('name'))
        if key in objects:
            return self._status(409, 'AlreadyExists', '%s "%s" already exists' % (plural, meta.get('name')))
        obj = copy.deepcopy(data)
        if plural in CUSTOM:
            obj.pop('status', None)
        obj = self.add(plural, obj)
        self._hooks('POST', plural, obj)
        return self._answer(201, obj)

    def _patch(self, plural, objects, key, obj, data, sub, headers):
        assert headers.get('Content-Type') == 'application/merge-patch+json'
        want_rv = (data.get('metadata') or {}).get('resourceVersion')
        if want_rv and want_rv != obj['metadata']['resourceVersion']:
            return self._status(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": the object has been '
                                'modified; please apply your changes to the latest version and try again'
                                % (plural, key[1]))
        if sub == 'status':
            new = dict(obj, status=merge(obj.get('status') or {}, (data or {}).get('status') or {}))
        else:
            patch = copy.deepcopy(data)
            (patch.get('metadata') or {}).pop('resourceVersion', None)
            patch.pop('status', None)
            new = merge(obj, patch)
            if new.get('spec') != obj.get('spec'):
                new['metadata']['generation'] = obj['metadata'].get('generation', 1) + 1
        new['metadata']['resourceVersion'] = self._next_rv()
        if new['metadata'].get('deletionTimestamp') and not new['metadata'].get('finalizers'):
            del objects[key]
        else:
            objects[key] = new
        self._hooks('PATCH', plural, new)
        return self._answer(200, new)

    def _delete(self, plural, objects, key, obj, data):
        pre = (data or {}).get('preconditions') or {}
        if pre.get('uid') and pre['uid'] != obj['metadata']['uid']:
            return self._status(409, 'Conflict', 'Precondition failed: UID in precondition: %s, UID in object meta: %s'
                                % (pre['uid'], obj['metadata']['uid']))
        if pre.get('resourceVersion') and pre['resourceVersion'] != obj['metadata']['resourceVersion']:
            return self._status(409, 'Conflict', 'Precondition failed: ResourceVersion in precondition: %s'
                                % pre['resourceVersion'])
        if obj['metadata'].get('finalizers'):
            if not obj['metadata'].get('deletionTimestamp'):
                obj = copy.deepcopy(obj)
                obj['metadata']['deletionTimestamp'] = self.now().strftime('%Y-%m-%dT%H:%M:%SZ')
                obj['metadata']['resourceVersion'] = self._next_rv()
                objects[key] = obj
            self._hooks('DELETE', plural, obj)
            return self._answer(200, obj)
        del objects[key]
        self._hooks('DELETE', plural, obj)
        return self._answer(200, obj)

    def _hooks(self, method, plural, obj):
        for hook in self.hooks:
            hook(self, method, plural, obj)


def api_for(fake, retries=3):
    return KubeApi(fake, timeout=5, retries=retries, sleep=lambda s: None)


# --------------------------------------------------------------------------- CSI-Addons on the fake

NETWORKFENCE_DRIVER = 'rbd.csi.ceph.com'


class Controller(object):
    """A CSI-Addons controller stand-in: answers each new generation of a fence (Failed for CIDRs in
    `refuse`), adds and removes its finalizer."""

    def __init__(self, refuse=(), silent=False):
        self.refuse = set(refuse)
        self.silent = silent
        self.observed = {}

    def __call__(self, fake, method, plural, obj):
        if plural != 'networkfences':
            return
        meta = obj['metadata']
        if method == 'DELETE' and meta.get('deletionTimestamp'):
            del fake.store[plural][(None, meta['name'])]
            return
        if self.silent or self.observed.get(meta['name']) == meta.get('generation'):
            return
        self.observed[meta['name']] = meta.get('generation')
        meta['finalizers'] = ['csiaddons.openshift.io/network-fence']
        bad = [c for c in obj['spec']['cidrs'] if c in self.refuse]
        state = obj['spec']['fenceState']
        if bad:
            obj['status'] = dict(result='Failed', message='rpc error: code = Internal desc = cannot %s %s' % (
                'fence' if state == 'Fenced' else 'unfence', bad[0]))
        else:
            obj['status'] = dict(result='Succeeded', message='%s operation successful' % (
                'fencing' if state == 'Fenced' else 'unfencing'))


def networkfence_params(**kwargs):
    """The networkfence module's parameters, unset but for kwargs."""
    base = dict(name=None, fences=None, state='present', fence_state=None, cidrs=None, driver=None, secret=None,
                parameters=None, network_fence_class=None, labels=None)
    base.update(kwargs)
    return base


# The Ceph monitor ceph-csi's ConfigMap lists in networkfence_cluster(): outside every CIDR the tests fence.
NETWORKFENCE_MONITOR = '10.0.9.1:6789'


def networkfence_cluster(controller=None, served=None, connected=True, monitors=(NETWORKFENCE_MONITOR,)):
    """A cluster for NetworkFences: three nodes (node-b not Ready), their CSIAddonsNodes, a NetworkFenceClass, and
    ceph-csi's ConfigMap listing `monitors` (None: no ConfigMap, so the monitors cannot be checked)."""
    fake = FakeKube(served=served)
    if monitors is not None:
        if 'configmaps' not in fake.served['v1']:
            fake.served['v1'].append('configmaps')
        fake.add('configmaps', dict(metadata=dict(name='ceph-csi-config', namespace='ceph-csi'), data={
            'config.json': json.dumps([dict(clusterID='lab', monitors=list(monitors))])}))
    for name, ip, ready in (('node-a', '10.0.3.11', 'True'), ('node-b', '10.0.3.12', 'Unknown'),
                            ('node-c', '10.0.3.13', 'True')):
        fake.add('nodes', dict(metadata=dict(name=name), status=dict(
            addresses=[dict(type='InternalIP', address=ip)], conditions=[dict(type='Ready', status=ready)])))
        fake.add('csiaddonsnodes', dict(metadata=dict(name='%s-rbd' % name, namespace='ceph-csi'), spec=dict(
            driver=dict(name=NETWORKFENCE_DRIVER, nodeID=name, endpoint='pod://x:9070'))),
            status=dict(state='Connected' if connected else 'Failed'))
    fake.add('networkfenceclasses', dict(metadata=dict(name='rbd'), spec=dict(
        provisioner=NETWORKFENCE_DRIVER, parameters={'clusterID': 'lab'})))
    if controller is not None:
        fake.hooks.append(controller)
    fences = NetworkFences(api_for(fake), workers=4, clock=ticking_clock())
    return fake, fences


class Ticker(object):
    """A clock that advances a second per reading."""

    def __init__(self):
        self.t = 0

    def __call__(self):
        self.t += 1
        return self.t


class SleepClock(object):
    """Seconds from 0 that pass only when something sleeps: each pause is recorded (sleeps), then each
    hook is called with the new time (a test changes the cluster at a given second)."""

    def __init__(self):
        self.t = 0.0
        self.sleeps = []
        self.hooks = []

    def time(self):
        return self.t

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.t += seconds
        for hook in self.hooks:
            hook(self.t)


def ticking_clock():
    """A backend's clock whose time advances a second per reading and whose pauses take no time."""
    return _clock.Clock(time=Ticker(), sleep=lambda s: None)


# The system's time, with pauses that take no time (retries in tests).
NO_PAUSE = _clock.Clock(sleep=lambda s: None)


# --------------------------------------------------------------------------- VolumeAttachments on the fake

VOLUMEATTACHMENT_DRIVER = 'rbd.csi.ceph.com'
VOLUMEATTACHMENT_FINALIZER = 'external-attacher/rbd-csi-ceph-com'


class Clock(object):
    """A clock that moves only when something sleeps."""

    def __init__(self):
        self.t = NOW

    def now(self):
        return self.t

    def time(self):
        return (self.t - datetime.datetime(2026, 1, 1, tzinfo=UTC)).total_seconds()

    def sleep(self, seconds):
        self.t += datetime.timedelta(seconds=seconds)


def volumeattachment_cluster(version='v1.30.2', node_b_ready='Unknown'):
    """node-a Ready with pod web-1 using pv-1; node-b NotReady for 10 min, its pod gone; VA of pv-0 on
    node-b (stale) and of pv-1 on node-a (healthy)."""
    clock = Clock()
    fake = FakeKube(version=version, now=clock.now)
    for name, ready in (('node-a', 'True'), ('node-b', node_b_ready)):
        fake.add('nodes', dict(metadata=dict(name=name), status=dict(conditions=[
            dict(type='Ready', status=ready, lastTransitionTime='2026-11-21T05:50:00Z')])))
    for i, node in enumerate(('node-b', 'node-a')):
        fake.add('persistentvolumes', dict(metadata=dict(name='pv-%d' % i), spec=dict(
            csi=dict(driver=VOLUMEATTACHMENT_DRIVER, volumeHandle='h-%d' % i), claimRef=dict(namespace='default', name='c-%d' % i))))
        fake.add('volumeattachments', dict(
            metadata=dict(name=attachment_name('h-%d' % i, VOLUMEATTACHMENT_DRIVER, node), finalizers=[VOLUMEATTACHMENT_FINALIZER]),
            spec=dict(attacher=VOLUMEATTACHMENT_DRIVER, nodeName=node, source=dict(persistentVolumeName='pv-%d' % i))),
            status=dict(attached=True))
    fake.add('pods', dict(metadata=dict(name='web-1', namespace='default'), spec=dict(
        nodeName='node-a', volumes=[dict(name='d', persistentVolumeClaim=dict(claimName='c-1'))]),
        status=dict(phase='Running')))
    vas = VolumeAttachments(api_for(fake), not_ready_grace=300, clock=clock)
    return fake, clock, vas


VA0 = attachment_name('h-0', VOLUMEATTACHMENT_DRIVER, 'node-b')
VA1 = attachment_name('h-1', VOLUMEATTACHMENT_DRIVER, 'node-a')


# --------------------------------------------------------------------------- a failed node's cluster, as data

def k8s_time(age):
    """A Kubernetes time `age` seconds before now: the system's clock, against which the modules judge
    Leases."""
    when = datetime.datetime.now(UTC) - datetime.timedelta(seconds=age)
    return when.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def failover_cluster(node_ips, failed, failed_lease_age=3600, ready_lease_age=3, transition_age=600):
    """(Nodes, Leases), in name order, of a cluster whose node `failed` is NotReady (status Unknown), its
    Lease `failed_lease_age` seconds old, and whose other nodes are Ready, their Leases `ready_lease_age`
    old; node_ips: {name: InternalIP}. The Ready conditions changed `transition_age` seconds ago."""
    nodes, leases = [], []
    for name, ip in sorted(node_ips.items()):
        nodes.append(dict(apiVersion='v1', kind='Node', metadata=dict(name=name), status=dict(
            addresses=[dict(type='InternalIP', address=ip), dict(type='Hostname', address=name)],
            conditions=[dict(type='Ready', status='Unknown' if name == failed else 'True',
                             lastTransitionTime=k8s_time(transition_age))],
            nodeInfo=dict(bootID='boot-' + name))))
        leases.append(dict(apiVersion='coordination.k8s.io/v1', kind='Lease',
                           metadata=dict(name=name, namespace='kube-node-lease'),
                           spec=dict(holderIdentity=name, leaseDurationSeconds=40,
                                     renewTime=k8s_time(failed_lease_age if name == failed else ready_lease_age))))
    return nodes, leases


# --------------------------------------------------------------------------- pods on the fake

def pods_world(count=5):
    fake = FakeKube()
    uids = {}
    for i in range(count):
        pod = fake.add('pods', dict(metadata=dict(name='p-%d' % i, namespace='shop'), spec=dict(nodeName='node-b'),
                                    status=dict(phase='Running')))
        uids['p-%d' % i] = pod['metadata']['uid']
    return fake, uids


def pod(name, node, claims, phase='Running', namespace='shop', deleting=False):
    meta = dict(name=name, namespace=namespace)
    if deleting:
        meta['deletionTimestamp'] = '2026-11-21T06:00:00Z'
    return dict(metadata=meta, spec=dict(nodeName=node, volumes=[
        dict(name='v%d' % i, persistentVolumeClaim=dict(claimName=c)) for i, c in enumerate(claims)]),
        status=dict(phase=phase))


# --------------------------------------------------------------------------- servers on 127.0.0.1 (real sockets)

def write_kubeconfig(path, port, token='t', context='hung'):
    """A kubeconfig at `path` (str or pathlib.Path) for http://127.0.0.1:`port` with a bearer `token`;
    returns the path as a str."""
    config = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': context,
              'clusters': [dict(name=context, cluster=dict(server='http://127.0.0.1:%d' % port))],
              'users': [dict(name='u', user=dict(token=token))],
              'contexts': [dict(name=context, context=dict(cluster=context, user='u'))]}
    with open(str(path), 'w') as handle:
        json.dump(config, handle)
    return str(path)


class SilentServer(object):
    """A TCP server on 127.0.0.1 that accepts every connection and never reads nor answers (a hung API
    server, a black-holing load balancer). The unit tests of connect() and the integration tests of
    the modules (tests/integration/k8s/test_k8s_timeouts.py) both use it."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        # when the first connection came (time.monotonic()): a bound measured from here leaves out
        # Ansible's start-up, which a loaded machine stretches
        self.first_accepted_at = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                continue
            if self.first_accepted_at is None:
                self.first_accepted_at = time.monotonic()
            self.accepted.append(conn)   # kept open, never read from nor written to

    def write_kubeconfig(self, path):
        """A kubeconfig for this server at `path`; returns the path as a str."""
        return write_kubeconfig(path, self.port)

    def close(self):
        self.stopped.set()
        self.thread.join(5)
        for conn in self.accepted:
            conn.close()
        self.sock.close()

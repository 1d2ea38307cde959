# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""KubeApi on a fake transport; FakeKube is also the API server of the other k8s unit tests."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import datetime
import json
import uuid

import pytest

try:
    from urllib.parse import parse_qs, unquote, urlsplit
except ImportError:  # pragma: no cover
    pass

from ansible_collections.volfence.csi.plugins.module_utils import _k8s_common
from ansible_collections.volfence.csi.plugins.module_utils._k8s_common import (
    K8S_COMMON_SPEC,
    K8sApiError,
    K8sConnectionError,
    KubeApi,
    TransportError,
    api_error,
    check_requirements,
    k8s_argument_spec,
    resource_path,
)

UTC = datetime.timezone.utc

# The API groups the fake serves: group/version -> plurals (cluster-scoped unless in NAMESPACED).
SERVED = {
    'v1': ['nodes', 'persistentvolumes', 'pods', 'namespaces'],
    'storage.k8s.io/v1': ['volumeattachments'],
    'csiaddons.openshift.io/v1alpha1': ['networkfences', 'networkfenceclasses', 'csiaddonsnodes'],
}
CUSTOM = ('networkfences', 'networkfenceclasses', 'csiaddonsnodes')


def merge(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


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


# --------------------------------------------------------------------------- KubeApi

def test_get_list_and_pages():
    fake = FakeKube(page=2)
    for i in range(5):
        fake.add('nodes', dict(metadata=dict(name='node-%d' % i)))
    api = api_for(fake)
    assert [n['metadata']['name'] for n in api.list(resource_path('', 'v1', 'nodes'))] == \
        ['node-%d' % i for i in range(5)]
    assert len([e for e in fake.log if e[1] == '/api/v1/nodes']) == 3
    assert api.get(resource_path('', 'v1', 'nodes', 'node-1'))['metadata']['name'] == 'node-1'
    assert api.get(resource_path('', 'v1', 'nodes', 'nope'), missing_ok=True) is None
    assert api.server_version()['gitVersion'] == 'v1.30.2'


def test_errors_carry_status_reason_message_and_object():
    api = api_for(FakeKube())
    with pytest.raises(K8sApiError) as info:
        api.get(resource_path('storage.k8s.io', 'v1', 'volumeattachments', 'csi-x'),
                what=('VolumeAttachment', 'csi-x'))
    err = info.value
    assert (err.status, err.reason) == (404, 'NotFound')
    assert err.msg == 'Failed to read VolumeAttachment csi-x: 404 NotFound: volumeattachments "csi-x" not found'
    kwargs = err.fail_kwargs()
    assert kwargs['object'] == dict(kind='VolumeAttachment', name='csi-x') and kwargs['status'] == 404
    assert kwargs['path'] == '/apis/storage.k8s.io/v1/volumeattachments/csi-x' and kwargs['method'] == 'GET'


def test_non_status_error_bodies_are_shown():
    err = api_error('GET', '/apis/x/v1/y', 404, 'Not Found', b'404 page not found')
    assert err.msg == 'Failed to read /apis/x/v1/y: 404 Not Found: 404 page not found'
    err = api_error('POST', '/p', 500, 'Internal Server Error', None, ('NetworkFence', 'nf', None))
    assert err.msg == 'Failed to create NetworkFence nf: 500 Internal Server Error'


def test_reads_are_retried_on_5xx_and_lost_answers_writes_are_not():
    fake = FakeKube()
    fake.add('nodes', dict(metadata=dict(name='a')))
    fake.faults = [dict(method='GET', status=500, count=2), dict(method='GET', transport=True, count=1)]
    api = api_for(fake, retries=3)
    assert api.get('/api/v1/nodes/a')['metadata']['name'] == 'a'
    assert len(fake.log) == 4
    fake.faults = [dict(method='GET', status=503, count=10)]
    with pytest.raises(K8sApiError) as info:
        api.get('/api/v1/nodes/a')
    assert info.value.status == 503
    fake.faults = [dict(method='POST', status=500)]
    before = len(fake.log)
    with pytest.raises(K8sApiError):
        api.create('/api/v1/nodes', dict(metadata=dict(name='b')))
    assert len(fake.log) == before + 1
    fake.faults = [dict(method='POST', transport=True)]
    with pytest.raises(K8sConnectionError) as info:
        api.create('/api/v1/nodes', dict(metadata=dict(name='b')), what=('Node', 'b'))
    assert 'The Kubernetes API is not reachable' in info.value.msg and 'no answer to POST /api/v1/nodes (Node b)' in info.value.msg


def test_client_errors_are_not_retried_and_retry_after_is_honoured():
    fake = FakeKube()
    slept = []
    api = KubeApi(fake, retries=3, sleep=slept.append)
    fake.faults = [dict(method='GET', status=403, reason='Forbidden', count=5)]
    with pytest.raises(K8sApiError):
        api.get('/api/v1/nodes')
    assert len(fake.log) == 1

    def throttled(method, url, body, headers, timeout):
        throttled.calls += 1
        if throttled.calls == 1:
            return 429, 'Too Many Requests', {'Retry-After': '2'}, b''
        return 200, 'OK', {}, b'{"items": []}'
    throttled.calls = 0
    api = KubeApi(throttled, retries=3, sleep=slept.append)
    assert api.list('/api/v1/pods') == []
    assert slept == [2.0]


def test_served_uses_discovery():
    api = api_for(FakeKube(served=dict(SERVED, **{'csiaddons.openshift.io/v1alpha1': ['networkfences']})))
    assert api.served('csiaddons.openshift.io', 'v1alpha1', 'networkfences')
    assert not api.served('csiaddons.openshift.io', 'v1alpha1', 'csiaddonsnodes')
    assert not api.served('example.com', 'v1', 'things')
    assert api.served('', 'v1', 'nodes')


def test_bodies_and_content_types():
    seen = []

    def transport(method, url, body, headers, timeout):
        seen.append((method, url, body, dict(headers), timeout))
        return 200, 'OK', {}, b''
    api = KubeApi(transport, timeout=7)
    assert api.merge_patch('/x', dict(a=1), subresource='status') == {}
    api.json_patch('/x', [dict(op='remove', path='/a')])
    api.list('/y', label_selector='a=b', field_selector='spec.nodeName=n')
    assert seen[0][:3] == ('PATCH', '/x/status', b'{"a": 1}')
    assert seen[0][3]['Content-Type'] == 'application/merge-patch+json' and seen[0][4] == 7
    assert seen[1][3]['Content-Type'] == 'application/json-patch+json'
    assert seen[2][1] == '/y?limit=500&labelSelector=a%3Db&fieldSelector=spec.nodeName%3Dn'
    assert 'Content-Type' not in seen[2][3]
    assert api.writes == 2 and api.requests == 3


def test_resource_paths():
    assert resource_path('', 'v1', 'pods', 'web-0', 'default') == '/api/v1/namespaces/default/pods/web-0'
    assert resource_path('storage.k8s.io', 'v1', 'volumeattachments') == '/apis/storage.k8s.io/v1/volumeattachments'
    assert resource_path('csiaddons.openshift.io', 'v1alpha1', 'networkfences', 'a b') == \
        '/apis/csiaddons.openshift.io/v1alpha1/networkfences/a%20b'


# --------------------------------------------------------------------------- options and requirements

def test_argument_spec_is_kubernetes_core_auth_plus_ours():
    spec = k8s_argument_spec(name=dict(type='str'))
    for option in ('kubeconfig', 'context', 'host', 'api_key', 'validate_certs', 'ca_cert', 'client_cert',
                   'client_key', 'impersonate_user'):
        assert option in spec
    assert spec['api_key']['no_log'] is True and spec['password']['no_log'] is True
    assert spec['request_timeout'] == K8S_COMMON_SPEC['request_timeout'] and 'name' in spec
    spec['request_timeout']['default'] = 1
    assert K8S_COMMON_SPEC['request_timeout']['default'] == 30   # a copy


class FakeModule(object):
    def __init__(self, **params):
        self.params = dict(kubeconfig=None, request_timeout=30, api_retries=3)
        self.params.update(params)
        self.no_log_values = set()

    def fail_json(self, **kwargs):
        raise SystemExit(kwargs)


def test_missing_kubernetes_core_or_library_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_k8s_common, 'K8S_CORE_IMPORT_ERROR', 'Traceback: no kubernetes.core')
    with pytest.raises(SystemExit) as info:
        check_requirements(FakeModule())
    assert 'kubernetes.core collection' in info.value.args[0]['msg']
    monkeypatch.setattr(_k8s_common, 'K8S_CORE_IMPORT_ERROR', None)
    monkeypatch.setattr(_k8s_common, 'KUBERNETES_IMPORT_ERROR', 'Traceback: no kubernetes')
    with pytest.raises(SystemExit) as info:
        check_requirements(FakeModule())
    assert 'kubernetes' in info.value.args[0]['msg'] and 'interpreter' in info.value.args[0]['msg']


def test_bad_shared_options_and_inline_kubeconfig_secrets():
    with pytest.raises(SystemExit) as info:
        check_requirements(FakeModule(request_timeout=0))
    assert 'request_timeout' in info.value.args[0]['msg']
    module = FakeModule(kubeconfig=dict(apiVersion='v1', users=[dict(name='u', user=dict(token='s3cr3t'))]))
    check_requirements(module)
    assert 's3cr3t' in module.no_log_values


def test_connect_reports_a_missing_kubeconfig_clearly(tmp_path, monkeypatch):
    for name in list(__import__('os').environ):
        if name.startswith('K8S_AUTH_') or name == 'KUBECONFIG':
            monkeypatch.delenv(name)
    monkeypatch.setenv('HOME', str(tmp_path))
    module = FakeModule(kubeconfig=str(tmp_path / 'missing.conf'))
    for option in k8s_argument_spec():
        module.params.setdefault(option, None)
    with pytest.raises(_k8s_common.K8sError) as info:
        _k8s_common.connect(module)
    assert 'missing.conf' in info.value.msg or 'kubeconfig' in info.value.msg.lower()


# --------------------------------------------------------------------------- I8: bounded connect

class SilentServer(object):
    """A TCP server on 127.0.0.1 that accepts every connection and never answers (a hung API server)."""

    def __init__(self):
        import socket
        import threading
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
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
            self.accepted.append(conn)   # kept open, never read from nor written to

    def kubeconfig(self, path):
        path.write_text(json.dumps(dict(
            apiVersion='v1', kind='Config', **{'current-context': 'hung'},
            clusters=[dict(name='hung', cluster=dict(server='http://127.0.0.1:%d' % self.port))],
            users=[dict(name='u', user=dict(token='t'))],
            contexts=[dict(name='hung', context=dict(cluster='hung', user='u'))])))
        return str(path)

    def close(self):
        self.stopped.set()
        self.thread.join(5)
        for conn in self.accepted:
            conn.close()
        self.sock.close()


def test_connect_to_a_server_that_never_answers_is_bounded_by_request_timeout_i8(tmp_path, monkeypatch):
    """I8: kubernetes.core's client creation (kubeconfig, API discovery) against a server that accepts and never
    answers fails within request_timeout with a clear message, instead of hanging."""
    import threading
    import time
    for name in list(__import__('os').environ):
        if name.startswith('K8S_AUTH_') or name == 'KUBECONFIG':
            monkeypatch.delenv(name)
    monkeypatch.setenv('TMPDIR', str(tmp_path))   # kubernetes.core's discovery cache
    server = SilentServer()
    try:
        module = FakeModule(kubeconfig=server.kubeconfig(tmp_path / 'kubeconfig'), request_timeout=2, api_retries=0)
        for option in k8s_argument_spec():
            module.params.setdefault(option, None)
        outcome = {}

        def call():
            started = time.time()
            try:
                outcome['api'] = _k8s_common.connect(module)
            except Exception as exc:  # pylint: disable=broad-except
                outcome['error'] = exc
            outcome['seconds'] = time.time() - started
        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(60)   # generous: a hang is what this test catches
        assert not worker.is_alive(), 'connect() still hangs after 60 s (request_timeout=2)'
        assert server.accepted, 'the module never reached the server'
        error = outcome.get('error')
        assert isinstance(error, K8sConnectionError), outcome
        assert 'not reachable' in error.msg and 'timed out after request_timeout=2s' in error.msg, error.msg
        assert '127.0.0.1:%d' % server.port in error.msg
        assert outcome['seconds'] < 20, outcome
    finally:
        server.close()


def test_bounded_call_returns_results_and_re_raises_errors_i8():
    assert _k8s_common.bounded_call(lambda: 42, 5, 'x') == 42
    with pytest.raises(ValueError):
        _k8s_common.bounded_call(lambda: int('x'), 5, 'x')
    import threading
    gate = threading.Event()
    with pytest.raises(K8sConnectionError) as info:
        _k8s_common.bounded_call(lambda: gate.wait(30), 0.5, 'reading the moon')
    gate.set()
    assert 'reading the moon timed out after request_timeout=0.5s' in info.value.msg

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""KubeApi on a fake transport (k8s_fakes.FakeKube, the API server of every k8s unit test)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    pass

from ansible_collections.volfence.csi.plugins.module_utils._k8s import common as _k8s_common
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
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
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import (
    SERVED,
    FakeKube,
    SilentServer,
    api_for,
    write_kubeconfig,
)


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
    err = api_error('POST', '/p', 500, 'Internal Server Error', None, what=('NetworkFence', 'nf', None))
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


def test_a_missing_kubernetes_library_is_a_clear_error(monkeypatch):
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
    assert info.value.msg.startswith('kubeconfig %s does not exist' % (tmp_path / 'missing.conf')), info.value.msg


# --------------------------------------------------------------------------- I8: bounded connect

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
        module = FakeModule(kubeconfig=server.write_kubeconfig(tmp_path / 'kubeconfig'), request_timeout=2, api_retries=0)
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
        assert outcome['seconds'] < 30, outcome   # bounded, not the 60 s hang this test catches
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


# --------------------------------------------------------------------------- the client: kubernetes.core + kubernetes

def test_impersonation_headers_come_from_the_options_else_the_environment():
    headers = _k8s_common.impersonation_headers(dict(impersonate_user='alice', impersonate_groups=['ops', 'audit']),
                                                environ=dict(K8S_AUTH_IMPERSONATE_USER='bob'))
    assert [(str(name), value) for name, value in headers] == [
        ('Impersonate-User', 'alice'), ('Impersonate-Group', 'ops'), ('Impersonate-Group', 'audit')]
    assert len(dict(headers)) == 3   # each group stays a header of its own
    environ = dict(K8S_AUTH_IMPERSONATE_USER='bob', K8S_AUTH_IMPERSONATE_GROUPS='ops,,audit')
    headers = _k8s_common.impersonation_headers(dict(impersonate_user=None, impersonate_groups=None), environ)
    assert [(str(name), value) for name, value in headers] == [
        ('Impersonate-User', 'bob'), ('Impersonate-Group', 'ops'), ('Impersonate-Group', 'audit')]
    assert _k8s_common.impersonation_headers(dict(impersonate_user=None, impersonate_groups=None), {}) == []


class KubeServer(object):
    """An HTTP API server on 127.0.0.1 answering discovery, /api/v1/nodes/<name> (n1 exists; `drop`
    closes the connection without an answer), the list of pods and PATCH of n1; records every request."""

    def __init__(self):
        import threading
        try:
            from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        except ImportError:  # pragma: no cover
            pytest.skip('needs Python 3.7+ (http.server.ThreadingHTTPServer)')
        self.requests = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

            def answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length) if length else b''
                owner.requests.append((self.command, self.path, self.headers, body))
                status, obj = owner.route(self.command, urlsplit(self.path).path, body)
                if status is None:
                    self.close_connection = True   # no answer at all
                    return
                data = json.dumps(obj).encode('utf-8')
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            do_GET = do_PATCH = do_DELETE = do_POST = answer

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def route(method, path, body):
        node = dict(kind='Node', apiVersion='v1', metadata=dict(name='n1', uid='u-1'))
        patched = json.loads(body).get('metadata', {}) if body else {}
        answers = {
            '/version': dict(major='1', minor='30', gitVersion='v1.30.2'),
            '/api': dict(kind='APIVersions', versions=['v1']),
            '/apis': dict(kind='APIGroupList', apiVersion='v1', groups=[]),
            '/api/v1': dict(kind='APIResourceList', groupVersion='v1', resources=[
                dict(name='nodes', namespaced=False, kind='Node', verbs=['get', 'list', 'patch'])]),
            '/api/v1/nodes/n1': dict(node, metadata=dict(node['metadata'], **patched)),
            '/api/v1/pods': dict(kind='PodList', metadata=dict(), items=[]),
        }
        if path == '/api/v1/nodes/drop':
            return None, None
        if path in answers and (method == 'GET' or path == '/api/v1/nodes/n1'):
            return 200, answers[path]
        return 404, dict(kind='Status', apiVersion='v1', status='Failure', reason='NotFound', code=404,
                         message='nodes "%s" not found' % path.rsplit('/', 1)[-1])

    def write_kubeconfig(self, path):
        return write_kubeconfig(path, self.port, token='t0ken', context='lab')

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def kube_server(tmp_path, monkeypatch):
    for name in list(__import__('os').environ):
        if name.startswith('K8S_AUTH_') or name == 'KUBECONFIG':
            monkeypatch.delenv(name)
    monkeypatch.setenv('TMPDIR', str(tmp_path))   # kubernetes.core's discovery cache
    server = KubeServer()
    yield server
    server.close()


def connected(server, tmp_path, **params):
    module = FakeModule(kubeconfig=server.write_kubeconfig(tmp_path / 'kubeconfig'), request_timeout=5, **params)
    for option in k8s_argument_spec():
        module.params.setdefault(option, None)
    api = _k8s_common.connect(module)
    api.sleep = lambda seconds: None
    del server.requests[:]   # kubernetes.core's discovery
    return api


@pytest.mark.parametrize('status, words', [(401, 'credentials are not accepted'), (403, 'system:discovery')])
def test_a_refused_discovery_is_told_as_the_api_servers_refusal(kube_server, tmp_path, status, words):
    """The API server's 401 or 403 to kubernetes.core's discovery (a revoked token, a role without discovery)
    is said to be that, with the server's message, not a kubeconfig that could not be loaded."""
    message = 'forbidden: User "system:serviceaccount:volfence:x" cannot get path "/version"'
    kube_server.route = lambda method, path, body: (status, dict(
        kind='Status', apiVersion='v1', metadata={}, status='Failure', code=status,
        reason='Unauthorized' if status == 401 else 'Forbidden', message='Unauthorized' if status == 401 else message))
    with pytest.raises(_k8s_common.K8sError) as info:
        connected(kube_server, tmp_path)
    error = info.value
    assert error.msg.startswith('The Kubernetes API at http://127.0.0.1:%d refused API discovery: %d '
                                % (kube_server.port, status)), error.msg
    assert words in error.msg and error.msg.endswith('nothing was done') and 'could not be loaded' not in error.msg
    assert error.status == status
    if status == 403:
        assert message in error.msg and error.api_message == message


def test_requests_go_out_with_the_kubeconfig_token_our_agent_and_the_impersonation(kube_server, tmp_path):
    api = connected(kube_server, tmp_path, impersonate_user='alice', impersonate_groups=['ops', 'audit'])
    assert api.get('/api/v1/nodes/n1', what=('Node', 'n1'))['metadata']['uid'] == 'u-1'
    assert api.list('/api/v1/pods', what=('Pod', None), field_selector='spec.nodeName=n1') == []
    patched = api.merge_patch('/api/v1/nodes/n1', dict(metadata=dict(labels=dict(a='b'))), what=('Node', 'n1'))
    assert patched['metadata']['labels'] == dict(a='b')
    (get, listing, patch) = kube_server.requests
    for _method, _path, headers, _body in (get, listing, patch):
        assert headers['Authorization'] == 'Bearer t0ken' and headers['User-Agent'] == _k8s_common.USER_AGENT
        assert headers['Impersonate-User'] == 'alice' and headers.get_all('Impersonate-Group') == ['ops', 'audit']
        assert headers['Accept'] == 'application/json'
    assert listing[1] == '/api/v1/pods?limit=500&fieldSelector=spec.nodeName%3Dn1'
    assert patch[0] == 'PATCH' and patch[2]['Content-Type'] == 'application/merge-patch+json'
    assert json.loads(patch[3]) == dict(metadata=dict(labels=dict(a='b')))


def test_error_answers_carry_the_api_status_and_message(kube_server, tmp_path):
    api = connected(kube_server, tmp_path)
    assert api.get('/api/v1/nodes/gone', what=('Node', 'gone'), missing_ok=True) is None
    with pytest.raises(K8sApiError) as info:
        api.get('/api/v1/nodes/gone', what=('Node', 'gone'))
    assert info.value.status == 404 and info.value.reason == 'NotFound'
    assert info.value.msg == 'Failed to read Node gone: 404 NotFound: nodes "gone" not found'


def test_no_answer_is_retried_by_kubeapi_alone_not_by_the_connection_pool(kube_server, tmp_path):
    api = connected(kube_server, tmp_path, api_retries=2)
    with pytest.raises(K8sConnectionError) as info:
        api.get('/api/v1/nodes/drop', what=('Node', 'drop'))
    assert [r[1] for r in kube_server.requests] == ['/api/v1/nodes/drop'] * 3   # 1 + api_retries
    assert info.value.msg.startswith('The Kubernetes API at http://127.0.0.1:%d is not reachable' % kube_server.port)
    assert 'the connection was closed without an answer' in info.value.msg, info.value.msg


def test_a_tls_failure_is_no_answer_and_says_so(kube_server):
    import kubernetes.client
    configuration = kubernetes.client.Configuration()
    configuration.host = 'https://127.0.0.1:%d' % kube_server.port   # TLS to a plain HTTP server
    transport = _k8s_common._ClientTransport(configuration)
    with pytest.raises(TransportError) as info:
        transport('GET', '/version', None, {'Accept': 'application/json'}, 5)
    assert str(info.value).startswith('TLS failed (check ca_cert, client_cert, validate_certs): '), str(info.value)
    assert 'Traceback' not in str(info.value) and len(str(info.value)) < 500

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the Kubernetes layer the k8s modules share.

This is the ONLY file of the collection that imports kubernetes.core or the ``kubernetes``
Python library. kubernetes.core is a dependency of the collection (galaxy.yml), so it is imported
plainly; the ``kubernetes`` library is guarded: without it a module fails with a clear message
(``check_requirements``) instead of a traceback.

What comes from kubernetes.core, through its public module_utils: the authentication options
(``AUTH_ARG_SPEC``, documented by this collection's ``volfence.csi.k8s.AUTH`` fragment) and the client
configuration (``get_api_client``: kubeconfig file or dict, context, host, api_key, certificates,
proxy and the ``K8S_AUTH_*`` environment variables, exactly as kubernetes.core modules resolve
them; its ``configuration``). What comes from the ``kubernetes`` library, through its public API:
an ``ApiClient`` on that configuration and ``DynamicClient.request`` (TLS, proxy, the bearer token
and its refresh by the kubeconfig's hooks).

What this file adds: ``KubeApi``, plain JSON requests (no model classes, no discovery), with
per-request timeouts, bounded retries of reads, and errors that carry the HTTP status, the API's
reason and message and the object concerned. The request/retry/error logic takes a transport
callable, so unit tests drive it without a server.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import functools
import json
import os
import socket
import sys
import threading
import time
import traceback

try:
    from urllib.parse import parse_qsl, quote, urlencode
except ImportError:  # pragma: no cover (Python 2 is not supported, this keeps the import check quiet)
    from urllib import quote, urlencode
    from urlparse import parse_qsl

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import describe, object_ref
from ansible_collections.volfence.csi.plugins.module_utils._errors import DetailedError
from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ranges import (
    MAX_API_RETRIES,
    MAX_CALL_TIMEOUT,
    check_range,
)

# kubernetes.core's module_utils import without the kubernetes library (they guard it themselves).
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client, unique_string
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

try:
    # kubernetes.core >= 6.3: the values of an inline kubeconfig dict that must not be logged (before 6.3,
    # kubeconfig is no_log as a whole)
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import (
        extract_sensitive_values_from_kubeconfig,
    )
except ImportError:
    extract_sensitive_values_from_kubeconfig = None

try:
    import kubernetes.client
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError
    from kubernetes.watch.watch import iter_resp_lines
    import urllib3
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    urllib3 = None
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

USER_AGENT = 'volfence.csi/0.1.0'

# Options of every volfence.csi k8s module besides kubernetes.core's (doc fragment volfence.csi.k8s).
K8S_COMMON_SPEC = dict(
    request_timeout=dict(type='int', default=30),
    api_retries=dict(type='int', default=3),
)


def k8s_argument_spec(**extra):
    """kubernetes.core's authentication options + the shared options + a module's own ones."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(copy.deepcopy(K8S_COMMON_SPEC))
    spec.update(extra)
    return spec


def k8s_module(argument_spec, **kwargs):
    """The module object of a volfence.csi k8s module, with check_requirements done: its options are
    kubernetes.core's authentication options, the shared ones and its own `argument_spec`."""
    module = VolfenceModule(argument_spec=k8s_argument_spec(**argument_spec), **kwargs)
    check_requirements(module)
    return module


def check_requirements(module):
    """Fail the module clearly when the kubernetes library is missing; keep the secrets of an inline
    kubeconfig out of the logs."""
    if KUBERNETES_IMPORT_ERROR is not None:
        module.fail_json(msg=missing_required_lib('kubernetes', reason='to talk to the Kubernetes API')
                         + ' (interpreter: %s)' % sys.executable,
                         exception=KUBERNETES_IMPORT_ERROR)
    kubeconfig = module.params.get('kubeconfig')
    if isinstance(kubeconfig, dict) and extract_sensitive_values_from_kubeconfig is not None:
        module.no_log_values.update(extract_sensitive_values_from_kubeconfig(kubeconfig))
    try:
        check_range(module.params.get('request_timeout'), 'request_timeout', 1, MAX_CALL_TIMEOUT, 'seconds')
        check_range(module.params.get('api_retries'), 'api_retries', 0, MAX_API_RETRIES)
    except ValueError as exc:
        module.fail_json(msg=str(exc))


# --------------------------------------------------------------------------- errors

class K8sError(DetailedError):
    """A Kubernetes operation failed; carries what the user needs to see."""

    FAIL_DETAILS = (('status', 'status'), ('reason', 'reason'), ('api_message', 'api_message'),
                    ('method', 'method'), ('path', 'path'), ('obj', 'object'))

    def __init__(self, msg, *, status=None, reason=None, api_message=None, method=None, path=None, obj=None):
        super(K8sError, self).__init__(msg)
        self.status, self.reason, self.api_message = status, reason, api_message   # the API's answer
        self.method, self.path, self.obj = method, path, obj                       # the request


class K8sApiError(K8sError):
    """The API server answered with an error status."""


class K8sConnectionError(K8sError):
    """No answer: connection refused or reset, TLS failure, timeout."""


class K8sConfigError(K8sError):
    """The client could not be configured (no kubeconfig, bad context, ...)."""


class K8sNotInstalled(K8sError):
    """An API group/resource (a CRD) is not served by the cluster."""


class K8sRefused(K8sError):
    """A safety rule or invalid input refused the request; nothing was changed."""


class TransportError(Exception):
    """Raised by a transport when no HTTP answer was received."""


def transport_reason(exc):
    """Why no HTTP answer came, in the user's words, from a urllib3/OS error: connection refused, host
    name not resolved, timed out, TLS failure, with the library's own text after it."""
    cause = exc
    for _depth in range(5):  # MaxRetryError.reason, ProtocolError.args[1], ...
        inner = getattr(cause, 'reason', None)
        if isinstance(inner, BaseException):
            cause = inner
            continue
        break
    names = set(c.__name__ for c in type(cause).__mro__) | set(c.__name__ for c in type(exc).__mro__)
    return _no_answer_reason(names, str(cause))


def _no_answer_reason(names, text):
    """transport_reason() of an error of the classes `names` that says `text`."""
    lowered = text.lower()
    if 'NameResolutionError' in names or 'gaierror' in names or 'name or service not known' in lowered \
            or 'temporary failure in name resolution' in lowered or 'nodename nor servname' in lowered:
        why = 'its host name does not resolve'
    elif 'ConnectionRefusedError' in names or 'connection refused' in lowered or 'errno 111' in lowered:
        why = 'connection refused (nothing listens there)'
    elif 'ConnectTimeoutError' in names or ('connect' in lowered and 'timed out' in lowered):
        why = 'the connection timed out'
    elif 'ReadTimeoutError' in names or 'read timed out' in lowered:
        why = 'no answer within request_timeout'
    elif 'SSLError' in names or 'certificate' in lowered or 'ssl' in lowered:
        why = 'TLS failed (check ca_cert, client_cert, validate_certs)'
    elif 'ProxyError' in names:
        why = 'the proxy failed'
    elif 'no route to host' in lowered or 'network is unreachable' in lowered:
        why = 'no route to the host'
    elif 'connection reset' in lowered or 'RemoteDisconnected' in text or 'ProtocolError' in names:
        why = 'the connection was closed without an answer'
    else:
        why = 'the connection failed'
    return '%s: %s' % (why, text)


# Statuses worth retrying: the server is overloaded, restarting, or timed out internally.
RETRYABLE_STATUSES = (429, 500, 502, 503, 504)


def api_error(method, path, status, reason, data, *, what=None):
    """A K8sApiError from an HTTP error answer; `what` is (kind, name[, namespace])."""
    body = None
    if data:
        try:
            body = json.loads(data.decode('utf-8') if isinstance(data, bytes) else data)
        except (ValueError, UnicodeDecodeError):
            body = None
    api_reason = reason
    api_message = None
    if isinstance(body, dict) and body.get('kind') == 'Status':
        api_reason = body.get('reason') or reason
        api_message = body.get('message')
    elif data:
        text = data.decode('utf-8', 'replace') if isinstance(data, bytes) else str(data)
        api_message = text.strip()[:500] or None
    obj = object_ref(*what) if what else None
    target = describe(*what) if what else path
    verb = {'GET': 'read', 'POST': 'create', 'PUT': 'replace', 'PATCH': 'update', 'DELETE': 'delete'}.get(method,
                                                                                                          method)
    msg = 'Failed to %s %s: %s %s' % (verb, target, status, api_reason or '')
    if api_message:
        msg += ': %s' % api_message
    return K8sApiError(msg.rstrip(), status=status, reason=api_reason, api_message=api_message, method=method,
                       path=path, obj=obj)


def discovery_refusal(exc, where=''):
    """The K8sApiError of the API server's 401 or 403 to kubernetes.core's discovery (its ForbiddenError or
    UnauthorizedError, raised from get_api_client), told as such, not as a kubeconfig that cannot be loaded."""
    refusal = api_error('GET', 'API discovery', exc.status, getattr(exc, 'reason', None), getattr(exc, 'body', None))
    if exc.status == 401:
        why = 'the credentials are not accepted (a token expired, revoked or of a deleted ServiceAccount?)'
    else:
        why = ('the identity may not read the discovery paths (/version, /api, /apis), which every authenticated '
               'identity may through the ClusterRole system:discovery')
    refusal.msg = 'The Kubernetes API%s refused API discovery: %s %s%s; %s; nothing was done' % (
        where, refusal.status, refusal.reason or '', ': %s' % refusal.api_message if refusal.api_message else '', why)
    refusal.args = (refusal.msg,)
    return refusal


# --------------------------------------------------------------------------- the API

class KubeApi(object):
    """JSON requests to the API server with timeouts, bounded retries and clear errors.

    `transport(method, path_and_query, body_bytes, headers, timeout)` returns
    ``(status, reason, headers, data)`` or raises TransportError.
    Reads (GET) are retried on 429/5xx and transport errors; writes are never retried here:
    the callers re-read and decide (a write may have been applied before its answer was lost).
    """

    def __init__(self, transport, *, timeout=30, retries=3, sleep=time.sleep, backoff=0.5):
        self.transport = transport
        self.timeout = timeout
        self.retries = retries
        self.sleep = sleep
        self.backoff = backoff
        self.writes = 0     # write requests sent (for reports and tests)
        self.requests = 0

    # -- low level
    def request(self, method, path, *, query=None, body=None, content_type='application/json', what=None,
                retry=None, ok_statuses=()):
        """The decoded JSON answer (a dict; {} for an empty body). Statuses in `ok_statuses` return
        None instead of raising (e.g. 404 for "absent is fine")."""
        if retry is None:
            retry = method == 'GET'
        url = path + ('?' + urlencode(query) if query else '')
        data = None if body is None else json.dumps(body).encode('utf-8')
        headers = {'Accept': 'application/json'}
        if data is not None:
            headers['Content-Type'] = content_type
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(attempts):
            last = attempt + 1 >= attempts
            self.requests += 1
            if method != 'GET':
                self.writes += 1
            try:
                status, reason, resp_headers, resp_data = self.transport(method, url, data, headers, self.timeout)
            except TransportError as exc:
                if not last:
                    self.sleep(self.backoff * (2 ** attempt))
                    continue
                target = describe(*what) if what else path
                host = getattr(self.transport, 'host', None)
                raise K8sConnectionError('The Kubernetes API%s is not reachable: %s; no answer to %s %s (%s)' % (
                    (' at %s' % host) if host else '', exc, method, path, target), method=method, path=path,
                    obj=object_ref(*what) if what else None)
            if 200 <= status < 300:
                if not resp_data:
                    return {}
                try:
                    return json.loads(resp_data.decode('utf-8') if isinstance(resp_data, bytes) else resp_data)
                except ValueError:
                    raise K8sApiError('The Kubernetes API answered %s %s with something that is not JSON' % (
                        method, path), status=status, method=method, path=path)
            if status in ok_statuses:
                return None
            if retry and not last and status in RETRYABLE_STATUSES:
                self.sleep(_retry_after(resp_headers) or self.backoff * (2 ** attempt))
                continue
            raise api_error(method, path, status, reason, resp_data, what=what)

    # -- conveniences
    def get(self, path, what=None, missing_ok=False):
        """The object, or None when it does not exist and `missing_ok`."""
        return self.request('GET', path, what=what, ok_statuses=(404,) if missing_ok else ())

    def list(self, path, what=None, label_selector=None, field_selector=None, page=500):
        """Every item of a collection (following `continue` tokens)."""
        return self.list_versioned(path, what=what, label_selector=label_selector, field_selector=field_selector,
                                   page=page)[0]

    def list_versioned(self, path, what=None, label_selector=None, field_selector=None, page=500):
        """(every item of a collection, the list's resourceVersion): where a watch of it starts."""
        items = []
        version = None
        token = None
        while True:
            query = [('limit', str(page))]
            if label_selector:
                query.append(('labelSelector', label_selector))
            if field_selector:
                query.append(('fieldSelector', field_selector))
            if token:
                query.append(('continue', token))
            answer = self.request('GET', path, query=query, what=what)
            items.extend(answer.get('items') or [])
            # the first page's version: later pages are of the same snapshot
            version = version or (answer.get('metadata') or {}).get('resourceVersion')
            token = (answer.get('metadata') or {}).get('continue')
            if not token:
                return items, version

    def watch(self, path, resource_version, timeout, field_selector=None):
        """The events of a watch of `path` from `resource_version` ({type, object} dicts, BOOKMARKs
        included), until the server ends it (after `timeout` seconds at most) or it breaks. A 410
        Gone (the version is too old) comes as an ERROR event, as the API server sends it."""
        query = [('watch', '1'), ('resourceVersion', str(resource_version)), ('allowWatchBookmarks', 'true'),
                 ('timeoutSeconds', str(int(timeout)))]
        if field_selector:
            query.append(('fieldSelector', field_selector))
        self.requests += 1
        for line in self.transport.stream(path + '?' + urlencode(query), {'Accept': 'application/json'},
                                          timeout + 30):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError:
                    raise K8sApiError('The Kubernetes API sent a watch event of %s that is not JSON' % path,
                                      method='GET', path=path)

    def close_streams(self):
        """End every watch of this client now (the transport's close_streams); how many were open."""
        close = getattr(self.transport, 'close_streams', None)
        return close() if close is not None else 0

    def create(self, path, body, what=None):
        return self.request('POST', path, body=body, what=what)

    def merge_patch(self, path, body, what=None, subresource=None):
        return self.request('PATCH', path + ('/' + subresource if subresource else ''), body=body,
                            content_type='application/merge-patch+json', what=what)

    def json_patch(self, path, ops, what=None):
        return self.request('PATCH', path, body=ops, content_type='application/json-patch+json', what=what)

    def delete(self, path, what=None, body=None):
        """The answer, or None when the object was already gone (404)."""
        return self.request('DELETE', path, body=body, what=what, ok_statuses=(404,))

    def server_version(self):
        """The /version document (gitVersion, major, minor, ...)."""
        return self.request('GET', '/version', what=('Version', None))

    def served(self, group, version, plural):
        """Whether the server serves `plural` in group/version (discovery; False on 404)."""
        path = '/apis/%s/%s' % (group, version) if group else '/api/%s' % version
        answer = self.request('GET', path, ok_statuses=(404,), what=('APIResourceList', '%s/%s' % (group, version)))
        if answer is None:
            return False
        return any(r.get('name') == plural for r in answer.get('resources') or [])


def _retry_after(headers):
    try:
        value = float((headers or {}).get('Retry-After'))
    except (TypeError, ValueError):
        return None
    return min(max(value, 0.0), 10.0)


def resource_path(group, version, plural, name=None, namespace=None):
    """The REST path of a collection or of one object."""
    base = '/apis/%s/%s' % (group, version) if group else '/api/%s' % version
    if namespace:
        base += '/namespaces/%s' % quote(namespace, safe='')
    base += '/' + plural
    if name is not None:
        base += '/' + quote(name, safe='')
    return base


# --------------------------------------------------------------------------- connecting

class _NoDiscovery(object):
    """The discoverer of a DynamicClient that only sends requests to paths KubeApi builds: it
    discovers nothing (kubernetes.core's client, created just before, did the discovery)."""

    def __init__(self, client, cache_file=None):
        pass


def impersonation_headers(params, environ=None):
    """[(header, value)] for the impersonate_user and impersonate_groups options, or their
    K8S_AUTH_IMPERSONATE_USER and K8S_AUTH_IMPERSONATE_GROUPS (comma-separated) variables when the
    option is not given, as kubernetes.core sends them: one Impersonate-Group header per group."""
    environ = os.environ if environ is None else environ
    user = params.get('impersonate_user')
    if user is None:
        user = environ.get('K8S_AUTH_IMPERSONATE_USER')
    groups = params.get('impersonate_groups')
    if groups is None:
        groups = [g for g in (environ.get('K8S_AUTH_IMPERSONATE_GROUPS') or '').split(',') if g]
    headers = [('Impersonate-User', user)] if user else []
    # kubernetes.core's header name that stays distinct in a dict, so that each group is sent
    return headers + [(unique_string('Impersonate-Group'), group) for group in groups or []]


class _ClientTransport(object):
    """HTTP through the kubernetes library's public client, on the configuration kubernetes.core built:
    its TLS settings, proxy and bearer token (refreshed by the kubeconfig's hooks)."""

    def __init__(self, configuration, headers=()):
        configuration = copy.copy(configuration)
        # KubeApi retries (reads only, each attempt bounded by request_timeout): the connection pool
        # must not retry on its own as well.
        configuration.retries = False
        api_client = kubernetes.client.ApiClient(configuration)
        api_client.user_agent = USER_AGENT
        for name, value in headers:
            api_client.set_default_header(name, value)
        self.client = DynamicClient(api_client, discoverer=_NoDiscovery)
        self.host = configuration.host.rstrip('/')
        self._streams = set()   # the open watch responses, for close_streams()
        self._streams_lock = threading.Lock()

    def __call__(self, method, url, body, headers, timeout):
        path, _sep, query = url.partition('?')
        try:
            resp = self.client.request(method, path, body=None if body is None else json.loads(body),
                                       query_params=parse_qsl(query, keep_blank_values=True),
                                       header_params=dict(headers), content_type=headers.get('Content-Type'),
                                       serialize=False, _request_timeout=(min(timeout, 10), timeout))
        except DynamicApiError as exc:
            if exc.status:
                return exc.status, exc.reason, exc.headers, exc.body
            # Status 0 is no answer: the library's report of a TLS failure, "<error class>\n<its text>".
            name, _sep, text = (exc.reason or '').partition('\n')
            raise TransportError(_no_answer_reason(set([name]), text or name))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(transport_reason(exc))
        return resp.status, resp.reason, resp.headers, resp.data

    def stream(self, url, headers, timeout):
        """The lines of a streamed GET (a watch), read as they come; TransportError when it cannot
        start, K8sApiError when the server refuses it."""
        path, _sep, query = url.partition('?')
        try:
            resp = self.client.request('GET', path, query_params=parse_qsl(query, keep_blank_values=True),
                                       header_params=dict(headers), serialize=False, _preload_content=False,
                                       _request_timeout=(min(timeout, 10), timeout))
        except DynamicApiError as exc:
            if exc.status:
                raise api_error('GET', path, exc.status, exc.reason, exc.body)
            raise TransportError(exc.reason or 'no answer')
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(transport_reason(exc))
        with self._streams_lock:
            self._streams.add(resp)
        try:
            yield from iter_resp_lines(resp)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(transport_reason(exc))
        finally:
            with self._streams_lock:
                self._streams.discard(resp)
            resp.close()
            resp.release_conn()

    def close_streams(self):
        """End every open watch now, from any thread (the EDA source, when it is stopped): its socket is
        shut down, so the thread reading it gets an error at once instead of waiting for the server's
        timeout, and the API server sees the watch end."""
        with self._streams_lock:
            streams = list(self._streams)
        for resp in streams:
            sock = getattr(getattr(resp, 'connection', None), 'sock', None)
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:   # already closed
                pass
        return len(streams)


def bounded_call(func, timeout, what):
    """func()'s result, or K8sConnectionError when it has not returned within `timeout` seconds.

    func runs in a daemon thread: a call that never returns (a server that accepts the connection and
    never answers) is abandoned, and dies with the module's process. Exceptions of func are re-raised."""
    box = {}

    def target():
        try:
            box['value'] = func()
        except BaseException as exc:  # pylint: disable=broad-except
            box['error'] = exc
    thread = threading.Thread(target=target, name='volfence-k8s-bounded', daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise K8sConnectionError('The Kubernetes API is not reachable: %s timed out after request_timeout=%ss (the '
                                 'server accepted no request or sent no answer); nothing was done' % (what, timeout))
    if 'error' in box:
        raise box['error']
    return box.get('value')


def _configured_host():
    """The API server URL the kubernetes library's default configuration names now (for messages)."""
    try:
        import kubernetes.client  # pylint: disable=import-outside-toplevel
        return kubernetes.client.Configuration.get_default_copy().host
    except Exception:  # pylint: disable=broad-except
        return None


def kubeconfig_problem(kubeconfig, source, exists=os.path.exists, isfile=os.path.isfile, access=os.access):
    """Why the kubeconfig path(s) (os.pathsep-separated, as KUBECONFIG) cannot be used, or None: the
    only one given does not exist, is not a file (a directory) or cannot be read by this user; with
    several paths, none can be read."""
    paths = [os.path.expanduser(p) for p in kubeconfig.split(os.pathsep) if p]
    problems = []
    for path in paths:
        if not exists(path):
            problems.append('%s does not exist' % path)
        elif not isfile(path):
            problems.append('%s is not a file (a directory?)' % path)
        elif not access(path, os.R_OK):
            problems.append('%s is not readable by this user' % path)
    if paths and len(problems) == len(paths):
        return 'kubeconfig %s (from the %s); nothing was done' % ('; '.join(problems), source)
    return None


def connect(module):
    """A KubeApi for the module's connection options (kubernetes.core's, and K8S_AUTH_*).

    Building the client (kubeconfig, credential plugins, and the API discovery kubernetes.core's
    client does when it is created: /version, /api, /apis) is bounded by request_timeout as a whole
    (I8); every later request by request_timeout per attempt (KubeApi)."""
    check_requirements(module)
    return connect_params(module.params)


def connect_params(params):
    """connect() for options given as a dict (kubernetes.core's names; K8S_AUTH_* fill what is not
    given), for code that is not a module: the EDA event source. Raises K8sError."""
    if KUBERNETES_IMPORT_ERROR is not None:
        raise K8sNotInstalled(missing_required_lib('kubernetes', reason='to talk to the Kubernetes API')
                              + ' (interpreter: %s)' % sys.executable)
    timeout = params.get('request_timeout') or 30
    auth = dict((name, params[name]) for name in AUTH_ARG_SPEC if params.get(name) is not None)
    kubeconfig = auth.get('kubeconfig', os.environ.get('K8S_AUTH_KUBECONFIG'))
    if isinstance(kubeconfig, str) and kubeconfig:
        problem = kubeconfig_problem(kubeconfig, 'kubeconfig option' if 'kubeconfig' in auth
                                     else 'K8S_AUTH_KUBECONFIG variable')
        if problem:
            raise K8sConfigError(problem)
    try:
        k8s_client = bounded_call(functools.partial(get_api_client, **auth), timeout,
                                  'connecting (kubeconfig, API discovery)')
    except K8sConnectionError as exc:
        host = auth.get('host') or _configured_host()
        if host:
            exc.msg = exc.msg.replace('The Kubernetes API is', 'The Kubernetes API at %s is' % host, 1)
            exc.args = (exc.msg,)
        raise
    except CoreException as exc:
        raise K8sConfigError('Could not configure the Kubernetes client: %s. Give kubeconfig (or '
                             'K8S_AUTH_KUBECONFIG), or host with api_key, or run inside a cluster.'
                             % str(exc).rstrip('.'))
    except Exception as exc:  # pylint: disable=broad-except
        # discovery errors, unreachable server, bad kubeconfig content
        host = auth.get('host') or _configured_host()
        where = (' at %s' % host) if host else ''
        if getattr(exc, 'status', None) in (401, 403):
            raise discovery_refusal(exc, where)
        if isinstance(exc, ConnectionError) or (urllib3 is not None and isinstance(exc, urllib3.exceptions.HTTPError)):
            raise K8sConnectionError('The Kubernetes API%s is not reachable: %s; nothing was done'
                                     % (where, transport_reason(exc)))
        if isinstance(kubeconfig, str) and kubeconfig:
            raise K8sConfigError('kubeconfig %s could not be loaded (is it a kubeconfig file? check its YAML, '
                                 'contexts, clusters and users): %s: %s; nothing was done'
                                 % (kubeconfig, type(exc).__name__, exc))
        raise K8sConnectionError('Could not connect to the Kubernetes API%s: %s: %s' % (where, type(exc).__name__, exc))
    transport = _ClientTransport(k8s_client.configuration, impersonation_headers(params))
    return KubeApi(transport, timeout=timeout,
                   retries=params.get('api_retries') if params.get('api_retries') is not None else 3)

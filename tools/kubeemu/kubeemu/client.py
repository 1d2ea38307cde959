"""The one Kubernetes HTTP client of the lab, the tests and the benchmarks (stdlib only).

* KubeClient: JSON requests to any Kubernetes API server. Objects are named by kind (``"pods"``,
  with a namespace and name) or by API path (``"/api/v1/nodes"``). It runs where the `kubernetes`
  package is not installed (the lab's simulated kubelets and controllers run under Debian's and the Ceph
  release's Pythons, beside their rados/rbd bindings): a plain-HTTP kubeconfig (the emulator's) needs
  nothing else; from_kubeconfig() uses the `kubernetes` library, where it is installed, to load any
  other kubeconfig (TLS, tokens, client certificates).
* Admin: the emulator's admin API (/_emulator/...: faults, request log, version, stored objects).
"""

import http.client
import json
import re
import select
import ssl
import sys
import threading
import types
import urllib.parse

from .headers import read_headers

# Path prefix and scope of the kinds named by kind.
KINDS = {
    "nodes": ("/api/v1", False),
    "pods": ("/api/v1", True),
    "events": ("/api/v1", True),
    "namespaces": ("/api/v1", False),
    "configmaps": ("/api/v1", True),
    "persistentvolumes": ("/api/v1", False),
    "persistentvolumeclaims": ("/api/v1", True),
    "secrets": ("/api/v1", True),
    "leases": ("/apis/coordination.k8s.io/v1", True),
    "storageclasses": ("/apis/storage.k8s.io/v1", False),
    "volumeattachments": ("/apis/storage.k8s.io/v1", False),
    "csidrivers": ("/apis/storage.k8s.io/v1", False),
    "deployments": ("/apis/apps/v1", True),
    "statefulsets": ("/apis/apps/v1", True),
    "replicasets": ("/apis/apps/v1", True),
    "customresourcedefinitions": ("/apis/apiextensions.k8s.io/v1", False),
    "networkfences": ("/apis/csiaddons.openshift.io/v1alpha1", False),
    "networkfenceclasses": ("/apis/csiaddons.openshift.io/v1alpha1", False),
    "csiaddonsnodes": ("/apis/csiaddons.openshift.io/v1alpha1", True),
}
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """An answer >= 300: status, the body (the Status object, or {"message": text}), the request."""

    def __init__(self, status, body, method, path):
        self.status = status
        self.body = body
        self.reason = body.get("reason") if isinstance(body, dict) else None
        super().__init__("%s %s -> %s %s" % (method, path, status, body.get("message") if isinstance(body, dict) else body))


def server_from_kubeconfig(path):
    """The API server URL of the kubeconfig's first cluster (JSON, or YAML read for its server line)."""
    with open(path) as handle:
        text = handle.read()
    try:
        config = json.loads(text)
    except ValueError:
        match = re.search(r"server:\s*['\"]?([^'\"\s]+)", text)
        if not match:
            raise ValueError("no server in kubeconfig %s" % path)
        return match.group(1)
    return config["clusters"][0]["cluster"]["server"]


# Its requests say they are urllib's, as the lab's agents' always did: tests tell them from the collection's
# (the kubernetes client's) in the emulator's request log by that.
DEFAULT_USER_AGENT = "kubeemu-client (Python-urllib/%d.%d)" % sys.version_info[:2]


# A kept-alive connection the server closed while it was idle: readable (at its end) before a request
# is sent on it, it is replaced first. Closed just then, the request fails with one of these before any
# answer: a GET is sent again on a new connection; a write is not (the server may have read it).
STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class _Response(http.client.HTTPResponse):
    """http.client's answer, its headers read by headers.read_headers (the email feed parser that
    http.client uses was the largest pure-Python cost of a lab kubelet's or controller's request).
    begin is http.client's own (this Python's), with parse_headers looked up in a namespace of its own."""
    begin = types.FunctionType(http.client.HTTPResponse.begin.__code__,
                               dict(vars(http.client), parse_headers=read_headers), "begin",
                               http.client.HTTPResponse.begin.__defaults__,
                               http.client.HTTPResponse.begin.__closure__)


class KubeClient(object):
    """Each thread keeps one connection to the server alive (HTTP/1.1, as the `kubernetes` client's
    urllib3 pool does): the lab's kubelets and controllers poll every half second, and a new connection
    per request cost them, and the emulator (a thread per connection), more CPU than the request."""

    def __init__(self, server, timeout=10, headers=None, ssl_context=None, user_agent=DEFAULT_USER_AGENT):
        self.server = server.rstrip("/")
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.headers.setdefault("User-Agent", user_agent)
        self.ssl_context = ssl_context
        parsed = urllib.parse.urlsplit(self.server)
        self._scheme, self._netloc, self._base = parsed.scheme, parsed.netloc, parsed.path.rstrip("/")
        self._local = threading.local()

    def _connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            self._drop_connection()   # closed by the server (or it sent what nobody asked for)
            conn = None
        if conn is None:
            if self._scheme == "https":
                conn = http.client.HTTPSConnection(self._netloc, timeout=self.timeout, context=self.ssl_context)
            else:
                conn = http.client.HTTPConnection(self._netloc, timeout=self.timeout)
            conn.response_class = _Response
            self._local.conn, self._local.used = conn, False
        return conn

    def _drop_connection(self):
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def close(self):
        """Close this thread's connection (the next request opens a new one)."""
        self._drop_connection()

    def _exchange(self, method, target, data, headers):
        """(status, body) of one request on this thread's connection; a stale kept-alive connection is
        replaced once, any other failure drops it and raises."""
        for attempt in (1, 2):
            conn = self._connection()
            reused = self._local.used
            try:
                conn.request(method, target, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            except STALE_CONNECTION:
                self._drop_connection()
                if reused and attempt == 1 and method == "GET":
                    continue
                raise
            except BaseException:
                self._drop_connection()
                raise
            self._local.used = True
            if resp.will_close:
                self._drop_connection()
            return resp.status, payload

    @classmethod
    def from_kubeconfig(cls, path, **kwargs):
        """A client with the server and credentials of the kubeconfig's current context."""
        try:
            from kubernetes import client as k8s_client, config as k8s_config
        except ImportError:  # the lab's Pythons: its kubeconfig is plain HTTP
            return cls(server_from_kubeconfig(path), **kwargs)
        cfg = k8s_client.Configuration()
        k8s_config.load_kube_config(config_file=path, client_configuration=cfg)
        headers = dict(kwargs.pop("headers", None) or {})
        for auth in (cfg.auth_settings() or {}).values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        context = None
        if cfg.host.startswith("https:"):
            context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                context.load_cert_chain(cfg.cert_file, cfg.key_file)
            if not cfg.verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        return cls(cfg.host, headers=headers, ssl_context=context, **kwargs)

    def path(self, kind, namespace=None, name=None, subresource=None):
        """The API path of a kind (or of a path given as such), with namespace, name and subresource."""
        if kind.startswith("/"):
            parts = [kind.rstrip("/")]
        else:
            prefix, namespaced = KINDS[kind]
            parts = [prefix]
            if namespaced and namespace:
                parts.append("namespaces/%s" % namespace)
            parts.append(kind)
        if name:
            parts.append(name)
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    def request(self, method, path, body=None, query=None, content_type="application/json"):
        target = self._base + path
        if query:
            target += ("&" if "?" in target else "?") + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        headers = dict(self.headers, Accept="application/json")
        if data is not None:
            headers["Content-Type"] = content_type
        status, payload = self._exchange(method, target, data, headers)
        if status >= 300:
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = {"message": payload.decode("utf-8", "replace")}
            raise ApiError(status, parsed, method, path)
        return json.loads(payload) if payload else None

    def get(self, kind, name=None, namespace=None):
        return self.request("GET", self.path(kind, namespace, name))

    def find(self, kind, name=None, namespace=None):
        """get, or None when the object does not exist."""
        try:
            return self.request("GET", self.path(kind, namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, kind, namespace=None, label_selector=None, field_selector=None):
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        return self.request("GET", self.path(kind, namespace), query=query).get("items", [])

    def create(self, kind, obj, namespace=None):
        return self.request("POST", self.path(kind, namespace), obj)

    def patch(self, kind, name, patch, namespace=None, subresource=None):
        """A merge patch. With a path for kind, name may be None (the path names the object)."""
        return self.request("PATCH", self.path(kind, namespace, name, subresource), patch, content_type=MERGE_PATCH)

    def delete(self, kind, name=None, namespace=None, grace_period=None):
        """Delete; None when the object does not exist."""
        query = {} if grace_period is None else {"gracePeriodSeconds": grace_period}
        try:
            return self.request("DELETE", self.path(kind, namespace, name), query=query)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def apply(self, kind, obj, namespace=None):
        """Create, or merge-patch when it exists (idempotent setup)."""
        try:
            return self.request("POST", self.path(kind, namespace), obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
            return self.request("PATCH", self.path(kind, namespace, obj["metadata"]["name"]), obj,
                                content_type=MERGE_PATCH)


class Admin(object):
    """The emulator's admin API (/_emulator/...; tools/kubeemu/README.md)."""

    def __init__(self, url, timeout=10):
        self.kube = KubeClient(url, timeout=timeout, user_agent="kubeemu-admin")
        self.url = self.kube.server

    def call(self, method, path, body=None):
        return self.kube.request(method, "/_emulator/" + path, body)

    def fault(self, **spec):
        return self.call("POST", "faults", spec)

    def faults(self):
        return self.call("GET", "faults")

    def clear_faults(self):
        return self.call("DELETE", "faults")

    def requests(self, since=0, method=None, path_regex=None, tail=0):
        """The request log (entries with seq, method, path, status, user_agent, ...), after `since`;
        with `tail`, its last `tail` entries only."""
        query = {}
        if since:
            query["since"] = since
        if tail:
            query["tail"] = tail
        if method:
            query["method"] = method
        if path_regex:
            query["path_regex"] = path_regex
        log = self.kube.request("GET", "/_emulator/requests", query=query)
        return log["items"] if isinstance(log, dict) else log

    def last_seq(self):
        return max([0] + [entry["seq"] for entry in self.requests(tail=1)])

    def version(self, git_version=None):
        if git_version:
            return self.call("POST", "version", {"gitVersion": git_version})
        return self.call("GET", "version")

    def seed(self, *objs):
        """Objects stored as they are (status included)."""
        return self.call("POST", "objects", {"items": list(objs)})["items"]

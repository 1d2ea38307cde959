"""A small stdlib Kubernetes REST client for the lab's simulated node agents and controllers.

They run under /usr/bin/python3 next to Debian's rados/rbd bindings, where the `kubernetes`
package is not installed; the lab only needs plain-HTTP JSON calls against its API server.
"""

import json
import re
import urllib.error
import urllib.parse
import urllib.request

# Path prefix and scope of the kinds the lab's agents touch.
KINDS = {
    "nodes": ("/api/v1", False),
    "pods": ("/api/v1", True),
    "events": ("/api/v1", True),
    "namespaces": ("/api/v1", False),
    "persistentvolumes": ("/api/v1", False),
    "persistentvolumeclaims": ("/api/v1", True),
    "secrets": ("/api/v1", True),
    "leases": ("/apis/coordination.k8s.io/v1", True),
    "storageclasses": ("/apis/storage.k8s.io/v1", False),
    "volumeattachments": ("/apis/storage.k8s.io/v1", False),
    "csidrivers": ("/apis/storage.k8s.io/v1", False),
    "deployments": ("/apis/apps/v1", True),
    "replicasets": ("/apis/apps/v1", True),
    "customresourcedefinitions": ("/apis/apiextensions.k8s.io/v1", False),
    "networkfences": ("/apis/csiaddons.openshift.io/v1alpha1", False),
    "networkfenceclasses": ("/apis/csiaddons.openshift.io/v1alpha1", False),
    "csiaddonsnodes": ("/apis/csiaddons.openshift.io/v1alpha1", True),
}


class ApiError(Exception):
    def __init__(self, status, body, method, path):
        self.status = status
        self.body = body
        self.reason = body.get("reason") if isinstance(body, dict) else None
        super().__init__("%s %s -> %s %s" % (method, path, status, body.get("message") if isinstance(body, dict) else body))


def server_from_kubeconfig(path):
    """The API server URL of the current context (the lab's kubeconfig is plain HTTP)."""
    text = open(path).read()
    try:
        config = json.loads(text)
    except ValueError:
        match = re.search(r"server:\s*['\"]?([^'\"\s]+)", text)
        if not match:
            raise ValueError("no server in kubeconfig %s" % path)
        return match.group(1)
    return config["clusters"][0]["cluster"]["server"]


class KubeClient(object):
    def __init__(self, server, timeout=10):
        self.server = server.rstrip("/")
        self.timeout = timeout

    def path(self, kind, namespace=None, name=None, subresource=None):
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
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = {"message": raw.decode("utf-8", "replace")}
            raise ApiError(exc.code, parsed, method, path)
        return json.loads(payload) if payload else None

    def get(self, kind, name, namespace=None):
        return self.request("GET", self.path(kind, namespace, name))

    def find(self, kind, name, namespace=None):
        try:
            return self.get(kind, name, namespace)
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
        return self.request("PATCH", self.path(kind, namespace, name, subresource), patch,
                            content_type="application/merge-patch+json")

    def delete(self, kind, name, namespace=None, grace_period=None):
        query = {} if grace_period is None else {"gracePeriodSeconds": grace_period}
        try:
            return self.request("DELETE", self.path(kind, namespace, name), query=query)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def apply(self, kind, obj, namespace=None):
        """Create, or merge-patch when it exists (the lab's idempotent setup)."""
        try:
            return self.create(kind, obj, namespace)
        except ApiError as exc:
            if exc.status != 409:
                raise
            return self.patch(kind, obj["metadata"]["name"], obj, namespace)

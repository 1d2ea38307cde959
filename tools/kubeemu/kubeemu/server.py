"""HTTP front end of the Kubernetes API emulator (stdlib only).

Usage from Python::

    from kubeemu.server import EmulatorServer
    srv = EmulatorServer(port=0).start()
    srv.write_kubeconfig("/tmp/kubeconfig")
    ...
    srv.stop()
"""

import base64
import collections
import email.utils
import hashlib
import hmac
import http.client
import itertools
import json
import os
import queue
import re
import select
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from . import rbac
from .headers import read_headers
from .store import DEFAULT_VERSION, ApiError, Store, bad_request
from .tables import to_table

KUBECONFIG_NAME = "volfence-lab"
DEFAULT_TOKEN = "volfence-lab-token"
# The user of the admin token (kubeconfig): in system:masters, as kubeadm's kubernetes-admin is.
ADMIN_USER = "kubernetes-admin"
SA_TOKEN_PREFIX = "kubeemu-sa."
# the API group of SelfSubjectAccessReview and SelfSubjectRulesReview: answered, never stored
AUTHORIZATION_GROUP = "authorization.k8s.io"

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
            405: "MethodNotAllowed", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType",
            422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}


def _unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


# ---------------------------------------------------------------------------
# Fault injection and request log
# ---------------------------------------------------------------------------

class Faults:
    FIELDS = ("method", "path_regex", "query_regex", "status", "reason", "message", "count",
              "skip", "delay", "drop", "retry_after")

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []
        self.ids = itertools.count(1)

    def add(self, spec):
        if not isinstance(spec, dict):
            raise bad_request("fault must be an object")
        unknown = set(spec) - set(self.FIELDS)
        if unknown:
            raise bad_request("unknown fault fields: %s" % ", ".join(sorted(unknown)))
        if not (spec.get("status") or spec.get("delay") or spec.get("drop")):
            raise bad_request("a fault needs at least one of status, delay, drop")
        f = {"id": next(self.ids), "method": (spec.get("method") or "*").upper(),
             "path_regex": spec.get("path_regex") or ".*",
             "query_regex": spec.get("query_regex"),
             "status": int(spec["status"]) if spec.get("status") else None,
             "reason": spec.get("reason"), "message": spec.get("message"),
             "count": spec.get("count", 1), "skip": int(spec.get("skip") or 0),
             "delay": float(spec.get("delay") or 0), "drop": bool(spec.get("drop")),
             "retry_after": spec.get("retry_after"), "hits": 0}
        if f["count"] is not None and int(f["count"]) <= 0:
            f["count"] = None  # 0 / negative / null: unlimited
        try:
            f["_path"] = re.compile(f["path_regex"])
            f["_query"] = re.compile(f["query_regex"]) if f["query_regex"] else None
        except re.error as e:
            raise bad_request("bad regex: %s" % e)
        with self.lock:
            self.items.append(f)
        return self.public(f)

    @staticmethod
    def public(f):
        return {k: v for k, v in f.items() if not k.startswith("_")}

    def list(self):
        with self.lock:
            return [self.public(f) for f in self.items]

    def remove(self, fid):
        with self.lock:
            before = len(self.items)
            self.items = [f for f in self.items if f["id"] != fid]
            return before != len(self.items)

    def clear(self):
        with self.lock:
            self.items = []

    def match(self, method, path, query):
        if not self.items:  # every request asks; most often there is no fault (no lock needed to see that)
            return None
        with self.lock:
            for f in self.items:
                if f["method"] not in ("*", method):
                    continue
                if not f["_path"].search(path):
                    continue
                if f["_query"] is not None and not f["_query"].search(query or ""):
                    continue
                if f["skip"] > 0:
                    f["skip"] -= 1
                    continue
                f["hits"] += 1
                if f["count"] is not None:
                    f["count"] -= 1
                    if f["count"] <= 0:
                        self.items.remove(f)
                return dict(f)
        return None


class RequestLog:
    def __init__(self, size=100000):
        self.lock = threading.Lock()
        self.items = collections.deque(maxlen=size)
        self.seq = itertools.count(1)

    def add(self, entry):
        with self.lock:
            entry["seq"] = next(self.seq)
            self.items.append(entry)

    def clear(self):
        with self.lock:
            self.items.clear()

    def query(self, method=None, path_regex=None, since=0, tail=0):
        """The entries after `since` of `method` whose path matches `path_regex`; with `tail`, only the
        last `tail` of them (the last sequence number without sending the whole log: it holds up to 100,000)."""
        rx = re.compile(path_regex) if path_regex else None
        with self.lock:
            items = list(self.items)
        out = [e for e in items if e["seq"] > since and (not method or e["method"] == method.upper())
               and (not rx or rx.search(e["path"]))]
        return out[-tail:] if tail else out


# ---------------------------------------------------------------------------
# HTTP handler
# ---------------------------------------------------------------------------

def _truthy(v):
    return str(v).lower() in ("true", "1", "yes")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubeemu/1.0"
    sys_version = ""
    _entry = None  # the current API request's log entry (_handle); None for the admin API
    timeout = 300

    # --- plumbing ---------------------------------------------------------
    def setup(self):
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.server.emu._conns.add(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.emu._conns.discard(self.connection)

    def log_message(self, fmt, *args):
        if self.server.emu.verbose:
            sys.stderr.write("kubeemu: %s - %s\n" % (self.address_string(), fmt % args))

    def parse_request(self):
        """http.server's parse_request for an HTTP/1.1 request line, its headers read by
        headers.read_headers (the stdlib's email feed parser was the largest cost of a request);
        any other request line goes to http.server's own, errors and all."""
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = requestline.split()
        if len(words) != 3 or words[2] != "HTTP/1.1":
            return super().parse_request()
        self.requestline = requestline
        self.command, self.path, self.request_version = words
        self.close_connection = False
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")  # as http.server does (gh-87389)
        try:
            self.headers = read_headers(self.rfile)
        except http.client.LineTooLong as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(err))
            return False
        conntype = self.headers.get("Connection", "").lower()
        if conntype == "close":
            self.close_connection = True
        elif conntype == "keep-alive":
            self.close_connection = False
        if self.headers.get("Expect", "").lower() == "100-continue":
            return self.handle_expect_100()
        return True

    _date = (None, None)  # (second, Date header) of the last answer

    def date_time_string(self, timestamp=None):
        """The Date header, formatted once a second (email.utils.formatdate, ~15 us, ran for
        every answer)."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        second = int(time.time())
        cached = Handler._date
        if cached[0] != second:
            cached = Handler._date = (second, email.utils.formatdate(second, usegmt=True))
        return cached[1]

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    def _read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send_bytes(self, code, data, ctype="application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        # headers and body in one send (avoids Nagle/delayed-ACK stalls)
        self._headers_buffer.append(b"\r\n")
        self._headers_buffer.append(data)
        self._code = code
        if self._entry is not None:
            # logged before the answer leaves: a client holding the answer finds its request in the log
            self._log()
        self.flush_headers()

    def _send_json(self, code, obj, headers=None):
        self._send_bytes(code, json.dumps(obj, separators=(",", ":")).encode(), headers=headers)

    def _send_error(self, err):
        self._send_json(err.code, err.status(), headers=err.headers)

    def _log(self):
        if self._logged:
            return
        self._logged = True
        e = self._entry
        e["status"] = self._code
        e["duration_ms"] = round((time.time() - e["time"]) * 1000, 2)
        self.server.emu.requests.add(e)

    # --- entry point ---------------------------------------------------------
    def _handle(self, method):
        emu = self.server.emu
        self._code = None
        self._logged = False
        self._entry = None  # an API request's log entry; none for the admin API
        split = urlsplit(self.path)
        path = unquote(split.path)
        q = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        try:
            body = self._read_body()
        except Exception:
            self.close_connection = True
            return
        if path.startswith("/_emulator"):
            try:
                self._admin(method, path, q, body)
            except ApiError as e:
                self._send_error(e)
            except Exception as e:  # pragma: no cover - debugging aid
                self._send_json(500, {"error": repr(e), "trace": traceback.format_exc()})
            return
        self._entry = {"time": time.time(), "method": method, "path": path,
                       "query": split.query, "params": q,
                       "content_type": self.headers.get("Content-Type"),
                       "user_agent": self.headers.get("User-Agent"), "watch": False,
                       # the client's address and port: which requests came on one connection
                       "client": "%s:%d" % self.client_address[:2]}
        try:
            fault = emu.faults.match(method, path, split.query)
            if fault:
                self._entry["fault"] = fault["id"]
                if fault["delay"]:
                    emu._stop_event.wait(fault["delay"])
                if fault["drop"]:
                    self.close_connection = True
                    self._code = 0
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault["status"]:
                    code = fault["status"]
                    headers = {}
                    if fault.get("retry_after") is not None:
                        headers["Retry-After"] = fault["retry_after"]
                    raise ApiError(code, fault["reason"] or _REASONS.get(code, "Unknown"),
                                   fault["message"] or "injected fault %d (kubeemu)" % fault["id"],
                                   {"causes": [{"reason": "InjectedFault",
                                                "message": "kubeemu fault %d" % fault["id"]}]},
                                   headers=headers)
            self._route(method, path, q, body)
        except ApiError as e:
            self._safe(lambda: self._send_error(e))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:
            tb = traceback.format_exc()
            sys.stderr.write("kubeemu internal error: %s\n" % tb)
            self._safe(lambda: self._send_error(ApiError(500, "InternalError", "kubeemu: %r" % e,
                                                         {"causes": [{"message": tb}]})))
        finally:
            self._log()

    def _safe(self, fn):
        try:
            fn()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    # --- admin API -----------------------------------------------------------
    def _json_body(self, body, default=None):
        if not body:
            return default
        try:
            return json.loads(body)
        except ValueError as e:
            raise bad_request("invalid JSON body: %s" % e)

    def _admin(self, method, path, q, body):
        emu = self.server.emu
        parts = [p for p in path.split("/") if p][1:]
        what = parts[0] if parts else ""
        if what == "healthz":
            return self._send_json(200, {"status": "ok"})
        if what == "faults":
            if method == "GET":
                return self._send_json(200, {"items": emu.faults.list()})
            if method == "POST":
                spec = self._json_body(body, {})
                specs = spec if isinstance(spec, list) else [spec]
                added = [emu.faults.add(s) for s in specs]
                return self._send_json(201, added if isinstance(spec, list) else added[0])
            if method == "DELETE":
                if len(parts) > 1:
                    ok = emu.faults.remove(int(parts[1]))
                    return self._send_json(200 if ok else 404, {"removed": ok})
                emu.faults.clear()
                return self._send_json(200, {"removed": "all"})
        if what == "requests":
            if method == "GET":
                items = emu.requests.query(q.get("method"), q.get("path_regex"),
                                           int(q.get("since") or 0), int(q.get("tail") or 0))
                return self._send_json(200, {"items": items})
            if method == "DELETE":
                emu.requests.clear()
                return self._send_json(200, {"cleared": True})
        if what == "reset" and method == "POST":
            emu.reset()
            return self._send_json(200, {"reset": True,
                                         "resourceVersion": str(emu.store.rv)})
        if what == "version":
            if method == "POST":
                spec = self._json_body(body, {})
                v = spec.get("gitVersion") or spec.get("version") if isinstance(spec, dict) else spec
                emu.store.set_version(v)
            return self._send_json(200, emu.store.version_info())
        if what == "objects" and method == "POST":
            spec = self._json_body(body, {})
            objs = spec.get("items") if isinstance(spec, dict) and "items" in spec else spec
            objs = objs if isinstance(objs, list) else [objs]
            return self._send_json(201, {"items": [emu.store.seed(o) for o in objs]})
        if what == "state" and method == "GET":
            return self._send_json(200, emu.store.dump())
        if what == "save" and method == "POST":
            return self._send_json(200, {"saved": emu.save_state()})
        if what == "compact" and method == "POST":
            emu.store.compact()
            return self._send_json(200, {"floor": str(emu.store.history_floor)})
        if what == "watches" and method == "GET":
            return self._send_json(200, {"active": len(emu.store.watchers)})
        raise ApiError(404, "NotFound", "unknown admin endpoint %s %s" % (method, path))

    # --- discovery -----------------------------------------------------------
    def _discovery(self, segs):
        store = self.server.emu.store
        if segs == ["api"]:
            host = "%s:%d" % (self.server.emu.host, self.server.emu.port)
            return self._send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                         "serverAddressByClientCIDRs": [
                                             {"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})

        def group_doc(g, versions):
            vs = [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in versions]
            return {"name": g, "versions": vs, "preferredVersion": vs[0]}
        groups = store.groups()
        if segs == ["apis"]:
            return self._send_json(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                         "groups": [group_doc(g, vs) for g, vs in groups.items()
                                                    if g]})
        if len(segs) == 2 and segs[0] == "apis":
            if segs[1] not in groups or not segs[1]:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._send_json(200, dict(group_doc(segs[1], groups[segs[1]]),
                                             kind="APIGroup", apiVersion="v1"))
        g, v = ("", segs[1]) if segs[0] == "api" else (segs[1], segs[2])
        types = store.types_for(g, v)
        if not types:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        resources = []
        for rt in types:
            resources.extend(rt.discovery())
        return self._send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                     "groupVersion": "%s/%s" % (g, v) if g else v,
                                     "resources": resources})

    def _openapi_v3(self, rest):
        """Minimal OpenAPI v3: enough for kubectl to see that every resource supports
        server-side field validation (so it skips client-side schema validation).
        No schemas are served; /openapi/v2 is 404."""
        store = self.server.emu.store
        groups = store.groups()
        if not rest:
            paths = {}
            for g, versions in groups.items():
                for v in versions:
                    gv = ("api/%s" % v) if not g else ("apis/%s/%s" % (g, v))
                    h = abs(hash(tuple(sorted((t.plural, t.kind, t.namespaced)
                                              for t in store.types_for(g, v))))) % (16 ** 12)
                    paths[gv] = {"serverRelativeURL": "/openapi/v3/%s?hash=%012X" % (gv, h)}
            return self._send_json(200, {"paths": paths})
        if rest[0] == "api" and len(rest) == 2:
            g, v = "", rest[1]
        elif rest[0] == "apis" and len(rest) == 3:
            g, v = rest[1], rest[2]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        types = store.types_for(g, v)
        if not types:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        prefix = "/api/%s" % v if not g else "/apis/%s/%s" % (g, v)
        paths = {}
        for rt in types:
            base = prefix + ("/namespaces/{namespace}" if rt.namespaced else "") + "/" + rt.plural
            gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
            params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                      {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                      {"name": "fieldManager", "in": "query", "schema": {"type": "string"}}]
            op = {"x-kubernetes-group-version-kind": gvk, "parameters": params,
                  "responses": {"200": {"description": "OK"}}}
            paths[base] = {"post": dict(op, **{"x-kubernetes-action": "post"})}
            paths[base + "/{name}"] = {"patch": dict(op, **{"x-kubernetes-action": "patch"}),
                                       "put": dict(op, **{"x-kubernetes-action": "put"})}
        return self._send_json(200, {"openapi": "3.0.0",
                                     "info": {"title": "Kubernetes (kubeemu)",
                                              "version": store.version},
                                     "paths": paths, "components": {"schemas": {}}})

    # --- routing -------------------------------------------------------------
    def _route(self, method, path, q, body):
        emu = self.server.emu
        store = emu.store
        identity = self._identity()
        segs = [s for s in path.split("/") if s]
        if not (segs and segs[0] in ("api", "apis") and (
                (segs[0] == "api" and len(segs) > 2) or (segs[0] == "apis" and len(segs) > 3))):
            # a non-resource request: discovery, /version, /openapi, the health checks
            self._authorize(identity, rbac.Attributes(method.lower(), path=path or "/"))
        if not segs:
            return self._send_json(200, {"paths": ["/api", "/api/v1", "/apis", "/version"]})
        if segs[0] == "version" and len(segs) == 1:
            return self._send_json(200, store.version_info())
        if segs[0] in ("healthz", "readyz", "livez"):
            return self._send_bytes(200, b"ok", "text/plain")
        if segs[0] == "openapi" and len(segs) >= 2 and segs[1] == "v3" and method == "GET":
            return self._openapi_v3(segs[2:])
        if segs[0] not in ("api", "apis"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if (segs[0] == "api" and len(segs) <= 2) or (segs[0] == "apis" and len(segs) <= 3):
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", "method not allowed")
            return self._discovery(segs)
        if segs[0] == "api":
            g, v, rest = "", segs[1], segs[2:]
        else:
            g, v, rest = segs[1], segs[2], segs[3:]
        watch = False
        if rest and rest[0] == "watch":
            watch, rest = True, rest[1:]
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and not (
                g == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        rt = store.get_type(g, v, plural)
        if rt is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if (rt.namespaced and name is not None and ns is None) or (not rt.namespaced and ns is not None):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        watch = watch or _truthy(q.get("watch", ""))
        verb = rbac.request_verb(method, name is not None, watch)
        self._authorize(identity, rbac.Attributes(verb, g, plural, sub,
                                                  name or rbac.selected_name(verb, q.get("fieldSelector")), ns))
        if g == AUTHORIZATION_GROUP:
            return self._review(method, plural, name, identity, body)
        dry = q.get("dryRun") == "All"
        accept = self.headers.get("Accept") or ""
        table = None
        if "as=Table" in accept:
            table = "meta.k8s.io/v1" if re.search(r"as=Table;v=v1(;|,|$)", accept) or \
                "v=v1;" in accept.split("as=Table")[1][:8] else "meta.k8s.io/v1beta1"

        if name is None:
            if method == "GET":
                if watch:
                    return self._watch(rt, ns, q, table)
                try:
                    limit = int(q.get("limit") or 0)
                except ValueError:
                    raise bad_request("invalid limit")
                items, meta = store.list(rt, ns, q.get("labelSelector"), q.get("fieldSelector"),
                                         limit, q.get("continue"))
                if table:
                    return self._send_json(200, to_table(rt, items, meta, table))
                if not rt.custom:
                    items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                             for o in items]
                return self._send_json(200, {"kind": rt.list_kind, "apiVersion": rt.api_version,
                                             "metadata": meta, "items": items})
            if method == "POST":
                if rt.namespaced and ns is None:
                    raise ApiError(405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested resource")
                obj = store.create(rt, ns, self._json_body(body), dry)
                return self._send_json(201, obj)
            if method == "DELETE":
                opts = self._delete_opts(q, body)
                items, meta = store.delete_collection(rt, ns, q.get("labelSelector"),
                                                      q.get("fieldSelector"), opts, dry)
                return self._send_json(200, {"kind": rt.list_kind, "apiVersion": rt.api_version,
                                             "metadata": meta, "items": items})
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")

        if sub is None:
            if method == "GET":
                obj = store.get(rt, ns, name)
                if table:
                    return self._send_json(200, to_table(
                        rt, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion")}, table))
                return self._send_json(200, obj)
            if method == "PUT":
                return self._send_json(200, store.update(rt, ns, name, self._json_body(body), None, dry))
            if method == "PATCH":
                obj, created = store.patch(rt, ns, name, body, self.headers.get("Content-Type"),
                                           None, dry, q.get("fieldManager"), _truthy(q.get("force", "")))
                return self._send_json(201 if created else 200, obj)
            if method == "DELETE":
                opts = self._delete_opts(q, body)
                obj, removed = store.delete(rt, ns, name, opts, dry)
                if removed and not rt.return_deleted:
                    return self._send_json(200, {
                        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": name, "group": rt.group, "kind": rt.plural,
                                    "uid": obj["metadata"].get("uid")}})
                return self._send_json(200, obj)
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")

        if sub == "status" and rt.status:
            if method == "GET":
                return self._send_json(200, store.get(rt, ns, name))
            if method == "PUT":
                return self._send_json(200, store.update(rt, ns, name, self._json_body(body),
                                                         "status", dry))
            if method == "PATCH":
                obj, _ = store.patch(rt, ns, name, body, self.headers.get("Content-Type"), "status",
                                     dry, q.get("fieldManager"))
                return self._send_json(200, obj)
        elif sub == "scale" and rt.scale:
            if method == "GET":
                return self._send_json(200, store.get_scale(rt, ns, name))
            if method == "PUT":
                return self._send_json(200, store.update_scale(rt, ns, name, self._json_body(body), dry))
            if method == "PATCH":
                obj, _ = store.patch(rt, ns, name, body, self.headers.get("Content-Type"), "scale",
                                     dry, q.get("fieldManager"))
                return self._send_json(200, obj)
        elif sub == "eviction" and "eviction" in rt.extra_subresources and method == "POST":
            store.evict(rt, ns, name, self._json_body(body, {}))
            return self._send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                         "status": "Success", "code": 201})
        elif sub == "binding" and "binding" in rt.extra_subresources and method == "POST":
            store.bind(rt, ns, name, self._json_body(body, {}))
            return self._send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                         "status": "Success", "code": 201})
        elif sub == "token" and rt.tkey == ("", "serviceaccounts") and method == "POST":
            return self._send_json(201, emu.token_request(ns, name, self._json_body(body, {})))
        elif sub == "finalize" and rt.tkey == ("", "namespaces") and method == "PUT":
            return self._send_json(200, store.get(rt, None, name))
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        raise ApiError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource")

    # --- who asks, and may it -------------------------------------------------
    def _identity(self):
        """The request's identity (kubeemu.rbac), impersonation applied; 401 for a token the emulator did
        not issue. A request without a bearer token is the lab's own (its simulated kubelets and
        controllers on the plain-HTTP kubeconfig) and acts as the admin."""
        emu = self.server.emu
        auth = self.headers.get("Authorization") or ""
        if not auth:
            identity = emu.admin
        elif not auth.startswith("Bearer "):
            raise _unauthorized()
        else:
            identity = emu.authenticate(auth[len("Bearer "):].strip())
        user = self.headers.get("Impersonate-User")
        groups = self.headers.get_all("Impersonate-Group") or []
        if not user:
            if groups:
                raise bad_request("requested impersonation of groups without impersonating a user")
            return identity
        account = rbac.split_service_account(user)
        if account:
            self._authorize(identity, rbac.Attributes("impersonate", "", "serviceaccounts", "", account[1],
                                                      account[0]))
        else:
            self._authorize(identity, rbac.Attributes("impersonate", "", "users", "", user))
        for group in groups:
            self._authorize(identity, rbac.Attributes("impersonate", "", "groups", "", group))
        if account and not groups:
            return rbac.service_account_identity(*account)
        return rbac.Identity(user, groups)

    def _authorize(self, identity, attrs):
        emu = self.server.emu
        allowed, reason = emu.authorize(identity, attrs)
        if allowed:
            return
        # StatusDetails' fields are omitempty
        details = dict((k, v) for k, v in (("name", attrs.name), ("group", attrs.group),
                                           ("kind", attrs.resource)) if v)
        raise ApiError(403, "Forbidden", rbac.forbidden_message(identity, attrs, reason),
                       details if attrs.resource_request else None)

    def _review(self, method, plural, name, identity, body):
        """A SelfSubjectAccessReview or SelfSubjectRulesReview: answered for the asking identity, not
        stored (pkg/registry/authorization/selfsubject*review/rest.go)."""
        if method != "POST" or name is not None:
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")
        review = self._json_body(body, {})
        if not isinstance(review, dict):
            raise bad_request("the body must be a %s" % plural)
        spec = review.get("spec") or {}
        emu = self.server.emu
        if plural == "selfsubjectaccessreviews":
            attrs = rbac.Attributes.from_review(spec)
            if not attrs.verb:
                raise ApiError(422, "Invalid", 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                               'spec.resourceAttributes: Invalid value: "null": exactly one of '
                               'nonResourceAttributes or resourceAttributes must be specified')
            allowed, reason = emu.authorize(identity, attrs)
            status = {"allowed": allowed}
            if reason:
                status["reason"] = reason
        else:
            resource_rules, non_resource_rules, errors = emu.rules(identity, spec.get("namespace") or "")
            status = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                      "incomplete": bool(errors)}
            if errors:
                status["evaluationError"] = "; ".join(errors)
        return self._send_json(201, {"kind": review.get("kind") or "", "apiVersion": AUTHORIZATION_GROUP + "/v1",
                                     "metadata": {"creationTimestamp": None}, "spec": spec, "status": status})

    def _delete_opts(self, q, body):
        opts = {}
        if "gracePeriodSeconds" in q and q["gracePeriodSeconds"] != "":
            try:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            except ValueError:
                raise bad_request("invalid gracePeriodSeconds")
        if q.get("propagationPolicy"):
            opts["propagationPolicy"] = q["propagationPolicy"]
        if "orphanDependents" in q:
            opts["orphanDependents"] = _truthy(q["orphanDependents"])
        b = self._json_body(body, None)
        if isinstance(b, dict):
            for k, v in b.items():
                if k not in ("kind", "apiVersion") and v is not None:
                    opts[k] = v
        return opts

    # --- watch ---------------------------------------------------------------
    def _client_gone(self):
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            if r:
                return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True
        return False

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, rt, ns, q, table):
        emu = self.server.emu
        store = emu.store
        timeout = None
        if q.get("timeoutSeconds"):
            try:
                timeout = float(q["timeoutSeconds"])
            except ValueError:
                raise bad_request("invalid timeoutSeconds")
        w = store.watch(rt, ns, q.get("labelSelector"), q.get("fieldSelector"),
                        q.get("resourceVersion"), _truthy(q.get("sendInitialEvents", "")))
        self._entry["watch"] = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self._code = 200
            self._log()
            deadline = time.time() + timeout if timeout else None
            while not emu._stop_event.is_set():
                wait = 1.0
                if deadline is not None:
                    wait = min(wait, deadline - time.time())
                    if wait <= 0:
                        break
                try:
                    item = w.q.get(timeout=wait)
                except queue.Empty:
                    if self._client_gone():
                        break
                    continue
                if item is None:
                    break
                etype, obj = item
                if etype not in ("ERROR", "BOOKMARK"):
                    obj = store._versioned(rt, obj)
                    if table:
                        obj = to_table(rt, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]},
                                       table)
                self._chunk(json.dumps({"type": etype, "object": obj},
                                       separators=(",", ":")).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        finally:
            store.unwatch(w)
            self.close_connection = True


# ---------------------------------------------------------------------------
# Server object
# ---------------------------------------------------------------------------

class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if self.emu.verbose:
            super().handle_error(request, client_address)


class EmulatorServer:
    def __init__(self, host="127.0.0.1", port=0, version=DEFAULT_VERSION, state_file=None,
                 history=10000, verbose=False, token=DEFAULT_TOKEN):
        self.host = host
        self.requested_port = port
        self.state_file = state_file
        self.verbose = verbose
        self.token = token
        self.store = Store(version=version, history=history)
        self.faults = Faults()
        self.requests = RequestLog()
        self._conns = set()
        self._httpd = None
        self._thread = None
        self._saver = None
        self._stop_event = threading.Event()

    # --- lifecycle -----------------------------------------------------------
    def start(self):
        if self.state_file and os.path.exists(self.state_file):
            with open(self.state_file) as f:
                self.store.load(json.load(f))
        self._stop_event.clear()
        self._httpd = _HTTPServer((self.host, self.requested_port), Handler)
        self._httpd.emu = self
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.2},
                                        name="kubeemu-http", daemon=True)
        self._thread.start()
        if self.state_file:
            self._saver = threading.Thread(target=self._save_loop, name="kubeemu-saver", daemon=True)
            self._saver.start()
        return self

    def stop(self):
        if self._httpd is None:
            return
        self._stop_event.set()
        with self.store.lock:
            for w in list(self.store.watchers):
                w.close()
        self._httpd.shutdown()
        for c in list(self._conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(5)
        if self._saver is not None:
            self._saver.join(5)
        if self.state_file:
            self.save_state()
        self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self._httpd.server_address[1] if self._httpd else self.requested_port

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    # --- identities and RBAC (kubeemu.rbac) ----------------------------------------
    @property
    def admin(self):
        return rbac.Identity(ADMIN_USER, [rbac.SYSTEM_MASTERS])

    def _token_signature(self, claims):
        # keyed by the admin token, which the kubeconfig keeps: a token stays valid across a restart
        return hmac.new(self.token.encode(), claims.encode(), hashlib.sha256).hexdigest()[:32]

    def token_request(self, namespace, name, body):
        """A TokenRequest's answer: a token of the ServiceAccount (404 when there is none), valid while
        that ServiceAccount (its uid) exists, as a bound token is."""
        sa = self.store.get(self.store.by_tkey[("", "serviceaccounts")], namespace, name)
        claims = base64.urlsafe_b64encode(json.dumps(
            [namespace, name, sa["metadata"]["uid"]]).encode()).decode().rstrip("=")
        spec = dict((body or {}).get("spec") or {})
        spec.setdefault("audiences", ["https://kubernetes.default.svc"])
        spec.setdefault("expirationSeconds", 3600)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + int(spec["expirationSeconds"])))
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
                "spec": spec,
                "status": {"token": SA_TOKEN_PREFIX + claims + "." + self._token_signature(claims),
                           "expirationTimestamp": expires}}

    def authenticate(self, token):
        """The identity of a bearer token; 401 for one the emulator did not issue, or whose ServiceAccount
        is gone."""
        if hmac.compare_digest(token, self.token):
            return self.admin
        if token.startswith(SA_TOKEN_PREFIX):
            claims, _, signature = token[len(SA_TOKEN_PREFIX):].rpartition(".")
            if claims and hmac.compare_digest(signature, self._token_signature(claims)):
                namespace, name, uid = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
                with self.store.lock:
                    sa = self.store._get(("", "serviceaccounts"), namespace, name)
                    if sa is not None and sa["metadata"].get("uid") == uid:
                        return rbac.service_account_identity(namespace, name, uid)
        raise _unauthorized()

    def _bindings(self, namespace):
        if namespace is None:
            return list(self.store.objects.get((rbac.RBAC_GROUP, "clusterrolebindings"), {}).values())
        return [b for (ns, _name), b in self.store.objects.get((rbac.RBAC_GROUP, "rolebindings"), {}).items()
                if ns == namespace]

    def _role_rules(self, kind, namespace, name):
        role = self.store._get((rbac.RBAC_GROUP, "roles" if kind == "Role" else "clusterroles"), namespace, name)
        return None if role is None else (role.get("rules") or [])

    def authorize(self, identity, attrs):
        """(allowed, reason) of kube-apiserver's authorizers for the identity and request attributes."""
        if identity.privileged:
            return True, ""
        with self.store.lock:
            return rbac.authorize(identity, attrs, self._bindings, self._role_rules)

    def rules(self, identity, namespace):
        with self.store.lock:
            return rbac.rules_for(identity, namespace, self._bindings, self._role_rules)

    def reset(self):
        self.store.reset()
        self.faults.clear()
        self.requests.clear()

    # --- persistence ---------------------------------------------------------
    def save_state(self):
        if not self.state_file:
            return False
        data = self.store.dump()
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.state_file)
        return True

    def _save_loop(self):
        while not self._stop_event.wait(1.0):
            if self.store.dirty:
                try:
                    self.save_state()
                except OSError as e:
                    sys.stderr.write("kubeemu: cannot save state: %s\n" % e)

    # --- kubeconfig ----------------------------------------------------------
    def kubeconfig(self, namespace="default"):
        n = KUBECONFIG_NAME
        return (
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters:\n"
            "- name: %(n)s\n"
            "  cluster:\n"
            "    server: %(url)s\n"
            "contexts:\n"
            "- name: %(n)s\n"
            "  context:\n"
            "    cluster: %(n)s\n"
            "    user: %(n)s\n"
            "    namespace: %(ns)s\n"
            "current-context: %(n)s\n"
            "users:\n"
            "- name: %(n)s\n"
            "  user:\n"
            "    token: %(token)s\n"
            "preferences: {}\n"
        ) % {"n": n, "url": self.url, "ns": namespace, "token": self.token}

    def write_kubeconfig(self, path, namespace="default"):
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.kubeconfig(namespace))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        return path

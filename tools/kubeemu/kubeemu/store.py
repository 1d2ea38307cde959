"""In-memory object store implementing Kubernetes API server semantics.

All state lives in plain dicts guarded by one re-entrant lock.  Stored objects
are never mutated in place (every write stores a fresh copy), so readers may
serialize an object they obtained under the lock after releasing it.
"""

import base64
import collections
import copy
import json
import queue
import random
import re
import threading
import uuid
from datetime import datetime, timedelta, timezone

from . import events, registry
from .patch import PatchError, json_patch, merge_patch, strategic_merge
from .selectors import (SelectorError, check_field_labels, field_match, label_match,
                        parse_field_selector, parse_label_selector)

DEFAULT_VERSION = "v1.30.2"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")
NS_TKEY = ("", "namespaces")
CRD_TKEY = ("apiextensions.k8s.io", "customresourcedefinitions")

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def now_dt():
    return datetime.now(timezone.utc)


def ts(dt=None):
    return (dt or now_dt()).strftime("%Y-%m-%dT%H:%M:%SZ")


_ATOMS = (str, int, float, bool, type(None))


def dcopy(obj):
    """A deep copy of a JSON document (what the store holds), ~2.5 times as fast as copy.deepcopy, whose
    memo and dispatch dominated a write (a node's heartbeat patch copies the node four times); any other
    type (a YAML apply body's dates, ...) is still copied by copy.deepcopy."""
    kind = type(obj)
    if kind is dict:
        return {k: dcopy(v) for k, v in obj.items()}
    if kind is list:
        return [dcopy(v) for v in obj]
    if kind in _ATOMS:
        return obj
    return copy.deepcopy(obj)


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
              "status": "Failure", "message": self.message,
              "reason": self.reason, "code": self.code}
        if self.details is not None:
            st["details"] = self.details
        return st


def _res_name(rt):
    return "%s.%s" % (rt.plural, rt.group) if rt.group else rt.plural


def not_found(rt, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (_res_name(rt), name),
                    {"name": name, "group": rt.group, "kind": rt.plural})


def bad_request(msg):
    return ApiError(400, "BadRequest", msg)


def conflict(rt, name, msg=None):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": %s' % (
                        _res_name(rt), name,
                        msg or "the object has been modified; please apply your "
                               "changes to the latest version and try again"),
                    {"name": name, "group": rt.group, "kind": rt.plural})


def invalid(rt, name, causes):
    """causes: list of (field, reason, message)."""
    parts = ["%s: %s" % (f, m) for f, _, m in causes]
    msg = '%s.%s "%s" is invalid: ' % (rt.kind, rt.group, name) if rt.group else \
        '%s "%s" is invalid: ' % (rt.kind, name)
    msg += parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(422, "Invalid", msg, {
        "name": name, "group": rt.group, "kind": rt.kind,
        "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes]})


class Watcher:
    """A registered watch; events are pushed into ``q`` as (type, obj)."""

    def __init__(self, rt, ns, lreqs, freqs):
        self.rt = rt
        self.tkey = rt.tkey
        self.ns = ns
        self.lreqs = lreqs
        self.freqs = freqs
        self.q = queue.Queue()
        self.closed = False

    def match(self, obj):
        if obj is None:
            return False
        md = obj.get("metadata") or {}
        if self.ns and md.get("namespace") != self.ns:
            return False
        return label_match(self.lreqs, md.get("labels")) and field_match(self.freqs, obj)

    def offer(self, ev):
        _rv, etype, _tkey, obj, old = ev
        new_m = self.match(obj)
        if etype == "ADDED":
            if new_m:
                self.q.put(("ADDED", obj))
        elif etype == "MODIFIED":
            old_m = self.match(old)
            if new_m and old_m:
                self.q.put(("MODIFIED", obj))
            elif new_m:
                self.q.put(("ADDED", obj))
            elif old_m:
                gone = dict(old)
                gone["metadata"] = dict(old["metadata"],
                                        resourceVersion=obj["metadata"]["resourceVersion"])
                self.q.put(("DELETED", gone))
        elif etype == "DELETED":
            if new_m:
                self.q.put(("DELETED", obj))

    def close(self):
        self.closed = True
        self.q.put(None)


class Store:
    def __init__(self, version=DEFAULT_VERSION, history=10000):
        self.lock = threading.RLock()
        self.initial_version = version
        self.history_size = history
        self.rv = 0
        self.dirty = False
        self._svc_ip = 0
        self._init_state()

    # ------------------------------------------------------------------ state
    def _init_state(self):
        self.version = self.initial_version
        self.types = {}          # (group, version, plural) -> RType
        self.by_tkey = {}        # (group, plural) -> preferred RType
        self.crd_gvrs = {}       # crd name -> [gvr]
        self.objects = collections.defaultdict(dict)   # tkey -> {(ns, name): obj}
        self.uid_index = {}      # uid -> (tkey, ns, name)
        self.owner_index = collections.defaultdict(set)  # owner uid -> {(tkey, ns, name)}
        self.ns_counts = collections.defaultdict(int)
        self.history = collections.deque()
        self.history_floor = self.rv
        self.watchers = set()
        for rt in registry.builtin_types():
            self._register(rt)
        for ns in DEFAULT_NAMESPACES:
            self.create(self.by_tkey[NS_TKEY], None, {"metadata": {"name": ns}})

    def reset(self):
        with self.lock:
            for w in list(self.watchers):
                w.close()
            self._init_state()
            self.dirty = True

    def compact(self):
        """Forget the watch history (watches from older rvs get 410 Gone)."""
        with self.lock:
            self.history.clear()
            self.history_floor = self.rv

    # ---------------------------------------------------------------- types
    def _register(self, rt):
        self.types[rt.gvr] = rt
        cur = self.by_tkey.get(rt.tkey)
        if cur is None or registry.version_priority(rt.version) < registry.version_priority(cur.version):
            self.by_tkey[rt.tkey] = rt

    def _unregister(self, gvr):
        rt = self.types.pop(gvr, None)
        if rt is None:
            return
        rest = [t for t in self.types.values() if t.tkey == rt.tkey]
        if rest:
            self.by_tkey[rt.tkey] = sorted(rest, key=lambda t: registry.version_priority(t.version))[0]
        else:
            self.by_tkey.pop(rt.tkey, None)

    def get_type(self, group, version, plural):
        with self.lock:
            return self.types.get((group, version, plural))

    def find_type(self, api_version, kind):
        group, _, version = api_version.rpartition("/")
        with self.lock:
            for rt in self.types.values():
                if rt.group == group and rt.version == version and rt.kind == kind:
                    return rt
        return None

    def groups(self):
        """{group: [versions sorted by priority]} in discovery order."""
        with self.lock:
            out = collections.OrderedDict()
            for rt in self.types.values():
                vs = out.setdefault(rt.group, [])
                if rt.version not in vs:
                    vs.append(rt.version)
            for g in out:
                out[g].sort(key=registry.version_priority)
            return out

    def types_for(self, group, version):
        with self.lock:
            return [rt for rt in self.types.values() if rt.group == group and rt.version == version]

    # -------------------------------------------------------------- version
    def version_info(self):
        v = self.version
        m = re.match(r"^v?(\d+)\.(\d+)", v)
        major, minor = (m.group(1), m.group(2)) if m else ("1", "30")
        return {"major": major, "minor": minor, "gitVersion": v,
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2024-01-01T00:00:00Z",
                "goVersion": "go1.22.0", "compiler": "gc", "platform": "linux/amd64",
                "emulatedBy": "kubeemu"}

    def set_version(self, v):
        if not re.match(r"^v\d+\.\d+", v or ""):
            raise bad_request("version must look like v1.30.2, got %r" % (v,))
        with self.lock:
            self.version = v

    # ------------------------------------------------------------- helpers
    def _get(self, tkey, ns, name):
        return self.objects.get(tkey, {}).get((ns or "", name))

    def _get_or_404(self, rt, ns, name):
        obj = self._get(rt.tkey, ns if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt, name)
        return obj

    def _key(self, rt, obj):
        md = obj["metadata"]
        return (md.get("namespace", "") if rt.namespaced else "", md["name"])

    def _emit(self, etype, tkey, obj, old):
        ev = (int(obj["metadata"]["resourceVersion"]), etype, tkey, obj, old)
        if len(self.history) >= self.history_size:
            dropped = self.history.popleft()
            self.history_floor = dropped[0]
        self.history.append(ev)
        for w in list(self.watchers):
            if w.tkey == tkey and not w.closed:
                w.offer(ev)

    @staticmethod
    def _owner_uids(obj):
        return {r.get("uid") for r in (obj.get("metadata") or {}).get("ownerReferences") or []
                if isinstance(r, dict) and r.get("uid")}

    def _commit(self, rt, obj, old, etype):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = self._key(rt, obj)
        self.objects[rt.tkey][key] = obj
        ref = (rt.tkey, key[0], key[1])
        if old is None:
            if rt.namespaced:
                self.ns_counts[key[0]] += 1
            self.uid_index[obj["metadata"]["uid"]] = ref
        old_owners = self._owner_uids(old) if old else set()
        new_owners = self._owner_uids(obj)
        for u in old_owners - new_owners:
            self.owner_index[u].discard(ref)
            if not self.owner_index[u]:
                del self.owner_index[u]
        for u in new_owners - old_owners:
            self.owner_index[u].add(ref)
        self.dirty = True
        self._emit(etype, rt.tkey, obj, old)

    def _versioned(self, rt, obj):
        if rt.view_of:
            return events.from_core(obj, rt.api_version)
        if obj.get("apiVersion") != rt.api_version:
            obj = dict(obj, apiVersion=rt.api_version)
        return obj

    def _check_body(self, rt, body):
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise bad_request("the kind in the body (%s) does not match the resource kind (%s)"
                              % (kind, rt.kind))
        av = body.get("apiVersion")
        if av and av != rt.api_version and not (rt.custom and av.startswith(rt.group + "/")):
            raise bad_request("the API version in the data (%s) does not match the expected "
                              "API version (%s)" % (av, rt.api_version))
        md = body.get("metadata")
        if md is not None and not isinstance(md, dict):
            raise bad_request("metadata must be an object")

    def _validate_name(self, rt, name):
        if not isinstance(name, str):
            raise invalid(rt, str(name), [("metadata.name", "FieldValueInvalid",
                                           "Invalid value: must be a string")])
        if rt.plural == "namespaces":
            ok, what = _DNS1123_LABEL.match(name) and len(name) <= 63, "a lowercase RFC 1123 label"
        elif rt.plural == "services" and not rt.group:
            ok, what = _DNS1035_LABEL.match(name) and len(name) <= 63, "a DNS-1035 label"
        elif rt.group == "rbac.authorization.k8s.io":
            ok, what = name not in (".", "..") and "/" not in name and "%" not in name, \
                "a valid path segment name"
        else:
            ok, what = _DNS1123_SUBDOMAIN.match(name) and len(name) <= 253, \
                "a lowercase RFC 1123 subdomain"
        if not ok:
            raise invalid(rt, name, [("metadata.name", "FieldValueInvalid",
                                      'Invalid value: "%s": must be %s' % (name, what))])

    # ---------------------------------------------------- kind-specific logic
    def _defaults(self, rt, obj, old=None):
        g, plural = rt.tkey
        spec = obj.get("spec")
        if g == "" and plural == "pods":
            if isinstance(spec, dict):
                spec.setdefault("terminationGracePeriodSeconds", 30)
                spec.setdefault("restartPolicy", "Always")
                spec.setdefault("dnsPolicy", "ClusterFirst")
                spec.setdefault("schedulerName", "default-scheduler")
        elif g == "" and plural == "secrets":
            sd = obj.pop("stringData", None)
            if isinstance(sd, dict):
                data = obj.setdefault("data", {}) or {}
                for k, v in sd.items():
                    data[k] = base64.b64encode(str(v).encode()).decode()
                obj["data"] = data
            obj.setdefault("type", "Opaque")
        elif g == "" and plural == "services":
            spec = obj.setdefault("spec", {})
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            oldspec = (old or {}).get("spec") or {}
            if "clusterIP" not in spec and oldspec.get("clusterIP"):
                spec["clusterIP"] = oldspec["clusterIP"]
                spec["clusterIPs"] = oldspec.get("clusterIPs", [oldspec["clusterIP"]])
            if "clusterIP" not in spec and spec.get("type") != "ExternalName":
                self._svc_ip += 1
                ip = "10.96.%d.%d" % (self._svc_ip // 250, self._svc_ip % 250 + 2)
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
        elif g == "apps" and plural in ("deployments", "replicasets", "statefulsets"):
            if isinstance(spec, dict):
                spec.setdefault("replicas", 1)
        elif g == "" and plural == "namespaces":
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            labels = obj["metadata"].setdefault("labels", {}) or {}
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
            obj["metadata"]["labels"] = labels

    def _prepare_create(self, rt, obj):
        g, plural = rt.tkey
        name = obj["metadata"]["name"]
        if g == "" and plural == "pods":
            spec = obj.get("spec")
            if not isinstance(spec, dict) or not spec.get("containers"):
                raise invalid(rt, name, [("spec.containers", "FieldValueRequired", "Required value")])
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        elif g == "" and plural in ("persistentvolumes", "persistentvolumeclaims"):
            obj["status"] = {"phase": "Pending"}
        elif g == "" and plural == "namespaces":
            obj["status"] = {"phase": "Active"}
        elif g == "" and plural == "services":
            obj["status"] = {"loadBalancer": {}}
        elif g == "storage.k8s.io" and plural == "volumeattachments":
            obj["status"] = {"attached": False}
        elif rt.tkey == CRD_TKEY:
            self._validate_crd(rt, obj)
        elif rt.status and g != "" or rt.custom and rt.status:
            # apps/*, policy/*, custom resources with a status subresource
            obj.pop("status", None)
        if rt.tkey == CRD_TKEY:
            obj["status"] = self._crd_status(obj, None)

    def _validate_update(self, rt, cur, new):
        g, plural = rt.tkey
        name = cur["metadata"]["name"]
        if g == "" and plural == "pods":
            def view(spec):
                s = dcopy(spec or {})
                for c in (s.get("containers") or []) + (s.get("initContainers") or []):
                    if isinstance(c, dict):
                        c.pop("image", None)
                for f in ("activeDeadlineSeconds", "tolerations",
                          "terminationGracePeriodSeconds", "schedulingGates"):
                    s.pop(f, None)
                return s
            if view(cur.get("spec")) != view(new.get("spec")):
                raise invalid(rt, name, [("spec", "FieldValueForbidden",
                                          "Forbidden: pod updates may not change fields other than "
                                          "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                                          "`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                                          "additions to existing tolerations),"
                                          "`spec.terminationGracePeriodSeconds`")])
        elif g == "storage.k8s.io" and plural == "volumeattachments":
            if cur.get("spec") != new.get("spec"):
                raise invalid(rt, name, [("spec", "FieldValueInvalid",
                                          "Invalid value: field is immutable")])
        elif g == "" and plural == "persistentvolumeclaims":
            def view(spec, old_spec):
                s = dcopy(spec or {})
                (s.get("resources") or {}).pop("requests", None)
                s.pop("volumeAttributesClassName", None)
                if not (old_spec or {}).get("volumeName"):
                    s.pop("volumeName", None)
                return s
            if view(cur.get("spec"), cur.get("spec")) != view(new.get("spec"), cur.get("spec")):
                raise invalid(rt, name, [("spec", "FieldValueForbidden",
                                          "Forbidden: spec is immutable after creation except "
                                          "resources.requests and volumeAttributesClassName for "
                                          "bound claims")])
        elif g == "" and plural == "namespaces":
            new["spec"] = dcopy(cur.get("spec") or {})
        elif rt.tkey == CRD_TKEY:
            self._validate_crd(rt, new)

    # ------------------------------------------------------------------ CRDs
    def _validate_crd(self, rt, obj):
        name = obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        causes = []
        if not spec.get("group"):
            causes.append(("spec.group", "FieldValueRequired", "Required value"))
        if not names.get("plural"):
            causes.append(("spec.names.plural", "FieldValueRequired", "Required value"))
        if not names.get("kind"):
            causes.append(("spec.names.kind", "FieldValueRequired", "Required value"))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(("spec.scope", "FieldValueNotSupported",
                           'Unsupported value: %r: supported values: "Cluster", "Namespaced"'
                           % (spec.get("scope"),)))
        versions = spec.get("versions") or []
        if not versions:
            causes.append(("spec.versions", "FieldValueRequired", "Required value"))
        elif sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(("spec.versions", "FieldValueInvalid",
                           "Invalid value: must have exactly one version marked as storage version"))
        if not causes and name != "%s.%s" % (names["plural"], spec["group"]):
            causes.append(("metadata.name", "FieldValueInvalid",
                           'Invalid value: "%s": must be spec.names.plural+"."+spec.group' % name))
        if causes:
            raise invalid(rt, name, causes)

    def _crd_status(self, crd, old):
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        names.setdefault("singular", (names.get("kind") or "").lower())
        names.setdefault("listKind", (names.get("kind") or "") + "List")
        t = crd["metadata"].get("creationTimestamp") or ts()
        stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
        for v in spec.get("versions") or []:
            if v.get("storage") and v.get("name") not in stored:
                stored.append(v.get("name"))
        return {
            "acceptedNames": names,
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": t},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": t},
            ],
            "storedVersions": stored,
        }

    def _sync_crd(self, crd):
        name = crd["metadata"]["name"]
        for gvr in self.crd_gvrs.pop(name, []):
            self._unregister(gvr)
        gvrs = []
        for rt in registry.crd_types(crd):
            existing = self.types.get(rt.gvr)
            if existing is not None and not existing.custom:
                continue
            self._register(rt)
            gvrs.append(rt.gvr)
        self.crd_gvrs[name] = gvrs

    def _drop_crd(self, crd):
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        tkey = (spec.get("group"), (spec.get("names") or {}).get("plural"))
        rt = self.by_tkey.get(tkey)
        if rt is not None and rt.custom:
            for obj in sorted(self.objects.get(tkey, {}).values(),
                              key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])):
                self._remove(rt, obj, "Orphan")
        self.objects.pop(tkey, None)
        for w in list(self.watchers):
            if w.tkey == tkey:
                w.close()
                self.watchers.discard(w)
        for gvr in self.crd_gvrs.pop(name, []):
            self._unregister(gvr)

    # ---------------------------------------------------------------- reads
    def get(self, rt, ns, name):
        with self.lock:
            return self._versioned(rt, self._get_or_404(rt, ns, name))

    def list(self, rt, ns=None, label_selector=None, field_selector=None, limit=None, cont=None):
        if rt.view_of:
            field_selector = events.field_selector_to_core(field_selector)
        try:
            lreqs = parse_label_selector(label_selector)
            freqs = check_field_labels(parse_field_selector(field_selector), "" if rt.view_of else rt.group,
                                       rt.kind)
        except SelectorError as e:
            raise bad_request(str(e))
        with self.lock:
            bucket = self.objects.get(rt.tkey, {})
            if ns and rt.namespaced:
                pairs = [(k, o) for k, o in bucket.items() if k[0] == ns]
            else:
                pairs = list(bucket.items())
            rv = self.rv
        pairs.sort(key=lambda p: p[0])
        start = None
        if cont:
            try:
                start = tuple(json.loads(base64.urlsafe_b64decode(cont.encode()).decode())["k"])
            except Exception:
                raise bad_request("invalid continue token")
        items = []
        for k, o in pairs:
            if start is not None and k <= start:
                continue
            md = o["metadata"]
            if lreqs and not label_match(lreqs, md.get("labels")):
                continue
            if freqs and not field_match(freqs, o):
                continue
            items.append((k, o))
        meta = {"resourceVersion": str(rv)}
        if limit and limit > 0 and len(items) > limit:
            last = items[limit - 1][0]
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"k": list(last), "rv": rv}).encode()).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return [self._versioned(rt, o) for _, o in items], meta

    # --------------------------------------------------------------- create
    def create(self, rt, ns, body, dry_run=False):
        self._check_body(rt, body)
        if rt.view_of:
            # events.k8s.io/v1: validated as that group's create is, stored as the core/v1 Event
            md = body.get("metadata") or {}
            try:
                body = events.with_micro_times(body)
            except ValueError as exc:
                raise bad_request('Event in version "v1" cannot be handled as a Event: %s' % exc)
            problems = events.create_problems(body, ns or md.get("namespace"))
            if problems:
                raise invalid(rt, md.get("name") or md.get("generateName") or "", problems)
            core = events.to_core(dict(body, apiVersion=None, kind=None))
            core = dict((k, v) for k, v in core.items() if k not in ("apiVersion", "kind"))
            return self._versioned(rt, self.create(self.types[rt.view_of], ns, core, dry_run))
        obj = dcopy(body)
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        md = obj.get("metadata")
        if not isinstance(md, dict):
            md = obj["metadata"] = {}
        with self.lock:
            if rt.namespaced:
                if md.get("namespace") and ns and md["namespace"] != ns:
                    raise bad_request("the namespace of the provided object does not match "
                                      "the namespace sent on the request")
                ns = ns or md.get("namespace")
                if not ns:
                    raise bad_request("a namespace is required for namespaced resources")
                md["namespace"] = ns
                nsobj = self._get(NS_TKEY, "", ns)
                nsrt = self.by_tkey[NS_TKEY]
                if nsobj is None:
                    raise not_found(nsrt, ns)
                if nsobj["metadata"].get("deletionTimestamp"):
                    raise ApiError(403, "Forbidden",
                                   '%s "%s" is forbidden: unable to create new content in '
                                   'namespace %s because it is being terminated'
                                   % (_res_name(rt), md.get("name") or "", ns),
                                   {"name": md.get("name") or "", "group": rt.group,
                                    "kind": rt.plural,
                                    "causes": [{"reason": "NamespaceTerminating",
                                                "message": "namespace %s is being terminated" % ns,
                                                "field": "metadata.namespace"}]})
            else:
                md.pop("namespace", None)
                ns = ""
            name = md.get("name")
            if not name:
                gen = md.get("generateName")
                if not gen:
                    raise invalid(rt, "", [("metadata.name", "FieldValueRequired",
                                            "Required value: name or generateName is required")])
                while True:
                    name = gen + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789")
                                         for _ in range(5))
                    if self._get(rt.tkey, ns, name) is None:
                        break
                md["name"] = name
            self._validate_name(rt, name)
            if self._get(rt.tkey, ns, name) is not None:
                raise ApiError(409, "AlreadyExists",
                               '%s "%s" already exists' % (_res_name(rt), name),
                               {"name": name, "group": rt.group, "kind": rt.plural})
            for f in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "selfLink", "generation", "managedFields"):
                md.pop(f, None)
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = ts()
            if rt.generation:
                md["generation"] = 1
            self._defaults(rt, obj)
            self._prepare_create(rt, obj)
            if dry_run:
                return obj
            self._commit(rt, obj, None, "ADDED")
            if rt.tkey == CRD_TKEY:
                self._sync_crd(obj)
            return obj

    # --------------------------------------------------------------- update
    def update(self, rt, ns, name, body, sub=None, dry_run=False, _from_patch=False):
        self._no_view_writes(rt)
        self._check_body(rt, body)
        with self.lock:
            cur = self._get_or_404(rt, ns, name)
            new = dcopy(body)
            md = new.get("metadata")
            if not isinstance(md, dict):
                md = new["metadata"] = {}
            if md.get("name") not in (None, "", name):
                raise bad_request("the name of the object (%s) does not match the name on "
                                  "the URL (%s)" % (md.get("name"), name))
            if rt.namespaced and md.get("namespace") not in (None, "", ns):
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            rv = md.get("resourceVersion")
            if rv:
                if str(rv) != cur["metadata"]["resourceVersion"]:
                    raise conflict(rt, name)
            elif rt.custom and not _from_patch:
                raise invalid(rt, name, [("metadata.resourceVersion", "FieldValueInvalid",
                                          "Invalid value: 0x0: must be specified for an update")])
            return self._apply_update(rt, cur, new, sub, dry_run)

    _IMMUTABLE_MD = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "generation", "selfLink")

    @staticmethod
    def _comparable(obj):
        o = dict(obj)
        o["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items()
                         if k not in ("resourceVersion", "managedFields")}
        return o

    def _apply_update(self, rt, cur, new, sub, dry_run):
        name = cur["metadata"]["name"]
        new["apiVersion"] = rt.api_version
        new["kind"] = rt.kind
        if sub == "status":
            merged = dcopy(cur)
            merged["apiVersion"] = rt.api_version
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        elif rt.status:
            if "status" in cur:
                new["status"] = dcopy(cur["status"])
            else:
                new.pop("status", None)
        md = new["metadata"]
        cmd = cur["metadata"]
        for f in self._IMMUTABLE_MD:
            if f in cmd:
                md[f] = cmd[f]
            else:
                md.pop(f, None)
        md.pop("resourceVersion", None)
        md.pop("managedFields", None)
        if cmd.get("deletionTimestamp"):
            added = [f for f in (md.get("finalizers") or []) if f not in (cmd.get("finalizers") or [])]
            if added:
                raise invalid(rt, name, [("metadata.finalizers", "FieldValueForbidden",
                                          "Forbidden: no new finalizers can be added if the object "
                                          "is being deleted, found new finalizers %s"
                                          % json.dumps(added))])
        if sub != "status":
            self._defaults(rt, new, cur)
            self._validate_update(rt, cur, new)
            if rt.tkey == CRD_TKEY:
                new["status"] = self._crd_status(new, cur)
            if rt.generation:
                if rt.custom:
                    skip = ("metadata", "status") if rt.status else ("metadata",)
                    changed = {k: v for k, v in new.items() if k not in skip} != \
                        {k: v for k, v in cur.items() if k not in skip}
                else:
                    changed = new.get("spec") != cur.get("spec")
                if changed:
                    md["generation"] = int(cmd.get("generation") or 1) + 1
        if self._comparable(new) == self._comparable(cur):
            return self._versioned(rt, cur)
        if dry_run:
            md["resourceVersion"] = cmd.get("resourceVersion")
            return new
        self._commit(rt, new, cur, "MODIFIED")
        if md.get("deletionTimestamp") and not md.get("finalizers") \
                and not md.get("deletionGracePeriodSeconds"):
            return self._remove(rt, new, "Background")
        if rt.tkey == CRD_TKEY:
            self._sync_crd(new)
        return new

    # ---------------------------------------------------------------- patch
    PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                   "application/strategic-merge-patch+json", "application/apply-patch+yaml")

    @staticmethod
    def _no_view_writes(rt):
        if rt.view_of:   # stricter than the API server (kubeemu.events)
            raise ApiError(405, "MethodNotAllowed", "kubeemu: %s/%s is served for create, get, list, watch and "
                           "delete only" % (rt.api_version, rt.plural))

    def patch(self, rt, ns, name, raw, content_type, sub=None, dry_run=False,
              field_manager=None, force=False):
        """Returns (object, created)."""
        self._no_view_writes(rt)
        ct = (content_type or "").split(";")[0].strip().lower()
        if ct not in self.PATCH_TYPES:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: " + ", ".join(self.PATCH_TYPES))
        if ct == "application/strategic-merge-patch+json" and rt.custom:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/json-patch+json, "
                           "application/merge-patch+json, application/apply-patch+yaml")
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            try:
                patch = json.loads(text)
            except ValueError:
                if ct != "application/apply-patch+yaml":
                    raise
                import yaml  # only needed for YAML apply bodies
                patch = yaml.safe_load(text)
        except Exception as e:
            raise bad_request("error decoding patch: %s" % e)
        is_apply = ct == "application/apply-patch+yaml"
        if is_apply and not field_manager:
            raise invalid(rt, name, [("fieldManager", "FieldValueRequired",
                                      "Required value: is required for apply patch")])
        if ct != "application/json-patch+json" and not isinstance(patch, dict):
            raise bad_request("patch body must be a JSON object for %s" % ct)
        with self.lock:
            key_ns = ns if rt.namespaced else ""
            cur = self._get(rt.tkey, key_ns, name)
            if cur is None:
                if is_apply and sub is None:
                    body = dcopy(patch)
                    body.setdefault("metadata", {})
                    if body["metadata"].get("name") not in (None, name):
                        raise bad_request("the name of the object does not match the URL")
                    body["metadata"]["name"] = name
                    return self.create(rt, ns, body, dry_run), True
                raise not_found(rt, name)
            base = self._scale_of(rt, cur) if sub == "scale" else self._versioned(rt, cur)
            try:
                if ct == "application/json-patch+json":
                    new = json_patch(base, patch)
                elif ct == "application/merge-patch+json" or (is_apply and rt.custom):
                    new = merge_patch(dcopy(base), patch)
                else:
                    new = strategic_merge(dcopy(base), patch, rt.kind)
            except PatchError as e:
                raise invalid(rt, name, [("", "FieldValueInvalid", str(e))])
            if not isinstance(new, dict):
                raise invalid(rt, name, [("", "FieldValueInvalid", "patch result is not an object")])
            new = dcopy(new)
            if sub == "scale":
                return self._update_scale(rt, cur, new, dry_run), False
            return self.update(rt, ns, name, new, sub, dry_run, _from_patch=True), False

    # ---------------------------------------------------------------- scale
    def _scale_of(self, rt, obj):
        md = obj["metadata"]
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        sel = ((spec.get("selector") or {}).get("matchLabels") or {})
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                "creationTimestamp") if k in md},
                "spec": {"replicas": spec.get("replicas", 0)},
                "status": {"replicas": status.get("replicas", 0),
                           "selector": ",".join("%s=%s" % kv for kv in sorted(sel.items()))}}

    def get_scale(self, rt, ns, name):
        with self.lock:
            return self._scale_of(rt, self._get_or_404(rt, ns, name))

    def update_scale(self, rt, ns, name, body, dry_run=False):
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        with self.lock:
            cur = self._get_or_404(rt, ns, name)
            return self._update_scale(rt, cur, body, dry_run)

    def _update_scale(self, rt, cur, scale, dry_run):
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        name = cur["metadata"]["name"]
        if rv and str(rv) != cur["metadata"]["resourceVersion"]:
            raise conflict(rt, name)
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise invalid(rt, name, [("spec.replicas", "FieldValueInvalid",
                                      "Invalid value: must be a non-negative integer")])
        new = dcopy(cur)
        new.setdefault("spec", {})["replicas"] = replicas
        res = self._apply_update(rt, cur, new, None, dry_run)
        return self._scale_of(rt, res)

    # --------------------------------------------------------------- delete
    @staticmethod
    def _policy(opts):
        pol = opts.get("propagationPolicy")
        if pol:
            if pol not in ("Orphan", "Background", "Foreground"):
                raise bad_request("invalid propagationPolicy %r" % pol)
            return pol
        orphan = opts.get("orphanDependents")
        if orphan is True:
            return "Orphan"
        return "Background"

    def delete(self, rt, ns, name, opts=None, dry_run=False):
        """Returns (object, removed_now)."""
        opts = opts or {}
        with self.lock:
            cur = self._get_or_404(rt, ns, name)
            md = cur["metadata"]
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != md.get("uid"):
                raise conflict(rt, name, "Precondition failed: UID in precondition: %s, UID in "
                                         "object meta: %s" % (pre["uid"], md.get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion"):
                raise conflict(rt, name, "Precondition failed: ResourceVersion in precondition: "
                                         "%s, ResourceVersion in object meta: %s"
                               % (pre["resourceVersion"], md.get("resourceVersion")))
            policy = self._policy(opts)
            if rt.tkey == NS_TKEY:
                return self._delete_namespace(rt, cur, dry_run), False
            grace = opts.get("gracePeriodSeconds")
            if rt.tkey == ("", "pods"):
                spec = cur.get("spec") or {}
                if grace is None:
                    grace = spec.get("terminationGracePeriodSeconds", 30)
                phase = (cur.get("status") or {}).get("phase")
                if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                    grace = 0
            else:
                grace = 0
            try:
                grace = max(0, int(grace or 0))
            except (TypeError, ValueError):
                raise bad_request("invalid gracePeriodSeconds")
            finalizers = md.get("finalizers") or []
            if dry_run:
                return self._versioned(rt, cur), False
            if policy == "Orphan":
                self._orphan(md["uid"])
            elif policy == "Foreground" and not finalizers and grace == 0:
                self._cascade(md["uid"], set())
            if finalizers or grace > 0:
                if md.get("deletionTimestamp"):
                    cur_grace = md.get("deletionGracePeriodSeconds") or 0
                    if grace >= cur_grace:
                        return self._versioned(rt, cur), False
                    if grace == 0 and not finalizers:
                        return self._remove(rt, cur, policy), True
                new = dcopy(cur)
                nmd = new["metadata"]
                if not nmd.get("deletionTimestamp") or grace < (nmd.get("deletionGracePeriodSeconds") or 0):
                    nmd["deletionTimestamp"] = ts(now_dt() + timedelta(seconds=grace))
                nmd["deletionGracePeriodSeconds"] = grace
                if rt.generation and "deletionTimestamp" not in md:
                    nmd["generation"] = int(nmd.get("generation") or 1) + 1
                self._commit(rt, new, cur, "MODIFIED")
                return self._versioned(rt, new), False
            return self._remove(rt, cur, policy), True

    def delete_collection(self, rt, ns, label_selector=None, field_selector=None, opts=None,
                          dry_run=False):
        items, _ = self.list(rt, ns, label_selector, field_selector)
        out = []
        with self.lock:
            for o in items:
                md = o["metadata"]
                try:
                    obj, _ = self.delete(rt, md.get("namespace"), md["name"], opts, dry_run)
                    out.append(obj)
                except ApiError as e:
                    if e.code != 404:
                        raise
            meta = {"resourceVersion": str(self.rv)}
        return out, meta

    def _remove(self, rt, obj, policy="Background"):
        """Really remove obj (emits DELETED) and run cascading hooks."""
        key = self._key(rt, obj)
        cur = self.objects.get(rt.tkey, {}).get(key)
        if cur is None:
            return obj
        self.rv += 1
        final = dict(cur)
        final["metadata"] = dict(cur["metadata"], resourceVersion=str(self.rv))
        del self.objects[rt.tkey][key]
        ref = (rt.tkey, key[0], key[1])
        uid = cur["metadata"].get("uid")
        self.uid_index.pop(uid, None)
        for u in self._owner_uids(cur):
            s = self.owner_index.get(u)
            if s is not None:
                s.discard(ref)
                if not s:
                    del self.owner_index[u]
        self.dirty = True
        self._emit("DELETED", rt.tkey, final, cur)
        if policy == "Orphan":
            self._orphan(uid)
        else:
            self._cascade(uid, set())
        if rt.tkey == CRD_TKEY:
            self._drop_crd(cur)
        if rt.namespaced:
            self.ns_counts[key[0]] -= 1
            if self.ns_counts[key[0]] <= 0:
                self.ns_counts.pop(key[0], None)
                nsobj = self._get(NS_TKEY, "", key[0])
                if nsobj is not None and nsobj["metadata"].get("deletionTimestamp"):
                    self._remove(self.by_tkey[NS_TKEY], nsobj)
        return self._versioned(rt, final)

    def _cascade(self, owner_uid, seen):
        """Background garbage collection of dependents (synchronous)."""
        for tkey, ns, name in sorted(self.owner_index.get(owner_uid, ())):
            dep = self._get(tkey, ns, name)
            drt = self.by_tkey.get(tkey)
            if dep is None or drt is None or (tkey, ns, name) in seen:
                continue
            seen.add((tkey, ns, name))
            others = [u for u in self._owner_uids(dep) if u != owner_uid and u in self.uid_index]
            if others:
                new = dcopy(dep)
                new["metadata"]["ownerReferences"] = [
                    r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
                self._commit(drt, new, dep, "MODIFIED")
                continue
            try:
                self.delete(drt, ns, name, {"propagationPolicy": "Background"})
            except ApiError:
                pass

    def _orphan(self, owner_uid):
        for tkey, ns, name in sorted(self.owner_index.get(owner_uid, ())):
            dep = self._get(tkey, ns, name)
            drt = self.by_tkey.get(tkey)
            if dep is None or drt is None:
                continue
            new = dcopy(dep)
            new["metadata"]["ownerReferences"] = [
                r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            if not new["metadata"]["ownerReferences"]:
                del new["metadata"]["ownerReferences"]
            self._commit(drt, new, dep, "MODIFIED")

    def _delete_namespace(self, rt, cur, dry_run):
        name = cur["metadata"]["name"]
        if name in UNDELETABLE_NAMESPACES:
            raise ApiError(403, "Forbidden", 'namespaces "%s" is forbidden: this namespace may '
                                             'not be deleted' % name,
                           {"name": name, "kind": "namespaces"})
        if cur["metadata"].get("deletionTimestamp") or dry_run:
            return cur
        new = dcopy(cur)
        new["metadata"]["deletionTimestamp"] = ts()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        self._commit(rt, new, cur, "MODIFIED")
        # Namespace controller: delete all content (pods without grace period).
        for tkey in list(self.objects):
            crt = self.by_tkey.get(tkey)
            if crt is None or not crt.namespaced:
                continue
            for (ons, oname) in sorted(k for k in self.objects[tkey] if k[0] == name):
                try:
                    self.delete(crt, ons, oname, {"gracePeriodSeconds": 0})
                except ApiError:
                    pass
        if self.ns_counts.get(name, 0) <= 0:
            self._remove(rt, new)
        return new

    # ------------------------------------------------------------ subresources
    def evict(self, rt, ns, name, body):
        opts = (body or {}).get("deleteOptions") or {}
        self.delete(rt, ns, name, opts)

    def bind(self, rt, ns, name, body):
        target = (body or {}).get("target") or {}
        node = target.get("name")
        if not node:
            raise invalid(rt, name, [("target.name", "FieldValueRequired", "Required value")])
        with self.lock:
            cur = self._get_or_404(rt, ns, name)
            if (cur.get("spec") or {}).get("nodeName"):
                raise conflict(rt, name, "pod %s is already assigned to node %q"
                               % (name, cur["spec"]["nodeName"]))
            new = dcopy(cur)
            new.setdefault("spec", {})["nodeName"] = node
            self._commit(rt, new, cur, "MODIFIED")

    # ----------------------------------------------------------------- watch
    def watch(self, rt, ns=None, label_selector=None, field_selector=None, rv=None,
              send_initial=False):
        if rt.view_of:
            field_selector = events.field_selector_to_core(field_selector)
        try:
            lreqs = parse_label_selector(label_selector)
            freqs = check_field_labels(parse_field_selector(field_selector), "" if rt.view_of else rt.group,
                                       rt.kind)
        except SelectorError as e:
            raise bad_request(str(e))
        w = Watcher(rt, ns if rt.namespaced else None, lreqs, freqs)
        with self.lock:
            if rv in (None, "", "0") or send_initial:
                for k in sorted(self.objects.get(rt.tkey, {})):
                    o = self.objects[rt.tkey][k]
                    if w.match(o):
                        w.q.put(("ADDED", o))
                if send_initial:
                    w.q.put(("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version,
                                          "metadata": {"resourceVersion": str(self.rv),
                                                       "annotations": {
                                                           "k8s.io/initial-events-end": "true"}}}))
            else:
                try:
                    n = int(rv)
                except ValueError:
                    raise bad_request("invalid resourceVersion %r" % rv)
                if n < self.history_floor:
                    w.q.put(("ERROR", {
                        "kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "reason": "Expired", "code": 410,
                        "message": "too old resource version: %d (%d)" % (n, self.history_floor + 1)}))
                    w.q.put(None)
                    return w
                for ev in self.history:
                    if ev[0] > n and ev[2] == rt.tkey:
                        w.offer(ev)
            self.watchers.add(w)
        return w

    def unwatch(self, w):
        with self.lock:
            self.watchers.discard(w)
            w.closed = True

    # ------------------------------------------------------------ admin/seed
    def seed(self, obj):
        """Store an object as-is (status kept, no admission); upsert."""
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
            raise bad_request("seed objects need apiVersion and kind")
        rt = self.find_type(obj["apiVersion"], obj["kind"])
        if rt is None:
            raise bad_request("unknown type %s %s" % (obj["apiVersion"], obj["kind"]))
        with self.lock:
            obj = dcopy(obj)
            md = obj.setdefault("metadata", {})
            if not md.get("name"):
                raise bad_request("seed object needs metadata.name")
            if rt.namespaced:
                md.setdefault("namespace", "default")
                if self._get(NS_TKEY, "", md["namespace"]) is None:
                    self.create(self.by_tkey[NS_TKEY], None, {"metadata": {"name": md["namespace"]}})
            else:
                md.pop("namespace", None)
            cur = self._get(rt.tkey, md.get("namespace", ""), md["name"])
            md.pop("resourceVersion", None)
            if cur is not None:
                md["uid"] = cur["metadata"]["uid"]
                md.setdefault("creationTimestamp", cur["metadata"].get("creationTimestamp"))
            md.setdefault("uid", str(uuid.uuid4()))
            md.setdefault("creationTimestamp", ts())
            if rt.generation:
                md.setdefault("generation", 1)
            if rt.tkey == CRD_TKEY:
                obj["status"] = self._crd_status(obj, cur)
            self._commit(rt, obj, cur, "MODIFIED" if cur else "ADDED")
            if rt.tkey == CRD_TKEY:
                self._sync_crd(obj)
            return obj

    def dump(self):
        with self.lock:
            objs = []
            for tkey, bucket in self.objects.items():
                for k in sorted(bucket):
                    objs.append(bucket[k])
            self.dirty = False
            return {"resourceVersion": self.rv, "version": self.version, "objects": objs}

    def load(self, data):
        with self.lock:
            for w in list(self.watchers):
                w.close()
            self.watchers = set()
            saved_rv = int(data.get("resourceVersion") or 0)
            self.rv = max(self.rv, saved_rv)
            self._init_state()
            self.objects = collections.defaultdict(dict)
            self.uid_index.clear()
            self.owner_index.clear()
            self.ns_counts.clear()
            self.version = data.get("version") or self.version
            objs = data.get("objects") or []
            objs.sort(key=lambda o: 0 if o.get("kind") == "CustomResourceDefinition" else 1)
            for o in objs:
                rt = self.find_type(o.get("apiVersion", ""), o.get("kind", ""))
                if rt is None:
                    continue
                key = self._key(rt, o)
                self.objects[rt.tkey][key] = o
                self.uid_index[o["metadata"]["uid"]] = (rt.tkey, key[0], key[1])
                for u in self._owner_uids(o):
                    self.owner_index[u].add((rt.tkey, key[0], key[1]))
                if rt.namespaced:
                    self.ns_counts[key[0]] += 1
                if rt.tkey == CRD_TKEY:
                    self._sync_crd(o)
                self.rv = max(self.rv, int(o["metadata"].get("resourceVersion") or 0))
            self.history.clear()
            self.history_floor = self.rv
            self.dirty = False

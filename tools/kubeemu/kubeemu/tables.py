"""Server-side printing (meta.k8s.io Table) so `kubectl get` shows useful columns."""

import json
import re
from datetime import datetime, timezone

_ACCESS = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
           "ReadWriteOncePod": "RWOP"}


def age(stamp):
    if not stamp:
        return "<unknown>"
    try:
        t = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return "<unknown>"
    s = int((datetime.now(timezone.utc) - t).total_seconds())
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm%ds" % (m, s % 60)
    if m < 180:
        return "%dm" % m
    h = m // 60
    if h < 48:
        return "%dh" % h
    return "%dd" % (h // 24)


def _g(obj, *path, default=None):
    cur = obj
    for p in path:
        if isinstance(cur, dict):
            cur = cur.get(p)
        elif isinstance(cur, list) and isinstance(p, int) and 0 <= p < len(cur):
            cur = cur[p]
        else:
            return default
    return default if cur is None else cur


def _cond(obj, ctype):
    for c in _g(obj, "status", "conditions", default=[]) or []:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c.get("status")
    return None


def _pod_status(o):
    if _g(o, "metadata", "deletionTimestamp"):
        return "Terminating"
    for cs in _g(o, "status", "containerStatuses", default=[]) or []:
        waiting = _g(cs, "state", "waiting", "reason")
        if waiting:
            return waiting
    return _g(o, "status", "reason") or _g(o, "status", "phase", default="Unknown")


def _pod_ready(o):
    total = len(_g(o, "spec", "containers", default=[]) or [])
    ready = sum(1 for cs in _g(o, "status", "containerStatuses", default=[]) or [] if cs.get("ready"))
    return "%d/%d" % (ready, total)


def _node_status(o):
    r = _cond(o, "Ready")
    # kubectl prints NotReady for a Ready condition of False *or* Unknown (a dead kubelet).
    s = "Ready" if r == "True" else ("NotReady" if r else "Unknown")
    if _g(o, "spec", "unschedulable"):
        s += ",SchedulingDisabled"
    return s


def _roles(o):
    roles = sorted(k.split("/", 1)[1] for k in (_g(o, "metadata", "labels", default={}) or {})
                   if k.startswith("node-role.kubernetes.io/"))
    return ",".join(roles) or "<none>"


def _modes(o, path):
    return ",".join(_ACCESS.get(m, m) for m in _g(o, *path, default=[]) or [])


NAME = ("Name", "string", 0, lambda o: _g(o, "metadata", "name"))
AGE = ("Age", "string", 0, lambda o: age(_g(o, "metadata", "creationTimestamp")))

COLUMNS = {
    ("", "pods"): [NAME, ("Ready", "string", 0, _pod_ready),
                   ("Status", "string", 0, _pod_status),
                   ("Restarts", "integer", 0, lambda o: sum(
                       cs.get("restartCount", 0) for cs in _g(o, "status", "containerStatuses",
                                                               default=[]) or [])),
                   AGE,
                   ("IP", "string", 1, lambda o: _g(o, "status", "podIP", default="<none>")),
                   ("Node", "string", 1, lambda o: _g(o, "spec", "nodeName", default="<none>"))],
    ("", "nodes"): [NAME, ("Status", "string", 0, _node_status), ("Roles", "string", 0, _roles),
                    AGE, ("Version", "string", 0,
                          lambda o: _g(o, "status", "nodeInfo", "kubeletVersion", default=""))],
    ("", "namespaces"): [NAME, ("Status", "string", 0, lambda o: _g(o, "status", "phase", default="")),
                         AGE],
    ("", "persistentvolumeclaims"): [
        NAME, ("Status", "string", 0, lambda o: _g(o, "status", "phase", default="")),
        ("Volume", "string", 0, lambda o: _g(o, "spec", "volumeName", default="")),
        ("Capacity", "string", 0, lambda o: _g(o, "status", "capacity", "storage", default="")),
        ("Access Modes", "string", 0, lambda o: _modes(o, ("status", "accessModes"))),
        ("StorageClass", "string", 0, lambda o: _g(o, "spec", "storageClassName", default="<unset>")),
        AGE],
    ("", "persistentvolumes"): [
        NAME, ("Capacity", "string", 0, lambda o: _g(o, "spec", "capacity", "storage", default="")),
        ("Access Modes", "string", 0, lambda o: _modes(o, ("spec", "accessModes"))),
        ("Reclaim Policy", "string", 0,
         lambda o: _g(o, "spec", "persistentVolumeReclaimPolicy", default="")),
        ("Status", "string", 0, lambda o: _g(o, "status", "phase", default="")),
        ("Claim", "string", 0, lambda o: "%s/%s" % (_g(o, "spec", "claimRef", "namespace"),
                                                   _g(o, "spec", "claimRef", "name"))
         if _g(o, "spec", "claimRef") else ""),
        ("StorageClass", "string", 0, lambda o: _g(o, "spec", "storageClassName", default="")),
        AGE],
    ("storage.k8s.io", "volumeattachments"): [
        NAME, ("Attacher", "string", 0, lambda o: _g(o, "spec", "attacher", default="")),
        ("PV", "string", 0, lambda o: _g(o, "spec", "source", "persistentVolumeName", default="")),
        ("Node", "string", 0, lambda o: _g(o, "spec", "nodeName", default="")),
        ("Attached", "boolean", 0, lambda o: bool(_g(o, "status", "attached", default=False))),
        AGE],
    ("", "events"): [
        ("Last Seen", "string", 0, lambda o: age(_g(o, "lastTimestamp") or _g(o, "eventTime")
                                                 or _g(o, "metadata", "creationTimestamp"))),
        ("Type", "string", 0, lambda o: _g(o, "type", default="")),
        ("Reason", "string", 0, lambda o: _g(o, "reason", default="")),
        ("Object", "string", 0, lambda o: "%s/%s" % (
            (_g(o, "involvedObject", "kind", default="")).lower(),
            _g(o, "involvedObject", "name", default=""))),
        ("Message", "string", 0, lambda o: _g(o, "message", default="")),
        NAME],
    ("apps", "deployments"): [
        NAME, ("Ready", "string", 0, lambda o: "%d/%d" % (_g(o, "status", "readyReplicas", default=0),
                                                        _g(o, "spec", "replicas", default=0))),
        ("Up-to-date", "integer", 0, lambda o: _g(o, "status", "updatedReplicas", default=0)),
        ("Available", "integer", 0, lambda o: _g(o, "status", "availableReplicas", default=0)),
        AGE],
    ("coordination.k8s.io", "leases"): [
        NAME, ("Holder", "string", 0, lambda o: _g(o, "spec", "holderIdentity", default="")), AGE],
}

_TOKEN = re.compile(r"\.?([A-Za-z0-9_-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]")


def jsonpath(obj, expr):
    """Tiny JSONPath subset for additionalPrinterColumns."""
    expr = (expr or "").strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1]
    if expr.startswith("$"):
        expr = expr[1:]
    cur = obj
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            return None
        pos = m.end()
        if m.group(1) is not None:
            cur = cur.get(m.group(1)) if isinstance(cur, dict) else None
        elif m.group(2) is not None:
            i = int(m.group(2))
            cur = cur[i] if isinstance(cur, list) and i < len(cur) else None
        else:
            key, val = m.group(3), m.group(4)
            found = None
            for it in cur if isinstance(cur, list) else []:
                if isinstance(it, dict) and str(_g(it, *key.split("."))) == val:
                    found = it
                    break
            cur = found
        if cur is None:
            return None
    return cur


def _custom_columns(rt):
    cols = [NAME]
    has_age = False
    for c in rt.printer_columns:
        ctype = c.get("type", "string")
        path = c.get("jsonPath", "")
        if path == ".metadata.creationTimestamp":
            has_age = True

        def fn(o, path=path, ctype=ctype):
            v = jsonpath(o, path)
            if ctype == "date":
                return age(v) if v else "<unknown>"
            if isinstance(v, (dict, list)):
                return json.dumps(v)
            return "" if v is None else v
        cols.append((c.get("name", path), "string" if ctype == "date" else ctype,
                     c.get("priority", 0), fn))
    if not has_age:
        cols.append(AGE)
    return cols


def columns_for(rt):
    if rt.custom:
        return _custom_columns(rt)
    return COLUMNS.get(rt.tkey, [NAME, AGE])


def to_table(rt, objs, list_meta, api_version="meta.k8s.io/v1"):
    cols = columns_for(rt)
    rows = []
    for o in objs:
        cells = []
        for _n, _t, _p, fn in cols:
            try:
                cells.append(fn(o))
            except Exception:
                cells.append("")
        rows.append({"cells": cells, "object": {
            "kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": o.get("metadata", {})}})
    return {"kind": "Table", "apiVersion": api_version, "metadata": list_meta,
            "columnDefinitions": [{"name": n, "type": t, "format": "name" if n == "Name" else "",
                                   "description": n, "priority": p} for n, t, p, _ in cols],
            "rows": rows}

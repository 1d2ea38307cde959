"""Patch algorithms: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and an
approximation of Kubernetes strategic merge patch for the built-in kinds.

Strategic merge patch uses a hand-written table of list merge keys taken from
the Go struct tags of k8s.io/api (patchStrategy/patchMergeKey).  Lists that
have no merge strategy in Kubernetes (e.g. ``spec.taints`` on Nodes,
``spec.tolerations``, ``status.containerStatuses``, RBAC ``rules``) are
replaced wholesale, exactly like a real API server does.

Written from the RFCs and the API server, never shared with the collection, which applies merge
patches too: a test must not pass because both sides share a bug (docs/lab.md, "Independent of the
code under test").
"""

import copy


class PatchError(Exception):
    """Invalid patch document or failing RFC 6902 operation (-> 422)."""


def deepcopy(obj):
    return copy.deepcopy(obj)


# --------------------------------------------------------------------------
# RFC 7386
# --------------------------------------------------------------------------

# deliberately repeated: the collection's merge_patch_applied does the same; the server side stays its own
def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# --------------------------------------------------------------------------
# RFC 6902
# --------------------------------------------------------------------------

def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc, parts, path):
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchError("path %r not found" % path)
            cur = cur[p]
        elif isinstance(cur, list):
            try:
                i = int(p)
            except ValueError:
                raise PatchError("invalid array index %r in %r" % (p, path))
            if not 0 <= i < len(cur):
                raise PatchError("array index %r out of range in %r" % (p, path))
            cur = cur[i]
        else:
            raise PatchError("path %r not found" % path)
    return cur


def _add(doc, parts, value, path, replace=False):
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError("replace operation does not apply: doc is missing key %r" % path)
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
            return doc
        try:
            i = int(last)
        except ValueError:
            raise PatchError("invalid array index %r" % last)
        if replace:
            if not 0 <= i < len(parent):
                raise PatchError("replace index out of range %r" % path)
            parent[i] = value
        else:
            if not 0 <= i <= len(parent):
                raise PatchError("add index out of range %r" % path)
            parent.insert(i, value)
    else:
        raise PatchError("path %r not found" % path)
    return doc


def _remove(doc, parts, path):
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("remove operation does not apply: doc is missing path %r" % path)
        return parent.pop(last)
    if isinstance(parent, list):
        try:
            i = int(last)
        except ValueError:
            raise PatchError("invalid array index %r" % last)
        if not 0 <= i < len(parent):
            raise PatchError("remove index out of range %r" % path)
        return parent.pop(i)
    raise PatchError("path %r not found" % path)


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise PatchError("JSON patch must be a list of operations")
    doc = deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError("invalid operation %r" % (op,))
        name, path = op["op"], op["path"]
        parts = _pointer(path)
        if name in ("add", "replace", "test") and "value" not in op:
            raise PatchError("operation %r requires a value" % name)
        if name == "add":
            doc = _add(doc, parts, deepcopy(op["value"]), path)
        elif name == "remove":
            _remove(doc, parts, path)
        elif name == "replace":
            doc = _add(doc, parts, deepcopy(op["value"]), path, replace=True)
        elif name == "move":
            frm = _pointer(op.get("from", ""))
            val = _remove(doc, frm, op.get("from"))
            doc = _add(doc, parts, val, path)
        elif name == "copy":
            val = deepcopy(_resolve(doc, _pointer(op.get("from", "")), op.get("from")))
            doc = _add(doc, parts, val, path)
        elif name == "test":
            if _resolve(doc, parts, path) != op["value"]:
                raise PatchError("testing value %s failed" % path)
        else:
            raise PatchError("unknown operation %r" % name)
    return doc


# --------------------------------------------------------------------------
# Strategic merge patch
# --------------------------------------------------------------------------

PRIMITIVE_MERGE = object()

_CONTAINER_KEYS = {
    ("ports",): "containerPort",
    ("env",): "name",
    ("volumeMounts",): "mountPath",
    ("volumeDevices",): "devicePath",
}
_POD_SPEC_KEYS = {
    ("volumes",): "name",
    ("imagePullSecrets",): "name",
    ("hostAliases",): "ip",
    ("topologySpreadConstraints",): "topologyKey",
    ("resourceClaims",): "name",
    ("schedulingGates",): "name",
}
for _c in ("containers", "initContainers", "ephemeralContainers"):
    _POD_SPEC_KEYS[(_c,)] = "name"
    for _k, _v in _CONTAINER_KEYS.items():
        _POD_SPEC_KEYS[(_c,) + _k] = _v

_COND = {("status", "conditions"): "type"}
_KIND_KEYS = {
    "Pod": {**_COND, ("status", "podIPs"): "ip", ("status", "hostIPs"): "ip"},
    "Node": {**_COND, ("status", "addresses"): "type", ("spec", "podCIDRs"): PRIMITIVE_MERGE},
    "Namespace": dict(_COND),
    "PersistentVolumeClaim": dict(_COND),
    "Service": {**_COND, ("spec", "ports"): "port"},
    "Deployment": dict(_COND),
    "ReplicaSet": dict(_COND),
    "StatefulSet": dict(_COND),
    "DaemonSet": dict(_COND),
    "PodDisruptionBudget": dict(_COND),
    "Endpoints": {},
}
_TEMPLATE_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"}


def list_strategy(kind, path):
    """Merge key (str), PRIMITIVE_MERGE, or None (replace) for a list field."""
    if path and path[-1] == "finalizers" and path[-2:-1] == ("metadata",):
        return PRIMITIVE_MERGE
    if path and path[-1] == "ownerReferences" and path[-2:-1] == ("metadata",):
        return "uid"
    if kind == "Pod" and path[:1] == ("spec",):
        return _POD_SPEC_KEYS.get(path[1:])
    if kind in _TEMPLATE_KINDS and path[:3] == ("spec", "template", "spec"):
        return _POD_SPEC_KEYS.get(path[3:])
    return _KIND_KEYS.get(kind, {}).get(path)


_DELETE = object()


def _strip_directives(v):
    if isinstance(v, dict):
        return {k: _strip_directives(x) for k, x in v.items()
                if not (isinstance(k, str) and k.startswith("$"))}
    if isinstance(v, list):
        return [_strip_directives(x) for x in v
                if not (isinstance(x, dict) and x.get("$patch") == "replace" and len(x) == 1)]
    return deepcopy(v)


def _reorder(items, order, key):
    if not isinstance(items, list) or not isinstance(order, list):
        return items
    pos = {}
    for i, o in enumerate(order):
        k = o.get(key) if (key and isinstance(o, dict)) else o
        try:
            pos.setdefault(k, i)
        except TypeError:
            return items
    n = len(order)

    def sk(pair):
        idx, it = pair
        k = it.get(key) if (key and isinstance(it, dict)) else it
        try:
            return (pos.get(k, n), idx)
        except TypeError:
            return (n, idx)
    return [it for _, it in sorted(enumerate(items), key=sk)]


def _merge_list(orig, patch, key, kind, path):
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [_strip_directives(i) for i in patch
                if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    result = [deepcopy(i) for i in (orig if isinstance(orig, list) else [])]
    for item in patch:
        if not isinstance(item, dict):
            result.append(deepcopy(item))
            continue
        kval = item.get(key)
        idx = None
        for i, r in enumerate(result):
            if isinstance(r, dict) and key in item and r.get(key) == kval:
                idx = i
                break
        if item.get("$patch") == "delete":
            if idx is not None:
                del result[idx]
            continue
        if idx is None:
            result.append(strategic_merge({}, item, kind, path))
        else:
            result[idx] = strategic_merge(result[idx], item, kind, path)
    return result


def strategic_merge(orig, patch, kind, path=()):
    if not isinstance(patch, dict):
        return deepcopy(patch)
    if patch.get("$patch") == "replace":
        return _strip_directives(patch)
    if patch.get("$patch") == "delete":
        return _DELETE
    result = dict(orig) if isinstance(orig, dict) else {}
    retain = patch.get("$retainKeys")
    orders = {}
    for k, v in patch.items():
        if not isinstance(k, str) or not k.startswith("$"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v
        elif k.startswith("$deleteFromPrimitiveList/"):
            f = k.split("/", 1)[1]
            if isinstance(result.get(f), list) and isinstance(v, list):
                result[f] = [x for x in result[f] if x not in v]
    for k, v in patch.items():
        if isinstance(k, str) and k.startswith("$"):
            continue
        sub = path + (k,)
        if v is None:
            result.pop(k, None)
        elif isinstance(v, dict):
            r = strategic_merge(result.get(k), v, kind, sub)
            if r is _DELETE:
                result.pop(k, None)
            else:
                result[k] = r
        elif isinstance(v, list):
            strat = list_strategy(kind, sub)
            if strat is None:
                result[k] = _strip_directives(v)
            elif strat is PRIMITIVE_MERGE:
                cur = list(result.get(k) or [])
                for x in v:
                    if x not in cur:
                        cur.append(deepcopy(x))
                result[k] = cur
            else:
                result[k] = _merge_list(result.get(k), v, strat, kind, sub)
        else:
            result[k] = v
    for f, order in orders.items():
        if f in result:
            strat = list_strategy(kind, path + (f,))
            result[f] = _reorder(result[f], order,
                                 strat if isinstance(strat, str) else None)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result

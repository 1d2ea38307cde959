"""Label and field selectors (subset of k8s.io/apimachinery semantics)."""

import re

_KEY_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$")
_SET_RE = re.compile(r"^([^\s!=<>(),]+)\s+(in|notin)\s*\((.*)\)$")


class SelectorError(ValueError):
    pass


# deliberately repeated: label and field selectors split apart in Kubernetes too (parentheses group a
# label set's values; a backslash escapes a field value), as apimachinery's two parsers do
def _split_top(s):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key, raw):
    if not key or not _KEY_RE.match(key):
        raise SelectorError("unable to parse requirement: invalid label key %r in %r" % (key, raw))
    return key


def parse_label_selector(s):
    """Return a list of (key, op, values) requirements."""
    reqs = []
    if s is None:
        return reqs
    for part in _split_top(s):
        part = part.strip()
        if not part:
            continue
        m = _SET_RE.match(part)
        if m:
            vals = {v.strip() for v in m.group(3).split(",") if v.strip()}
            reqs.append((_check_key(m.group(1), part), m.group(2), vals))
            continue
        if part.startswith("!"):
            reqs.append((_check_key(part[1:].strip(), part), "!exists", None))
            continue
        for op in ("!=", "==", "=", ">", "<"):
            if op in part:
                k, v = part.split(op, 1)
                op = "=" if op == "==" else op
                v = v.strip()
                if op in (">", "<"):
                    try:
                        v = int(v)
                    except ValueError:
                        raise SelectorError("invalid integer value %r in %r" % (v, part))
                reqs.append((_check_key(k.strip(), part), op, v))
                break
        else:
            if re.search(r"\s", part) or "(" in part or ")" in part:
                raise SelectorError("unable to parse requirement: %r" % part)
            reqs.append((_check_key(part, part), "exists", None))
    return reqs


def label_match(reqs, labels):
    labels = labels or {}
    for key, op, val in reqs:
        has = key in labels
        cur = labels.get(key)
        if op == "=":
            ok = has and cur == val
        elif op == "!=":
            ok = (not has) or cur != val
        elif op == "in":
            ok = has and cur in val
        elif op == "notin":
            ok = (not has) or cur not in val
        elif op == "exists":
            ok = has
        elif op == "!exists":
            ok = not has
        elif op in (">", "<"):
            try:
                n = int(cur)
            except (TypeError, ValueError):
                return False
            ok = n > val if op == ">" else n < val
        else:
            ok = False
        if not ok:
            return False
    return True


def _split_escaped(s, sep):
    out, cur, esc = [], [], False
    for ch in s:
        if esc:
            cur.append("\\" + ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _unescape(s):
    return re.sub(r"\\(.)", r"\1", s)


def parse_field_selector(s):
    """Return a list of (path, op, value); op in '=', '!='."""
    reqs = []
    if not s:
        return reqs
    for part in _split_escaped(s, ","):
        if not part.strip():
            continue
        m = re.match(r"^([^=!]+?)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise SelectorError("invalid field selector: %r" % part)
        op = "!=" if m.group(2) == "!=" else "="
        reqs.append((m.group(1).strip(), op, _unescape(m.group(3).strip())))
    return reqs


def field_value(obj, path):
    cur = obj
    for p in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(p)
        else:
            return ""
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (dict, list)):
        return ""
    return str(cur)


def field_match(reqs, obj):
    for path, op, val in reqs:
        cur = field_value(obj, path)
        if op == "=" and cur != val:
            return False
        if op == "!=" and cur == val:
            return False
    return True


# The field labels the API server lets a list or watch select on, by (group, kind). Read from
# kubernetes pkg/apis/core/v1/conversion.go (AddFieldLabelConversionFunc for Pod, Node,
# ReplicationController; AddFieldLabelConversionsForEvent); every other kind, custom resources
# included, has only metadata.name and metadata.namespace (apimachinery
# DefaultMetaV1FieldSelectorConversion). Namespace's status.phase and Secret's type are not modelled:
# asked for, the emulator refuses them, stricter than a cluster. Any other label gets the API server's
# answer, a 400 "field label not supported".
DEFAULT_FIELD_LABELS = ("metadata.name", "metadata.namespace")
FIELD_LABELS = {
    ("", "Pod"): ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
                  "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                  "status.podIP", "status.podIPs", "status.nominatedNodeName"),
    ("", "Node"): ("metadata.name", "spec.unschedulable"),
    ("", "ReplicationController"): ("metadata.name", "metadata.namespace", "status.replicas"),
    ("", "Event"): ("metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
                    "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
                    "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent",
                    "source", "type"),
}
# Old v1 clients' name of spec.nodeName (the same conversion.go).
FIELD_LABEL_ALIASES = {("", "Pod"): {"spec.host": "spec.nodeName"}}


def check_field_labels(reqs, group, kind):
    """reqs (parse_field_selector) with the API server's aliases applied; SelectorError for a label the
    API server does not support for the kind."""
    allowed = FIELD_LABELS.get((group, kind), DEFAULT_FIELD_LABELS)
    aliases = FIELD_LABEL_ALIASES.get((group, kind), {})
    out = []
    for path, op, value in reqs:
        path = aliases.get(path, path)
        if path not in allowed:
            raise SelectorError("field label not supported: %s" % path)
        out.append((path, op, value))
    return out

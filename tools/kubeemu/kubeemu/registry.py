"""Resource type registry: built-in kinds and CRD-defined custom resources."""

import re

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


class RType:
    """One served resource (group/version/plural)."""

    # return_deleted: DELETE that removes the object at once answers with the object
    # (ReturnDeletedObject in the real registry: pods, PVs, PVCs, services, storage.k8s.io
    # kinds, custom resources); the other kinds answer with a Status "Success".
    def __init__(self, group, version, plural, kind, namespaced, short_names=(),
                 singular=None, status=False, scale=False, generation=False,
                 return_deleted=False, extra_subresources=(), categories=(),
                 custom=False, printer_columns=None, list_kind=None, view_of=None, verbs=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.short_names = list(short_names)
        self.singular = singular or kind.lower()
        self.status = status
        self.scale = scale
        self.generation = generation
        self.return_deleted = return_deleted
        self.extra_subresources = list(extra_subresources)
        self.categories = list(categories)
        self.custom = custom
        self.printer_columns = printer_columns or []
        self.list_kind = list_kind or (kind + "List")
        # another group's view of a stored type, (group, version, plural): events.k8s.io/v1 Events are
        # core/v1 Events, converted on the way in and out (kubeemu.events)
        self.view_of = view_of
        # the verbs served (discovery): every one, or create alone for the reviews that are never stored
        self.verbs = list(verbs or ALL_VERBS)

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def tkey(self):
        """Storage key: all versions of one group/plural share storage (a view shares its type's)."""
        if self.view_of:
            return (self.view_of[0], self.view_of[2])
        return (self.group, self.plural)

    @property
    def gvr(self):
        return (self.group, self.version, self.plural)

    def discovery(self):
        res = [{
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }]
        if self.short_names:
            res[0]["shortNames"] = list(self.short_names)
        if self.categories:
            res[0]["categories"] = list(self.categories)
        if self.status:
            res.append({"name": self.plural + "/status", "singularName": "",
                        "namespaced": self.namespaced, "kind": self.kind,
                        "verbs": ["get", "patch", "update"]})
        if self.scale:
            res.append({"name": self.plural + "/scale", "singularName": "",
                        "namespaced": self.namespaced, "group": "autoscaling",
                        "version": "v1", "kind": "Scale",
                        "verbs": ["get", "patch", "update"]})
        for sub in self.extra_subresources:
            if sub == "eviction":
                res.append({"name": self.plural + "/eviction", "singularName": "",
                            "namespaced": True, "group": "policy", "version": "v1",
                            "kind": "Eviction", "verbs": ["create"]})
            elif sub == "token":
                res.append({"name": self.plural + "/token", "singularName": "",
                            "namespaced": True, "group": "authentication.k8s.io", "version": "v1",
                            "kind": "TokenRequest", "verbs": ["create"]})
            elif sub == "binding":
                res.append({"name": self.plural + "/binding", "singularName": "",
                            "namespaced": True, "kind": "Binding", "verbs": ["create"]})
        return res

    def __repr__(self):
        return "<RType %s/%s %s>" % (self.group or "core", self.version, self.plural)


def _b(group, version, plural, kind, namespaced, short=(), **kw):
    return RType(group, version, plural, kind, namespaced, short, **kw)


def builtin_types():
    return [
        _b("", "v1", "namespaces", "Namespace", False, ["ns"], status=True),
        _b("", "v1", "nodes", "Node", False, ["no"], status=True),
        _b("", "v1", "pods", "Pod", True, ["po"], status=True, return_deleted=True,
           extra_subresources=["eviction", "binding"], categories=["all"]),
        _b("", "v1", "events", "Event", True, ["ev"]),
        _b("events.k8s.io", "v1", "events", "Event", True, ["ev"], view_of=("", "v1", "events")),
        _b("", "v1", "persistentvolumes", "PersistentVolume", False, ["pv"], status=True,
           return_deleted=True),
        _b("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"], status=True,
           return_deleted=True),
        _b("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
        _b("", "v1", "secrets", "Secret", True),
        _b("", "v1", "services", "Service", True, ["svc"], status=True, categories=["all"],
           return_deleted=True),
        _b("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"], return_deleted=True,
           extra_subresources=["token"]),
        _b("", "v1", "endpoints", "Endpoints", True, ["ep"], list_kind="EndpointsList"),
        _b("coordination.k8s.io", "v1", "leases", "Lease", True),
        _b("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ["sc"], return_deleted=True),
        _b("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, status=True,
           return_deleted=True),
        _b("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False, return_deleted=True),
        _b("storage.k8s.io", "v1", "csinodes", "CSINode", False, return_deleted=True),
        _b("apps", "v1", "deployments", "Deployment", True, ["deploy"], status=True, scale=True,
           generation=True, categories=["all"]),
        _b("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"], status=True, scale=True,
           generation=True, categories=["all"]),
        _b("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], status=True, scale=True,
           generation=True, categories=["all"]),
        _b("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"], status=True, generation=True,
           categories=["all"]),
        _b("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"],
           status=True, generation=True),
        _b("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
           False, ["crd", "crds"], status=True, generation=True),
        _b("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        _b("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        _b("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        _b("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        # answered for the asking identity and never stored (server.Handler._review)
        _b("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
           verbs=["create"]),
        _b("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
           verbs=["create"]),
    ]


_VER_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(v):
    """Sort key: kube-aware version ordering (GA > beta > alpha, higher first)."""
    m = _VER_RE.match(v)
    if not m:
        return (3, 0, 0, v)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, v)


def crd_types(crd):
    """RTypes served by a CRD object (dict)."""
    spec = crd.get("spec") or {}
    group = spec.get("group") or ""
    names = spec.get("names") or {}
    plural = names.get("plural")
    kind = names.get("kind")
    if not (group and plural and kind):
        return []
    namespaced = (spec.get("scope") or "Namespaced") == "Namespaced"
    out = []
    for ver in spec.get("versions") or []:
        if not ver.get("served", True):
            continue
        subs = ver.get("subresources") or {}
        out.append(RType(
            group, ver.get("name"), plural, kind, namespaced,
            short_names=names.get("shortNames") or [],
            singular=names.get("singular") or kind.lower(),
            status="status" in subs,
            scale=False,
            generation=True,
            return_deleted=True,
            categories=names.get("categories") or [],
            custom=True,
            printer_columns=ver.get("additionalPrinterColumns") or [],
            list_kind=names.get("listKind") or kind + "List",
        ))
    return out

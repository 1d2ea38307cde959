"""Who a request is, and whether RBAC lets it: kube-apiserver's authentication of bearer tokens, its
impersonation filter and its RBAC authorizer, as far as the lab's clients use them (issue 45).

Read from kubernetes/kubernetes:
* staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go: the verb of a request (GET of a
  name is get, of a collection list, or watch with watch=true or a /watch/ path; POST create, PUT update,
  PATCH patch, DELETE of a name delete, of a collection deletecollection) and its resource, subresource,
  name and namespace; a list or watch with the field selector metadata.name=<name> names that object.
* plugin/pkg/auth/authorizer/rbac/rbac.go (RuleAllows, the authorizing visitor: allowed by the first rule
  that matches, the reason naming the binding) and pkg/registry/rbac/validation/rule.go (VisitRulesFor:
  the ClusterRoleBindings first, then the RoleBindings of the request's namespace; a binding to a role
  that does not exist adds an error to the reason; appliesToUser: a ServiceAccount subject without a
  namespace takes the RoleBinding's).
* pkg/apis/rbac/v1/evaluation_helpers.go: VerbMatches, APIGroupMatches, ResourceMatches ("*",
  "resource/subresource", "*/subresource"), ResourceNameMatches (no names: any name; a create has no
  name, so a rule with names never allows it), NonResourceURLMatches (a trailing "*" is a prefix).
* plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: what every authenticated identity may do
  through the default bindings of system:authenticated (system:discovery, system:basic-user,
  system:public-info-viewer); they are built in here, not stored objects.
* staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage) and
  apimachinery's NewForbidden: the 403 message.
* staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go: Impersonate-User and
  Impersonate-Group need the "impersonate" verb on users, serviceaccounts (in their namespace) and groups.
* system:masters is allowed everything without RBAC (the privileged-groups authorizer that kube-apiserver
  puts before RBAC); the lab's admin token is in it.
"""

SYSTEM_MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"

# bootstrappolicy: the rules every authenticated identity holds through the default ClusterRoleBindings
BASIC_RULES = (
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["get"],
     "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/", "/openapi", "/openapi/*",
                         "/api", "/api/*", "/apis", "/apis/*"]},
)
BASIC_SOURCE = 'ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "%s"' % AUTHENTICATED
# cluster-admin's rules: what system:masters holds, as a SelfSubjectRulesReview lists it
ALL_RULES = ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
             {"verbs": ["*"], "nonResourceURLs": ["*"]})

RBAC_GROUP = "rbac.authorization.k8s.io"


class Identity(object):
    """An authenticated user: its name and groups (system:authenticated among them)."""

    def __init__(self, name, groups=()):
        self.name = name
        self.groups = list(groups)
        if AUTHENTICATED not in self.groups:
            self.groups.append(AUTHENTICATED)

    @property
    def privileged(self):
        return SYSTEM_MASTERS in self.groups

    def info(self):
        return {"username": self.name, "groups": list(self.groups)}


def service_account_identity(namespace, name, uid=None):
    """A ServiceAccount's user and groups, as its tokens authenticate (serviceaccount.UserInfo)."""
    identity = Identity(SERVICE_ACCOUNT_PREFIX + "%s:%s" % (namespace, name),
                        ["system:serviceaccounts", "system:serviceaccounts:%s" % namespace])
    identity.uid = uid
    return identity


def split_service_account(username):
    """(namespace, name) of a ServiceAccount's user name, or None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


class Attributes(object):
    """What is asked: a resource request (verb, API group, resource, subresource, name, namespace) or a
    non-resource one (verb, path)."""

    def __init__(self, verb, group="", resource="", subresource="", name="", namespace="", path=None):
        self.verb = verb
        self.group = group or ""
        self.resource = resource or ""
        self.subresource = subresource or ""
        self.name = name or ""
        self.namespace = namespace or ""
        self.path = path

    @property
    def resource_request(self):
        return self.path is None

    @classmethod
    def from_review(cls, spec):
        """The attributes a SubjectAccessReview's spec asks about."""
        spec = spec or {}
        non_resource = spec.get("nonResourceAttributes")
        if non_resource:
            return cls(non_resource.get("verb") or "", path=non_resource.get("path") or "")
        res = spec.get("resourceAttributes") or {}
        return cls(res.get("verb") or "", res.get("group"), res.get("resource"), res.get("subresource"),
                   res.get("name"), res.get("namespace"))


def request_verb(method, named, watch):
    """The verb of a resource request (requestinfo.go)."""
    if method == "GET":
        if watch:
            return "watch"
        return "get" if named else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def selected_name(verb, field_selector):
    """The name a list or watch asks for by the field selector metadata.name=<name> (requestinfo.go: such a
    request is authorized as one of that object, so a rule with resource names can allow it), or ""."""
    if verb not in ("list", "watch") or not field_selector:
        return ""
    for term in field_selector.split(","):
        field, op, value = term.partition("==") if "==" in term else term.partition("=")
        if op and field.strip() == "metadata.name" and not field.endswith("!"):
            value = value.strip()
            if value not in (".", "..") and "/" not in value and "%" not in value:
                return value
    return ""


def _matches(rule_values, value, wildcard="*"):
    return wildcard in rule_values or value in rule_values


def rule_allows(attrs, rule):
    """RuleAllows of rbac.go, on a rule as stored (a dict of the PolicyRule's fields)."""
    verbs = rule.get("verbs") or []
    if not _matches(verbs, attrs.verb):
        return False
    if not attrs.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == attrs.path or (url.endswith("*") and attrs.path.startswith(url.rstrip("*"))):
                return True
        return False
    if not _matches(rule.get("apiGroups") or [], attrs.group):
        return False
    combined = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
    resource_ok = False
    for resource in rule.get("resources") or []:
        if resource in ("*", combined) or (
                attrs.subresource and resource == "*/" + attrs.subresource):
            resource_ok = True
            break
    if not resource_ok:
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def _subject_applies(identity, subject, namespace):
    """appliesToUser of rule.go."""
    kind = subject.get("kind")
    if kind == "User":
        return identity.name == subject.get("name")
    if kind == "Group":
        return subject.get("name") in identity.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        wanted = "%s%s:%s" % (SERVICE_ACCOUNT_PREFIX, sa_namespace, subject.get("name"))
        return bool(sa_namespace) and identity.name == wanted
    return False


def _describe_subject(subject, binding_namespace):
    if subject.get("kind") == "ServiceAccount":
        return 'ServiceAccount "%s/%s"' % (subject.get("name"), subject.get("namespace") or binding_namespace)
    return '%s "%s"' % (subject.get("kind"), subject.get("name"))


def visit_rules(identity, namespace, bindings, roles, visit):
    """VisitRulesFor of rule.go. `bindings(namespace)` lists the ClusterRoleBindings (namespace None) or
    a namespace's RoleBindings; `roles(kind, namespace, name)` is a role's rules or None when it does not
    exist. visit(source, rule, error) returns False to stop. The built-in rules of system:authenticated
    come first (they are ClusterRoleBindings on a cluster too)."""
    for rule in BASIC_RULES:
        if not visit(BASIC_SOURCE, rule, None):
            return
    for binding_namespace in [None] + ([namespace] if namespace else []):
        for binding in bindings(binding_namespace):
            subjects = binding.get("subjects") or []
            subject = next((s for s in subjects if _subject_applies(identity, s, binding_namespace or "")), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            kind, name = ref.get("kind"), ref.get("name")
            if kind not in ("Role", "ClusterRole"):
                if not visit(None, None, 'unsupported role reference kind: "%s"' % kind):
                    return
                continue
            rules = roles(kind, binding_namespace if kind == "Role" else None, name)
            if rules is None:
                error = '%s.%s "%s" not found' % (kind.lower(), RBAC_GROUP, name)
                if not visit(None, None, error):
                    return
                continue
            md = binding.get("metadata") or {}
            if binding_namespace:
                source = 'RoleBinding "%s/%s" of %s "%s" to %s' % (
                    md.get("name"), binding_namespace, kind, name, _describe_subject(subject, binding_namespace))
            else:
                source = 'ClusterRoleBinding "%s" of %s "%s" to %s' % (
                    md.get("name"), kind, name, _describe_subject(subject, ""))
            for rule in rules:
                if not visit(source, rule, None):
                    return


def authorize(identity, attrs, bindings, roles):
    """(allowed, reason) as kube-apiserver's authorizers decide: system:masters without RBAC, then RBAC."""
    if identity.privileged:
        return True, ""
    outcome = {"allowed": False, "reason": "", "errors": []}

    def visit(source, rule, error):
        if rule is not None and rule_allows(attrs, rule):
            outcome["allowed"], outcome["reason"] = True, "RBAC: allowed by %s" % source
            return False
        if error:
            outcome["errors"].append(error)
        return True

    visit_rules(identity, attrs.namespace, bindings, roles, visit)
    if not outcome["allowed"] and outcome["errors"]:
        errors = outcome["errors"]
        outcome["reason"] = "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return outcome["allowed"], outcome["reason"]


def rules_for(identity, namespace, bindings, roles):
    """(resource rules, non-resource rules, errors) of a SelfSubjectRulesReview in `namespace`."""
    if identity.privileged:
        return [dict(ALL_RULES[0])], [dict(ALL_RULES[1])], []
    resource_rules, non_resource_rules, errors = [], [], []

    def visit(_source, rule, error):
        if rule is not None:
            if rule.get("resources"):
                resource_rules.append({k: list(rule.get(k) or []) for k in
                                       ("verbs", "apiGroups", "resources", "resourceNames")})
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                           "nonResourceURLs": list(rule["nonResourceURLs"])})
        if error:
            errors.append(error)
        return True

    visit_rules(identity, namespace, bindings, roles, visit)
    return resource_rules, non_resource_rules, errors


def forbidden_message(identity, attrs, reason=""):
    """The message of kube-apiserver's 403 (forbiddenMessage, then NewForbidden's prefix)."""
    if not attrs.resource_request:
        message = 'forbidden: User "%s" cannot %s path "%s"' % (identity.name, attrs.verb, attrs.path)
        return message + (": " + reason if reason else "")
    resource = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
    if attrs.namespace:
        why = 'User "%s" cannot %s resource "%s" in API group "%s" in the namespace "%s"' % (
            identity.name, attrs.verb, resource, attrs.group, attrs.namespace)
    else:
        why = 'User "%s" cannot %s resource "%s" in API group "%s" at the cluster scope' % (
            identity.name, attrs.verb, resource, attrs.group)
    if reason:
        why += ": " + reason
    qualified = attrs.resource + ("." + attrs.group if attrs.group else "")
    if attrs.name:
        return '%s "%s" is forbidden: %s' % (qualified, attrs.name, why)
    return "%s is forbidden: %s" % (qualified, why)

"""ServiceAccount tokens, RBAC and impersonation as kube-apiserver answers them (issue 45: the lab enforces
what a least-privilege identity may do; kubeemu/rbac.py names the sources). Every test but the
emulator-only ones runs against a real cluster too (KUBECONFIG): the messages are the API server's."""

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kube_helpers import EMULATOR_ONLY, REAL_CLUSTER, status_body, unique

RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def account(core, ns, api_client):
    """(namespace, ServiceAccount name, its ApiClient, its user name): a ServiceAccount with a token and
    no binding of its own."""
    name = unique("vft-sa")
    core.create_namespaced_service_account(ns, {"metadata": {"name": name}})
    token = core.create_namespaced_service_account_token(
        name, ns, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))).status.token
    cfg = client.Configuration()
    cfg.host = api_client.configuration.host
    cfg.ssl_ca_cert = api_client.configuration.ssl_ca_cert
    cfg.verify_ssl = api_client.configuration.verify_ssl
    cfg.api_key = {"authorization": "Bearer " + token}
    sa_client = client.ApiClient(cfg)
    yield ns, name, sa_client, "system:serviceaccount:%s:%s" % (ns, name)
    sa_client.close()


@pytest.fixture
def rbac_api(api_client):
    return client.RbacAuthorizationV1Api(api_client)


@pytest.fixture
def cluster_objects(rbac_api):
    """Names of ClusterRoles and ClusterRoleBindings a test makes, deleted after it."""
    made = {"roles": [], "bindings": []}
    yield made
    for name in made["bindings"]:
        rbac_api.delete_cluster_role_binding(name)
    for name in made["roles"]:
        rbac_api.delete_cluster_role(name)


def refusal(call):
    with pytest.raises(ApiException) as info:
        call()
    assert info.value.status == 403, info.value.body
    body = status_body(info.value)
    assert body["reason"] == "Forbidden" and body["code"] == 403
    return body


def allowed(sa_client, **attributes):
    """The SelfSubjectAccessReview status of the account for those resource attributes."""
    review = client.AuthorizationV1Api(sa_client).create_self_subject_access_review(
        {"spec": {"resourceAttributes": attributes}})
    return review.status


def until_allowed(sa_client, **attributes):
    """Wait for a binding just made to reach the authorizer (a cluster's informers are not immediate;
    the emulator's are): the review's answer, allowed or after 30 s."""
    deadline = time.monotonic() + 30
    while True:
        status = allowed(sa_client, **attributes)
        if status.allowed or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def bind_role(rbac_api, ns, account_name, rules, subject_namespace=True):
    role = unique("vft-role")
    rbac_api.create_namespaced_role(ns, {"metadata": {"name": role}, "rules": rules})
    subject = {"kind": "ServiceAccount", "name": account_name}
    if subject_namespace:
        subject["namespace"] = ns
    binding = unique("vft-rb")
    rbac_api.create_namespaced_role_binding(ns, {
        "metadata": {"name": binding}, "subjects": [subject],
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": role}})
    return role, binding


def test_a_token_with_no_binding_is_refused_with_the_api_servers_message(account, core):
    ns, _name, sa_client, user = account
    sa_core = client.CoreV1Api(sa_client)
    body = refusal(lambda: sa_core.list_namespaced_pod(ns))
    assert body["message"] == ('pods is forbidden: User "%s" cannot list resource "pods" in API group "" '
                               'in the namespace "%s"' % (user, ns))
    assert body["details"] == {"kind": "pods"}
    body = refusal(lambda: sa_core.read_node("vft-any-node"))
    assert body["message"] == ('nodes "vft-any-node" is forbidden: User "%s" cannot get resource "nodes" in '
                               'API group "" at the cluster scope' % user)
    body = refusal(lambda: client.StorageV1Api(sa_client).list_volume_attachment())
    assert body["message"] == ('volumeattachments.storage.k8s.io is forbidden: User "%s" cannot list resource '
                               '"volumeattachments" in API group "storage.k8s.io" at the cluster scope' % user)
    # discovery and the reviews of its own rights are every authenticated identity's
    assert client.VersionApi(sa_client).get_code().major
    assert allowed(sa_client, verb="list", resource="pods", namespace=ns).allowed is False


def test_a_role_grants_its_verbs_in_its_namespace_only(account, core, rbac_api):
    ns, name, sa_client, user = account
    role, binding = bind_role(rbac_api, ns, name, [{"apiGroups": [""], "resources": ["pods"],
                                                    "verbs": ["get", "list"]}])
    status = until_allowed(sa_client, verb="list", resource="pods", namespace=ns)
    assert status.allowed is True
    assert status.reason == ('RBAC: allowed by RoleBinding "%s/%s" of Role "%s" to ServiceAccount "%s/%s"'
                             % (binding, ns, role, name, ns))
    sa_core = client.CoreV1Api(sa_client)
    assert sa_core.list_namespaced_pod(ns).items == []
    body = refusal(lambda: sa_core.list_namespaced_pod("default"))
    assert 'cannot list resource "pods" in API group "" in the namespace "default"' in body["message"]
    body = refusal(lambda: sa_core.list_pod_for_all_namespaces())
    assert body["message"].endswith('cannot list resource "pods" in API group "" at the cluster scope')
    # list is not watch, and get is not delete
    body = refusal(lambda: sa_core.list_namespaced_pod(ns, watch=True, timeout_seconds=1))
    assert 'cannot watch resource "pods"' in body["message"]
    body = refusal(lambda: sa_core.delete_namespaced_pod("vft-none", ns))
    assert body["message"].startswith('pods "vft-none" is forbidden: User "%s" cannot delete' % user)


def test_a_service_account_subject_without_namespace_is_the_bindings_namespace(account, rbac_api):
    ns, name, sa_client, _user = account
    bind_role(rbac_api, ns, name, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
              subject_namespace=False)
    assert until_allowed(sa_client, verb="list", resource="configmaps", namespace=ns).allowed is True


def test_resource_names_subresources_and_a_missing_role(account, core, rbac_api, cluster_objects):
    ns, name, sa_client, user = account
    node_role, missing = unique("vft-cr"), unique("vft-missing")
    rbac_api.create_cluster_role({"metadata": {"name": node_role}, "rules": [
        {"apiGroups": [""], "resources": ["nodes"], "resourceNames": ["vft-node-1"], "verbs": ["get", "create"]},
        {"apiGroups": [""], "resources": ["*/status"], "verbs": ["patch"]}]})
    cluster_objects["roles"].append(node_role)
    for role in (node_role, missing):
        binding = unique("vft-crb")
        rbac_api.create_cluster_role_binding({
            "metadata": {"name": binding},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role}})
        cluster_objects["bindings"].append(binding)
    assert until_allowed(sa_client, verb="get", resource="nodes", name="vft-node-1").allowed is True
    assert allowed(sa_client, verb="get", resource="nodes", name="vft-node-2").allowed is False
    # a create names no object: a rule with resource names never allows it
    assert allowed(sa_client, verb="create", resource="nodes").allowed is False
    assert allowed(sa_client, verb="patch", resource="pods", subresource="status", namespace=ns).allowed is True
    assert allowed(sa_client, verb="patch", resource="pods", namespace=ns).allowed is False
    # the binding to a role that does not exist is named in the refusal
    body = refusal(lambda: client.CoreV1Api(sa_client).read_node("vft-node-2"))
    assert body["message"] == (
        'nodes "vft-node-2" is forbidden: User "%s" cannot get resource "nodes" in API group "" at the cluster '
        'scope: RBAC: clusterrole.rbac.authorization.k8s.io "%s" not found' % (user, missing))


def test_a_list_selecting_one_name_is_allowed_by_a_rule_with_that_name(account, core, rbac_api,
                                                                       cluster_objects):
    ns, name, sa_client, user = account
    role, binding = unique("vft-cm"), unique("vft-cm-b")
    rbac_api.create_cluster_role({"metadata": {"name": role}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["vft-monitors"],
         "verbs": ["get", "list"]}]})
    cluster_objects["roles"].append(role)
    rbac_api.create_cluster_role_binding({
        "metadata": {"name": binding}, "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role}})
    cluster_objects["bindings"].append(binding)
    assert until_allowed(sa_client, verb="list", resource="configmaps", name="vft-monitors").allowed is True
    sa_core = client.CoreV1Api(sa_client)
    assert sa_core.list_config_map_for_all_namespaces(field_selector="metadata.name=vft-monitors").items == []
    body = refusal(lambda: sa_core.list_config_map_for_all_namespaces())
    assert body["message"] == ('configmaps is forbidden: User "%s" cannot list resource "configmaps" in API group '
                               '"" at the cluster scope' % user)
    refusal(lambda: sa_core.list_config_map_for_all_namespaces(field_selector="metadata.name=vft-other"))


def test_a_rules_review_lists_what_the_account_may_do_in_a_namespace(account, rbac_api):
    ns, name, sa_client, _user = account
    bind_role(rbac_api, ns, name, [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                    "verbs": ["get"]}])
    until_allowed(sa_client, verb="get", group="coordination.k8s.io", resource="leases", namespace=ns)
    review = client.AuthorizationV1Api(sa_client).create_self_subject_rules_review({"spec": {"namespace": ns}})
    rules = [(r.verbs, r.api_groups, r.resources) for r in review.status.resource_rules]
    assert (["get"], ["coordination.k8s.io"], ["leases"]) in rules
    assert (["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]) in rules
    assert not [r for r in rules if "pods" in (r[2] or [])]


def test_impersonation_needs_the_impersonate_verb_and_acts_as_the_account(account, api_client, kubeconfig_path):
    ns, _name, sa_client, user = account
    admin_as_account = client.ApiClient(api_client.configuration, header_name="Impersonate-User",
                                        header_value=user)
    try:
        body = refusal(lambda: client.CoreV1Api(admin_as_account).list_namespaced_pod(ns))
        assert body["message"].startswith('pods is forbidden: User "%s" cannot list' % user)
    finally:
        admin_as_account.close()
    account_as_admin = client.ApiClient(sa_client.configuration, header_name="Impersonate-User",
                                        header_value="kubernetes-admin")
    try:
        body = refusal(lambda: client.CoreV1Api(account_as_admin).list_namespace())
        assert body["message"] == ('users "kubernetes-admin" is forbidden: User "%s" cannot impersonate resource '
                                   '"users" in API group "" at the cluster scope' % user)
    finally:
        account_as_admin.close()


@pytest.mark.skipif(REAL_CLUSTER, reason=EMULATOR_ONLY)
def test_a_token_not_issued_or_of_a_deleted_account_is_unauthorized(account, core, kubeemu):
    ns, name, sa_client, _user = account
    core.delete_namespaced_service_account(name, ns)
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(sa_client).list_namespaced_pod(ns)
    assert info.value.status == 401
    assert json.loads(info.value.body) == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                           "status": "Failure", "message": "Unauthorized",
                                           "reason": "Unauthorized", "code": 401}
    sa_client.configuration.api_key = {"authorization": "Bearer kubeemu-sa.forged.0000"}
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(sa_client).list_namespaced_pod(ns)
    assert info.value.status == 401

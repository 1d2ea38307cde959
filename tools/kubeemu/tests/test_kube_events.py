"""events.k8s.io/v1 Events: stored with core/v1 Events, validated as the API server validates a create
through that group (kubeemu.events names the sources), and shown by `kubectl get events` and
`kubectl describe`."""

import shutil
import subprocess

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kube_helpers import unique
from kubeemu.client import ApiError as KubeError
from kubeemu.client import KubeClient

KUBECTL = shutil.which("kubectl")


def event_body(**fields):
    # a fraction other than .000000: the kubernetes client sends a datetime's isoformat(), which drops a zero one
    body = {"metadata": {"generateName": "volfence."}, "eventTime": "2026-11-27T15:00:00.123456Z",
            "type": "Normal", "reason": "NodeFenced", "action": "Fence", "reportingController": "volfence.csi",
            "reportingInstance": "control-host", "note": "fenced by the run of report r.json (I1)",
            "regarding": {"kind": "Node", "name": "node-x", "apiVersion": "v1"}}
    body.update(fields)
    return body


@pytest.fixture
def events(api_client):
    return client.EventsV1Api(api_client)


def test_an_events_v1_event_is_a_core_event_with_its_fields_renamed(events, core, ns):
    pod = unique("pod")
    made = events.create_namespaced_event(ns, event_body(
        reason="PodForceDeleted", regarding={"kind": "Pod", "name": pod, "namespace": ns, "apiVersion": "v1"},
        related={"kind": "Node", "name": "node-x", "apiVersion": "v1"}))
    assert made.api_version == "events.k8s.io/v1" and made.regarding.name == pod and made.note.startswith("fenced")
    [legacy] = core.list_namespaced_event(ns, field_selector="involvedObject.name=%s" % pod).items
    assert legacy.metadata.name == made.metadata.name and legacy.message == made.note
    assert legacy.involved_object.kind == "Pod" and legacy.reporting_component == "volfence.csi"
    assert legacy.reason == "PodForceDeleted" and legacy.action == "Fence" and legacy.related.name == "node-x"
    # and back: listed through events.k8s.io/v1, selected by its own field names
    [again] = events.list_namespaced_event(ns, field_selector="regarding.name=%s" % pod).items
    assert again.regarding.namespace == ns and again.reporting_controller == "volfence.csi"


def test_a_micro_time_is_read_and_stored_as_the_api_server_does(kubeconfig_path):
    """eventTime is a MicroTime: six fraction digits or a 400, stored in UTC (meta/v1/micro_time.go)."""
    raw = KubeClient.from_kubeconfig(kubeconfig_path)
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    with pytest.raises(KubeError) as refused:
        raw.create(path, event_body(eventTime="2026-11-27T15:00:00Z"))
    assert refused.value.status == 400 and "2006-01-02T15:04:05.000000Z07:00" in str(refused.value)
    made = raw.create(path, event_body(eventTime="2026-11-27T16:00:00.000001+01:00"))
    assert made["eventTime"] == "2026-11-27T15:00:00.000001Z"
    raw.delete(path + "/" + made["metadata"]["name"])
    with pytest.raises(KubeError) as refused:
        raw.create(path, dict((k, v) for k, v in event_body().items() if k != "eventTime"))
    assert refused.value.status == 422 and "eventTime: Required value" in str(refused.value)


@pytest.mark.parametrize("fields, field", [
    (dict(type="Info"), "type"),
    (dict(reportingController=""), "reportingController"),
    (dict(reportingController="volfence csi"), "reportingController"),
    (dict(reportingInstance=""), "reportingInstance"),
    (dict(action="x" * 129), "action"),
    (dict(reason=""), "reason"),
    (dict(note="x" * 1025), "message"),
    (dict(deprecatedCount=1), "count"),
])
def test_a_create_is_validated_as_the_api_server_does_for_events_v1(events, fields, field):
    with pytest.raises(ApiException) as refused:
        events.create_namespaced_event("default", event_body(**fields))
    assert refused.value.status == 422 and field in refused.value.body


def test_the_event_of_a_cluster_scoped_object_lives_in_default_or_kube_system(events, ns):
    with pytest.raises(ApiException) as refused:
        events.create_namespaced_event(ns, event_body())
    assert refused.value.status == 422 and "involvedObject.namespace" in refused.value.body
    for namespace in ("default", "kube-system"):
        made = events.create_namespaced_event(namespace, event_body())
        events.delete_namespaced_event(made.metadata.name, namespace)


def test_updates_through_events_v1_are_refused_by_the_emulator(events):
    made = events.create_namespaced_event("default", event_body())
    try:
        with pytest.raises(ApiException) as refused:
            events.patch_namespaced_event(made.metadata.name, "default", {"note": "changed"})
        assert refused.value.status == 405
    finally:
        events.delete_namespaced_event(made.metadata.name, "default")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
def test_kubectl_get_events_and_describe_show_it(events, core, ns, kubeconfig_path):
    pod = unique("pod")
    made = core.create_namespaced_pod(ns, {"metadata": {"name": pod}, "spec": {"containers": [
        {"name": "c", "image": "busybox"}]}})
    events.create_namespaced_event(ns, event_body(
        type="Warning", reason="FailoverRefused", action="Refuse", note="node-x is Ready: not fenced (I1)",
        regarding={"kind": "Pod", "name": pod, "namespace": ns, "uid": made.metadata.uid, "apiVersion": "v1"}))

    def kubectl(*args):
        proc = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig_path] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout
    listed = kubectl("get", "events", "-n", ns)
    assert "FailoverRefused" in listed and "pod/%s" % pod in listed and "node-x is Ready" in listed
    described = kubectl("describe", "pod", pod, "-n", ns)
    assert "FailoverRefused" in described and "node-x is Ready: not fenced (I1)" in described


def test_a_field_label_the_api_server_does_not_support_is_refused_as_it_refuses_it(api_client, core):
    """pkg/apis/core/v1/conversion.go: Events select on reportingComponent, Nodes on metadata.name and
    spec.unschedulable only, a VolumeAttachment on metadata.name/namespace; anything else is a 400."""
    core.list_event_for_all_namespaces(field_selector="reportingComponent=volfence.csi")
    core.list_pod_for_all_namespaces(field_selector="spec.host=node-a")   # old clients' spec.nodeName
    for call, selector in ((core.list_node, "metadata.namespace=default"), (core.list_node, "status.phase=Ready"),
                           (core.list_pod_for_all_namespaces, "spec.nodeName2=x"),
                           (client.StorageV1Api(api_client).list_volume_attachment, "spec.nodeName=node-a")):
        with pytest.raises(ApiException) as refused:
            call(field_selector=selector)
        assert refused.value.status == 400 and "field label not supported: %s" % selector.split("=")[0] \
            in refused.value.body

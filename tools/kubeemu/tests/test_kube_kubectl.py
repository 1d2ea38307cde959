"""kubectl against the API: get (server-side tables), describe, patch, apply, delete."""

import json
import shutil
import subprocess

import pytest

from kube_helpers import unique
from kube_crds import GROUP, VERSION, networkfence

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")


@pytest.fixture
def kubectl(kubeconfig_path):
    def run(*args, stdin=None, check=True):
        proc = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig_path] + list(args), input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        if check:
            assert proc.returncode == 0, "kubectl %s: %s%s" % (" ".join(args), proc.stdout, proc.stderr)
        return proc
    return run


@pytest.fixture
def node(core):
    name = unique("node")
    core.create_node({"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""}},
                      "status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                                 "reason": "NodeStatusUnknown"}],
                                 "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}],
                                 "nodeInfo": dict({k: "" for k in (
                                     "architecture", "bootID", "containerRuntimeVersion",
                                     "kernelVersion", "kubeProxyVersion", "machineID",
                                     "operatingSystem", "osImage", "systemUUID")},
                                     kubeletVersion="v1.30.2")}})
    yield name
    core.delete_node(name)


def _pod(core, ns, name, node):
    core.create_namespaced_pod(ns, {"metadata": {"name": name, "labels": {"app": "db"}},
                                    "spec": {"nodeName": node,
                                             "containers": [{"name": "c", "image": "postgres"}]}})


def test_get_prints_server_side_tables(kubectl, core, ns, node):
    _pod(core, ns, "db-0", node)
    core.patch_namespaced_pod_status("db-0", ns, {"status": {
        "phase": "Running", "podIP": "10.1.0.9",
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 2, "image": "postgres",
                               "imageID": "", "state": {"running": {}}}]}})
    out = kubectl("get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    assert out[0].split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    row = out[1].split()
    assert row[:4] == ["db-0", "1/1", "Running", "2"] and node in row and "10.1.0.9" in row
    out = kubectl("get", "node", node).stdout
    assert "NotReady" in out  # kubectl prints NotReady for a Ready condition of Unknown
    assert "worker" in out and "v1.30.2" in out
    out = kubectl("get", "pods", "-A", "-l", "app=db", "--field-selector", "spec.nodeName=" + node).stdout
    assert ns in out and "db-0" in out


def test_get_json_and_jsonpath(kubectl, core, ns, node):
    _pod(core, ns, "j-0", node)
    doc = json.loads(kubectl("get", "pod", "j-0", "-n", ns, "-o", "json").stdout)
    assert doc["kind"] == "Pod" and doc["spec"]["nodeName"] == node
    lst = json.loads(kubectl("get", "pods", "-n", ns, "-o", "json").stdout)
    assert lst["kind"] == "List" and lst["items"][0]["kind"] == "Pod"
    assert kubectl("get", "pod", "j-0", "-n", ns, "-o", "jsonpath={.status.phase}").stdout == "Pending"


def test_get_custom_resources_with_printer_columns(kubectl, custom, csiaddons_crds):
    name = unique("nf-k")
    custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    try:
        out = kubectl("get", "networkfences", name).stdout.splitlines()
        assert out[0].split() == ["NAME", "DRIVER", "CIDRS", "FENCESTATE", "AGE", "RESULT"]
        assert out[1].split()[:4] == [name, "rbd.csi.ceph.com", '["10.0.0.1/32"]', "Fenced"]
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)


def test_describe_pod_shows_events(kubectl, core, ns, node):
    _pod(core, ns, "app-0", node)
    pod = core.read_namespaced_pod("app-0", ns)
    core.create_namespaced_event(ns, {
        "metadata": {"name": "app-0.multiattach"},
        "involvedObject": {"kind": "Pod", "name": "app-0", "namespace": ns,
                           "uid": pod.metadata.uid, "apiVersion": "v1"},
        "reason": "FailedAttachVolume", "type": "Warning", "count": 1,
        "message": 'Multi-Attach error for volume "pvc-1" Volume is already exclusively attached '
                   "to one node and can't be attached to another",
        "source": {"component": "attachdetach-controller"},
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z"})
    out = kubectl("describe", "pod", "app-0", "-n", ns).stdout
    assert "Node:" in out and node in out
    assert "FailedAttachVolume" in out and "Multi-Attach error" in out
    out = kubectl("describe", "node", node).stdout
    assert "app-0" in out  # non-terminated pods on the node (field selector on spec.nodeName)


def test_patch_variants(kubectl, core, ns, node, custom, csiaddons_crds):
    kubectl("patch", "node", node, "-p",
            '{"spec":{"taints":[{"key":"node.kubernetes.io/out-of-service","value":"nodeshutdown",'
            '"effect":"NoExecute"}]}}')
    assert core.read_node(node).spec.taints[0].key == "node.kubernetes.io/out-of-service"
    kubectl("patch", "node", node, "--type", "json", "-p", '[{"op":"remove","path":"/spec/taints"}]')
    assert not core.read_node(node).spec.taints
    kubectl("patch", "node", node, "--subresource", "status", "-p",
            '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}')
    assert core.read_node(node).status.conditions[0].status == "True"
    name = unique("nf-p")
    custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", networkfence(name))
    try:
        bad = kubectl("patch", "networkfence", name, "-p", '{"spec":{"fenceState":"Unfenced"}}',
                      check=False)
        assert bad.returncode != 0  # strategic merge patch is not supported for CRs
        kubectl("patch", "networkfence", name, "--type", "merge", "-p", '{"spec":{"fenceState":"Unfenced"}}')
        got = custom.get_cluster_custom_object(GROUP, VERSION, "networkfences", name)
        assert got["spec"]["fenceState"] == "Unfenced"
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "networkfences", name)


def test_apply_create_and_update(kubectl, core, ns):
    doc = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "applied", "namespace": ns, "labels": {"a": "b"}},
           "data": {"one": "1", "two": "2"}}
    assert "created" in kubectl("apply", "-f", "-", stdin=json.dumps(doc)).stdout
    doc["data"] = {"two": "22"}
    assert "configured" in kubectl("apply", "-f", "-", stdin=json.dumps(doc)).stdout
    assert core.read_namespaced_config_map("applied", ns).data == {"two": "22"}
    out = kubectl("apply", "--server-side", "-f", "-", stdin=json.dumps(
        dict(doc, metadata={"name": "ssa", "namespace": ns}))).stdout
    assert "serverside-applied" in out


def test_delete_graceful_and_forced(kubectl, core, ns, node):
    _pod(core, ns, "victim", node)
    kubectl("delete", "pod", "victim", "-n", ns, "--wait=false")
    out = kubectl("get", "pod", "victim", "-n", ns).stdout
    assert "Terminating" in out
    kubectl("delete", "pod", "victim", "-n", ns, "--grace-period=0", "--force")
    gone = kubectl("get", "pod", "victim", "-n", ns, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    core.create_namespaced_config_map(ns, {"metadata": {"name": "waited"}})
    kubectl("delete", "configmap", "waited", "-n", ns, "--timeout=10s")  # waits via a watch


def test_get_watch_with_request_timeout(kubectl, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "watched"}})
    out = kubectl("get", "configmaps", "-n", ns, "-w", "--request-timeout=1s").stdout
    assert "watched" in out

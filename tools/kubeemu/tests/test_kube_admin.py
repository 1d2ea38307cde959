"""Emulator-only features: fault injection, request log, reset, seeding, state file, CLI."""

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import urllib3
from kubeemu.client import ApiError
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kube_helpers import REAL_CLUSTER, EMULATOR_ONLY, Admin, status_body

pytestmark = pytest.mark.skipif(REAL_CLUSTER, reason=EMULATOR_ONLY)


def _cm(name):
    return {"metadata": {"name": name}, "data": {"a": "1"}}


def test_fault_status_once(core, ns, emu):
    core.create_namespaced_config_map(ns, _cm("f"))
    f = emu.fault(method="PATCH", path_regex="/configmaps/f$", status=500, count=1)
    assert f["id"] and f["count"] == 1
    with pytest.raises(ApiException) as ei:
        core.patch_namespaced_config_map("f", ns, {"data": {"a": "2"}})
    assert ei.value.status == 500
    st = status_body(ei.value)
    assert st["kind"] == "Status" and st["reason"] == "InternalError" and st["code"] == 500
    assert core.read_namespaced_config_map("f", ns).data == {"a": "1"}  # nothing written
    core.patch_namespaced_config_map("f", ns, {"data": {"a": "2"}})  # fault used up
    assert emu.call("GET", "faults")["items"] == []


def test_fault_conflict_with_skip_and_unlimited(core, ns, emu):
    core.create_namespaced_config_map(ns, _cm("c"))
    emu.fault(method="PATCH", path_regex="/configmaps/c$", status=409, skip=1, count=0)
    core.patch_namespaced_config_map("c", ns, {"data": {"a": "2"}})  # skipped
    for _ in range(3):
        with pytest.raises(ApiException) as ei:
            core.patch_namespaced_config_map("c", ns, {"data": {"a": "3"}})
        assert ei.value.status == 409 and status_body(ei.value)["reason"] == "Conflict"
    [f] = emu.call("GET", "faults")["items"]
    assert f["hits"] == 3
    emu.call("DELETE", "faults/%d" % f["id"])
    core.patch_namespaced_config_map("c", ns, {"data": {"a": "3"}})


def test_fault_retry_after_header(core, kubeemu, ns, emu):
    emu.fault(method="GET", path_regex="/namespaces/%s/configmaps$" % ns, status=429, retry_after=1)
    req = urllib.request.Request(kubeemu.url + "/api/v1/namespaces/%s/configmaps" % ns)
    with pytest.raises(urllib.error.HTTPError) as ei:
        urllib.request.urlopen(req, timeout=5)
    assert ei.value.code == 429 and ei.value.headers["Retry-After"] == "1"
    # the kubernetes client (v37) honours Retry-After on 429 and retries by itself
    since = emu.last_seq()
    emu.fault(method="GET", path_regex="/namespaces/%s/configmaps$" % ns, status=429, retry_after=1)
    core.list_namespaced_config_map(ns)
    assert [e["status"] for e in emu.requests(since=since)] == [429, 200]


def test_fault_delay_times_out_client_but_write_lands(core, ns, emu):
    """A slow API server: the client gives up, the server still applies the write."""
    core.create_namespaced_config_map(ns, _cm("slow"))
    emu.fault(method="PATCH", path_regex="/configmaps/slow$", delay=1.0)
    t0 = time.time()
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        core.patch_namespaced_config_map("slow", ns, {"data": {"a": "late"}}, _request_timeout=0.3)
    assert time.time() - t0 < 0.9
    deadline = time.time() + 3
    while core.read_namespaced_config_map("slow", ns).data["a"] != "late":
        assert time.time() < deadline
        time.sleep(0.05)


def test_fault_delay_then_status(core, ns, emu):
    emu.fault(method="GET", path_regex="/configmaps/x$", delay=0.2, status=504)
    t0 = time.time()
    with pytest.raises(ApiException) as ei:
        core.read_namespaced_config_map("x", ns)
    assert ei.value.status == 504 and time.time() - t0 >= 0.2


def test_fault_drop_connection(core, ns, emu):
    since = emu.last_seq()
    emu.fault(method="GET", path_regex="/configmaps/dropped$", drop=True, count=0)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.read_namespaced_config_map("dropped", ns, _request_timeout=2)
    assert len(emu.requests(since=since)) >= 2  # urllib3 retried the dropped request
    emu.clear_faults()
    with pytest.raises(ApiException) as ei:  # served normally again
        core.read_namespaced_config_map("dropped", ns)
    assert ei.value.status == 404


def test_bad_fault_spec_is_400(emu):
    with pytest.raises(ApiError) as ei:
        emu.fault(method="GET")
    assert ei.value.status == 400
    with pytest.raises(ApiError):
        emu.fault(path_regex="(", status=500)


def test_request_log_counts_writes(core, custom, ns, emu, csiaddons_crds):
    since = emu.last_seq()
    core.create_namespaced_config_map(ns, _cm("logged"))
    core.patch_namespaced_config_map("logged", ns, {"data": {"a": "2"}})
    core.patch_namespaced_config_map("logged", ns, {"data": {"a": "3"}})
    core.read_namespaced_config_map("logged", ns)
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("missing", ns)
    patches = emu.requests(method="PATCH", path_regex="/configmaps/logged$", since=since)
    assert len(patches) == 2
    assert patches[0]["content_type"] == "application/strategic-merge-patch+json"
    assert patches[0]["status"] == 200 and patches[0]["path"].endswith("/configmaps/logged")
    everything = emu.requests(path_regex="/namespaces/%s/configmaps" % ns, since=since)
    assert [(e["method"], e["status"]) for e in everything] == [
        ("POST", 201), ("PATCH", 200), ("PATCH", 200), ("GET", 200), ("GET", 404)]
    lst = core.list_namespaced_config_map(ns, label_selector="a=b", limit=5)
    # only this list: a watch another test left open is logged when it ends, in any order
    [e] = emu.requests(method="GET", path_regex="/namespaces/%s/configmaps$" % ns, since=since)
    assert e["params"]["labelSelector"] == "a=b" and e["params"]["limit"] == "5"
    assert "labelSelector=a%3Db" in e["query"]
    assert lst.items == []
    emu.call("DELETE", "requests")
    assert emu.requests() == []


def test_seed_objects_keep_status(core, emu):
    [pod] = emu.seed({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "seeded", "namespace": "seed-ns"},
                      "spec": {"nodeName": "node-b", "containers": [{"name": "c", "image": "i"}]},
                      "status": {"phase": "Running", "podIP": "10.1.0.5"}})
    assert pod["metadata"]["uid"] and pod["metadata"]["resourceVersion"]
    got = core.read_namespaced_pod("seeded", "seed-ns")  # namespace created on the fly
    assert got.status.phase == "Running" and got.status.pod_ip == "10.1.0.5"
    core.delete_namespace("seed-ns")


@pytest.fixture
def private_emulator(tmp_path):
    """A second emulator of our own, for tests that reset or restart it."""
    from kubeemu.server import EmulatorServer
    servers = []

    def make(**kw):
        srv = EmulatorServer(port=0, **kw).start()
        servers.append(srv)
        cfg = client.Configuration()
        config.load_kube_config(config_file=srv.write_kubeconfig(str(tmp_path / ("kc-%d" % len(servers)))),
                                client_configuration=cfg)
        return srv, client.CoreV1Api(client.ApiClient(cfg))
    yield make
    for s in servers:
        s.stop()


def test_reset(private_emulator):
    srv, core = private_emulator()
    adm = Admin(srv.url)
    core.create_namespaced_config_map("default", _cm("r"))
    adm.fault(method="GET", path_regex="/nothing", status=500, count=0)
    adm.version("v1.23.5")
    out = adm.call("POST", "reset")
    assert out["reset"] is True
    assert adm.requests() == []
    assert core.list_namespaced_config_map("default").items == []
    assert {n.metadata.name for n in core.list_namespace().items} >= {"default", "kube-system"}
    assert adm.call("GET", "faults")["items"] == []
    assert adm.version()["gitVersion"] == "v1.30.2"


def test_state_file_survives_restart(private_emulator, tmp_path):
    state = str(tmp_path / "state.json")
    srv, core = private_emulator(state_file=state)
    cm = core.create_namespaced_config_map("default", _cm("persisted"))
    srv.stop()
    data = json.load(open(state))
    assert any(o["metadata"]["name"] == "persisted" for o in data["objects"])
    srv2, core2 = private_emulator(state_file=state)
    got = core2.read_namespaced_config_map("persisted", "default")
    assert got.metadata.uid == cm.metadata.uid
    assert got.metadata.resource_version == cm.metadata.resource_version
    new = core2.create_namespaced_config_map("default", _cm("after"))
    assert int(new.metadata.resource_version) > int(cm.metadata.resource_version)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_cli_contract(tmp_path):
    port = _free_port()
    kc = tmp_path / "kubeconfig"
    state = tmp_path / "state.json"
    proc = subprocess.Popen([sys.executable, "-m", "kubeemu", "--host", "127.0.0.1", "--port", str(port),
                             "--version", "v1.23.5", "--kubeconfig-out", str(kc),
                             "--state-file", str(state)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        text = kc.read_text()
        assert "server: http://127.0.0.1:%d" % port in text
        assert "current-context: volfence-lab" in text and "- name: volfence-lab" in text
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kc), client_configuration=cfg)
        api = client.ApiClient(cfg)
        assert client.VersionApi(api).get_code().git_version == "v1.23.5"
        client.CoreV1Api(api).create_namespaced_config_map("default", _cm("cli"))
        api.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert any(o["metadata"]["name"] == "cli" for o in json.load(open(state))["objects"])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_request_log_tail_is_its_last_entries(core, ns, emu):
    for name in ("t1", "t2", "t3"):
        core.create_namespaced_config_map(ns, _cm(name))
    whole = emu.requests()
    assert emu.requests(tail=2) == whole[-2:] and emu.last_seq() == whole[-1]["seq"]  # its own reads are not logged
    posts = emu.requests(method="POST", path_regex="/configmaps$")
    assert emu.requests(method="POST", path_regex="/configmaps$", tail=1) == posts[-1:]
    assert posts[-1]["path"].endswith("/configmaps")

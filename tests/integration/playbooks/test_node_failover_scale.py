"""node_failover at scale (issue 13): a rack of nodes in one run (failed_nodes), a node with 100
volumes, and the bulk release steps' partial failure (one pod delete fails: the report names it,
the rest are done, a re-run finishes the job). Built on the lab's node-volumes and rack scenarios."""

import json
import os
import urllib.request

import pytest

from labtools import REPO, blocklist_entries, run_playbook, undo_failover, wait_until

# Kubernetes' own eviction and force detach never come (clocks `never`): no test here passes by
# waiting for Kubernetes.
pytestmark = pytest.mark.usefixtures("kubernetes_never_releases")

PLAYBOOK = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")


@pytest.fixture
def volumes_scenario(clean_lab, kube):
    """Build node-volumes / rack on the lab (every node alive first); removed afterwards."""
    built = []

    def build(name, **options):
        for node in clean_lab.nodes:
            clean_lab.lab("revive-node", node)
        args = ["scenario", name]
        for key, value in options.items():
            args += ["--" + key, str(value)]
        state = json.loads(clean_lab.lab(*args))
        built.append(state)
        return state
    yield build
    for node in clean_lab.nodes:
        clean_lab.lab("revive-node", node)
        undo_failover(kube, node)  # the out-of-service taint and record a failover left (node_recover's job)
    for state in built:
        clean_lab.lab("clean-scenario", state["id"])


def running_claims(kube, state, failed):
    """The scenario's claims with a Running pod away from the failed nodes."""
    out = set()
    for pod in kube.list("pods", state["namespace"], label_selector=state["label_selector"]):
        if pod.get("status", {}).get("phase") == "Running" and pod["spec"].get("nodeName") not in failed \
                and not pod["metadata"].get("deletionTimestamp"):
            out.update(v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes", [])
                       if v.get("persistentVolumeClaim"))
    return out


def assert_left_by_kubernetes(kube, state, failed):
    """Kubernetes did nothing (clocks `never`): every old pod is still on its failed node, not evicted, and no
    claim has a pod running elsewhere."""
    assert state["stuck_pods"] == []
    for name in state["old_pods"]:
        pod = kube.get("pods", name, state["namespace"])
        assert pod["spec"]["nodeName"] in failed and not pod["metadata"].get("deletionTimestamp"), name
    assert running_claims(kube, state, failed) == set()


def emulator_admin(lab):
    """The lab's Kubernetes API emulator admin URL, None when the lab's API is a real cluster."""
    import yaml
    with open(os.path.join(lab.dir, "kubeconfig")) as handle:
        server = yaml.safe_load(handle)["clusters"][0]["cluster"]["server"].rstrip("/")
    try:
        urllib.request.urlopen(server + "/_emulator/faults", timeout=5).read()
    except OSError:
        return None
    return server + "/_emulator/faults"


def admin_call(url, method, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read()


def test_a_rack_fails_over_in_one_run(volumes_scenario, clean_lab, kube, lab_inventory, tmp_path):
    lab = clean_lab
    state = volumes_scenario("rack", nodes="node-b,node-c", volumes=3)
    failed = state["failed_nodes"]
    assert_left_by_kubernetes(kube, state, failed)
    report_path = tmp_path / "rack.json"
    run = run_playbook(lab_inventory, PLAYBOOK, {"failed_nodes": failed, "lease_grace_seconds": 3,
                                                 "report_path": str(report_path), "wait_timeout": 120})
    assert run.rc == 0, run.stdout[-3000:]
    assert wait_until(lambda: running_claims(kube, state, failed) == set(state["claims"]), 60)
    report = json.loads(report_path.read_text())
    assert report["failed_nodes"] == failed and report["failed_node"] is None
    assert sorted(report["pods_force_deleted"]) == sorted(state["old_pods"])
    assert sorted(r["claim"] for r in report["replacements_running"]) == sorted(
        "%s/%s" % (state["namespace"], c) for c in state["claims"])
    assert not [r for r in report["replacements_running"] if r["node"] in failed]
    assert report["out_of_service_taint_added"] == failed, json.dumps(report, indent=1)[:6000]
    # one blocklist call for both nodes, each node's marker holding only its own clients
    assert len(report["blocklist_actions"]) == len(report["fence_plan"]["fence"]) >= 2
    for node in failed:
        marker = json.loads(report["markers"][node])
        assert marker["blocklist"] and all(a.startswith(state["failed_node_ips"][node] + ":") for a in marker["blocklist"])
        annotation = kube.find("nodes", node)["metadata"]["annotations"]["volfence.csi/failover"]
        assert json.loads(annotation) == marker
    assert sorted(report["claims"]) == sorted("%s/%s" % (state["namespace"], c) for c in state["claims"])
    again = run_playbook(lab_inventory, PLAYBOOK, {"failed_nodes": failed, "lease_grace_seconds": 3,
                                                   "report_path": str(report_path)})
    assert again.rc == 0, again.stdout[-3000:]
    assert json.loads(report_path.read_text())["pods_force_deleted"] == []

    # node_recover of half the rack back: node-b, rebooted, is recovered; node-c, still down, keeps its
    # fences and record, named with the reason in the report, and the run fails
    fenced = report["fence_plan"]["fence"]
    by_node = dict((n, json.loads(report["markers"][n])["blocklist"]) for n in failed)
    recover = {"nodes": failed, "report_path": str(tmp_path / "recover.json")}
    lab.lab("revive-node", failed[0])
    assert wait_until(lambda: ready(kube, failed[0]), 60)
    half = run_playbook(lab_inventory, RECOVER, recover)
    assert half.rc != 0 and "refusing to unfence node-c: node-c: node node-c is not Ready" in half.stdout
    half_report = json.loads((tmp_path / "recover.json").read_text())
    assert half_report["recovered"] == ["node-b"] and list(half_report["held"]) == ["node-c"]
    assert sorted(half_report["blocklist_removed"]) == sorted(by_node["node-b"])
    assert sorted(k["entry"] for k in half_report["kept"] if k.get("node") == "node-c") == sorted(by_node["node-c"])
    assert all("not proven restarted" in k["reason"] for k in half_report["kept"] if k.get("node") == "node-c")
    assert all(a in blocklist_entries(lab) for a in by_node["node-c"])
    assert not [a for a in by_node["node-b"] if a in blocklist_entries(lab)]
    assert "volfence.csi/failover" not in (kube.find("nodes", "node-b")["metadata"].get("annotations") or {})
    assert "volfence.csi/failover" in kube.find("nodes", "node-c")["metadata"]["annotations"]
    lab.lab("revive-node", failed[1])
    assert wait_until(lambda: ready(kube, failed[1]), 60)
    run = run_playbook(lab_inventory, RECOVER, recover)
    assert run.rc == 0, run.stdout[-3000:]
    recovered = json.loads((tmp_path / "recover.json").read_text())
    assert sorted(recovered["blocklist_removed"]) == sorted(by_node["node-c"]) and recovered["nodes"] == failed
    assert recovered["recovered"] == failed and recovered["held"] == {}
    assert not [a for a in fenced if a in blocklist_entries(lab)]
    for node in failed:
        assert "volfence.csi/failover" not in (kube.find("nodes", node)["metadata"].get("annotations") or {})


def ready(kube, node):
    return [c for c in kube.find("nodes", node)["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True"


def test_one_live_node_in_the_list_refuses_the_run_and_changes_nothing(clean_lab, lab_inventory, tmp_path):
    lab = clean_lab
    for node in lab.nodes:
        lab.lab("revive-node", node)
    lab.lab("kill-node", "node-b")
    try:
        before = lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout
        # the list as text, as `-e failed_nodes=node-b,node-c` gives it
        run = run_playbook(lab_inventory, PLAYBOOK, {"failed_nodes": "node-b,node-c", "lease_grace_seconds": 3,
                                                     "report_path": str(tmp_path / "r.json")})
        assert run.rc != 0 and "refusing to fence node-c: it is Ready" in run.stdout
        assert lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout == before
        both = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-b", "failed_nodes": ["node-b"],
                                                      "report_path": str(tmp_path / "r.json")})
        assert both.rc != 0 and "failed_nodes: give failed_node or failed_nodes, not both" in both.stdout
    finally:
        lab.lab("revive-node", "node-b")


def test_a_node_with_100_volumes(volumes_scenario, kube, lab_inventory, tmp_path):
    state = volumes_scenario("node-volumes", node="node-b", volumes=100)
    assert_left_by_kubernetes(kube, state, ["node-b"])
    report_path = tmp_path / "100.json"
    run = run_playbook(lab_inventory, PLAYBOOK, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                 "report_path": str(report_path), "wait_timeout": 300})
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads(report_path.read_text())
    assert len(report["pods_force_deleted"]) == 100 and report["pods_failed"] == []
    # removed by the run, or already detached by the lab's attach-detach controller once the pods were gone
    assert not [va for va in kube.list("volumeattachments") if va["spec"]["nodeName"] == "node-b"
                and va["spec"]["source"].get("persistentVolumeName") in state["pvs"]]
    assert len(report["replacements_running"]) == 100
    assert wait_until(lambda: running_claims(kube, state, ["node-b"]) == set(state["claims"]), 60)


def test_one_pod_delete_fails_the_report_names_it_the_rest_are_done_a_rerun_finishes(
        volumes_scenario, clean_lab, kube, lab_inventory, tmp_path):
    admin = emulator_admin(clean_lab)
    if admin is None:
        pytest.skip("fault injection needs the lab's Kubernetes API emulator; the lab's API is a real cluster")
    state = volumes_scenario("node-volumes", node="node-b", volumes=4)
    assert_left_by_kubernetes(kube, state, ["node-b"])
    victim = state["old_pods"][1]
    admin_call(admin, "POST", {"method": "DELETE", "path_regex": "/pods/%s$" % victim, "status": 403,
                               "message": 'pods "%s" is forbidden: injected by the test' % victim, "count": 0})
    report_path = tmp_path / "partial.json"
    extra = {"failed_node": "node-b", "lease_grace_seconds": 3, "report_path": str(report_path), "wait_timeout": 120}
    try:
        run = run_playbook(lab_inventory, PLAYBOOK, extra)
    finally:
        admin_call(admin, "DELETE")
    assert run.rc != 0
    report = json.loads(report_path.read_text())
    assert [p["name"] for p in report["pods_failed"]] == [victim] and "403" in report["pods_failed"][0]["error"]
    assert sorted(report["pods_force_deleted"]) == sorted(p for p in state["old_pods"] if p != victim)
    assert any(victim in step for step in report["failed_steps"])
    left = kube.find("pods", victim, state["namespace"])  # not evicted by Kubernetes either: still node-b's
    assert left["spec"]["nodeName"] == "node-b" and not left["metadata"].get("deletionTimestamp")
    for pod in state["old_pods"]:
        if pod != victim:
            assert kube.find("pods", pod, state["namespace"]) is None
    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0, again.stdout[-3000:]
    report = json.loads(report_path.read_text())
    assert report["pods_force_deleted"] == [victim] and report["pods_failed"] == []
    assert report["failed_steps"] == []
    assert "%s/%s" % (state["namespace"], state["claims"][1]) in [r["claim"] for r in report["replacements_running"]]
    assert wait_until(lambda: running_claims(kube, state, ["node-b"]) == set(state["claims"]), 60)

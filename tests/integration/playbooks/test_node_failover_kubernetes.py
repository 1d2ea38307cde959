"""node_failover on a lab whose Kubernetes behaves as a real cluster's in the first minutes after a node is
lost: its eviction (300 s) and force detach (6 min) never come (clocks `never`), so the failover cannot pass
by waiting for Kubernetes. The node's pods are still there, not Terminating, when the failover starts."""

import json
import os

from labtools import REPO, declare_shut_down, run_playbook, running_elsewhere, node_fence
from volfence_lab import scenarios

PLAYBOOK = os.path.join(REPO, "playbooks", "node_failover.yml")
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def failover(lab_inventory, tmp_path, **extra):
    args = dict({"failed_node": "node-b", "lease_grace_seconds": 3, "report_path": str(tmp_path / "r.json"),
                 "wait_timeout": 60}, **extra)
    run = run_playbook(lab_inventory, PLAYBOOK, args)
    return run, json.loads((tmp_path / "r.json").read_text())


def taint_keys(kube, node):
    return [t["key"] for t in kube.get("nodes", node)["spec"].get("taints") or []]


def test_a_statefulset_pod_is_failed_over_without_waiting_for_kubernetes(kubernetes_never_releases, incident, kube,
                                                                         lab_inventory, tmp_path):
    lab = kubernetes_never_releases
    state = incident("stale-rbd-watcher-statefulset")
    old = kube.get("pods", state["old_pod"], "default")
    assert old["spec"]["nodeName"] == "node-b" and not old["metadata"].get("deletionTimestamp")  # never evicted

    run, report = failover(lab_inventory, tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert report["fence_plan"]["fence"] == node_fence(state)
    # every volume of node-b was made safe, so the taint was wanted (auto) and added: Kubernetes detaches at once
    assert report["out_of_service"]["taint"] is True and report["out_of_service"]["requested"] == "auto"
    assert report["out_of_service_taint_added"] == ["node-b"] and OUT_OF_SERVICE in taint_keys(kube, "node-b")
    # web-0 again, a new pod object of the same name, on another node (the uid precondition spared it)
    new = kube.get("pods", state["old_pod"], "default")
    assert new["metadata"]["uid"] != state["old_pod_uid"] and new["spec"]["nodeName"] != "node-b"
    assert new["status"]["phase"] == "Running"
    assert report["replacements_running"] == [{"claim": "default/" + state["pvc"], "node": new["spec"]["nodeName"],
                                               "pod": "default/" + state["old_pod"]}]
    assert [w["address"].split(":")[0] for w in lab.watchers(state["image"])] == [lab.nodes[new["spec"]["nodeName"]]]


def test_a_pod_not_yet_evicted_is_released_by_the_fence_also_without_the_taint(kubernetes_never_releases, incident,
                                                                               kube, lab_inventory, tmp_path):
    state = incident("stale-rbd-watcher")
    assert state["stuck_pod"] is None  # no eviction, so no replacement yet: the old pod is still node-b's
    assert kube.get("pods", state["old_pod"], "default")["metadata"].get("deletionTimestamp") is None

    run, report = failover(lab_inventory, tmp_path, out_of_service_taint=False)
    assert run.rc == 0, run.stdout[-3000:]
    assert report["out_of_service"]["taint"] is False and report["out_of_service_taint_added"] == []
    assert OUT_OF_SERVICE not in taint_keys(kube, "node-b")
    assert report["pods_force_deleted"] == [state["old_pod"]]
    assert report["volumeattachments_removed"] and report["failed_steps"] == []
    assert kube.find("pods", state["old_pod"], "default") is None
    assert len(running_elsewhere(kube, state["deployment"])) == 1


def test_after_an_administrators_taint_the_stuck_replacement_is_fenced_free(kubernetes_never_releases, incident, kube,
                                                                            lab_inventory, tmp_path):
    """Kubernetes got there first: an administrator's out-of-service taint made Kubernetes remove node-b's pod
    and VolumeAttachment; the replacement is stuck on node-b's live watcher. node_failover finds the image
    through the stuck pod, fences node-b's client only, and waits until the pod runs."""
    lab = kubernetes_never_releases
    state = incident("stale-rbd-watcher")
    declare_shut_down(kube, "node-b")
    stuck = wait_stuck(kube, state)
    assert kube.find("pods", state["old_pod"], "default") is None

    run, report = failover(lab_inventory, tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert report["volumes"] == [] and report["pods_force_deleted"] == []  # nothing of node-b left to release
    assert report["fence_plan"]["fence"] == node_fence(state)
    assert [(w["pod"], w["safe"]) for w in report["waiting"]] == [("default/" + stuck, True)]
    assert report["claims"] == ["default/" + state["pvc"]]
    assert kube.get("pods", stuck, "default")["status"]["phase"] == "Running"
    assert report["out_of_service_taint_added"] == []  # the administrator's taint stays theirs
    assert report["other_remediators"]["node-b"][0]["mark"].startswith("taint " + OUT_OF_SERVICE)


def test_a_failover_that_cannot_free_a_stuck_pod_fails_and_says_why(kubernetes_never_releases, incident, kube,
                                                                    lab_inventory, tmp_path):
    """The stuck replacement's image is also held from node-c, which is down but not failed over: node_failover
    fences node-b's client, cannot fence node-c's (I1), fails, and its report names the pod, the client and why."""
    lab = kubernetes_never_releases
    state = incident("stale-rbd-watcher")
    lab.hold("node-c", state["image"])
    lab.lab("kill-node", "node-c")
    declare_shut_down(kube, "node-b")
    stuck = wait_stuck(kube, state)

    run, report = failover(lab_inventory, tmp_path)
    assert run.rc != 0
    assert report["fence_plan"]["fence"] == node_fence(state)  # node-b's client only
    [line] = report["failed_steps"]
    assert line.startswith("pod default/%s waits on %s" % (stuck, state["image"])) and "NOT made safe" in line
    assert "node-c" in line and lab.nodes["node-c"] in line
    assert kube.get("pods", stuck, "default")["status"]["phase"] != "Running"


def wait_stuck(kube, state):
    """The name of the Deployment's replacement once ceph-csi says its image is still being used."""
    pod, _event = scenarios.wait_stuck(kube, state["deployment"], "is still being used", "the replacement to be stuck",
                                       90, away_from="node-b")
    return pod["metadata"]["name"]

"""Issue 18: the main playbooks run as AWX runs a job template (ansible-runner, a private data
directory, an AWX-style project and survey answers). The report travels with the job (the
playbook_on_stats event's artifact_data, the file in the job's project folder, the summary once in
the output), and a re-launch with the same answers after success is a no-op: rc 0, changed=0 on
every host."""

import json
import os

import pytest

from awxjob import launch, survey_answers
from labtools import assert_fuse_pod_replaced, blocklist_entries, wait_until, node_fence

# Template extra variables: fixed per job template, not asked at launch (docs/awx.md). Short
# waits keep the lab fast; a real template keeps the defaults.
FAST = {"wait_timeout": 60}


def succeeded(job):
    assert job.rc == 0 and job.status == "successful", "rc=%s status=%s\n%s" % (job.rc, job.status, job.tail())
    assert job.failed_hosts() == [], job.failed_hosts()


def assert_report_travels(job, key, summary_task):
    """The whole report is in the job's artifacts under `key`, it is the file the job wrote in its
    project folder, and the summary is printed once. Returns the report."""
    artifact = job.artifacts[key]
    assert artifact["truncated"] is False
    report = artifact["report"]
    # The file: under the job's project folder (the run's working directory), as the artifact says.
    path = artifact["report_path"]
    assert os.path.dirname(path) == os.path.realpath(job.project_dir) or os.path.dirname(path) == job.project_dir, path
    with open(path) as handle:
        written = json.load(handle)
    # The same report, but for its `generated` time: the playbooks' report is a block variable that
    # Ansible templates again for each task, so now() differs by the seconds between the two tasks.
    assert dict(written, generated=None) == dict(report, generated=None)
    # The summary: one debug event carries it, and each of its lines is printed once.
    printed = [res for res in job.task_results(summary_task).values()]
    assert [res.get("msg") for res in printed] == [artifact["summary"]], printed
    for line in [line for line in artifact["summary"] if line.strip()]:
        assert job.stdout.count(json.dumps(line)[1:-1]) == 1, "printed %d times: %s" % (
            job.stdout.count(json.dumps(line)[1:-1]), line)
    return report


def assert_no_op(job):
    succeeded(job)
    assert job.changed() == {}, "a re-run changed: %s" % job.changed_tasks()


def node_ready(kube, node):
    return [c for c in kube.get("nodes", node)["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True"


def out_of_service(kube, node):
    return [t for t in kube.get("nodes", node)["spec"].get("taints") or [] if t["key"] == "node.kubernetes.io/out-of-service"]


@pytest.fixture
def stale_rbd_watcher(clean_lab, kube, incident):
    yield clean_lab, incident("stale-rbd-watcher"), kube   # (incident removes the failover's NetworkFences)


def test_diagnose_failover_recover_as_awx_jobs_and_relaunches(stale_rbd_watcher, lab_inventory, tmp_path):
    """The workflow docs/awx.md describes: diagnose, then node_failover of what it names, then
    node_recover once the node is back; each job re-launched with the same answers."""
    lab, state, kube = stale_rbd_watcher

    # diagnose: its artifacts name the next job and its answers.
    answers = survey_answers("diagnose", stuck_threshold_seconds=1)
    diagnose = launch(str(tmp_path / "diagnose"), lab_inventory, "diagnose", answers)
    succeeded(diagnose)
    report = assert_report_travels(diagnose, "volfence_diagnose_report", "Diagnose | print the report")
    stuck = [p for p in diagnose.artifacts["volfence_diagnosis"] if p["pod"] == state["stuck_pod"]]
    assert [(p["incident"], p["next"]["file"], p["next"]["extra_vars"]) for p in stuck] == [
        ("stale-rbd-watcher", "playbooks/node_failover.yml", {"failed_node": "node-b"})]
    assert report["pods"] == diagnose.artifacts["volfence_diagnosis"]
    assert_no_op(launch(str(tmp_path / "diagnose-again"), lab_inventory, "diagnose", answers))

    # node_failover, launched by the workflow's next node: the answers diagnose named, and the
    # artifacts of the job before it as extra variables (what AWX passes down a workflow).
    answers = survey_answers("node_failover", out_of_service_taint="true", lease_grace_seconds=3,
                             **stuck[0]["next"]["extra_vars"])
    assert answers["failed_node"] == "node-b" and answers["force"] == "false"
    extravars = dict(diagnose.artifacts, **dict(FAST, **answers))
    # Job Type "Check" first (docs/awx.md): the report travels too, and nothing changes.
    before = blocklist_entries(lab)
    check = launch(str(tmp_path / "failover-check"), lab_inventory, "node_failover", extravars, job_type="check")
    succeeded(check)
    report = assert_report_travels(check, "volfence_node_failover_report", "Failover | print the report")
    assert report["check_mode"] is True and report["fence_plan"]["fence"] == node_fence(state)
    assert check.artifacts["volfence_node_failover_report"]["summary"][0].startswith("CHECK MODE: nothing was changed.")
    assert blocklist_entries(lab) == before and kube.find("pods", state["old_pod"], "default") is not None
    assert not out_of_service(kube, "node-b")

    failover = launch(str(tmp_path / "failover"), lab_inventory, "node_failover", extravars)
    succeeded(failover)
    report = assert_report_travels(failover, "volfence_node_failover_report", "Failover | print the report")
    # What was done, in the artifacts: the dead node's client fenced, its pod force-deleted, each
    # volume with what was done and the invariant behind it.
    assert report["failed_node"] == "node-b" and report["check_mode"] is False
    assert report["fence_plan"]["fence"] == node_fence(state)
    assert [a["entry"] for a in report["blocklist_actions"]] == node_fence(state)
    # under the out-of-service taint Kubernetes' pod GC may delete the pod first: then it is reported
    # as already gone, not as deleted by this run
    assert report["pods_force_deleted"] + [p["name"] for p in report["pods_absent"]] == [state["old_pod"]]
    assert report["out_of_service_taint"] is True and report["marker_recorded"] is True
    rbd = [v for v in report["volumes"] if v["image"] == state["image"]]
    assert len(rbd) == 1 and rbd[0]["safe"] is True and rbd[0]["how"].startswith("fenced (blocklist)")
    summary = failover.artifacts["volfence_node_failover_report"]["summary"]
    assert any("I1)" in line and node_fence(state)[0] in line for line in summary), summary
    assert any("(I6)" in line and state["old_pod"] in line for line in summary), summary
    # ... and it is what happened on the cluster.
    assert node_fence(state)[0] in blocklist_entries(lab)
    assert kube.find("pods", state["old_pod"], "default") is None
    assert kube.get("pods", state["stuck_pod"], "default")["status"]["phase"] == "Running"
    assert out_of_service(kube, "node-b")
    assert failover.changed(), "the failover itself changed nothing?"

    # Re-launched with the same answers while the node is still down: nothing left to do.
    before = blocklist_entries(lab)
    again = launch(str(tmp_path / "failover-again"), lab_inventory, "node_failover", extravars)
    assert_no_op(again)
    report = again.artifacts["volfence_node_failover_report"]["report"]
    assert report["fence_plan"]["fence"] == [] and report["pods_force_deleted"] == []
    assert report["volumeattachments_removed"] == []
    assert blocklist_entries(lab) == before

    # The node is power-cycled and back (old clients gone, kubelet Ready): node_recover.
    lab.lab("revive-node", "node-b")
    assert wait_until(lambda: node_ready(kube, "node-b"), timeout=60)
    answers = survey_answers("node_recover", node="node-b")
    # (in the same workflow: the artifacts of both jobs before it come as extra variables too)
    extravars = dict(diagnose.artifacts, **dict(failover.artifacts, **dict(FAST, **answers)))
    recover = launch(str(tmp_path / "recover"), lab_inventory, "node_recover", extravars)
    succeeded(recover)
    assert recover.changed()
    report = assert_report_travels(recover, "volfence_node_recover_report", "Recover | print the report")
    assert node_fence(state)[0] in report["blocklist_removed"] and report["taint_removed"] is True
    assert node_fence(state)[0] not in blocklist_entries(lab)
    node = kube.get("nodes", "node-b")
    assert not out_of_service(kube, "node-b")
    assert "volfence.csi/failover" not in (node["metadata"].get("annotations") or {})

    again = launch(str(tmp_path / "recover-again"), lab_inventory, "node_recover", extravars)
    assert_no_op(again)
    report = again.artifacts["volfence_node_recover_report"]["report"]
    assert report["blocklist_removed"] == [] and report["taint_removed"] is False


def test_networkfence_failover_as_an_awx_job_and_relaunch(stale_rbd_watcher, lab_inventory, tmp_path):
    """fence_method networkfence: the NetworkFence is created Fenced and the node records it; the
    re-launch finds the fence Fenced and the record as it was, and changes nothing."""
    lab, state, kube = stale_rbd_watcher
    answers = survey_answers("node_failover", failed_node="node-b", fence_method="networkfence", lease_grace_seconds=3)
    # the driver's secret and cluster ID are the template's extra variables: fixed per cluster
    extravars = dict(FAST, networkfence_secret={"name": "csi-rbd-secret", "namespace": "ceph-csi"},
                     networkfence_cluster_id="lab", **answers)
    job = launch(str(tmp_path / "failover"), lab_inventory, "node_failover", extravars)
    succeeded(job)
    assert job.changed()
    report = assert_report_travels(job, "volfence_node_failover_report", "Failover | print the report")
    assert report["networkfences"] == ["volfence-node-b"] and report["pods_force_deleted"] == [state["old_pod"]]
    assert kube.get("networkfences", "volfence-node-b")["status"]["result"] == "Succeeded"
    marker = kube.get("nodes", "node-b")["metadata"]["annotations"]["volfence.csi/failover"]

    again = launch(str(tmp_path / "failover-again"), lab_inventory, "node_failover", extravars)
    assert_no_op(again)
    report = again.artifacts["volfence_node_failover_report"]["report"]
    assert report["networkfences"] == ["volfence-node-b"] and report["pods_force_deleted"] == []
    assert kube.get("nodes", "node-b")["metadata"]["annotations"]["volfence.csi/failover"] == marker


def node_down(kube, node):
    return not node_ready(kube, node)


def rbd_locks(lab, image):
    return json.loads(lab.rbd("lock", "ls", image, "--format", "json"))


def test_rbd_lock_cleanup_as_an_awx_job_and_relaunch(clean_lab, kube, incident, lab_inventory, tmp_path):
    """stale-rbd-lock: node-b died holding an in-tree lock; the job fences the locker and breaks the lock,
    and its re-launch follows the pod it replaced and does nothing."""
    lab, state = clean_lab, incident("stale-rbd-lock")
    lab.lab("kill-node", "node-b")
    assert wait_until(lambda: node_down(kube, "node-b"), timeout=30)
    answers = survey_answers("rbd_lock_cleanup", pod_namespace="default", pod_name=state["stuck_pod"])
    extravars = dict(FAST, lease_grace_seconds=3, **answers)
    job = launch(str(tmp_path / "cleanup"), lab_inventory, "rbd_lock_cleanup", extravars)
    succeeded(job)
    assert job.changed()
    report = assert_report_travels(job, "volfence_rbd_lock_cleanup_report", "Lock cleanup | print the report")
    assert [lock["id"] for lock in report["stale_locks"]] == ["kubelet_lock_magic_node-b"]
    # the locker, and node-b's address whole: the in-tree lock's locker is not the client that writes (issue 43)
    whole = lab.nodes["node-b"] + ":0/0"
    assert sorted(b["entry"] for b in report["blocklisted"]) == sorted([state["locker_address"], whole])
    assert report["pod_restarted"] is True
    assert state["locker_address"] in blocklist_entries(lab) and whole in blocklist_entries(lab)
    running = wait_until(lambda: [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
                                  if p["status"].get("phase") == "Running"], timeout=30)
    assert len(running) == 1 and running[0]["metadata"]["name"] != state["stuck_pod"]

    locks, blocklist = rbd_locks(lab, state["image"]), blocklist_entries(lab)
    again = launch(str(tmp_path / "cleanup-again"), lab_inventory, "rbd_lock_cleanup", extravars)
    assert_no_op(again)
    report = again.artifacts["volfence_rbd_lock_cleanup_report"]["report"]
    assert report["pod"]["requested"] == state["stuck_pod"] and report["pod"]["replaced"] is True
    assert report["pod"]["name"] == running[0]["metadata"]["name"]
    assert report["stale_locks"] == [] and report["pod_restarted"] is False
    assert rbd_locks(lab, state["image"]) == locks and blocklist_entries(lab) == blocklist


def test_volumeattachment_cleanup_as_an_awx_job_and_relaunch(kube, incident, lab_inventory, tmp_path):
    """stale-volumeattachment: a stale VolumeAttachment keeps the volume from attaching; the job removes it and
    restarts the pod, and its re-launch follows the pod it replaced and does nothing."""
    state = incident("stale-volumeattachment")
    # the lab runs no csi-unity attacher that would drop the attachment's finalizer
    answers = survey_answers("volumeattachment_cleanup", pod_namespace="default", pod_name=state["stuck_pod"],
                             force_detach="true")
    extravars = dict(FAST, not_ready_grace=5, force_detach_grace=0, **answers)
    job = launch(str(tmp_path / "cleanup"), lab_inventory, "volumeattachment_cleanup", extravars)
    succeeded(job)
    assert job.changed()
    report = assert_report_travels(job, "volfence_va_cleanup_report", "VolumeAttachment cleanup | print the report")
    assert [va["name"] for va in report["stale"]] == [state["volumeattachment"]]
    assert report["pod_restarted"] is True
    assert kube.find("volumeattachments", state["volumeattachment"]) is None
    running = [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
               if p["status"].get("phase") == "Running"]
    assert len(running) == 1 and running[0]["metadata"]["name"] != state["stuck_pod"]

    attachments = sorted(va["metadata"]["name"] for va in kube.list("volumeattachments"))
    again = launch(str(tmp_path / "cleanup-again"), lab_inventory, "volumeattachment_cleanup", extravars)
    assert_no_op(again)
    report = again.artifacts["volfence_va_cleanup_report"]["report"]
    assert report["pod"]["replaced"] is True and report["pod"]["name"] == running[0]["metadata"]["name"]
    assert report["stale"] == [] and report["pod_restarted"] is False
    assert sorted(va["metadata"]["name"] for va in kube.list("volumeattachments")) == attachments


def test_fuse_mount_recovery_as_an_awx_job_and_relaunch(kube, incident, lab_inventory, tmp_path):
    """dead-fuse-mount: a FUSE CSI plugin restarted under a pod; the job unmounts the dead mount and restarts
    the pod, and its re-launch finds nothing dead and does nothing."""
    state = incident("dead-fuse-mount")
    answers = survey_answers("fuse_mount_recovery", target_nodes=state["node"], fuse_drivers=state["driver"])
    extravars = dict(FAST, **answers)
    job = launch(str(tmp_path / "recovery"), lab_inventory, "fuse_mount_recovery", extravars)
    succeeded(job)
    assert job.changed()
    report = assert_report_travels(job, "volfence_fuse_recovery_report", "FUSE recovery | print the report")
    assert state["mount"] in [m["path"] for m in report["nodes"][state["node"]]["unmounted"]]
    assert state["pod"] in report["restarted"]
    assert_fuse_pod_replaced(kube, state)

    again = launch(str(tmp_path / "recovery-again"), lab_inventory, "fuse_mount_recovery", extravars)
    assert_no_op(again)
    report = again.artifacts["volfence_fuse_recovery_report"]["report"]
    assert report["restarted"] == [] and report["nodes"][state["node"]]["unmounted"] == []

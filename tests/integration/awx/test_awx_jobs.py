"""Issue 18: the main playbooks run as AWX runs a job template (ansible-runner, a private data
directory, an AWX-style project and survey answers). The report travels with the job (the
playbook_on_stats event's artifact_data, the file in the job's project folder, the summary once in
the output), and a re-launch with the same answers after success is a no-op: rc 0, changed=0 on
every host."""

import json
import os

import pytest

from awxjob import launch, survey_answers
from labtools import blocklist_entries, wait_until

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


@pytest.fixture
def seed_000(clean_lab, kube, incident):
    yield clean_lab, incident("seed-000"), kube
    for fence in kube.list("networkfences") if kube.find("customresourcedefinitions", "networkfences.csiaddons.openshift.io") else []:
        kube.delete("networkfences", fence["metadata"]["name"])


def test_diagnose_failover_recover_as_awx_jobs_and_relaunches(seed_000, lab_inventory, tmp_path):
    """The workflow docs/awx.md describes: diagnose, then node_failover of what it names, then
    node_recover once the node is back; each job re-launched with the same answers."""
    lab, state, kube = seed_000

    # diagnose: its artifacts name the next job and its answers.
    answers = survey_answers("diagnose", stuck_threshold_seconds=1)
    diagnose = launch(str(tmp_path / "diagnose"), lab_inventory, "diagnose", answers)
    succeeded(diagnose)
    report = assert_report_travels(diagnose, "volfence_diagnose_report", "Diagnose | print the report")
    stuck = [p for p in diagnose.artifacts["volfence_diagnosis"] if p["pod"] == state["stuck_pod"]]
    assert [(p["incident"], p["next"]["file"], p["next"]["extra_vars"]) for p in stuck] == [
        ("seed-000", "playbooks/node_failover.yml", {"failed_node": "node-b"})]
    assert report["pods"] == diagnose.artifacts["volfence_diagnosis"]
    assert_no_op(launch(str(tmp_path / "diagnose-again"), lab_inventory, "diagnose", answers))

    # node_failover, launched by the workflow's next node: the answers diagnose named, and the
    # artifacts of the job before it as extra variables (what AWX passes down a workflow).
    answers = survey_answers("node_failover", out_of_service_taint="true", lease_grace_seconds=3,
                             **stuck[0]["next"]["extra_vars"])
    assert answers["failed_node"] == "node-b" and answers["force"] == "false"
    extravars = dict(diagnose.artifacts, **dict(FAST, **answers))
    failover = launch(str(tmp_path / "failover"), lab_inventory, "node_failover", extravars)
    succeeded(failover)
    report = assert_report_travels(failover, "volfence_node_failover_report", "Failover | print the report")
    # What was done, in the artifacts: the dead node's client fenced, its pod force-deleted, each
    # volume with what was done and the invariant behind it.
    assert report["failed_node"] == "node-b" and report["check_mode"] is False
    assert report["fence_plan"]["fence"] == state["watchers"]
    assert [a["entry"] for a in report["blocklist_actions"]] == state["watchers"]
    assert report["pods_force_deleted"] == [state["old_pod"]]
    assert report["out_of_service_taint"] is True and report["marker_recorded"] is True
    rbd = [v for v in report["volumes"] if v["image"] == state["image"]]
    assert len(rbd) == 1 and rbd[0]["safe"] is True and rbd[0]["how"].startswith("fenced (blocklist)")
    summary = failover.artifacts["volfence_node_failover_report"]["summary"]
    assert any("I1)" in line and state["watchers"][0] in line for line in summary), summary
    assert any("(I6)" in line and state["old_pod"] in line for line in summary), summary
    # ... and it is what happened on the cluster.
    assert state["watchers"][0] in blocklist_entries(lab)
    assert kube.find("pods", state["old_pod"], "default") is None
    assert kube.get("pods", state["stuck_pod"], "default")["status"]["phase"] == "Running"
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
    assert wait_until(lambda: node_ready(kube, "node-b"), timeout=15)
    answers = survey_answers("node_recover", node="node-b")
    recover = launch(str(tmp_path / "recover"), lab_inventory, "node_recover", dict(FAST, **answers))
    succeeded(recover)
    report = assert_report_travels(recover, "volfence_node_recover_report", "Recover | print the report")
    assert state["watchers"][0] in report["blocklist_removed"] and report["taint_removed"] is True
    assert state["watchers"][0] not in blocklist_entries(lab)
    node = kube.get("nodes", "node-b")
    assert not any(t["key"] == "node.kubernetes.io/out-of-service" for t in node["spec"].get("taints", []))
    assert "volfence.csi/failover" not in (node["metadata"].get("annotations") or {})

    again = launch(str(tmp_path / "recover-again"), lab_inventory, "node_recover", dict(FAST, **answers))
    assert_no_op(again)
    report = again.artifacts["volfence_node_recover_report"]["report"]
    assert report["blocklist_removed"] == [] and report["taint_removed"] is False

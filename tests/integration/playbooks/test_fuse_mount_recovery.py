"""playbooks/fuse_mount_recovery.yml on the lab's dead-fuse-mount scenario (real bindfs FUSE mounts)."""

import json
import os

import pytest
import yaml

from failing_hosts import UNREACHABLE, inventory_with_failing_hosts, stopped_with_report
from labtools import assert_fuse_pod_replaced, incident_fixture, playbook_path, run_playbook, told, volfence_events

PLAYBOOK = playbook_path("fuse_mount_recovery")
dead_fuse_mount = incident_fixture("dead-fuse-mount")


def test_check_mode_changes_nothing_then_recovery_restarts_the_pod(dead_fuse_mount, lab_inventory, tmp_path):
    state, kube = dead_fuse_mount
    extra = {"target_nodes": [state["node"]], "fuse_drivers": [state["driver"]],
             "report_path": str(tmp_path / "report.json"), "wait_timeout": 60}

    events_before = volfence_events(kube)
    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert told(kube, events_before) == []   # a check run posts nothing
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["check_mode"] is True
    # (other dead mounts on the node, from earlier tests, are recovered too: that is the job)
    assert state["mount"] in [m["path"] for m in report["nodes"][state["node"]]["unmounted"]]
    assert state["pod"] in report["restarted"]
    with pytest.raises(OSError):
        os.stat(state["mount"])  # still dead: check mode unmounted nothing
    assert kube.find("pods", state["pod"], "default") is not None

    run = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["check_mode"] is False and state["pod"] in report["restarted"]
    assert_fuse_pod_replaced(kube, state)   # a new pod runs, its volume a live FUSE mount again
    # issue 35: the stuck pod tells its dead mount recovered and its restart
    story = [(reason, kind, name) for reason, kind, name, _m in told(kube, events_before)]
    assert ("DeadMountRecovered", "Pod", "default/" + state["pod"]) in story, story
    assert ("PodRestarted", "Pod", "default/" + state["pod"]) in story, story
    assert story.index(("DeadMountRecovered", "Pod", "default/" + state["pod"])) < \
        story.index(("PodRestarted", "Pod", "default/" + state["pod"]))

    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0
    assert json.loads((tmp_path / "report.json").read_text())["restarted"] == []


def test_nodes_that_fail_or_cannot_be_reached_are_named_in_the_report(dead_fuse_mount, lab_inventory, tmp_path):
    """Two of the target nodes fail their first step (one unreachable, one without a usable Python): the
    run still ends with its report, which names them, plans the third node's recovery, and fails."""
    state, kube = dead_fuse_mount
    with open(lab_inventory) as handle:
        nodes = yaml.safe_load(handle)["all"]["children"]["k8s_nodes"]["hosts"]
    unreachable, broken = sorted(name for name in nodes if name != state["node"])[:2]
    path = inventory_with_failing_hosts(lab_inventory, tmp_path, unreachable=[unreachable], broken=[broken])
    extra = {"target_nodes": [state["node"], unreachable, broken], "fuse_drivers": [state["driver"]],
             "report_path": str(tmp_path / "report.json"), "wait_timeout": 60}

    run = run_playbook(path, PLAYBOOK, extra, check=True)
    assert run.rc == 2, run.stdout[-3000:]
    for internal in ("Error rendering template", "object has no attribute", "Traceback"):
        assert internal not in run.stdout + run.stderr, run.stdout[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert sorted(report["failed_nodes"]) == sorted([unreachable, broken])
    assert report["failed_nodes"][unreachable].startswith("unreachable:")
    assert report["failed_nodes"][broken].startswith("failed:")
    assert list(report["nodes"]) == [state["node"]]
    assert state["mount"] in [m["path"] for m in report["nodes"][state["node"]]["unmounted"]]
    assert state["pod"] in report["restarted"]
    assert kube.find("pods", state["pod"], "default") is not None  # check mode


def test_an_unreachable_kubernetes_host_is_named_in_the_report_and_no_pod_is_restarted(dead_fuse_mount, lab_inventory,
                                                                                       tmp_path):
    """The node's dead mount is unmounted, but the Kubernetes API host cannot be reached at the restart step:
    the run ends with its report, which names the host, the step and why, restarts no pod, and fails."""
    state, kube = dead_fuse_mount
    inventory = inventory_with_failing_hosts(lab_inventory, tmp_path, unreachable=["k8s-api"])
    extra = {"target_nodes": [state["node"]], "fuse_drivers": [state["driver"]],
             "report_path": str(tmp_path / "report.json"), "wait_timeout": 60}

    run = run_playbook(inventory, PLAYBOOK, extra)
    report = stopped_with_report(run, tmp_path / "report.json", "k8s-api", UNREACHABLE,
                                 "FUSE recovery | restart the affected pods")
    assert report["failed_nodes"] == {} and report["restarted"] == []
    assert state["mount"] in [m["path"] for m in report["nodes"][state["node"]]["unmounted"]]
    assert kube.find("pods", state["pod"], "default") is not None  # not restarted

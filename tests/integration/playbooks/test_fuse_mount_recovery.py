"""playbooks/fuse_mount_recovery.yml on the lab's dead-fuse-mount scenario (real bindfs FUSE mounts)."""

import json
import os

import pytest

from labtools import REPO, assert_fuse_pod_replaced, run_playbook

PLAYBOOK = os.path.join(REPO, "playbooks", "fuse_mount_recovery.yml")


@pytest.fixture
def dead_fuse_mount(kube, incident):
    return incident("dead-fuse-mount"), kube


def test_check_mode_changes_nothing_then_recovery_restarts_the_pod(dead_fuse_mount, lab_inventory, tmp_path):
    state, kube = dead_fuse_mount
    extra = {"target_nodes": [state["node"]], "fuse_drivers": [state["driver"]],
             "report_path": str(tmp_path / "report.json"), "wait_timeout": 60}

    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
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

    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0
    assert json.loads((tmp_path / "report.json").read_text())["restarted"] == []

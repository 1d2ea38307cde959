"""playbooks/fuse_mount_recovery.yml on the lab's dead-fuse-mount scenario (real bindfs FUSE mounts)."""

import json
import os

import pytest

from labtools import REPO, run_playbook, wait_until

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
    assert kube.find("pods", state["pod"], "default") is None
    running = [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
               if p["status"].get("phase") == "Running"]
    assert len(running) == 1 and running[0]["metadata"]["uid"] != state["pod_uid"]
    # The new pod's volume is a live FUSE mount again.
    new_mount = state["mount"].replace(state["pod_uid"], running[0]["metadata"]["uid"])
    assert wait_until(lambda: os.path.isdir(new_mount) and os.listdir(new_mount) is not None)

    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0
    assert json.loads((tmp_path / "report.json").read_text())["restarted"] == []

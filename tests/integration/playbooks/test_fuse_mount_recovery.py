"""playbooks/fuse_mount_recovery.yml on the lab's dead-fuse-mount scenario (real bindfs FUSE mounts)."""

import json
import os

import pytest
import yaml

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


def test_nodes_that_fail_or_cannot_be_reached_are_named_in_the_report(dead_fuse_mount, lab_inventory, tmp_path):
    """Two of the target nodes fail their first step (one unreachable, one without a usable Python): the
    run still ends with its report, which names them, plans the third node's recovery, and fails."""
    state, kube = dead_fuse_mount
    with open(lab_inventory) as handle:
        inventory = yaml.safe_load(handle)
    nodes = inventory["all"]["children"]["k8s_nodes"]["hosts"]
    others = sorted(name for name in nodes if name != state["node"])[:2]
    unreachable, broken = others
    # reached over ssh, whose client answers as for a closed port (exit 255): an unreachable host
    refusing_ssh = tmp_path / "ssh"
    refusing_ssh.write_text("#!/bin/sh\necho 'ssh: connect to host 127.0.0.1 port 1: Connection refused' >&2\nexit 255\n")
    refusing_ssh.chmod(0o755)
    nodes[unreachable].update(ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=1,
                              ansible_ssh_executable=str(refusing_ssh))
    nodes[broken]["ansible_python_interpreter"] = str(tmp_path / "no-such-python")
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    extra = {"target_nodes": [state["node"], unreachable, broken], "fuse_drivers": [state["driver"]],
             "report_path": str(tmp_path / "report.json"), "wait_timeout": 60}

    run = run_playbook(str(path), PLAYBOOK, extra, check=True)
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

"""playbooks/volumeattachment_cleanup.yml on the lab's stale-volumeattachment scenario."""

import json
import os

import pytest

from labtools import REPO, run_playbook

PLAYBOOK = os.path.join(REPO, "playbooks", "volumeattachment_cleanup.yml")


@pytest.fixture
def stale_volumeattachment(kube, incident):
    return incident("stale-volumeattachment"), kube


def test_check_mode_then_cleanup(stale_volumeattachment, lab_inventory, tmp_path):
    state, kube = stale_volumeattachment
    extra = {"pod_namespace": "default", "pod_name": state["stuck_pod"], "report_path": str(tmp_path / "r.json"),
             "not_ready_grace": 5, "wait_timeout": 60,
             # the lab runs no csi-unity attacher that would drop its finalizer
             "force_detach": True, "force_detach_grace": 0}
    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert [va["name"] for va in report["stale"]] == [state["volumeattachment"]]
    assert report["stale"][0]["stale_reasons"] == ["not_in_use"]
    assert report["collision"][0]["volume_has_attachment_name_shape"] is True
    assert kube.find("volumeattachments", state["volumeattachment"]) is not None
    assert kube.find("pods", state["stuck_pod"], "default") is not None

    run = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert kube.find("volumeattachments", state["volumeattachment"]) is None
    assert report["pod_restarted"] is True
    running = [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
               if p["status"].get("phase") == "Running"]
    assert len(running) == 1 and running[0]["spec"]["nodeName"] == state["stuck_node"]

    # Re-launched with the same answers (issue 18): follows the replaced pod, nothing to do, no change.
    attachments = sorted(va["metadata"]["name"] for va in kube.list("volumeattachments"))
    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0, again.stdout[-3000:]
    assert sum(host["changed"] for host in again.data["stats"].values()) == 0, again.data["stats"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["pod"]["replaced"] is True and report["pod"]["name"] == running[0]["metadata"]["name"]
    assert report["stale"] == [] and report["pod_restarted"] is False
    assert sorted(va["metadata"]["name"] for va in kube.list("volumeattachments")) == attachments


def test_an_attachment_in_use_is_kept(incident, lab_inventory, tmp_path):
    """A stuck pod whose volume is attached where a pod still uses it: nothing is provably stale."""
    state = incident("stale-rbd-watcher")  # node-b is NotReady, but only for seconds
    run = run_playbook(lab_inventory, PLAYBOOK, {"pod_namespace": "default", "pod_name": state["stuck_pod"],
                                                 "report_path": str(tmp_path / "r.json")}, check=True)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stale"] == [] and report["pod_restarted"] is False

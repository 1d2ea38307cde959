"""playbooks/volumeattachment_cleanup.yml on the lab's stale-volumeattachment scenario."""

import json

from failing_hosts import FAILED, inventory_with_failing_hosts, stopped_with_report
from labtools import incident_fixture, playbook_path, run_playbook, told, volfence_events

PLAYBOOK = playbook_path("volumeattachment_cleanup")
stale_volumeattachment = incident_fixture("stale-volumeattachment")


def test_check_mode_then_cleanup(stale_volumeattachment, lab_inventory, tmp_path):
    state, kube = stale_volumeattachment
    extra = {"pod_namespace": "default", "pod_name": state["stuck_pod"], "report_path": str(tmp_path / "r.json"),
             "not_ready_grace": 5, "wait_timeout": 60,
             # the lab runs no csi-unity attacher that would drop its finalizer
             "force_detach": True, "force_detach_grace": 0}
    events_before = volfence_events(kube)
    check = run_playbook(lab_inventory, PLAYBOOK, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert told(kube, events_before) == []   # a check run posts nothing
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
    # issue 35: one Event per action, on its object, naming the report and the invariant
    story = told(kube, events_before)
    assert [(reason, kind, name) for reason, kind, name, _m in story] == [
        ("VolumeAttachmentDeleted", "VolumeAttachment", state["volumeattachment"]),
        ("PodRestarted", "Pod", "default/" + state["stuck_pod"]),
        ("ReplacementRunning", "Pod", "default/" + running[0]["metadata"]["name"])], story
    assert "replaces pod default/%s" % state["stuck_pod"] in story[2][3], story
    assert all("allowed by I5" in m and "report: %s" % extra["report_path"] in m for _r, _k, _n, m in story), story
    events_after = volfence_events(kube)

    # Re-launched with the same answers (issue 18): follows the replaced pod, nothing to do, no change.
    attachments = sorted(va["metadata"]["name"] for va in kube.list("volumeattachments"))
    again = run_playbook(lab_inventory, PLAYBOOK, extra)
    assert again.rc == 0, again.stdout[-3000:]
    assert sum(host["changed"] for host in again.data["stats"].values()) == 0, again.data["stats"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["pod"]["replaced"] is True and report["pod"]["name"] == running[0]["metadata"]["name"]
    assert report["stale"] == [] and report["pod_restarted"] is False
    assert sorted(va["metadata"]["name"] for va in kube.list("volumeattachments")) == attachments
    assert told(kube, events_after) == []


def test_an_attachment_in_use_is_kept(incident, lab_inventory, tmp_path):
    """A stuck pod whose volume is attached where a pod still uses it: nothing is provably stale."""
    state = incident("stale-rbd-watcher")  # node-b is NotReady, but only for seconds
    run = run_playbook(lab_inventory, PLAYBOOK, {"pod_namespace": "default", "pod_name": state["stuck_pod"],
                                                 "report_path": str(tmp_path / "r.json")}, check=True)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stale"] == [] and report["pod_restarted"] is False


def test_a_failing_kubernetes_host_is_named_in_the_report_and_nothing_is_deleted(stale_volumeattachment, lab_inventory,
                                                                                 tmp_path):
    """The Kubernetes API host has no usable Python: the first step fails there, the run still ends with its
    report naming the host, the step and why, deletes no attachment and no pod, and fails."""
    state, kube = stale_volumeattachment
    inventory = inventory_with_failing_hosts(lab_inventory, tmp_path, broken=["k8s-api"])
    extra = {"pod_namespace": "default", "pod_name": state["stuck_pod"], "report_path": str(tmp_path / "r.json"),
             "not_ready_grace": 5, "wait_timeout": 60, "force_detach": True, "force_detach_grace": 0}

    run = run_playbook(inventory, PLAYBOOK, extra)
    report = stopped_with_report(
        run, tmp_path / "r.json", "k8s-api", FAILED,
        "VolumeAttachment cleanup | find the stuck pod's volumes and which of their attachments are stale")
    assert report["stale"] == [] and report["deleted"] == [] and report["pod_restarted"] is False
    assert report["pod"]["requested"] == state["stuck_pod"]
    # nothing was done after the failure: the stale attachment and the stuck pod are still there
    assert kube.find("volumeattachments", state["volumeattachment"]) is not None
    assert kube.find("pods", state["stuck_pod"], "default") is not None

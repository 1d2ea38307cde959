"""playbooks/node_recover.yml after node_failover on the lab's seed-000 scenario."""

import json
import os

import pytest

from labtools import REPO, run_playbook, wait_until

FAILOVER = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")


def blocklist_entries(lab):
    out = lab.cli("ceph", "osd", "blocklist", "ls", "--format", "json").stdout
    decoder, pos, entries = json.JSONDecoder(), 0, []
    while True:
        while pos < len(out) and out[pos].isspace():
            pos += 1
        if pos >= len(out):
            return entries
        value, pos = decoder.raw_decode(out, pos)
        entries += [e["addr"] for e in value]


@pytest.fixture
def failed_over(clean_lab, kube, incident, lab_inventory, tmp_path):
    lab = clean_lab
    state = incident("seed-000")
    report = tmp_path / "failover.json"
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "lease_grace_seconds": 3,
                                                 "out_of_service_taint": True, "report_path": str(report)})
    assert run.rc == 0, run.stdout[-3000:]
    return lab, state, kube, report


def test_refuses_while_the_node_is_still_down_then_recovers(failed_over, lab_inventory, tmp_path):
    lab, state, kube, failover_report = failed_over
    fenced = state["watchers"][0]
    assert fenced in blocklist_entries(lab)
    extra = {"node": "node-b", "failover_report": str(failover_report), "report_path": str(tmp_path / "r.json")}

    refused = run_playbook(lab_inventory, RECOVER, extra)
    assert refused.rc != 0 and "refusing to unfence node-b: it is not Ready" in refused.stdout
    assert fenced in blocklist_entries(lab)

    lab.lab("revive-node", "node-b")  # power-cycled: old clients gone, kubelet back
    assert wait_until(lambda: [c for c in kube.get("nodes", "node-b")["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] == "True", timeout=15)

    check = run_playbook(lab_inventory, RECOVER, extra, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert fenced in blocklist_entries(lab)
    assert any(t["key"] == "node.kubernetes.io/out-of-service" for t in kube.get("nodes", "node-b")["spec"].get("taints", []))

    run = run_playbook(lab_inventory, RECOVER, extra)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert fenced in [e["entry"] for e in report["blocklist_entries"]]
    assert fenced not in blocklist_entries(lab)
    assert report["taint_removed"] is True
    assert not any(t["key"] == "node.kubernetes.io/out-of-service" for t in kube.get("nodes", "node-b")["spec"].get("taints", []))

    again = run_playbook(lab_inventory, RECOVER, extra)
    assert again.rc == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["blocklist_entries"] == [] and report["taint_removed"] is False

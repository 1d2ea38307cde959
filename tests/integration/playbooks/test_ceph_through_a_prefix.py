"""node_failover and node_recover with the Ceph tools behind a command prefix, as Rook users without an admin
host run them (volfence_ceph_backend=cli, volfence_ceph_command_prefix=[kubectl, -n, rook-ceph, exec,
deploy/rook-ceph-tools, --]). Here the "toolbox" is node-a's network namespace, entered by a script that
logs each command it runs: Ceph sees the commands come from node-a's address, and the log shows that every
Ceph call of the run went through the prefix."""

import json
import os

from labtools import REPO, blocklist_entries, run_playbook, wait_until, node_fence

FAILOVER = os.path.join(REPO, "playbooks", "node_failover.yml")
RECOVER = os.path.join(REPO, "playbooks", "node_recover.yml")


def toolbox(lab, tmp_path):
    log = tmp_path / "toolbox.log"
    script = tmp_path / "toolbox"
    script.write_text('#!/bin/sh\necho "$*" >> %s\nexec ip netns exec %s-node-a "$@"\n' % (log, lab.env["LAB_PREFIX"]))
    script.chmod(0o755)
    return str(script), log


def test_failover_and_recovery_through_a_command_prefix(kubernetes_never_releases, incident, kube, lab_inventory,
                                                        tmp_path):
    lab = kubernetes_never_releases
    state = incident("stale-rbd-watcher")
    prefix, log = toolbox(lab, tmp_path)
    ceph = {"volfence_ceph_backend": "cli", "volfence_ceph_command_prefix": [prefix]}

    run = run_playbook(lab_inventory, FAILOVER, dict(ceph, failed_node="node-b", lease_grace_seconds=3,
                                                     wait_timeout=60, report_path=str(tmp_path / "f.json")))
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "f.json").read_text())
    assert report["fence_plan"]["fence"] == node_fence(state) and node_fence(state)[0] in blocklist_entries(lab)
    calls = log.read_text().splitlines()
    assert any(c.startswith("ceph ") and "blocklist" in c and "add" in c for c in calls), calls
    assert any(c.startswith("rbd ") for c in calls), calls  # the watchers were read through it too
    assert report["replacements_running"] and report["replacements_running"][0]["node"] != "node-b"

    lab.lab("revive-node", "node-b")
    assert wait_until(lambda: [c for c in kube.get("nodes", "node-b")["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] == "True", timeout=30)
    log.write_text("")
    run = run_playbook(lab_inventory, RECOVER, dict(ceph, node="node-b", report_path=str(tmp_path / "r.json")))
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert node_fence(state)[0] in report["blocklist_removed"] and node_fence(state)[0] not in blocklist_entries(lab)
    calls = log.read_text().splitlines()
    assert any(c.startswith("ceph ") and "blocklist" in c and "rm" in c for c in calls), calls


def test_a_wrong_backend_is_refused_before_anything_is_read(clean_lab, lab_inventory, tmp_path):
    run = run_playbook(lab_inventory, FAILOVER, {"failed_node": "node-b", "volfence_ceph_backend": "toolbox",
                                                 "report_path": str(tmp_path / "f.json")})
    assert run.rc != 0
    assert 'volfence_ceph_backend: \\"toolbox\\" is not one of auto, rados, cli' in run.stdout  # JSON output
    assert not (tmp_path / "f.json").exists()

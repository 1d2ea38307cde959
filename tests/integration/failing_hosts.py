"""A copy of the lab's inventory in which some hosts fail: what a playbook run meets when the Ceph
admin host, the Kubernetes API host or a node goes away, for the tests that every playbook still
ends with its report naming them, does nothing after the failure, and fails."""

import json

import yaml

# How the report names the failure of each kind of host (report.py's reasons).
UNREACHABLE = "unreachable:"
FAILED = "failed:"


def _hosts(inventory):
    """Every host entry of the inventory, by name (the entries themselves, to be edited)."""
    found = {}
    groups = [inventory["all"]]
    while groups:
        group = groups.pop()
        found.update(group.get("hosts") or {})
        groups.extend((group.get("children") or {}).values())
    return found


def inventory_with_failing_hosts(inventory_path, directory, unreachable=(), broken=()):
    """Writes directory/inventory.yml and returns its path: each host of `unreachable` is reached over
    ssh by a client that answers as for a closed port (exit 255: Ansible's unreachable); each host of
    `broken` has no usable Python (its tasks fail)."""
    with open(str(inventory_path)) as handle:
        inventory = yaml.safe_load(handle)
    hosts = _hosts(inventory)
    refusing_ssh = directory / "ssh"
    refusing_ssh.write_text("#!/bin/sh\necho 'ssh: connect to host 127.0.0.1 port 1: Connection refused' >&2\nexit 255\n")
    refusing_ssh.chmod(0o755)
    for name in unreachable:
        hosts[name].update(ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=1,
                           ansible_ssh_executable=str(refusing_ssh))
    for name in broken:
        hosts[name]["ansible_python_interpreter"] = str(directory / "no-such-python")
    path = directory / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return str(path)


def stopped_with_report(run, report_path, host, kind, step):
    """The run a failing host stopped: it failed (rc 2) with no template error or traceback, and wrote its
    report, whose failed_step names the host, the kind of failure (UNREACHABLE or FAILED) and a step
    starting with `step`. Returns the report."""
    assert run.rc == 2, run.stdout[-3000:]
    for internal in ("Error rendering template", "object has no attribute", "Traceback"):
        assert internal not in run.stdout + run.stderr, run.stdout[-3000:]
    with open(str(report_path)) as handle:
        report = json.load(handle)
    failed = report["failed_step"]
    assert failed["host"] == host and failed["reason"].startswith(kind) and failed["step"].startswith(step), failed
    return report

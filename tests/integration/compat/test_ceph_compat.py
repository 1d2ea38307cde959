"""The client x cluster compatibility matrix of docs/ceph-releases.md, one cell per test.

The lab's cluster runs one release (LAB_CEPH); this runs the Ceph modules against it from a Ceph
admin host of each client release the lab knows (16, 18, 20: this machine's Debian packages and
the Debian roots `make setup` builds), with both backends, and checks the outcome against the
documented cell: "works" (every module answers, and `versions` names both releases) or "clear
error" (every module fails with the message that names both versions and the ways out). `make
test` runs this on each cluster release, so every cell of the table is produced by a test."""

import json
import os
import re
import subprocess
import sys

import pytest
from volfence_lab import ceph_releases

from labtools import REPO, ansible_command, ansible_env, ANSIBLE_BIN

DOC = os.path.join(REPO, "docs", "ceph-releases.md")
CLIENTS = sorted(ceph_releases.RELEASES, key=int)

PLAYBOOK = """---
- name: The Ceph modules from a Ceph {client} admin host
  hosts: ceph-admin
  gather_facts: false
  tasks:
    - name: Blocklist with the bindings
      volfence.csi.ceph_blocklist_info: &ceph
        conf: {conf}
        keyring: {keyring}
        user: {user}
        timeout: 20
        backend: rados
      register: blocklist_rados
      ignore_errors: true
    - name: Watchers with the bindings
      volfence.csi.rbd_watchers_info:
        <<: *ceph
        images: [{image}]
      register: watchers_rados
      ignore_errors: true
    - name: Blocklist with the CLI
      volfence.csi.ceph_blocklist_info:
        <<: *ceph
        backend: cli
      register: blocklist_cli
      ignore_errors: true
    - name: Results
      ansible.builtin.copy:
        dest: {out}
        content: "{{{{ dict(blocklist_rados=blocklist_rados, watchers_rados=watchers_rados,
                   blocklist_cli=blocklist_cli) | to_json }}}}"
        mode: "0600"
      delegate_to: localhost
"""


def documented_matrix():
    """{(client, cluster): 'works' | 'clear error'} from the table in docs/ceph-releases.md."""
    with open(DOC) as handle:
        text = handle.read()
    table = text.split("<!-- compatibility-matrix -->")[1]
    rows = [line for line in table.strip().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    clusters = [re.search(r"\b(\d+)\.\d", cell).group(1) for cell in header[1:]]
    cells = {}
    for row in rows[2:]:
        values = [cell.strip() for cell in row.strip("|").split("|")]
        client = re.search(r"\b(\d+)\.\d", values[0]).group(1)
        for cluster, value in zip(clusters, values[1:]):
            cells[(client, cluster)] = "works" if value.lower().startswith("works") else (
                "clear error" if value.lower().startswith("clear error") else value)
    return cells


@pytest.fixture(scope="module")
def cluster(lab):
    release = lab.env.get("LAB_CEPH")
    if not release:
        pytest.fail("the lab's env file names no Ceph release (LAB_CEPH): restart it with this checkout's lab.py")
    return release, lab.env["LAB_CEPH_VERSION"]


@pytest.fixture(scope="module")
def image(lab):
    return lab.new_image("compat")


def machine_path(lab):
    """PATH without the lab release's tools (tests/integration/conftest.py puts them first): each
    cell's client must use its own release's CLI, as a real admin host of that release would."""
    lab_bin = lab.env.get("LAB_CEPH_BIN")
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != lab_bin)


def client_python(tmp_path, client, lab):
    """An interpreter that runs modules with `client`'s Ceph, as a real admin host would."""
    if not ceph_releases.read_stamp(client):
        pytest.fail("Ceph %s is not installed for the tests: run `make setup`" % client)
    path = tmp_path / ("python-ceph-%s" % client)
    path.write_text(ceph_releases.wrapper_script(client, "/usr/bin/python3", extra_paths=(REPO, lab.dir)))
    path.chmod(0o755)
    return str(path)


def run_cell(tmp_path, lab, client, image):
    python = client_python(tmp_path, client, lab)
    out = tmp_path / "results.json"
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "ceph-admin": {"ansible_connection": "local", "ansible_python_interpreter": python},
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    playbook = tmp_path / "cell.yml"
    playbook.write_text(PLAYBOOK.format(client=client, conf=json.dumps(lab.conf), keyring=json.dumps(lab.keyring),
                                        user=lab.user, image=json.dumps(image), out=json.dumps(str(out))))
    env = ansible_env({"PATH": ANSIBLE_BIN + os.pathsep + machine_path(lab)})
    proc = subprocess.run(ansible_command([os.path.join(ANSIBLE_BIN, "ansible-playbook"), "-i", str(inventory),
                                           str(playbook)], env),
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-4000:]
    return json.loads(out.read_text())


def client_version(client):
    return ceph_releases.read_stamp(client)["version"]


@pytest.mark.parametrize("client", CLIENTS)
def test_cell(tmp_path, lab, cluster, image, client):
    release, cluster_version = cluster
    expected = documented_matrix()[(client, release)]
    results = run_cell(tmp_path, lab, client, image)
    failed = dict((name, r.get("msg", "")) for name, r in results.items() if r.get("failed"))
    if expected == "works":
        assert not failed, "documented to work, but: %s" % failed
        for name, result in results.items():
            versions = result["versions"]
            assert cluster_version in json.dumps(versions["cluster"]), (name, versions)
            assert client_version(client) in json.dumps(versions["client"]), (name, versions)
        watchers = results["watchers_rados"]["images"]
        assert [i["spec"] for i in watchers] == [image] and watchers[0]["watchers"] == []
    elif expected == "clear error":
        assert sorted(failed) == sorted(results), "documented as a clear error, but some worked: %s" % results
        for name, message in failed.items():
            # Both versions, the cause, and the ways out, in the user's words.
            assert client_version(client) in message, (name, message)
            assert "aes256k" in message, (name, message)
            assert "cephadm shell" in message and "command_prefix" in message, (name, message)
    else:
        pytest.fail("docs/ceph-releases.md: cell (client %s, cluster %s) is %r, not 'works' or 'clear error'"
                    % (client, release, expected))


@pytest.mark.parametrize("client", CLIENTS)
def test_execution_environment_refuses_a_client_that_cannot_read_aes256k(tmp_path, lab, client):
    """The EE's last build step, run on each client release: it passes where the client reads the
    keys current clusters make, and fails naming the version where it does not."""
    import yaml
    with open(os.path.join(REPO, "execution-environment.yml")) as handle:
        steps = yaml.safe_load(handle)["additional_build_steps"]["append_final"]
    check = [s for s in steps if "reads_key_type" in s]
    assert len(check) == 1 and check[0].startswith("RUN "), steps
    shell = tmp_path / "sh"
    shell.write_text(ceph_releases.wrapper_script(client, "/bin/sh", extra_paths=(REPO,)))
    shell.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".cache", "collections"), PATH=machine_path(lab))
    proc = subprocess.run([str(shell), "-c", check[0][len("RUN "):]], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    if documented_matrix()[(client, "20")] == "works":
        assert proc.returncode == 0, proc.stdout
    else:
        assert proc.returncode == 1 and client_version(client) in proc.stdout and "aes256k" in proc.stdout, proc.stdout
        # The documented way to build an EE for older clusters only.
        env["VOLFENCE_CEPH_CLIENT_CHECK"] = "off"
        assert subprocess.run([str(shell), "-c", check[0][len("RUN "):]], env=env, timeout=120).returncode == 0

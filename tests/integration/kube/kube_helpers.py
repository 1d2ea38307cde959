"""Helpers for the Kubernetes API tests (imported by conftest.py and the tests).

By default every test talks HTTP to an in-process kubeemu (tests/lab/kubeemu) on a
free loopback port.  When the environment variable KUBECONFIG is set, the same
tests run against that cluster instead; tests that need the emulator's admin API
(fault injection, request log, version switching, ...) are skipped then.
"""

import json
import os
import subprocess
import sys
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LAB_DIR = os.path.join(REPO, "tests", "lab")
if LAB_DIR not in sys.path:
    sys.path.insert(0, LAB_DIR)


REAL_CLUSTER = bool(os.environ.get("KUBECONFIG"))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
VENV_PYTHON = os.path.join(VENV_BIN, "python") if os.path.exists(os.path.join(VENV_BIN, "python")) \
    else sys.executable
EMULATOR_ONLY = "emulator-only test: KUBECONFIG is set, so these tests run against a real cluster"


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def status_body(exc):
    """The Status object of an ApiException."""
    return json.loads(exc.body)


class Admin:
    """Client for the emulator admin API (/_emulator/...)."""

    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + "/_emulator/" + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def fault(self, **spec):
        return self.call("POST", "faults", spec)

    def clear_faults(self):
        return self.call("DELETE", "faults")

    def requests(self, method=None, path_regex=None, since=0):
        q = []
        if method:
            q.append("method=" + method)
        if path_regex:
            q.append("path_regex=" + urllib.request.quote(path_regex))
        if since:
            q.append("since=%d" % since)
        return self.call("GET", "requests" + ("?" + "&".join(q) if q else ""))["items"]

    def last_seq(self):
        items = self.requests()
        return items[-1]["seq"] if items else 0

    def version(self, git_version=None):
        if git_version:
            return self.call("POST", "version", {"gitVersion": git_version})
        return self.call("GET", "version")

    def seed(self, *objs):
        return self.call("POST", "objects", {"items": list(objs)})["items"]


def ansible_playbook(tmp_path, kubeconfig, playbook_yaml, extra_vars=None, timeout=120):
    """Run a playbook on localhost with the venv python and kubernetes.core."""
    pb = tmp_path / "playbook.yml"
    pb.write_text(playbook_yaml)
    inv = tmp_path / "inventory.ini"
    inv.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % VENV_PYTHON)
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    cfg = tmp_path / "ansible.cfg"  # keep the repository's ansible.cfg out of it
    cfg.write_text("[defaults]\n")
    env = dict(os.environ)
    env.update({
        "K8S_AUTH_KUBECONFIG": kubeconfig,
        "TMPDIR": str(tmp),  # kubernetes.core keeps its discovery cache in $TMPDIR
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
        "ANSIBLE_CONFIG": str(cfg),
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "1",
    })
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(inv), str(pb)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, cwd=str(tmp_path))

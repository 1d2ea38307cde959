"""Helpers for the Kubernetes API tests (imported by conftest.py and the tests).

By default every test talks HTTP to an in-process kubeemu (the package under test) on a
free loopback port.  When the environment variable KUBECONFIG is set, the same
tests run against that cluster instead; tests that need the emulator's admin API
(fault injection, request log, version switching, ...) are skipped then.
"""

import json
import os
import subprocess
import sys
import uuid

from kubeemu.client import Admin  # noqa: F401  (the admin API client the tests use, imported from here)

REAL_CLUSTER = bool(os.environ.get("KUBECONFIG"))
# The environment running the tests (the project's .venv): its ansible-playbook and Python.
VENV_BIN = os.path.dirname(sys.executable)
VENV_PYTHON = sys.executable
EMULATOR_ONLY = "emulator-only test: KUBECONFIG is set, so these tests run against a real cluster"


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def status_body(exc):
    """The Status object of an ApiException."""
    return json.loads(exc.body)


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

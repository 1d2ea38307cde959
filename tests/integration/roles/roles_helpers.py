"""Helpers of the role tests (tests/integration/roles): the locally served CSI-Addons manifests, an
isolated Kubernetes API emulator with just enough controllers, running the roles with
ansible-playbook, and running the molecule scenarios.

A plain module with its own name (not conftest): several conftest.py files exist under
tests/integration."""

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import time

from kubeemu.client import Admin, KubeClient
from kubeemu.csi import NetworkFenceStandIn, csiaddons_crds

from labtools import (  # noqa: F401
    ANSIBLE_BIN, CSI_ADDONS_FIXTURE, REPO, ansible_env, build_release_mirror, module_interpreter, python_starters_env,
    run_playbook)

NF_API = "/apis/csiaddons.openshift.io/v1alpha1"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
CONTROLLER_AGENT = "roles-test-controllers"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class FixtureServer(object):
    """A folder (a release mirror from build_release_mirror) over HTTP on 127.0.0.1 (a free port), in a
    thread; records the paths asked for."""

    def __init__(self, root):
        self.root = root
        self.paths = []
        server = self

        class Handler(_QuietHandler):
            def do_GET(self):
                server.paths.append(self.path)
                return _QuietHandler.do_GET(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=root))
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fixture-http", daemon=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class Cluster(object):
    """An isolated emulator (tools/kubeemu) for one test: no lab controllers, so that tests can
    install and remove CRDs freely. A thread plays the Deployment controller (a Deployment is
    available once created) and, with `fences`, kubeemu's CSI-Addons stand-in answers every
    NetworkFence (Succeeded). Their requests carry CONTROLLER_AGENT, which writes_since() leaves out."""

    def __init__(self, tmp_path, fences=False):
        from kubeemu.server import EmulatorServer
        self.srv = EmulatorServer(port=0).start()
        self.url = self.srv.url
        self.kubeconfig = self.srv.write_kubeconfig(str(tmp_path / "kubeconfig"))
        self.kube = KubeClient(self.url, timeout=30, user_agent="roles-test")
        self.admin = Admin(self.url)
        controllers = KubeClient(self.url, timeout=30, user_agent=CONTROLLER_AGENT)
        self.stand_in = NetworkFenceStandIn(controllers, finalizer=False) if fences else None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._deployments, args=(controllers,), name=CONTROLLER_AGENT,
                                       daemon=True)
        self.thread.start()
        if self.stand_in:
            self.stand_in.start()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        if self.stand_in:
            self.stand_in.stop()
        self.srv.stop()

    # -- plain API access
    def get(self, path):
        return self.kube.find(path)

    def items(self, path):
        obj = self.get(path)
        return [] if obj is None else obj["items"]

    def names(self, path):
        return sorted(o["metadata"]["name"] for o in self.items(path))

    def create(self, path, body):
        return self.kube.create(path, body)

    def store(self, objects):
        """Objects stored as they are (status kept), through the emulator's admin API."""
        return self.admin.seed(*objects)

    def load_lab_crds(self):
        for crd in csiaddons_crds():
            self.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)

    # -- request log
    def last_seq(self):
        return self.admin.last_seq()

    def writes_since(self, seq):
        return [(r["method"], r["path"]) for r in self.admin.requests(since=seq)
                if r["method"] in WRITES and r.get("user_agent") != CONTROLLER_AGENT and not _dry_run(r)]

    # -- the Deployment controller
    def _deployments(self, controllers):
        while not self.stop.wait(0.2):
            try:
                for dep in controllers.list("deployments"):
                    meta = dep["metadata"]
                    want = dep.get("spec", {}).get("replicas", 1)
                    status = {"replicas": want, "readyReplicas": want, "availableReplicas": want,
                              "updatedReplicas": want, "observedGeneration": meta.get("generation", 1)}
                    if dep.get("status") != status:
                        controllers.patch("deployments", meta["name"], {"status": status}, meta["namespace"],
                                          subresource="status")
            except Exception:  # the served API may be changing under the test (CRDs removed): keep going
                pass


def _dry_run(entry):
    """A server-side dry run (dryRun=All, what kubernetes.core sends in check mode) writes nothing."""
    value = (entry.get("params") or {}).get("dryRun")
    if isinstance(value, list):
        value = value[0] if value else None
    return value == "All"


def node(name, addresses, ready="True", labels=None):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"addresses": [{"type": t, "address": a} for t, a in addresses],
                       "conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": now,
                                       "lastTransitionTime": now}]}}


# ----------------------------------------------------------------------------- running the roles

INVENTORY = """all:
  hosts:
    localhost:
      ansible_connection: local
      ansible_python_interpreter: {python}
"""

PLAYBOOK = """---
- name: Role test
  hosts: localhost
  gather_facts: false
  roles:
    - role: volfence.csi.{role}
"""


class RoleRunner(object):
    """ansible-playbook with one role on localhost (the venv python); role variables as extra vars."""

    def __init__(self, tmp_path, role, kubeconfig):
        self.dir = tmp_path
        self.role = role
        self.kubeconfig = kubeconfig
        self.inventory = str(tmp_path / "inventory.yml")
        with open(self.inventory, "w") as handle:
            handle.write(INVENTORY.format(python=json.dumps(module_interpreter())))
        self.playbook = str(tmp_path / ("%s.yml" % role))
        with open(self.playbook, "w") as handle:
            handle.write(PLAYBOOK.format(role=role))

    def run(self, check=False, diff=False, **role_vars):
        role_vars.setdefault("%s_kubeconfig" % self.role, self.kubeconfig)
        run = run_playbook(self.inventory, self.playbook, extra_vars=role_vars, check=check, diff=diff,
                           extra_env={"TMPDIR": str(self.dir)})
        results = run.results("localhost")
        run.failed = [r for r in results if r.get("failed")]
        run.changed_tasks = [r["_task"] for r in results if r.get("changed")]
        run.facts = {}
        for result in results:
            run.facts.update(result.get("ansible_facts") or {})
        run.msg = run.failed[0].get("msg") if run.failed else None
        return run


    def refusals(self, cases):
        """Runs the role once per case (role variables) in ONE playbook, each in a block/rescue, and
        returns, per case, the error message it failed with (None if it did not fail)."""
        tasks = []
        for index, case in enumerate(cases):
            variables = dict(case)
            variables.setdefault("%s_kubeconfig" % self.role, self.kubeconfig)
            tasks.append({
                "name": "Case %d" % index,
                "block": [
                    {"name": "Case %d | the role" % index, "ansible.builtin.include_role": {"name": "volfence.csi." + self.role},
                     "vars": variables},
                    {"name": "Case %d | not refused" % index, "ansible.builtin.set_fact": {"refusal_%d" % index: None}},
                ],
                "rescue": [{"name": "Case %d | refused" % index,
                            "ansible.builtin.set_fact": {"refusal_%d" % index: "{{ ansible_failed_result.msg }}"}}],
            })
        playbook = str(self.dir / ("%s-refusals.yml" % self.role))
        with open(playbook, "w") as handle:
            json.dump([{"name": "Refusals", "hosts": "localhost", "gather_facts": False, "tasks": tasks}], handle, indent=1)
        run = run_playbook(self.inventory, playbook, extra_env={"TMPDIR": str(self.dir)})
        facts = {}
        for result in run.results("localhost"):
            facts.update(result.get("ansible_facts") or {})
        return [facts.get("refusal_%d" % index, "(case not run)") for index in range(len(cases))]


# ----------------------------------------------------------------------------- molecule

def run_molecule(scenario, tmp_path, env_extra, timeout=600):
    """`molecule test -s <scenario>` from the repository root; returns (rc, output)."""
    env = ansible_env(env_extra)
    env.update(python_starters_env())   # molecule runs ansible-playbook: the lab's interpreters may use them
    env.update({
        "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path / "molecule"),
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ANSIBLE_FORCE_COLOR": "0",
        "NO_COLOR": "1",
        "PY_COLORS": "0",
        "TMPDIR": str(tmp_path),
    })
    env.pop("ANSIBLE_CONFIG", None)  # molecule writes and uses its own
    started = time.time()
    proc = subprocess.run([os.path.join(ANSIBLE_BIN, "molecule"), "test", "-s", scenario], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)
    output = proc.stdout
    with open(str(tmp_path / ("molecule-%s.log" % scenario)), "w") as handle:
        handle.write(output)
    print("molecule test -s %s: rc=%d in %.0f s" % (scenario, proc.returncode, time.time() - started))
    return proc.returncode, output


def molecule_failure(output, lines=80):
    """The interesting end of a failed molecule run, without the collection listing."""
    kept = [ln for ln in output.splitlines() if "Found installed collection" not in ln]
    return "\n".join(kept[-lines:])


if __name__ == "__main__":
    # By hand: build the release mirror and serve it, for `molecule test -s csi_addons` (molecule/README.md).
    import tempfile
    mirror_root = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="csi-addons-mirror-")
    build_release_mirror(mirror_root)
    with FixtureServer(mirror_root) as server:
        print("VOLFENCE_CSI_ADDONS_SOURCE=%s/%s" % (server.url, CSI_ADDONS_FIXTURE), flush=True)
        print("directory mirror: %s (Ctrl-C stops the server)" % os.path.join(mirror_root, CSI_ADDONS_FIXTURE), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass

"""Helpers of the volfence.csi Kubernetes module tests (a unique module name: several conftest.py
files share the name "conftest").

* Kube: the tests' own client for setup and checks (kubeemu.client, with the credentials of any
  kubeconfig: emulator or real cluster). Independent of the collection's code under test.
* Admin: the emulator's admin API (faults, request log, version).
* AnsibleRunner: runs a module ad hoc through `ansible`, as a user would, and returns the task
  result.
The CSI-Addons controller stand-in for NetworkFences that carry a test label is kubeemu.csi's
(conftest.py, fixture stand_in).
"""

import json
import os
import subprocess
import time
import uuid

from kubeemu.client import Admin as EmulatorAdmin
from kubeemu.client import ApiError as KubeError
from kubeemu.client import KubeClient
from kubeemu.csi import attachment_name  # noqa: F401  (the tests import it from here)
from kubeemu.wait import wait_until  # noqa: F401  (the tests import it from here)

from labtools import ansible_command, mode_options, module_interpreter

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

REAL_CLUSTER = bool(os.environ.get("KUBECONFIG"))
EMULATOR_ONLY = ("emulator-only: needs the emulator's admin API (faults, request log, version switch); "
                 "KUBECONFIG is set, so these tests run against a real cluster")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
GROUP = "csiaddons.openshift.io"
VERSION = "v1alpha1"
FENCES = "/apis/%s/%s/networkfences" % (GROUP, VERSION)
CLASSES = "/apis/%s/%s/networkfenceclasses" % (GROUP, VERSION)
VAS = "/apis/storage.k8s.io/v1/volumeattachments"
MODULE_USER_AGENT = "volfence.csi/"
TEST_LABEL = "volfence.io/test"
# The parameters of the tests' NetworkFenceClasses: the secret ceph-csi's provisioner reads
FENCE_CLASS_PARAMETERS = {"csiaddons.openshift.io/networkfence-secret-name": "vft-secret",
                          "csiaddons.openshift.io/networkfence-secret-namespace": "default"}


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:6])


def stamp(seconds_ago=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


class Kube(object):
    """The tests' words for their client (`client`: kubeemu.client.KubeClient, with the credentials of
    any kubeconfig: emulator or real cluster): objects by API path, get() None when missing."""

    def __init__(self, kubeconfig):
        self.client = KubeClient.from_kubeconfig(kubeconfig, timeout=30, user_agent="volfence-tests")
        self.host = self.client.server

    def request(self, method, path, body=None, query=None, missing_ok=False):
        try:
            return self.client.request(method, path, body, query=query)
        except KubeError as exc:
            if missing_ok and exc.status == 404:
                return None
            raise

    def get(self, path, missing_ok=True):
        return self.client.find(path) if missing_ok else self.client.get(path)

    def list(self, path, label_selector=None):
        return self.client.list(path, label_selector=label_selector)

    def create(self, path, body):
        return self.client.create(path, body)

    def patch(self, path, body):
        return self.client.patch(path, None, body)

    def status(self, path, status):
        return self.client.patch(path, None, {"status": status}, subresource="status")

    def delete(self, path):
        return self.client.delete(path)

    def force_delete(self, path):
        """Delete, removing finalizers first."""
        obj = self.get(path)
        if obj is None:
            return
        if obj["metadata"].get("finalizers"):
            try:
                self.patch(path, {"metadata": {"finalizers": None}})
            except KubeError:
                pass
        self.client.delete(path, grace_period=0)

    def served(self, group_version, plural):
        doc = self.get("/apis/" + group_version)
        return bool(doc) and any(r["name"] == plural for r in doc.get("resources", []))

    def version(self):
        return self.get("/version")["gitVersion"]


class Admin(EmulatorAdmin):
    """The emulator's admin API, with the requests the modules sent (their User-Agent)."""

    def module_requests(self, since):
        """Requests the modules sent (their User-Agent), after `since`."""
        return [r for r in self.requests(since) if (r.get("user_agent") or "").startswith(MODULE_USER_AGENT)]

    def module_writes(self, since):
        return [r for r in self.module_requests(since) if r["method"] != "GET"]


def module_requests(kube, since):
    """The modules' requests (their User-Agent) in the emulator's log after `since`, or None on a real
    cluster (it has no request log)."""
    try:
        log = kube.request("GET", "/_emulator/requests", query={"since": since})
    except KubeError:
        return None
    return [r for r in log.get("items", []) if (r.get("user_agent") or "").startswith(MODULE_USER_AGENT)]


def last_seq(kube):
    """The sequence number of the emulator's last logged request (0 on a real cluster)."""
    try:
        return max([r["seq"] for r in kube.request("GET", "/_emulator/requests", query={"tail": 1}).get("items", [])]
                   or [0])
    except KubeError:
        return 0


def assert_refused_before_any_call(ansible, target, module, args, message):
    """`module` run with the bad input `args` fails with `message` in its msg, and on the emulator its
    request log shows not one request of the module (elsewhere, the message alone is checked)."""
    admin = Admin(target["emulator"].url) if target["emulator"] is not None else None
    since = admin.last_seq() if admin else 0
    result = ansible.run(module, args)
    assert result["_rc"] != 0 and message in result["msg"], result
    if admin:
        assert admin.module_requests(since) == []
    return result


class AnsibleRunner(object):
    """Runs a volfence.csi module ad hoc on localhost with the venv's python, like a user would."""

    def __init__(self, tmpdir, kubeconfig=None, inventory=None, host="localhost"):
        self.tmpdir = str(tmpdir)
        self.kubeconfig = kubeconfig
        self.host = host
        if inventory is None:
            inventory = os.path.join(self.tmpdir, "inventory.ini")
            with open(inventory, "w") as handle:
                handle.write("localhost ansible_connection=local ansible_python_interpreter=%s\n"
                             % module_interpreter())
        self.inventory = inventory
        os.makedirs(os.path.join(self.tmpdir, "tmp"), exist_ok=True)

    def env(self, extra=None):
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)   # the modules get their kubeconfig explicitly
        env.update({
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
            "ANSIBLE_CONFIG": os.path.join(self.tmpdir, "ansible.cfg"),
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_STDOUT_CALLBACK": "json",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_HOME": os.path.join(self.tmpdir, "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": os.path.join(self.tmpdir, "tmp", "ansible-local"),
            "ANSIBLE_DEPRECATION_WARNINGS": "0",
            "TMPDIR": os.path.join(self.tmpdir, "tmp"),  # kubernetes.core caches discovery there
            "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
        })
        if self.kubeconfig:
            env["K8S_AUTH_KUBECONFIG"] = self.kubeconfig
        env.update(extra or {})
        return env

    def command(self, module, args, check=False, diff=False):
        with open(os.path.join(self.tmpdir, "ansible.cfg"), "w") as handle:
            handle.write("[defaults]\nhost_key_checking = False\n")
        cmd = [os.path.join(VENV_BIN, "ansible"), self.host, "-i", self.inventory, "-m", "volfence.csi." + module]
        if args:
            cmd += ["-a", json.dumps(args)]
        return cmd + mode_options(check, diff)

    def start(self, module, args, check=False, diff=False, extra_env=None):
        env = self.env(extra_env)
        return subprocess.Popen(ansible_command(self.command(module, args, check, diff), env, REPO), cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)

    def finish(self, proc, timeout=300):
        out, err = proc.communicate(timeout=timeout)
        return self.parse(proc.returncode, out, err)

    def run(self, module, args, check=False, diff=False, extra_env=None, timeout=300):
        return self.finish(self.start(module, args, check, diff, extra_env), timeout)

    def playbook(self, text, extra_env=None, timeout=300):
        """Runs a playbook (YAML text) and returns the task results of the host, in order."""
        path = os.path.join(self.tmpdir, "playbook.yml")
        with open(path, "w") as handle:
            handle.write(text)
        self.command("ping", {})  # writes ansible.cfg
        env = self.env(extra_env)
        cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", self.inventory, path]
        proc = subprocess.run(ansible_command(cmd, env, REPO), cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
        data = json.loads(proc.stdout[proc.stdout.index("{"):])
        out = []
        for task in data["plays"][0]["tasks"]:
            result = dict(task["hosts"][self.host])
            result["_task"] = task["task"]["name"]
            out.append(result)
        return proc.returncode, out

    def parse(self, rc, out, err):
        try:
            data = json.loads(out[out.index("{"):])
        except ValueError:
            raise AssertionError("ansible printed no JSON (rc=%d)\nstdout: %s\nstderr: %s" % (rc, out, err))
        task = data["plays"][0]["tasks"][0]
        result = dict(task["hosts"][self.host])
        result["_rc"] = rc
        result["_stderr"] = err
        result["_warnings"] = [w if isinstance(w, str) else json.dumps(w) for w in result.get("warnings") or []]
        return result


class Builder(object):
    """Creates the objects of a test through the API (emulator or real cluster), labelled for clean-up."""

    def __init__(self, kube, label, cleanup):
        self.kube = kube
        self.label = label
        self.cleanup = cleanup

    def meta(self, name, **extra):
        meta = {"name": name, "labels": {TEST_LABEL: self.label}}
        meta.update(extra)
        return meta

    def namespace(self, name):
        """A Namespace of the test's own."""
        path = "/api/v1/namespaces/" + name
        self.cleanup.append(path)
        self.kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": self.meta(name)})
        return name

    def node(self, name, ip, ready="True", not_ready_for=600, taints=None, addresses=(), volumes_in_use=None):
        """A Node with InternalIP `ip` (None: no IP at all), more `addresses` ((type, address) pairs), and
        status.volumesInUse when given."""
        path = "/api/v1/nodes/" + name
        self.cleanup.append(path)
        self.kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": self.meta(name),
                                           "spec": {"taints": taints or []}})
        since = stamp(not_ready_for if ready != "True" else 3600)
        listed = [{"type": "InternalIP", "address": ip}] if ip else []
        listed += [{"type": kind, "address": address} for kind, address in addresses]
        status = {
            "addresses": listed + [{"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": ready, "reason": "test", "lastHeartbeatTime": since,
                            "lastTransitionTime": since}]}
        if volumes_in_use is not None:
            status["volumesInUse"] = list(volumes_in_use)
        self.kube.status(path, status)
        return name

    def pv(self, name, driver, handle, claim=None, attributes=None):
        path = "/api/v1/persistentvolumes/" + name
        self.cleanup.append(path)
        csi = {"driver": driver, "volumeHandle": handle}
        if attributes:
            csi["volumeAttributes"] = dict(attributes)
        spec = {"csi": csi, "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "1Gi"}, "persistentVolumeReclaimPolicy": "Retain"}
        if claim:
            spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim}
        return self.kube.create("/api/v1/persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume",
                                                              "metadata": self.meta(name), "spec": spec})

    def va(self, pv, driver, handle, node, name=None, finalizer=True, attached=True):
        name = name or attachment_name(handle, driver, node)
        path = VAS + "/" + name
        self.cleanup.append(path)
        meta = self.meta(name)
        if finalizer:
            meta["finalizers"] = ["external-attacher/" + driver.replace(".", "-")]
        self.kube.create(VAS, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": meta,
                               "spec": {"attacher": driver, "nodeName": node,
                                        "source": {"persistentVolumeName": pv}}})
        self.kube.status(path, {"attached": attached})
        return name

    def pvc(self, name, pv):
        """A claim in namespace default bound to `pv`."""
        self.cleanup.append("/api/v1/namespaces/default/persistentvolumeclaims/" + name)
        return self.kube.create("/api/v1/namespaces/default/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": self.meta(name),
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv, "resources": {"requests": {"storage": "1Gi"}}}})

    def pod(self, name, node, claim, phase=None):
        """A pod on `node` using `claim`; with `phase`, its status says so (a real cluster's kubelet may
        set it otherwise)."""
        path = "/api/v1/namespaces/default/pods/" + name
        self.cleanup.append(path)
        pod = self.kube.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": self.meta(name),
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry.invalid/none:0"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}})
        if phase:
            pod = self.kube.status(path, {"phase": phase})
        return pod

    def fence_class(self, name, provisioner, parameters=None):
        self.cleanup.append(CLASSES + "/" + name)
        return self.kube.create(CLASSES, {"apiVersion": "csiaddons.openshift.io/v1alpha1",
                                          "kind": "NetworkFenceClass", "metadata": self.meta(name),
                                          "spec": {"provisioner": provisioner, "parameters": parameters or {}}})

    def fence_target(self, driver):
        """What fencing node b takes: node b NotReady (198.51.100.12), a NetworkFenceClass of `driver` with
        FENCE_CLASS_PARAMETERS, and a Connected CSIAddonsNode of `driver` on node b. Returns the names:
        {label, labels (the test's label), b, class, fence (the test creates it)}."""
        label = self.label
        names = dict(label=label, labels={TEST_LABEL: label})
        names["b"] = self.node("vft-%s-b" % label, "198.51.100.12", ready="Unknown")
        names["class"] = "vft-%s-class" % label
        self.fence_class(names["class"], driver, FENCE_CLASS_PARAMETERS)
        self.addons_node("vft-%s-b" % label, driver, names["b"])
        names["fence"] = "vft-%s-fence-b" % label
        return names

    def addons_node(self, name, driver, node, state="Connected"):
        base = "/apis/csiaddons.openshift.io/v1alpha1/namespaces/default/csiaddonsnodes"
        self.cleanup.append(base + "/" + name)
        self.kube.create(base, {"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "CSIAddonsNode",
                                "metadata": self.meta(name, namespace="default"),
                                "spec": {"driver": {"name": driver, "nodeID": node, "endpoint": "pod://x:9070"}}})
        self.kube.status(base + "/" + name, {"state": state})

"""Helpers of the volfence.csi Kubernetes module tests (a unique module name: several conftest.py
files share the name "conftest").

* Kube: a small JSON client for the tests' own setup and checks, built on the kubernetes
  library's configuration loading (any kubeconfig: emulator or real cluster). Independent
  of the collection's code under test.
* Admin: the emulator's admin API (faults, request log, version).
* AnsibleRunner: runs a module ad hoc through `ansible`, as a user would, and returns the task
  result.
* StandIn: a minimal CSI-Addons controller for NetworkFences that carry a test label: answers
  each new generation with status.result/message, and removes finalizers on deletion. Used
  where nothing else acts on fences (emulator, or a real cluster with a fake driver).
"""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LAB_DIR = os.path.join(REPO, "tests", "lab")
if LAB_DIR not in sys.path:
    sys.path.insert(0, LAB_DIR)

REAL_CLUSTER = bool(os.environ.get("KUBECONFIG"))
EMULATOR_ONLY = ("emulator-only: needs the emulator's admin API (faults, request log, version switch); "
                 "KUBECONFIG is set, so these tests run against a real cluster")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
VENV_PYTHON = os.path.join(VENV_BIN, "python")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
GROUP = "csiaddons.openshift.io"
VERSION = "v1alpha1"
FENCES = "/apis/%s/%s/networkfences" % (GROUP, VERSION)
CLASSES = "/apis/%s/%s/networkfenceclasses" % (GROUP, VERSION)
VAS = "/apis/storage.k8s.io/v1/volumeattachments"
MODULE_USER_AGENT = "volfence.csi/"
TEST_LABEL = "volfence.io/test"


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:6])


def wait_until(predicate, timeout=20.0, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def stamp(seconds_ago=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


class KubeError(Exception):
    def __init__(self, status, body):
        super(KubeError, self).__init__("%s: %s" % (status, body[:300]))
        self.status = status
        self.body = body


class Kube(object):
    """JSON requests with the credentials of a kubeconfig."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config
        self.cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=self.cfg)
        self.api = client.ApiClient(self.cfg)
        self.pool = self.api.rest_client.pool_manager
        self.host = self.cfg.host.rstrip("/")

    def request(self, method, path, body=None, content_type="application/json", missing_ok=False, query=None):
        headers = {"Accept": "application/json", "User-Agent": "volfence-tests"}
        for auth in (self.cfg.auth_settings() or {}).values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        url = self.host + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        resp = self.pool.request(method, url, body=data, headers=headers, retries=False, timeout=30)
        if resp.status == 404 and missing_ok:
            return None
        if resp.status >= 300:
            raise KubeError(resp.status, resp.data.decode("utf-8", "replace"))
        return json.loads(resp.data or b"{}")

    def get(self, path, missing_ok=True):
        return self.request("GET", path, missing_ok=missing_ok)

    def list(self, path, label_selector=None):
        return self.request("GET", path, query={"labelSelector": label_selector} if label_selector else None)["items"]

    def create(self, path, body):
        return self.request("POST", path, body)

    def patch(self, path, body):
        return self.request("PATCH", path, body, "application/merge-patch+json")

    def status(self, path, status):
        return self.request("PATCH", path + "/status", {"status": status}, "application/merge-patch+json")

    def delete(self, path):
        return self.request("DELETE", path, missing_ok=True)

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
        self.request("DELETE", path + "?gracePeriodSeconds=0", missing_ok=True)

    def served(self, group_version, plural):
        doc = self.get("/apis/" + group_version)
        return bool(doc) and any(r["name"] == plural for r in doc.get("resources", []))

    def version(self):
        return self.get("/version")["gitVersion"]


class Admin(object):
    """The emulator's admin API (/_emulator/...)."""

    def __init__(self, url):
        self.url = url.rstrip("/")

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

    def faults(self):
        return self.call("GET", "faults")

    def requests(self, since=0, method=None):
        query = ["since=%d" % since] if since else []
        if method:
            query.append("method=" + method)
        return self.call("GET", "requests" + ("?" + "&".join(query) if query else ""))["items"]

    def last_seq(self):
        items = self.requests()
        return items[-1]["seq"] if items else 0

    def module_requests(self, since):
        """Requests the modules sent (their User-Agent), after `since`."""
        return [r for r in self.requests(since) if (r.get("user_agent") or "").startswith(MODULE_USER_AGENT)]

    def module_writes(self, since):
        return [r for r in self.module_requests(since) if r["method"] != "GET"]

    def version(self, git_version=None):
        if git_version:
            return self.call("POST", "version", {"gitVersion": git_version})
        return self.call("GET", "version")

    def seed(self, *objs):
        return self.call("POST", "objects", {"items": list(objs)})["items"]


class AnsibleRunner(object):
    """Runs a volfence.csi module ad hoc on localhost with the venv's python, like a user would."""

    def __init__(self, tmpdir, kubeconfig=None, inventory=None, host="localhost"):
        self.tmpdir = str(tmpdir)
        self.kubeconfig = kubeconfig
        self.host = host
        if inventory is None:
            inventory = os.path.join(self.tmpdir, "inventory.ini")
            with open(inventory, "w") as handle:
                handle.write("localhost ansible_connection=local ansible_python_interpreter=%s\n" % VENV_PYTHON)
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
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        return cmd

    def start(self, module, args, check=False, diff=False, extra_env=None):
        return subprocess.Popen(self.command(module, args, check, diff), cwd=REPO, env=self.env(extra_env),
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
        proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", self.inventory, path], cwd=REPO,
                              env=self.env(extra_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)
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


class StandIn(threading.Thread):
    """A minimal CSI-Addons NetworkFence controller for fences labelled TEST_LABEL=<label>.

    Like the real one it reacts to generation changes only: status is set once per generation
    (Failed for fences whose CIDRs intersect `refuse`), its finalizer is added, and removed when
    the fence is deleted. `silent` fences (by name) get no answer.
    """

    FINALIZER = "csiaddons.openshift.io/network-fence"

    def __init__(self, kube, label, refuse=(), delay=0.3):
        super(StandIn, self).__init__(daemon=True)
        self.kube = kube
        self.label = label
        self.refuse = set(refuse)
        self.silent = set()
        self.delay = delay
        self.observed = {}
        self.answered = []
        self.stop = threading.Event()
        self.errors = []

    def run(self):
        while not self.stop.is_set():
            try:
                self.step()
            except Exception as exc:  # keep reconciling, like a controller
                self.errors.append(repr(exc))
            self.stop.wait(0.1)

    def step(self):
        for fence in self.kube.list(FENCES, label_selector="%s=%s" % (TEST_LABEL, self.label)):
            meta = fence["metadata"]
            path = FENCES + "/" + meta["name"]
            if meta.get("deletionTimestamp"):
                self.kube.patch(path, {"metadata": {"finalizers": [f for f in meta.get("finalizers", [])
                                                                   if f != self.FINALIZER] or None}})
                continue
            if meta["name"] in self.silent or self.observed.get(meta["name"]) == meta.get("generation"):
                continue
            if self.FINALIZER not in (meta.get("finalizers") or []):
                self.kube.patch(path, {"metadata": {"finalizers": (meta.get("finalizers") or []) + [self.FINALIZER]}})
            time.sleep(self.delay)
            spec = fence["spec"]
            bad = [c for c in spec.get("cidrs", []) if c in self.refuse]
            state = spec.get("fenceState")
            if bad:
                status = {"result": "Failed", "message": "rpc error: code = Internal desc = failed to %s %s: "
                          "permission denied" % ("fence" if state == "Fenced" else "unfence", bad[0])}
            else:
                status = {"result": "Succeeded",
                          "message": "fencing operation successful" if state == "Fenced"
                          else "unfencing operation successful"}
            self.kube.status(path, status)
            self.observed[meta["name"]] = meta.get("generation")
            self.answered.append((meta["name"], meta.get("generation"), status["result"]))


def attachment_name(handle, driver, node):
    """Kubernetes' getAttachmentName, written out again for the tests."""
    import hashlib
    return "csi-" + hashlib.sha256((handle + driver + node).encode()).hexdigest()


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

    def pod(self, name, node, claim):
        path = "/api/v1/namespaces/default/pods/" + name
        self.cleanup.append(path)
        return self.kube.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": self.meta(name),
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry.invalid/none:0"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}})

    def fence_class(self, name, provisioner, parameters=None):
        self.cleanup.append(CLASSES + "/" + name)
        return self.kube.create(CLASSES, {"apiVersion": "csiaddons.openshift.io/v1alpha1",
                                          "kind": "NetworkFenceClass", "metadata": self.meta(name),
                                          "spec": {"provisioner": provisioner, "parameters": parameters or {}}})

    def addons_node(self, name, driver, node, state="Connected"):
        base = "/apis/csiaddons.openshift.io/v1alpha1/namespaces/default/csiaddonsnodes"
        self.cleanup.append(base + "/" + name)
        self.kube.create(base, {"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "CSIAddonsNode",
                                "metadata": self.meta(name, namespace="default"),
                                "spec": {"driver": {"name": driver, "nodeID": node, "endpoint": "pod://x:9070"}}})
        self.kube.status(base + "/" + name, {"state": state})

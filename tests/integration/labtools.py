"""What integration tests use to reach the lab and run Ansible against it.

A plain module (not conftest) so test files can import it by name: several conftest.py files
exist under tests/integration and pytest would hand a test the wrong one."""

import contextlib
import errno
import glob
import json
import os
import subprocess
import threading
import time
import uuid

import pytest
from kubeemu.client import ApiError
from kubeemu.wait import wait_until  # noqa: F401  (the tests' one way to wait, imported from here)
# The tests run Ansible as the benchmarks do (volfence_lab.ansible_runs): imported from here.
from volfence_lab.ansible_runs import (  # noqa: F401
    RUN_OBSERVERS,
    VENV_BIN as ANSIBLE_BIN,
    AnsibleRun,
    ansible_command,
    ansible_env,
    mode_options,
    module_interpreter,
    python_starters_env,
    run_module,
    run_playbook,
)
from volfence_lab.lab import TIMINGS_ENV, TIMINGS_PREFIX
from volfence_lab.lab import read_env as read_lab_env  # noqa: F401  (the lab's own rule for where a lab lives)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Seconds of the current test by kind of work (conftest.py writes them per test for the report of
# scripts/run_tests.py): the lab's CLI (building scenarios, holders, nodes) and what it waited for,
# Ansible's start-up and its tasks, the Ceph CLI. Waiting in the test itself is kubeemu's WAITED.
SPENT = {}


def spent(kind, seconds):
    SPENT[kind] = SPENT.get(kind, 0.0) + seconds


@contextlib.contextmanager
def timed(kind):
    started = time.monotonic()
    try:
        yield
    finally:
        spent(kind, time.monotonic() - started)


# The lab's command (tools/lab), as `make lab-up` runs it: from the project virtualenv, where make setup
# installs it (also when a test runs under another Python, as the bindings tests do).
LAB_CLI = [os.path.join(REPO, ".venv", "bin", "python"), "-m", "volfence_lab"]


class Lab(object):
    """The running lab as tests see it: Ceph CLI access and node-side holders."""

    def __init__(self, env):
        self.env = env
        self.dir = env["LAB_DIR"]
        self.conf = env["CEPH_CONF"]
        self.keyring = env["CEPH_KEYRING"]
        self.user = env["CEPH_USER"]
        self.pool = env.get("CEPH_POOL", "rbd")
        self.nodes = dict(item.split("=", 1) for item in env["LAB_NODES"].split())
        self._lab_env = dict(os.environ, LAB_DIR=self.dir, LAB_PREFIX=env["LAB_PREFIX"],
                             LAB_SLOT=env["LAB_SLOT"], LAB_NODES=env["LAB_NODES"])
        self._session = CephSession(self)

    def tool(self, name):
        """A Ceph program of the lab's release (<lab>/ceph-bin), as the lab's own clients use."""
        ceph_bin = self.env.get("LAB_CEPH_BIN")
        return os.path.join(ceph_bin, name) if ceph_bin else name

    def ceph_args(self):
        return ["-c", self.conf, "-k", self.keyring, "-n", "client." + self.user]

    def cli(self, tool, *args, check=True):
        proc = self._session.run(args) if tool == "ceph" else None
        if proc is None:
            with timed("ceph CLI"):
                proc = subprocess.run([self.tool(tool)] + self.ceph_args() + list(args), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError("%s %s failed rc=%d: %s" % (tool, " ".join(args), proc.returncode, proc.stderr))
        return proc

    def ceph(self, *args):
        return self.cli("ceph", *args).stdout

    def rbd(self, *args):
        return self.cli("rbd", *args).stdout

    def watchers(self, image):
        return json.loads(self.rbd("status", image, "--format", "json"))["watchers"]

    def locks(self, image):
        """The image's advisory locks as `rbd lock ls` lists them ({id, locker, address})."""
        return json.loads(self.rbd("lock", "ls", image, "--format", "json"))

    def new_image(self, prefix="img", size="16"):
        name = "%s/%s-%s" % (self.pool, prefix, uuid.uuid4().hex[:8])
        self.rbd("create", name, "--size", size)
        return name

    def lab(self, *args):
        started = time.monotonic()
        proc = subprocess.run(LAB_CLI + list(args), env=dict(self._lab_env, **{TIMINGS_ENV: "1"}),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        total = time.monotonic() - started
        waiting = 0.0
        for line in proc.stderr.splitlines():
            if line.startswith(TIMINGS_PREFIX):
                waiting = json.loads(line[len(TIMINGS_PREFIX):])["waiting"]
        spent("lab CLI %s: waiting for the lab" % args[0], waiting)
        spent("lab CLI %s: working" % args[0], total - waiting)
        if proc.returncode != 0:
            raise AssertionError("lab.py %s failed: %s %s" % (" ".join(args), proc.stdout, proc.stderr))
        return proc.stdout

    def hold(self, node, image, lock_id=None):
        args = ["hold", node, image] + (["--lock-id", lock_id] if lock_id else [])
        return json.loads(self.lab(*args))

    def release(self, node=None, image=None):
        return self.lab(*(["release"] + ([node] if node else []) + ([image] if image else [])))

    def unblock_all(self):
        self.ceph("osd", "blocklist", "clear")


class CephSession(object):
    """The tests' `ceph` commands over one connection (ceph_session.py, under the lab release's Python),
    started at the first command. run() answers as the CLI would, or None for what it does not send (a
    word starting with '-' other than a last `--format X`, tell, daemon): the caller runs the CLI."""

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ceph_session.py")
    CLI_ONLY = ("tell", "daemon", "daemonperf")

    def __init__(self, lab):
        self._lab = lab
        self._proc = None
        self._broken = None
        self._lock = threading.Lock()

    @classmethod
    def request(cls, args):
        words, output_format = list(args), None
        if len(words) >= 2 and words[-2] == "--format":
            words, output_format = words[:-2], words[-1]
        if not words or words[0] in cls.CLI_ONLY or any(w.startswith("-") for w in words):
            return None
        return {"args": words, "format": output_format}

    def run(self, args):
        request = self.request(args)
        if request is None or self._broken:
            return None
        with self._lock, timed("ceph session"):
            try:
                if self._proc is None:
                    self._start()
                self._proc.stdin.write(json.dumps(request) + "\n")
                self._proc.stdin.flush()
                reply = json.loads(self._proc.stdout.readline())
            except (OSError, ValueError) as exc:
                self._broken = "%s: %s" % (type(exc).__name__, exc)
                return None
        if reply["rc"] == -1:  # the session could not send it: the CLI does
            return None
        return subprocess.CompletedProcess(["ceph"] + list(args), reply["rc"], reply["stdout"], reply["stderr"])

    def _start(self):
        lab = self._lab
        self._proc = subprocess.Popen([lab.tool("ceph-python3"), self.SCRIPT, lab.conf, lab.keyring, lab.user],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      universal_newlines=True)
        hello = json.loads(self._proc.stdout.readline() or "null")
        if not hello or hello.get("rc") != 0:
            raise OSError("ceph_session.py did not connect")


# ----------------------------------------------------------------------------- running Ansible
# (volfence_lab.ansible_runs, imported above; each run's seconds go to the test's timing report)

def _count_ansible_seconds(run):
    spent("ansible: start-up", run.startup_seconds)
    spent("ansible: tasks", run.seconds - run.startup_seconds)


RUN_OBSERVERS.append(_count_ansible_seconds)


def playbook_path(name):
    """The checkout's playbooks/<name>.yml: the tests run the playbooks as they are in the tree."""
    return os.path.join(REPO, "playbooks", name + ".yml")


def incident_fixture(scenario):
    """A test fixture that builds the lab's incident `scenario` (conftest.py's `incident`: undone after the
    test) and gives (its state, the Kubernetes client)."""
    @pytest.fixture
    def built_incident(kube, incident):
        return incident(scenario), kube
    return built_incident


def lab_subnet(lab):
    """The first three octets of the lab's node network (e.g. 10.231.138)."""
    return lab.nodes["node-a"].rsplit(".", 1)[0]


def ceph_args(lab, backend, **extra):
    """The options a Ceph module needs to reach the lab's cluster with `backend`."""
    args = dict(conf=lab.conf, keyring=lab.keyring, user=lab.user, backend=backend, timeout=20)
    args.update(extra)
    return args


def json_documents(text):
    """The JSON documents of a text printed back to back (`osd blocklist ls`: addresses, then ranges)."""
    text, docs, index = text.strip(), [], 0
    decoder = json.JSONDecoder()
    while index < len(text):
        doc, index = decoder.raw_decode(text, index)
        docs.append(doc)
        while index < len(text) and text[index].isspace():
            index += 1
    return docs


def blocklist_until(lab):
    """{entry: until} of the blocklist, entries as `ceph osd blocklist ls` prints them (ranges as cidr:...)."""
    docs = json_documents(lab.ceph("osd", "blocklist", "ls", "--format", "json"))
    if len(docs) == 1 and isinstance(docs[0], dict):  # one object (ceph/ceph#65681)
        docs = [docs[0].get("blocklist", []), docs[0].get("range_blocklist", [])]
    entries = dict((e["addr"], e.get("until")) for e in docs[0])
    entries.update(("cidr:" + e["range"], e.get("until")) for e in (docs[1] if len(docs) > 1 else []))
    return entries


def blocklist_entries(lab):
    """The blocklist as `ceph osd blocklist ls` prints it: addresses, and ranges as cidr:..., sorted."""
    return sorted(blocklist_until(lab))


def run_refused(lab, inventory, backend, module, args, sentinel):
    """Run volfence.csi.<module> with bad `args` on `backend` ((inventory host, backend name)): it must
    fail and leave the blocklist as it was, with an entry for <lab subnet>.<sentinel> put there first so
    that "as it was" is not empty. Returns the result (for the checks of its message)."""
    host, name = backend
    lab.ceph("osd", "blocklist", "add", "%s.%d" % (lab_subnet(lab), sentinel), "600")
    before = blocklist_entries(lab)
    params = ceph_args(lab, name)
    params.update(args)   # bad input may name the backend too
    result = run_module(inventory, host, "volfence.csi." + module, params)
    assert result.get("failed") is True, result
    assert blocklist_entries(lab) == before
    return result


def lab_kube(lab):
    """A client of the lab's Kubernetes API, or None when the lab has no Kubernetes side."""
    path = os.path.join(lab.dir, "kubeconfig")
    if not os.path.exists(path):
        return None
    from kubeemu.client import KubeClient, server_from_kubeconfig
    return KubeClient(server_from_kubeconfig(path))


# The RBAC the collection ships (issue 45): the tests run the playbooks under it
RBAC_MANIFESTS = os.path.join(REPO, "rbac", "kubernetes")
_RBAC_PATHS = {
    "Namespace": "/api/v1/namespaces", "ServiceAccount": "/api/v1/namespaces/%s/serviceaccounts",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
}


def shipped_rbac(name):
    """The objects of the shipped file rbac/kubernetes/<name>.yml (one v1 List, as kubectl applies it)."""
    import yaml
    with open(os.path.join(RBAC_MANIFESTS, name + ".yml")) as handle:
        document = yaml.safe_load(handle)
    assert document["kind"] == "List", name
    return document["items"]


def _collection_path(obj):
    path = _RBAC_PATHS[obj["kind"]]
    return path % obj["metadata"]["namespace"] if "%s" in path else path


def apply_objects(kube, objects):
    """Create or replace each object, as `kubectl apply` of the file would (a merge patch replaces the lists:
    a rule taken out of a role is gone)."""
    for obj in objects:
        kube.apply(_collection_path(obj), obj)


def delete_objects(kube, objects):
    """Delete what apply_objects made, last first (the Namespace, with what is in it, at the end)."""
    for obj in reversed(objects):
        kube.delete(_collection_path(obj) + "/" + obj["metadata"]["name"])


def revive_node(lab, kube, node):
    """The node back as after a reboot (old clients gone, kubelet back), once it is Ready again."""
    lab.lab("revive-node", node)
    assert wait_until(lambda: [c for c in kube.get("nodes", node)["status"]["conditions"]
                               if c["type"] == "Ready"][0]["status"] == "True", timeout=15)


def service_account_kubeconfig(lab, kube, namespace, name, path):
    """A kubeconfig of the lab's API server with a token of the ServiceAccount (a TokenRequest, what
    `kubectl create token` asks), written to `path`; the path."""
    import yaml
    token = kube.request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name), {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": []}})
    with open(os.path.join(lab.dir, "kubeconfig")) as handle:
        config = yaml.safe_load(handle)
    for user in config["users"]:
        user["user"] = {"token": token["status"]["token"]}
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return str(path)


def assert_fuse_pod_replaced(kube, state):
    """After the recovery of the dead-fuse-mount scenario `state`: its stuck pod is gone, one new pod of its
    Deployment runs, and that pod's volume is a live FUSE mount again. Returns the new pod."""
    assert kube.find("pods", state["pod"], "default") is None
    running = [p for p in kube.list("pods", "default", label_selector="app=" + state["deployment"])
               if p["status"].get("phase") == "Running"]
    assert len(running) == 1 and running[0]["metadata"]["uid"] != state["pod_uid"]
    new_mount = state["mount"].replace(state["pod_uid"], running[0]["metadata"]["uid"])
    assert wait_until(lambda: os.path.isdir(new_mount) and os.listdir(new_mount) is not None)
    return running[0]


def remove_incident(kube, state):
    """Take away what a scenario built for a test: its Deployment or StatefulSet, and for dead-fuse-mount
    the dead mount (the seed's manual fix, `umount -l`), else its pod stays Terminating for good, as on a
    real node: kubelet cannot tear a dead FUSE mount down. A test that only read or ran in check mode
    leaves it dead, and a later failover of that node would find a volume it cannot make safe."""
    if state.get("scenario") == "dead-fuse-mount":
        try:
            os.stat(state["mount"])
        except OSError as exc:
            if exc.errno == errno.ENOTCONN:
                subprocess.run(["umount", "-l", state["mount"]], check=True)
    if state.get("deployment"):
        kube.delete("deployments", state["deployment"], state.get("namespace", "default"))
    if state.get("statefulset"):
        kube.delete("statefulsets", state["statefulset"], state.get("namespace", "default"))


def running_elsewhere(kube, app, failed="node-b"):
    """The Running pods of `app` (label app=<app>, namespace default) on another node than `failed`, not being deleted."""
    return [p for p in kube.list("pods", "default", label_selector="app=" + app) if p["status"].get("phase") == "Running"
            and p["spec"].get("nodeName") != failed and not p["metadata"].get("deletionTimestamp")]


def clear_foreign_attachments(kube, lab_driver="rbd.csi.ceph.com"):
    """Remove VolumeAttachments of drivers that have no attacher in the lab (stale-volumeattachment's csi-unity):
    nothing would ever drop their finalizer, and a later failover of that node would wait on them."""
    for va in kube.list("volumeattachments"):
        if va["spec"].get("attacher") != lab_driver:
            if va["metadata"].get("finalizers"):
                kube.patch("volumeattachments", va["metadata"]["name"], {"metadata": {"finalizers": []}})
            kube.delete("volumeattachments", va["metadata"]["name"])


# ----------------------------------------------------------------------------- CSI-Addons release assets

ROLE_FIXTURES = os.path.join(REPO, "tests", "roles", "fixtures")
CSI_ADDONS_FIXTURE = "csi-addons/v0.14.0"
RELEASE_ASSETS = ("crds", "rbac", "setup-controller")


def build_release_mirror(root):
    """A CSI-Addons release mirror under `root`: <root>/csi-addons/v0.14.0/{crds,rbac,setup-controller}.yaml,
    each the multi-document YAML a release asset is, assembled from the single-document fixtures in
    tests/roles/fixtures/csi-addons/v0.14.0/<asset>/ (single documents, because ansible-test's yamllint
    refuses multi-document YAML in the repository). Returns the release folder. The role tests and the
    battery install CSI-Addons from it: never a download."""
    folder = os.path.join(str(root), CSI_ADDONS_FIXTURE)
    os.makedirs(folder, exist_ok=True)
    for asset in RELEASE_ASSETS:
        parts = sorted(glob.glob(os.path.join(ROLE_FIXTURES, CSI_ADDONS_FIXTURE, asset, "*.yaml")))
        assert parts, "no fixture documents for %s" % asset
        with open(os.path.join(folder, asset + ".yaml"), "w") as out:
            out.write("# assembled by tests/integration/labtools.py from tests/roles/fixtures (not upstream)\n")
            for part in parts:
                with open(part) as handle:
                    out.write(handle.read())
    return folder


def undo_failover(kube, name):
    """What node_recover lifts on the Kubernetes side, for a test that stopped before it ran:
    the out-of-service taint (no pod would run on the node again) and the failover's marks."""
    node = kube.get("nodes", name)
    taints = node["spec"].get("taints") or []
    kept = [t for t in taints if t["key"] != "node.kubernetes.io/out-of-service"]
    if kept != taints:
        kube.patch("nodes", name, {"spec": {"taints": kept or None}})
    # the record, a cut-off run's start, and the mark that told the taint was ours
    marks = [a for a in ("volfence.csi/failover", "volfence.csi/failover-started", "volfence.csi/out-of-service-taint")
             if a in (node["metadata"].get("annotations") or {})]
    if marks:
        kube.patch("nodes", name, {"metadata": {"annotations": dict((a, None) for a in marks)}})


def remove_network_fences(kube, timeout=60):
    """Delete every NetworkFence and wait until the lab's CSI-Addons stand-in has let them go (its finalizer
    takes the fenced CIDRs out of the blocklist first, as csi-addons' controller does). In the lab every fence
    is a test's: one a failover made and left Fenced keeps its node's clients cut, and shows in the next
    test's reads of that node's fences (the shards share the test files: any test may come next on a lab)."""
    if not kube.find("customresourcedefinitions", "networkfences.csiaddons.openshift.io"):
        return
    for fence in kube.list("networkfences"):
        kube.delete("networkfences", fence["metadata"]["name"])
    assert wait_until(lambda: not kube.list("networkfences"), timeout=timeout), \
        [f["metadata"]["name"] for f in kube.list("networkfences")]


def declare_shut_down(kube, node):
    """An administrator's `kubectl taint node NODE node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`: read,
    then written with the node's resourceVersion, again on a conflict (a controller wrote meanwhile)."""
    def add():
        obj = kube.get("nodes", node)
        taints = (obj["spec"].get("taints") or []) + [{"key": "node.kubernetes.io/out-of-service",
                                                       "value": "nodeshutdown", "effect": "NoExecute"}]
        try:
            kube.patch("nodes", node, {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                                       "spec": {"taints": taints}})
            return True
        except ApiError as exc:
            if exc.status != 409:
                raise
            return False
    assert wait_until(add, timeout=60)


def kubectl(lab, *args):
    """`kubectl ARGS` against the lab's API, as an engineer types it: its output (the test fails on an error)."""
    proc = subprocess.run(["kubectl", "--kubeconfig", lab.env["KUBECONFIG"]] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert proc.returncode == 0, "kubectl %s: %s" % (" ".join(args), proc.stderr)
    return proc.stdout


def volfence_events(kube):
    """The Events volfence.csi posted, as core/v1 (`kubectl get events`) lists them."""
    return [e for e in kube.list("events") if e.get("reportingComponent") == "volfence.csi"]


def told(kube, since):
    """The Events volfence.csi posted that `since` (volfence_events before) did not hold: (reason, kind,
    namespace/name, message), in the order they were posted."""
    seen = set(e["metadata"]["uid"] for e in since)
    events = [e for e in volfence_events(kube) if e["metadata"]["uid"] not in seen]
    events.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e["reason"], e["involvedObject"]["kind"], "/".join(filter(None, (
        e["involvedObject"].get("namespace"), e["involvedObject"]["name"]))), e["message"]) for e in events]


def node_fence(state):
    """The blocklist entries a failover of the scenario's failed node adds: the node's address, whole (ceph-csi
    recorded it there and the node staged the image: a frozen second client of the node shows nowhere, so every
    client of its IP is cut; issue 43)."""
    return [state["failed_node_ip"] + ":0/0"]


def lab_config(lab):
    """The lab's Config as volfence_lab.lab sees it, for its scenario helpers (scenarios.frozen_rbd_watcher)."""
    from volfence_lab import lab as labmod
    env = dict(os.environ, LAB_DIR=lab.dir, LAB_PREFIX=lab.env["LAB_PREFIX"], LAB_SLOT=lab.env["LAB_SLOT"],
               LAB_NODES=lab.env["LAB_NODES"])
    cfg = labmod.Config(env)
    cfg.version = lab.env.get("LAB_CEPH_VERSION")
    return cfg

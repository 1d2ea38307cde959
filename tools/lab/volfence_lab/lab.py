"""The volfence.csi lab: a real Ceph cluster plus simulated Kubernetes nodes.

Ceph runs from Debian's packages (1 mon, 1 mgr, 1 memstore OSD, cephx on) with every file
under the lab folder: Tentacle 20.2 by default, Reef 18.2 or Pacific 16.2 with LAB_CEPH (the newer
releases run from Debian roots that `make setup` builds, see ceph_releases.py). Each simulated Kubernetes node is a network namespace on a private
bridge, so a Ceph client started "on node-b" is seen by Ceph with node-b's IP, exactly as on
a real cluster.

Only the standard library is used so the lab runs with any python3 (make lab-up: .venv/bin/python -m
volfence_lab up; make setup installs this package and the API emulator, tools/kubeemu, editable there). Every Ceph command, daemon
and client of the lab (holders, the CSI-Addons stand-in, the inventory's ceph-admin host) runs
through the wrappers in <lab>/ceph-bin (ceph, rbd, ceph-mon, ..., python3), which run the lab
release's tools and Python bindings.

Configuration (environment):
  LAB_DIR     lab folder (default: <repo>/.lab, or <repo>/.lab-<prefix> for another prefix)
  LAB_PREFIX  prefix of every name the lab creates: namespaces, bridge, veths (default: vf)
  LAB_SLOT    0-199: picks the subnet 10.231.<slot>.0/24 and the port block
              17000 + 10 * slot (default: derived from LAB_PREFIX)
  LAB_NODES   node count (default 3: node-a, node-b, node-c) or a comma-separated name list
  LAB_CEPH    Ceph release: 20 (Tentacle, default), 18 (Reef) or 16 (Pacific)
  LAB_CLOCKS  Kubernetes' clocks: fast (default), real or never (volfence_lab.clocks); change them on
              a running lab with `python -m volfence_lab clocks MODE`
  LAB_KUBE    lab (default): the Kubernetes side (API emulator, control plane, node agents) beside
              Ceph; none: Ceph and the nodes' networks only, for tests that talk to Ceph and
              nothing else (the Kubernetes side's idle passes cost CPU the other labs need)
  LAB_WRITE_EVERY  seconds between a stage holder's writes (default 0.5; 0: stage holders do not
              write), read by `up` (the node agents start stage holders) and by `hold`
  LAB_IMAGE_FEATURES  features of the images scenarios make: layering (default, as ceph-csi's example
              StorageClass), default (Ceph's rbd_default_features) or a comma-separated list; read
              when a scenario runs
"""

import argparse
import fcntl
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid

import kubeemu
from kubeemu.wait import WAITED, wait_until

from volfence_lab import ceph_releases
from volfence_lab import clocks as clockmod
from volfence_lab import python_starter

HERE = os.path.dirname(os.path.abspath(__file__))
# The checkout this package lives in (tools/lab/volfence_lab: installed editable, never copied).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

# This machine's Python with Debian's bindings: node-side programs (the kubelet stand-in, node
# modules) run with it, because they mount and unmount in the machine's real mount table.
HOST_PYTHON = "/usr/bin/python3"
CEPH_TOOLS = ("ceph", "rbd", "rados", "ceph-authtool", "monmaptool", "ceph-mon", "ceph-mgr", "ceph-osd", "python3")
POOL = "rbd"


class LabError(Exception):
    pass


# ----------------------------------------------------------------------------- configuration

KUBE_SIDES = ("lab", "none")


class Config(object):
    def __init__(self, environ=None):
        env = os.environ if environ is None else environ
        self.prefix = env.get("LAB_PREFIX") or "vf"
        default_dir = ".lab" if self.prefix == "vf" else ".lab-" + self.prefix
        self.dir = os.path.abspath(env.get("LAB_DIR") or os.path.join(REPO, default_dir))
        if not re.match(r"^[a-z][a-z0-9]{0,5}$", self.prefix):
            raise LabError("LAB_PREFIX must be 1-6 lowercase letters/digits starting with a letter "
                           "(it prefixes interface names, limited to 15 characters): %r" % self.prefix)
        slot = env.get("LAB_SLOT")
        self.slot_chosen = not (slot is None or slot == "")
        if not self.slot_chosen:
            slot = int(hashlib.sha256(self.prefix.encode()).hexdigest(), 16) % 200
        self.set_slot(int(slot))
        self.nodes = self._node_names(env.get("LAB_NODES") or "3")
        self.bridge = self.prefix + "-br"
        self.ceph_dir = os.path.join(self.dir, "ceph")
        self.conf = os.path.join(self.ceph_dir, "ceph.conf")
        self.keyring = os.path.join(self.ceph_dir, "ceph.client.admin.keyring")
        self.user = "admin"
        self.holders_dir = os.path.join(self.dir, "holders")
        self.bin_dir = os.path.join(self.dir, "bin")
        self.ceph_bin = os.path.join(self.dir, "ceph-bin")
        self.version = None  # the release's exact version, once `up` has written the wrappers
        self.clocks = env.get("LAB_CLOCKS") or clockmod.DEFAULT_MODE
        if self.clocks not in clockmod.MODES:
            raise LabError("LAB_CLOCKS must be one of %s, got %r" % (", ".join(clockmod.MODES), self.clocks))
        self.kube = env.get("LAB_KUBE") or "lab"
        if self.kube not in KUBE_SIDES:
            raise LabError("LAB_KUBE must be one of %s, got %r" % (", ".join(KUBE_SIDES), self.kube))
        try:
            self.release = ceph_releases.check_release(env.get("LAB_CEPH"))
        except ceph_releases.ReleaseError as exc:
            raise LabError(str(exc))

    def set_slot(self, slot):
        if not 0 <= slot < 200:
            raise LabError("LAB_SLOT must be within 0-199, got %s" % slot)
        self.slot = slot
        self.subnet = "10.231.%d" % self.slot
        self.host_ip = self.subnet + ".1"
        self.port_base = 17000 + 10 * self.slot
        self.kube_port = self.port_base + 1

    def tool(self, name):
        """A Ceph program of the lab's release (a wrapper written by `up`). Its Python is
        ceph-python3, so that <lab>/ceph-bin in a PATH never shadows python3."""
        return os.path.join(self.ceph_bin, "ceph-python3" if name == "python3" else name)

    @staticmethod
    def _node_names(spec):
        if spec.isdigit():
            count = int(spec)
            if not 1 <= count <= 26:
                raise LabError("LAB_NODES count must be 1-26, got %d" % count)
            return ["node-%s" % chr(ord("a") + i) for i in range(count)]
        # Also accepts .lab/env's own "name=ip name=ip" form, so a sourced env file round-trips.
        names = [n.split("=", 1)[0] for n in re.split(r"[,\s]+", spec) if n.strip()]
        for name in names:
            if not re.match(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$", name):
                raise LabError("invalid node name %r (DNS label, at most 32 characters)" % name)
        return names

    def node_ip(self, name):
        return "%s.%d" % (self.subnet, 11 + self.nodes.index(name))

    def netns(self, name):
        return "%s-%s" % (self.prefix, name)

    def veth_host(self, name):
        return "%s-v%dh" % (self.prefix, self.nodes.index(name))

    def veth_node(self, name):
        return "%s-v%dn" % (self.prefix, self.nodes.index(name))


# ----------------------------------------------------------------------------- helpers

def clean_env():
    """The environment for the lab's own Ceph commands: a user's CEPH_ARGS (or a sourced
    .lab/env of another lab) must not redirect them to another cluster or keyring."""
    return {k: v for k, v in os.environ.items() if k not in ("CEPH_ARGS", "CEPH_CONF", "CEPH_KEYRING")}


def run(cmd, check=True, capture=True, timeout=60, **kwargs):
    kwargs.setdefault("env", clean_env())
    proc = subprocess.run(cmd, stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE if capture else None,
                          universal_newlines=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise LabError("command failed (rc=%d): %s\nstdout: %s\nstderr: %s" % (
            proc.returncode, " ".join(shlex.quote(c) for c in cmd),
            (proc.stdout or "").strip(), (proc.stderr or "").strip()))
    return proc


def ceph_cmd(cfg, *args):
    return [cfg.tool("ceph"), "-c", cfg.conf, "-k", cfg.keyring, "-n", "client." + cfg.user,
            "--connect-timeout", "10"] + list(args)


def lab_processes(cfg):
    """PIDs of every process whose command line mentions the lab folder (crash-safe cleanup)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except (IOError, OSError):
            continue
        args = cmdline.split(" ")
        if cfg.dir + "/" in cmdline and not any(a.endswith("lab.py") or a == "volfence_lab" for a in args):
            found.append(int(entry))
    return found


def existing_netns():
    proc = run(["ip", "-j", "netns", "list"], check=False)
    try:
        return [n["name"] for n in json.loads(proc.stdout or "[]")]
    except ValueError:
        return []


def read_env(lab_dir=None):
    """A lab's env file (<lab>/env, written by `up`) as a dict, or None when no lab runs there. The
    folder is the one Config() finds (LAB_DIR, LAB_PREFIX) unless given."""
    path = os.path.join(lab_dir or Config().dir, "env")
    if not os.path.exists(path):
        return None
    env = {}
    with open(path) as handle:
        for line in handle:
            match = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
            if match:
                env[match.group(1)] = shlex.split(match.group(2))[0] if match.group(2) else ""
    return env


def wait_for(predicate, timeout, what):
    """wait_until, failing as the lab's commands fail (LabError: one line, no traceback)."""
    if not wait_until(predicate, timeout):
        raise LabError("timed out after %ss waiting for %s" % (timeout, what))


# ----------------------------------------------------------------------------- network

def slots_in_use():
    """Slots of the labs running on this machine (their bridges' 10.231.<slot>.1 addresses)."""
    used = set()
    for link in json.loads(run(["ip", "-j", "-4", "addr", "show"]).stdout or "[]"):
        for info in link.get("addr_info", []):
            match = re.match(r"^10\.231\.(\d+)\.1$", info.get("local", ""))
            if match:
                used.add(int(match.group(1)))
    return used


def choose_slot(cfg):
    """Several labs run side by side (make test runs four): a derived slot that another lab
    already uses moves to the next free one; a slot given in LAB_SLOT must be free."""
    used = slots_in_use()
    if cfg.slot not in used:
        return
    if cfg.slot_chosen:
        raise LabError("LAB_SLOT=%d (subnet 10.231.%d.0/24) is used by another lab on this machine" % (cfg.slot, cfg.slot))
    for step in range(1, 200):
        if (cfg.slot + step) % 200 not in used:
            cfg.set_slot((cfg.slot + step) % 200)
            return
    raise LabError("every lab slot (0-199) is in use")


def network_up(cfg):
    run(["ip", "link", "add", cfg.bridge, "type", "bridge"])
    run(["ip", "addr", "add", cfg.host_ip + "/24", "dev", cfg.bridge])
    run(["ip", "link", "set", cfg.bridge, "up"])
    for name in cfg.nodes:
        ns, vh, vn = cfg.netns(name), cfg.veth_host(name), cfg.veth_node(name)
        run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", vh, "type", "veth", "peer", "name", vn])
        run(["ip", "link", "set", vh, "master", cfg.bridge])
        run(["ip", "link", "set", vh, "up"])
        run(["ip", "link", "set", vn, "netns", ns])
        run(["ip", "-n", ns, "addr", "add", cfg.node_ip(name) + "/24", "dev", vn])
        run(["ip", "-n", ns, "link", "set", vn, "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # Only the lab subnet is routable from a node: nothing can leave the lab.
        run(["ip", "-n", ns, "route", "add", cfg.subnet + ".0/24", "dev", vn], check=False)


def network_down(cfg):
    for ns in existing_netns():
        if ns.startswith(cfg.prefix + "-"):
            run(["ip", "netns", "del", ns], check=False)
    links = json.loads(run(["ip", "-j", "link", "show"]).stdout or "[]")
    for link in links:
        name = link.get("ifname", "")
        if name == cfg.bridge or re.match(r"^%s-v\d+[hn]$" % re.escape(cfg.prefix), name):
            run(["ip", "link", "del", name], check=False)


# ----------------------------------------------------------------------------- ceph

CEPH_CONF = """[global]
fsid = {fsid}
mon host = v2:{ip}:3300,v1:{ip}:6789
public network = {subnet}.0/24
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 5
osd crush chooseleaf type = 0
run dir = {d}/run
admin socket = {d}/run/$cluster-$name.$pid.asok
log file = {d}/log/$cluster-$name.log
pid file = {d}/run/$cluster-$name.pid
keyring = {d}/keyring.$name,{d}/$cluster.$name.keyring
ms bind ipv6 = false
log to stderr = false
err to stderr = true

[client]
admin socket =
log file = {d}/log/client.log

[mon]
mon data = {d}/mon/$cluster-$id
public addr = {ip}
mon cluster log file = {d}/log/$cluster.log

[mgr]
mgr data = {d}/mgr/$cluster-$id
public addr = {ip}
mgr initial modules = status

[osd]
osd data = {d}/osd/$cluster-$id
osd objectstore = memstore
memstore device bytes = 1073741824
public addr = {ip}
cluster addr = {ip}
osd op num shards = 2
osd op num threads per shard = 1
# Debian 13+ builds default to a class folder relative to the working directory.
osd class dir = {class_dir}
"""


def ceph_up(cfg):
    d = cfg.ceph_dir
    for sub in ("run", "log", "mon", "mgr", "osd"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    with open(cfg.conf, "w") as handle:
        handle.write(CEPH_CONF.format(fsid=uuid.uuid4(), ip=cfg.host_ip, subnet=cfg.subnet, d=d,
                                      class_dir=ceph_releases.class_dir(cfg.release)))
    mon_keyring = os.path.join(d, "keyring.mon.")
    monmap = os.path.join(d, "monmap")
    run([cfg.tool("ceph-authtool"), "--create-keyring", mon_keyring, "--gen-key", "-n", "mon.",
         "--cap", "mon", "allow *"])
    run([cfg.tool("ceph-authtool"), "--create-keyring", cfg.keyring, "--gen-key", "-n", "client.admin",
         "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *",
         "--cap", "mds", "allow *"])
    run([cfg.tool("ceph-authtool"), mon_keyring, "--import-keyring", cfg.keyring])
    fsid = re.search(r"fsid = (\S+)", open(cfg.conf).read()).group(1)
    run([cfg.tool("monmaptool"), "--create", "--fsid", fsid, "--addv", "a",
         "[v2:%s:3300,v1:%s:6789]" % (cfg.host_ip, cfg.host_ip), monmap])
    run([cfg.tool("ceph-mon"), "-c", cfg.conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", mon_keyring])
    run([cfg.tool("ceph-mon"), "-c", cfg.conf, "-i", "a"])

    mgr_dir = os.path.join(d, "mgr", "ceph-x")
    os.makedirs(mgr_dir, exist_ok=True)
    run(ceph_cmd(cfg, "auth", "get-or-create", "mgr.x", "mon", "allow profile mgr", "osd", "allow *",
                 "mds", "allow *", "-o", os.path.join(d, "keyring.mgr.x")), timeout=30)
    run([cfg.tool("ceph-mgr"), "-c", cfg.conf, "-i", "x"])

    osd_uuid = str(uuid.uuid4())
    osd_id = run(ceph_cmd(cfg, "osd", "new", osd_uuid)).stdout.strip()
    os.makedirs(os.path.join(d, "osd", "ceph-" + osd_id), exist_ok=True)
    run(ceph_cmd(cfg, "auth", "get-or-create", "osd." + osd_id, "mon", "allow profile osd",
                 "mgr", "allow profile osd", "osd", "allow *",
                 "-o", os.path.join(d, "keyring.osd." + osd_id)))
    run([cfg.tool("ceph-osd"), "-c", cfg.conf, "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid], timeout=60)
    run([cfg.tool("ceph-osd"), "-c", cfg.conf, "-i", osd_id])

    run(ceph_cmd(cfg, "osd", "pool", "create", POOL, "8", "8"))
    wait_for(lambda: run(ceph_cmd(cfg, "osd", "stat", "--format", "json")).stdout.find('"num_up_osds":1') >= 0,
             30, "the OSD to come up")
    run([cfg.tool("rbd"), "-c", cfg.conf, "-k", cfg.keyring, "pool", "init", POOL], timeout=60)


# ----------------------------------------------------------------------------- files for users

def write_ceph_wrappers(cfg):
    """<lab>/ceph-bin: the lab release's Ceph programs. Returns the release's version."""
    stamp = ceph_releases.read_stamp(cfg.release)
    if not stamp or not stamp.get("version"):
        raise LabError("Ceph %s is not installed for the lab: run `make setup` (or `%s build %s`)" % (
            cfg.release, os.path.join(HERE, "ceph_releases.py"), cfg.release))
    os.makedirs(cfg.ceph_bin, exist_ok=True)
    for name in CEPH_TOOLS:
        program = HOST_PYTHON if name == "python3" else "/usr/bin/" + name
        # the ceph-admin host's Python runs modules: a test run's Python starter may serve it
        first = python_starter.starter_hook(sys.executable) if name == "python3" else ""
        with open(cfg.tool(name), "w") as handle:
            handle.write(ceph_releases.wrapper_script(cfg.release, program, extra_paths=(REPO, cfg.dir), first=first))
        os.chmod(cfg.tool(name), 0o755)
    return stamp["version"]


def write_env(cfg):
    nodes = " ".join("%s=%s" % (n, cfg.node_ip(n)) for n in cfg.nodes)
    lines = [
        "# volfence.csi lab: source this file (. .lab/env)",
        "LAB_DIR=%s" % shlex.quote(cfg.dir),
        "LAB_PREFIX=%s" % cfg.prefix,
        "LAB_SLOT=%d" % cfg.slot,
        "CEPH_CONF=%s" % shlex.quote(cfg.conf),
        "CEPH_KEYRING=%s" % shlex.quote(cfg.keyring),
        "CEPH_USER=%s" % cfg.user,
        "CEPH_ARGS=%s" % shlex.quote("-c %s -k %s -n client.%s" % (cfg.conf, cfg.keyring, cfg.user)),
        "CEPH_POOL=%s" % POOL,
        "CEPH_MON_HOST=%s" % cfg.host_ip,
        "LAB_CEPH=%s" % cfg.release,
        "LAB_CEPH_VERSION=%s" % cfg.version,
        "LAB_CEPH_BIN=%s" % shlex.quote(cfg.ceph_bin),
        "LAB_NODES=%s" % shlex.quote(nodes),
        "LAB_KUBE=%s" % cfg.kube,
    ]
    exported = "LAB_DIR LAB_PREFIX LAB_SLOT CEPH_CONF CEPH_KEYRING CEPH_USER CEPH_ARGS CEPH_POOL " \
               "CEPH_MON_HOST LAB_CEPH LAB_CEPH_VERSION LAB_CEPH_BIN LAB_NODES LAB_KUBE"
    if cfg.kube == "lab":  # a kube-less lab names no kubeconfig: none exists
        lines.append("KUBECONFIG=%s" % shlex.quote(kubeconfig_path(cfg)))
        exported += " KUBECONFIG"
    lines.append("export " + exported)
    with open(os.path.join(cfg.dir, "env"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


def write_node_wrappers(cfg):
    """The hosts' interpreters: one per simulated node (Ansible runs node-side modules inside its
    namespace), and the k8s-api host's (the project virtualenv's Python). A test run's Python starter
    may serve them (python_starter.py); without one they run the interpreter itself."""
    os.makedirs(cfg.bin_dir, exist_ok=True)
    for name in cfg.nodes:
        # nsenter --net, not `ip netns exec`: the latter also unshares the mount namespace,
        # and node-side modules must see and change the node's real mount table.
        python_starter.interpreter_wrapper(
            os.path.join(cfg.bin_dir, "python-" + name),
            "nsenter --net=/run/netns/%s %s" % (cfg.netns(name), HOST_PYTHON), "node %s: its network namespace, this machine's Python" % name)
    python_starter.interpreter_wrapper(os.path.join(cfg.bin_dir, "python-k8s-api"), shlex.quote(venv_python()),
                                       "k8s-api: the project virtualenv's Python (kubernetes, kubernetes.core)")


def venv_python():
    path = os.path.join(REPO, ".venv", "bin", "python")
    return path if os.path.exists(path) else sys.executable


def write_inventory(cfg):
    kubeconfig = os.path.join(cfg.dir, "kubeconfig")
    out = [
        "---",
        "# Generated by `make lab-up`: the lab seen as a real cluster would be.",
        "all:",
        "  vars:",
        "    volfence_ceph_conf: %s" % json.dumps(cfg.conf),
        "    volfence_ceph_keyring: %s" % json.dumps(cfg.keyring),
        "    volfence_ceph_user: %s" % cfg.user,
        "    volfence_kubeconfig: %s" % json.dumps(kubeconfig),
        "  children:",
        "    ceph_admin:",
        "      hosts:",
        "        ceph-admin:",
        "          ansible_connection: local",
        "          # Ceph %s's Python with its rados/rbd bindings and CLI: on a real admin host, the" % cfg.version,
        "          # system Python, or a wrapper like this one when the distribution's Ceph is too old.",
        "          ansible_python_interpreter: %s" % json.dumps(cfg.tool("python3")),
        "    k8s_api:",
        "      hosts:",
        "        k8s-api:",
        "          ansible_connection: local",
        "          ansible_python_interpreter: %s" % json.dumps(os.path.join(cfg.bin_dir, "python-k8s-api")),
        "    k8s_nodes:",
        "      hosts:",
    ]
    for name in cfg.nodes:
        out += [
            "        %s:" % name,
            "          ansible_connection: local",
            "          ansible_python_interpreter: %s" % json.dumps(os.path.join(cfg.bin_dir, "python-" + name)),
            "          lab_netns: %s" % cfg.netns(name),
            "          lab_node_ip: %s" % cfg.node_ip(name),
            "          volfence_kubelet_dir: %s" % json.dumps(kubelet_dir(cfg, name)),
        ]
    with open(os.path.join(cfg.dir, "inventory.yml"), "w") as handle:
        handle.write("\n".join(out) + "\n")


# ----------------------------------------------------------------------------- holders

def holder_pidfile(cfg, node, image, kind):
    safe = image.replace("/", "_")
    return os.path.join(cfg.holders_dir, "%s.%s.%s.pid" % (node, kind, safe))


def write_every(environ=None):
    """Seconds between a stage holder's writes (LAB_WRITE_EVERY, default 0.5), None when they do not write."""
    value = (os.environ if environ is None else environ).get("LAB_WRITE_EVERY") or "0.5"
    try:
        seconds = float(value)
    except ValueError:
        raise LabError("LAB_WRITE_EVERY must be a number of seconds, got %r" % value)
    if seconds < 0:
        raise LabError("LAB_WRITE_EVERY must not be negative, got %r" % value)
    return seconds or None


def hold(cfg, node, image, lock_id=None, shared_tag=None, timeout=20, kind=None, csi_stage=False,
         metadata_key=None, metadata_value=None, intree_lock=None, also_images=(), writes=None):
    """Start a client on `node` that keeps `image` open read-write (a watcher) and, when asked,
    holds an advisory lock. Returns the holder's status (pid, client address).

    With csi_stage, it first does ceph-csi's in-use check and returns {"in_use": True, ...}
    (the holder exits) while another client watches the image. also_images: other images the same
    client watches (one client address for all, as a node's client mapping several volumes).
    writes: the holder writes to the image as a pod's application does (holder_writes reads what it
    recorded); by default a ceph-csi stage holder does, every LAB_WRITE_EVERY seconds."""
    check_node(cfg, node)
    os.makedirs(cfg.holders_dir, exist_ok=True)
    kind = kind or ("lock" if lock_id else "watch")
    pidfile = holder_pidfile(cfg, node, image, kind)
    statusfile = pidfile[:-4] + ".json"
    writesfile = pidfile[:-4] + ".writes"
    every = write_every() if (csi_stage if writes is None else writes) else None
    for path in (statusfile, writesfile):
        if os.path.exists(path):
            os.unlink(path)
    cmd = ["ip", "netns", "exec", cfg.netns(node), cfg.tool("python3"), os.path.join(HERE, "holder.py"),
           "--conf", cfg.conf, "--keyring", cfg.keyring, "--user", cfg.user, "--image", image,
           "--status-file", statusfile]
    if lock_id:
        cmd += ["--lock-id", lock_id]
    if shared_tag:
        cmd += ["--shared-tag", shared_tag]
    if csi_stage:
        cmd.append("--csi-stage")
    if metadata_key:
        cmd += ["--metadata-key", metadata_key] + (["--metadata-value", metadata_value] if metadata_value else [])
    if intree_lock:
        cmd += ["--intree-lock", intree_lock]
    for spec in also_images or ():
        cmd += ["--also-image", spec]
    if every:
        cmd += ["--writes-file", writesfile, "--write-every", str(every)]
    log = open(pidfile[:-4] + ".log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=clean_env())
    with open(pidfile, "w") as handle:
        handle.write(str(proc.pid))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(statusfile):
            with open(statusfile) as handle:
                status = json.load(handle)
            if status.get("error"):
                raise LabError("holder on %s failed: %s" % (node, status["error"]))
            if status.get("in_use"):
                proc.wait()
                os.unlink(pidfile)
                return status
            status["pid"] = proc.pid
            return status
        if proc.poll() is not None:
            raise LabError("holder on %s exited with %s: %s" % (node, proc.returncode,
                                                                open(pidfile[:-4] + ".log").read()))
        time.sleep(0.1)
    proc.kill()
    raise LabError("holder on %s did not become ready within %ss" % (node, timeout))


def holder_status(cfg, node, image, kind="stage"):
    """What the holder of `image` on `node` reported when it was ready (address, instance_id) with its pid
    while it has a pid file, or None."""
    pidfile = holder_pidfile(cfg, node, image, kind)
    try:
        with open(pidfile[:-4] + ".json") as handle:
            status = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    try:
        status["pid"] = int(open(pidfile).read())
    except (IOError, OSError, ValueError):
        status["pid"] = None
    return status


def holder_writes(cfg, node, image, kind="stage"):
    """What the writing holder of `image` on `node` recorded (holder.py's Writer): address, ok and errors
    (counts), first_ok and last_ok ({time, counter}), last_error ({time, counter, errno, message}) and
    errnos (count by name); None when it recorded nothing. Times are epoch seconds of this machine.
    Kept after the holder stops, until the next holder of that image on that node starts."""
    try:
        with open(holder_pidfile(cfg, node, image, kind)[:-4] + ".writes") as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def release(cfg, node=None, image=None):
    """Stop holders (all, or those of a node and/or image). Returns how many were stopped."""
    stopped = 0
    if not os.path.isdir(cfg.holders_dir):
        return 0
    for entry in sorted(os.listdir(cfg.holders_dir)):
        if not entry.endswith(".pid"):
            continue
        hnode, _kind, himage = entry[:-4].split(".", 2)
        if node and hnode != node:
            continue
        if image and himage != image.replace("/", "_"):
            continue
        path = os.path.join(cfg.holders_dir, entry)
        try:
            pid = int(open(path).read().strip())
            os.killpg(pid, signal.SIGTERM)
            stopped += 1
        except (ValueError, OSError):
            pass
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass   # released meanwhile by the node's kubelet (it unstages beside this cleanup)
    return stopped


# ----------------------------------------------------------------------------- kubernetes side

def import_roots():
    """The folders holding this package and the API emulator's. The lab's processes that run under
    another Python than the lab's (Debian's for the kubelets, the Ceph release's for the control plane,
    which needs its rados bindings) import them from there (PYTHONPATH)."""
    return [os.path.dirname(os.path.dirname(os.path.abspath(package.__file__)))
            for package in (sys.modules["volfence_lab"], kubeemu)]


def lab_child_env(cfg):
    env = clean_env()
    env.update(LAB_DIR=cfg.dir, LAB_PREFIX=cfg.prefix, LAB_SLOT=str(cfg.slot), LAB_NODES=",".join(cfg.nodes),
               PYTHONPATH=os.pathsep.join(import_roots()))
    return env


def spawn(cfg, name, cmd, cwd=None):
    """Start a lab process in the background; its pid goes to .lab/run/<name>.pid."""
    run_dir = os.path.join(cfg.dir, "run")
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(os.path.join(cfg.dir, "log"), exist_ok=True)
    log = open(os.path.join(cfg.dir, "log", name + ".log"), "a")
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=lab_child_env(cfg))
    with open(os.path.join(run_dir, name + ".pid"), "w") as handle:
        handle.write(str(proc.pid))
    return proc


def stop(cfg, name):
    path = os.path.join(cfg.dir, "run", name + ".pid")
    try:
        pid = int(open(path).read())
    except (IOError, OSError, ValueError):
        return False
    # A stopped process (partition-node's kubelet) handles no SIGTERM until it runs again: killed at once.
    send_signal([pid], signal.SIGKILL if proc_state(pid) == "T" else signal.SIGTERM, group=True)
    if not wait_until(lambda: not alive(pid), 5, step=0.05):
        send_signal([pid], signal.SIGKILL, group=True)
        wait_until(lambda: not alive(pid), 5, step=0.05)
    os.unlink(path)
    return True


def pid_of(cfg, name):
    """The pid of lab process `name` (.lab/run/<name>.pid) while it runs, else None."""
    try:
        pid = int(open(os.path.join(cfg.dir, "run", name + ".pid")).read())
    except (IOError, OSError, ValueError):
        return None
    return pid if alive(pid) else None


def send_signal(pids, signum, group=False):
    """Send `signum` to each process (with group, to its process group); one already gone is passed over."""
    for pid in pids:
        try:
            if group:
                os.killpg(pid, signum)
            else:
                os.kill(pid, signum)
        except OSError:
            pass


def proc_state(pid):
    """The state letter of process `pid` (R, S, D, T stopped, Z zombie...), None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            # state is the field after the command's closing parenthesis
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (IOError, OSError, IndexError):
        return None


def alive(pid):
    """Whether process `pid` still runs. A zombie does not: it exited and waits for its reaper (a
    container's PID 1 may reap only every few seconds, and os.kill(pid, 0) succeeds until then)."""
    return proc_state(pid) not in (None, "Z", "X")


def kubelet_dir(cfg, node):
    """The node's kubelet root: FUSE CSI volumes (dead-fuse-mount) are mounted under it."""
    return os.path.join(cfg.dir, "nodes", node, "kubelet")


def unmount_lab_mounts(cfg):
    """Lazily unmount every mount under the lab folder (FUSE volumes, dead or alive)."""
    try:
        with open("/proc/self/mountinfo") as handle:
            points = [line.split()[4] for line in handle if len(line.split()) > 4]
    except OSError:
        return 0
    mine = [p for p in points if p.startswith(cfg.dir + "/")]
    for point in sorted(mine, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return len(mine)


def kubeconfig_path(cfg):
    return os.path.join(cfg.dir, "kubeconfig")


def kube_client(cfg):
    from kubeemu.client import KubeClient
    return KubeClient("http://127.0.0.1:%d" % cfg.kube_port)


def start_agent(cfg, node):
    return spawn(cfg, "agent-" + node, [HOST_PYTHON, "-m", "volfence_lab.kubesim", "agent",
                                        "--node", node, "--kubeconfig", kubeconfig_path(cfg)])


def kube_up(cfg, kube_version=None):
    """API emulator, control plane (with the CSI-Addons stand-in) and one agent per node."""
    cmd = [sys.executable, "-m", "kubeemu", "--host", "127.0.0.1", "--port", str(cfg.kube_port),
           "--kubeconfig-out", kubeconfig_path(cfg)]
    if kube_version:
        cmd += ["--version", kube_version]
    spawn(cfg, "kube-api", cmd)
    kube = kube_client(cfg)
    wait_for(lambda: _answers(kube), 20, "the Kubernetes API emulator on port %d" % cfg.kube_port)
    for crd in load_crds():
        kube.apply("customresourcedefinitions", crd)
    install_ceph_csi_config(cfg, kube)
    spawn(cfg, "controlplane", [cfg.tool("python3"), "-m", "volfence_lab.kubesim", "controlplane",
                                "--kubeconfig", kubeconfig_path(cfg)])
    for node in cfg.nodes:
        start_agent(cfg, node)
    from volfence_lab.kubesim import node_ready  # here: kubesim imports this module
    wait_for(lambda: len([n for n in kube.list("nodes") if node_ready(n)]) == len(cfg.nodes), 20,
             "every node to be Ready")


# ceph-csi's namespace on the lab, and the ConfigMap of its install that lists each clusterID's monitors
# (ceph-csi deploy/csi-config-map.yaml: key config.json, a JSON list of {clusterID, monitors}).
CSI_NAMESPACE = "ceph-csi"
CSI_CONFIGMAP = "ceph-csi-config"


def install_ceph_csi_config(cfg, kube):
    if kube.find("namespaces", CSI_NAMESPACE) is None:
        kube.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CSI_NAMESPACE}})
    kube.apply("configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CSI_CONFIGMAP, "namespace": CSI_NAMESPACE},
        "data": {"config.json": json.dumps([{"clusterID": "lab", "monitors": ["%s:6789" % cfg.host_ip]}])}},
        CSI_NAMESPACE)


def _answers(kube):
    try:
        kube.request("GET", "/version")
        return True
    except Exception:
        return False


def load_crds():
    from kubeemu.csi import csiaddons_crds
    return csiaddons_crds()


def check_node(cfg, node):
    if node not in cfg.nodes:
        raise LabError("unknown node %r (lab nodes: %s)" % (node, ", ".join(cfg.nodes)))


def kill_node(cfg, node):
    """The kubelet dies; the node's Ceph clients stay alive (stale-rbd-watcher)."""
    check_node(cfg, node)
    if not stop(cfg, "agent-" + node):
        raise LabError("node %s has no running agent (already killed?)" % node)
    sys.stderr.write("%s: kubelet stopped (heartbeat and lease renewals stop); its Ceph clients are still alive\n" % node)


def revive_node(cfg, node):
    """The node comes back as after a reboot: its old Ceph clients are gone, the kubelet starts (a new
    bootID). A paused or partitioned node's processes are killed first: they never run again, so none
    writes or watches once more; then its link comes up."""
    check_node(cfg, node)
    frozen = [state for state in ("paused", "partitioned") if os.path.exists(node_mark(cfg, node, state))]
    stop(cfg, "agent-" + node)
    if frozen:
        send_signal(node_pids(cfg, node), signal.SIGKILL)
        wait_until(lambda: not node_pids(cfg, node), 10, step=0.1)
    gone = release(cfg, node)
    set_link(cfg, node, up=True)
    for state in frozen:
        os.unlink(node_mark(cfg, node, state))
    start_agent(cfg, node)
    sys.stderr.write("%s: rebooted (%d old Ceph client(s) gone%s), kubelet started\n" % (
        node, gone, "; it was " + " and ".join(frozen) if frozen else ""))


# A node frozen or cut off (issue 43): its rbd clients drop out of `rbd status` once the OSD's watch
# timeout (osd_client_watch_timeout, 30 s) passes, but keep the image open; thawed or healed, librados
# reconnects and librbd registers its watch again (src/librbd/Watcher.cc, rewatch) and writes on.

def node_mark(cfg, node, state):
    """<lab>/run/<node>.<state>: the node is paused or partitioned (status shows it; revive undoes it)."""
    return os.path.join(cfg.dir, "run", "%s.%s" % (node, state))


def mark(cfg, node, state, on):
    path = node_mark(cfg, node, state)
    if on:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write("%f\n" % time.time())
    elif os.path.exists(path):
        os.unlink(path)


def node_pids(cfg, node):
    """Every process in the node's network namespace: its holders (stage holders too) and its node
    plugin's watcher-check client."""
    proc = run(["ip", "netns", "pids", cfg.netns(node)], check=False)
    return [int(p) for p in (proc.stdout or "").split() if p.isdigit()]


def set_link(cfg, node, up):
    """The node's cable: its veth's bridge end, so the node itself keeps its address and routes."""
    run(["ip", "link", "set", cfg.veth_host(node), "up" if up else "down"], check=False)


def pause_node(cfg, node):
    """The node freezes (VM paused): its kubelet stops, as kill-node, and every process of the node
    gets SIGSTOP. Returns the pids stopped. Again on a paused node: stops what runs there again."""
    check_node(cfg, node)
    stop(cfg, "agent-" + node)
    pids = node_pids(cfg, node)
    send_signal(pids, signal.SIGSTOP)
    mark(cfg, node, "paused", True)
    sys.stderr.write("%s: paused (kubelet stopped, %d process(es) frozen)\n" % (node, len(pids)))
    return pids


def resume_node(cfg, node):
    """The frozen node runs again: SIGCONT to its processes. Its kubelet stays stopped (as after
    kill-node); revive-node still means a reboot. Returns the pids continued."""
    check_node(cfg, node)
    pids = node_pids(cfg, node)
    send_signal(pids, signal.SIGCONT)
    mark(cfg, node, "paused", False)
    sys.stderr.write("%s: resumed (%d process(es) thawed; kubelet still stopped)\n" % (node, len(pids)))
    return pids


def partition_node(cfg, node):
    """The node is cut from the network: its link goes down (its Ceph clients keep running and cannot
    reach the cluster) and its kubelet's heartbeats stop (SIGSTOP of its process group: alive, unheard)."""
    check_node(cfg, node)
    set_link(cfg, node, up=False)
    pid = pid_of(cfg, "agent-" + node)
    if pid:
        send_signal([pid], signal.SIGSTOP, group=True)
    mark(cfg, node, "partitioned", True)
    sys.stderr.write("%s: partitioned (link down%s)\n" % (node, ", kubelet unheard" if pid else ""))


def heal_node(cfg, node):
    """The partition ends: the link comes up and the same kubelet goes on (SIGCONT: the same bootID, a
    partition is no reboot). A kubelet killed before stays dead."""
    check_node(cfg, node)
    set_link(cfg, node, up=True)
    pid = pid_of(cfg, "agent-" + node)
    if pid:
        send_signal([pid], signal.SIGCONT, group=True)
    mark(cfg, node, "partitioned", False)
    sys.stderr.write("%s: healed (link up%s)\n" % (node, ", kubelet heard again" if pid else ""))


# ----------------------------------------------------------------------------- commands

def status(cfg):
    result = {"dir": cfg.dir, "prefix": cfg.prefix, "slot": cfg.slot, "up": False,
              "nodes": {n: {"ip": cfg.node_ip(n), "netns": cfg.netns(n) in existing_netns(),
                            "paused": os.path.exists(node_mark(cfg, n, "paused")),
                            "partitioned": os.path.exists(node_mark(cfg, n, "partitioned"))} for n in cfg.nodes},
              "processes": len(lab_processes(cfg)), "clocks": clockmod.read_mode(cfg.dir)}
    if os.path.exists(cfg.conf):
        proc = run(ceph_cmd(cfg, "status", "--format", "json"), check=False, timeout=20)
        if proc.returncode == 0:
            data = json.loads(proc.stdout)
            result["up"] = True
            result["health"] = data.get("health", {}).get("status")
            result["osds_up"] = data.get("osdmap", {}).get("num_up_osds")
    return result


def down(cfg, quiet=False):
    release(cfg)
    pids = lab_processes(cfg)
    send_signal(pids, signal.SIGTERM)
    send_signal([p for p in pids if proc_state(p) == "T"], signal.SIGKILL)  # a paused node's: no SIGTERM handled
    wait_until(lambda: not lab_processes(cfg), 10)
    send_signal(lab_processes(cfg), signal.SIGKILL)
    unmount_lab_mounts(cfg)
    network_down(cfg)
    if os.path.isdir(cfg.dir):
        run(["rm", "-rf", cfg.dir])
    if not quiet:
        print("lab down: stopped %d processes, removed namespaces %s-*, bridge %s and %s"
              % (len(pids), cfg.prefix, cfg.bridge, cfg.dir))


def up(cfg):
    started = time.time()
    down(cfg, quiet=True)  # a crashed earlier run leaves nothing behind that could get in the way
    os.makedirs(cfg.dir)
    clockmod.write(cfg.dir, cfg.clocks)
    try:
        cfg.version = write_ceph_wrappers(cfg)
        with open("/tmp/volfence-lab-slots.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # labs starting together pick different slots
            choose_slot(cfg)
            network_up(cfg)
        ceph_up(cfg)
        write_env(cfg)
        if cfg.kube == "lab":
            kube_up(cfg, os.environ.get("LAB_KUBE_VERSION"))
        write_node_wrappers(cfg)
        write_env(cfg)
        write_inventory(cfg)
    except Exception:
        down(cfg, quiet=True)
        raise
    with open(os.path.join(cfg.dir, "env")) as handle:
        sys.stdout.write(handle.read())
    print("# lab up in %.1f s with Ceph %s%s: inventory %s" % (
        time.time() - started, cfg.version, "" if cfg.kube == "lab" else ", no Kubernetes side",
        os.path.join(cfg.dir, "inventory.yml")))


def node_exec(cfg, node, command):
    check_node(cfg, node)
    env = dict(clean_env(), CEPH_ARGS="-c %s -k %s -n client.%s" % (cfg.conf, cfg.keyring, cfg.user),
               PATH=cfg.ceph_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
    return subprocess.call(["ip", "netns", "exec", cfg.netns(node), "sh", "-c", command], env=env)




def scenario_options(args):
    """The options a scenario takes (--node, --nodes, --volumes); one it does not take is refused."""
    import inspect
    from volfence_lab.scenarios import SCENARIOS
    given = {"node": args.node, "nodes": args.nodes and [n for n in args.nodes.split(",") if n],
             "volumes": args.volumes}
    given = {k: v for k, v in given.items() if v is not None}
    takes = inspect.signature(SCENARIOS[args.name]).parameters
    wrong = sorted(k for k in given if k not in takes)
    if wrong:
        raise LabError("scenario %s takes no --%s" % (args.name, ", --".join(wrong)))
    return given


# Commands that freeze or cut off a node and undo it (they also work on a lab without Kubernetes).
NODE_STATES = {"pause-node": pause_node, "resume-node": resume_node, "partition-node": partition_node,
               "heal-node": heal_node}

# Commands that act through the lab's Kubernetes side.
NEEDS_KUBE = ("kill-node", "revive-node", "scenario", "clean-scenario")

# With TIMINGS_ENV set, every command ends with a line on stderr: TIMINGS_PREFIX and JSON {seconds, waiting}.
TIMINGS_ENV = "VOLFENCE_LAB_TIMINGS"
TIMINGS_PREFIX = "volfence_lab timings: "


def main(argv=None):
    from volfence_lab.scenarios import SCENARIOS
    started = time.monotonic()
    parser = argparse.ArgumentParser(prog="python -m volfence_lab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("up", help="start the lab (removes any earlier one first)")
    sub.add_parser("down", help="stop everything the lab started and remove its files")
    sub.add_parser("status", help="print the lab's state as JSON")
    p = sub.add_parser("exec", help="run a shell command on a node (CEPH_ARGS set)")
    p.add_argument("node")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("hold", help="hold a watcher (and optionally an advisory lock) from a node")
    p.add_argument("node")
    p.add_argument("image", help="pool/image or pool/namespace/image")
    p.add_argument("--lock-id")
    p.add_argument("--shared-tag")
    p.add_argument("--also-image", action="append", default=[], help="another image the same client watches")
    p.add_argument("--metadata-key", help="image metadata key to record the client in (ceph-csi's clientaddress)")
    p.add_argument("--metadata-value", help="the value recorded (default: the client's address)")
    p.add_argument("--writes", action="store_true",
                   help="write to the image as an application does (every LAB_WRITE_EVERY s; see holder_writes)")
    p = sub.add_parser("kill-node", help="stop a node's kubelet; its Ceph clients stay alive")
    p.add_argument("node")
    p = sub.add_parser("revive-node", help="bring a node back as after a reboot")
    p.add_argument("node")
    p = sub.add_parser("pause-node", help="freeze a node (VM paused): kubelet stopped, its processes SIGSTOPped")
    p.add_argument("node")
    p = sub.add_parser("resume-node", help="thaw a paused node's processes (its kubelet stays stopped)")
    p.add_argument("node")
    p = sub.add_parser("partition-node", help="cut a node from the network: link down, kubelet unheard")
    p.add_argument("node")
    p = sub.add_parser("heal-node", help="end a node's partition: link up, the same kubelet heard again")
    p.add_argument("node")
    p = sub.add_parser("scenario", help="build the state of an incident: " + ", ".join(sorted(SCENARIOS)))
    p.add_argument("name")
    p.add_argument("--node", help="node-volumes: the node that dies")
    p.add_argument("--nodes", help="rack: the nodes that die together, comma-separated")
    p.add_argument("--volumes", type=int, help="node-volumes, rack: volumes per node")
    p = sub.add_parser("clean-scenario", help="remove what node-volumes and rack built, with their images")
    p.add_argument("id", nargs="?", help="one scenario's id (default: all of them)")
    p.add_argument("--keep-images", action="store_true")
    p.add_argument("--wait", type=int, default=60, help="seconds to wait for watched images")
    p = sub.add_parser("clocks", help="print or set the lab's Kubernetes clocks: " + ", ".join(clockmod.MODES))
    p.add_argument("mode", nargs="?", choices=clockmod.MODES)
    p = sub.add_parser("release", help="stop holders")
    p.add_argument("node", nargs="?")
    p.add_argument("image", nargs="?")
    args = parser.parse_args(argv)
    try:
        cfg = Config()
        if args.command == "up":
            up(cfg)
        elif args.command == "down":
            down(cfg)
        elif args.command == "status":
            result = status(cfg)
            print(json.dumps(result, indent=2, sort_keys=True))
            return 0 if result["up"] else 1
        elif args.command == "exec":
            return node_exec(cfg, args.node, " ".join(args.cmd))
        elif args.command == "hold":
            print(json.dumps(hold(cfg, args.node, args.image, args.lock_id, args.shared_tag,
                                  metadata_key=args.metadata_key, metadata_value=args.metadata_value,
                                  also_images=args.also_image, writes=args.writes or None), sort_keys=True))
        elif args.command in NEEDS_KUBE and not os.path.exists(kubeconfig_path(cfg)):
            raise LabError("%s needs the lab's Kubernetes side, and this lab has none (LAB_KUBE=none at its "
                           "`up`, or it is not up)" % args.command)
        elif args.command == "kill-node":
            kill_node(cfg, args.node)
        elif args.command == "revive-node":
            revive_node(cfg, args.node)
        elif args.command in NODE_STATES:
            NODE_STATES[args.command](cfg, args.node)
        elif args.command == "scenario":
            if args.name not in SCENARIOS:
                raise LabError("unknown scenario %r (known: %s)" % (args.name, ", ".join(sorted(SCENARIOS))))
            print(json.dumps(SCENARIOS[args.name](cfg, **scenario_options(args)), indent=2, sort_keys=True))
        elif args.command == "clean-scenario":
            from volfence_lab.scenarios import clean_scenario
            print(json.dumps(clean_scenario(cfg, args.id, images=not args.keep_images, wait_seconds=args.wait),
                             indent=2, sort_keys=True))
        elif args.command == "clocks":
            if args.mode:
                clockmod.write(cfg.dir, args.mode)
            print(json.dumps(clockmod.clocks(clockmod.read_mode(cfg.dir)).as_dict(), sort_keys=True))
        elif args.command == "release":
            print("released %d holder(s)" % release(cfg, args.node, args.image))
        else:
            parser.print_help()
            return 2
    except LabError as exc:
        sys.stderr.write("lab: error: %s\n" % exc)
        return 1
    finally:
        if os.environ.get(TIMINGS_ENV):
            # where a command's seconds went, for the tests' timing report (tests/integration/labtools.py)
            sys.stderr.write("%s%s\n" % (TIMINGS_PREFIX, json.dumps(dict(
                seconds=round(time.monotonic() - started, 3), waiting=round(WAITED["seconds"], 3)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""dead-fuse-mount on a real FUSE mount: bindfs stands in for s3fs; killing it leaves
"Transport endpoint is not connected" mounts under a temporary kubelet directory."""

import json
import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from labtools import run_module, wait_until

DRIVER = "ch.ctrox.csi.s3-driver"
pytestmark = pytest.mark.skipif(shutil.which("bindfs") is None or not os.path.exists("/dev/fuse"),
                                reason="needs bindfs and /dev/fuse (make setup installs bindfs)")


class FuseVolume(object):
    def __init__(self, kubelet, driver=DRIVER):
        self.pod_uid = str(uuid.uuid4())
        self.pv = "pvc-" + uuid.uuid4().hex[:8]
        base = os.path.join(kubelet, "pods", self.pod_uid, "volumes", "kubernetes.io~csi", self.pv)
        self.mount = os.path.join(base, "mount")
        self.backing = os.path.join(kubelet, "backing", self.pv)
        os.makedirs(self.mount)
        os.makedirs(self.backing)
        with open(os.path.join(self.backing, "data.txt"), "w") as handle:
            handle.write("bucket data\n")
        with open(os.path.join(base, "vol_data.json"), "w") as handle:
            json.dump({"driverName": driver, "volumeHandle": "bucket-" + self.pv, "specVolID": self.pv}, handle)
        subprocess.run(["bindfs", self.backing, self.mount], check=True)
        self.pid = int(subprocess.run(["pgrep", "-n", "-f", "bindfs %s %s" % (self.backing, self.mount)],
                                      stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout)

    def kill_daemon(self):
        """What a CSI node plugin restart does to the FUSE daemons it started."""
        os.kill(self.pid, signal.SIGKILL)
        assert wait_until(lambda: gone(self.pid)), "bindfs %d did not die" % self.pid

    def mounted(self):
        with open("/proc/self/mountinfo") as handle:
            return any((" %s " % self.mount) in line for line in handle)


@pytest.fixture
def kubelet(tmp_path):
    root = str(tmp_path / "kubelet")
    volumes = []

    def add(driver=DRIVER):
        vol = FuseVolume(root, driver)
        volumes.append(vol)
        return vol
    yield root, add
    for vol in volumes:
        subprocess.run(["umount", "-l", vol.mount], stderr=subprocess.DEVNULL)
        try:
            os.kill(vol.pid, signal.SIGKILL)
        except OSError:
            pass


def test_dead_mount_reports_transport_endpoint_not_connected(kubelet):
    root, add = kubelet
    dead = add()
    dead.kill_daemon()
    with pytest.raises(OSError) as err:
        os.listdir(dead.mount)
    assert "Transport endpoint is not connected" in str(err.value)


def test_info_then_recovery_on_a_node(kubelet, lab_inventory):
    root, add = kubelet
    dead, alive, other_driver = add(), add(), add("other.csi.driver")
    dead.kill_daemon()
    other_driver.kill_daemon()
    args = {"kubelet_dir": root, "drivers": [DRIVER]}

    info = run_module(lab_inventory, "node-b", "volfence.csi.fuse_mounts_info", args)
    assert info.get("failed") is not True, info
    by_volume = dict((m["volume"], m) for m in info["mounts"])
    assert set(by_volume) == {dead.pv, alive.pv}
    assert by_volume[dead.pv]["healthy"] is False
    assert by_volume[dead.pv]["error"] == "Transport endpoint is not connected"
    assert by_volume[dead.pv]["pod_uid"] == dead.pod_uid and by_volume[dead.pv]["driver"] == DRIVER
    assert by_volume[alive.pv]["healthy"] is True
    assert info["pod_uids"] == [dead.pod_uid]

    check = run_module(lab_inventory, "node-b", "volfence.csi.fuse_mounts", args, check=True, diff=True)
    assert check["changed"] is True and [m["path"] for m in check["unmounted"]] == [dead.mount]
    assert dead.mounted(), "check mode unmounts nothing"

    done = run_module(lab_inventory, "node-b", "volfence.csi.fuse_mounts", args)
    assert done["changed"] is True and done["pod_uids"] == [dead.pod_uid] and done["healthy"] == 1
    assert not dead.mounted()
    assert alive.mounted() and os.listdir(alive.mount) == ["data.txt"]
    assert other_driver.mounted(), "another driver's mount is not ours to touch"

    again = run_module(lab_inventory, "node-b", "volfence.csi.fuse_mounts", args)
    assert again["changed"] is False and again["unmounted"] == []


def test_bad_input_is_a_clear_error(lab_inventory):
    result = run_module(lab_inventory, "node-b", "volfence.csi.fuse_mounts", {"state": "present"})
    assert result.get("failed") is True
    assert "value of state must be one of: absent" in result["msg"]


def run_bounded(inventory, host, module, args, bound, extra_env=None):
    """run_module, failing the test instead of waiting 300 s when the module hangs."""
    from labtools import ANSIBLE_BIN, REPO, AnsibleRun, ansible_command, ansible_env
    cmd = [os.path.join(ANSIBLE_BIN, "ansible"), host, "-i", inventory, "-m", module, "-a", json.dumps(args)]
    env = ansible_env(extra_env)
    started = time.time()
    try:
        proc = subprocess.run(ansible_command(cmd, env), cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=bound)
    except subprocess.TimeoutExpired:
        pytest.fail("%s still runs after %ss" % (module, bound))
    return AnsibleRun(proc).result(host), time.time() - started


def process_state(pid):
    with open("/proc/%d/stat" % pid) as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def gone(pid):
    try:
        return process_state(pid) in ("Z", "X")
    except (IOError, OSError):
        return True


def test_i8_a_hung_mount_is_reported_hung_not_waited_for(kubelet, lab_inventory):
    """I8 (issue 11 item 8): the FUSE daemon of one mount is stopped (SIGSTOP: alive, never answers); stat() of
    its mount point blocks. fuse_mounts_info and fuse_mounts finish within the bound, report it hung, and leave it
    mounted; the dead mount beside it is still found and unmounted. Before, both modules hung."""
    root, add = kubelet
    hung, dead, alive = add(), add(), add()
    dead.kill_daemon()
    os.kill(hung.pid, signal.SIGSTOP)
    try:
        assert wait_until(lambda: process_state(hung.pid) == "T"), "bindfs did not stop"
        args = {"kubelet_dir": root, "drivers": [DRIVER]}   # the default probe_timeout (5 s)
        info, seconds = run_bounded(lab_inventory, "node-b", "volfence.csi.fuse_mounts_info", args, 90)
        assert info.get("failed") is not True, info
        by_volume = dict((m["volume"], m) for m in info["mounts"])
        assert by_volume[hung.pv]["state"] == "hung" and by_volume[hung.pv]["healthy"] is False
        assert "did not return within 5s" in by_volume[hung.pv]["error"]
        assert by_volume[dead.pv]["state"] == "dead" and by_volume[alive.pv]["state"] == "healthy"
        assert info["hung"] == 1 and info["broken"] == 2 and seconds < 60
        result, seconds = run_bounded(lab_inventory, "node-b", "volfence.csi.fuse_mounts", dict(args, probe_timeout=2),
                                      90)
        assert result.get("failed") is not True and result["changed"] is True, result
        assert [m["path"] for m in result["unmounted"]] == [dead.mount] and result["pod_uids"] == [dead.pod_uid]
        assert [m["path"] for m in result["hung"]] == [hung.mount]
        assert any("is hung" in str(w) for w in result.get("warnings", []))
        assert hung.mounted() and not dead.mounted() and alive.mounted()
    finally:
        os.kill(hung.pid, signal.SIGCONT)
    assert wait_until(lambda: process_state(hung.pid) != "T")
    assert os.listdir(hung.mount) == ["data.txt"], "the hung mount answers again once its daemon runs"


def test_i7_a_failed_unmount_is_not_reported_as_unmounted(kubelet, lab_inventory, tmp_path):
    """I7 (issue 11 item 7): two dead mounts, the unmount of one fails (a umount that refuses that path, first
    on PATH): the module fails, with changed=true, the other in unmounted and the failed one in failures only.
    Before, both were listed as unmounted."""
    root, add = kubelet
    first, second = add(), add()
    first.kill_daemon()
    second.kill_daemon()
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    (wrapper / "umount").write_text('#!/bin/sh\nfor arg; do [ "$arg" = "%s" ] && { echo "umount: %s: target is busy."'
                                    ' >&2; exit 32; }; done\nexec /usr/bin/umount "$@"\n' % (second.mount, second.mount))
    (wrapper / "umount").chmod(0o755)
    args = {"kubelet_dir": root, "drivers": [DRIVER]}
    result, _seconds = run_bounded(lab_inventory, "node-b", "volfence.csi.fuse_mounts", args, 120,
                                   extra_env={"PATH": "%s:%s" % (wrapper, os.environ.get("PATH", ""))})
    assert result.get("failed") is True and result["changed"] is True, result
    assert [m["path"] for m in result["unmounted"]] == [first.mount] and result["pod_uids"] == [first.pod_uid]
    assert [(f["path"], f["rc"]) for f in result["failures"]] == [(second.mount, 32)]
    assert "target is busy" in result["failures"][0]["stderr"] and "unmounted anyway: %s" % first.mount in result["msg"]
    assert not first.mounted() and second.mounted()

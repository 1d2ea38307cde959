"""Seed 002 on a real FUSE mount: bindfs stands in for s3fs; killing it leaves
"Transport endpoint is not connected" mounts under a temporary kubelet directory."""

import json
import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from labtools import run_module

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
        time.sleep(0.3)

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

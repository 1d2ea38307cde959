"""The lab's Kubernetes clocks: a setting of each lab, changeable while it runs.

  real   Kubernetes' defaults (sources named in docs/lab.md): the kubelet posts its status every
         10 s and renews a 40 s Lease every 10 s; the node lifecycle controller marks a node
         unreachable after node-monitor-grace-period 50 s; pods tolerate that taint for 300 s
         (DefaultTolerationSeconds); the attach/detach controller force-detaches a volume still
         mounted on an unhealthy node after maxWaitForUnmountDuration 6 min and re-reads its
         VolumeAttachments every 60 s (ReconcilerSyncDuration); the pod GC runs every 20 s.
  fast   the same controllers about 60 times faster (the lab's pace before real clocks).
  never  fast heartbeats and grace, but Kubernetes' own eviction and force detach never come:
         a test on such a lab cannot pass by waiting for Kubernetes. What Kubernetes does once
         an administrator (or the collection) declares a node out of service still happens.

The mode is written to <lab>/clocks by `up` (LAB_CLOCKS, default fast) and by
`python -m volfence_lab clocks MODE`; the lab's processes re-read it when it changes.
"""

import os

MODES = ("fast", "real", "never")
DEFAULT_MODE = "fast"
FILE_NAME = "clocks"


class Clocks(object):
    """Durations in seconds; None: never."""

    def __init__(self, mode, heartbeat, node_grace, eviction, force_detach, attachment_sync, pod_gc,
                 mount_retry_max, loop):
        self.mode = mode
        self.heartbeat = heartbeat              # kubelet status and Lease renewal
        self.lease_duration = 40                # the kubelet's Lease (leaseDurationSeconds)
        self.node_grace = node_grace            # node-monitor-grace-period
        self.eviction = eviction                # default tolerationSeconds of not-ready/unreachable
        self.force_detach = force_detach        # maxWaitForUnmountDuration
        self.attachment_sync = attachment_sync  # the attach/detach controller's sync of VolumeAttachments
        self.pod_gc = pod_gc                    # the pod GC's period (gcCheckPeriod)
        self.mount_retry = 0.5                  # first retry of a failed MountDevice, doubling ...
        self.mount_retry_max = mount_retry_max  # ... up to this
        self.loop = loop                        # the lab's own pass (the controllers' work queues)

    def as_dict(self):
        return dict(self.__dict__)


def clocks(mode):
    if mode == "real":
        return Clocks("real", heartbeat=10.0, node_grace=50.0, eviction=300.0, force_detach=360.0,
                      attachment_sync=60.0, pod_gc=20.0, mount_retry_max=122.0, loop=0.5)
    if mode == "fast":
        return Clocks("fast", heartbeat=1.0, node_grace=4.0, eviction=5.0, force_detach=6.0,
                      attachment_sync=1.0, pod_gc=0.5, mount_retry_max=1.0, loop=0.5)
    if mode == "never":
        return Clocks("never", heartbeat=1.0, node_grace=4.0, eviction=None, force_detach=None,
                      attachment_sync=1.0, pod_gc=0.5, mount_retry_max=1.0, loop=0.5)
    raise ValueError("unknown clocks %r (known: %s)" % (mode, ", ".join(MODES)))


def path(lab_dir):
    return os.path.join(lab_dir, FILE_NAME)


def write(lab_dir, mode):
    clocks(mode)  # refuses an unknown mode before anything is written
    tmp = path(lab_dir) + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(mode + "\n")
    os.rename(tmp, path(lab_dir))


def read_mode(lab_dir):
    try:
        with open(path(lab_dir)) as handle:
            mode = handle.read().strip()
    except (IOError, OSError):
        return DEFAULT_MODE
    return mode if mode in MODES else DEFAULT_MODE


class Follower(object):
    """The lab's current clocks, re-read when <lab>/clocks changes (a cheap stat per call)."""

    def __init__(self, lab_dir):
        self.lab_dir = lab_dir
        self.stamp = None
        self.current = clocks(read_mode(lab_dir))

    def get(self):
        try:
            stamp = os.stat(path(self.lab_dir)).st_mtime_ns
        except OSError:
            stamp = None
        if stamp != self.stamp:
            self.stamp = stamp
            self.current = clocks(read_mode(self.lab_dir))
        return self.current

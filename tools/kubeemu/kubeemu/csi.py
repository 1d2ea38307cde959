"""What the CSI side of a cluster does, for the lab, tests and benchmarks that have no such components: the
names the external-attacher gives VolumeAttachments, the CSI-Addons CRDs and a NetworkFence controller
stand-in."""

import hashlib
import json
import os
import threading

CRDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crds", "csiaddons.json")


def csiaddons_crds():
    """Minimal CSI-Addons CRDs (NetworkFence, NetworkFenceClass, CSIAddonsNode; crds/README.md)."""
    with open(CRDS) as handle:
        return json.load(handle)


# deliberately repeated: the collection computes the same name; the emulator's side stays its own (docs/lab.md)
def attachment_name(volume_handle, driver, node):
    """The name the external-attacher gives a VolumeAttachment (Kubernetes' getAttachmentName)."""
    return "csi-" + hashlib.sha256((volume_handle + driver + node).encode()).hexdigest()


FENCE_FINALIZER = "csiaddons.openshift.io/network-fence"
SUCCESS_MESSAGES = {"Fenced": "fencing operation successful", "Unfenced": "unfencing operation successful"}


class NetworkFenceStandIn(threading.Thread):
    """A stand-in for the CSI-Addons NetworkFence controller, NOT the controller: it answers fences the way
    CSI-Addons with ceph-csi does. Each new generation of a fence is answered once, after `delay` seconds:
    status.result, status.message and status.observedGeneration, Succeeded with the controller's message, or
    Failed naming what failed. With `finalizer`, it adds its finalizer and removes it when the fence is
    deleted. What a fence does is `apply(fence)` (its failures, a list of texts; by default every CIDR in
    `refuse` fails as a permission error, nothing else happens) and `release(fence)` on deletion (the lab
    blocklists and unblocklists on its real Ceph).

    It answers the fences `label_selector` selects that `owns(fence)` accepts, except those named in
    `silent`. step() is one pass (the lab's control plane calls it); start() runs passes every `interval`
    seconds in a thread until stop(); a pass that fails is recorded in `errors` and the next one runs, as a
    controller keeps reconciling. `answered` lists (name, generation, result) of every answer."""

    def __init__(self, kube, label_selector=None, owns=None, apply=None, release=None, finalizer=True,
                 delay=0.0, interval=0.2, name="networkfence-stand-in"):
        super().__init__(name=name, daemon=True)
        self.kube = kube
        self.label_selector = label_selector
        self.owns = owns or (lambda fence: True)
        self.apply = apply or self.refused
        self.release = release or (lambda fence: None)
        self.finalizer = finalizer
        self.delay = delay
        self.interval = interval
        self.refuse = set()
        self.silent = set()
        self.observed = {}
        self.answered = []
        self.errors = []
        self.stopped = threading.Event()

    def refused(self, fence):
        state = fence["spec"].get("fenceState")
        return ["rpc error: code = Internal desc = failed to %s %s: permission denied"
                % ("fence" if state == "Fenced" else "unfence", cidr)
                for cidr in fence["spec"].get("cidrs", []) if cidr in self.refuse]

    def run(self):
        while not self.stopped.is_set():
            try:
                self.step()
            except Exception as exc:  # keep reconciling, like a controller
                self.errors.append(repr(exc))
            self.stopped.wait(self.interval)

    def stop(self, timeout=5):
        self.stopped.set()
        if self.is_alive():
            self.join(timeout)

    def step(self):
        for fence in self.kube.list("networkfences", label_selector=self.label_selector):
            if self.owns(fence):
                self.reconcile(fence)

    def reconcile(self, fence):
        meta = fence["metadata"]
        name, generation = meta["name"], meta.get("generation")
        # A fence deleted and created again under its name is another object: answered afresh.
        key = (name, meta.get("uid"))
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp"):
            if FENCE_FINALIZER in finalizers:
                self.release(fence)
                self.kube.patch("networkfences", name, {"metadata": {
                    "finalizers": [f for f in finalizers if f != FENCE_FINALIZER] or None}})
            self.observed.pop(key, None)
            return
        status = fence.get("status") or {}
        if name in self.silent or self.observed.get(key) == generation or (
                status.get("observedGeneration") == generation and status.get("result")):
            return
        if self.finalizer and FENCE_FINALIZER not in finalizers:
            self.kube.patch("networkfences", name, {"metadata": {"finalizers": finalizers + [FENCE_FINALIZER]}})
        if self.delay:
            self.stopped.wait(self.delay)
        failures = self.apply(fence)
        if failures:
            answer = {"result": "Failed", "message": "; ".join(failures)}
        else:
            answer = {"result": "Succeeded", "message": SUCCESS_MESSAGES.get(fence["spec"].get("fenceState"), "")}
        answer["observedGeneration"] = generation
        self.kube.patch("networkfences", name, {"status": answer}, subresource="status")
        self.observed[key] = generation
        self.answered.append((name, generation, answer["result"]))

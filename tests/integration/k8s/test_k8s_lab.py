"""End to end on the lab (`make lab-up`, or LAB_PREFIX=... lab.py up): the incident scenarios, fixed
with the modules run through ansible on the lab inventory's k8s-api host, as a user would.

The lab's Kubernetes API is a kubeemu with a control plane and a CSI-Addons stand-in acting on the
lab's real Ceph cluster (docs/lab.md). Skipped when no lab is running.
"""

import json
import os
import threading
import time

import pytest

from k8s_helpers import FENCES, VAS, Admin, AnsibleRunner, Kube, wait_until

LAB_DRIVER = "rbd.csi.ceph.com"


@pytest.fixture
def lab_kube(lab):
    path = os.path.join(lab.dir, "kubeconfig")
    if not os.path.exists(path):
        pytest.skip("the lab has no Kubernetes side")
    return Kube(path)


@pytest.fixture
def lab_admin(lab_kube):
    return Admin(lab_kube.host)


@pytest.fixture
def lab_ansible(lab, tmp_path):
    """Modules on the lab inventory's k8s-api host (the venv's python), with the lab's kubeconfig."""
    return AnsibleRunner(tmp_path, kubeconfig=os.path.join(lab.dir, "kubeconfig"),
                         inventory=os.path.join(lab.dir, "inventory.yml"), host="k8s-api")


@pytest.fixture
def scenario(clean_lab, lab_kube):
    lab = clean_lab
    for node in lab.nodes:
        lab.lab("revive-node", node)

    def build(name):
        return json.loads(lab.lab("scenario", name))
    yield build
    for fence in lab_kube.list(FENCES):
        if fence["metadata"]["name"].startswith("vft-"):
            lab_kube.force_delete(FENCES + "/" + fence["metadata"]["name"])
    for node in lab.nodes:
        lab.lab("revive-node", node)
    for deploy in lab_kube.list("/apis/apps/v1/namespaces/default/deployments"):
        lab_kube.delete("/apis/apps/v1/namespaces/default/deployments/" + deploy["metadata"]["name"])
    for pod in lab_kube.list("/api/v1/namespaces/default/pods"):
        lab_kube.request("DELETE", "/api/v1/namespaces/default/pods/%s?gracePeriodSeconds=0"
                         % pod["metadata"]["name"], missing_ok=True)
    wait_until(lambda: all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
                           for n in lab_kube.list("/api/v1/nodes")), timeout=15)


def pod_phase(kube, name):
    pod = kube.get("/api/v1/namespaces/default/pods/" + name)
    return pod and pod["status"].get("phase")


def blocklisted(lab, ip):
    """Whether the whole address is blocklisted (the fence's entry, ip:0/0). Entries of single client
    instances (ip:0/nonce) are Ceph's own: librbd blocklists a dead exclusive-lock owner when it breaks
    its lock."""
    out = lab.cli("ceph", "osd", "blocklist", "ls").stdout
    return any(line.split()[0] == ip + ":0/0" for line in out.splitlines() if line.strip())


def test_stale_volumeattachment_collision_reported_and_attachment_removed(scenario, lab_kube, lab_admin, lab_ansible):
    state = scenario("stale-volumeattachment")
    original = lab_admin.version()["gitVersion"]
    try:
        lab_admin.version("v1.23.5")
        info = lab_ansible.run("volumeattachment_info", {"attacher": "csi-unity.dellemc.com",
                                                         "name": state["volumeattachment"]})
        assert info["_rc"] == 0, info
        (va,) = info["volumeattachments"]
        assert info["cluster_version"] == "v1.23.5" and info["collision_version_affected"] is True
        assert va["attachment_name_collision"]["affected"] is True
        assert va["attachment_name_collision"]["unique_volume_name"] == state["unique_name"]
        assert va["expected_name"] == va["name"] and va["stale_reasons"] == ["not_in_use"]
        # Its attacher does not run in the lab: removing the attachment needs force.
        result = lab_ansible.run("volumeattachment", {"name": state["volumeattachment"], "force": True,
                                                      "force_grace": 0, "wait_timeout": 30})
        assert result["_rc"] == 0 and result["changed"], result
        assert result["volumeattachments"][0]["finalizer_removed"] == "external-attacher/csi-unity-dellemc-com"
        assert lab_kube.get(VAS + "/" + state["volumeattachment"]) is None
        again = lab_ansible.run("volumeattachment", {"name": state["volumeattachment"]})
        assert again["_rc"] == 0 and not again["changed"]
    finally:
        lab_admin.version(original)


def test_stale_rbd_watcher_stale_attachment_then_fence_unsticks_the_pod(scenario, lab, lab_kube, lab_ansible):
    """node-b's kubelet dies with its rbd client alive. While the control plane has not yet force-detached,
    node-b's attachment is stale (node NotReady). The replacement pod then hangs in ContainerCreating on
    node-a until node-b is fenced: a NetworkFence for node-b's /32, which the lab's CSI-Addons stand-in
    turns into a blocklist entry on the real Ceph cluster."""
    built = {}
    thread = threading.Thread(target=lambda: built.update(scenario("stale-rbd-watcher")))
    thread.start()
    seen = []
    deadline = time.time() + 90
    while thread.is_alive() and time.time() < deadline and not seen:
        info = lab_ansible.run("volumeattachment_info", {"node": "node-b", "not_ready_grace": 0})
        assert info["_rc"] == 0, info
        seen = [v for v in info["volumeattachments"] if "node_not_ready" in v["stale_reasons"]]
        time.sleep(0.2)
    thread.join(120)
    assert built, "the stale-rbd-watcher scenario did not complete"
    assert seen, "node-b's attachment was never seen stale while node-b was NotReady"
    assert seen[0]["persistent_volume"] == built["pv"] and seen[0]["attacher"] == LAB_DRIVER
    assert seen[0]["node_ready"] in ("Unknown", "False")

    # The attachment on node-a (where the pod is stuck) is healthy and must be left alone.
    info = lab_ansible.run("volumeattachment_info", {"persistent_volume": built["pv"]})
    (va,) = info["volumeattachments"]
    assert va["node"] == built["stuck_node"] and not va["stale"]
    assert va["pods"] == ["default/" + built["stuck_pod"]]
    kept = lab_ansible.run("volumeattachment", {"persistent_volume": built["pv"]})
    assert kept["_rc"] == 0 and not kept["changed"] and kept["kept"][0]["name"] == va["name"]

    node_a_ip, node_b_ip = lab.nodes["node-a"], lab.nodes["node-b"]
    fence = {"name": "vft-fence-node-b", "driver": LAB_DRIVER,
             "secret": {"name": "csi-rbd-secret", "namespace": "ceph-csi"}, "parameters": {"clusterID": "lab"},
             "cidrs": [node_b_ip + "/32"], "fence_state": "Fenced"}
    # A typo fencing the healthy node-a is refused, and nothing is created.
    refused = lab_ansible.run("networkfence", dict(fence, name="vft-fence-typo", cidrs=[node_a_ip + "/32"]))
    assert refused["failed"] and "would fence Ready node(s) node-a" in refused["msg"], refused
    assert lab_kube.get(FENCES + "/vft-fence-typo") is None and not blocklisted(lab, node_a_ip)

    started = time.time()
    result = lab_ansible.run("networkfence", fence)
    assert result["_rc"] == 0 and result["changed"], result
    (report,) = result["fences"]
    assert report["outcome"] == "Succeeded" and report["message"] == "fencing operation successful"
    assert [(n["name"], n["ready"]) for n in report["nodes"]] in ([("node-b", "Unknown")], [("node-b", "False")])
    assert not [w for w in result["_warnings"] if "CSIAddonsNode" in w], "the lab's CSIAddonsNodes are Connected"
    assert blocklisted(lab, node_b_ip)
    running = wait_until(lambda: pod_phase(lab_kube, built["stuck_pod"]) == "Running", timeout=30)
    assert running, "pod still %s after the fence" % pod_phase(lab_kube, built["stuck_pod"])
    print("\nstale-rbd-watcher: fence applied and pod Running %.1f s after the networkfence call started"
          % (time.time() - started))

    again = lab_ansible.run("networkfence", fence)
    assert again["_rc"] == 0 and not again["changed"]
    info = lab_ansible.run("networkfence_info", {"node": "node-b"})
    assert [f["name"] for f in info["fences"]] == ["vft-fence-node-b"] and info["fences"][0]["result"] == "Succeeded"
    assert any(n["driver"] == LAB_DRIVER and n["state"] == "Connected" for n in info["csiaddons_nodes"])

    # Once node-b is back (rebooted), the fence is lifted: Unfenced first, then deleted.
    lab.lab("revive-node", "node-b")
    gone = lab_ansible.run("networkfence", {"name": "vft-fence-node-b", "state": "absent"})
    assert gone["_rc"] == 0 and gone["changed"] and gone["fences"][0]["action"] == "unfence_and_delete", gone
    assert lab_kube.get(FENCES + "/vft-fence-node-b") is None
    assert not blocklisted(lab, node_b_ip), lab.cli("ceph", "osd", "blocklist", "ls").stdout

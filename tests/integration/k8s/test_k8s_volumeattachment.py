"""volumeattachment and volumeattachment_info through ansible, against the emulator (or a real
cluster when KUBECONFIG is set: see README.md)."""

import pytest

from k8s_helpers import VAS, Builder, attachment_name, wait_until

DRIVER = "vft.csi.example.com"
UNITY = "csi-unity.dellemc.com"


@pytest.fixture
def world(kube, label, cleanup):
    """node A Ready with pod web-1 using pv-1; node B NotReady for 10 minutes, nothing on it; a VA of
    pv-0 on B (stale) and one of pv-1 on A (healthy)."""
    b = Builder(kube, label, cleanup)
    w = dict(label=label, builder=b)
    w["a"] = b.node("vft-%s-a" % label, "198.51.100.11")
    w["b"] = b.node("vft-%s-b" % label, "198.51.100.12", ready="Unknown", not_ready_for=600)
    for i, node in enumerate((w["b"], w["a"])):
        pv = "vft-%s-pv-%d" % (label, i)
        b.pv(pv, DRIVER, "%s-h-%d" % (label, i), claim="vft-%s-c-%d" % (label, i))
        w["pv%d" % i] = pv
        w["va%d" % i] = b.va(pv, DRIVER, "%s-h-%d" % (label, i), node)
    b.pod("vft-%s-web-1" % label, w["a"], "vft-%s-c-1" % label)
    return w


def by_name(result):
    return dict((v["name"], v) for v in result["volumeattachments"])


def test_info_reports_stale_reasons_and_names(ansible, world):
    result = ansible.run("volumeattachment_info", {"attacher": DRIVER, "node": world["b"]})
    assert result["_rc"] == 0 and not result["changed"], result
    (va,) = result["volumeattachments"]
    assert va["name"] == world["va0"] == va["expected_name"] == attachment_name("%s-h-0" % world["label"], DRIVER,
                                                                                world["b"])
    assert va["stale"] and va["stale_reasons"] == ["node_not_ready", "not_in_use"]
    assert va["node_ready"] == "Unknown" and va["node_not_ready_seconds"] >= 590
    assert va["finalizers"] == ["external-attacher/vft-csi-example-com"] == [va["attacher_finalizer"]]
    assert va["attached"] is True and va["deletion_timestamp"] is None
    result = ansible.run("volumeattachment_info", {"pv": world["pv1"]})
    (va,) = result["volumeattachments"]
    assert not va["stale"] and va["pods"] == ["default/vft-%s-web-1" % world["label"]]
    # a grace longer than the outage: node B's attachment is stale only for not being used
    result = ansible.run("volumeattachment_info", {"name": world["va0"], "not_ready_grace": 3600})
    assert result["volumeattachments"][0]["stale_reasons"] == ["not_in_use"]


def test_info_out_of_service_and_unexpected_name(ansible, kube, world):
    b = world["builder"]
    c = b.node("vft-%s-c" % world["label"], "198.51.100.13",
               taints=[{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}])
    pv = "vft-%s-pv-9" % world["label"]
    b.pv(pv, DRIVER, "h-9", claim="vft-%s-c-9" % world["label"])
    odd = b.va(pv, DRIVER, "h-9", c, name="vft-%s-odd" % world["label"])
    result = ansible.run("volumeattachment_info", {"name": odd})
    va = result["volumeattachments"][0]
    assert va["stale_reasons"] == ["node_out_of_service", "not_in_use", "unexpected_name"]
    assert va["expected_name"] == attachment_name("h-9", DRIVER, c)


@pytest.mark.parametrize("args, message", [
    ({"name": "csi-0000000000000000000000000000000000000000000000000000000000000000"},
     "VolumeAttachment csi-0000000000000000000000000000000000000000000000000000000000000000 not found"),
    ({"persistent_volume": "pvc-does-not-exist"},
     "PersistentVolume pvc-does-not-exist not found, and no VolumeAttachment refers to it"),
])
def test_info_unknown_objects_fail_clearly(ansible, world, args, message):
    result = ansible.run("volumeattachment_info", args)
    assert result["_rc"] != 0 and result["failed"] and message in result["msg"], result


def test_unknown_pv_or_bad_name_changes_nothing(ansible, kube, world):
    before = kube.list(VAS, label_selector="volfence.io/test=" + world["label"])
    result = ansible.run("volumeattachment", {"persistent_volume": "pvc-does-not-exist"})
    assert result["failed"] and "PersistentVolume pvc-does-not-exist not found" in result["msg"]
    result = ansible.run("volumeattachment", {"node": "Not_A_Node"})
    assert result["failed"] and "is not a valid Kubernetes object name" in result["msg"]
    assert kube.list(VAS, label_selector="volfence.io/test=" + world["label"]) == before


def test_delete_stale_check_diff_real_idempotent(ansible, kube, world):
    args = {"attacher": DRIVER, "node": world["b"], "force": True, "force_grace": 1, "wait_timeout": 30}
    preview = ansible.run("volumeattachment", args, check=True, diff=True)
    assert preview["changed"] and preview["deleted"] == [world["va0"]], preview
    assert preview["diff"] == {"before": {"volumeattachments": [world["va0"]]}, "after": {"volumeattachments": []}}
    assert kube.get(VAS + "/" + world["va0"])["metadata"].get("deletionTimestamp") is None
    # nothing detaches this fake driver: force removes the attacher's finalizer after force_grace
    result = ansible.run("volumeattachment", args)
    assert result["_rc"] == 0 and result["changed"], result
    (va,) = result["volumeattachments"]
    assert va["gone"] and va["finalizer_removed"] == "external-attacher/vft-csi-example-com"
    assert kube.get(VAS + "/" + world["va0"]) is None
    again = ansible.run("volumeattachment", args)
    assert again["_rc"] == 0 and not again["changed"] and again["volumeattachments"] == []


def test_only_stale_keeps_the_healthy_attachment(ansible, kube, world):
    result = ansible.run("volumeattachment", {"persistent_volume": world["pv1"]})
    assert result["_rc"] == 0 and not result["changed"], result
    assert result["kept"][0]["name"] == world["va1"]
    assert "used by default/vft-%s-web-1" % world["label"] in result["kept"][0]["why"]
    assert any("skipped" in w for w in result["_warnings"])
    assert kube.get(VAS + "/" + world["va1"])["metadata"].get("deletionTimestamp") is None


def test_without_force_a_stuck_deletion_fails_with_its_reason(ansible, kube, world):
    result = ansible.run("volumeattachment", {"name": world["va0"], "wait_timeout": 2})
    assert result["failed"] and result["changed"], result
    assert "still exists after wait_timeout=2s: finalizers external-attacher/vft-csi-example-com are still set; " \
           "force=true removes" in result["msg"]
    assert kube.get(VAS + "/" + world["va0"])["metadata"].get("deletionTimestamp")


def test_collision_on_an_affected_version(ansible, kube, emu, label, cleanup):
    """stale-volumeattachment's shape: <driver>^<handle> of 68 characters starting with csi-, on v1.23.5 and v1.30.2."""
    b = Builder(kube, label, cleanup)
    node = b.node("vft-%s-u" % label, "198.51.100.21")
    handle = ("csiunity-%s-iSCSI-APM0012345678-sv_42" % label)
    handle += "x" * (68 - len(UNITY) - 1 - len(handle))
    pv = "vft-%s-unity" % label
    b.pv(pv, UNITY, handle)
    name = b.va(pv, UNITY, handle, node)
    try:
        emu.version("v1.23.5")
        result = ansible.run("volumeattachment_info", {"name": name})
        assert result["cluster_version"] == "v1.23.5" and result["collision_version_affected"] is True
        collision = result["volumeattachments"][0]["attachment_name_collision"]
        assert collision == dict(collision, unique_volume_name=UNITY + "^" + handle,
                                 volume_has_attachment_name_shape=True, version_affected=True, affected=True)
        emu.version("v1.30.2")
        result = ansible.run("volumeattachment_info", {"name": name})
        assert result["volumeattachments"][0]["attachment_name_collision"]["affected"] is False
    finally:
        emu.version("v1.30.2")


def test_collision_against_the_cluster_version(ansible, kube, label, cleanup):
    """Whatever the cluster (emulator or real), the verdict follows its /version."""
    b = Builder(kube, label, cleanup)
    node = b.node("vft-%s-u" % label, "198.51.100.22")
    handle = "x" * (68 - len(UNITY) - 1)
    pv = "vft-%s-unity" % label
    b.pv(pv, UNITY, handle)
    name = b.va(pv, UNITY, handle, node)
    version = kube.version()
    minor = int(version.lstrip("v").split(".")[1].rstrip("+"))
    result = ansible.run("volumeattachment_info", {"name": name})
    assert result["cluster_version"] == version
    assert result["volumeattachments"][0]["attachment_name_collision"]["affected"] is (minor < 24)


# --------------------------------------------------------------------------- faults (emulator only)

def test_server_error_on_delete_is_retried(ansible, kube, emu, world):
    emu.fault(method="DELETE", path_regex="/volumeattachments/" + world["va0"], status=500, count=1)
    seq = emu.last_seq()
    result = ansible.run("volumeattachment", {"name": world["va0"], "force": True, "force_grace": 0})
    assert result["_rc"] == 0 and result["changed"], result
    deletes = [r for r in emu.module_writes(seq) if r["method"] == "DELETE"]
    assert [r["status"] for r in deletes] == [500, 200]
    assert kube.get(VAS + "/" + world["va0"]) is None


def test_conflict_on_delete_re_reads_and_retries(ansible, kube, emu, world):
    emu.fault(method="DELETE", path_regex="/volumeattachments/" + world["va0"], status=409, count=1)
    seq = emu.last_seq()
    result = ansible.run("volumeattachment", {"name": world["va0"], "force": True, "force_grace": 0})
    assert result["_rc"] == 0 and result["changed"], result
    writes = emu.module_writes(seq)
    assert [(r["method"], r["status"]) for r in writes][:2] == [("DELETE", 409), ("DELETE", 200)]


def test_timeout_on_finalizer_removal_is_recognised(ansible, kube, emu, world):
    # the PATCH is applied after 3 s while the module gave up after 1 s: a re-read shows it went through
    emu.fault(method="PATCH", path_regex="/volumeattachments/" + world["va0"], delay=3, count=1)
    seq = emu.last_seq()
    result = ansible.run("volumeattachment", {"name": world["va0"], "force": True, "force_grace": 0,
                                              "request_timeout": 1, "wait_timeout": 30})
    assert result["_rc"] == 0 and result["changed"], result
    assert wait_until(lambda: kube.get(VAS + "/" + world["va0"]) is None, 60)
    # the delayed PATCH has landed (or found the attachment gone) before the test cleans up
    assert wait_until(lambda: [r for r in emu.module_writes(seq) if r["method"] == "PATCH" and r.get("fault")], 60)


def test_persistent_server_errors_fail_clearly_and_change_nothing(ansible, kube, emu, world):
    emu.fault(method="DELETE", path_regex="/volumeattachments/", status=500, count=0, message="etcdserver: leader changed")
    result = ansible.run("volumeattachment", {"name": world["va0"]})
    assert result["failed"] and not result["changed"], result
    assert "Failed to delete VolumeAttachment %s: 500 InternalError: etcdserver: leader changed" % world["va0"] \
        in result["msg"]
    assert result["status"] == 500 and result["object"] == {"kind": "VolumeAttachment", "name": world["va0"]}
    assert kube.get(VAS + "/" + world["va0"])["metadata"].get("deletionTimestamp") is None


def test_unreachable_api_on_read_fails_clearly(ansible, emu, world):
    emu.fault(method="GET", path_regex="/volumeattachments", status=503, count=0)
    seq = emu.last_seq()
    result = ansible.run("volumeattachment_info", {"node": world["b"], "api_retries": 2})
    assert result["failed"] and result["status"] == 503 and "503" in result["msg"]
    assert len([r for r in emu.module_requests(seq) if "/volumeattachments" in r["path"]]) == 3


def test_missing_kubeconfig_is_a_clear_error(ansible, tmp_path):
    missing = str(tmp_path / "nope" / "kubeconfig")
    result = ansible.run("volumeattachment_info", {"kubeconfig": missing})
    assert result["failed"] and result["msg"] == "kubeconfig %s does not exist (from the kubeconfig option); " \
                                                 "nothing was done" % missing
    result = ansible.run("volumeattachment", {"node": "x"}, extra_env={"K8S_AUTH_KUBECONFIG": missing})
    assert result["failed"] and "K8S_AUTH_KUBECONFIG" in result["msg"]


def test_i5_attachment_kubelet_still_uses_is_never_deleted(ansible, kube, label, cleanup):
    """I5 (issue 11 item 5): a Ready node whose status.volumesInUse lists the volume (kubelet still unmounting
    it), no pod object using it: the attachment is not stale and is not deleted, not even with only_stale=false
    and force. Before, it was stale 'not_in_use' and deleted."""
    b = Builder(kube, label, cleanup)
    handle = "%s-h-busy" % label
    node = b.node("vft-%s-busy" % label, "198.51.100.31",
                  volumes_in_use=["kubernetes.io/csi/%s^%s" % (DRIVER, handle)])
    pv = "vft-%s-pv-busy" % label
    b.pv(pv, DRIVER, handle, claim="vft-%s-c-busy" % label)
    name = b.va(pv, DRIVER, handle, node)
    info = ansible.run("volumeattachment_info", {"name": name})
    (va,) = info["volumeattachments"]
    assert not va["stale"] and va["volume_in_use"] is True and "I5" in va["protected"], va
    for args in ({"name": name}, {"name": name, "only_stale": False, "force": True, "force_grace": 0}):
        result = ansible.run("volumeattachment", dict(args, wait_timeout=5))
        assert result["_rc"] == 0 and not result["changed"] and result["deleted"] == [], result
        assert result["kept"][0]["name"] == name and "volumesInUse" in result["kept"][0]["why"]
        assert kube.get(VAS + "/" + name)["metadata"].get("deletionTimestamp") is None
    # once kubelet no longer lists it, the attachment is stale (no pod uses it) and is deleted
    kube.status("/api/v1/nodes/" + node, {"volumesInUse": []})
    result = ansible.run("volumeattachment", {"name": name, "force": True, "force_grace": 0, "wait_timeout": 30})
    assert result["_rc"] == 0 and result["deleted"] == [name], result
    assert wait_until(lambda: kube.get(VAS + "/" + name) is None, 30)


@pytest.mark.parametrize("module", ["volumeattachment", "volumeattachment_info"])
def test_a_node_that_names_nothing_warns_a_gone_node_with_attachments_does_not(ansible, kube, world, module):
    """Issue 17: node=<typo> (no such node, no attachment to it) warns loudly with the cluster's nodes
    and selects nothing; a node deleted while its attachments stay is the usual stale case: no warning."""
    before = kube.list(VAS, label_selector="volfence.io/test=" + world["label"])
    typo = "vft-%s-zz" % world["label"]
    result = ansible.run(module, {"node": typo, "wait_timeout": 10} if module == "volumeattachment" else {"node": typo})
    assert result["_rc"] == 0 and not result["changed"] and result["volumeattachments"] == [], result
    warning = [w for w in result["_warnings"] if "no node named %s and no VolumeAttachment to it" % typo in w]
    assert warning and world["a"] in warning[0] and world["b"] in warning[0], result["_warnings"]
    kube.delete("/api/v1/nodes/" + world["b"])
    gone = ansible.run(module, {"node": world["b"]}, check=True)
    assert gone["_rc"] == 0 and [v["name"] for v in gone["volumeattachments"]] == [world["va0"]], gone
    assert "node_missing" in gone["volumeattachments"][0]["stale_reasons"]
    assert not [w for w in gone["_warnings"] if "no node named" in w], gone["_warnings"]
    assert kube.list(VAS, label_selector="volfence.io/test=" + world["label"]) == before


def stale_attachments(world, count):
    """`count` more stale attachments on NotReady node B, each of its own PV; their names."""
    b, label = world["builder"], world["label"]
    names = []
    for i in range(count):
        pv = "vft-%s-pvm-%d" % (label, i)
        b.pv(pv, DRIVER, "%s-hm-%d" % (label, i), claim="vft-%s-cm-%d" % (label, i))
        names.append(b.va(pv, DRIVER, "%s-hm-%d" % (label, i), world["b"]))
    return names


def test_names_in_one_call_keep_the_safety_checks(ansible, kube, world):
    """names: 20 stale attachments and the healthy one in one call: the stale ones are deleted (force removes the
    fake driver's finalizer), the healthy one is kept with its reason; a re-run changes nothing."""
    names = stale_attachments(world, 20)
    args = {"names": names + [world["va1"]], "force": True, "force_grace": 0, "wait_timeout": 60, "parallel": 8}
    result = ansible.run("volumeattachment", args)
    assert result["_rc"] == 0 and result["changed"], result
    assert sorted(result["deleted"]) == sorted(names) and [k["name"] for k in result["kept"]] == [world["va1"]]
    assert all(kube.get(VAS + "/" + n) is None for n in names)
    assert kube.get(VAS + "/" + world["va1"])["metadata"].get("deletionTimestamp") is None
    again = ansible.run("volumeattachment", args)
    assert again["_rc"] == 0 and not again["changed"] and again["deleted"] == []
    assert any("20 of the 21 VolumeAttachment name(s) not found" in w for w in again["_warnings"])


def test_names_one_failing_the_rest_done_rerun_finishes(ansible, kube, emu, world):
    names = stale_attachments(world, 20)
    bad = names[5]
    emu.fault(method="DELETE", path_regex="/volumeattachments/%s$" % bad, status=500, count=0,
              message="etcdserver: leader changed")
    args = {"names": names, "force": True, "force_grace": 0, "wait_timeout": 60, "api_retries": 1}
    result = ansible.run("volumeattachment", args)
    assert result["_rc"] != 0 and result["failed"] and result["changed"], result
    assert [f["name"] for f in result["failures"]] == [bad]
    assert result["msg"].startswith("1 of 20 selected VolumeAttachment(s) could not be handled: %s: Failed to delete "
                                    "VolumeAttachment %s: 500 InternalError: etcdserver: leader changed" % (bad, bad))
    assert sorted(result["deleted"]) == sorted(n for n in names if n != bad)
    assert [n for n in names if kube.get(VAS + "/" + n) is not None] == [bad]
    emu.clear_faults()
    again = ansible.run("volumeattachment", args)
    assert again["_rc"] == 0 and again["changed"] and again["deleted"] == [bad], again
    assert kube.get(VAS + "/" + bad) is None


def test_names_and_name_are_exclusive_and_checked(ansible, world):
    result = ansible.run("volumeattachment", {"name": world["va0"], "names": [world["va0"]]})
    assert result["_rc"] != 0 and "mutually exclusive: name|names" in result["msg"]
    result = ansible.run("volumeattachment", {"names": [world["va0"], "Not_A_Name"]})
    assert result["_rc"] != 0 and "names[1] 'Not_A_Name' is not a valid Kubernetes object name" in result["msg"]

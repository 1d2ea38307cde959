"""networkfence and networkfence_info through ansible, against the emulator with the CSI-Addons
CRDs loaded (or a real cluster when KUBECONFIG is set: see README.md)."""

import time

import pytest

from k8s_helpers import FENCE_CLASS_PARAMETERS, FENCES, REAL_CLUSTER, TEST_LABEL, Builder, wait_until

DRIVER = "vft.csi.example.com"
SECRET = {"name": "vft-secret", "namespace": "default"}


@pytest.fixture
def world(kube, crds, label, cleanup):
    """Node A Ready (198.51.100.11), node B NotReady (198.51.100.12), a NetworkFenceClass for DRIVER and a
    Connected CSIAddonsNode of DRIVER."""
    b = Builder(kube, label, cleanup)
    w = dict(builder=b)
    w["a"] = b.node("vft-%s-a" % label, "198.51.100.11")
    w.update(b.fence_target(DRIVER))
    return w


def fence_args(world, **extra):
    """The module arguments of the test's fence; a None in `extra` removes that argument."""
    args = {"name": world["fence"], "network_fence_class": world["class"], "cidrs": ["198.51.100.12/32"],
            "fence_state": "Fenced", "labels": world["labels"]}
    args.update(extra)
    return dict((k, v) for k, v in args.items() if v is not None)


def get_fence(kube, name):
    return kube.get(FENCES + "/" + name)


def test_fence_with_a_class_waits_for_the_result(ansible, kube, world, stand_in):
    result = ansible.run("networkfence", fence_args(world), diff=True)
    assert result["_rc"] == 0 and result["changed"], result
    (fence,) = result["fences"]
    assert fence["action"] == "create" and fence["outcome"] == "Succeeded" and fence["result"] == "Succeeded"
    assert fence["driver"] == DRIVER and fence["network_fence_class"] == world["class"]
    assert fence["nodes"] == [{"name": world["b"], "ready": "Unknown", "addresses": ["198.51.100.12"],
                               "cidrs": ["198.51.100.12/32"]}]
    assert result["diff"]["after"]["networkFenceClassName"] == world["class"] and result["diff"]["before"] == {}
    assert not [w for w in result["_warnings"] if "CSIAddonsNode" in w]
    again = ansible.run("networkfence", fence_args(world))
    assert again["_rc"] == 0 and not again["changed"] and again["fences"][0]["action"] == "none"
    info = ansible.run("networkfence_info", {"node": world["b"]})
    assert [f["name"] for f in info["fences"]] == [world["fence"]]
    assert [c for c in info["classes"] if c["name"] == world["class"]] == [{
        "name": world["class"], "provisioner": DRIVER,
        "parameters": FENCE_CLASS_PARAMETERS}], info["classes"]


def test_older_shape_then_unfence(ansible, kube, world, stand_in):
    args = {"name": world["fence"], "driver": DRIVER, "secret": SECRET, "parameters": {"clusterID": "lab"},
            "cidrs": ["198.51.100.12"], "fence_state": "Fenced", "labels": world["labels"]}
    result = ansible.run("networkfence", args)
    assert result["_rc"] == 0 and result["fences"][0]["outcome"] == "Succeeded", result
    assert any("deprecated upstream" in w for w in result["_warnings"])
    obj = get_fence(kube, world["fence"])
    assert obj["spec"] == {"fenceState": "Fenced", "cidrs": ["198.51.100.12/32"], "driver": DRIVER, "secret": SECRET,
                           "parameters": {"clusterID": "lab"}}
    # flip to Unfenced: only fence_state is needed, the rest stays
    result = ansible.run("networkfence", {"name": world["fence"], "fence_state": "Unfenced"}, diff=True)
    assert result["_rc"] == 0 and result["changed"] and result["fences"][0]["outcome"] == "Succeeded", result
    assert result["fences"][0]["message"] == "unfencing operation successful"
    assert result["diff"]["before"]["fenceState"] == "Fenced" and result["diff"]["after"]["fenceState"] == "Unfenced"
    assert get_fence(kube, world["fence"])["spec"]["fenceState"] == "Unfenced"


def test_controller_failure_fails_with_its_message(ansible, kube, world, stand_in):
    stand_in.refuse.add("198.51.100.12/32")
    result = ansible.run("networkfence", fence_args(world))
    assert result["failed"] and result["changed"], result
    assert "the CSI-Addons controller reports Failed (Fenced): rpc error: code = Internal desc = failed to fence " \
           "198.51.100.12/32: permission denied" in result["msg"]
    assert result["fences"][0]["outcome"] == "Failed" and result["summary"]["failed"] == 1


def test_ready_node_is_refused_unless_forced(ansible, kube, world, stand_in):
    args = fence_args(world, name="vft-%s-fence-net" % world["label"], cidrs=["198.51.100.0/28"])
    result = ansible.run("networkfence", args)
    assert result["failed"] and not result.get("changed"), result
    assert "would fence Ready node(s) %s (198.51.100.11 via 198.51.100.0/28)" % world["a"] in result["msg"]
    assert "Nothing was changed" in result["msg"]
    assert get_fence(kube, args["name"]) is None
    preview = ansible.run("networkfence", dict(args, force=True), check=True)
    assert preview["changed"] and get_fence(kube, args["name"]) is None
    assert sorted(n["name"] for n in preview["fences"][0]["nodes"]) == sorted([world["a"], world["b"]])
    result = ansible.run("networkfence", dict(args, force=True))
    assert result["_rc"] == 0 and result["changed"] and any("force=true" in w for w in result["_warnings"])


@pytest.mark.parametrize("cidr", ["::ffff:198.51.100.11/128", "::ffff:198.51.100.0/124"])
def test_i1_ipv4_mapped_ipv6_cidr_of_a_ready_node_is_refused(ansible, kube, world, stand_in, cidr):
    """I1 (issue 11 item 4): ::ffff:<node-a's IPv4> is node-a's address; before, it passed the interlock."""
    args = fence_args(world, name="vft-%s-fence-mapped" % world["label"], cidrs=[cidr])
    result = ansible.run("networkfence", args)
    assert result["failed"] and not result.get("changed"), result
    assert "would fence Ready node(s) %s (198.51.100.11 via %s)" % (world["a"], cidr) in result["msg"]
    assert get_fence(kube, args["name"]) is None


def test_i1_address_shared_with_a_ready_node_is_refused(ansible, kube, world, stand_in):
    """I1 (issue 11 items 1 and 4): node-b (NotReady) lists an ExternalIP that Ready node-s also lists (written
    IPv4-mapped); fencing it is refused, naming both nodes."""
    b = world["builder"]
    shared = b.node("vft-%s-s" % world["label"], "198.51.100.13", addresses=[("ExternalIP", "::ffff:198.51.100.40")])
    kube.status("/api/v1/nodes/" + world["b"], {"addresses": [
        {"type": "InternalIP", "address": "198.51.100.12"}, {"type": "ExternalIP", "address": "198.51.100.40"}]})
    args = fence_args(world, cidrs=["198.51.100.40/32"])
    result = ansible.run("networkfence", args)
    assert result["failed"] and not result.get("changed"), result
    assert "would fence Ready node(s) %s (198.51.100.40 via 198.51.100.40/32)" % shared in result["msg"]
    assert "several nodes list: 198.51.100.40 (nodes %s, via 198.51.100.40/32)" % ", ".join(
        sorted([world["b"], shared])) in result["msg"]
    assert get_fence(kube, args["name"]) is None


def test_i1_ready_node_without_an_ip_blocks_unlisted_addresses_unless_forced(ansible, kube, world, stand_in):
    """I1 (issue 11 item 4): while a Ready node lists no IP, a CIDR holding an address no node lists is refused
    (it could be that node's), naming the node; node-b's own /32 stays allowed; force=true overrides."""
    noip = world["builder"].node("vft-%s-noip" % world["label"], None)
    unlisted = fence_args(world, name="vft-%s-fence-x" % world["label"], cidrs=["198.51.100.99/32"])
    result = ansible.run("networkfence", unlisted)
    assert result["failed"] and not result.get("changed"), result
    assert "while Ready node(s) %s list no IP address" % noip in result["msg"]
    assert "198.51.100.99/32" in result["msg"] and get_fence(kube, unlisted["name"]) is None
    result = ansible.run("networkfence", fence_args(world))
    assert result["_rc"] == 0 and result["changed"], result
    result = ansible.run("networkfence", dict(unlisted, force=True))
    assert result["_rc"] == 0 and result["changed"], result
    assert any("list no IP address" in w and "force=true" in w for w in result["_warnings"])


@pytest.mark.parametrize("args, message", [
    ({"cidrs": ["198.51.100.12/24"]}, "CIDR '198.51.100.12/24' is ambiguous (host bits set): write 198.51.100.0/24 "
                                      "for the whole network"),
    ({"cidrs": ["198.51.100.300"]}, "CIDR '198.51.100.300' is not an IP address"),
    ({"cidrs": ["::/0"]}, "would fence every address"),
    ({"fence_state": "fenced"}, "value of fence_state must be one of: Fenced, Unfenced, got: fenced"),
    ({"fence_state": "Unknown"}, "value of fence_state must be one of: Fenced, Unfenced"),
    ({"network_fence_class": "vft-no-such-class"}, "NetworkFenceClass vft-no-such-class (for NetworkFence"),
])
def test_bad_input_changes_nothing(ansible, kube, world, args, message):
    result = ansible.run("networkfence", fence_args(world, **args))
    assert result["failed"] and message in result["msg"], result
    assert get_fence(kube, world["fence"]) is None


def test_immutable_fields_are_explained_not_worked_around(ansible, kube, world, stand_in):
    assert ansible.run("networkfence", fence_args(world))["_rc"] == 0
    before = get_fence(kube, world["fence"])
    result = ansible.run("networkfence", {"name": world["fence"], "driver": "other.csi.example.com",
                                          "secret": SECRET, "fence_state": "Unfenced"})
    assert result["failed"], result
    assert "spec.networkFenceClassName is immutable" not in result["msg"]
    assert "spec.driver is immutable (the CSI-Addons CRD rejects any change" in result["msg"]
    assert "unfence and delete the fence (state=absent) and create it again" in result["msg"]
    after = get_fence(kube, world["fence"])
    assert after["spec"] == before["spec"] and after["metadata"]["resourceVersion"] == \
        before["metadata"]["resourceVersion"]


def test_absent_unfences_then_deletes(ansible, kube, world, stand_in):
    assert ansible.run("networkfence", fence_args(world))["_rc"] == 0
    preview = ansible.run("networkfence", {"name": world["fence"], "state": "absent"}, check=True)
    assert preview["changed"] and preview["fences"][0]["action"] == "unfence_and_delete"
    assert get_fence(kube, world["fence"])["spec"]["fenceState"] == "Fenced"
    result = ansible.run("networkfence", {"name": world["fence"], "state": "absent"})
    assert result["_rc"] == 0 and result["changed"] and result["fences"][0]["state"] == "absent", result
    assert get_fence(kube, world["fence"]) is None
    # the stand-in saw the unfence (generation 2) before the deletion
    assert (world["fence"], 2, "Succeeded") in stand_in.answered
    again = ansible.run("networkfence", {"name": world["fence"], "state": "absent"})
    assert again["_rc"] == 0 and not again["changed"]


def test_warns_when_no_csiaddonsnode_is_connected(ansible, kube, world):
    args = fence_args(world, name="vft-%s-other" % world["label"], network_fence_class=None,
                      driver="nobody.csi.example.com", secret=SECRET, wait=False)
    result = ansible.run("networkfence", args)
    assert result["_rc"] == 0 and result["changed"], result
    assert any("No CSIAddonsNode of driver nobody.csi.example.com is Connected" in w for w in result["_warnings"])


def test_wait_timeout_names_the_missing_controller(ansible, kube, world):
    args = fence_args(world, name="vft-%s-other" % world["label"], network_fence_class=None,
                      driver="nobody.csi.example.com", secret=SECRET, wait_timeout=3)
    result = ansible.run("networkfence", args)
    assert result["failed"] and result["changed"], result
    assert "no result from the CSI-Addons controller after wait_timeout=3s (no Connected CSIAddonsNode for driver " \
           "nobody.csi.example.com)" in result["msg"]


def many(world, count):
    return [{"name": "vft-%s-n%04d" % (world["label"], i), "cidrs": ["10.%d.%d.%d/32" % (
        200 + i // 65536, (i // 256) % 256, i % 256)]} for i in range(count)]


def test_one_unfenced_fence_per_node_for_many_nodes(ansible, kube, world, target):
    """The csi_addons role's call: 300 Unfenced fences in one call, one write each; the second run
    writes nothing. (100 fences on a real cluster.) The time of 1,000 is make bench's
    (scripts/bench_node_fences.py, goal 20 s): a timing here would only measure the machine's load."""
    count = 100 if REAL_CLUSTER else 300
    args = {"fences": many(world, count), "network_fence_class": world["class"], "fence_state": "Unfenced",
            "labels": world["labels"], "wait": False}
    emu = None
    if target["emulator"] is not None:
        from k8s_helpers import Admin
        emu = Admin(target["emulator"].url)
    seq = emu.last_seq() if emu else 0
    started = time.time()
    result = ansible.run("networkfence", args)
    elapsed = time.time() - started
    assert result["_rc"] == 0, result.get("msg")
    assert result["summary"] == {"created": count, "updated": 0, "deleted": 0, "unchanged": 0, "failed": 0}
    print("\n%d fences in one call: %.1f s" % (count, elapsed))
    if emu:
        assert len(emu.module_writes(seq)) == count
        seq = emu.last_seq()
    started = time.time()
    again = ansible.run("networkfence", args)
    print("second run: %.1f s" % (time.time() - started))
    assert again["_rc"] == 0 and not again["changed"]
    assert again["summary"]["unchanged"] == count
    if emu:
        writes = emu.module_writes(seq)
        reads = emu.module_requests(seq)
        print("second run: %d requests, %d writes" % (len(reads), len(writes)))
        assert writes == [] and len(reads) <= 6
    # fencing one node later flips one fence, and only that one is written
    entries = args["fences"]
    entries[7] = dict(entries[7], fence_state="Fenced")
    entries[7]["cidrs"] = ["198.51.100.12/32"]
    seq = emu.last_seq() if emu else 0
    flip = ansible.run("networkfence", dict(args, fences=entries))
    assert flip["_rc"] == 0 and flip["summary"]["updated"] == 1, flip.get("msg")
    if emu:
        assert [r["method"] for r in emu.module_writes(seq)] == ["PATCH"]


# --------------------------------------------------------------------------- faults (emulator only)

def test_conflict_on_update_is_retried(ansible, kube, emu, world, stand_in):
    assert ansible.run("networkfence", fence_args(world))["_rc"] == 0
    emu.fault(method="PATCH", path_regex="/networkfences/%s$" % world["fence"], status=409, count=1)
    seq = emu.last_seq()
    result = ansible.run("networkfence", {"name": world["fence"], "fence_state": "Unfenced"})
    assert result["_rc"] == 0 and result["changed"] and result["fences"][0]["outcome"] == "Succeeded", result
    patches = [(r["path"].rsplit("/", 1)[-1], r["status"]) for r in emu.module_writes(seq)]
    assert patches == [("status", 200), (world["fence"], 409), (world["fence"], 200)]


def test_server_error_on_create_is_retried_without_duplicates(ansible, kube, emu, world):
    emu.fault(method="POST", path_regex="/networkfences$", status=500, count=1)
    seq = emu.last_seq()
    result = ansible.run("networkfence", fence_args(world, wait=False))
    assert result["_rc"] == 0 and result["changed"], result
    assert [r["status"] for r in emu.module_writes(seq)] == [500, 201]


def test_timeout_on_create_is_recognised(ansible, kube, emu, world):
    # applied after 3 s, the module gave up after 1 s: its re-read finds the fence and does not create it again
    emu.fault(method="POST", path_regex="/networkfences$", delay=3, count=1)
    seq = emu.last_seq()
    result = ansible.run("networkfence", fence_args(world, wait=False, request_timeout=1, api_retries=5))
    assert result["_rc"] == 0 and result["changed"], result
    assert get_fence(kube, world["fence"])["spec"]["cidrs"] == ["198.51.100.12/32"]
    # the delayed POST lands after the module's own retry: the server refuses it, no duplicate
    posts = wait_until(lambda: [r for r in emu.module_writes(seq) if r["method"] == "POST"][1:] and
                       [r for r in emu.module_writes(seq) if r["method"] == "POST"], timeout=10)
    assert sorted(r["status"] for r in posts) == [201, 409], posts


def test_persistent_errors_fail_clearly_and_report_what_was_applied(ansible, kube, emu, world):
    fences = many(world, 3)
    emu.fault(method="POST", path_regex="/networkfences$", status=500, count=0, skip=2,
              message="etcdserver: request timed out")
    result = ansible.run("networkfence", {"fences": fences, "network_fence_class": world["class"],
                                          "fence_state": "Unfenced", "labels": world["labels"], "wait": False,
                                          "parallel": 1})
    assert result["failed"] and result["changed"], result
    assert result["summary"] == {"created": 2, "updated": 0, "deleted": 0, "unchanged": 0, "failed": 1}
    assert "1 of 3 NetworkFence(s) failed: Failed to create NetworkFence %s: 500 InternalError: etcdserver: " \
           "request timed out" % fences[2]["name"] in result["msg"]
    assert "Changed anyway: %s, %s" % (fences[0]["name"], fences[1]["name"]) in result["msg"]
    assert result["status"] == 500 and result["object"] == {"kind": "NetworkFence", "name": fences[2]["name"]}
    assert get_fence(kube, fences[2]["name"]) is None and get_fence(kube, fences[0]["name"]) is not None


def test_crd_not_installed_is_a_clear_error(tmp_path):
    """A second, empty emulator: no CSI-Addons CRDs at all."""
    if REAL_CLUSTER:
        pytest.skip("emulator-only: needs a cluster without the CSI-Addons CRDs")
    from kubeemu.server import EmulatorServer
    from k8s_helpers import Admin, AnsibleRunner
    srv = EmulatorServer(port=0).start()
    try:
        runner = AnsibleRunner(tmp_path, kubeconfig=srv.write_kubeconfig(str(tmp_path / "kubeconfig")))
        result = runner.run("networkfence", {"name": "nf", "driver": DRIVER, "secret": SECRET,
                                             "cidrs": ["198.51.100.12"], "fence_state": "Fenced"})
        assert result["failed"] and "the CSI-Addons NetworkFence CRD (networkfences.csiaddons.openshift.io) is " \
                                     "not installed" in result["msg"], result
        assert "nothing was changed" in result["msg"]
        info = runner.run("networkfence_info", {})
        assert info["failed"] and "is not installed" in info["msg"]
        assert [r for r in Admin(srv.url).requests() if r["method"] != "GET"] == []
    finally:
        srv.stop()


def test_wait_sees_the_answer_to_this_change(ansible, kube, emu, world, stand_in):
    """The previous Succeeded must not satisfy the wait: the module clears it before changing cidrs."""
    assert ansible.run("networkfence", fence_args(world))["_rc"] == 0
    stand_in.delay = 2.0
    started = time.time()
    result = ansible.run("networkfence", {"name": world["fence"], "cidrs": ["198.51.100.12", "198.51.100.99"]})
    assert result["_rc"] == 0 and result["fences"][0]["outcome"] == "Succeeded", result
    assert time.time() - started >= 2.0
    assert wait_until(lambda: (world["fence"], 2, "Succeeded") in stand_in.answered, 60)


def test_bad_input_sends_no_request_at_all(ansible, emu, world):
    """Invalid CIDRs and fence states are refused before the module connects."""
    seq = emu.last_seq()
    for args in ({"cidrs": ["198.51.100.12/24"]}, {"fence_state": "fenced"}, {"cidrs": ["::/0"]}):
        assert ansible.run("networkfence", fence_args(world, **args))["failed"]
    assert emu.module_requests(seq) == []
    result = ansible.run("networkfence", fence_args(world, network_fence_class="vft-no-such-class"))
    assert result["failed"] and emu.module_writes(seq) == [] and len(emu.module_requests(seq)) > 0


def test_action_group_module_defaults(ansible, world, target, stand_in):
    """module_defaults: group/volfence.csi.k8s sets the connection of every module of the group."""
    text = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/volfence.csi.k8s:
      kubeconfig: %(kubeconfig)s
      request_timeout: 20
  tasks:
    - name: fence
      volfence.csi.networkfence:
        name: %(fence)s
        network_fence_class: %(cls)s
        cidrs: [198.51.100.12/32]
        fence_state: Fenced
        labels: {%(key)s: %(label)s}
    - name: fences
      volfence.csi.networkfence_info:
        node: %(node)s
    - name: attachments
      volfence.csi.volumeattachment_info:
        node: %(node)s
""" % dict(kubeconfig=target["kubeconfig"], fence=world["fence"], cls=world["class"], node=world["b"],
           key=TEST_LABEL, label=world["label"])
    rc, results = ansible.playbook(text, extra_env={"K8S_AUTH_KUBECONFIG": ""})
    assert rc == 0, results
    assert results[0]["changed"] and results[0]["fences"][0]["outcome"] == "Succeeded"
    assert [f["name"] for f in results[1]["fences"]] == [world["fence"]]
    assert results[2]["volumeattachments"] == []

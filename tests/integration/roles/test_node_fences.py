"""The node_fences role: its molecule scenario on the lab (the lab's CSI-Addons stand-in acts on the
fences in the real Ceph cluster), and on an isolated API emulator the paths the scenario does not
take: the deprecated shape, IPv6 and address types, names of very long node names, check mode,
a node selector with pruning, changed addresses, fences of other owners, missing CRDs, bad input."""

import re

import pytest

from roles_helpers import NF_API, Cluster, RoleRunner, molecule_failure, node, run_molecule

FENCES = NF_API + "/networkfences"
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
CLASS = {"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFenceClass", "metadata": {"name": "rbd-fence"},
         "spec": {"provisioner": "rbd.csi.ceph.com", "parameters": {
             "csiaddons.openshift.io/networkfence-secret-name": "csi-rbd-provisioner",
             "csiaddons.openshift.io/networkfence-secret-namespace": "ceph-csi"}}}
OURS = {"app.kubernetes.io/managed-by": "volfence.csi.node_fences", "node-fences.volfence.io/set": "default"}


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, fences=True)
    c.load_lab_crds()
    c.create(NF_API + "/networkfenceclasses", CLASS)
    # ceph-csi's ConfigMap of monitors, as its install has it (networkfence refuses where it cannot read them);
    # the monitor is outside every CIDR these tests fence
    c.store([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ceph-csi-config", "namespace": "ceph-csi"},
              "data": {"config.json": '[{"clusterID": "c1", "monitors": ["192.0.2.254:6789"]}]'}}])
    yield c
    c.close()


@pytest.fixture
def role(tmp_path, cluster):
    return RoleRunner(tmp_path, "node_fences", cluster.kubeconfig)


def fences(cluster):
    return dict((f["metadata"]["name"], f) for f in cluster.items(FENCES))


def fence(name, cidrs, state, node_key, labels=OURS):
    return {"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFence",
            "metadata": {"name": name, "labels": dict(labels, **{"node-fences.volfence.io/node": node_key})},
            "spec": {"fenceState": state, "cidrs": cidrs, "networkFenceClassName": "rbd-fence"},
            "status": {"result": "Succeeded", "message": "%s operation successful" % (
                "fencing" if state == "Fenced" else "unfencing")}}


def test_molecule_scenario_on_the_lab(clean_lab, lab_inventory, tmp_path):
    """molecule test -s node_fences: converge (one Unfenced fence per lab node, extra CIDRs, leftovers of
    deleted nodes pruned, a Fenced one kept), idempotence, verify, side effects (a fence flipped to Fenced
    is left alone, bad input refused, removal with and without the explicit force)."""
    rc, output = run_molecule("node_fences", tmp_path, {"VOLFENCE_LAB_INVENTORY": lab_inventory})
    assert rc == 0, molecule_failure(output)
    for action in ("syntax", "prepare", "converge", "idempotence", "verify", "side_effect", "cleanup"):
        assert re.search(r"node_fences (➜|>) %s: Executed: Successful" % action, output), action


def test_deprecated_shape_ipv6_address_types_and_long_names(cluster, role):
    long_name = ".".join(["n%02d" % i + "x" * 59 for i in range(4)])[:250].rstrip(".")
    cluster.store([
        node("dual", [("InternalIP", "192.0.2.10"), ("InternalIP", "fd00:10::a"), ("ExternalIP", "203.0.113.10"),
                      ("Hostname", "dual")]),
        node(long_name, [("InternalIP", "192.0.2.11")]),
    ])
    args = dict(node_fences_driver="rbd.csi.ceph.com", node_fences_secret_name="csi-rbd-provisioner",
                node_fences_secret_namespace="ceph-csi", node_fences_parameters={"clusterID": "openshift-storage"},
                node_fences_address_types=["InternalIP", "ExternalIP"])
    run = role.run(**args)
    assert not run.failed, run.msg
    got = fences(cluster)
    dual = got["volfence-dual"]
    assert dual["spec"] == {"fenceState": "Unfenced", "cidrs": ["192.0.2.10/32", "fd00:10::a/128", "203.0.113.10/32"],
                            "driver": "rbd.csi.ceph.com", "secret": {"name": "csi-rbd-provisioner", "namespace": "ceph-csi"},
                            "parameters": {"clusterID": "openshift-storage"}}
    assert dual["metadata"]["labels"]["node-fences.volfence.io/node"] == "dual"
    hashed = [n for n in got if n != "volfence-dual"]
    assert len(hashed) == 1 and len(hashed[0]) <= 253 and DNS_SUBDOMAIN.match(hashed[0]), hashed
    label = got[hashed[0]]["metadata"]["labels"]["node-fences.volfence.io/node"]
    assert len(label) == 40 and re.match(r"^[0-9a-f]+$", label)
    assert run.facts["node_fences_report"]["summary"]["created"] == 2
    again = role.run(**args)
    assert not again.failed and again.changed_tasks == []
    assert again.facts["node_fences_report"]["summary"]["unchanged"] == 2


def test_check_mode_writes_nothing_and_reports(cluster, role):
    cluster.store([node("a", [("InternalIP", "192.0.2.21")]), node("b", [("InternalIP", "192.0.2.22")])])
    seq = cluster.last_seq()
    run = role.run(check=True, diff=True, node_fences_network_fence_class="rbd-fence")
    assert not run.failed, run.msg
    assert run.facts["node_fences_report"]["summary"]["created"] == 2
    assert cluster.writes_since(seq) == [] and fences(cluster) == {}


def test_selector_prunes_only_fences_of_deleted_nodes(cluster, role):
    storage = {"node-role.kubernetes.io/storage": ""}
    cluster.store([node("a", [("InternalIP", "192.0.2.31")], labels=storage),
                   node("b", [("InternalIP", "192.0.2.32")], labels=storage),
                   node("c", [("InternalIP", "192.0.2.33")]),
                   fence("volfence-c", ["192.0.2.33/32"], "Unfenced", "c"),
                   fence("volfence-gone", ["192.0.2.34/32"], "Unfenced", "gone"),
                   fence("volfence-gone-fenced", ["192.0.2.35/32"], "Fenced", "gone-fenced"),
                   fence("volfence-other-set", ["192.0.2.36/32"], "Unfenced", "gone-too",
                         labels=dict(OURS, **{"node-fences.volfence.io/set": "cephfs"}))])
    run = role.run(node_fences_network_fence_class="rbd-fence", node_fences_node_selector="node-role.kubernetes.io/storage")
    assert not run.failed, run.msg
    report = run.facts["node_fences_report"]
    assert report["nodes"] == 2 and report["pruned"] == ["volfence-gone"]
    assert report["kept_fenced_orphans"] == ["volfence-gone-fenced"]
    assert sorted(fences(cluster)) == ["volfence-a", "volfence-b", "volfence-c", "volfence-gone-fenced",
                                       "volfence-other-set"]
    again = role.run(node_fences_network_fence_class="rbd-fence", node_fences_node_selector="node-role.kubernetes.io/storage")
    assert not again.failed and again.changed_tasks == []


def test_prune_off_keeps_everything_and_a_new_prefix_replaces_old_fences(cluster, role):
    cluster.store([node("a", [("InternalIP", "192.0.2.91")]),
                   fence("old-a", ["192.0.2.91/32"], "Unfenced", "a"),
                   fence("volfence-gone", ["192.0.2.92/32"], "Unfenced", "gone")])
    kept = role.run(node_fences_network_fence_class="rbd-fence", node_fences_prune=False)
    assert not kept.failed, kept.msg
    assert sorted(fences(cluster)) == ["old-a", "volfence-a", "volfence-gone"]
    pruned = role.run(node_fences_network_fence_class="rbd-fence")
    assert not pruned.failed, pruned.msg
    assert pruned.facts["node_fences_report"]["pruned"] == ["old-a", "volfence-gone"]
    assert sorted(fences(cluster)) == ["volfence-a"]


def test_changed_addresses_update_unfenced_fences_only(cluster, role):
    cluster.store([node("a", [("InternalIP", "192.0.2.41")]), node("b", [("InternalIP", "192.0.2.42")]),
                   fence("volfence-a", ["192.0.2.141/32"], "Unfenced", "a"),
                   fence("volfence-b", ["192.0.2.142/32"], "Fenced", "b")])
    run = role.run(node_fences_network_fence_class="rbd-fence")
    assert not run.failed, run.msg
    got = fences(cluster)
    assert got["volfence-a"]["spec"]["cidrs"] == ["192.0.2.41/32"] and got["volfence-a"]["spec"]["fenceState"] == "Unfenced"
    assert got["volfence-b"]["spec"] == {"fenceState": "Fenced", "cidrs": ["192.0.2.142/32"], "networkFenceClassName": "rbd-fence"}
    assert run.facts["node_fences_report"]["summary"]["updated"] == 1
    assert run.facts["node_fences_report"]["fenced"] == ["volfence-b"]


def test_fence_of_another_owner_is_not_taken_over(cluster, role):
    cluster.store([node("a", [("InternalIP", "192.0.2.51")]), node("b", [("InternalIP", "192.0.2.52")]),
                   fence("volfence-a", ["192.0.2.51/32"], "Unfenced", "a", labels={"team": "storage"})])
    seq = cluster.last_seq()
    run = role.run(node_fences_network_fence_class="rbd-fence")
    assert run.failed and "NetworkFence(s) volfence-a already exist without the labels of this set" in run.msg
    assert "nothing was changed" in run.msg and cluster.writes_since(seq) == []


def test_nodes_without_an_address_of_the_types_get_no_fence(cluster, role):
    cluster.store([node("a", [("InternalIP", "192.0.2.61")]), node("b", [("Hostname", "b")])])
    run = role.run(node_fences_network_fence_class="rbd-fence")
    assert not run.failed, run.msg
    assert run.facts["node_fences_report"]["nodes_without_addresses"] == ["b"]
    assert sorted(fences(cluster)) == ["volfence-a"]


def test_missing_class_is_refused_by_the_module_before_any_write(cluster, role):
    cluster.store([node("a", [("InternalIP", "192.0.2.71")])])
    seq = cluster.last_seq()
    run = role.run(node_fences_network_fence_class="no-such-class")
    assert run.failed and "NetworkFenceClass no-such-class (for NetworkFence volfence-a) does not exist" in run.msg
    assert cluster.writes_since(seq) == []


def test_crds_not_installed_is_a_clear_error(tmp_path):
    """A clear error; in check mode (a site playbook whose csi_addons run only pretended to install the
    CRDs) a notice instead."""
    bare = Cluster(tmp_path)
    try:
        runner = RoleRunner(tmp_path, "node_fences", bare.kubeconfig)
        run = runner.run(node_fences_network_fence_class="rbd-fence")
        check = runner.run(check=True, node_fences_network_fence_class="rbd-fence")
    finally:
        bare.close()
    assert run.failed and "the CSI-Addons CRDs are not installed" in run.msg and "volfence.csi.csi_addons" in run.msg
    assert not check.failed, check.msg
    assert any("does not serve NetworkFence objects yet" in (r.get("msg") or "") for r in check.results("localhost"))


BAD_INPUT = [
    ({}, "give exactly one of node_fences_network_fence_class"),
    ({"node_fences_network_fence_class": "c", "node_fences_driver": "d"}, "give exactly one of"),
    ({"node_fences_driver": "rbd.csi.ceph.com"}, "node_fences_driver needs node_fences_secret_name"),
    ({"node_fences_network_fence_class": "c", "node_fences_parameters": {"clusterID": "x"}}, "belong in the NetworkFenceClass c"),
    ({"node_fences_network_fence_class": "c", "node_fences_name_prefix": "Fence_"}, "node_fences_name_prefix must be"),
    ({"node_fences_network_fence_class": "c", "node_fences_set": "a/b"}, "node_fences_set must be a label value"),
    ({"node_fences_network_fence_class": "c", "node_fences_extra_cidrs": {"a": "10.0.0.0/8"}}, "node_fences_extra_cidrs must map"),
    ({"node_fences_network_fence_class": "c", "node_fences_state": "gone"}, "node_fences_state"),
    ({"node_fences_network_fence_class": "c", "node_fences_extra_cidrs": {"a": ["10.0.0.5/8"]}}, "is ambiguous (host bits set)"),
    ({"node_fences_network_fence_class": "c", "node_fences_kubeconfig": "/nonexistent/kubeconfig"},
     "node_fences_kubeconfig: /nonexistent/kubeconfig does not exist"),
    ({"node_fences_network_fence_class": "c", "node_fences_kubeconfig": "/tmp"},
     "node_fences_kubeconfig: /tmp is a directory, not a kubeconfig file"),
]


def test_bad_input_changes_nothing(cluster, role):
    """Each case fails with a message naming the problem, and nothing is written (one playbook, one
    block/rescue per case)."""
    cluster.store([node("a", [("InternalIP", "192.0.2.81")])])
    seq = cluster.last_seq()
    refusals = role.refusals([variables for variables, _message in BAD_INPUT])
    for (variables, message), refusal in zip(BAD_INPUT, refusals):
        assert refusal is not None and message in refusal, (variables, refusal)
    assert cluster.writes_since(seq) == []


def test_a_fence_holding_a_ceph_monitor_fails_the_role_and_creates_nothing(cluster, role):
    """Issue 17: node a's extra CIDR holds the monitor ceph-csi's ConfigMap lists; the one networkfence
    call is refused (Unfenced is one patch away from Fenced) and no fence is created, not even node b's.
    node_fences_monitor_configmaps: [] is the explicit way to turn the check off."""
    cluster.store([node("a", [("InternalIP", "192.0.2.81")]), node("b", [("InternalIP", "192.0.2.82")]),
                   {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "ceph-csi-config", "namespace": "default"},
                    "data": {"config.json": '[{"clusterID": "c1", "monitors": ["192.0.2.90:6789"]}]'}}])
    seq = cluster.last_seq()
    run = role.run(node_fences_network_fence_class="rbd-fence", node_fences_extra_cidrs={"a": ["192.0.2.90/32"]})
    assert run.failed and "would hold Ceph monitor address(es) 192.0.2.90" in run.msg, run.msg
    assert "Nothing was changed" in run.msg
    assert cluster.writes_since(seq) == [] and fences(cluster) == {}
    off = role.run(node_fences_network_fence_class="rbd-fence", node_fences_extra_cidrs={"a": ["192.0.2.90/32"]},
                   node_fences_monitor_configmaps=[])
    assert not off.failed, off.msg
    assert fences(cluster)["volfence-a"]["spec"]["cidrs"] == ["192.0.2.81/32", "192.0.2.90/32"]

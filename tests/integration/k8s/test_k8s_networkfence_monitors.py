"""Issue 17 item 4 through ansible, against the emulator (or a real cluster, see README.md):
networkfence refuses, unless forced, CIDRs that hold a Ceph monitor listed in ceph-csi's
configuration, and a refusal writes nothing."""

import json

import pytest

from k8s_helpers import FENCES, Builder

DRIVER = "vft.csi.example.com"


@pytest.fixture
def world(kube, crds, label, cleanup):
    """Node B NotReady (198.51.100.12), a class and a Connected CSIAddonsNode of DRIVER, and a
    ceph-csi ConfigMap (unique name, namespace default) listing a monitor at 198.51.100.12 in the
    msgr2 addrvec form and one by host name."""
    w = Builder(kube, label, cleanup).fence_target(DRIVER)
    w["configmap"] = "vft-%s-csi-config" % label
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": w["configmap"], "namespace": "default", "labels": w["labels"]},
            "data": {"config.json": json.dumps([{"clusterID": "lab", "monitors": [
                "[v2:198.51.100.12:3300/0,v1:198.51.100.12:6789/0]", "mon-c.example.svc:6789"]}])}}
    kube.create("/api/v1/namespaces/default/configmaps", body)
    cleanup.append("/api/v1/namespaces/default/configmaps/" + w["configmap"])
    return w


def fence_args(world, **extra):
    args = {"name": world["fence"], "network_fence_class": world["class"], "cidrs": ["198.51.100.0/28"],
            "fence_state": "Fenced", "labels": world["labels"], "monitor_configmaps": [world["configmap"]]}
    args.update(extra)
    return args


def test_a_cidr_holding_a_monitor_is_refused_and_nothing_is_written(ansible, kube, world, stand_in):
    result = ansible.run("networkfence", fence_args(world))
    assert result["_rc"] != 0 and result.get("failed"), result
    assert ("would fence Ceph monitor address(es) 198.51.100.12 (monitor [v2:198.51.100.12:3300/0,"
            "v1:198.51.100.12:6789/0] of clusterID lab in ConfigMap default/%s, via 198.51.100.0/28)"
            % world["configmap"]) in result["msg"], result["msg"]
    assert "Nothing was changed" in result["msg"] and not result.get("changed")
    assert result["monitors"]["configmaps"] == ["default/" + world["configmap"]]
    assert [m["addresses"] for m in result["monitors"]["checked"]] == [["198.51.100.12"]]
    assert result["monitors"]["unchecked"] == ["mon-c.example.svc (clusterID lab in ConfigMap default/%s)"
                                               % world["configmap"]]
    assert any("mon-c.example.svc" in w and "cannot be checked" in w for w in result["_warnings"])
    assert kube.get(FENCES + "/" + world["fence"]) is None
    # the same through a namespace/name source
    again = ansible.run("networkfence", fence_args(world, monitor_configmaps=["default/" + world["configmap"]]))
    assert again["_rc"] != 0 and "Ceph monitor" in again["msg"] and kube.get(FENCES + "/" + world["fence"]) is None


def test_creating_an_unfenced_fence_holding_a_monitor_is_refused_too(ansible, kube, world, stand_in):
    """Issue 17: an Unfenced fence with a monitor's CIDR is one patch away from cutting the monitor."""
    refused = ansible.run("networkfence", fence_args(world, fence_state="Unfenced", cidrs=["198.51.100.12/32"]))
    assert refused["_rc"] != 0 and refused.get("failed"), refused
    assert ("NetworkFence %s would hold Ceph monitor address(es) 198.51.100.12" % world["fence"]) in refused["msg"]
    assert "while Unfenced: one patch to Fenced would cut the monitor off" in refused["msg"]
    assert "Nothing was changed" in refused["msg"] and not refused.get("changed")
    assert kube.get(FENCES + "/" + world["fence"]) is None
    # an Unfenced fence elsewhere is created; adding the monitor's CIDR to it is refused, nothing written
    created = ansible.run("networkfence", fence_args(world, fence_state="Unfenced", cidrs=["198.51.100.16/28"]))
    assert created["_rc"] == 0 and created["changed"], created
    before = kube.get(FENCES + "/" + world["fence"])
    added = ansible.run("networkfence", {"name": world["fence"], "cidrs": ["198.51.100.16/28", "198.51.100.12/32"],
                                         "monitor_configmaps": [world["configmap"]]})
    assert added["_rc"] != 0 and "would hold Ceph monitor address(es) 198.51.100.12" in added["msg"], added
    after = kube.get(FENCES + "/" + world["fence"])
    assert after["spec"] == before["spec"] and after["metadata"]["resourceVersion"] == before["metadata"][
        "resourceVersion"]


def test_setting_an_unfenced_fence_fenced_is_checked_too_and_force_overrides(ansible, kube, world, stand_in):
    created = ansible.run("networkfence", fence_args(world, fence_state="Unfenced", cidrs=["198.51.100.12/32"],
                                                     force=True))
    assert created["_rc"] == 0 and created["changed"], created
    assert any("would hold Ceph monitor" in w and "(force=true)" in w for w in created["_warnings"])
    before = kube.get(FENCES + "/" + world["fence"])
    refused = ansible.run("networkfence", {"name": world["fence"], "fence_state": "Fenced",
                                           "monitor_configmaps": [world["configmap"]]})
    assert refused["_rc"] != 0 and "Ceph monitor address(es) 198.51.100.12" in refused["msg"], refused
    after = kube.get(FENCES + "/" + world["fence"])
    assert after["spec"] == before["spec"] and after["metadata"]["resourceVersion"] == before["metadata"][
        "resourceVersion"]
    forced = ansible.run("networkfence", {"name": world["fence"], "fence_state": "Fenced", "force": True,
                                          "monitor_configmaps": [world["configmap"]]})
    assert forced["_rc"] == 0 and forced["changed"], forced
    assert any("Ceph monitor" in w and "(force=true)" in w for w in forced["_warnings"])
    assert kube.get(FENCES + "/" + world["fence"])["spec"]["fenceState"] == "Fenced"


def test_a_cidr_without_monitors_is_fenced_and_reports_what_was_checked(ansible, kube, world, stand_in):
    result = ansible.run("networkfence", fence_args(world, cidrs=["198.51.100.16/28"]))
    assert result["_rc"] == 0 and result["changed"], result
    assert result["monitors"]["checked"][0]["monitor"].startswith("[v2:198.51.100.12")


@pytest.mark.parametrize("args, message", [
    ({"cidrs": ["10.0.0.1; rm -rf /"]}, "CIDR '10.0.0.1; rm -rf /' is not a CIDR ('10.0.0.1; rm -rf' is not an IP "
                                        "address)"),
    ({"cidrs": ["1.2.3.4/33"]}, "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4: 0-32)"),
    ({"cidrs": ["198.51.100.5/24"]}, "CIDR '198.51.100.5/24' is ambiguous (host bits set)"),
    ({"cidrs": ["0.0.0.0/0"], "force": True}, "'0.0.0.0/0' would fence every address; refused"),
    ({"wait_timeout": -1}, "wait_timeout=-1 is out of range: give 0 to 86400 seconds"),
    ({"parallel": 0}, "parallel=0 is out of range: give 1 to 256"),
    ({"request_timeout": 0}, "request_timeout=0 is out of range: give 1 to 3600 seconds"),
    ({"kubeconfig": "/nonexistent/kubeconfig"}, "kubeconfig /nonexistent/kubeconfig does not exist (from the "
                                                "kubeconfig option)"),
    ({"kubeconfig": "/tmp"}, "kubeconfig /tmp is not a file (a directory?)"),
    ({"kubeconfig": "/etc/hostname"}, "kubeconfig /etc/hostname could not be loaded (is it a kubeconfig file?"),
    ({"monitor_configmaps": ["Bad_Name"]}, "is not a valid Kubernetes object name"),
])
def test_bad_input_says_what_is_wrong_and_writes_nothing(ansible, kube, world, args, message):
    result = ansible.run("networkfence", fence_args(world, **args))
    assert result["_rc"] != 0 and message in result["msg"], result
    assert "Traceback" not in result["msg"] and kube.get(FENCES + "/" + world["fence"]) is None


def test_an_unreachable_api_names_the_host_and_reason(ansible, world, tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "x",
                                  "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
                                  "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
                                  "users": [{"name": "x", "user": {"token": "t"}}]}))
    for module in ("networkfence_info", "volumeattachment_info"):
        result = ansible.run(module, {"kubeconfig": str(config), "request_timeout": 5})
        assert result["_rc"] != 0, result
        assert result["msg"].startswith("The Kubernetes API at https://127.0.0.1:1 is not reachable: connection "
                                        "refused"), result["msg"]

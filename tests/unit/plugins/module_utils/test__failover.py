# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._failover import fence_plan, remaining


def image(spec, *watchers, **kw):
    return {"spec": spec, "watchers": [dict(address=a, ip=a.split(":")[0], node=n) for a, n in watchers],
            "csi_client_addresses": kw.get("recorded", [])}


def test_fences_the_failed_nodes_watchers_only():
    images = [image("rbd/a", ("10.0.0.12:0/1", "node-b")),
              image("rbd/b", ("10.0.0.12:0/2", "node-b"), ("10.0.0.11:0/3", "node-a"))]
    plan = fence_plan(images, "node-b", ["node-a", "node-c"])
    assert plan["fence"] == ["10.0.0.12:0/1", "10.0.0.12:0/2"]
    assert plan["kept"] == [{"address": "10.0.0.11:0/3", "image": "rbd/b", "reason": "held from Ready node node-a"}]
    assert plan["by_image"] == {"rbd/a": ["10.0.0.12:0/1"], "rbd/b": ["10.0.0.12:0/2"]}


def test_another_not_ready_node_is_not_fenced_by_this_failover():
    plan = fence_plan([image("rbd/a", ("10.0.0.13:0/1", "node-c"))], "node-b", ["node-a"])
    assert plan["fence"] == [] and "not the failed node" in plan["kept"][0]["reason"]


def test_pod_network_watcher_is_fenced_only_when_ceph_csi_recorded_it():
    pod_ip = ("10.244.2.7:0/9", None)
    recorded = [{"node": "node-b", "ip": "10.244.2.7"}]
    assert fence_plan([image("rbd/a", pod_ip, recorded=recorded)], "node-b", ["node-a"])["fence"] == ["10.244.2.7:0/9"]
    unknown = fence_plan([image("rbd/a", pod_ip)], "node-b", ["node-a"])
    assert unknown["fence"] == [] and "no node's address" in unknown["kept"][0]["reason"]
    assert fence_plan([image("rbd/a", pod_ip)], "node-b", ["node-a"], fence_unknown=True)["fence"] == ["10.244.2.7:0/9"]
    other = fence_plan([image("rbd/a", pod_ip, recorded=[{"node": "node-a", "ip": "10.244.2.7"}])], "node-b", ["node-a"])
    assert other["fence"] == []


def test_no_watchers_nothing_to_fence():
    assert fence_plan([image("rbd/a")], "node-b", []) == {"fence": [], "kept": [], "by_image": {"rbd/a": []}}
    assert fence_plan(None, "node-b", []) == {"fence": [], "kept": [], "by_image": {}}


def test_remaining():
    images = [image("rbd/a", ("10.0.0.12:0/1", "node-b"), ("10.0.0.11:0/3", "node-a"))]
    assert remaining(images, ["10.0.0.12:0/1"]) == ["10.0.0.12:0/1"]
    assert remaining([image("rbd/a", ("10.0.0.11:0/3", "node-a"))], ["10.0.0.12:0/1"]) == []

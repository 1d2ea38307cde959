# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which Ceph clients node_failover may fence: the decision behind playbooks/node_failover.yml.

Private to volfence.csi. A wrong fence takes a healthy node's storage away, so a watcher is
fenced only when it provably belongs to the failed node: its IP is the failed node's, or
ceph-csi recorded (in the image metadata) that the failed node staged the image from that IP
(pod networking: the IP is then no node's). Everything else is kept and said why.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def fence_plan(images, failed_node, ready_nodes, fence_unknown=False):
    """Split the watchers of the failed node's images into those to fence and those to keep.

    images: rbd_watchers' `images` result (watchers carry address, ip, node; csi_client_addresses
    carry node and ip). ready_nodes: names of the nodes that are Ready now.
    Returns {"fence": [address, ...], "kept": [{"address", "image", "reason"}], "by_image": {...}}.
    """
    fence, kept, by_image = [], [], {}
    for image in images or []:
        spec = image.get("spec") or "%s/%s" % (image.get("pool"), image.get("image"))
        staged_by_failed = set(c.get("ip") for c in image.get("csi_client_addresses") or []
                               if c.get("node") == failed_node and c.get("ip"))
        chosen = []
        for watcher in image.get("watchers") or []:
            address, node = watcher.get("address"), watcher.get("node")
            if node == failed_node:
                reason = None
            elif node in ready_nodes:
                reason = "held from Ready node %s" % node
            elif node:
                reason = "held from node %s, which is not the failed node" % node
            elif watcher.get("ip") in staged_by_failed:
                reason = None  # pod networking: ceph-csi says the failed node staged it from this IP
            elif fence_unknown:
                reason = None
            else:
                reason = ("held from %s, which is no node's address and not recorded by ceph-csi as the "
                          "failed node's (set fence_unknown_watchers to fence it)" % watcher.get("ip"))
            if reason is None:
                chosen.append(address)
                if address not in fence:
                    fence.append(address)
            else:
                kept.append({"address": address, "image": spec, "reason": reason})
        by_image[spec] = chosen
    return {"fence": fence, "kept": kept, "by_image": by_image}


def remaining(images, fenced):
    """Watcher addresses of `images` that are still among `fenced` (empty once the fence took)."""
    fenced = set(fenced or [])
    return sorted(set(w.get("address") for i in images or [] for w in i.get("watchers") or []
                      if w.get("address") in fenced))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.volfence.csi.plugins.module_utils._decisions.blocklist_owners import ownership, with_blocklist
from ansible_collections.volfence.csi.plugins.module_utils._decisions.diagnose import (
    diagnose, pv_rbd_image as _pv_rbd_image, table)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_volumes import (
    down_node_volumes as _down_node_volumes,
)
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    node_addresses as _node_addresses,
    node_summary as _node_summary,
)


def _by_image(value, name, key):
    """{pool/image: [...]}: a mapping as it is; from a list, rbd_watchers_info's `images` ({spec, watchers})
    or the `results` of rbd_lock looped over image specs ({item, locks}; one without locks, skipped
    or failed, adds nothing)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if not isinstance(value, list):
        raise AnsibleFilterError("%s must be a mapping or a list, got %s" % (key, type(value).__name__))
    return dict((entry.get(name), entry[key]) for entry in value
                if isinstance(entry, dict) and key in entry)


def diagnose_stuck_pods(pods, *, events=None, pvcs=None, pvs=None, volumeattachments=None, nodes=None,
                        watchers=None, locks=None, git_version=None, threshold=120, blocklist=None, networkfences=None):
    if not isinstance(pods, list):
        raise AnsibleFilterError("diagnose_stuck_pods expects a list of Pod objects, got %s" % type(pods).__name__)
    found = diagnose(pods, events=events or [], pvcs=pvcs or [], pvs=pvs or [], vas=volumeattachments or [],
                     nodes=nodes or [], watchers=_by_image(watchers, "spec", "watchers"),
                     locks=_by_image(locks, "item", "locks"), git_version=git_version, threshold=int(threshold))
    if blocklist is None:
        return found
    return with_blocklist(found, blocklist_ownership(blocklist, nodes, networkfences, watchers))


def blocklist_ownership(entries, nodes=None, networkfences=None, watchers=None):
    """Whom each blocklist entry belongs to (ceph_blocklist_info entries), and its flags."""
    images = watchers if isinstance(watchers, list) else []
    return ownership(_objects(entries, "blocklist entry"), _objects(nodes, "Node"),
                     _objects(networkfences, "NetworkFence"), images)


def diagnosis_table(diagnoses, node_volumes=None, owned=None, volfence_events=None):
    return table(diagnoses, node_volumes or [], owned or [], own_events=volfence_events or [])


def _objects(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise AnsibleFilterError("%s must be a list of %s objects, got %s" % (what, what, type(value).__name__))
    return value


def down_node_volumes(nodes, pods=None, pvcs=None, pvs=None, volumeattachments=None):
    """Each node that is not Ready, its volumes and what node_failover would do for each."""
    return _down_node_volumes(_objects(nodes, "Node"), pods=_objects(pods, "Pod"),
                              pvcs=_objects(pvcs, "PersistentVolumeClaim"), pvs=_objects(pvs, "PersistentVolume"),
                              attachments=_objects(volumeattachments, "VolumeAttachment"))


def node_addresses(nodes, types=None):
    """{node name: [IP, ...]} from Node objects, for the node_addresses option of the Ceph modules."""
    return dict((n["metadata"]["name"], [str(ip) for kind, ip in _node_addresses(n) if not types or kind in types])
                for n in nodes or [])


def pv_rbd_image(pv):
    """pool[/namespace]/image of a ceph-csi or in-tree rbd PersistentVolume, None for others."""
    return _pv_rbd_image(pv)[1]


def node_summary(node):
    """name, ready, not_ready_seconds, taints and addresses of a Node object."""
    return _node_summary(node)


class FilterModule(object):
    def filters(self):
        return {
            "diagnose_stuck_pods": diagnose_stuck_pods,
            "diagnosis_table": diagnosis_table,
            "blocklist_ownership": blocklist_ownership,
            "down_node_volumes": down_node_volumes,
            "node_addresses": node_addresses,
            "pv_rbd_image": pv_rbd_image,
            "node_summary": node_summary,
        }

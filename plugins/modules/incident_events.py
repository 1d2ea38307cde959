#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: incident_events
short_description: Tell in the cluster what a recovery did, as Kubernetes Events on the objects it acted on
version_added: 0.3.0
description:
  - Posts one events.k8s.io/v1 Event per entry of O(events), on the object the action concerns (the node fenced,
    each pod force-deleted, each VolumeAttachment removed, each claim whose replacement runs, each lock broken,
    each dead mount recovered), so that C(kubectl describe) and C(kubectl get events) tell the story, and the
    cluster's event pipeline (alerting, audit) sees it.
  - Each Event has a stable C(reason) (one per action, see O(events[].what)), C(reportingController)
    C(volfence.csi), the host that ran the module as C(reportingInstance), and a note that says what was done,
    the invariant of C(docs/safety.md) that allowed it and the run's report (O(report)).
  - The object's C(uid) is read when not given (C(kubectl describe) finds Events by it); an object already gone,
    such as a force-deleted pod, gets its Event without one.
  - An Event that cannot be posted (no RBAC permission on events, the API unreachable) is a warning, never a
    failure - the recovery it tells of is done. The volfence.csi playbooks post their Events this way.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.k8s.AUTH
  - volfence.csi.k8s
  - volfence.csi.attributes
  - volfence.csi.k8s.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Posts nothing; returns in RV(posted) the Events it would post (without uids it would read).
  diff_mode:
    support: none
options:
  events:
    description:
      - What was done, one entry per action. An empty list posts nothing.
    type: list
    elements: dict
    required: true
    suboptions:
      what:
        description:
          - The action, which gives the Event's C(reason), C(type), C(action) and the kind of object it is on.
          - V(node_fenced) - C(NodeFenced) on the Node. V(node_unfenced) - C(NodeUnfenced) on the Node.
          - V(out_of_service_taint_added) - C(OutOfServiceTaintAdded) on the Node.
            V(out_of_service_taint_removed) - C(OutOfServiceTaintRemoved) on the Node.
          - V(pod_force_deleted) - C(PodForceDeleted) on the Pod.
          - V(pod_restarted) - C(PodRestarted) on the Pod deleted so that its controller starts it again.
          - V(volumeattachment_deleted) - C(VolumeAttachmentDeleted) on the VolumeAttachment.
          - V(replacement_running) - C(ReplacementRunning) on the PersistentVolumeClaim.
            V(replacement_pod_running) - C(ReplacementRunning) on the new Pod, naming the pod it replaces.
          - V(rbd_lock_broken) - C(RbdLockBroken) on the PersistentVolume.
          - V(dead_mount_recovered) - C(DeadMountRecovered) on the Pod.
          - V(failover_refused) - C(FailoverRefused), a C(Warning), on the Pod left stuck.
        type: str
        required: true
        choices: [node_fenced, node_unfenced, out_of_service_taint_added, out_of_service_taint_removed,
                  pod_force_deleted, pod_restarted, volumeattachment_deleted, replacement_running,
                  replacement_pod_running, rbd_lock_broken, dead_mount_recovered, failover_refused]
      regarding:
        description:
          - The object, with C(name), C(namespace) (for a Pod or a PersistentVolumeClaim) and optionally C(uid);
            its kind follows from O(events[].what).
        type: dict
        required: true
      note:
        description: What was done, in words (the Event's note, at most 1024 characters with what follows).
        type: str
        required: true
      invariant:
        description: The invariant of C(docs/safety.md) that allowed the action, for example V(I1).
        type: str
  report:
    description: The run's report (a path or a name), named in every note.
    type: str
  reporting_instance:
    description:
      - The Events' C(reportingInstance). By default the name of the host that runs the module.
    type: str
seealso:
  - name: Kubernetes Events
    description: events.k8s.io/v1
    link: https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/
'''

EXAMPLES = r'''
- name: Tell what the failover did
  volfence.csi.incident_events:
    report: /var/log/volfence/volfence-node-failover-node-b-1764230400.json
    events:
      - what: node_fenced
        regarding: {name: node-b}
        note: "node-b's RBD clients blocklisted: 10.0.0.12:0/3710147553"
        invariant: I1
      - what: pod_force_deleted
        regarding: {namespace: shop, name: db-0}
        note: force-deleted on node-b, its volume fenced
        invariant: I6
'''

RETURN = r'''
posted:
  description: The Events posted (in check mode, that would be posted), each with C(reason), C(type),
    C(regarding) and C(note).
  returned: always
  type: list
  elements: dict
  sample: [{reason: NodeFenced, type: Normal, regarding: {apiVersion: v1, kind: Node, name: node-b}, note: "..."}]
'''

import datetime
import socket

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._k8s.events import ACTIONS, check_event, post_events


def main():
    module = k8s_module(
        argument_spec=dict(
            events=dict(type='list', elements='dict', required=True, options=dict(
                what=dict(type='str', required=True, choices=sorted(ACTIONS)),
                regarding=dict(type='dict', required=True),
                note=dict(type='str', required=True),
                invariant=dict(type='str'),
            )),
            report=dict(type='str'),
            reporting_instance=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        events = [check_event(entry) for entry in p['events']]
    except ValueError as exc:
        module.fail_json(msg=nothing_changed(exc))
    posted, warnings = [], []
    if events:
        try:
            api = connect(module)
        except K8sError as exc:
            api, warnings = None, ['no Event was posted (the actions they tell of are done): %s' % exc]
        if api is not None:
            posted, warnings = post_events(api, events, now=datetime.datetime.now(datetime.timezone.utc),
                                           instance=p['reporting_instance'] or socket.gethostname(),
                                           report=p['report'], check_mode=module.check_mode)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=bool(posted), posted=posted)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: networkfence
short_description: Fence and unfence node networks with CSI-Addons NetworkFence objects, safely
version_added: 0.1.0
description:
  - Creates, updates and deletes cluster-scoped C(csiaddons.openshift.io/v1alpha1) NetworkFence objects. The
    CSI-Addons controller asks the CSI driver to fence (C(Fenced)) or unfence (C(Unfenced)) the CIDRs, for
    ceph-csi by blocklisting them in Ceph, so that a failed node can no longer write to its volumes and the
    volumes can be used elsewhere.
  - Both shapes of the API, as C(api/csiaddons/v1alpha1/networkfence_types.go) defines them. The current one
    names a NetworkFenceClass (O(network_fence_class)), whose C(spec.provisioner) is the driver and whose
    C(spec.parameters) hold the secret and parameters. The older one (deprecated upstream) gives O(driver),
    O(secret) and O(parameters) in the fence itself.
  - One fence (O(name)) or many in one call (O(fences)). All fences are read with one request, every fence is
    validated and planned before anything is written, and only fences that differ are written, in parallel.
    A second identical run writes nothing.
  - Refuses, before any write and unless O(force=true), to fence CIDRs that cover an address of a Ready node
    (any address type), an address that several nodes list, or, while a Ready node lists no IP address at all,
    an address that no node lists (it could be that node's). Addresses and CIDRs are compared after unmapping
    IPv4-mapped IPv6 (C(::ffff:10.0.3.12/128) is C(10.0.3.12/32)). Reports the nodes each fence covers.
  - Refuses too, before any write and unless O(force=true), CIDRs that hold a Ceph monitor listed in
    ceph-csi's configuration (see O(monitor_configmaps)) whenever CIDRs are written, whatever the fence state,
    when a fence is created (C(Fenced) or C(Unfenced)), set C(Fenced), or given new CIDRs. An C(Unfenced) fence holding
    a monitor's address is one patch away from cutting the monitor off. RV(monitors) says which ConfigMaps and
    monitors were checked. Monitors listed by host name cannot be checked (no DNS look-up is done), the module
    warns about each.
  - Where the monitors cannot be read (no ConfigMap of O(monitor_configmaps) is found, one cannot be read or
    parsed, or they list no monitor), such a call is refused as well unless O(force=true), as nothing could tell
    whether the CIDRs hold a monitor. An empty O(monitor_configmaps) turns the check off knowingly.
  - Bad input (a CIDR that is not a CIDR or has host bits set, a number out of range) fails with a message naming
    the value before anything is read or written.
  - Changing an immutable field of an existing fence (C(driver), C(networkFenceClassName), C(secret),
    C(parameters); the CRD's CEL rules reject it) fails with an explanation; C(fenceState) and C(cidrs) can
    change.
  - With O(wait=true) (the default) the module waits for the controller's C(status.result) and fails with the
    controller's message when it is C(Failed).
  - Warns when no CSIAddonsNode of the fence's driver is Connected, since nothing would then act on it.
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
      - Plans, validates and refuses as a real run would, and writes nothing.
  diff_mode:
    support: full
    details:
      - The diff shows the spec (fenceState, cidrs, class or driver, secret, parameters, labels) of each fence
        that changes, before and after.
options:
  name:
    description:
      - Name of one NetworkFence. Mutually exclusive with O(fences).
    type: str
  fences:
    description:
      - Many fences at once. Each entry takes the per-fence options below; those not given in an entry come
        from the module's options of the same name (O(state), O(fence_state), O(network_fence_class),
        O(driver), O(secret), O(parameters), O(labels)).
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the NetworkFence.
        type: str
        required: true
      cidrs:
        description: Its CIDRs, see O(cidrs).
        type: list
        elements: str
      state:
        description: See O(state).
        type: str
        choices: [present, absent]
      fence_state:
        description: See O(fence_state).
        type: str
        choices: [Fenced, Unfenced]
      network_fence_class:
        description: See O(network_fence_class).
        type: str
      driver:
        description: See O(driver).
        type: str
      secret:
        description: See O(secret).
        type: dict
        suboptions:
          name:
            description: Name of the secret.
            type: str
            required: true
          namespace:
            description: Its namespace.
            type: str
            required: true
      parameters:
        description: See O(parameters).
        type: dict
      labels:
        description: See O(labels).
        type: dict
  node_fences:
    description:
      - One C(Unfenced) fence per node, as the role C(volfence.csi.node_fences) keeps them (so that fencing a node
        is one patch away). The module reads every fence and every node once, plans with the role's rules
        (filter C(volfence.csi.node_fences_plan) documents them), and carries out the plan with every check of
        this module (Ready nodes, shared addresses, Ceph monitors, the class, immutable fields), writing only
        the fences that differ.
      - The fences' shape comes from O(network_fence_class), or O(driver), O(secret) and O(parameters).
      - Mutually exclusive with O(name), O(fences), O(cidrs), O(fence_state), O(labels) and O(force), and
        O(state) must stay V(present) (the state of the set is O(node_fences.state)).
      - Fails, changing nothing, when a fence of another owner (without the set's labels) has the name of one
        of the set.
      - Without the CSI-Addons CRDs the module fails; in check mode it returns RV(node_fences.installed=false)
        instead.
    type: dict
    suboptions:
      state:
        description:
          - V(present) creates and updates the fences of the selected nodes and prunes those of deleted nodes.
          - V(absent) deletes every fence of the set (C(Fenced) ones only with O(node_fences.prune_fenced),
            unfenced first).
        type: str
        choices: [present, absent]
        default: present
      node_selector:
        description: The nodes that get a fence, a label selector; empty for every node.
        type: str
        default: ''
      address_types:
        description: The node address types (C(status.addresses[].type)) that go into a node's fence.
        type: list
        elements: str
        default: [InternalIP]
      extra_cidrs:
        description: More CIDRs per node name, added to its addresses.
        type: dict
        default: {}
      name_prefix:
        description: Fence names are this prefix and the node name.
        type: str
        default: volfence-
      set:
        description: The set the fences belong to (label C(node-fences.volfence.io/set)).
        type: str
        default: default
      labels:
        description: More labels for every fence.
        type: dict
        default: {}
      prune:
        description: Delete the set's fences of nodes that no longer exist.
        type: bool
        default: true
      prune_fenced:
        description: Also delete C(Fenced) fences when pruning or removing (unfenced first).
        type: bool
        default: false
  state:
    description:
      - V(present) creates or updates the fence.
      - V(absent) deletes it. The CSI-Addons controller does not lift a fence when the object is deleted, so a
        C(Fenced) fence is first set to C(Unfenced), the module waits for the unfence to succeed (even with
        O(wait=false)), and only then deletes it. O(force=true) deletes a Fenced fence without unfencing (its
        CIDRs may then stay fenced).
    type: str
    choices: [present, absent]
    default: present
  fence_state:
    description:
      - V(Fenced) cuts the CIDRs off the storage, V(Unfenced) lets them back.
      - Required to create a fence; when not given, an existing fence keeps its state.
    type: str
    choices: [Fenced, Unfenced]
  cidrs:
    description:
      - CIDR blocks, IPv4 or IPv6, such as C(10.0.3.12/32) or C(fd00::/120). A bare address means that address
        alone (C(/32) or C(/128)). Host bits must be zero (C(10.0.3.5/24) is refused as ambiguous); C(/0), and
        an IPv6 range holding every IPv4-mapped address (C(::ffff:0:0/96)), are refused. An IPv4-mapped IPv6
        CIDR is written C(::ffff:a.b.c.d/prefix).
      - Required to create a fence; when not given, an existing fence keeps its CIDRs. The order does not
        matter.
    type: list
    elements: str
  network_fence_class:
    description:
      - The NetworkFenceClass of the fence (C(spec.networkFenceClassName)); it must exist. Immutable.
      - Mutually exclusive with O(driver).
    type: str
  driver:
    description:
      - The CSI driver (C(spec.driver)) in the older, deprecated shape; requires O(secret). Immutable.
    type: str
  secret:
    description:
      - The secret the driver uses to fence (C(spec.secret)), with the older shape. Immutable.
    type: dict
    suboptions:
      name:
        description: Name of the secret.
        type: str
        required: true
      namespace:
        description: Its namespace.
        type: str
        required: true
  parameters:
    description:
      - Driver parameters (C(spec.parameters)) with the older shape, for ceph-csi C(clusterID). Values are strings.
        Immutable.
    type: dict
  labels:
    description:
      - Labels of the fence. Only the labels given are managed; others are left alone.
    type: dict
  monitor_configmaps:
    description:
      - The ConfigMaps of ceph-csi's configuration whose Ceph monitors must never be fenced. Each is
        C(namespace/name), or a bare C(name) for that name in every namespace (one list request with a field
        selector on C(metadata.name)).
      - Each ConfigMap's C(config.json) (ceph-csi's own C(ceph-csi-config)) or C(csi-cluster-config-json)
        (Rook's C(rook-ceph-csi-config)) key holds a JSON list of C({clusterID, monitors}); monitors may be
        written C(ip:port), C([ipv6]:port), C([v2:ip:3300/0,v1:ip:6789/0]) or as host names (those cannot be
        checked, the module warns).
      - A call that writes CIDRs is refused unless O(force=true) when none of these ConfigMaps exists, one
        cannot be read (RBAC) or parsed, or they list no monitor (RV(monitors.unread) says why). An empty list
        turns the check off (a cluster whose driver is not ceph-csi).
      - Read only when the call would create a fence, give one new CIDRs or set one C(Fenced).
    type: list
    elements: str
    default: [ceph-csi-config, rook-ceph-csi-config]
  force:
    description:
      - Fence CIDRs that cover an address of a Ready node (which cuts a healthy node off its storage), an
        address that several nodes list, or an address no node lists while a Ready node lists no IP address.
      - Fence CIDRs that hold a Ceph monitor listed in O(monitor_configmaps), or write them into a fence in any
        state.
      - With O(state=absent), delete a Fenced fence without unfencing it first.
    type: bool
    default: false
  wait:
    description:
      - Wait for the controller's result (C(status.result)) of each created or changed fence, and until
        deleted fences are gone.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait. A fence without result by then fails the module.
      - From 0 to 86400.
    type: int
    default: 120
  wait_sleep:
    description:
      - Seconds between checks while waiting (one request for all fences).
      - From 1 to 600.
    type: int
    default: 2
  parallel:
    description:
      - How many writes are in flight at once when many fences change.
      - From 1 to 256.
    type: int
    default: 16
notes:
  - The upstream status has no C(observedGeneration). Before it changes the spec of an existing fence and
    waits, the module clears C(status.result) and C(status.message), so that it sees the controller's answer to
    this change and not the previous one. That needs the right to patch C(networkfences/status).
  - Fencing is only as safe as its CIDRs. A node's own CIDR fences every client on it, including healthy pods'
    volumes of other drivers that use the same storage.
seealso:
  - module: volfence.csi.networkfence_info
  - module: volfence.csi.ceph_blocklist
  - name: CSI-Addons NetworkFence
    description: The NetworkFence API and controller.
    link: https://github.com/csi-addons/kubernetes-csi-addons/blob/main/docs/networkfence.md
'''

EXAMPLES = r'''
- name: One Unfenced fence per worker node, in one call (what the role volfence.csi.node_fences does)
  volfence.csi.networkfence:
    network_fence_class: rbd-fence
    node_fences:
      node_selector: node-role.kubernetes.io/worker
  register: node_fences

- name: Fence a failed node (its InternalIP) through a NetworkFenceClass
  volfence.csi.networkfence:
    name: fence-worker-3
    network_fence_class: rbd-fence
    cidrs: [10.0.3.12/32]
    fence_state: Fenced

- name: Fence with the older shape (driver, secret, parameters in the fence)
  volfence.csi.networkfence:
    name: fence-worker-3
    driver: rbd.csi.ceph.com
    secret:
      name: rook-csi-rbd-provisioner
      namespace: rook-ceph
    parameters:
      clusterID: rook-ceph
    cidrs: [10.0.3.12/32]
    fence_state: Fenced

- name: Lift the fence once the node has been rebooted
  volfence.csi.networkfence:
    name: fence-worker-3
    fence_state: Unfenced

- name: Build one fence entry per node (node_ips maps node names to InternalIPs)
  ansible.builtin.set_fact:
    node_fences: "{{ node_fences | default([]) + [{'name': 'fence-' ~ item.key, 'cidrs': [item.value ~ '/32']}] }}"
  loop: "{{ node_ips | dict2items }}"

- name: One Unfenced fence per node, in one call; fencing a node later only flips its fence_state
  volfence.csi.networkfence:
    network_fence_class: rbd-fence
    fence_state: Unfenced
    wait: false
    fences: "{{ node_fences }}"

- name: Many fences given as a list
  volfence.csi.networkfence:
    network_fence_class: rbd-fence
    fence_state: Unfenced
    fences:
      - {name: fence-worker-1, cidrs: [10.0.3.11/32]}
      - {name: fence-worker-2, cidrs: [10.0.3.12/32]}
      - {name: fence-worker-3, cidrs: [10.0.3.13/32], fence_state: Fenced}

- name: Remove a fence (unfenced first if it is Fenced)
  volfence.csi.networkfence:
    name: fence-worker-3
    state: absent
'''

RETURN = r'''
fences:
  description: Every fence of the call, in the order given, as it is after the run (predicted in check mode).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
    action:
      description: V(create), V(update), V(delete), V(unfence_and_delete) or V(none).
      type: str
    why:
      description: Why that action.
      type: str
    changed:
      description: Whether it was (in check mode, would be) changed.
      type: bool
    state:
      description: V(present) or V(absent) after the run.
      type: str
    outcome:
      description: The controller's result that the module waited for (V(Succeeded), V(Failed)), or null.
      type: str
    fence_state:
      description: C(spec.fenceState).
      type: str
    cidrs:
      description: C(spec.cidrs).
      type: list
      elements: str
    driver:
      description: The CSI driver, from C(spec.driver) or the class's C(spec.provisioner).
      type: str
    network_fence_class:
      description: C(spec.networkFenceClassName), or null.
      type: str
    secret:
      description: C(spec.secret) (C(name), C(namespace)), or null.
      type: dict
    parameters:
      description: C(spec.parameters).
      type: dict
    labels:
      description: Its labels.
      type: dict
    result:
      description: C(status.result).
      type: str
    message:
      description: C(status.message).
      type: str
    conditions:
      description: C(status.conditions).
      type: list
      elements: dict
    finalizers:
      description: Its finalizers.
      type: list
      elements: str
    deletion_timestamp:
      description: When its deletion was requested, or null.
      type: str
    generation:
      description: C(metadata.generation).
      type: int
    nodes:
      description: The nodes with an address inside its CIDRs, each with C(name), C(ready) (the Ready
        condition), C(addresses) and C(cidrs) (the CIDRs that cover it).
      type: list
      elements: dict
      sample: [{name: node-b, ready: "Unknown", addresses: [10.0.3.12], cidrs: [10.0.3.12/32]}]
    error:
      description: What went wrong with this fence (the module then fails).
      type: str
summary:
  description:
    - How many fences were created, updated, deleted, left unchanged, and failed. A fence that was written and
      then failed (for example the controller answered C(Failed)) counts as written and as failed.
  returned: always
  type: dict
  sample: {created: 1000, updated: 0, deleted: 0, unchanged: 0, failed: 0}
done:
  description: Names of the fences the module changed (created, updated, deleted), also when it fails on others.
  returned: always
  type: list
  elements: str
failures:
  description:
    - The fences that failed, each with C(name) and C(error) (empty on success). The module fails when there
      is any, and still returns RV(done) and C(changed).
  returned: always
  type: list
  elements: dict
monitors:
  description:
    - What the Ceph monitor check read (it runs when the call would create a fence, give one new CIDRs or set one
      C(Fenced), and O(monitor_configmaps) is not empty).
  returned: always
  type: dict
  contains:
    sources:
      description: O(monitor_configmaps) as given.
      type: list
      elements: str
    configmaps:
      description: The ConfigMaps found and read, C(namespace/name).
      type: list
      elements: str
    checked:
      description:
        - The monitors checked against the CIDRs, each with C(configmap), C(key), C(cluster_id), C(monitor) (as
          listed) and C(addresses) (its IPs, IPv4-mapped IPv6 as IPv4).
      type: list
      elements: dict
    unread:
      description: Why the monitors could not be checked (no ConfigMap found, one unreadable or unparsable, no
        monitor listed), or null when they were.
      type: str
    unchecked:
      description: Monitors listed by host name, which could not be checked (a warning names them too).
      type: list
      elements: str
  sample:
    sources: [ceph-csi-config, rook-ceph-csi-config]
    configmaps: [ceph-csi/ceph-csi-config]
    checked: [{configmap: ceph-csi/ceph-csi-config, key: config.json, cluster_id: lab, monitor: "10.0.3.1:6789",
               addresses: [10.0.3.1], hosts: []}]
    unchecked: []
node_fences:
  description: What the O(node_fences) plan says besides the fences.
  returned: with O(node_fences)
  type: dict
  contains:
    installed:
      description: Whether the cluster serves NetworkFence objects (false only in check mode, else the module fails).
      type: bool
    nodes:
      description: How many nodes were selected.
      type: int
    fenced:
      description: The fences of selected nodes that are C(Fenced), left alone.
      type: list
      elements: str
    kept_fenced:
      description: C(Fenced) fences of deleted nodes, kept (O(node_fences.prune_fenced=false)).
      type: list
      elements: str
    pruned:
      description: The fences of the set to delete (nodes gone, or O(node_fences.state=absent)).
      type: list
      elements: str
    nodes_without_addresses:
      description: Selected nodes without an address of O(node_fences.address_types), which get no fence.
      type: list
      elements: str
    warnings:
      description: What else the plan noticed (a fence already being deleted).
      type: list
      elements: str
  sample: {installed: true, nodes: 1000, fenced: [], kept_fenced: [], pruned: [], nodes_without_addresses: [],
           warnings: []}
diff:
  description: The changed fences' specs before and after (by name).
  returned: when diff mode is on
  type: dict
'''

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed
from ansible_collections.volfence.csi.plugins.module_utils._ranges import (
    MAX_PARALLEL,
    MAX_SLEEP_SECONDS,
    MAX_WAIT_SECONDS,
    check_range,
)

from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import K8sError, connect, k8s_module
from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import check_object_name
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import count_message
from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import (
    CREATE,
    DELETE,
    NONE,
    UNFENCE_DELETE,
    UPDATE,
    build_requests,
    summary,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import check_options as check_node_fences_options
from ansible_collections.volfence.csi.plugins.module_utils._k8s.networkfence_ops import NetworkFences

# A reference to a Secret (its name and namespace), not secret data.
SECRET_SPEC = dict(name=dict(type='str', required=True), namespace=dict(type='str', required=True))


def argument_spec():
    entry = dict(
        name=dict(type='str', required=True),
        cidrs=dict(type='list', elements='str'),
        state=dict(type='str', choices=['present', 'absent']),
        fence_state=dict(type='str', choices=['Fenced', 'Unfenced']),
        network_fence_class=dict(type='str'),
        driver=dict(type='str'),
        secret=dict(type='dict', options=SECRET_SPEC, no_log=False),
        parameters=dict(type='dict'),
        labels=dict(type='dict'),
    )
    node_fences = dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        node_selector=dict(type='str', default=''),
        address_types=dict(type='list', elements='str', default=['InternalIP']),
        extra_cidrs=dict(type='dict', default={}),
        name_prefix=dict(type='str', default='volfence-'),
        set=dict(type='str', default='default'),
        labels=dict(type='dict', default={}),
        prune=dict(type='bool', default=True),
        prune_fenced=dict(type='bool', default=False),
    )
    return dict(
        name=dict(type='str'),
        node_fences=dict(type='dict', options=node_fences),
        fences=dict(type='list', elements='dict', options=entry),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        fence_state=dict(type='str', choices=['Fenced', 'Unfenced']),
        cidrs=dict(type='list', elements='str'),
        network_fence_class=dict(type='str'),
        driver=dict(type='str'),
        secret=dict(type='dict', options=SECRET_SPEC, no_log=False),
        parameters=dict(type='dict'),
        labels=dict(type='dict'),
        monitor_configmaps=dict(type='list', elements='str',
                                default=['ceph-csi-config', 'rook-ceph-csi-config']),
        force=dict(type='bool', default=False),
        wait=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=120),
        wait_sleep=dict(type='int', default=2),
        parallel=dict(type='int', default=16),
    )


def check_node_fences(params):
    """Refuses node_fences input that cannot be planned (ValueError naming it); nothing is read before."""
    if params['state'] != 'present':
        raise ValueError('with node_fences, the state of the set is node_fences.state (state must stay present)')
    if (params['network_fence_class'] is None and params['driver'] is None
            and params['node_fences']['state'] == 'present'):
        raise ValueError('node_fences needs network_fence_class (or the deprecated driver with secret)')
    check_node_fences_options(params['node_fences'])


def fence_result(plan, fences, check_mode):
    """The module's result for one plan."""
    obj = plan.obj
    if check_mode and plan.action == CREATE:
        obj = plan.body
    report = fences.report(obj) if obj is not None else dict(name=plan.name)
    if check_mode and plan.action == UPDATE:
        after = plan.after()
        report.update(fence_state=after['fenceState'], cidrs=after['cidrs'], labels=after.get('labels') or {},
                      nodes=fences.index.coverage(after['cidrs']))
    report.update(action=plan.action, why=plan.why, changed=plan.changed or (check_mode and plan.action != NONE),
                  outcome=plan.outcome)
    if plan.action in (DELETE, UNFENCE_DELETE):
        report['state'] = 'absent' if (plan.gone or check_mode) else 'present'
    else:
        report['state'] = 'absent' if obj is None else 'present'
    if plan.error:
        report['error'] = plan.error
    return report


def main():
    module = k8s_module(
        argument_spec=argument_spec(),
        mutually_exclusive=[('name', 'fences'), ('cidrs', 'fences'), ('network_fence_class', 'driver'),
                            ('node_fences', 'name'), ('node_fences', 'fences'), ('node_fences', 'cidrs'),
                            ('node_fences', 'fence_state'), ('node_fences', 'labels'), ('node_fences', 'force')],
        required_one_of=[('name', 'fences', 'node_fences')],
        supports_check_mode=True,
    )
    p = module.params
    requests = []
    try:
        check_range(p['wait_timeout'], 'wait_timeout', 0, MAX_WAIT_SECONDS, 'seconds')
        check_range(p['wait_sleep'], 'wait_sleep', 1, MAX_SLEEP_SECONDS, 'seconds')
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
        for source in p['monitor_configmaps']:
            for part in source.split('/', 1):
                check_object_name(part, 'monitor_configmaps entry %r' % source)
        if p['node_fences'] is not None:
            check_node_fences(p)
        else:
            requests = build_requests(p)
    except ValueError as exc:
        module.fail_json(msg=nothing_changed(exc))

    fences = None
    planned = None
    try:
        api = connect(module)
        fences = NetworkFences(api, workers=p['parallel'], monitor_configmaps=p['monitor_configmaps'])
        if p['node_fences'] is not None:
            requests, planned = fences.node_fences_requests(p, check_mode=module.check_mode)
        plans = fences.plan(requests, force=p['force']) if requests else []
        failures = []
        if not module.check_mode:
            failures = fences.run(plans, wait=p['wait'], wait_timeout=p['wait_timeout'], wait_sleep=p['wait_sleep'])
    except K8sError as exc:
        for warning in (fences.warnings if fences else []):
            module.warn(warning)
        module.fail_json(monitors=fences.monitors if fences else None, **exc.fail_kwargs())

    for warning in fences.warnings:
        module.warn(warning)
    results = [fence_result(plan, fences, module.check_mode) for plan in plans]
    counts = dict(created=0, updated=0, deleted=0, unchanged=0, failed=len(failures))
    for plan, result in zip(plans, results):
        if not result['changed']:
            if 'error' not in result:
                counts['unchanged'] += 1
        elif plan.action == CREATE:
            counts['created'] += 1
        elif plan.action == UPDATE:
            counts['updated'] += 1
        else:
            counts['deleted'] += 1
    output = dict(changed=any(r['changed'] for r in results), fences=results, summary=counts,
                  done=[r['name'] for r in results if r['changed']],
                  failures=[dict(name=name, error=exc.msg) for name, exc in failures], monitors=fences.monitors)
    if planned is not None:
        output['node_fences'] = planned
    if module._diff:
        before = {}
        after = {}
        for plan in plans:
            if plan.action != NONE:
                before[plan.name] = summary(plan.existing)
                after[plan.name] = plan.after()
        if p['name'] is not None:
            output['diff'] = dict(before=before.get(p['name']) or {}, after=after.get(p['name']) or {})
        else:
            output['diff'] = dict(before=before, after=after)
    if failures:
        changed = [r['name'] for r in results if r['changed']]
        msg = count_message('NetworkFence(s) failed', [exc.msg for _name, exc in failures], len(plans), shown=20,
                            more_hint='see fences[].error')
        msg += '. %s' % ('Changed anyway: %s' % ', '.join(changed[:20]) + (' ...' if len(changed) > 20 else '')
                         if changed else 'Nothing was changed.')
        extra = dict((k, v) for k, v in failures[0][1].fail_kwargs().items() if k != 'msg')
        module.fail_json(msg=msg, **dict(output, **extra))
    module.exit_json(**output)


if __name__ == '__main__':
    main()

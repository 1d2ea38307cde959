#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rbd_lock_info
short_description: List the advisory locks of an RBD image and who holds them
version_added: 0.2.0
description:
  - Lists the advisory locks of an RBD image (id, locker, address, the node it is held from) and
    the owner of the exclusive-lock feature's managed lock.
  - The in-tree RBD plugin leaves a C(kubelet_lock_magic_<node>) lock behind on a failed node; this
    module shows it, M(volfence.csi.rbd_lock) breaks it after fencing the holder.
  - The image is O(image) as C(pool/image) or C(pool/namespace/image) (or O(image_spec)), or O(pool),
    O(image) and O(namespace).
  - Read-only, it never changes anything (O(query_lock_owners=true) opens the image read-write for
    a moment, see there). It replaces M(volfence.csi.rbd_lock) without O(volfence.csi.rbd_lock#module:state).
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.ceph
  - volfence.csi.ceph.IMAGE
  - volfence.csi.ceph.LOCK_LISTING
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.attributes.ACTIONGROUP_CEPH
seealso:
  - module: volfence.csi.rbd_lock
  - module: volfence.csi.rbd_watchers_info
'''

EXAMPLES = r'''
- name: Who holds a lock on the volume of the stuck pod?
  volfence.csi.rbd_lock_info:
    image_spec: kube/kubernetes-dynamic-pvc-6b2c7d1e
    node_addresses:
      node-a: [10.0.3.11]
      node-b: [10.0.3.12]
  register: locks

- name: The same image given as its parts
  volfence.csi.rbd_lock_info:
    pool: kube
    image: kubernetes-dynamic-pvc-6b2c7d1e

- name: Locks still held from node-b
  ansible.builtin.debug:
    msg: "{{ locks.locks | selectattr('node', 'equalto', 'node-b') | map(attribute='id') }}"
'''

RETURN = r'''
backend:
  description: The backend used, V(rados) or V(cli).
  returned: always
  type: str
  sample: rados
versions:
  description:
    - The Ceph releases at work, read right after connecting (C(rbd --version) of the CLI, the
      loaded C(libceph-common) of the bindings; the C(versions) mon command, else C(version)).
    - Also returned when the module fails, as far as known; when connecting failed, RV(versions.cluster)
      has no version and its C(error) says why.
  returned: on success; on failure when a connection was tried
  type: dict
  contains:
    client:
      returned: always
      description:
        - The client doing the work. C(backend) is V(rados) or V(cli); C(version) and C(release)
          are its Ceph release (null with C(error) when it could not be read).
      type: dict
      sample: {backend: rados, version: '16.2.15', release: pacific, error: null}
    cluster:
      returned: always
      description:
        - The cluster. C(version) and C(release) are the oldest Ceph version its daemons run,
          C(versions) every distinct one, C(mixed) whether they differ (during an upgrade), C(error)
          what went wrong reading them (null otherwise).
      type: dict
      sample: {version: '20.2.4', release: tentacle, versions: ['20.2.4'], mixed: false, error: null}
locks:
  description: The image's locks (before any change, for M(volfence.csi.rbd_lock)).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The lock id (the cookie).
      type: str
      sample: kubelet_lock_magic_node-b
    locker:
      description: The client holding it.
      type: str
      sample: client.4272
    address:
      description: The holder's address, C(ip:port/nonce).
      type: str
      sample: "10.0.3.12:0/3358807331"
    ip:
      description: The holder's IP.
      type: str
      sample: 10.0.3.12
    nonce:
      description: The holder's nonce.
      type: int
      sample: 3358807331
    exclusive:
      description: Whether the image's lock is exclusive (null when unknown).
      type: bool
      sample: true
    tag:
      description: The lock tag (shared locks; C(internal) for the managed lock).
      type: str
      sample: ''
    managed:
      description: Whether it is the exclusive-lock feature's managed lock.
      type: bool
      sample: false
    node:
      description: The node whose O(node_addresses) contain the IP.
      type: str
      sample: node-b
exclusive_lock_owners:
  description:
    - Owners of the exclusive-lock feature's managed lock, from the lock list (after the run, for
      M(volfence.csi.rbd_lock)).
  returned: always
  type: list
  elements: dict
  sample: [{address: "10.0.3.11:0/219752702", ip: 10.0.3.11, locker: client.4571, id: auto 140635214451904, mode: exclusive, node: node-a}]
lock_owners:
  description:
    - What librbd's C(lock_get_owners) says before any change, with O(query_lock_owners=true) (null
      otherwise, or when it cannot be asked, with a warning that says why; the CLI backend has no such
      call, and librbd cannot tell when, for example, an advisory lock holds the image).
  returned: always
  type: list
  elements: dict
  sample: [{address: "10.0.3.11:0/219752702", mode: exclusive}]
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    IMAGE_MUTUALLY_EXCLUSIVE,
    IMAGE_OPTIONS,
    image_spec_of,
    module_session,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_MUTUALLY_EXCLUSIVE,
    ceph_argument_spec,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import LOCK_LISTING_OPTIONS, read_image_locks
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import NodeMap


def main():
    module = VolfenceModule(
        argument_spec=ceph_argument_spec(
            **dict(IMAGE_OPTIONS, **LOCK_LISTING_OPTIONS)
        ),
        mutually_exclusive=CEPH_MUTUALLY_EXCLUSIVE + IMAGE_MUTUALLY_EXCLUSIVE,
        required_one_of=[('image_spec', 'image')],
        supports_check_mode=True,
    )
    try:
        spec = image_spec_of(module.params)
        node_map = NodeMap(module.params['node_addresses'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    with module_session(module) as client:
        listing, warnings = read_image_locks(client, spec, node_map, module.params['query_lock_owners'])
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, backend=client.name, versions=client.known_versions, **listing)


if __name__ == '__main__':
    main()

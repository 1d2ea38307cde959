#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rbd_watchers_info
short_description: Show who still watches RBD images, and from which node
version_added: 0.2.0
description:
  - Lists the watchers of one RBD image or of many, in one call over one connection. Watchers are the clients
    that have the image open. A ReadWriteOnce volume stays in C(ContainerCreating) on its new
    node while the failed node's client still watches it.
  - Opens images read-only, which adds no watcher of its own.
  - Also returns the client addresses ceph-csi recorded in the image metadata, when it did
    (ceph-csi with fencing enabled writes C(.rbd.csi.ceph.com/clientaddress/<volume id>/<node id>)).
  - Read-only, it never changes anything.
  - Called C(volfence.csi.rbd_watchers) before 0.2.0; that name still works (it warns) until 2.0.0.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.ceph
  - volfence.csi.ceph.IMAGE
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.attributes.ACTIONGROUP_CEPH
options:
  image:
    description:
      - One image, in O(pool) (and O(namespace)); must not start with C(-). Use O(images) for many.
      - Or, as the C(rbd) tool takes it, C(pool/image) or C(pool/namespace/image), then without O(pool)
        and O(namespace).
      - A name without its pool fails before anything is read, naming both ways to give it.
    type: str
  images:
    description:
      - Many images, each as C(pool/image) or C(pool/namespace/image) (no part may start with C(-)).
      - Instead of O(image_spec) or O(image).
    type: list
    elements: str
    default: []
  node_addresses:
    description:
      - Node names and their IPs or CIDRs (for example a node's pod CIDR when ceph-csi does not use
        the host network), to name the node of each watcher.
    type: dict
    default: {}
  exclude_addresses:
    description:
      - Watchers to leave out (IPs, CIDRs or C(ip:port/nonce)). They are listed under
        RV(images[].excluded_watchers) and do not make an image in use (RV(images[].in_use)).
    type: list
    elements: str
    default: []
  metadata:
    description:
      - Read the image metadata for the ceph-csi client addresses (one more call per image with the
        CLI backend).
    type: bool
    default: true
  ignore_missing:
    description:
      - With V(false), a pool or image that does not exist fails the module (every missing one is
        named). With V(true), it is reported in RV(missing) and the other images are listed.
    type: bool
    default: false
  parallel:
    description:
      - How many images are inspected at once (threads over one connection with the bindings,
        processes with the CLI).
      - From 1 to 256.
    type: int
    default: 16
seealso:
  - module: volfence.csi.ceph_blocklist
  - module: volfence.csi.rbd_lock_info
'''

EXAMPLES = r'''
- name: Who still has the volume of the stuck pod open?
  volfence.csi.rbd_watchers_info:
    image_spec: replicapool/csi-vol-1d186650-ea71-49b8-b98e-e68a22cb9f94
    node_addresses:
      node-a: [10.0.3.11]
      node-b: [10.0.3.12, 10.244.2.0/24]
  register: w

- name: Audit every volume of the failed node in one call
  volfence.csi.rbd_watchers_info:
    images:
      - replicapool/csi-vol-1d186650-ea71-49b8-b98e-e68a22cb9f94
      - replicapool/tenant-a/csi-vol-2e297761-fb82-4ac9-c9f0-f79b33dc0aa5
    node_addresses: "{{ node_ips }}"
    exclude_addresses: [10.0.3.11]
  register: audit

- name: Images still held from node-b
  ansible.builtin.debug:
    msg: "{{ audit.images | selectattr('nodes', 'contains', 'node-b') | map(attribute='spec') }}"
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
images:
  description: One entry per image, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    spec:
      description: The image as C(pool[/namespace]/image).
      type: str
      sample: replicapool/csi-vol-1d186650
    pool:
      description: Its pool.
      type: str
      sample: replicapool
    namespace:
      description: Its RADOS namespace (empty for the default one).
      type: str
      sample: ''
    image:
      description: Its name.
      type: str
      sample: csi-vol-1d186650
    in_use:
      description: Whether any watcher is left after O(exclude_addresses).
      type: bool
      sample: true
    watchers:
      description: The watchers.
      type: list
      elements: dict
      contains:
        address:
          description: The client's address, C(ip:port/nonce).
          type: str
          sample: "10.0.3.12:0/2459504997"
        ip:
          description: The client's IP.
          type: str
          sample: 10.0.3.12
        nonce:
          description: The client instance's nonce.
          type: int
          sample: 2459504997
        client_id:
          description: The client's global id.
          type: int
          sample: 4268
        client:
          description: The client's entity name.
          type: str
          sample: client.4268
        cookie:
          description: The watch cookie, a 64-bit integer.
          type: int
          sample: 140524082254656
        node:
          description: The node whose O(node_addresses) contain the IP (null when none does).
          type: str
          sample: node-b
    excluded_watchers:
      description: Watchers left out by O(exclude_addresses), each with C(excluded_by).
      type: list
      elements: dict
    nodes:
      description: The nodes of the watchers, from O(node_addresses).
      type: list
      elements: str
      sample: [node-b]
    csi_client_addresses:
      description:
        - The client addresses ceph-csi recorded in the image metadata (empty when it did not).
        - Each has C(key), C(value), C(node) (the key's last segment), C(volume_id), C(ip),
          C(address) (when the value has a nonce) and C(node_from_addresses) (from O(node_addresses)).
      type: list
      elements: dict
      sample:
        - key: .rbd.csi.ceph.com/clientaddress/0001-0009-rook-ceph-0000000000000002-5f1d1b6a/node-b
          value: 10.0.3.12
          node: node-b
          volume_id: 0001-0009-rook-ceph-0000000000000002-5f1d1b6a
          ip: 10.0.3.12
          address: null
          node_from_addresses: node-b
in_use:
  description: Whether any image is in use.
  returned: always
  type: bool
  sample: true
watchers_total:
  description: How many watchers all the images have (after O(exclude_addresses)).
  returned: always
  type: int
  sample: 1
missing:
  description:
    - Images that do not exist, each with C(spec) and C(error) (with O(ignore_missing=true), or
      when the module fails).
  returned: always
  type: list
  elements: dict
  sample: []
failed_images:
  description:
    - Images that could not be read (other than missing ones), each with C(spec) and C(error).
      The module fails when there is any, and still returns the RV(images) it could read.
  returned: always
  type: list
  elements: dict
  sample: []
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_PARALLEL, check_range

from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    IMAGE_MUTUALLY_EXCLUSIVE,
    IMAGE_OPTIONS,
    image_spec_of,
    module_session,
    parse_image_spec,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_MUTUALLY_EXCLUSIVE,
    AddressMatcher,
    CephNotFoundError,
    ceph_argument_spec,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import NodeMap, image_report


def main():
    module = VolfenceModule(
        argument_spec=ceph_argument_spec(
            images=dict(type='list', elements='str', default=[]),
            node_addresses=dict(type='dict', default={}),
            exclude_addresses=dict(type='list', elements='str', default=[]),
            metadata=dict(type='bool', default=True),
            ignore_missing=dict(type='bool', default=False),
            parallel=dict(type='int', default=16),
            **IMAGE_OPTIONS
        ),
        mutually_exclusive=CEPH_MUTUALLY_EXCLUSIVE + IMAGE_MUTUALLY_EXCLUSIVE + [
            ('image', 'images'), ('image_spec', 'images')],
        supports_check_mode=True,
    )
    p = module.params
    try:
        one = image_spec_of(p)
        specs = [one] if one else []
        for text in p['images']:
            spec = parse_image_spec(text, 'images entry')
            if spec not in specs:
                specs.append(spec)
        if not specs:
            raise ValueError('give image (pool/image or pool/namespace/image), or images')
        node_map = NodeMap(p['node_addresses'])
        exclude = AddressMatcher(p['exclude_addresses'], 'exclude_addresses')
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    with module_session(module) as client:
        inspected = client.inspect_images(specs, metadata=p['metadata'], workers=p['parallel'])

    reports, missing, errors = [], [], []
    for spec, raw, error in inspected:
        if error is None:
            reports.append(image_report(spec, raw, node_map, exclude))
        elif isinstance(error, CephNotFoundError):
            missing.append(dict(spec=str(spec), error=error.msg))
        else:
            errors.append((spec, error))
    # Every image is accounted for: read (images), missing, or failed with its own error (I7).
    failed_images = [dict(spec=str(spec), error=error.msg) for spec, error in errors]
    if errors:
        spec, first = errors[0]
        kwargs = first.fail_kwargs()
        kwargs['msg'] = 'could not read %d of %d image(s), first %s: %s' % (len(errors), len(specs), spec, first.msg)
        kwargs.setdefault('versions', client.known_versions)
        module.fail_json(backend=client.name, images=reports, missing=missing, failed_images=failed_images,
                         **kwargs)
    if missing and not p['ignore_missing']:
        module.fail_json(msg='%d image(s) not found: %s' % (len(missing), '; '.join(m['error'] for m in missing)),
                         missing=missing, failed_images=failed_images, images=reports, backend=client.name,
                         versions=client.known_versions)
    module.exit_json(changed=False, images=reports, in_use=any(r['in_use'] for r in reports),
                     watchers_total=sum(len(r['watchers']) for r in reports), missing=missing,
                     failed_images=failed_images, backend=client.name, versions=client.known_versions)


if __name__ == '__main__':
    main()

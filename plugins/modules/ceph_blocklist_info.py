#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: ceph_blocklist_info
short_description: List the Ceph OSD blocklist, range entries included
version_added: 0.1.0
description:
  - Lists every entry of the Ceph OSD blocklist, address entries (C(ip:port/nonce)) and range
    entries (C(cidr:10.0.3.0:0/24)), with the expiry as an ISO 8601 UTC timestamp and the seconds
    remaining.
  - Optionally keeps only the entries that concern some addresses or networks.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.ceph
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
  - volfence.csi.attributes.ACTIONGROUP_CEPH
options:
  match:
    description:
      - Keep only the entries concerning these IPs, CIDRs or C(ip:port/nonce) addresses. An
        address entry matches when the pattern matches its address, a range entry when it
        contains an IP given or overlaps a CIDR given.
      - Empty keeps every entry.
    type: list
    elements: str
    default: []
seealso:
  - module: volfence.csi.ceph_blocklist
'''

EXAMPLES = r'''
- name: Show the blocklist
  volfence.csi.ceph_blocklist_info:
    conf: /etc/ceph/ceph.conf
    keyring: /etc/ceph/ceph.client.admin.keyring
  register: fence

- name: Is node-b (10.0.3.12) fenced?
  volfence.csi.ceph_blocklist_info:
    match: [10.0.3.12]
  register: node_b

- name: Say so
  ansible.builtin.debug:
    msg: "node-b fenced until {{ node_b.entries | map(attribute='expires') | max }}"
  when: node_b.entries | length > 0
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
entries:
  description: The blocklist entries, address entries first.
  returned: always
  type: list
  elements: dict
  contains:
    entry:
      description: The entry as C(ceph osd blocklist ls) prints it.
      type: str
      sample: cidr:10.0.3.0:0/24
    kind:
      description: V(address) or V(range).
      type: str
      sample: range
    address:
      description: The C(ip:port/nonce) of an address entry (null for ranges).
      type: str
      sample: "10.0.3.12:0/3271234567"
    ip:
      description: The IP of an address entry (null for ranges).
      type: str
      sample: 10.0.3.12
    port:
      description: The port of an address entry (0 for clients).
      type: int
      sample: 0
    nonce:
      description: The nonce of an address entry (0 blocks every client of the IP).
      type: int
      sample: 3271234567
    cidr:
      description: The network of a range entry, normalised (null for addresses).
      type: str
      sample: 10.0.3.0/24
    num_addresses:
      description: How many addresses a range entry covers (null for addresses).
      type: int
      sample: 256
    expires:
      description: When the entry expires, ISO 8601 in UTC.
      type: str
      sample: "2026-11-21T06:15:44.263371Z"
    expires_in:
      description: Seconds until it expires (negative once expired and not yet pruned).
      type: int
      sample: 3541
    expired:
      description: Whether the expiry has passed.
      type: bool
      sample: false
count:
  description: How many entries are returned.
  returned: always
  type: int
  sample: 2
total:
  description: How many entries the blocklist has in all.
  returned: always
  type: int
  sample: 2
range_supported:
  description: Whether the cluster supports range entries (C(osd blocklist range add)).
  returned: always
  type: bool
  sample: true
naming:
  description: V(blocklist) (Pacific and later) or V(blacklist).
  returned: always
  type: str
  sample: blocklist
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import (
    entry_info,
    entry_matches,
    sorted_entries,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import module_session
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_MUTUALLY_EXCLUSIVE,
    AddressMatcher,
    ceph_argument_spec,
    utc_now,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import read_blocklist


def main():
    module = VolfenceModule(
        argument_spec=ceph_argument_spec(match=dict(type='list', elements='str', default=[])),
        mutually_exclusive=CEPH_MUTUALLY_EXCLUSIVE,
        supports_check_mode=True,
    )
    try:
        matcher = AddressMatcher(module.params['match'], 'match')
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    with module_session(module) as client:
        state = read_blocklist(client)
    now = utc_now()
    entries = sorted_entries(state.entries)
    if matcher:
        entries = [e for e in entries if entry_matches(e, matcher)]
    module.exit_json(changed=False, entries=[entry_info(e, now) for e in entries], count=len(entries),
                     total=len(state.entries), range_supported=state.range_supported, naming=state.naming,
                     backend=client.name, versions=client.known_versions)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: ceph_blocklist
short_description: Fence Ceph clients with the OSD blocklist, safely
version_added: 0.1.0
description:
  - Adds addresses and networks to the Ceph OSD blocklist (O(state=present)) or removes them
    (O(state=absent)), so that a failed node's clients can no longer write to RBD images and
    hold their watchers; Kubernetes pods waiting in C(ContainerCreating) for a ReadWriteOnce
    volume can then attach it elsewhere.
  - Idempotent against the current blocklist. Entries already present are left as they are
    (their expiry is not changed).
  - CIDRs use C(osd blocklist range add) where the cluster has it (it lists range entries),
    else one entry per address, sent in parallel over one connection (bindings) or as bounded
    parallel processes (CLI).
  - Refuses, before changing anything, the addresses of the cluster's own monitors, managers,
    OSDs and MDSs (read from the mon, mgr, osd and fs maps), the O(protect_addresses),
    C(0.0.0.0/0), C(::/0) and any CIDR with more than O(max_addresses) addresses.
  - With O(state=absent), refuses before reading or removing anything C(0.0.0.0/0), C(::/0),
    C(::ffff:0:0/96) (every IPv4 address as IPv4-mapped IPv6) and any IPv6 range holding it,
    whatever O(force) says (one call would lift every fence of the cluster), and a CIDR with more
    than O(max_addresses) addresses unless O(force=true).
  - Bad input (an address that is not an IP address, a CIDR that is not a CIDR or has host bits
    set, an O(expire) out of range) fails with a message naming the value, before connecting.
  - Addresses are compared after normalisation, IPv4-mapped IPv6 as IPv4 and ports and nonces
    dropped for IP-wide entries, so C(::ffff:10.0.0.1), C([::ffff:10.0.0.1]:0/0) and
    C(::ffff:10.0.0.0/120) are refused exactly like C(10.0.0.1) and C(10.0.0.0/24).
  - When some changes fail (or the blocklist cannot be read back), the module fails but reports
    what it did, RV(actions), what failed, RV(failed_actions), and C(changed=true) if anything
    was written.
  - Uses C(osd blacklist) on clusters older than Pacific, which do not know C(osd blocklist).
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.ceph
  - volfence.csi.attributes
  - volfence.csi.attributes.ACTIONGROUP_CEPH
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows the blocklist entries before and after.
options:
  state:
    description:
      - V(present) blocklists every address and CIDR given.
      - V(absent) removes the entries that match. An address without a nonce (C(10.0.0.5))
        matches its plain entry and every C(ip:port/nonce) entry of that IP; an address with a
        nonce matches only that entry. A CIDR matches the range entries inside it (however Ceph
        stored their base address) and every address entry whose IP is inside it.
    type: str
    choices: [present, absent]
    default: present
  addresses:
    description:
      - Client addresses, IPv4 or IPv6, optionally in Ceph's C(ip:port/nonce) form
        (C([ipv6]:port/nonce)) to fence a single client instance, for example a watcher's address
        from M(volfence.csi.rbd_watchers_info).
      - A plain IP blocks every client from that IP.
    type: list
    elements: str
    default: []
  cidrs:
    description:
      - Networks such as C(10.0.3.0/24) or C(fd00::/120). Host bits must be zero (C(10.0.3.5/24) is
        refused as ambiguous).
    type: list
    elements: str
    default: []
  expire:
    description:
      - Seconds until new entries expire. Without it Ceph's default applies
        (C(mon_osd_blocklist_default_expire), one hour).
      - A fenced node must not come back before it has been rebooted; for a node fence, a long
        expiry (days) is safer than the default.
      - Must be a number of seconds above 0 and at most 315360000 (ten years; Ceph caps expiries
        at 2106). C(0), negative and larger values, C(inf), C(nan) and text that is not a number
        fail with a message before anything is done.
    type: raw
  protect_addresses:
    description:
      - IPs, C(ip:port/nonce) addresses or CIDRs that must never be fenced, for example the
        addresses of every Ready node. With O(state=present), the module refuses (and changes
        nothing) when a requested address is, or a requested CIDR covers, any of them.
      - An address protects its whole IP (any port and nonce), a CIDR its whole network. IPv4-mapped
        IPv6 is normalised on both sides.
      - Ignored with O(state=absent), which only removes entries.
    type: list
    elements: str
    default: []
  max_addresses:
    description:
      - Refuse CIDRs with more addresses than this (a C(/24) has 256). Raise it explicitly to
        fence a larger network. C(0.0.0.0/0) and C(::/0) are refused whatever it says.
      - With O(state=absent), removing entries by a wider CIDR also needs O(force=true).
      - From 1 to 4294967296 (an IPv4 C(/0) is refused anyway).
    type: int
    default: 256
  force:
    description:
      - With O(state=absent), remove the entries inside a CIDR with more than O(max_addresses)
        addresses. C(0.0.0.0/0), C(::/0) and C(::ffff:0:0/96) are refused even then.
      - Ignored with O(state=present), where raising O(max_addresses) is the explicit choice.
    type: bool
    default: false
  cidr_mode:
    description:
      - How CIDRs are blocklisted with O(state=present).
      - V(auto) uses range entries where the cluster supports them, else one entry per address.
      - V(range) requires range entries (fails on clusters without them).
      - V(addresses) always adds one entry per usable address (254 for a C(/24)).
    type: str
    choices: [auto, range, addresses]
    default: auto
  parallel:
    description:
      - How many per-address blocklist commands run at once (threads over one connection with the
        bindings, processes with the CLI). Each add waits for a monitor proposal (about a second),
        so a C(/24) takes minutes one by one and seconds in parallel.
      - From 1 to 256.
    type: int
    default: 64
  wait_unwatched:
    description:
      - RBD images (C(pool/image) or C(pool/namespace/image)) the blocklisted clients watched. With
        O(state=present), once the entries are in place, the module reads these images' watchers until
        none is a client of O(addresses) or O(cidrs) (the OSDs drop a blocklisted client's watches
        once they see the new OSD map), and fails if one still is after O(wait_timeout) seconds; the
        fence has then not taken effect, and nothing may be released on its strength (I6).
      - An image that does not exist has no watcher. Not read in check mode. Refused with O(state=absent).
    type: list
    elements: str
    default: []
  wait_timeout:
    description:
      - How long O(wait_unwatched) waits, in seconds.
      - From 1 to 86400.
    type: int
    default: 60
notes:
  - The OSDs drop the watches and sessions of blocklisted clients; RBD watchers of the fenced
    node disappear within seconds. O(wait_unwatched) waits for that on the images that matter.
seealso:
  - module: volfence.csi.ceph_blocklist_info
  - module: volfence.csi.rbd_watchers_info
  - module: volfence.csi.rbd_lock
'''

EXAMPLES = r'''
- name: Fence the failed node's IP for a week
  volfence.csi.ceph_blocklist:
    addresses: [10.0.3.12]
    expire: 604800
    conf: /etc/ceph/ceph.conf
    keyring: /etc/ceph/ceph.client.admin.keyring

- name: Fence the failed node, never a Ready node's address
  volfence.csi.ceph_blocklist:
    addresses: [10.0.3.12]
    protect_addresses: [10.0.3.11, 10.0.3.13]
    expire: 604800

- name: Fence one stale client instance only (a watcher's address)
  volfence.csi.ceph_blocklist:
    addresses: ["10.0.3.12:0/3271234567"]

- name: Fence a node's pod network through the Rook toolbox
  volfence.csi.ceph_blocklist:
    cidrs: [10.244.3.0/24]
    expire: 604800
    backend: cli
    command_prefix: [kubectl, -n, rook-ceph, exec, deploy/rook-ceph-tools, --]

- name: Lift the fence once the node has been rebooted
  volfence.csi.ceph_blocklist:
    state: absent
    addresses: [10.0.3.12]
    cidrs: [10.244.3.0/24]

- name: Lift every fence inside a /16 (wider than max_addresses, so it needs force)
  volfence.csi.ceph_blocklist:
    state: absent
    cidrs: [10.244.0.0/16]
    force: true

- name: Set the connection once for every Ceph module
  module_defaults:
    group/volfence.csi.ceph:
      conf: /etc/ceph/ceph.conf
      keyring: /etc/ceph/ceph.client.admin.keyring
  block:
    - name: Preview a fence
      volfence.csi.ceph_blocklist:
        cidrs: [10.0.3.0/24]
      check_mode: true
      diff: true
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
actions:
  description:
    - The changes made (or, in check mode, that would be made), one per Ceph command.
  returned: always
  type: list
  elements: dict
  contains:
    op:
      description: V(add) or V(rm).
      type: str
      sample: add
    range:
      description: Whether it is a range command (C(osd blocklist range ...)).
      type: bool
      sample: true
    target:
      description: The argument given to Ceph.
      type: str
      sample: 10.0.3.0/24
    entry:
      description: The entry as C(ceph osd blocklist ls) prints it.
      type: str
      sample: cidr:10.0.3.0:0/24
    requested:
      description: The address or CIDR of the request that caused it.
      type: str
      sample: 10.0.3.0/24
  sample:
    - {op: add, range: false, target: "10.0.3.12:0/0", entry: "10.0.3.12:0/0", requested: "10.0.3.12:0/0"}
failed_actions:
  description:
    - Changes that failed, each with the keys of RV(actions) and its C(error); the module fails
      when there is any, and still reports RV(actions) (what was done) and C(changed).
  returned: always
  type: list
  elements: dict
  sample: []
blocklist_error:
  description:
    - Why the blocklist could not be read back after the changes (for example a monitor that
      stopped answering); RV(blocklist) is then the prediction. Null otherwise.
  returned: always
  type: str
  sample: null
blocklist:
  description:
    - The blocklist entries after the run (predicted in check mode, or when RV(blocklist_error)
      says it could not be read back), as Ceph prints them.
  returned: always
  type: list
  elements: str
  sample: ["10.0.3.12:0/0", "cidr:10.244.3.0:0/24"]
watchers_after:
  description:
    - With O(wait_unwatched), each existing image's watchers as last read (the keys of
      M(volfence.csi.rbd_watchers_info)'s C(images), without node names); empty otherwise.
  returned: always
  type: list
  elements: dict
  sample: [{spec: replicapool/csi-vol-1, watchers: [], in_use: false}]
still_watched:
  description:
    - With O(wait_unwatched), the blocklisted clients that still watched an image when O(wait_timeout)
      passed, each with C(image) and C(address); the module fails when there is any.
  returned: always
  type: list
  elements: dict
  sample: []
cidr_mode:
  description: How CIDRs were handled with O(state=present), V(range) or V(addresses); null for O(state=absent).
  returned: always
  type: str
  sample: range
naming:
  description: The command family the cluster uses, V(blocklist) (Pacific and later) or V(blacklist).
  returned: always
  type: str
  sample: blocklist
diff:
  description: The blocklist before and after.
  returned: when diff mode is on
  type: dict
  sample: {before: {blocklist: []}, after: {blocklist: ["10.0.3.12:0/0"]}}
'''


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import module_session, parse_image_spec
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_MUTUALLY_EXCLUSIVE,
    CephError,
    ceph_argument_spec,
    check_expire,
)
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_PARALLEL, MAX_WAIT_SECONDS, check_range
from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import Request, parse_protected
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import (
    BlocklistFailure,
    ensure_blocklist,
    fence_matcher,
    wait_unwatched,
)


def main():
    module = VolfenceModule(
        argument_spec=ceph_argument_spec(
            state=dict(type='str', default='present', choices=['present', 'absent']),
            addresses=dict(type='list', elements='str', default=[]),
            cidrs=dict(type='list', elements='str', default=[]),
            expire=dict(type='raw'),
            max_addresses=dict(type='int', default=256),
            force=dict(type='bool', default=False),
            cidr_mode=dict(type='str', default='auto', choices=['auto', 'range', 'addresses']),
            parallel=dict(type='int', default=64),
            protect_addresses=dict(type='list', elements='str', default=[]),
            wait_unwatched=dict(type='list', elements='str', default=[]),
            wait_timeout=dict(type='int', default=60),
        ),
        mutually_exclusive=CEPH_MUTUALLY_EXCLUSIVE,
        supports_check_mode=True,
    )
    p = module.params
    if not p['addresses'] and not p['cidrs']:
        module.fail_json(msg='give at least one address or CIDR: nothing was changed')
    try:
        # every input error before connecting
        check_range(p['parallel'], 'parallel', 1, MAX_PARALLEL)
        check_range(p['max_addresses'], 'max_addresses', 1, 2 ** 32)
        p['expire'] = check_expire(p['expire'])
        Request(p['addresses'], p['cidrs'])
        parse_protected(p['protect_addresses'])
        check_range(p['wait_timeout'], 'wait_timeout', 1, MAX_WAIT_SECONDS, 'seconds')
        if p['wait_unwatched'] and p['state'] != 'present':
            raise ValueError('wait_unwatched waits for a fence to take effect: it needs state=present')
        wait_specs = []
        for text in p['wait_unwatched']:
            spec = parse_image_spec(text, 'wait_unwatched entry')
            if spec not in wait_specs:
                wait_specs.append(spec)
        fenced = fence_matcher(p['addresses'], p['cidrs'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    with module_session(module) as client:
        try:
            result = ensure_blocklist(client, p['state'], addresses=p['addresses'], cidrs=p['cidrs'],
                                      expire=p['expire'], cidr_mode=p['cidr_mode'], max_addresses=p['max_addresses'],
                                      workers=p['parallel'], check_mode=module.check_mode,
                                      protect=p['protect_addresses'] if p['state'] == 'present' else None,
                                      force=p['force'])
        except BlocklistFailure as exc:
            # I7: what was done and what failed, and changed=true when anything was written
            for warning in exc.result['warnings']:
                module.warn(warning)
            details = _public(exc.result)
            details.update(exc.fail_kwargs())
            details.setdefault('versions', client.known_versions)
            module.fail_json(backend=client.name, blocklist=exc.result['after'], changed=exc.result['changed'],
                             **details)

        reports, still = [], []
        if wait_specs and not module.check_mode:
            try:
                reports, still = wait_unwatched(client, wait_specs, fenced, wait_timeout=p['wait_timeout'])
            except CephError as exc:
                details = _public(result)
                details.update(exc.fail_kwargs())
                details['msg'] = ('the blocklist entries are in place, but the fenced clients could not be '
                                  'confirmed gone: %s' % exc.msg)
                module.fail_json(backend=client.name, blocklist=result['after'], changed=result['changed'],
                                 versions=client.known_versions, **details)

    for warning in result['warnings']:
        module.warn(warning)
    output = _public(result)
    output.update(backend=client.name, blocklist=result['after'], changed=result['changed'],
                  versions=client.known_versions, watchers_after=reports,
                  still_watched=[dict(image=image, address=address) for image, address in still])
    if module._diff:
        output['diff'] = dict(before=dict(blocklist=result['before']), after=dict(blocklist=result['after']))
    if still:
        module.fail_json(msg='blocklisted, but after %d s these fenced clients still watch their images (the fence '
                         'has not taken effect; nothing may be released on it): %s' % (
                             p['wait_timeout'], '; '.join('%s on %s' % (a, i) for i, a in still)), **output)
    module.exit_json(**output)


def _public(result):
    return dict((k, result[k]) for k in ('actions', 'failed_actions', 'cidr_mode', 'naming', 'blocklist_error'))


if __name__ == '__main__':
    main()

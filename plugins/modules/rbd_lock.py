#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rbd_lock
short_description: List, break (after fencing the holder) or take RBD advisory locks
version_added: 0.1.0
description:
  - Lists the advisory locks of an RBD image (id, locker, address) and the owner of the
    exclusive-lock feature's managed lock.
  - O(state=absent) breaks the locks that match the filters, for example the
    C(kubelet_lock_magic_<node>) lock the in-tree RBD plugin left behind on a failed node.
    By default it first blocklists each locker's address (that exact client instance), because a broken
    lock alone does not stop the old client writing.
  - O(state=present) takes an advisory lock, exclusive or (with O(tag)) shared.
  - Without O(state), it only lists, as M(volfence.csi.rbd_lock_info) does. That use is deprecated
    (it warns) and will be removed in 2.0.0; use M(volfence.csi.rbd_lock_info) to list.
  - The image is O(image) as C(pool/image) or C(pool/namespace/image) (or O(image_spec)), or O(pool),
    O(image) and O(namespace).
  - When fencing a locker or breaking a lock fails, the module fails but reports what it did,
    the lockers it blocklisted (RV(blocklisted)), the locks it broke (RV(broken)), those it could
    not break (RV(failed_locks)) and C(changed=true) if anything was written. A lock that fails to break
    does not stop the others; nothing is broken when blocklisting the lockers fails.
  - With O(state=absent), filters that select no lock of the image are not an error (breaking a lock is
    idempotent, a re-run after success finds the lock gone), but the module warns loudly, naming the image,
    the O(lock_id), O(locker) and O(address) asked for, the locks the image has (or that it has none) and,
    for a lock id close to an existing one, a "did you mean". An image that does not exist fails.
  - A O(locker) without wildcards that cannot name a locker (not C(client.<number>) or a number, for example
    C(client.abc) or the auth name C(client.admin)) fails before anything is read.
  - Pool, namespace, image, lock id, locker and tag must not start with C(-); lock ids and lockers
    read from the cluster are passed to the C(rbd) tool after C(--), so they are never options.
author:
  - volfence.csi maintainers (@volfence)
extends_documentation_fragment:
  - volfence.csi.ceph
  - volfence.csi.ceph.IMAGE
  - volfence.csi.ceph.LOCK_LISTING
  - volfence.csi.attributes
  - volfence.csi.attributes.ACTIONGROUP_CEPH
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows the image's locks before and after.
options:
  state:
    description:
      - Without O(state), the module only lists the locks (deprecated, use M(volfence.csi.rbd_lock_info)).
      - V(absent) breaks the locks matching O(lock_id), O(locker) and O(address) (all that are
        given must match; at least one is required), except those held from O(protect_addresses).
      - V(present) takes the lock O(lock_id). It is unchanged when a lock with that id and the
        same type (and tag) is already held; it fails when another lock is in the way.
    type: str
    choices: [present, absent]
  lock_id:
    description:
      - With O(state=absent), an fnmatch pattern of lock ids, for example C(kubelet_lock_magic_*). When it
        matches no lock the module warns (with a "did you mean" for a close lock id) and breaks nothing.
      - With O(state=present), the id of the lock to take (required).
      - Must not start with C(-); to select existing locks whose id does, use a pattern such as
        C(?keyring*).
    type: str
  locker:
    description:
      - With O(state=absent), an fnmatch pattern of lockers, for example C(client.4272) (a bare
        number gets the C(client.) prefix). Must not start with C(-).
      - A locker is the client instance holding the lock, C(client.<number>) as C(rbd lock ls) shows it,
        never an auth name; without wildcards anything else (C(client.abc), C(client.admin)) fails.
    type: str
  address:
    description:
      - With O(state=absent), only locks held from these IPs, CIDRs or C(ip:port/nonce) addresses.
    type: list
    elements: str
    default: []
  protect_addresses:
    description:
      - Never break (nor blocklist) a lock held from these IPs, CIDRs or C(ip:port/nonce)
        addresses, for example the healthy nodes. Such locks are listed in RV(protected).
      - IPv4-mapped IPv6 holders (C([::ffff:10.0.3.11]:0/123)) are matched as their IPv4 address.
    type: list
    elements: str
    default: []
  include_managed:
    description:
      - Also break the exclusive-lock feature's managed lock (id C(auto <n>), tag C(internal))
        when it matches the filters. librbd breaks a blocklisted owner's managed lock by itself
        when another client needs it, so this is rarely needed.
    type: bool
    default: false
  blocklist_locker:
    description:
      - With O(state=absent), blocklist each matching locker's exact address (C(ip:port/nonce),
        that client instance only) before breaking its lock, and break nothing if that fails.
      - The cluster's own daemons are never blocklisted (see M(volfence.csi.ceph_blocklist)).
    type: bool
    default: true
  blocklist_addresses:
    description:
      - With O(state=absent) and O(blocklist_locker), also blocklist these IPs or C(ip:port/nonce) addresses (C(ip)
        or C(ip:0/0) cuts every client of the IP) before any lock is broken, for example the holder node's own
        addresses. The in-tree rbd plugin takes C(kubelet_lock_magic_<node>) with a short-lived C(rbd lock add),
        so the locker is not the client that maps and writes the image; a frozen or partitioned mapping of that
        node no longer watches and is cut only by its node's address. The C(volfence.csi.lock_break_plan)
        filter returns them for each lock (C(fence)). Ceph daemons and O(protect_addresses) are refused.
    type: list
    elements: str
    default: []
  blocklist_expire:
    description:
      - Seconds until those blocklist entries expire (Ceph's default, one hour, without it).
      - Must be a number of seconds above 0 and at most 315360000 (ten years). C(0), negative and
        larger values, C(inf), C(nan) and text that is not a number fail with a message before
        anything is done.
    type: raw
  tag:
    description:
      - With O(state=present), take a shared lock with this tag instead of an exclusive one.
        Must not start with C(-).
    type: str
notes:
  - librbd's own lock breaking (C(rbd lock rm)) blocklists the locker by default, with Ceph's default
    expiry; this module turns that off (C(rbd_blocklist_on_break_lock=false)) so that
    O(blocklist_locker) and O(blocklist_expire) alone decide.
seealso:
  - module: volfence.csi.rbd_lock_info
  - module: volfence.csi.ceph_blocklist
  - module: volfence.csi.rbd_watchers_info
'''

EXAMPLES = r'''
- name: Fence and break the lock the failed node-b left behind
  volfence.csi.rbd_lock:
    image_spec: kube/kubernetes-dynamic-pvc-6b2c7d1e
    state: absent
    lock_id: kubelet_lock_magic_*
    address: [10.0.3.12]
    protect_addresses: [10.0.3.11, 10.0.3.13]
    blocklist_expire: 604800

- name: Take the lock from the new node
  volfence.csi.rbd_lock:
    pool: kube
    image: kubernetes-dynamic-pvc-6b2c7d1e
    state: present
    lock_id: kubelet_lock_magic_node-a
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
locks_after:
  description: The locks after the run (predicted in check mode).
  returned: always
  type: list
  elements: dict
broken:
  description: The locks broken (to be broken, in check mode), also when the module fails.
  returned: always
  type: list
  elements: dict
failed_locks:
  description:
    - The selected locks that were not broken, each with the keys of C(locks) and its C(error)
      (when blocklisting the lockers failed, every selected lock is here). The module fails when
      there is any.
  returned: always
  type: list
  elements: dict
  sample: []
blocklist_failed:
  description: The blocklist additions for the lockers that failed, each with its C(error).
  returned: always
  type: list
  elements: dict
  sample: []
locks_after_error:
  description:
    - Why the locks could not be read back after the changes; RV(locks_after) is then the
      prediction. Null otherwise.
  returned: always
  type: str
  sample: null
protected:
  description: Matching locks left alone because of O(protect_addresses), each with C(protected_by).
  returned: always
  type: list
  elements: dict
blocklisted:
  description:
    - The blocklist entries added for the lockers (the actions, as M(volfence.csi.ceph_blocklist)
      returns them), also when the module fails.
  returned: always
  type: list
  elements: dict
'''

import errno


from ansible_collections.volfence.csi.plugins.module_utils._module import VolfenceModule
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    IMAGE_MUTUALLY_EXCLUSIVE,
    IMAGE_OPTIONS,
    image_spec_of,
    module_session,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CEPH_MUTUALLY_EXCLUSIVE,
    AddressMatcher,
    CephError,
    ceph_argument_spec,
    check_expire,
    check_name,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import (
    LOCK_LISTING_OPTIONS,
    LockBreakFailure,
    break_image_locks,
    read_image_locks,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import (
    LockFilter,
    NodeMap,
    check_locker,
    describe_locks,
    exclusive_lock_owners,
    unmatched_locks_warning,
)

LISTING_DEPRECATED = ('rbd_lock without state only lists the locks: use volfence.csi.rbd_lock_info to list them '
                      '(same options but state and the lock-breaking ones, same locks, exclusive_lock_owners and '
                      'lock_owners); rbd_lock will require state')


def take_lock(client, spec, locks, p, check_mode):
    lock_id, tag = p['lock_id'], p['tag']
    result = dict(broken=[], protected=[], blocklisted=[], changed=False, locks_after=locks)
    mine = [lock for lock in locks if lock['id'] == lock_id and not lock['managed']]
    if mine:
        held = mine[0]
        if (tag is None and held['exclusive']) or (tag is not None and not held['exclusive'] and held['tag'] == tag):
            return result
        raise CephError('lock %r is already held on %s by %s (%s) as %s: not the %s asked for' % (
            lock_id, spec, held['locker'], held['address'],
            'exclusive' if held['exclusive'] else 'shared with tag %r' % held['tag'],
            'exclusive lock' if tag is None else 'shared lock with tag %r' % tag))
    others = locks if (tag is None or any(lock['exclusive'] or lock['tag'] != tag for lock in locks)) else []
    if others:
        holders = ', '.join('%s %r from %s%s' % (lock['locker'], lock['id'], lock['address'],
                                                 ' (exclusive-lock feature)' if lock['managed'] else '')
                            for lock in others)
        raise CephError('%s is locked by %s: break %s first (state=absent, after fencing the holder)'
                        % (spec, holders, 'it' if len(others) == 1 else 'them'))
    if not check_mode:
        try:
            client.add_lock(spec, lock_id, tag)
        except CephError as exc:
            if exc.rc is not None and abs(int(exc.rc)) in (errno.EBUSY, errno.EEXIST):
                exc.msg = '%s is locked by another client meanwhile: %s' % (spec, exc.msg)
            raise
        result['locks_after'] = None  # read back below
    else:
        result['locks_after'] = locks + [dict(id=lock_id, locker='(this module)', address=None, ip=None, nonce=None,
                                              exclusive=tag is None, tag=tag or '', managed=False, node=None)]
    result['changed'] = True
    return result


def main():
    module = VolfenceModule(
        argument_spec=ceph_argument_spec(
            state=dict(type='str', choices=['present', 'absent']),
            lock_id=dict(type='str'),
            locker=dict(type='str'),
            address=dict(type='list', elements='str', default=[]),
            protect_addresses=dict(type='list', elements='str', default=[]),
            include_managed=dict(type='bool', default=False),
            blocklist_locker=dict(type='bool', default=True),
            blocklist_addresses=dict(type='list', elements='str', default=[]),
            blocklist_expire=dict(type='raw'),
            tag=dict(type='str'),
            **dict(IMAGE_OPTIONS, **LOCK_LISTING_OPTIONS)
        ),
        mutually_exclusive=CEPH_MUTUALLY_EXCLUSIVE + IMAGE_MUTUALLY_EXCLUSIVE,
        required_one_of=[('image_spec', 'image')],
        required_if=[('state', 'present', ('lock_id',))],
        supports_check_mode=True,
    )
    p = module.params
    try:
        spec = image_spec_of(p)
        node_map = NodeMap(p['node_addresses'])
        protect = AddressMatcher(p['protect_addresses'], 'protect_addresses')
        lock_filter = LockFilter(p['lock_id'], p['locker'], p['address'], p['include_managed'])
        if p['state'] == 'absent' and lock_filter.empty:
            raise ValueError('state=absent needs at least one of lock_id, locker, address to select the locks '
                             'to break (lock_id: "*" selects every lock): nothing was changed')
        p['blocklist_expire'] = check_expire(p['blocklist_expire'], 'blocklist_expire')
        for what in ('lock_id', 'locker', 'tag'):
            check_name(p[what], what)
        check_locker(p['locker'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    output = dict(changed=False, broken=[], protected=[], blocklisted=[], blocklist_failed=[], failed_locks=[],
                  lock_owners=None, locks_after_error=None)
    # whatever was done before an error (changed, lists) stays in the report (I7)
    with module_session(module, partial=output) as client:
        try:
            output['backend'] = client.name
            output['versions'] = client.known_versions
            listing, warnings = read_image_locks(client, spec, node_map, p['query_lock_owners'])
            for warning in warnings:
                module.warn(warning)
            locks = output['locks'] = listing['locks']
            output['lock_owners'] = listing['lock_owners']
            if p['state'] == 'absent':
                unmatched = unmatched_locks_warning(spec, lock_filter, locks)
                if unmatched:
                    module.warn(unmatched)
                output.update(break_image_locks(client, spec, locks, lock_filter, protect=protect,
                                                blocklist_locker=p['blocklist_locker'], expire=p['blocklist_expire'],
                                                also_fence=p['blocklist_addresses'],
                                                check_mode=module.check_mode, node_map=node_map))
            elif p['state'] == 'present':
                output.update(take_lock(client, spec, locks, p, module.check_mode))
            else:
                module.deprecate(LISTING_DEPRECATED, version='2.0.0', collection_name='volfence.csi')
                output['locks_after'] = locks
            if output['locks_after'] is None:
                output['locks_after'] = describe_locks(client.image_locks(spec), node_map)
        except LockBreakFailure as exc:
            # I7: what was blocklisted, broken and not broken, and changed=true when anything was written
            output.update(exc.result)
            output.update(exc.fail_kwargs())
            output['exclusive_lock_owners'] = exclusive_lock_owners(output['locks_after'])
            module.fail_json(**output)
    output['exclusive_lock_owners'] = exclusive_lock_owners(output['locks_after'])
    if module._diff:
        output['diff'] = dict(before=dict(locks=['%s %s %s' % (lk['id'], lk['locker'], lk['address'])
                                                 for lk in output['locks']]),
                              after=dict(locks=['%s %s %s' % (lk['id'], lk['locker'], lk['address'])
                                                for lk in output['locks_after']]))
    module.exit_json(**output)


if __name__ == '__main__':
    main()

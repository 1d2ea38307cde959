# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):

    # The options every Ceph module shares (argument spec: module_utils/_ceph/common.py).
    DOCUMENTATION = r'''
options:
  cluster:
    description:
      - Ceph cluster name; selects C(/etc/ceph/<cluster>.conf) when no configuration file is named.
      - When not set, C(--cluster) of E(CEPH_ARGS), else V(ceph).
    type: str
  conf:
    description:
      - Path of the Ceph configuration file.
      - When not set, as the C(ceph) tool finds it, C(-c)/C(--conf) of E(CEPH_ARGS), else E(CEPH_CONF),
        else Ceph's default search (C(/etc/ceph/<cluster>.conf)), unless O(mon_host) is set, in which case
        no file is read.
      - With O(command_prefix), the path is the one inside the container.
    type: path
  keyring:
    description:
      - Path of the keyring holding the key of O(user).
      - When not set, C(-k)/C(--keyring) of E(CEPH_ARGS), else the keyring the configuration file names
        (by default C(/etc/ceph/<cluster>.client.<user>.keyring)).
      - Checked before anything is done (unless O(command_prefix) is set), a missing file fails
        with a clear error.
    type: path
  key:
    description:
      - The cephx secret key of O(user), when there is no keyring file (for example taken from a
        Kubernetes secret). It is written to a temporary keyring readable only by the module's user,
        removed when the module ends, and never logged.
      - Mutually exclusive with O(keyring).
    type: str
  user:
    description:
      - The Ceph client name without the C(client.) prefix (a C(client.) prefix is accepted and
        removed).
      - When not set, C(--id)/C(-i)/C(--user) or C(-n)/C(--name client.<id>) of E(CEPH_ARGS), else V(admin).
    type: str
    aliases: [id]
  mon_host:
    description:
      - Monitor address(es), overriding the configuration file, for example C(10.0.0.1) or
        C([v2:10.0.0.1:3300,v1:10.0.0.1:6789]).
      - When not set, C(-m)/C(--mon_host) of E(CEPH_ARGS).
    type: str
  timeout:
    description:
      - Seconds to wait to connect to the cluster and for each monitor or OSD operation. An
        unreachable monitor fails with a clear error after about this long.
      - From 1 to 3600; a value out of range fails before connecting.
    type: int
    default: 30
  backend:
    description:
      - How to talk to Ceph.
      - V(rados) uses the C(rados)/C(rbd) Python bindings (Debian/Ubuntu C(python3-rados) and
        C(python3-rbd)) of the target's Python, with one connection for everything (the fastest).
      - V(cli) runs the C(ceph)/C(rbd) tools with C(--format json), optionally behind
        O(command_prefix).
      - V(auto) picks V(rados) when the bindings can be imported and O(command_prefix) is not set,
        else V(cli).
    type: str
    choices: [auto, rados, cli]
    default: auto
  command_prefix:
    description:
      - A command that runs the Ceph tools where they live (the CLI backend only), for example
        V([cephadm, shell, --]) or V([kubectl, -n, rook-ceph, exec, deploy/rook-ceph-tools, --]).
      - The C(ceph)/C(rbd) command and its arguments are appended to it.
    type: list
    elements: str
notes:
  - Options left unset are read from the environment as Ceph's own tools read it (E(CEPH_ARGS),
    E(CEPH_CONF)), the way kubernetes.core's modules read E(K8S_AUTH_KUBECONFIG), so that an ad hoc call works
    where C(ceph -s) does. In a playbook, set them with the task's or play's C(environment) keyword; an
    option always wins over the environment, which the C(ceph)/C(rbd) tools then get without it.
  - Failures report the command (CLI arguments, or the JSON monitor command with the bindings), its
    return code, stdout and stderr.
  - Bad input fails before the module contacts the cluster, and refusals happen before anything is
    changed.
requirements:
  - Either the C(rados) and C(rbd) Python bindings, or the C(ceph) and C(rbd) command line tools
    (C(ceph-common)), on the target.
seealso:
  - name: Ceph OSD blocklist
    description: How Ceph fences clients.
    link: https://docs.ceph.com/en/latest/rados/operations/control/#osd-subsystem
'''

    # The options naming one image (argument spec: IMAGE_OPTIONS in module_utils/_ceph/client.py).
    IMAGE = r'''
options:
  image_spec:
    description:
      - The image as one string, C(pool/image) or C(pool/namespace/image), as the C(rbd) tool and
        ceph-csi write it.
      - Instead of O(pool), O(namespace) and O(image), which it excludes.
      - A spec of another shape (one part, four parts, an empty part, a snapshot C(@snap), spaces) or
        a part that starts with C(-) fails before anything is read.
    type: str
    version_added: 0.2.0
  pool:
    description:
      - Pool of the image given by O(image) by its name alone (must not start with C(-)).
    type: str
  namespace:
    description:
      - RADOS namespace of the image given by O(image) (ceph-csi's C(radosNamespace); must not start
        with C(-)).
    type: str
    default: ''
  image:
    description:
      - Name of the image, in O(pool) (and O(namespace)); must not start with C(-).
      - Or, as the C(rbd) tool takes it, C(pool/image) or C(pool/namespace/image), then without O(pool)
        and O(namespace).
      - A name without its pool fails before anything is read, naming both ways to give it.
    type: str
'''

    # The options of an image's lock listing (argument spec: LOCK_LISTING_OPTIONS in module_utils/_ceph/ops.py).
    LOCK_LISTING = r'''
options:
  node_addresses:
    description:
      - Node names and their IPs or CIDRs, to name the node each lock is held from.
    type: dict
    default: {}
  query_lock_owners:
    description:
      - Also ask librbd for the exclusive-lock owners (C(lock_get_owners)), bindings backend only.
        That call needs a read-write open of the image, which registers a short-lived watcher of
        this module; C(exclusive_lock_owners) gives the same owners from the lock list without it.
    type: bool
    default: false
'''

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: playbook_inputs
short_description: Check every input of a volfence.csi playbook before it reads or writes anything
version_added: 0.2.0
description:
  - Checks the inputs of one of the collection's playbooks (extra vars and inventory variables) against its
    entry in the collection's C(playbooks/meta/inputs.yml) - required inputs, types, choices,
    minimum and maximum, Kubernetes name formats, inventory groups and hosts, files that must be readable
    and report paths that must be writable. Misspelt inputs (a variable close to an input's name) are
    errors too.
  - Fails with one message that names every wrong input and why, for example
    C(blocklist_expire) given as C(-5) is named as C(below the minimum 1).
    On success returns the checked values, with the defaults of the spec,
    for the playbook to hand to its hosts.
  - Runs on the controller only; it reads variables and the controller's files and changes nothing.
  - The collection's playbooks run it in their first play. It is not meant for other playbooks.
author:
  - volfence.csi maintainers (@volfence)
options:
  playbook:
    description: The playbook whose inputs are checked, an entry of C(playbooks/meta/inputs.yml).
    type: str
    required: true
extends_documentation_fragment:
  - volfence.csi.attributes
  - volfence.csi.attributes.INFO_MODULE
attributes:
  action:
    description: Runs on the controller as an action plugin.
    support: full
notes:
  - Inputs are read as the first host of the playbook's first inventory group sees them.
  - A connection setting (V(volfence_kubeconfig), V(volfence_ceph_conf), V(volfence_ceph_keyring)) is only
    checked when the host that uses it connects locally; on a remote host the modules report it.
'''

EXAMPLES = r'''
- name: Check every input before anything is read or written
  volfence.csi.playbook_inputs:
    playbook: node_failover
  register: checked
'''

RETURN = r'''
inputs:
  description: The checked inputs, converted to their types, with the defaults of the spec for those not given.
  returned: always
  type: dict
  sample: {failed_node: worker2, fence_method: blocklist, wait_timeout: 300}
hosts:
  description: The inventory hosts of the playbook's groups, which get the checked inputs.
  returned: always
  type: list
  elements: str
  sample: [k8s-api, ceph-admin]
problems:
  description: One line per wrong input; empty when every input is right.
  returned: always
  type: list
  elements: str
  sample: ["blocklist_expire: -5 is below the minimum 1"]
'''

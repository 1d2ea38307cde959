# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):

    # The options every volfence.csi Kubernetes module adds to kubernetes.core's authentication
    # options (argument spec: module_utils/_k8s/common.py K8S_COMMON_SPEC).
    DOCUMENTATION = r'''
options:
  request_timeout:
    description:
      - Seconds to wait for the answer to each Kubernetes API request (connecting takes at most 10 of them).
      - Creating the client (reading the kubeconfig, credential plugins, and the API discovery kubernetes.core
        does then) is bounded by it as a whole; a server that accepts connections and never answers fails the
        module after that long, saying the API is not reachable.
      - A request that times out is treated like a lost answer, see O(api_retries).
      - From 1 to 3600.
    type: int
    default: 30
  api_retries:
    description:
      - How many times a read is retried when the API answers 429 or 5xx, or does not answer.
      - Writes are never repeated blindly. After a conflict (409), a server error or a lost answer the
        object is read again and the change is re-planned against what is there, up to this many times; a
        write whose answer was lost but which was applied is then recognised and not repeated.
      - From 0 to 20.
    type: int
    default: 3
requirements:
  - The C(kubernetes) Python library (24.2.0 or later) for the Python that runs the module.
  - The kubernetes.core collection (6.x).
notes:
  - The connection options and C(K8S_AUTH_*) environment variables are those of kubernetes.core and are
    resolved by its client code (kubeconfig file or dict, context, host, api_key, certificates, proxy,
    impersonation).
  - Errors of the Kubernetes API report the HTTP status, the API's reason and message, and the object
    concerned (C(status), C(reason), C(api_message) and C(object) in the failed result).
  - Bad input and safety refusals fail before anything is changed.
'''

    ACTIONGROUP = r'''
options: {}
attributes:
  action_group:
    description: Use C(group/volfence.csi.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - volfence.csi.k8s
'''

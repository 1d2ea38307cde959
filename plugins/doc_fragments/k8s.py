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

    # kubernetes.core's authentication options (AUTH_ARG_SPEC in its module_utils/args_common.py, which the
    # modules' argument spec takes as is), documented here rather than by extending kubernetes.core's own
    # fragment: Galaxy's importer renders a collection's docs with no other collection installed, and a
    # module whose docs name another collection's fragment then has none. tests/unit keeps the names, types,
    # aliases and suboptions equal to AUTH_ARG_SPEC; ansible-test's validate-modules checks each module.
    AUTH = r'''
options:
  kubeconfig:
    description:
      - The kubeconfig to connect with, as a path or as the kubeconfig's content (a dictionary).
      - Several paths may be given, joined by V(:) (V(;) on Windows), as in C(KUBECONFIG).
      - With no connection option at all, the service account of the pod the module runs in is used, and
        outside a pod the kubeconfig's default place (C(~/.kube/config)).
      - Environment variable C(K8S_AUTH_KUBECONFIG) when unset.
    type: raw
  context:
    description:
      - Which context of the kubeconfig to use; its current context when unset.
      - Environment variable C(K8S_AUTH_CONTEXT) when unset.
    type: str
  host:
    description:
      - The API server's URL, for example V(https://api.example.com:6443).
      - Environment variable C(K8S_AUTH_HOST) when unset.
    type: str
  api_key:
    description:
      - A bearer token to authenticate with (a service account token, for example).
      - Environment variable C(K8S_AUTH_API_KEY) when unset.
    type: str
  username:
    description:
      - User name for HTTP basic authentication, which few clusters accept.
      - Environment variable C(K8S_AUTH_USERNAME) when unset.
    type: str
  password:
    description:
      - Password for HTTP basic authentication, with O(username).
      - Environment variable C(K8S_AUTH_PASSWORD) when unset.
    type: str
  validate_certs:
    description:
      - Whether the API server's TLS certificate is verified.
      - Environment variable C(K8S_AUTH_VERIFY_SSL) when unset.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - File with the CA certificates that the API server's certificate chains to (the whole chain).
      - Environment variable C(K8S_AUTH_SSL_CA_CERT) when unset.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - File with the client certificate to authenticate with, together with O(client_key).
      - Environment variable C(K8S_AUTH_CERT_FILE) when unset.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - File with the private key of O(client_cert).
      - Environment variable C(K8S_AUTH_KEY_FILE) when unset.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through. C(HTTPS_PROXY) and the like are not read.
      - Environment variable C(K8S_AUTH_PROXY) when unset.
    type: str
  no_proxy:
    description:
      - Hosts, domains and CIDRs, comma-separated, reached without O(proxy). C(NO_PROXY) is not read.
      - Environment variable C(K8S_AUTH_NO_PROXY) when unset.
    type: str
  proxy_headers:
    description:
      - Headers sent to O(proxy).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - V(user:password) for the proxy's basic authentication.
          - Environment variable C(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) when unset.
        type: str
      basic_auth:
        description:
          - V(user:password) for a basic authentication header.
          - Environment variable C(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) when unset.
        type: str
      user_agent:
        description:
          - The C(User-Agent) header sent to the proxy.
          - Environment variable C(K8S_AUTH_PROXY_HEADERS_USER_AGENT) when unset.
        type: str
  persist_config:
    description:
      - Whether a refreshed token of the kubeconfig's user (OIDC and similar credential providers) is written
        back to the kubeconfig file. Not written when unset.
      - Environment variable C(K8S_AUTH_PERSIST_CONFIG) when unset.
    type: bool
  impersonate_user:
    description:
      - The user the requests act as (C(Impersonate-User)); the credentials used need the right to impersonate.
      - Environment variable C(K8S_AUTH_IMPERSONATE_USER) when unset.
    type: str
  impersonate_groups:
    description:
      - The groups the requests act as (C(Impersonate-Group)), with O(impersonate_user).
      - Environment variable C(K8S_AUTH_IMPERSONATE_GROUPS) when unset, comma-separated.
    type: list
    elements: str
notes:
  - With O(validate_certs) on, O(ca_cert) or the kubeconfig must hold the API server's whole CA chain.
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

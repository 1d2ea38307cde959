# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection documents kubernetes.core's authentication options itself (volfence.csi.k8s.AUTH), so that
its docs render where no other collection is installed (Galaxy's importer). The argument spec stays
kubernetes.core's: the documentation must say what that spec takes, option by option."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import yaml

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.volfence.csi.plugins.doc_fragments.k8s import ModuleDocFragment


def documented():
    return yaml.safe_load(ModuleDocFragment.AUTH)['options']


def shape(spec):
    """What a user can type for each option: its type, aliases, list elements and suboptions."""
    out = {}
    for name, option in spec.items():
        out[name] = {
            'type': option.get('type', 'str'),
            'aliases': sorted(option.get('aliases') or []),
            'elements': option.get('elements'),
            'suboptions': shape(option.get('options') or option.get('suboptions') or {}),
        }
    return out


def test_the_fragment_documents_every_option_of_kubernetes_cores_auth_spec_as_it_is_typed():
    assert shape(documented()) == shape(AUTH_ARG_SPEC)


def test_every_documented_option_says_which_environment_variable_it_falls_back_to():
    # kubernetes.core's client reads K8S_AUTH_<name> (module_utils/k8s/client.py) for each unset option.
    options = documented()
    for name, option in options.items():
        text = ' '.join(option['description'])
        if name == 'proxy_headers':
            for sub, suboption in option['suboptions'].items():
                assert 'K8S_AUTH_PROXY_HEADERS_%s' % sub.upper() in ' '.join(suboption['description'])
            continue
        assert 'K8S_AUTH_' in text, name

# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by the module tests that run modules end to end through AnsibleModule."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json


def warning_texts(out):
    """The warnings of a result, whatever the ansible-core version's format (strings or summaries)."""
    texts = []
    for item in out.get('warnings') or []:
        texts.append(item if isinstance(item, str) else json.dumps(item))
    return texts


def fresh_warnings(monkeypatch):
    """ansible-core keeps warnings in a process-wide registry: start each run with an empty one."""
    from ansible.module_utils.common import warnings as registry
    try:  # ansible-core >= 2.19: once controller code is imported (filter tests), warn() goes to Display
        from ansible.module_utils import _internal
        if getattr(_internal, 'is_controller', False):
            monkeypatch.setattr(_internal, 'is_controller', False)
    except ImportError:
        pass
    for name in ('_global_warnings', '_global_deprecations'):
        if isinstance(getattr(registry, name, None), dict):
            monkeypatch.setattr(registry, name, {})
        elif isinstance(getattr(registry, name, None), list):
            monkeypatch.setattr(registry, name, [])

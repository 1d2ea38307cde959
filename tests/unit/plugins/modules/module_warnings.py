# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by the module tests that run modules end to end through AnsibleModule."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args


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


def run_main(module, args, monkeypatch, capsys, check=False, diff=False, api=None):
    """Run `module`'s main() with `args` (in check mode, with diff, as asked) and return its result and the
    parameters of each connect() call. With `api` (a callable: the client, e.g. a KubeApi on a fake), the
    module's connect() returns what it returns instead of connecting."""
    calls = []
    if api is not None:
        def fake_connect(mod):
            calls.append(mod.params)
            return api()
        monkeypatch.setattr(module, 'connect', fake_connect)
    fresh_warnings(monkeypatch)
    with patch_module_args(dict(args, _ansible_check_mode=check, _ansible_diff=diff)):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out), calls

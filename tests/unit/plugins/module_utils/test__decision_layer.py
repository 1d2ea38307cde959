# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The decision layer's shape (docs/safety.md, "Where decisions live"): imports run one way (the I/O
packages import the decisions, never the other way), and its functions take their secondary inputs
by name."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import glob
import os

import pytest

MODULE_UTILS = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins',
                                            'module_utils'))
DECISIONS = sorted(glob.glob(os.path.join(MODULE_UTILS, '_decisions', '*.py')))
PLUGINS = os.path.dirname(MODULE_UTILS)
# Beyond the decision layer: the backends, modules and filters take their secondary inputs by name too.
EVERY_PLUGIN = sorted(os.path.join(root, name) for root, _dirs, names in os.walk(PLUGINS)
                      for name in names if name.endswith('.py'))
PACKAGE = 'ansible_collections.volfence.csi.plugins.module_utils.'
# What the decision layer may import of the collection: itself and the pure helpers.
PURE = ('_decisions', '_kube_objects', '_addresses', '_ranges')
MAX_POSITIONAL = 5


def _imports(path):
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def _collection_part(module, names):
    """The collection's module_utils part an import reaches ('_k8s', '_decisions', ...), None outside it."""
    if module.startswith(PACKAGE):
        return module[len(PACKAGE):].split('.')[0]
    if module == PACKAGE.rstrip('.'):
        return names[0] if names else None
    return None


@pytest.mark.parametrize('path', DECISIONS, ids=os.path.basename)
def test_the_decision_layer_imports_only_itself_and_pure_helpers(path):
    wrong = []
    for line, module, names in _imports(path):
        part = _collection_part(module, names)
        if part is not None and part not in PURE:
            wrong.append('line %d imports %s' % (line, module))
        if module.startswith('ansible_collections.') and not module.startswith(PACKAGE):
            wrong.append('line %d imports %s, outside module_utils' % (line, module))
    assert not wrong, '%s: %s' % (os.path.relpath(path, MODULE_UTILS), '; '.join(wrong))


def test_the_pure_object_readers_import_nothing_of_the_collection():
    path = os.path.join(MODULE_UTILS, '_kube_objects.py')
    assert [m for _l, m, _n in _imports(path) if m.startswith('ansible')] == []


def _wide_functions(path):
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            positional = [a.arg for a in node.args.args if a.arg not in ('self', 'cls')]
            if len(positional) > MAX_POSITIONAL:
                yield ('%s (line %d) takes %d positional parameters: make the secondary ones keyword-only'
                       % (node.name, node.lineno, len(positional)))


@pytest.mark.parametrize('path', DECISIONS, ids=os.path.basename)
def test_no_decision_takes_more_than_five_positional_inputs(path):
    wide = list(_wide_functions(path))
    assert not wide, '; '.join(wide)


def test_no_function_in_plugins_takes_more_than_five_positional_inputs():
    assert len(EVERY_PLUGIN) > 50
    wide = ['%s: %s' % (os.path.relpath(path, PLUGINS), line) for path in EVERY_PLUGIN for line in _wide_functions(path)]
    assert not wide, '; '.join(wide)

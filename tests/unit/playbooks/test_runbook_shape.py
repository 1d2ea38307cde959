# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks and roles read like the runbooks they automate: a registered result is read by name,
never by its position in a loop (`results[3]` says nothing and breaks when a read is added), and each
decision they take from a filter is one the collection has (and documents)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import os
import re

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
FILTER_DIR = os.path.join(REPO, 'plugins', 'filter')


def _yaml_files():
    out = [os.path.join('playbooks', n) for n in sorted(os.listdir(os.path.join(REPO, 'playbooks'))) if n.endswith('.yml')]
    # the task files the playbooks include (a fence method, a shared step)
    out.extend(os.path.join('playbooks', 'tasks', n) for n in sorted(os.listdir(os.path.join(REPO, 'playbooks', 'tasks')))
               if n.endswith('.yml'))
    roles = os.path.join(REPO, 'roles')
    for role in sorted(os.listdir(roles)):
        for folder in ('tasks', 'defaults', 'vars'):
            path = os.path.join(roles, role, folder)
            if os.path.isdir(path):
                out.extend(os.path.join('roles', role, folder, n) for n in sorted(os.listdir(path)) if n.endswith('.yml'))
    return out


def _read(relative):
    with open(os.path.join(REPO, relative)) as handle:
        return handle.read()


@pytest.mark.parametrize('relative', _yaml_files())
def test_results_are_read_by_name_not_by_position(relative):
    positional = [(n, line.strip()) for n, line in enumerate(_read(relative).splitlines(), 1)
                  if re.search(r'\bresults\s*\[\s*-?\d+\s*\]', line)]
    assert not positional, '%s reads loop results by position: %s' % (relative, positional)


def _collection_filters():
    """Every filter of plugins/filter/*.py."""
    names = {}
    for plugin in sorted(n[:-3] for n in os.listdir(FILTER_DIR) if n.endswith('.py') and n != '__init__.py'):
        module = importlib.import_module('ansible_collections.volfence.csi.plugins.filter.' + plugin)
        names.update(module.FilterModule().filters())
    return names


@pytest.mark.parametrize('relative', _yaml_files())
def test_every_collection_filter_used_exists_and_is_documented(relative):
    filters = _collection_filters()
    # a filter follows a pipe or is named in map(); a module is a task's key
    used = set(re.findall(r"(?:\|\s*|map\(\s*')volfence\.csi\.([a-z_]+)", _read(relative)))
    missing = sorted(n for n in used if n not in filters)
    undocumented = sorted(n for n in used if not os.path.exists(os.path.join(FILTER_DIR, n + '.yml')))
    assert not missing, '%s uses filters the collection does not have: %s' % (relative, missing)
    assert not undocumented, '%s uses filters without documentation (plugins/filter/<name>.yml): %s' % (
        relative, undocumented)

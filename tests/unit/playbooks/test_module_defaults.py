# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every play of the playbooks gives the connection options to the modules it calls: a task of an
action group (meta/runtime.yml: volfence.csi.k8s, volfence.csi.ceph; kubernetes.core.k8s) runs in a
play whose module_defaults names that group. Without it the module reads no kubeconfig or Ceph
conf, and fails or talks to another cluster (a report step with failed_when: false hid such a
failure once)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOKS = os.path.join(REPO, 'playbooks')


def _groups():
    with open(os.path.join(REPO, 'meta', 'runtime.yml')) as f:
        runtime = yaml.safe_load(f)
    out = {}
    for group, modules in runtime['action_groups'].items():
        for module in modules:
            if isinstance(module, str):
                out['volfence.csi.' + module] = 'group/volfence.csi.' + group
    return out


def _tasks(items):
    """The tasks of a play, those inside blocks included."""
    out = []
    for task in items or []:
        for key in ('block', 'rescue', 'always'):
            out.extend(_tasks(task.get(key)))
        out.append(task)
    return out


def _playbooks():
    return sorted(n for n in os.listdir(PLAYBOOKS) if n.endswith('.yml'))


@pytest.mark.parametrize('playbook', _playbooks())
def test_every_grouped_module_runs_with_its_groups_defaults(playbook):
    groups = _groups()
    with open(os.path.join(PLAYBOOKS, playbook)) as f:
        plays = yaml.safe_load(f) or []
    missing = []
    for play in plays:
        defaults = play.get('module_defaults') or {}
        for task in _tasks(play.get('tasks')):
            for module in task:
                group = groups.get(module) or ('group/kubernetes.core.k8s' if module.startswith('kubernetes.core.')
                                               else None)
                if group and group not in defaults:
                    missing.append('%s: task %r (%s) runs without module_defaults %s'
                                   % (play.get('name'), task.get('name'), module, group))
    assert not missing, '\n'.join(missing)


def test_the_groups_are_read():
    groups = _groups()
    assert groups['volfence.csi.failed_nodes_info'] == 'group/volfence.csi.k8s'
    assert groups['volfence.csi.ceph_blocklist'] == 'group/volfence.csi.ceph'

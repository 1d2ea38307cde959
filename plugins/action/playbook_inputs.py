# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check a playbook's inputs against playbooks/meta/inputs.yml, on the controller."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars

from ansible_collections.volfence.csi.plugins.module_utils._decisions import inputs as _inputs

SPEC_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         'playbooks', 'meta', 'inputs.yml')
LOCAL = ('local',)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def _spec(self, playbook):
        try:
            specs = self._loader.load_from_file(SPEC_FILE) or {}
        except AnsibleError as e:
            raise AnsibleError('cannot read the playbook argument specs %s: %s' % (SPEC_FILE, to_text(e)))
        entries = specs.get('argument_specs') or {}
        if playbook not in entries:
            raise AnsibleError('%s is not a playbook of volfence.csi (%s)' % (playbook, ', '.join(sorted(entries))))
        return entries[playbook]

    def _value(self, host_vars, name):
        """The variable as the playbook's tasks would see it; a value that cannot be rendered is a problem."""
        try:
            return self._templar.template(host_vars[name]), None
        except Exception as e:  # pylint: disable=broad-except  # any rendering error is the user's input
            return None, 'cannot be read: %s' % to_text(e).splitlines()[0]

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        # the module's own argument, validated as any module's ("missing required arguments: playbook")
        args = self.validate_argument_spec(argument_spec=dict(playbook=dict(type='str', required=True)))[1]
        playbook = args['playbook']
        entry = self._spec(playbook)
        groups = task_vars.get('groups') or {}
        hostvars = task_vars.get('hostvars') or {}
        used_groups = list(entry.get('required_groups') or []) + list(entry.get('optional_groups') or [])
        # Inputs are read as the first host of the playbook's first group sees them: extra vars,
        # and inventory variables of all, its groups and itself.
        primary = next((groups[g][0] for g in used_groups if groups.get(g)), None)
        source = hostvars[primary] if primary is not None else task_vars
        options = entry.get('options') or {}
        provided, unreadable = {}, []
        for name, option in options.items():
            group = option.get('used_by')
            host_vars = hostvars[groups[group][0]] if group and groups.get(group) else source
            if name in host_vars:
                value, problem = self._value(host_vars, name)
                if problem:
                    unreadable.append('%s: %s' % (name, problem))
                else:
                    provided[name] = value
        local = {}
        for group in used_groups:
            if groups.get(group):
                host = groups[group][0]
                connection = hostvars[host].get('ansible_connection') if host in hostvars else None
                local[group] = host in ('localhost', '127.0.0.1') or connection in LOCAL
        context = {'groups': dict((g, list(groups.get(g) or [])) for g in set(used_groups) | {
            o.get('group') for o in options.values() if o.get('group')}), 'local': local}
        values, problems = _inputs.check_inputs(playbook, entry, provided, context=context,
                                                other_names=list(source.keys()) if hasattr(source, 'keys') else [],
                                                extra_var_names=list(load_extra_vars(self._loader)))
        problems = unreadable + problems
        hosts = []
        for group in used_groups:
            hosts.extend(h for h in groups.get(group) or [] if h not in hosts)
        inputs = _inputs.handed(values, options)
        result.update(changed=False, inputs=inputs, hosts=hosts, problems=problems)
        if problems:
            result['failed'] = True
            result['msg'] = _inputs.message(playbook, problems)
        else:
            result['msg'] = '%s: every input checked' % playbook
        return result

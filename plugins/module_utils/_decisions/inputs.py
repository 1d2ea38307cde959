# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inputs of a playbook checked against its argument spec (playbooks/meta/inputs.yml)
before anything is read or written: every wrong input is named, in the user's words, in one message.

Pure functions; the controller side (reading variables and files) is the playbook_inputs action."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import json
import math
import os
import re
import time

from ansible.module_utils.common.validation import (
    check_type_bool, check_type_dict, check_type_float, check_type_int, check_type_list, check_type_path,
    check_type_str)

# RFC 1123 subdomain (node, pod and most object names) and label (namespaces).
K8S_NAME = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
K8S_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')

# How an input's or a module option's type is said to the user (the modules' type errors use it too).
TYPE_WORDS = {'int': 'an integer', 'float': 'a number', 'bool': 'true or false', 'str': 'a string',
              'list': 'a list', 'dict': 'a mapping', 'path': 'a path', 'auto_bool': 'auto, true or false',
              'raw': 'a value', 'json': 'JSON', 'jsonarg': 'JSON', 'bytes': 'a size in bytes', 'bits': 'a size in bits'}
CHECKERS = {'int': check_type_int, 'float': check_type_float, 'bool': check_type_bool, 'list': check_type_list,
            'dict': check_type_dict, 'path': check_type_path}

# Variables that are never a misspelt input.
_NOT_TYPOS = re.compile(r'^(ansible_|inventory_|group_names$|groups$|hostvars$|omit$|playbook_dir$|play_)')
# Extra vars that AWX / Automation Controller add to every job (awx_job_id, tower_user_name, ...).
_SET_BY_CONTROLLERS = re.compile(r'^(awx_|tower_)')
# What the playbooks leave for the next job of an AWX workflow (set_stats), which AWX passes on to it as extra
# vars: volfence_<playbook>_report, volfence_diagnosis.
ARTIFACTS = re.compile(r'^volfence_(\w+_report|diagnosis)$')
# In a workflow, the artifacts of any upstream job (the user's own too) come as extra vars.
_IN_A_WORKFLOW = ('awx_workflow_job_id', 'tower_workflow_job_id')


def show_value(value):
    """A value as a message quotes it: a string in double quotes, anything else as Python writes it,
    cut at 80 characters."""
    text = repr(value) if not isinstance(value, str) else '"%s"' % value
    return text if len(text) <= 80 else text[:77] + '..."'


def stat_problem(stat, what='file'):
    """What makes a file unusable, from ansible.builtin.stat's `stat` of it (on the host that reads
    it, which may not be the controller), in the words of FileChecks.readable_file; None when usable."""
    if not (stat or {}).get('exists'):
        return 'does not exist'
    if stat.get('isdir'):
        return 'is a directory, not a %s' % what
    if not stat.get('readable'):
        return 'is not readable'
    return None


class FileChecks(object):
    """What the checks need to know of the controller's files (a seam for unit tests)."""

    def readable_file(self, path):
        if not os.path.exists(path):
            return 'does not exist'
        if not os.path.isfile(path):
            return 'is not a file'
        if not os.access(path, os.R_OK):
            return 'is not readable'
        return None

    def json_file(self, path):
        problem = self.readable_file(path)
        if problem:
            return problem
        try:
            with open(path) as handle:
                document = json.load(handle)
        except ValueError as e:
            return 'is not JSON (%s)' % e
        except (IOError, OSError) as e:
            return 'cannot be read (%s)' % e.strerror
        return None if isinstance(document, dict) else 'is not a JSON object'

    def report_dir(self, path):
        if not os.path.isdir(path):
            return 'is not a directory on the controller' if os.path.exists(path) else 'does not exist on the controller'
        if not os.access(path, os.W_OK | os.X_OK):
            return 'is not writable on the controller'
        return None

    def report_file(self, path):
        parent = os.path.dirname(os.path.abspath(path)) or '.'
        if os.path.isdir(path):
            return 'is a directory, not a file'
        if not os.path.isdir(parent):
            return 'cannot be written: its directory %s does not exist' % parent
        if not os.access(parent, os.W_OK):
            return 'cannot be written: its directory %s is not writable' % parent
        return None


def coerce(name, value, option):
    """(value of the option's type, problem or None)."""
    kind = option.get('type', 'str')
    if value is None:
        return None, None
    if kind == 'auto_bool':  # 'auto' (the decision layer decides) or a boolean
        if isinstance(value, str) and value.strip().lower() == 'auto':
            return 'auto', None
        try:
            return check_type_bool(value), None
        except (TypeError, ValueError):
            return None, '%s is not %s' % (show_value(value), TYPE_WORDS[kind])
    if kind == 'str':
        if isinstance(value, (dict, list)):
            return None, '%s is not a string' % show_value(value)
        if isinstance(value, bool):
            return None, '%s is not a string (quote it if it is meant as text)' % show_value(value)
        return check_type_str(value, allow_conversion=True), None
    if kind in ('int', 'float') and isinstance(value, bool):
        return None, '%s is not %s' % (show_value(value), TYPE_WORDS[kind])
    if kind in ('int', 'float') and isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None, '%s is not %s' % (show_value(value), TYPE_WORDS[kind])
    try:
        converted = CHECKERS[kind](value)
    except (TypeError, ValueError, ArithmeticError):  # 'INF' as an int: newer cores raise OverflowError
        return None, '%s is not %s' % (show_value(value), TYPE_WORDS.get(kind, kind))
    if kind == 'list' and option.get('elements'):
        items = []
        for index, item in enumerate(converted):
            element, problem = coerce(name, item, {'type': option['elements']})
            if problem:
                return None, 'item %d: %s' % (index + 1, problem)
            items.append(element)
        converted = items
    if kind == 'dict' and option.get('options'):
        sub = option['options']
        unknown = sorted(set(converted) - set(sub))
        if unknown:
            return None, 'has unknown key(s) %s (it takes %s)' % (', '.join(unknown), ', '.join(sorted(sub)))
        missing = sorted(k for k, o in sub.items() if o.get('required') and converted.get(k) in (None, ''))
        if missing:
            return None, 'lacks %s' % ', '.join(missing)
        for key, sub_option in sub.items():
            converted[key], problem = coerce(key, converted.get(key), sub_option)
            if problem:
                return None, '%s: %s' % (key, problem)
    return converted, None


def _check_format(value, option, context, files):
    fmt = option.get('format')
    values = value if isinstance(value, list) else [value]
    for item in values:
        if fmt == 'k8s_name' and not (K8S_NAME.match(item) and len(item) <= 253):
            return '%s is not a Kubernetes name (lowercase letters, digits, "-" and ".")' % show_value(item)
        if fmt == 'k8s_namespace' and not (K8S_LABEL.match(item) and len(item) <= 63):
            return '%s is not a namespace name (at most 63 lowercase letters, digits and "-")' % show_value(item)
        if fmt == 'inventory_hosts':
            group = option.get('group', 'all')
            members = context.get('groups', {}).get(group, [])
            if item not in members:
                close = difflib.get_close_matches(item, members, 1)
                return '%s is not a host of the inventory group %s (%s)%s' % (
                    show_value(item), group, ', '.join(members) or 'it is empty',
                    '; did you mean %s?' % close[0] if close else '')
    if fmt == 'readable_file':
        used_by = option.get('used_by')
        if used_by and not context.get('local', {}).get(used_by, True):
            return None  # read on a remote host: the modules there say what is wrong with it
        problem = files.readable_file(value)
        return '%s %s%s' % (value, problem, ' on the controller' if used_by is None else '') if problem else None
    if fmt == 'json_file':
        problem = files.json_file(value)
        return '%s %s on the controller' % (value, problem) if problem else None
    if fmt == 'report_dir':
        problem = files.report_dir(value)
        return '%s %s' % (value, problem) if problem else None
    if fmt == 'report_file':
        problem = files.report_file(value)
        return '%s %s' % (value, problem) if problem else None
    return None


def check_inputs(playbook, entry, provided, *, context=None, other_names=(), extra_var_names=(), files=None,
                 epoch=None):
    """Check the provided inputs of a playbook against its argument spec entry.

    provided: {name: value} of the inputs that are set (extra vars, inventory).
    context: {'groups': {group: [hosts]}, 'local': {group: True when its first host connects locally}}.
    other_names: the names of the other variables that are set, to catch misspelt inputs.
    extra_var_names: the names given as extra vars (-e, a job's extra variables): each must be an input,
    since the playbook would ignore any other.
    Returns (values, problems): the inputs with their defaults and types, and one line per wrong input."""
    context = dict(context or {})
    files = files or FileChecks()
    options = entry.get('options') or {}
    values, problems = {}, []
    groups = context.get('groups', {})
    if provided.get('volfence_ceph_command_prefix'):
        # the Ceph tools run behind the prefix (a toolbox container): their files are its, not this host's
        context['local'] = dict(context.get('local') or {}, ceph_admin=False)
    for group in entry.get('required_groups') or []:
        if not groups.get(group):
            problems.append('inventory: no host in group %s (%s)' % (group, 'the playbook runs its steps there'))
    for group in entry.get('exactly_one_of') or []:
        given = [n for n in group if provided.get(n) not in (None, '', [])]
        if not given:
            problems.append('%s: required (%s)%s' % (group[0], _what(options.get(group[0])), ''.join(
                ', or %s (%s)' % (n, _what(options.get(n))) for n in group[1:])))
        elif len(given) > 1:
            problems.append('%s: give %s, not both' % (given[-1], ' or '.join(given)))
    for name in sorted(options):
        option = options[name]
        value = provided.get(name)
        if isinstance(value, str) and value == '' and not option.get('required'):
            value = None  # an empty optional answer (an AWX survey sends '') means "not given"
        if value is None:
            if option.get('required'):
                problems.append('%s: required (%s)' % (name, option.get('description', '').rstrip('.').lower()
                                                       or 'no default'))
                continue
            if option.get('default') is None:
                continue
            value = option['default']  # defaults pass the same checks (report_dir: the working directory)
        value, problem = coerce(name, value, option)
        if problem is None and option.get('choices') and value not in option['choices']:
            problem = '%s is not one of %s' % (show_value(value), ', '.join(str(c) for c in option['choices']))
        if problem is None and option.get('required') and value in ('', []):
            problem = 'must not be empty'
        if problem is None and 'minimum' in option and value < option['minimum']:
            problem = '%s is below the minimum %s' % (value, option['minimum'])
        if problem is None and 'maximum' in option and value > option['maximum']:
            problem = '%s is above the maximum %s' % (value, option['maximum'])
        if problem is None and option.get('format'):
            problem = _check_format(value, option, context, files)
        if problem:
            problems.append('%s: %s' % (name, problem))
        else:
            values[name] = os.path.abspath(value) if option.get('format') == 'report_dir' else value
    for name, option in options.items():
        # one input read as a list by the plays whichever form was given (failed_node -> failed_nodes)
        single = option.get('list_of')
        if single and name not in values and values.get(single) is not None:
            values[name] = [values[single]]
    for name, option in options.items():
        # a report file named once per run, so that every step of the run uses the same path
        if option.get('default_name') and name not in values and not any(p.startswith(name + ':') for p in problems):
            fields = dict(values, epoch=int(time.time() if epoch is None else epoch))
            fields = dict((k, '-'.join(str(i) for i in v) if isinstance(v, list) else v) for k, v in fields.items())
            if 'report_dir' in values and all(f in fields for f in re.findall(r'\{(\w+)\}', option['default_name'])):
                values[name] = os.path.join(values['report_dir'], option['default_name'].format(**fields))
    in_a_workflow = any(name in extra_var_names for name in _IN_A_WORKFLOW)
    for other in sorted(set(extra_var_names) - set(options)):
        if _NOT_TYPOS.match(other) or _SET_BY_CONTROLLERS.match(other):
            continue
        close = difflib.get_close_matches(other, list(options), 1, 0.85)
        if close and close[0] not in provided:
            problems.append('%s: given as an extra var, but not an input of %s: the playbook would ignore it; '
                            'did you mean %s?' % (other, playbook, close[0]))
        elif not (close or in_a_workflow or ARTIFACTS.match(other)):
            problems.append('%s: given as an extra var, but not an input of %s: the playbook would ignore it '
                            '(its inputs: %s)' % (other, playbook, ', '.join(sorted(options))))
    for other in sorted(set(other_names) - set(options) - set(extra_var_names)):
        if _NOT_TYPOS.match(other):
            continue
        close = difflib.get_close_matches(other, list(options), 1, 0.85)
        if close and close[0] not in provided:
            problems.append('%s: not an input of %s; did you mean %s?' % (other, playbook, close[0]))
    return values, problems


def handed(values, options):
    """What the plays get: the checked inputs except connection settings (they stay where the
    inventory puts them), and each list input also as volfence_<name>, always a list: an extra var
    keeps its precedence over the checked value, so `-e failed_nodes=node-b,node-c` reaches the
    plays as text under its own name."""
    out = dict((k, v) for k, v in values.items() if not options[k].get('used_by'))
    for name, value in values.items():
        if options[name].get('type') == 'list':
            out['volfence_' + name] = value
    return out


def _what(option):
    """An input's description as a few words: its first sentence, up to a parenthesis or a dash."""
    text = _plain((option or {}).get('description')).split('. ')[0]
    return re.split(r' \(| - ', text)[0].rstrip('.').lower()


def message(playbook, problems):
    return '%s: wrong input, nothing was changed: %s' % (playbook, '; '.join(problems))


# --------------------------------------------------------------------------- AWX surveys

_MARKUP = re.compile(r'\b[CIOVBM]\(([^)]*)\)')


def _plain(text):
    return _MARKUP.sub(r'\1', ' '.join(text) if isinstance(text, list) else text or '')


def survey_spec(playbook, entry):
    """The AWX / Automation Controller survey of a playbook, from its argument spec entry: a
    question for each input named in the entry's `survey` list, typed and bounded as the spec says."""
    options = entry.get('options') or {}
    questions = []
    for name in entry.get('survey') or []:
        option = options[name]
        kind = option.get('type', 'str')
        # the first input of an exactly_one_of group is the one a survey asks, so it is required there
        required = option.get('required') or any(g[0] == name for g in entry.get('exactly_one_of') or [])
        question = dict(question_name=name.replace('_', ' ').capitalize(), question_description=_plain(
            option.get('description')), variable=name, required=bool(required))
        default = option.get('default')
        if kind == 'bool':
            question.update(type='multiplechoice', choices=['false', 'true'],
                            default='true' if default else 'false')
        elif kind == 'auto_bool':
            question.update(type='multiplechoice', choices=['auto', 'false', 'true'],
                            default=default if default == 'auto' else 'true' if default else 'false')
        elif kind == 'int':
            question.update(type='integer', min=option.get('minimum', 0), max=option.get('maximum', 2 ** 31 - 1))
            if default is not None:
                question['default'] = default
        elif option.get('choices'):
            question.update(type='multiselect' if kind == 'list' else 'multiplechoice',
                            choices=[str(c) for c in option['choices']])
            if default is not None:
                question['default'] = '\n'.join(default) if kind == 'list' else str(default)
        else:
            question.update(type='text', default=','.join(default) if isinstance(default, list) else (default or ''))
            if kind == 'list':
                question['question_description'] += ' Comma-separated.'
        questions.append(question)
    return dict(name=playbook.replace('_', ' '), description=entry.get('short_description', ''), spec=questions)


# The formats of the csi_addons role's variables that its argument spec cannot express.
CSI_ADDONS_FORMATS = (
    ('csi_addons_manifest_source', re.compile(r'(https?://\S+|/\S*)\Z'), False,
     'must be an http(s):// URL or an absolute directory'),
    ('csi_addons_namespace', re.compile(r'[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z'), False, 'must be a DNS label'),
    ('csi_addons_deployment', re.compile(r'[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z'), False,
     'must be a DNS subdomain'),
    ('csi_addons_image_registry', re.compile(r'[^\s/:@]+(:[0-9]+)?(/[^\s:@]+)*\Z'), True,
     'must be host[:port][/path], without tag'),
    ('csi_addons_image_tag', re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z'), True, 'must be an image tag'),
)


def _integer(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def csi_addons_problems(role_vars):
    """Every problem of the csi_addons role's variables (csi_addons_*) that its argument spec cannot
    express: formats, bounds and relations. Types are the argument spec's: it runs first."""
    v = dict(role_vars or {})
    problems = []
    for name, pattern, may_be_empty, rule in CSI_ADDONS_FORMATS:
        value = v.get(name)
        if may_be_empty and value in (None, ''):
            continue
        if not isinstance(value, str) or not pattern.match(value):
            problems.append('%s %s (got %s)' % (name, rule, json.dumps(value)))
        if name == 'csi_addons_manifest_source' and not v.get('csi_addons_manifest_files'):
            problems.append('csi_addons_manifest_files must not be empty')
    wait_timeout, manifest_timeout = _integer(v.get('csi_addons_wait_timeout')), _integer(v.get('csi_addons_manifest_timeout'))
    if wait_timeout is None or wait_timeout < 0:
        problems.append('csi_addons_wait_timeout must be 0 or more')
    if manifest_timeout is None or manifest_timeout <= 0:
        problems.append('csi_addons_manifest_timeout must be more than 0')
    if check_type_bool(v.get('csi_addons_force', False)) and not check_type_bool(v.get('csi_addons_remove_crds', False)):
        problems.append('csi_addons_force only applies with csi_addons_remove_crds=true')
    return problems

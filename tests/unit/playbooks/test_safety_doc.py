# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/safety.md stays true: its "Where decisions live" table names, for every destructive step of
every playbook and role, a playbook (or role), a task of it (or of a task file it includes), the
filter or module the task takes its list from, and the one function that decides it in the file
named after the step; its "Code:" lines name functions that exist. When a task is renamed, a
function moved or a write added, these tests say which row or line is stale and what is missing."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import difflib
import glob
import os
import re

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DOC = os.path.join(REPO, 'docs', 'safety.md')

# Where a path the doc names may be, tried in this order.
_ROOTS = ('plugins/module_utils', 'plugins', '')

# The writes a table row must cover: the collection's modules that change a cluster, and the
# kubernetes.core ones when they delete or patch (creating the CSI-Addons controller decides nothing
# about a node's storage).
DESTRUCTIVE_MODULES = ('volfence.csi.failed_nodes', 'volfence.csi.failed_nodes_fence', 'volfence.csi.networkfence',
                       'volfence.csi.pod_force_delete', 'volfence.csi.volumeattachment', 'volfence.csi.ceph_blocklist',
                       'volfence.csi.rbd_lock', 'volfence.csi.fuse_mounts', 'kubernetes.core.k8s_drain')
DESTRUCTIVE_K8S_STATES = ('absent', 'patched')

_TASK_KEYS = ('block', 'rescue', 'always')
_INCLUDES = ('ansible.builtin.import_tasks', 'ansible.builtin.include_tasks', 'import_tasks', 'include_tasks')


def _doc():
    with open(DOC) as f:
        return f.read()


def _cells(line):
    """The cells of a Markdown table line: split on unescaped |, with `\\|` read as |."""
    cells = re.split(r'(?<!\\)\|', line.strip().strip('|'))
    return [c.strip().replace('\\|', '|') for c in cells]


def _code(cell):
    """The text of a cell written as one code span, else the cell itself."""
    match = re.match(r'^`([^`]*)`$', cell.strip())
    return match.group(1) if match else cell.strip()


def table_rows():
    """[(row number, {step, playbook, task, uses, function, file})] of the "Where decisions live" table."""
    section = _doc().split('## Where decisions live', 1)[1].split('\n## ', 1)[0]
    lines = [ln for ln in section.splitlines() if ln.strip().startswith('|')]
    assert len(lines) > 2, 'docs/safety.md: the "Where decisions live" section has no table'
    keys = ('step', 'playbook', 'task', 'uses', 'function', 'file')
    rows = []
    for number, line in enumerate(lines[2:], 1):
        cells = _cells(line)
        assert len(cells) == len(keys), 'docs/safety.md table row %d has %d cells, not %d: %s' % (
            number, len(cells), len(keys), line.strip())
        rows.append((number, dict(zip(keys, cells))))
    return rows


def _resolve(path):
    for root in _ROOTS:
        full = os.path.join(REPO, root, path)
        if os.path.isfile(full):
            return full
    return None


def _defined(path):
    """Names defined at the top of a Python file (functions, classes, assignments) and Class.method."""
    with open(path) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names.update('%s.%s' % (node.name, n.name) for n in node.body if isinstance(n, ast.FunctionDef))
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _load(path):
    with open(path) as f:
        return yaml.safe_load(f) or []


def _tasks(items):
    out = []
    for task in items or []:
        if not isinstance(task, dict):
            continue
        out.append(task)
        for key in _TASK_KEYS:
            out.extend(_tasks(task.get(key)))
    return out


def _included(task, base):
    """The task files a task imports or includes (a templated part of the name matches any file)."""
    for key in _INCLUDES:
        value = task.get(key)
        if value is None:
            continue
        name = value.get('file') if isinstance(value, dict) else value
        pattern = re.sub(r'{{.*?}}', '*', str(name))
        return sorted(glob.glob(os.path.join(base, pattern)))
    return []


def runbook(where):
    """(files, tasks) of a playbook (`node_failover`) or a role (`roles/node_fences`): every YAML file it
    is made of, its own and those its tasks import or include, and all their tasks."""
    if where.startswith('roles/'):
        start = os.path.join(REPO, where, 'tasks', 'main.yml')
    else:
        start = os.path.join(REPO, 'playbooks', where + '.yml')
    if not os.path.isfile(start):
        return None, None
    files, tasks, todo = [], [], [start]
    while todo:
        path = todo.pop(0)
        if path in files:
            continue
        files.append(path)
        content = _load(path)
        plays = [p for p in content if isinstance(p, dict) and 'hosts' in p]
        found = []
        for play in plays:
            for key in ('pre_tasks', 'tasks', 'post_tasks'):
                found.extend(_tasks(play.get(key)))
        if not plays:
            found = _tasks(content)
        for task in found:
            tasks.append(task)
            todo.extend(_included(task, os.path.dirname(path)))
    return files, tasks


def _filters():
    names = set()
    for path in glob.glob(os.path.join(REPO, 'plugins', 'filter', '*.py')):
        with open(path) as f:
            names.update(re.findall(r"^\s+'(\w+)': \w+,?$", f.read(), re.M))
    return names


def _is_destructive(task):
    for module in DESTRUCTIVE_MODULES:
        if module in task:
            return True
    args = task.get('kubernetes.core.k8s')
    return isinstance(args, dict) and args.get('state') in DESTRUCTIVE_K8S_STATES


def _near(name, names):
    close = difflib.get_close_matches(name, names, n=2, cutoff=0.5)
    return ' (closest: %s)' % '; '.join(repr(c) for c in close) if close else ''


def test_every_row_of_the_where_decisions_live_table_names_what_exists():
    filters = _filters()
    problems = []
    for number, row in table_rows():
        where = 'docs/safety.md table row %d (%s)' % (number, row['step'])
        playbook, task = _code(row['playbook']), _code(row['task'])
        files, tasks = runbook(playbook)
        if files is None:
            problems.append('%s: no playbook playbooks/%s.yml nor role tasks roles/.../tasks/main.yml named %r'
                            % (where, playbook, playbook))
            continue
        names = [t.get('name') for t in tasks if t.get('name')]
        if task not in names:
            problems.append('%s: no task named %r in %s or the task files it includes%s'
                            % (where, task, playbook, _near(task, names)))
        uses = _code(row['uses'])
        text = ''.join(open(f).read() for f in files)
        short = uses.split('.')[-1]
        if uses.startswith('volfence.csi.'):
            if not (os.path.isfile(os.path.join(REPO, 'plugins', 'modules', short + '.py')) or short in filters):
                problems.append('%s: %s is no module of plugins/modules/ and no filter of plugins/filter/' % (where, uses))
        if uses not in text:
            problems.append('%s: %s does not call %s' % (where, playbook, uses))
        function, path = _code(row['function']), _code(row['file'])
        if path == '—':
            # a decision not made in Python yet: the row says where it is made instead
            cited = re.findall(r'`([^`]+\.yml)`', row['function'])
            if not cited or not all(os.path.isfile(os.path.join(REPO, c)) for c in cited):
                problems.append('%s: a step decided outside Python must name the file that decides it' % where)
            continue
        full = _resolve(path)
        if full is None:
            problems.append('%s: no file %s' % (where, path))
        elif function not in _defined(full):
            problems.append('%s: %s defines no %s%s' % (where, path, function, _near(function, sorted(_defined(full)))))
    assert not problems, '\n'.join(problems)


def test_every_destructive_task_of_the_playbooks_and_roles_is_in_the_table():
    listed = set((_code(r['playbook']), _code(r['task'])) for _n, r in table_rows())
    runbooks = [os.path.basename(p)[:-4] for p in glob.glob(os.path.join(REPO, 'playbooks', '*.yml'))]
    runbooks += ['roles/' + os.path.basename(os.path.dirname(os.path.dirname(p)))
                 for p in glob.glob(os.path.join(REPO, 'roles', '*', 'tasks', 'main.yml'))]
    missing = []
    for where in sorted(runbooks):
        _files, tasks = runbook(where)
        for task in tasks or []:
            if _is_destructive(task) and (where, task.get('name')) not in listed:
                missing.append('%s: task %r writes to the cluster and has no row in the "Where decisions live" '
                               'table of docs/safety.md (add the row: the filter or module it takes its list from, '
                               'the function that decides it and its file)' % (where, task.get('name')))
    assert not missing, '\n'.join(missing)


def code_references():
    """[(where, file or None, name or None)] of every code reference of docs/safety.md: in its "Code:"
    lines, `path.py` (a file) followed by `name`s defined there, and anywhere `_dir/file.name`."""
    doc = _doc()
    refs = []
    for match in re.finditer(r'Code:(.*?)(?=Tests?:|tests:|\n\s*\n|\n- |\Z)', doc, re.S):
        line = doc[:match.start()].count('\n') + 1
        current = None
        for token in re.findall(r'`([^`]+)`', match.group(1)):
            where = 'docs/safety.md line %d, Code: `%s`' % (line, token)
            if token.endswith('.py') or token.endswith('.yml'):
                current = token if token.endswith('.py') else None
                refs.append((where, token, None))
            elif re.match(r'^[\w/]+/\w+\.\w+$', token):
                refs.append((where, token.rsplit('.', 1)[0] + '.py', token.rsplit('.', 1)[1]))
            elif re.match(r'^\w+(\.\w+)?$', token):
                refs.append((where, current, token))
            else:
                refs.append((where, current, '?' + token))
    for match in re.finditer(r'`(_\w+/\w+)\.(\w+)`', doc):
        if match.group(2) in ('py', 'yml'):
            continue
        line = doc[:match.start()].count('\n') + 1
        refs.append(('docs/safety.md line %d: `%s.%s`' % (line, match.group(1), match.group(2)),
                     match.group(1) + '.py', match.group(2)))
    return refs


def test_every_function_the_code_lines_name_exists():
    problems = []
    defined = {}
    for where, path, name in code_references():
        if path is None:
            problems.append('%s: names no file before it (write `_decisions/<step>.py`: `%s`)' % (where, name))
            continue
        full = _resolve(path)
        if full is None:
            problems.append('%s: no file %s' % (where, path))
            continue
        if name is None or not full.endswith('.py'):
            continue
        if name.startswith('?'):
            problems.append('%s: not a function name (write only code in the backticks of a Code: line)' % where)
            continue
        names = defined.setdefault(full, _defined(full))
        if name not in names:
            problems.append('%s: %s defines no %s%s' % (where, path, name, _near(name, sorted(names))))
    assert not problems, '\n'.join(problems)

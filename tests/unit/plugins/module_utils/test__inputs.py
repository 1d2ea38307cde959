# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' input checks (_inputs.py) against the real playbooks/meta/inputs.yml,
and the playbooks' shape that makes them effective: the check is each playbook's first play and
no play keeps defaults of its own."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import examples
from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import ARTIFACTS, FileChecks, check_inputs, message

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
PLAYBOOKS = os.path.join(REPO, 'playbooks')
with open(os.path.join(PLAYBOOKS, 'meta', 'inputs.yml')) as _handle:
    SPECS = yaml.safe_load(_handle)['argument_specs']
GROUPS = {'k8s_api': ['k8s-api'], 'ceph_admin': ['ceph-admin'], 'k8s_nodes': ['node-a', 'node-b', 'node-c']}
CONTEXT = {'groups': GROUPS, 'local': {'k8s_api': True, 'ceph_admin': True, 'k8s_nodes': True}}
REQUIRED = {'node_failover': {'failed_node': 'node-b'}, 'node_recover': {'node': 'node-b'},
            'rbd_lock_cleanup': {'pod_namespace': 'default', 'pod_name': 'web-0'},
            'volumeattachment_cleanup': {'pod_namespace': 'default', 'pod_name': 'web-0'},
            'diagnose': {}, 'fuse_mount_recovery': {}, 'readiness': {}}


def check(playbook, provided, context=None, other_names=()):
    return check_inputs(playbook, SPECS[playbook], dict(REQUIRED[playbook], **provided), context=context or CONTEXT, other_names=other_names)


def test_every_playbook_has_a_spec_and_required_inputs_are_known():
    names = sorted(f[:-4] for f in os.listdir(PLAYBOOKS) if f.endswith('.yml') and f != 'check_inputs.yml')
    assert names == sorted(SPECS) == sorted(REQUIRED)
    for playbook, spec in SPECS.items():
        required = sorted([n for n, o in spec['options'].items() if o.get('required')]
                          + [group[0] for group in spec.get('exactly_one_of') or []])
        assert required == sorted(REQUIRED[playbook]), playbook


@pytest.mark.parametrize('playbook', sorted(SPECS))
def test_defaults_pass_their_own_checks(playbook):
    values, problems = check(playbook, {})
    assert problems == []
    for name, option in SPECS[playbook]['options'].items():
        if option.get('format') == 'report_dir':
            assert values[name] == os.path.abspath(option['default'])
        elif option.get('default') is not None:
            assert values[name] == option['default']
    # the report file is named once, in report_dir, with the run's start
    assert values['report_path'].startswith(os.path.abspath('.') + os.sep + 'volfence-')


@pytest.mark.parametrize('playbook', sorted(SPECS))
def test_the_check_is_the_first_play_and_no_play_keeps_input_defaults(playbook):
    with open(os.path.join(PLAYBOOKS, playbook + '.yml')) as handle:
        plays = yaml.safe_load(handle)
    first = plays[0]
    assert first['ansible.builtin.import_playbook'] == 'check_inputs.yml'
    assert first['vars'] == {'volfence_playbook': playbook}
    inputs = set(SPECS[playbook]['options'])
    for play in plays[1:]:
        assert 'import_playbook' not in ' '.join(play), 'one check only, first'
        kept = inputs & set(play.get('vars') or {})
        assert not kept, '%s keeps defaults of its own for %s' % (play['name'], sorted(kept))


def test_the_issue_examples_are_named_each():
    values, problems = check('node_failover', {'out_of_service_taint': 'true', 'blocklist_expire': '-5'})
    assert problems == ['blocklist_expire: -5 is below the minimum 1']
    values, problems = check('diagnose', {'stuck_threshold_seconds': 'abc'})
    assert problems == ['stuck_threshold_seconds: "abc" is not an integer']
    values, problems = check('node_failover', {'blocklist_expire': 2500000000})
    assert problems == ['blocklist_expire: 2500000000 is above the maximum 315360000']
    values, problems = check('fuse_mount_recovery', {'target_nodes': 'node-z'})
    assert len(problems) == 1 and problems[0].startswith(
        'target_nodes: "node-z" is not a host of the inventory group k8s_nodes (node-a, node-b, node-c)')


def test_every_wrong_input_is_named_in_one_message():
    values, problems = check('node_failover', {
        'failed_node': 'Worker_2', 'fence_method': 'blocklst', 'force': 'maybe', 'wait_timeout': 0,
        'networkfence_secret': {'name': 'x'}, 'lease_grace_seconds': 1.5})
    assert problems == [
        'failed_node: "Worker_2" is not a Kubernetes name (lowercase letters, digits, "-" and ".")',
        'fence_method: "blocklst" is not one of blocklist, networkfence',
        'force: "maybe" is not true or false',
        'lease_grace_seconds: 1.5 is not an integer',
        'networkfence_secret: lacks namespace',
        'wait_timeout: 0 is below the minimum 1',
    ]
    assert message('node_failover', problems).startswith('node_failover: wrong input, nothing was changed: failed_node: ')


@pytest.mark.parametrize('given, expected', [(None, 'auto'), ('auto', 'auto'), (' Auto ', 'auto'), ('true', True),
                                             (True, True), ('no', False), (False, False)])
def test_out_of_service_taint_is_auto_or_a_boolean(given, expected):
    values, problems = check('node_failover', {} if given is None else {'out_of_service_taint': given})
    assert problems == [] and values['out_of_service_taint'] == expected


def test_out_of_service_taint_refuses_anything_else():
    _values, problems = check('node_failover', {'out_of_service_taint': 'sometimes'})
    assert problems == ['out_of_service_taint: "sometimes" is not auto, true or false']


def test_failed_node_or_failed_nodes_exactly_one_and_the_plays_get_a_list(tmp_path):
    spec = SPECS['node_failover']
    context = dict(CONTEXT)
    one, problems = check_inputs('node_failover', spec, {'failed_node': 'node-b', 'report_dir': str(tmp_path)},
                                 context=context, epoch=7)
    assert problems == [] and one['failed_nodes'] == ['node-b']
    assert one['report_path'] == str(tmp_path / 'volfence-node-failover-node-b-7.json')
    rack, problems = check_inputs('node_failover', spec, {'failed_nodes': ['node-b', 'node-c'],
                                                          'report_dir': str(tmp_path)}, context=context, epoch=7)
    assert problems == [] and rack['failed_nodes'] == ['node-b', 'node-c'] and 'failed_node' not in rack
    assert rack['report_path'] == str(tmp_path / 'volfence-node-failover-node-b-node-c-7.json')
    unused, problems = check_inputs('node_failover', spec, {}, context=context)
    assert problems[0] == 'failed_node: required (the node that died), or failed_nodes (the nodes that died together)'
    unused, problems = check_inputs('node_failover', spec, {'failed_node': 'node-b', 'failed_nodes': ['node-c']}, context=context)
    assert problems == ['failed_nodes: give failed_node or failed_nodes, not both']
    unused, problems = check_inputs('node_failover', spec, {'failed_nodes': ['node-b', 'Node_C']}, context=context)
    assert problems == ['failed_nodes: "Node_C" is not a Kubernetes name (lowercase letters, digits, "-" and ".")']
    unused, problems = check_inputs('node_failover', spec, {'failed_nodes': 'node-b'}, context=context)
    assert problems == [] or all('failed_nodes' in p for p in problems)


def test_list_inputs_reach_the_plays_as_lists_under_their_own_name(tmp_path):
    """An extra var keeps its precedence over the checked value: -e failed_nodes=node-b,node-c stays text
    under failed_nodes, so the plays read volfence_failed_nodes, always a list."""
    from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import handed  # pylint: disable=import-outside-toplevel
    spec = SPECS['node_failover']
    values, problems = check_inputs('node_failover', spec, {'failed_nodes': 'node-b,node-c',
                                                            'report_dir': str(tmp_path)}, context=CONTEXT)
    assert problems == []
    plays = handed(values, spec['options'])
    assert plays['volfence_failed_nodes'] == ['node-b', 'node-c']
    values, problems = check_inputs('node_failover', spec, {'failed_node': 'node-b', 'volfence_kubeconfig': None,
                                                            'report_dir': str(tmp_path)}, context=CONTEXT)
    assert handed(values, spec['options'])['volfence_failed_nodes'] == ['node-b']
    recover = SPECS['node_recover']
    values, problems = check_inputs('node_recover', recover, {'node': 'node-b', 'report_dir': str(tmp_path)}, context=CONTEXT)
    assert problems == [] and handed(values, recover['options'])['volfence_nodes'] == ['node-b']
    # the plays index and loop over these; other list inputs go to module options and host patterns,
    # which read a comma-separated text as a list themselves
    for playbook, entry in SPECS.items():
        for name, option in entry['options'].items():
            if option.get('type') == 'list' and option.get('list_of'):
                with open(os.path.join(PLAYBOOKS, playbook + '.yml')) as handle:
                    plays = handle.read().split('\n- name:', 1)[1]
                # a filter's keyword argument of the same name (failed_nodes=...) is not a read of the input
                assert not re.search(r'\{\{[^}]*(?<![\w.])%s(?!\w)(?!\s*=[^=])' % name, plays), (
                    '%s reads the list input %s by its own name (text when given with -e)' % (playbook, name))


def test_required_inputs_and_inventory_groups():
    values, problems = check_inputs('rbd_lock_cleanup', SPECS['rbd_lock_cleanup'], {}, context={'groups': {'k8s_api': ['k']}})
    assert problems == ['inventory: no host in group ceph_admin (the playbook runs its steps there)',
                        'pod_name: required (the stuck pod)', 'pod_namespace: required (namespace of the stuck pod)']


def test_types_are_converted_as_extra_vars_give_them():
    values, problems = check('volumeattachment_cleanup', {'restart_pod': 'no', 'wait_timeout': '600',
                                                          'force_detach': 'yes'})
    assert problems == []
    assert values['restart_pod'] is False and values['force_detach'] is True and values['wait_timeout'] == 600
    values, problems = check('diagnose', {'diagnose_namespaces': 'default,kube-system'})
    assert values['diagnose_namespaces'] == ['default', 'kube-system'] and problems == []


def test_a_misspelt_input_is_named_with_the_likely_one():
    values, problems = check('node_failover', {}, other_names=['wait_timout', 'ansible_host', 'lab_node_ip'])
    assert problems == ['wait_timout: not an input of node_failover; did you mean wait_timeout?']


def test_an_extra_var_that_is_no_input_is_named_and_nothing_else_is_checked_away():
    """-e backend=cli or -e command_prefix=... look like options of the modules; the playbook would ignore
    them, so they are refused, close names with the likely input, others with the list of inputs."""
    extra = ['backend', 'wait_timout', 'failed_node', 'ansible_eda', 'awx_job_id', 'tower_user_name']
    provided = dict(REQUIRED['node_failover'], wait_timout=5, backend='cli')
    values, problems = check_inputs('node_failover', SPECS['node_failover'], provided, context=CONTEXT,
                                    other_names=list(provided) + ['lab_node_ip'], extra_var_names=extra)
    inputs = ', '.join(sorted(SPECS['node_failover']['options']))
    assert problems == [
        'backend: given as an extra var, but not an input of node_failover: the playbook would ignore it '
        '(its inputs: %s)' % inputs,
        'wait_timout: given as an extra var, but not an input of node_failover: the playbook would ignore it; '
        'did you mean wait_timeout?']
    # an inventory variable that is no input is the inventory's business (only a near miss is named)
    values, problems = check('node_failover', {}, other_names=['backend', 'command_prefix'])
    assert problems == []


def test_an_awx_workflows_artifacts_pass_as_extra_vars_but_a_near_miss_does_not():
    """AWX passes the artifacts (set_stats) of the jobs before it in a workflow as extra vars: the collection's
    own always, any upstream job's in a workflow; a near miss of an input is still named."""
    own = ['volfence_diagnose_report', 'volfence_diagnosis', 'wait_timout']
    values, problems = check_inputs('node_failover', SPECS['node_failover'], dict(REQUIRED['node_failover']),
                                    context=CONTEXT, extra_var_names=own)
    assert problems == ['wait_timout: given as an extra var, but not an input of node_failover: the playbook would '
                        'ignore it; did you mean wait_timeout?']
    upstream = ['awx_workflow_job_id', 'ticket_id', 'backend']
    values, problems = check_inputs('node_failover', SPECS['node_failover'], dict(REQUIRED['node_failover']),
                                    context=CONTEXT, extra_var_names=upstream)
    assert problems == []


def test_every_artifact_a_playbook_leaves_is_known_as_one():
    import re
    names = set()
    for name in os.listdir(PLAYBOOKS):
        if name.endswith('.yml'):
            with open(os.path.join(PLAYBOOKS, name)) as handle:
                text = handle.read()
            for block in re.findall(r'ansible\.builtin\.set_stats:\s*\n\s*data:\s*\n((?:\s+\w+:.*\n)+)', text):
                names.update(re.findall(r'^\s+(volfence_\w+):', block, re.M))
    assert len(names) >= 7 and all(ARTIFACTS.match(n) for n in names), names


def test_the_report_is_named_once_per_run_in_report_dir(tmp_path):
    values, problems = check_inputs('node_failover', SPECS['node_failover'], {'failed_node': 'node-b', 'report_dir': str(tmp_path)},
                                    context=CONTEXT, epoch=1700000000)
    assert problems == [] and values['report_path'] == str(tmp_path / 'volfence-node-failover-node-b-1700000000.json')
    values, problems = check('diagnose', {'report_path': str(tmp_path / 'mine.json')})
    assert values['report_path'] == str(tmp_path / 'mine.json')
    values, problems = check('diagnose', {'report_dir': str(tmp_path / 'nope')})
    assert problems == ['report_dir: %s does not exist on the controller' % (tmp_path / 'nope')]
    assert 'report_path' not in values


def test_files_on_the_controller(tmp_path):
    report = tmp_path / 'failover.json'
    report.write_text('{"failed_node": "node-b"}')
    values, problems = check('node_recover', {'failover_report': str(report)})
    assert problems == [] and values['failover_report'] == str(report)
    values, problems = check('node_recover', {'failover_report': str(tmp_path / 'missing.json')})
    assert problems == ['failover_report: %s does not exist on the controller' % (tmp_path / 'missing.json')]
    report.write_text('not json')
    values, problems = check('node_recover', {'failover_report': str(report)})
    assert len(problems) == 1 and ' is not JSON (' in problems[0]
    values, problems = check('diagnose', {'report_path': str(tmp_path / 'no' / 'dir' / 'r.json')})
    assert problems == ['report_path: %s cannot be written: its directory %s does not exist'
                        % (tmp_path / 'no' / 'dir' / 'r.json', tmp_path / 'no' / 'dir')]
    values, problems = check('diagnose', {'volfence_kubeconfig': str(tmp_path / 'kubeconfig')})
    assert problems == ['volfence_kubeconfig: %s does not exist' % (tmp_path / 'kubeconfig')]
    remote = dict(CONTEXT, local={'k8s_api': False, 'ceph_admin': True})
    values, problems = check('diagnose', {'volfence_kubeconfig': str(tmp_path / 'kubeconfig')}, context=remote)
    assert problems == [], 'a file on a remote host is checked there, by the modules'


class NoFiles(FileChecks):
    def readable_file(self, path):
        return 'does not exist'

    def report_file(self, path):
        return None


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 40, max_value=2 ** 40),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                    st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))


@settings(max_examples=examples(2000), deadline=None, derandomize=True)
@given(playbook=st.sampled_from(sorted(SPECS)), data=st.data())
def test_any_input_gives_values_or_named_problems_never_an_exception(playbook, data):
    options = SPECS[playbook]['options']
    provided = data.draw(st.dictionaries(st.sampled_from(sorted(options)), _VALUES, max_size=4))
    values, problems = check_inputs(playbook, SPECS[playbook], provided, context=CONTEXT, other_names=(), files=NoFiles())
    names = set(options) | {'inventory'}
    for problem in problems:
        assert problem.split(':', 1)[0] in names
    for name, value in values.items():
        option = options[name]
        if option.get('choices'):
            assert value in option['choices']
        if 'minimum' in option:
            assert option['minimum'] <= value <= option['maximum']
        if option.get('type') == 'int':
            assert isinstance(value, int) and not isinstance(value, bool)
    # a value is either accepted or named as wrong, never silently dropped
    for name, value in provided.items():
        if value is not None and not (value == '' and not options[name].get('required')):
            assert name in values or any(p.startswith(name + ':') for p in problems)
    assert not re.search(r"<class|Traceback|Error\(", ' '.join(problems))


# --------------------------------------------------------------------------- AWX surveys

def _survey_script():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location('awx_surveys', os.path.join(REPO, 'scripts', 'awx_surveys.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_published_surveys_are_generated_from_the_specs():
    script = _survey_script()
    for rel, text in script.survey_files(SPECS).items():
        with open(os.path.join(REPO, rel)) as handle:
            assert handle.read() == text, '%s is out of date: run make docs' % rel
    with open(os.path.join(REPO, 'docs', 'awx.md')) as handle:
        current = handle.read()
    assert script.awx_md(SPECS, current) == current, 'docs/awx.md survey table is out of date: run make docs'


@pytest.mark.parametrize('playbook', sorted(SPECS))
def test_every_survey_answer_passes_the_playbook_checks(playbook):
    """AWX sends survey answers as extra vars: strings for text and multiple choice, numbers for
    integers, '' for an unanswered optional text. Each default answer, and each choice, passes."""
    from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import survey_spec  # pylint: disable=import-outside-toplevel
    survey = survey_spec(playbook, SPECS[playbook])
    assert survey['spec'], 'a playbook without questions'
    answers = dict(REQUIRED[playbook])
    for question in survey['spec']:
        option = SPECS[playbook]['options'][question['variable']]
        first_of_group = any(g[0] == question['variable'] for g in SPECS[playbook].get('exactly_one_of') or [])
        assert question['required'] == bool(option.get('required') or first_of_group)
        if question['variable'] not in answers:
            answers[question['variable']] = question.get('default', '')
        for choice in question.get('choices') or []:
            values, problems = check_inputs(playbook, SPECS[playbook], dict(answers, **{question['variable']: choice}), context=CONTEXT)
            assert problems == [], (question['variable'], choice)
        if question['type'] == 'integer':
            for bound in (question['min'], question['max']):
                values, problems = check_inputs(playbook, SPECS[playbook], dict(answers, **{question['variable']: bound}), context=CONTEXT)
                assert problems == [], (question['variable'], bound)
            values, problems = check_inputs(playbook, SPECS[playbook], dict(answers, **{question['variable']: question['max'] + 1}), context=CONTEXT)
            assert problems and problems[0].startswith(question['variable'] + ': ')
    values, problems = check_inputs(playbook, SPECS[playbook], answers, context=CONTEXT)
    assert problems == []


def test_the_ceph_backend_and_command_prefix_are_inputs_of_every_playbook_with_ceph_steps():
    for playbook in ('diagnose', 'node_failover', 'node_recover', 'rbd_lock_cleanup', 'readiness'):
        values, problems = check(playbook, {'volfence_ceph_backend': 'cli', 'volfence_ceph_command_prefix': [
            'kubectl', '-n', 'rook-ceph', 'exec', 'deploy/rook-ceph-tools', '--'],
            'volfence_ceph_conf': '/etc/ceph/inside-the-toolbox.conf'})
        # the conf is the toolbox's: not looked for on the controller
        assert problems == [], (playbook, problems)
        assert values['volfence_ceph_backend'] == 'cli' and values['volfence_ceph_command_prefix'][-1] == '--'
    _values, problems = check('node_failover', {'volfence_ceph_backend': 'toolbox',
                                                'volfence_ceph_command_prefix': 'kubectl exec'})
    assert problems == ['volfence_ceph_backend: "toolbox" is not one of auto, rados, cli']
    _values, problems = check('node_failover', {'volfence_ceph_conf': '/nonexistent/ceph.conf'})
    assert problems and problems[0].startswith('volfence_ceph_conf: /nonexistent/ceph.conf')

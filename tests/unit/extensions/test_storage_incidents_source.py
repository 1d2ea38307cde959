# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The EDA event source's options as ansible.eda's sources have them (typed, documented, with defaults
and bounds), checked before anything connects; its JSON schema; the rulebooks' source arguments."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import asyncio
import glob
import json
import os

import jsonschema
import pytest
import yaml

from ansible_collections.volfence.csi.plugins.module_utils._decisions import incidents
from ansible_collections.volfence.csi.plugins.module_utils._k8s import common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCE = os.path.join(ROOT, 'extensions', 'eda', 'plugins', 'event_source', 'storage_incidents.py')
SCHEMA = os.path.join(ROOT, 'extensions', 'eda', 'schemas', 'storage_incidents.schema.json')


@pytest.fixture(scope='module')
def source():
    # the file run as a script, as ansible-rulebook loads it (runpy.run_path); runpy itself cannot be used
    # under ansible-test, whose collection loader claims every path on sys.path_hooks
    namespace = dict(__name__='storage_incidents', __file__=SOURCE)
    with open(SOURCE) as handle:
        exec(compile(handle.read(), SOURCE, 'exec'), namespace)  # pylint: disable=exec-used
    return namespace


def test_every_option_is_typed_documented_and_its_bounds_are_said(source):
    options = source['options']()
    assert set(options) == set(source['AUTH_OPTIONS']) | set(source['settings_of']({})[0])
    for name, option in options.items():
        assert isinstance(option['description'], list) and option['description'], name
        assert option['type'] in ('int', 'float', 'bool', 'str', 'path', 'list'), name
        assert option['required'] is False, name
        if option['type'] == 'list':
            assert option['elements'] == 'str', name
        text = ' '.join(option['description'])
        if name in incidents.SETTING_BOUNDS:
            assert 'From %d to %d.' % incidents.SETTING_BOUNDS[name] in text, name
        if option['type'] == 'float':
            assert 'Above 0, at most %d.' % source['SECONDS_MAX'] in text, name
    # the defaults the source runs with are the documented ones
    settings = source['settings_of']({})[0]
    assert settings == dict((n, o['default']) for n, o in options.items() if 'default' in o)


def test_the_schema_file_is_the_documented_options(source):
    with open(SCHEMA) as handle:
        assert json.load(handle) == source['options_schema']()


@pytest.mark.parametrize('args, problems', [
    (dict(node_lost_afer=10), ['unknown option(s) node_lost_afer (options: api_key, ']),
    (dict(max_failovers=-1, stuck_after='soon'), ["stuck_after must be a whole number, not 'soon'",
                                                  'max_failovers must be between 0 and 10000, not -1']),
    (dict(interval=0, watch_timeout=86401), ['interval must be a number of seconds above 0, at most 86400, not 0',
                                             'watch_timeout must be a number of seconds above 0, at most 86400']),
    (dict(validate_certs='maybe', exclude_labels=['']), ["validate_certs must be true or false, not 'maybe'",
                                                         "exclude_labels must be a list of strings, not ['']"]),
    (dict(impersonate_groups='ops', kubeconfig=5), ['kubeconfig must be a string, not 5']),
])
def test_bad_options_are_all_named_before_anything_connects(source, monkeypatch, args, problems):
    def no_connection(params):
        raise AssertionError('connected with bad options: %r' % (params,))
    monkeypatch.setattr(common, 'connect_params', no_connection)
    with pytest.raises(ValueError) as refused:
        asyncio.run(source['main'](None, args))
    message = str(refused.value)
    assert message.startswith('volfence.csi.storage_incidents: ') and message.endswith('; nothing was started')
    for problem in problems:
        assert problem in message, message


def test_options_as_rulebook_variables_give_them_are_taken(source):
    settings, auth = source['settings_of'](dict(node_lost_after='90', interval='0.5', validate_certs='false',
                                                impersonate_groups='ops', eda_internal={'x': 1}))
    assert settings['node_lost_after'] == 90 and settings['interval'] == 0.5
    assert auth == dict(validate_certs=False, impersonate_groups=['ops'])


def test_the_rulebooks_give_the_source_only_what_its_schema_allows(source):
    schema = source['options_schema']()
    seen = 0
    for path in sorted(glob.glob(os.path.join(ROOT, 'extensions', 'eda', 'rulebooks', '*.yml'))):
        with open(path) as handle:
            for ruleset in yaml.safe_load(handle):
                for entry in ruleset.get('sources') or []:
                    args = entry.get('volfence.csi.storage_incidents')
                    if args is None:
                        continue
                    # a rulebook variable ("{{ node_lost_after }}") stands for a value of the option's type
                    typed = dict((name, {'integer': 1, 'number': 1.0, 'boolean': True, 'array': ['x']}.get(
                        schema['properties'].get(name, {}).get('type'), 'text'))
                        if isinstance(value, str) and '{{' in value else (name, value) for name, value in args.items())
                    jsonschema.validate(typed, schema)
                    seen += 1
    assert seen >= 3

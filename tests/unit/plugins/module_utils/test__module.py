# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 17: ansible-core's type-conversion failures in the user's words, never `<class 'str'>`."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.volfence.csi.plugins.module_utils._module import nothing_changed, type_error_in_user_words
from ansible_collections.volfence.csi.plugins.modules import networkfence, rbd_lock, volumeattachment_info


@pytest.mark.parametrize('msg, params, expected', [
    # ansible-core 2.16
    ("argument 'parallel' is of type <class 'str'> and we were unable to convert to int: <class 'str'> cannot be "
     "converted to an int", {'parallel': 'abc'}, 'parallel must be an integer, got "abc"; nothing was changed'),
    # ansible-core 2.21
    ("argument 'wait_timeout' is of type str and we were unable to convert to int: \"'soon'\" cannot be converted to "
     "an int", {'wait_timeout': 'soon'}, 'wait_timeout must be an integer, got "soon"; nothing was changed'),
    ("argument 'only_stale' is of type str and we were unable to convert to bool: The value 'maybe' is not a valid "
     "boolean.", {'only_stale': 'maybe'}, 'only_stale must be true or false, got "maybe"; nothing was changed'),
    ("argument 'name' is of type <class 'list'> found in 'fences'. and we were unable to convert to str: x", {},
     'fences: name must be a string; nothing was changed'),
    ("argument 'x' is of type dict found in 'a -> b'. and we were unable to convert to list: y", None,
     'a.b: x must be a list; nothing was changed'),
    ("value of state must be one of: present, absent, got: broken", {}, None),
    ('missing required arguments: pool', {}, None),
])
def test_type_errors_in_user_words(msg, params, expected):
    out = type_error_in_user_words(msg, params)
    assert out == (expected if expected is not None else msg)
    assert '<class' not in out


def run(module, args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize('module, args, expected', [
    (networkfence, dict(name='nf', parallel='abc'), 'parallel must be an integer, got "abc"; nothing was changed'),
    (volumeattachment_info, dict(not_ready_grace='soon'), 'not_ready_grace must be an integer, got "soon"'),
    (volumeattachment_info, dict(stale_only='yes please'), 'stale_only must be true or false, got "yes please"'),
    (rbd_lock, dict(pool='p', image='i', timeout='x'), 'timeout must be an integer, got "x"'),
    # newer cores let OverflowError out of their int conversion of an infinite number
    (volumeattachment_info, dict(not_ready_grace='INF'), 'not_ready_grace must be an integer, got "INF"'),
    (networkfence, dict(name='nf', parallel='-inf'), 'parallel must be an integer, got "-inf"'),
])
def test_modules_say_type_errors_in_user_words_before_connecting(module, args, expected, capsys):
    out = run(module, args, capsys)
    assert out['failed'] and out['msg'].startswith(expected) and '<class' not in out['msg']


def test_other_failures_are_unchanged(capsys):
    out = run(networkfence, dict(name='nf', state='broken'), capsys)
    assert out['failed'] and out['msg'].startswith('value of state must be one of: present, absent')


@pytest.mark.parametrize('text, outcome, expected', [
    ('parallel=0 is out of range: give 1 to 256', None, 'parallel=0 is out of range: give 1 to 256; nothing was changed'),
    # said once: the range checks end with it already
    ('parallel=0 is out of range: give 1 to 256; nothing was changed', None,
     'parallel=0 is out of range: give 1 to 256; nothing was changed'),
    (ValueError('nodes: give at least one node'), None, 'nodes: give at least one node; nothing was changed'),
    # a module that only reads
    ('claims[0]: bad', 'nothing was read', 'claims[0]: bad; nothing was read'),
    ('wait_sleep=0 is out of range; nothing was changed', 'nothing was read', 'wait_sleep=0 is out of range; nothing was changed'),
])
def test_a_failure_before_any_change_ends_one_way_in_every_module(text, outcome, expected):
    assert (nothing_changed(text) if outcome is None else nothing_changed(text, outcome)) == expected

# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The depth of the derandomized property searches (search_depth.py)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import (
    controller_python,
    examples,
)

CONTROLLER_312 = {'ANSIBLE_CONTROLLER_MIN_PYTHON_VERSION': '3.12'}


def test_the_controller_python_searches_in_full():
    assert examples(10000, version=(3, 12), environ=CONTROLLER_312) == 10000
    assert examples(10000, version=(3, 13), environ=CONTROLLER_312) == 10000


def test_a_target_only_python_tries_a_tenth_and_never_fewer_than_fifty():
    assert not controller_python((3, 11), CONTROLLER_312)
    assert examples(10000, version=(3, 11), environ=CONTROLLER_312) == 1000
    assert examples(300, version=(3, 11), environ=CONTROLLER_312) == 50
    assert examples(20, version=(3, 9), environ=CONTROLLER_312) == 20


def test_plain_pytest_without_ansible_test_is_a_controller_run():
    assert controller_python((3, 11), {})
    assert examples(2000, version=(3, 11), environ={}) == 2000

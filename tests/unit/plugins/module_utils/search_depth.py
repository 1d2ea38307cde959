# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many examples a derandomized property test of module_utils tries on this Python.

ansible-test runs the module_utils tests on the controller's Python and again on each target-only
Python (scripts/ansible_test.sh: 3.11, the Debian interpreter that runs the modules on Ceph nodes).
A derandomized property draws its examples from a seed of the test itself, so the second run would
try the examples the first one tried: no new search, only the question whether the code decides the
same on that interpreter. A tenth of them answers it; the full search is the controller run's.
Plain pytest (no ansible-test) is taken as a controller run. Random (not derandomized) properties
are left as they are: each run of those is a new search.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys

from hypothesis import settings

TARGET_ONLY_SHARE = 10
TARGET_ONLY_MINIMUM = 50


def controller_python(version=None, environ=None):
    """True unless ansible-test says the controller needs a newer Python than this one."""
    version = sys.version_info[:2] if version is None else version
    minimum = (os.environ if environ is None else environ).get('ANSIBLE_CONTROLLER_MIN_PYTHON_VERSION')
    if not minimum:
        return True
    return tuple(version) >= tuple(int(part) for part in minimum.split('.')[:2])


def derandomized(max_examples, **options):
    """The settings of a derandomized property test: `max_examples` examples drawn from the test's own
    seed, no deadline, no example database, no reproduction blob; and `options`."""
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None, print_blob=False,
                    **options)


def examples(full, version=None, environ=None):
    """`full` on a controller Python, a tenth of it (at least 50) on a target-only one."""
    if controller_python(version, environ):
        return full
    return min(full, max(TARGET_ONLY_MINIMUM, full // TARGET_ONLY_SHARE))

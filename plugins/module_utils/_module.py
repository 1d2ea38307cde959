# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: the AnsibleModule of the collection's modules.

ansible-core's own message for an option it cannot convert to its type shows Python internals on
older cores (``argument 'parallel' is of type <class 'str'> and we were unable to convert to int:
<class 'str'> cannot be converted to an int``). VolfenceModule says the same in the user's words
(``parallel must be an integer, got "abc"; nothing was changed``), for every option and type,
including the options of the doc fragments. Nothing else of AnsibleModule changes.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible.module_utils.basic import AnsibleModule

# The same words as the playbooks' input checks.
from ansible_collections.volfence.csi.plugins.module_utils._decisions.inputs import TYPE_WORDS, show_value

# ansible-core 2.16 to 2.21 (module_utils/common/parameters.py, _validate_argument_types): the
# type is `<class 'str'>` on older cores, `str` on newer ones; nested options add the context.
_TYPE_ERROR = re.compile(
    r"^argument '(?P<name>[^']+)' is of type (?:<class '[^']*'>|\S+)"
    r"(?: found in '(?P<where>[^']*)'\.)? and we were unable to convert to (?P<want>\w+): .*$", re.S)


# How a module's failure ends when it stopped before changing anything: one wording for every module.
NOTHING_CHANGED = 'nothing was changed'


def nothing_changed(text, outcome=NOTHING_CHANGED):
    """`text` (a message, or the ValueError that says it) ending with '; nothing was changed', or with the
    `outcome` a module that only reads says instead ('nothing was read'); said once: a message that
    ends so already (the range checks say it themselves) is kept as it is."""
    text = str(text)
    if text.endswith(NOTHING_CHANGED) or text.endswith(outcome):
        return text
    return '%s; %s' % (text, outcome)


def type_error_in_user_words(msg, params=None):
    """`msg` with ansible-core's type-conversion sentence said in the user's words; any other
    message unchanged. `params` (the module's parameters) give the value of a top-level option."""
    if not isinstance(msg, str):
        return msg
    match = _TYPE_ERROR.match(msg.strip())
    if not match:
        return msg
    name, where, want = match.group('name'), match.group('where'), match.group('want')
    text = '%s%s must be %s' % (('%s: ' % where.replace(' -> ', '.')) if where else '', name,
                                TYPE_WORDS.get(want, want))
    if not where and isinstance(params, dict) and params.get(name) is not None:
        text += ', got %s' % show_value(params[name])
    return nothing_changed(text)


def overflowing_options(params, argument_spec):
    """The top-level int options whose value is a number too large for an integer ("INF", "1e999"):
    newer cores let OverflowError out of their int conversion instead of a type error."""
    names = []
    for name, spec in (argument_spec or {}).items():
        value = (params or {}).get(name)
        if (spec or {}).get('type') == 'int' and isinstance(value, (str, float)):
            try:
                int(float(value))
            except OverflowError:
                names.append(name)
            except ValueError:
                pass
    return names


class VolfenceModule(AnsibleModule):
    """AnsibleModule whose failure messages never show ansible-core's type internals."""

    def __init__(self, *args, **kwargs):
        try:
            AnsibleModule.__init__(self, *args, **kwargs)
        except OverflowError:
            spec = kwargs.get('argument_spec', args[0] if args else {})
            names = overflowing_options(getattr(self, 'params', None), spec) or ['an option']
            self.fail_json(msg=nothing_changed('%s must be %s, got %s' % (
                names[0], TYPE_WORDS['int'], show_value((self.params or {}).get(names[0])))))

    def fail_json(self, msg, **kwargs):  # pylint: disable=arguments-differ
        AnsibleModule.fail_json(self, type_error_in_user_words(msg, getattr(self, 'params', None)), **kwargs)

"""Offline stand-in for ansible-test's ``get-pip.py`` bootstrap script.

Why this exists
---------------
``ansible-test --venv`` (and every sanity test, which always runs in its own
virtual environment) creates empty venvs and bootstraps pip into them with a
``get-pip-<version>.py`` script downloaded from ci-files.testing.ansible.com.
That host is not reachable from our machines, so the bootstrap fails with
"... does not have pip available".  ansible-test first looks for a cached
copy at ``~/.ansible/test/cache/get_pip_<version with _>.py``;
``scripts/setup.sh`` copies this file there under the pinned name(s).

How ansible-test calls it (ansible_test/_util/target/setup/requirements.py,
``bootstrap()``)::

    GET_PIP=<cache path> python quiet_pip.py --disable-pip-version-check \
        pip==<pinned> [--no-setuptools] [--no-wheel]

``quiet_pip.py`` then runs this file with ``runpy`` as ``__main__`` inside the
target venv's interpreter, so ``sys.argv[1:]`` holds the options above.

What it does
------------
1. Installs the pip wheel bundled with the interpreter (``ensurepip``), which
   needs no network.  It runs in a *subprocess*: ensurepip rewrites the
   environment (it sets PIP_CONFIG_FILE=/dev/null and drops PIP_* variables),
   which would otherwise hide the machine's pip configuration (index mirrors,
   find-links, certificates) from the next step.
2. Drops ``--no-setuptools`` / ``--no-wheel`` (options of the real get-pip.py
   that ``pip install`` does not know) and runs
   ``python -m pip install --upgrade <remaining args>`` with the unmodified
   environment, so the exact pip version ansible-test pinned is installed from
   the configured package index.

Exit status is non-zero, with the captured output, if either step fails.
Keep this file compatible with every Python that ansible-test may target
(3.9+), and free of third-party imports.
"""

from __future__ import annotations

import os
import subprocess
import sys

# Options understood by the real get-pip.py but not by ``pip install``.
GET_PIP_ONLY_OPTIONS = frozenset(('--no-setuptools', '--no-wheel'))


def _run(cmd, env, what):
    """Run cmd quietly; on failure print its output and exit non-zero."""
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        sys.stderr.write('get_pip_offline: %s failed (exit %d): %s\n%s\n' % (
            what, proc.returncode, ' '.join(cmd), proc.stdout.decode('utf-8', 'replace')))
        sys.exit(proc.returncode or 1)
    return proc.stdout.decode('utf-8', 'replace')


def main():
    """Bootstrap pip into the running interpreter's environment without downloading get-pip.py."""
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]

    # Packages given (e.g. pip==25.2); default to plain pip like the real script does.
    if not any(not arg.startswith('-') for arg in args):
        args.append('pip')

    # A pristine copy of the environment for both subprocesses; ensurepip's
    # PIP_CONFIG_FILE=/dev/null trick stays confined to its own process.
    env = dict(os.environ)

    try:
        import ensurepip  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        sys.stderr.write(
            'get_pip_offline: %s has no ensurepip module; on Debian install python3-venv '
            '(or python%d.%d-venv).\n' % (sys.executable, sys.version_info[0], sys.version_info[1]))
        sys.exit(1)

    _run([sys.executable, '-m', 'ensurepip', '--default-pip'], env, 'ensurepip')
    _run([sys.executable, '-m', 'pip', 'install', '--quiet', '--upgrade'] + args, env, 'pip install')


if __name__ == '__main__':
    main()

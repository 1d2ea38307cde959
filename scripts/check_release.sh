#!/usr/bin/env bash
# Release checks of volfence.csi (issue 8), offline, no container engine, no lab.
#
# Usage: scripts/check_release.sh [--step STEP]... [--work DIR] [--keep] [--list] [-v]
#
# Steps, in this order (each prints PASSED/FAILED with its time and a one-line summary):
#   changelog       antsibull-changelog lint + lint-changelog-yaml; changelogs/fragments/ not empty
#   ansible-lint    ansible-lint, production profile (.ansible-lint), offline
#   galaxy-build    ansible-galaxy collection build; no .venv/.lab*/.cache/tests/output/dist/...
#                   inside, every module, event source, rulebook and the EE metadata inside; size printed
#   galaxy-install  ansible-galaxy collection install <tarball> -p <empty path> --offline --no-deps
#   galaxy-importer Galaxy's importer (galaxy-importer, .venv-importer) on the tarball: no warning or
#                   error, every module and filter documented, the modules' docs also with no other
#                   collection installed
#   module-docs     ansible-doc of every module, from that installed copy only
#   module-run      `ansible localhost -m volfence.csi.<module>` from the installed copy: argument
#                   validation of every module; ceph_blocklist_info refuses a missing keyring
#   ee-introspect   ansible-builder introspect on the installed copy + kubernetes.core; bindep
#                   selects ceph-common, python3-rados, python3-rbd on rpm and dpkg platforms
#   ee-create       ansible-builder create on execution-environment.yml (context only, no engine);
#                   the context's collection file installs as the EE's galaxy stage would
#   de-create       the same on extensions/eda/decision-environment.yml (the EDA decision environment,
#                   issue 15): kubernetes in its Python requirements, the Ceph client excluded
#   eda             the installed copy's event sources and rulebooks as ansible-rulebook finds them by
#                   FQCN; rulebooks valid for its schema, conditions parsed (no JVM, nothing run)
#   docs            scripts/build_docs.sh --check: docs render and lint clean, docs/modules current
#
# Ends with the line `release: N passed, N failed`; exit status 1 if any step failed, 2 on
# usage errors. The same steps run as pytest tests (tests/integration/release/test_release.py,
# part of `make test`); the step code is tests/integration/release/release_steps.py.
# Needs the project virtualenv (`make setup`, or scripts/setup.sh --skip-apt).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VOLFENCE_VENV:-$REPO/.venv}"

case "${1:-}" in
    -h|--help) sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

if [ ! -x "$VENV/bin/python" ] || [ ! -x "$VENV/bin/ansible-builder" ]; then
    echo "check_release.sh: $VENV lacks the release tools: run \`make setup\` (or scripts/setup.sh --skip-apt)" >&2
    exit 2
fi

exec "$VENV/bin/python" "$REPO/tests/integration/release/release_steps.py" "$@"

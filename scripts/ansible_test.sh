#!/usr/bin/env bash
# Run ansible-test sanity or unit tests on the working tree, offline.
#
# Usage: scripts/ansible_test.sh sanity|units [extra ansible-test args]
#
# Environment:
#   ANSIBLE_TEST_PYTHONS  target Python versions, first one = full run (default: sanity 3.12 and every
#                         version tests/config.yml's python_requires claims; units "3.12 3.11")
#   VOLFENCE_VENV         project virtualenv holding ansible-test (default: <repo>/.venv)
#   ANSIBLE_TEST_FRESH_VENVS=1  rebuild the cached ansible-test --venv virtualenvs
#
# What it does:
#   * ansible-test only works inside .../ansible_collections/<namespace>/<name>/ (a
#     symlink does not work), so the working tree -- tracked files plus untracked,
#     not-ignored ones (`git ls-files --cached --others --exclude-standard`), minus
#     files deleted from the working tree -- is copied afresh each run to
#     .cache/ansible_collections/<namespace>/<name>/.  The collections named under
#     `dependencies:` in galaxy.yml (kubernetes.core) are copied beside it from the
#     `ansible` package in the venv, refreshed when their MANIFEST.json changes.
#   * ansible-test looks for the nearest .git upwards to list files; that would be
#     the repo's own .git, which ignores .cache/ ("All targets skipped").  The copy
#     therefore gets its own empty `git init` repository: its file list is then every
#     copied file not matched by .gitignore (tests/output/ etc.).
#   * ansible-test bootstraps pip in each venv from a download that is unreachable
#     here; `scripts/setup.sh --pip-bootstrap` installs the offline stand-in first.
#   * Python versions (ANSIBLE_TEST_PYTHONS):
#       3.12  the controller Python (.venv, CI): the full sanity suite / all unit tests.
#       3.11  /usr/bin/python3.11, the Debian interpreter with python3-rados/-rbd that
#             runs our modules on Ceph nodes.  Only the target-side checks run on it:
#             sanity "compile" and "import" (syntax and import-time errors of modules
#             and module_utils on 3.11) and the modules/module_utils unit tests
#             (ansible-test itself restricts non-controller Pythons to those).  It is
#             put first on PATH as python3.11 because ansible-test --venv otherwise
#             takes whatever `python3.11` PATH has (a pyenv shim: 3.11.7, not Debian's).
#       3.9, 3.10, 3.13 (sanity only, by default): the other Pythons tests/config.yml's
#             python_requires claims for modules, found in pyenv or /usr/bin. Only compile
#             and import run on them, as on 3.11. A claimed Python with no interpreter here
#             fails the run: a claim nothing tested is not kept.
#     If the extra args contain --python, exactly one run with those args is made.
#     If they contain --test/--skip-test, the secondary runs get the args unchanged
#     instead of "--test compile --test import".
#   * Results (junit XML etc.) are copied to tests/output/ansible-test/<cmd>/python<ver>/ (from another
#     virtualenv than .venv: tests/output/ansible-test/<its name>/<cmd>/python<ver>/),
#     and a closing line like "sanity: 25 passed, 0 failed, 1 skipped" is printed
#     (sanity: one count per sanity test and Python; units: one per test case --
#     ansible-test stops a units run at its first failing pytest group, so tests of
#     later groups of that run are not counted).
#   * ansible-test's --venv venvs (tests/output/.tmp/delegation/) are kept between
#     runs in .cache/ansible-test-venvs/<cmd>/ (see below); ANSIBLE_TEST_FRESH_VENVS=1
#     rebuilds them.  Runs are serialized with a lock on .cache/ansible-test.lock.
#   * Exit status: 0 when every run passed; otherwise the first failing run's status.
#     `units` with no test files under tests/unit/ prints a skip notice and exits 0
#     (ansible-test itself would stop with "Cannot run unit tests without tests/unit/").
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VOLFENCE_VENV:-$REPO/.venv}"
# The project virtualenv's runs work in .cache/; a run from another virtualenv (an older ansible-core's,
# VOLFENCE_VENV=.venv-core-<release>) in .cache/<its name>/, with its results in
# tests/output/ansible-test/<its name>/: runs from different virtualenvs may go side by side.
if [ "$VENV" = "$REPO/.venv" ]; then
    WORK="$REPO/.cache"
    RESULTS_ROOT="$REPO/tests/output/ansible-test"
else
    WORK="$REPO/.cache/$(basename "$VENV")"
    RESULTS_ROOT="$REPO/tests/output/ansible-test/$(basename "$VENV")"
fi
# Target Pythons of `sanity` by default: 3.12 (the controller's, the full suite) and then every other version
# tests/config.yml's python_requires claims, of those the installed ansible-test supports; `units`: 3.12 and
# 3.11 (Debian's, with the rados/rbd bindings).
claimed_pythons() {
    "$VENV/bin/python" - "$REPO/tests/config.yml" <<'EOF'
import sys, yaml
from packaging.specifiers import SpecifierSet
from ansible_test._internal.constants import SUPPORTED_PYTHON_VERSIONS
with open(sys.argv[1]) as handle:
    spec = SpecifierSet(str(yaml.safe_load(handle)["modules"]["python_requires"]))
print(" ".join(["3.12"] + [v for v in SUPPORTED_PYTHON_VERSIONS if v != "3.12" and v in spec]))
EOF
}
if [ -n "${ANSIBLE_TEST_PYTHONS:-}" ]; then
    PYTHONS="$ANSIBLE_TEST_PYTHONS"
elif [ "${1:-}" = sanity ]; then
    PYTHONS="$(claimed_pythons)" || die "cannot read python_requires from tests/config.yml"
else
    PYTHONS="3.12 3.11"
fi

die() {
    echo "ansible_test.sh: ERROR: $*" >&2
    exit 2
}

usage() {
    echo "usage: scripts/ansible_test.sh sanity|units [extra ansible-test args]" >&2
    exit 2
}

[ $# -ge 1 ] || usage
CMD="$1"
shift
case "$CMD" in
    sanity|units) ;;
    *) usage ;;
esac

[ -x "$VENV/bin/ansible-test" ] || die "$VENV/bin/ansible-test not found; run scripts/setup.sh first"
"$REPO/scripts/setup.sh" --pip-bootstrap || die "installing the offline pip bootstrap failed"

# One run at a time per virtualenv: concurrent runs would overwrite each other's tree copy.
mkdir -p "$WORK"
exec 9>"$WORK/ansible-test.lock"
if ! flock -n 9; then
    echo "ansible_test.sh: another run holds $WORK/ansible-test.lock; waiting..." >&2
    flock 9
fi

# --- collection identity and dependencies, from galaxy.yml -------------------------
read -r NAMESPACE NAME DEPS < <("$VENV/bin/python" - "$REPO/galaxy.yml" <<'EOF'
import sys, yaml
with open(sys.argv[1]) as f:
    g = yaml.safe_load(f)
print(g['namespace'], g['name'], ','.join(sorted(g.get('dependencies') or {})))
EOF
) || die "cannot read namespace/name from galaxy.yml"
if [ -z "${NAMESPACE:-}" ] || [ -z "${NAME:-}" ]; then
    die "cannot read namespace/name from galaxy.yml"
fi

ROOT="$WORK/ansible_collections"
TREE="$ROOT/$NAMESPACE/$NAME"

# --- fresh copy of the working tree -----------------------------------------------
rm -rf "$TREE"
mkdir -p "$TREE"
(
    cd "$REPO"
    git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do
            # --cached also lists files deleted from the working tree: skip them.
            if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
        done \
        | tar --null --no-recursion -T - -cf - \
        | tar -C "$TREE" -xf -
) || die "copying the working tree to $TREE failed"
(cd "$TREE" && git init -q .) || die "git init in $TREE failed"

# --- dependency collections beside it (kubernetes.core, ...) -----------------------
SITE_COLLECTIONS="$("$VENV/bin/python" -c \
    'import ansible, os; print(os.path.join(os.path.dirname(os.path.dirname(ansible.__file__)), "ansible_collections"))')"
IFS=',' read -r -a DEP_LIST <<<"$DEPS"
for dep in "${DEP_LIST[@]}"; do
    [ -n "$dep" ] || continue
    src="$SITE_COLLECTIONS/${dep%%.*}/${dep#*.}"
    dst="$ROOT/${dep%%.*}/${dep#*.}"
    [ -d "$src" ] || die "dependency collection $dep not found in $SITE_COLLECTIONS (is the 'ansible' package installed in $VENV?)"
    if [ ! -f "$dst/MANIFEST.json" ] || ! cmp -s "$src/MANIFEST.json" "$dst/MANIFEST.json"; then
        rm -rf "$dst"
        mkdir -p "$(dirname "$dst")"
        cp -a "$src" "$dst"
    fi
done

# --- target interpreters ---------------------------------------------------------------
# pythonX.Y symlinks, put first on PATH, decide which interpreter ansible-test --venv uses.
PYBIN="$WORK/ansible-test-python"
rm -rf "$PYBIN"
mkdir -p "$PYBIN"
find_interpreter() {  # X.Y -> path or nothing
    local v="$1" cand
    local -a cands=()
    # 3.11: Debian's interpreter, as on the Ceph nodes (python3-rados/-rbd live there).
    [ "$v" = 3.11 ] && cands+=("/usr/bin/python3.11")
    # The controller venv's own base interpreter for its version.
    cands+=("$("$VENV/bin/python" -c "import sys; v='%d.%d' % sys.version_info[:2]; print(sys._base_executable if v == '$v' else '')")")
    # pyenv builds, newest patch release first, then system locations.
    while IFS= read -r cand; do cands+=("$cand"); done \
        < <(printf '%s\n' "$HOME"/.pyenv/versions/"$v".*/bin/python"$v" | sort -rV)
    cands+=("/usr/bin/python$v" "/usr/local/bin/python$v")
    for cand in "${cands[@]}"; do
        if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import sys' >/dev/null 2>&1; then
            echo "$cand"
            return
        fi
    done
}

# --- what to run ---------------------------------------------------------------------
USER_HAS_PYTHON=0
USER_HAS_TEST=0
for a in "$@"; do
    case "$a" in
        --python|--python=*|--controller|--controller=*|--target-python|--target-python=*) USER_HAS_PYTHON=1 ;;
        --test|--test=*|--skip-test|--skip-test=*) USER_HAS_TEST=1 ;;
    esac
done

if [ "$CMD" = units ]; then
    if [ -z "$(find "$TREE/tests/unit" -type f \( -name 'test_*.py' -o -name '*_test.py' \) 2>/dev/null | head -n 1)" ]; then
        echo "ansible_test.sh: no unit tests (tests/unit/**/test_*.py) in the tree: skipping ansible-test units."
        echo "units: 0 passed, 0 failed"
        exit 0
    fi
fi

RESULTS="$RESULTS_ROOT/$CMD"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"


# sanity writes junit XML only with --junit; units (pytest) always writes it.
JUNIT=()
if [ "$CMD" = sanity ]; then
    JUNIT=(--junit)
fi

# The development tools (tools/: the lab, the Kubernetes API emulator), the integration tests that
# drive them (tests/integration) and these developer scripts are not collection plugins: they run as root on the test machine with
# Debian's /usr/bin/python3 and shebangs, which the plugin sanity rules (shebang, pylint, pep8)
# are not written for. Their own integration tests exercise them; sanity covers plugins/,
# roles/, playbooks/, meta/ and tests/unit/.
if [ "$CMD" = sanity ]; then
    JUNIT+=(--exclude tools/ --exclude tests/integration/ --exclude scripts/)
fi

FIRST_RC=0
NOTES=()
run_one() {  # label, ansible-test args...
    local label="$1" rc start
    shift
    start=$SECONDS
    echo "ansible_test.sh: ansible-test $CMD $* (in $TREE)" >&2
    rm -rf "$TREE/tests/output"
    if [ -d "$VCACHE/delegation" ]; then
        mkdir -p "$TREE/tests/output/.tmp"
        mv "$VCACHE/delegation" "$TREE/tests/output/.tmp/delegation"
    fi
    set +e
    (cd "$TREE" && PATH="$PYBIN:$PATH" "$VENV/bin/ansible-test" "$CMD" "$@")
    rc=$?
    set -e
    if [ -d "$TREE/tests/output/.tmp/delegation" ]; then
        rm -rf "$VCACHE/delegation"
        mv "$TREE/tests/output/.tmp/delegation" "$VCACHE/delegation"
    fi
    mkdir -p "$RESULTS/$label"
    if [ -d "$TREE/tests/output" ]; then
        (cd "$TREE/tests/output" && find . -mindepth 1 -maxdepth 1 ! -name .tmp -exec cp -a {} "$RESULTS/$label/" \;)
    fi
    echo "$rc" >"$RESULTS/$label/exit-status"
    NOTES+=("$CMD $label: exit $rc, $((SECONDS - start))s")
    if [ "$rc" -ne 0 ] && [ "$FIRST_RC" -eq 0 ]; then
        FIRST_RC=$rc
    fi
}

# Resolve every requested interpreter up front (the venv cache key depends on them).
declare -A INTERP=()
VENV_KEY="$("$VENV/bin/ansible-test" --version 2>&1 || true)"
for v in $PYTHONS; do
    INTERP[$v]="$(find_interpreter "$v")"
    if [ -n "${INTERP[$v]}" ]; then
        ln -sf "${INTERP[$v]}" "$PYBIN/python$v"
        VENV_KEY+=" $v=$(readlink -f "${INTERP[$v]}")"
    fi
done

# ansible-test --venv builds its venvs in tests/output/.tmp/delegation/ of the tree,
# i.e. afresh on every run here (the unit-test venvs install tests/unit/requirements.txt:
# ~10 s per Python).  They are kept in .cache/ansible-test-venvs/<cmd>/ between runs
# and put back at the same path, so they stay valid; ansible-test still runs its
# `pip install -r` in them each time, which updates changed requirements.  They are
# dropped when ansible-test or an interpreter changes, or with ANSIBLE_TEST_FRESH_VENVS=1.
# (The per-sanity-test venvs live in ~/.ansible/test/venv/ and ansible-test reuses them.)
VCACHE="$WORK/ansible-test-venvs/$CMD"
if [ "${ANSIBLE_TEST_FRESH_VENVS:-0}" = 1 ] || [ "$(cat "$VCACHE/key" 2>/dev/null || true)" != "$VENV_KEY" ]; then
    rm -rf "$VCACHE"
fi
mkdir -p "$VCACHE"
printf '%s\n' "$VENV_KEY" >"$VCACHE/key"

if [ "$USER_HAS_PYTHON" = 1 ]; then
    run_one custom --venv "${JUNIT[@]}" "$@"
else
    primary=1
    for v in $PYTHONS; do
        if [ -z "${INTERP[$v]}" ]; then
            if [ "$primary" = 1 ]; then
                die "no Python $v interpreter found for the main run"
            fi
            if [ -z "${ANSIBLE_TEST_PYTHONS:-}" ]; then
                NOTES+=("$CMD python$v: FAILED, tests/config.yml claims Python $v and no python$v interpreter is here")
                [ "$FIRST_RC" -ne 0 ] || FIRST_RC=1
            else
                NOTES+=("$CMD python$v: SKIPPED, no python$v interpreter found")
            fi
            echo "ansible_test.sh: WARNING: no python$v found; not testing it" >&2
            continue
        fi
        if [ "$primary" = 1 ]; then
            run_one "python$v" --venv --python "$v" "${JUNIT[@]}" "$@"
            primary=0
        elif [ "$CMD" = sanity ] && [ "$USER_HAS_TEST" = 0 ]; then
            run_one "python$v" --venv --python "$v" "${JUNIT[@]}" --test compile --test import "$@"
        else
            run_one "python$v" --venv --python "$v" "${JUNIT[@]}" "$@"
        fi
    done
fi

# --- summary ---------------------------------------------------------------------------
for n in "${NOTES[@]}"; do
    echo "ansible_test.sh: $n"
done
"$VENV/bin/python" - "$CMD" "$RESULTS" <<'EOF'
import glob, os, sys
import xml.etree.ElementTree as ET

cmd, results = sys.argv[1], sys.argv[2]
passed = failed = skipped = 0
for label in sorted(os.listdir(results)):
    run = os.path.join(results, label)
    run_failed = 0
    for path in sorted(glob.glob(os.path.join(run, 'junit', '*.xml'))):
        try:
            cases = ET.parse(path).getroot().iter('testcase')
        except ET.ParseError as ex:
            print('ansible_test.sh: unreadable junit file %s: %s' % (path, ex))
            failed += 1
            run_failed += 1
            continue
        for case in cases:
            if case.find('failure') is not None or case.find('error') is not None:
                failed += 1
                run_failed += 1
            elif case.find('skipped') is not None:
                skipped += 1
            else:
                passed += 1
    try:
        with open(os.path.join(run, 'exit-status')) as f:
            rc = int(f.read().strip() or 0)
    except (OSError, ValueError):
        rc = 0
    if rc != 0 and run_failed == 0:
        # ansible-test stopped without reporting a failing test (setup error, crash).
        print('ansible_test.sh: %s %s exited %d without a failing test in its junit output' % (cmd, label, rc))
        failed += 1
line = '%s: %d passed, %d failed' % (cmd, passed, failed)
if skipped:
    line += ', %d skipped' % skipped
print(line)
EOF
exit "$FIRST_RC"

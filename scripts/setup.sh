#!/usr/bin/env bash
# Idempotent, non-interactive setup of a development / CI machine for volfence.csi
# (Debian bookworm, root, pyenv Pythons under ~/.pyenv/versions).
#
# Usage: scripts/setup.sh [--demo] [--skip-apt] [--pip-bootstrap]
#   (no option)      everything below (what `make test` needs)
#   --demo           only what `make demo` runs: steps 1, 2 (requirements-demo.txt) and 2b (the default
#                    release's root); `make test` later adds the rest
#   --skip-apt       do not check/install Debian packages (also: VOLFENCE_SKIP_APT=1)
#   --pip-bootstrap  only install the offline get-pip stand-in for ansible-test
#                    (what scripts/ansible_test.sh calls before every run)
#   VOLFENCE_VENV=/path  use another virtualenv than <repo>/.venv
#
# Steps:
#   1. Debian packages (Ceph lab, test tooling, Java for ansible-rulebook), installed only
#      when `dpkg -s` says one is missing; `apt-get update` runs first in that case only.
#   2. Project virtualenv .venv with Python >= 3.12 (pyenv 3.12.1 preferred;
#      VOLFENCE_PYTHON=/path/to/python overrides), recreated only if missing/broken.
#      `pip install -r requirements-test.txt` (--demo: requirements-demo.txt, its part the demo runs) runs
#      only when the requirement files (or the interpreter) changed: a sha256 stamp per level is kept in
#      .venv/.volfence-requirements[-demo].sha256; a current test level satisfies the demo level.
#      The project's development tools (tools/*: the Kubernetes API emulator, the lab) are installed
#      editable into it (pip install -e, no download), so tests, benchmarks and the lab import them.
#   2b. The Debian roots of the newer Ceph releases the lab runs (Tentacle 20.2 from forky,
#      Reef 18.2 from trixie; tools/lab/volfence_lab/ceph_releases.py), built with mmdebstrap once into
#      ~/.cache/volfence/ceph-roots (VOLFENCE_CEPH_ROOTS) and rebuilt only when incomplete. They build
#      while step 2 installs (mmdebstrap and pip each wait on the network and the disk more than on a core).
#   3. ansible-test's pip bootstrap: ansible-test downloads get-pip.py from a host
#      that is unreachable here, unless ~/.ansible/test/cache/get_pip_<ver>.py exists.
#      scripts/get_pip_offline.py is copied there under every pip version pinned by
#      the installed ansible-test (read from ansible_test itself, not hard-coded).
#   4. One virtualenv per older ansible-core release the collection claims (tests/ansible-core-versions.txt),
#      .venv-core-<release>, for ansible-test sanity on it; rebuilt only when requirements.txt changes.
#   5. .venv-importer: Galaxy's importer (galaxy-importer) for the release checks.
#      Steps 4 and 5 build their virtualenvs side by side, each with a log of its own.
#
# Quiet on success; on failure prints what failed (and the tail of the tool's log).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VOLFENCE_VENV:-$REPO/.venv}"
STAMP="$VENV/.volfence-requirements.sha256"
PIP_CACHE_DIR_ANSIBLE_TEST="${HOME}/.ansible/test/cache"

# Debian packages: Ceph lab (mon/osd/mgr, CLI, Python bindings for /usr/bin/python3),
# iproute2 (network namespaces), python3-pytest, fuse3; plus
#   python3-venv: ensurepip for /usr/bin/python3.11, which ansible-test uses as the
#                 Ceph-node target Python (scripts/ansible_test.sh, get_pip_offline.py)
#   bindfs:       a real FUSE filesystem for the dead-fuse-mount (FUSE mount recovery) tests
#   the shellcheck package: without it ansible-test skips its "shellcheck" sanity test
#   git:          ansible_test.sh lists files with git
#   mmdebstrap:   builds the Debian roots of Ceph 20 and 18 (step 2b)
#   openjdk-17-jre-headless: Java 17 for ansible-rulebook (EDA, issue 15; requirements-test.txt), whose
#                 Drools rule engine runs in a JVM (drools_jpy over jpy loads lib/server/libjvm.so). The
#                 headless JRE is enough (no JDK) and no JAVA_HOME is needed: ansible-rulebook asks the
#                 `java` on PATH (/usr/bin/java) for its java.home. `.venv/bin/ansible-rulebook --version`
#                 prints the Java it found.
APT_PACKAGES=(ceph-mon ceph-osd ceph-mgr ceph-common python3-rados python3-rbd iproute2
              python3-pytest fuse3 bindfs python3-venv shellcheck git mmdebstrap
              openjdk-17-jre-headless)

LOG="$(mktemp "${TMPDIR:-/tmp}/volfence-setup.XXXXXX.log")"
trap 'rm -f "$LOG"' EXIT

die() {
    echo "setup.sh: ERROR: $*" >&2
    exit 1
}

# run_logged DESCRIPTION CMD...: run quietly (into $LOG: a job side by side sets its own), show the log
# tail on failure.
run_logged() {
    local what="$1"
    shift
    if ! "$@" >"$LOG" 2>&1; then
        echo "setup.sh: ERROR: $what failed: $*" >&2
        echo "----- last 40 lines of output -----" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    fi
}

# side_by_side FUNCTION ARG...: run each `FUNCTION ARG` in the background, each with a log of its own;
# wait for all; fail (after all ended) if any failed. A job's errors reach stderr as they happen.
side_by_side() {
    local fn="$1" arg pids=() failed=0 pid
    shift
    for arg in "$@"; do
        ( LOG="$(mktemp "${TMPDIR:-/tmp}/volfence-setup.XXXXXX.log")"; trap 'rm -f "$LOG"' EXIT; "$fn" "$arg" ) &
        pids+=("$!")
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    [ "$failed" = 0 ] || die "a step run side by side failed (its error is above)"
}

install_apt_packages() {
    local missing=() pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        if ! dpkg -s "$pkg" >/dev/null 2>&1 \
            || ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
            missing+=("$pkg")
        fi
    done
    [ "${#missing[@]}" -eq 0 ] && return 0

    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 \
            || die "Debian packages missing (${missing[*]}) and not root; install them or rerun as root (or --skip-apt)"
        sudo=(sudo -n)
    fi
    echo "setup.sh: installing Debian packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    run_logged "apt-get update" "${sudo[@]}" apt-get update -q
    run_logged "apt-get install" "${sudo[@]}" apt-get install -y -q \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
}

# python_ok PATH: true if PATH runs and is Python >= 3.12.
python_ok() {
    [ -n "$1" ] && "$1" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1
}

find_python() {
    local cand
    if [ -n "${VOLFENCE_PYTHON:-}" ]; then
        python_ok "$VOLFENCE_PYTHON" || die "VOLFENCE_PYTHON=$VOLFENCE_PYTHON is not a working Python >= 3.12"
        echo "$VOLFENCE_PYTHON"
        return
    fi
    # Preferred interpreter first, then any other pyenv >= 3.12, then PATH
    # (pyenv shims for versions that are not active fail python_ok and are skipped).
    for cand in "$HOME/.pyenv/versions/3.12.1/bin/python" \
                "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python \
                "$(command -v python3.12 || true)" "$(command -v python3.13 || true)" \
                "$(command -v python3.14 || true)" "$(command -v python3 || true)"; do
        if python_ok "$cand"; then
            echo "$cand"
            return
        fi
    done
    die "no Python >= 3.12 found (looked in ~/.pyenv/versions and PATH); set VOLFENCE_PYTHON"
}

# setup_venv LEVEL: the project virtualenv with requirements-LEVEL.txt (test or demo) installed.
setup_venv() {
    local level="${1:-test}" python stamp
    if ! python_ok "$VENV/bin/python"; then
        python="$(find_python)"
        echo "setup.sh: creating $VENV with $python" >&2
        rm -rf "$VENV"
        run_logged "virtualenv creation" "$python" -m venv "$VENV"
    fi

    # Stamp = requirement files + interpreter version; reinstall only when it changes.
    local want have="" want_test
    want="$(requirements_stamp "$level")"
    want_test="$(requirements_stamp test)"
    stamp="$STAMP"
    [ "$level" = test ] || stamp="${STAMP%.sha256}-$level.sha256"
    [ -f "$stamp" ] && have="$(cat "$stamp")"
    # the test level holds the demo's requirements
    if [ "$want" != "$have" ] && { [ "$level" = test ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want_test" ]; }; then
        [ -f "$REPO/requirements-$level.txt" ] || die "$REPO/requirements-$level.txt not found"
        echo "setup.sh: installing requirements-$level.txt into $VENV" >&2
        (cd "$REPO" && run_logged "pip install -r requirements-$level.txt" \
            "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "requirements-$level.txt")
        install_tools
        echo "$want" >"$stamp"
    fi
}

requirements_stamp() {  # LEVEL
    (cd "$REPO" && {
        "$VENV/bin/python" -c 'import sys; print(sys.version)'
        echo "tools: editable_mode=compat"   # how install_tools installs them
        for f in "requirements-$1.txt" requirements-demo.txt requirements.txt tools/*/pyproject.toml; do
            if [ -f "$f" ]; then sha256sum "$f"; fi
        done
    } | sha256sum | cut -d' ' -f1)
}

# The development tools (tools/<name>/pyproject.toml), editable: their code stays where it is in the
# checkout. No build isolation: the venv's own setuptools builds them, nothing is downloaded. In compat
# mode, a plain path in a .pth file: setuptools' default (an import hook) costs every Python the venv
# starts (each module Ansible runs, each command) about 30 ms of CPU, about 6,000 times a test run.
install_tools() {
    local args=() names=() project
    for project in "$REPO"/tools/*/pyproject.toml; do
        [ -f "$project" ] || continue
        args+=(-e "$(dirname "$project")")
        names+=("tools/$(basename "$(dirname "$project")")")
    done
    [ "${#args[@]}" -eq 0 ] && return 0
    echo "setup.sh: installing the development tools (${names[*]}) editable into $VENV" >&2
    # Python 3.12's venv comes without setuptools, the build backend of the tools' pyproject.toml.
    "$VENV/bin/python" -c 'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 64)' \
        2>/dev/null || run_logged "pip install setuptools" "$VENV/bin/python" -m pip install --quiet \
        --disable-pip-version-check "setuptools>=64"
    run_logged "pip install -e tools/*" "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-deps --no-build-isolation --config-settings editable_mode=compat "${args[@]}"
}

install_pip_bootstrap() {
    local src="$REPO/scripts/get_pip_offline.py" versions v dst
    [ -f "$src" ] || die "$src not found"
    [ -x "$VENV/bin/python" ] || die "$VENV missing; run scripts/setup.sh first"

    # The pip version(s) ansible-test pins for its venvs: ask ansible_test itself
    # (get_venv_packages() per supported Python); fall back to parsing the source.
    versions="$("$VENV/bin/python" - <<'EOF'
import re, sys, types
try:
    from ansible_test._internal import constants, python_requirements as pr
    found = {pr.get_venv_packages(types.SimpleNamespace(version=v))['pip']
             for v in constants.SUPPORTED_PYTHON_VERSIONS}
except Exception:  # ansible-test internals moved: parse python_requirements.py
    try:
        import ansible_test, os
        path = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')
        with open(path) as f:
            found = set(re.findall(r"""\bpip\s*=\s*['"]([0-9][0-9A-Za-z.]*)['"]""", f.read()))
    except Exception as ex:
        sys.exit('cannot determine the pip version pinned by ansible-test: %s' % ex)
if not found:
    sys.exit('cannot determine the pip version pinned by ansible-test')
print('\n'.join(sorted(found)))
EOF
)" || die "could not read ansible-test's pinned pip version (is ansible-core installed in .venv?)"

    mkdir -p "$PIP_CACHE_DIR_ANSIBLE_TEST"
    for v in $versions; do
        dst="$PIP_CACHE_DIR_ANSIBLE_TEST/get_pip_${v//./_}.py"
        if ! cmp -s "$src" "$dst"; then
            cp "$src" "$dst.tmp.$BASHPID" && mv -f "$dst.tmp.$BASHPID" "$dst"
        fi
    done
}

# Every ansible-core release the collection claims (tests/ansible-core-versions.txt) but the newest, which
# .venv has: sanity runs on each (scripts/run_tests.py). One virtualenv per release, .venv-core-<release>,
# with that ansible-core and requirements.txt; kubernetes.core comes from .venv (6.x supports
# ansible-core >= 2.16). Rebuilt only when the release or requirements.txt change.
CORE_VERSIONS_FILE="$REPO/tests/ansible-core-versions.txt"
setup_core_venv() {  # X.Y
    local release="$1" venv="$REPO/.venv-core-$1" core="ansible-core>=$1,<$1.999" stamp want
    stamp="$venv/.volfence-core"
    want="$(printf '%s\n' "$core" | cat - "$REPO/requirements.txt" | sha256sum | cut -d' ' -f1)"
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "setup.sh: creating $venv ($core)" >&2
        rm -rf "$venv"
        run_logged "virtualenv creation for ansible-core $release" "$(find_python)" -m venv "$venv"
        (cd "$REPO" && run_logged "pip install $core" "$venv/bin/python" -m pip install --quiet \
            --disable-pip-version-check "$core" -r requirements.txt)
        echo "$want" >"$stamp"
    fi
    put_dependencies "$venv"
    VENV="$venv" install_pip_bootstrap
}

# put_dependencies VENV: the collection's dependency (galaxy.yml: kubernetes.core 6.x) into VENV's Python
# path, copied from .venv's `ansible` package (no Galaxy server is reachable); ansible-core finds
# collections there (COLLECTIONS_SCAN_SYS_PATH) whatever ANSIBLE_COLLECTIONS_PATH says.
put_dependencies() {
    local venv="$1" site src
    site="$("$venv/bin/python" -c 'import ansible, os; print(os.path.dirname(os.path.dirname(ansible.__file__)))')"
    src="$("$VENV/bin/python" -c 'import ansible, os; print(os.path.join(os.path.dirname(os.path.dirname(ansible.__file__)), "ansible_collections", "kubernetes", "core"))')"
    if ! cmp -s "$src/MANIFEST.json" "$site/ansible_collections/kubernetes/core/MANIFEST.json"; then
        rm -rf "$site/ansible_collections/kubernetes/core"
        mkdir -p "$site/ansible_collections/kubernetes"
        cp -a "$src" "$site/ansible_collections/kubernetes/core"
    fi
}

# Galaxy's importer (galaxy-importer, as galaxy.ansible.com and Automation Hub run it on an upload) for the
# release check `galaxy-importer` (tests/integration/release/release_steps.py), in a virtualenv of its own:
# it pins ansible-lint, flake8 and attrs, and it must see the collection's declared dependency and nothing
# else (the `ansible` package of .venv would hide an undeclared one).
IMPORTER_REQUIREMENT="galaxy-importer>=0.4.44,<0.5"
IMPORTER_VENV="$REPO/.venv-importer"
setup_importer_venv() {
    local stamp="$IMPORTER_VENV/.volfence-importer"
    if [ ! -x "$IMPORTER_VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$IMPORTER_REQUIREMENT" ]; then
        echo "setup.sh: creating $IMPORTER_VENV ($IMPORTER_REQUIREMENT)" >&2
        rm -rf "$IMPORTER_VENV"
        run_logged "virtualenv creation for galaxy-importer" "$(find_python)" -m venv "$IMPORTER_VENV"
        run_logged "pip install $IMPORTER_REQUIREMENT" "$IMPORTER_VENV/bin/python" -m pip install --quiet \
            --disable-pip-version-check "$IMPORTER_REQUIREMENT"
        echo "$IMPORTER_REQUIREMENT" >"$stamp"
    fi
    put_dependencies "$IMPORTER_VENV"
}

# The older ansible-core virtualenvs and the importer's, side by side: each is mostly pip waiting on the
# network and unpacking (one core each at most), and pip's cache is safe to share between them.
setup_test_venvs() {
    local newest release jobs=()
    newest="$("$VENV/bin/python" -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')"
    for release in $(grep -v '^#' "$CORE_VERSIONS_FILE"); do
        [ "$release" = "$newest" ] || jobs+=("core:$release")
    done
    jobs+=(importer)
    side_by_side test_venv_job "${jobs[@]}"
    # The one virtualenv of the older layout (ansible-core 2.16 only), now .venv-core-2.16.
    rm -rf "$REPO/.venv-oldest"
}

test_venv_job() {  # core:X.Y | importer
    case "$1" in
        core:*) setup_core_venv "${1#core:}" ;;
        importer) setup_importer_venv ;;
    esac
}

# The Ceph roots build in the background while the virtualenv installs; build_roots_wait collects it.
ROOTS_PID=""
ROOTS_LOG=""
build_roots_start() {  # [RELEASE...]
    ROOTS_LOG="$(mktemp "${TMPDIR:-/tmp}/volfence-roots.XXXXXX.log")"
    /usr/bin/python3 "$REPO/tools/lab/volfence_lab/ceph_releases.py" build "$@" >"$ROOTS_LOG" 2>&1 &
    ROOTS_PID=$!
}

build_roots_wait() {
    if ! wait "$ROOTS_PID"; then
        echo "setup.sh: ERROR: building the Ceph release roots failed" >&2
        echo "----- last 40 lines of output -----" >&2
        tail -n 40 "$ROOTS_LOG" >&2
        rm -f "$ROOTS_LOG"
        exit 1
    fi
    rm -f "$ROOTS_LOG"
}

main() {
    local skip_apt="${VOLFENCE_SKIP_APT:-0}" only_bootstrap=0 demo=0 arg
    for arg in "$@"; do
        case "$arg" in
            --skip-apt) skip_apt=1 ;;
            --pip-bootstrap) only_bootstrap=1 ;;
            --demo) demo=1 ;;
            -h|--help) sed -n '2,37p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; return 0 ;;
            *) die "unknown option: $arg (see --help)" ;;
        esac
    done

    if [ "$only_bootstrap" = 1 ]; then
        install_pip_bootstrap
        return 0
    fi
    [ "$skip_apt" = 1 ] || install_apt_packages
    if [ "$demo" = 1 ]; then
        build_roots_start "${LAB_CEPH:-20}"   # the release the demo's lab runs
        setup_venv demo
        build_roots_wait
        return 0
    fi
    build_roots_start
    setup_venv test
    build_roots_wait
    install_pip_bootstrap
    setup_test_venvs
}

main "$@"

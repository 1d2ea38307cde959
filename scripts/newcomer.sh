#!/usr/bin/env bash
# The README's two commands as a newcomer meets them, timed by phase (issue 44).
#
# Usage: scripts/newcomer.sh [--demo-only] [--keep]
#   Clones this repository's HEAD into a fresh folder and runs there, with a fresh HOME (so a fresh
#   XDG_CACHE_HOME, pip cache, ~/.ansible/test and Ceph roots cache, ~/.cache/volfence/ceph-roots):
#     1. make setup-demo      what `make demo` sets up
#     2. scripts/demo.sh      the rest of `make demo` (the lab, the incident, the playbooks)
#     3. make setup           what `make test` adds
#     4. run_tests.py         the rest of `make test` (every lane)
#   then prints the minutes of each phase and of each of run_tests.py's stages, and `make demo` and
#   `make test` as a newcomer would time them (1+2, 3+4). What stays from the machine: its Debian
#   packages and its Pythons (~/.pyenv is linked into the fresh HOME: the machine's interpreters, not a
#   cache). --demo-only stops after 2. --keep keeps the folder (its path is printed); by default it is
#   removed, the logs excepted (.cache/newcomer/<time>/ in this checkout).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEMO_ONLY=0
KEEP=0
for arg in "$@"; do
    case "$arg" in
        --demo-only) DEMO_ONLY=1 ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "newcomer.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
    esac
done

WORK="$(mktemp -d /tmp/volfence-newcomer.XXXXXX)"
LOGS="$REPO/.cache/newcomer/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$LOGS" "$WORK/home"
[ -d "$HOME/.pyenv" ] && ln -s "$HOME/.pyenv" "$WORK/home/.pyenv"
git clone --quiet "$REPO" "$WORK/clone" || exit 1
# called by the EXIT trap
# shellcheck disable=SC2317
cleanup() {
    if [ "$KEEP" = 1 ]; then
        echo "newcomer.sh: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

# A stop (SIGTERM, as a CI timeout sends it, or Ctrl-C) goes to the running phase's process group, and the folder
# is removed only once that group has ended: run_tests.py takes its labs down from the clone's own virtualenv.
PHASE_GROUP=""
# shellcheck disable=SC2317
stop_phase() {
    [ -n "$PHASE_GROUP" ] || return 0
    echo "newcomer.sh: stopping the running phase (process group $PHASE_GROUP) ..." >&2
    kill -TERM -- "-$PHASE_GROUP" 2>/dev/null
    local waited=0
    while kill -0 -- "-$PHASE_GROUP" 2>/dev/null && [ "$waited" -lt 600 ]; do
        sleep 0.2
        waited=$((waited + 1))
    done
}
trap 'stop_phase; exit 143' TERM
trap 'stop_phase; exit 130' INT

export HOME="$WORK/home" XDG_CACHE_HOME="$WORK/home/.cache" PIP_CACHE_DIR="$WORK/home/.cache/pip"
unset VOLFENCE_CEPH_ROOTS LAB_PREFIX LAB_DIR LAB_SLOT LAB_NODES KUBECONFIG VIRTUAL_ENV PYTHONPATH
cd "$WORK/clone" || exit 1

PHASES=()
phase() {  # NAME LOG CMD...: run, time, remember
    local name="$1" log="$2" started rc
    shift 2
    started=$(date +%s)
    echo "newcomer.sh: $name ($*) ... (log: $log)"
    # a process group of its own (setsid: a background job of this non-interactive shell leads no group, so
    # setsid does not fork and $! is the group), so that a stop reaches every process of the phase
    setsid "$@" >"$log" 2>&1 &
    PHASE_GROUP=$!
    wait "$PHASE_GROUP"
    rc=$?
    PHASE_GROUP=""
    PHASES+=("$name|$(( $(date +%s) - started ))|$rc")
    echo "newcomer.sh: $name: rc=$rc in $(( $(date +%s) - started )) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
    return $rc
}

minutes() { awk -v s="$1" 'BEGIN { printf "%d min %02d s", s / 60, s % 60 }'; }

report() {
    local entry name seconds rc demo=0 test=0
    echo
    echo "===== newcomer's times ($(nproc) cores; HEAD $(git rev-parse --short HEAD))"
    for entry in "${PHASES[@]}"; do
        IFS='|' read -r name seconds rc <<<"$entry"
        printf '%-28s %14s  rc %s\n' "$name" "$(minutes "$seconds")" "$rc"
        case "$name" in
            "make setup-demo"|"demo") demo=$((demo + seconds)) ;;
            "make setup"|"run_tests.py") test=$((test + seconds)) ;;
        esac
    done
    printf '%-28s %14s\n' "make demo (the two above)" "$(minutes "$demo")"
    [ "$DEMO_ONLY" = 1 ] || printf '%-28s %14s\n' "make test (setup + lanes)" "$(minutes "$test")"
    if [ -f "$LOGS/run_tests.log" ]; then
        echo "stages of run_tests.py (wall seconds; they run side by side in lanes):"
        grep -E '^[a-z0-9.-]+ +(ok|FAILED) ' "$LOGS/run_tests.log" | sed 's/^/  /'
        tail -n 1 "$LOGS/run_tests.log" | sed 's/^/  /'
    fi
    echo "logs: $LOGS"
}

rc=0
phase "make setup-demo" "$LOGS/setup-demo.log" make setup-demo \
    && phase "demo" "$LOGS/demo.log" scripts/demo.sh || rc=1
if [ "$DEMO_ONLY" = 0 ]; then
    phase "make setup" "$LOGS/setup.log" make setup \
        && phase "run_tests.py" "$LOGS/run_tests.log" /usr/bin/python3 scripts/run_tests.py || rc=1
fi
report | tee "$LOGS/report.txt"
exit $rc

#!/usr/bin/env bash
# make demo: start the lab, reproduce the incident of stale-rbd-watcher, show the stuck state, fix it,
# and leave nothing behind.
#
# stale-rbd-watcher: node-b's kubelet dies but its rbd client stays alive, so the replacement pod on
# another node cannot stage the volume: ceph-csi sees a watcher that is not its own and reports
# "rbd image <pool>/<image> is still being used".
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own lab prefix (names, subnet, ports, folder): a developer's `make lab-up` lab is left alone.
export LAB_PREFIX="${DEMO_LAB_PREFIX:-vfdemo}"
unset LAB_DIR LAB_SLOT LAB_NODES KUBECONFIG
LAB=".venv/bin/python -m volfence_lab"  # the lab (tools/lab), installed there by make setup
trap '$LAB down >/dev/null 2>&1 || true' EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@" 2>&1 | sed 's/^/  /'; }

say "Starting the lab: a real Ceph cluster (LAB_CEPH=${LAB_CEPH:-20}), Kubernetes API emulator, 3 simulated nodes"
$LAB up | grep -E '^(CEPH_CONF|KUBECONFIG|LAB_NODES|# lab up)'
# shellcheck disable=SC1090
. ".lab-$LAB_PREFIX/env"
export PATH="$LAB_CEPH_BIN:$PATH"  # the lab release's ceph and rbd
node_ip() { for kv in $LAB_NODES; do if [ "${kv%%=*}" = "$1" ]; then echo "${kv#*=}"; fi; done; }
NODE_B_IP=$(node_ip node-b)

say "stale-rbd-watcher: nginx with an RWO Ceph RBD volume runs on node-b; node-b's kubelet dies, its rbd client does not"
$LAB scenario stale-rbd-watcher > ".lab-$LAB_PREFIX/stale-rbd-watcher.json"
json() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' ".lab-$LAB_PREFIX/stale-rbd-watcher.json" "$1"; }
IMAGE=$(json image); POD=$(json stuck_pod)
run kubectl get nodes
run kubectl get pods -o wide
run kubectl get events --field-selector "involvedObject.name=$POD,reason=FailedMount" \
    -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message
run rbd status "$IMAGE"
echo "=> the watcher is node-b's ($NODE_B_IP): the new pod stays in ContainerCreating"

export ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$PWD/.cache/collections"
export ANSIBLE_NOCOLOR=1
INVENTORY=".lab-$LAB_PREFIX/inventory.yml"
REPORTS=".lab-$LAB_PREFIX/reports"; mkdir -p "$REPORTS"

# The playbooks' own output goes to a log; what they did is read back from their JSON reports.
playbook() {
  printf '$ ansible-playbook -i %s %s\n' "$INVENTORY" "$*"
  .venv/bin/ansible-playbook -i "$INVENTORY" "$@" >> "$REPORTS/ansible.log" 2>&1 \
    || { echo "playbook failed; see $REPORTS/ansible.log"; tail -20 "$REPORTS/ansible.log"; exit 1; }
}
diagnose_summary() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
for pod in json.load(open(sys.argv[1]))["pods"]:
    print("  %s/%s on %s: %s, %s" % (pod["namespace"], pod["pod"], pod["node"], pod["incident"], pod["title"]))
    for line in pod["evidence"]:
        print("    - " + line)
    if pod["next"]:
        print("    next: ansible-playbook %s %s" % (pod["next"]["file"], " ".join(
            "-e %s=%s" % kv for kv in sorted(pod["next"]["extra_vars"].items()))))
PY
}
failover_summary() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
verb = "would be" if r["check_mode"] else "were"
print("  preflight: node %s Ready=%s, Lease last renewed %s s ago" % (
    r["failed_node"], r["preflight"]["ready"], r["preflight"]["lease_age"]))
print("  watchers of the node's images: %s" % [w["address"] for i in r["watchers_before"] for w in i["watchers"]])
print("  client addresses that %s fenced (%s): %s" % (verb, r["fence_method"], r["fence_plan"].get("fence")))
print("  watchers kept: %s" % r["fence_plan"].get("kept"))
for v in r["volumes"]:
    print("  volume %s (%s): %s (%s)" % (v["pv_name"], v["image"] or v["driver"], "made safe" if v["safe"] else "left alone", v["how"]))
print("  Terminating pods that %s force-deleted (I6): %s" % (verb, r["pods_force_deleted"]))
print("  claims whose new pods %s waited for: %s" % (verb, r["claims"]))
PY
}

say "volfence.csi diagnose: which incident is each stuck pod in? (read-only)"
playbook playbooks/diagnose.yml -e stuck_threshold_seconds=5 -e "report_path=$PWD/$REPORTS/diagnose.json"
diagnose_summary "$REPORTS/diagnose.json"

say "volfence.csi node_failover, dry run first (--check changes nothing)"
playbook playbooks/node_failover.yml --check -e failed_node=node-b -e lease_grace_seconds=5 \
    -e "report_path=$PWD/$REPORTS/failover-check.json"
failover_summary "$REPORTS/failover-check.json"

say "volfence.csi node_failover, for real"
started=$(date +%s.%N)
playbook playbooks/node_failover.yml -e failed_node=node-b -e lease_grace_seconds=5 \
    -e "report_path=$PWD/$REPORTS/failover.json"
failover_summary "$REPORTS/failover.json"
echo "node_failover took $(/usr/bin/python3 -c "import time,sys; print('%.1f' % (time.time()-float(sys.argv[1])))" "$started") s"
run kubectl get pods -o wide
run rbd status "$IMAGE"
run ceph osd blocklist ls

say "Stopping the lab"
$LAB down
trap - EXIT

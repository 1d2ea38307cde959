#!/usr/bin/env bash
# make demo: start the lab, reproduce the incident of seed 000, show the stuck state, fix it,
# and leave nothing behind.
#
# Seed 000: node-b's kubelet dies but its rbd client stays alive, so the replacement pod on
# another node cannot stage the volume: ceph-csi sees a watcher that is not its own and reports
# "rbd image <pool>/<image> is still being used".
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own lab prefix (names, subnet, ports, folder): a developer's `make lab-up` lab is left alone.
export LAB_PREFIX="${DEMO_LAB_PREFIX:-vfdemo}"
unset LAB_DIR LAB_SLOT LAB_NODES KUBECONFIG
LAB="/usr/bin/python3 tests/lab/lab.py"
trap '$LAB down >/dev/null 2>&1 || true' EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@" 2>&1 | sed 's/^/  /'; }

say "Starting the lab: real Ceph 16 cluster, Kubernetes API emulator, 3 simulated nodes"
$LAB up | grep -E '^(CEPH_CONF|KUBECONFIG|LAB_NODES|# lab up)'
# shellcheck disable=SC1090
. ".lab-$LAB_PREFIX/env"
node_ip() { for kv in $LAB_NODES; do if [ "${kv%%=*}" = "$1" ]; then echo "${kv#*=}"; fi; done; }
NODE_B_IP=$(node_ip node-b)

say "Seed 000: nginx with an RWO Ceph RBD volume runs on node-b; node-b's kubelet dies, its rbd client does not"
$LAB scenario seed-000 > ".lab-$LAB_PREFIX/seed-000.json"
json() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' ".lab-$LAB_PREFIX/seed-000.json" "$1"; }
IMAGE=$(json image); POD=$(json stuck_pod)
run kubectl get nodes
run kubectl get pods -o wide
run kubectl get events --field-selector "involvedObject.name=$POD,reason=FailedMount" \
    -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message
run rbd status "$IMAGE"
echo "=> the watcher is node-b's ($NODE_B_IP): the new pod stays in ContainerCreating"

say "The fix (what volfence.csi's node_failover automates, with preflight checks and a report)"
run ceph osd blocklist add "$NODE_B_IP"
for _ in $(seq 1 50); do
  [ "$(kubectl get pod "$POD" -o jsonpath='{.status.phase}')" = Running ] && break
  sleep 0.2
done
run rbd status "$IMAGE"
run kubectl get pods -o wide

say "Stopping the lab"
$LAB down
trap - EXIT

#!/usr/bin/env bash
# make demo: start the lab, reproduce the incident of seed 000 on the real Ceph cluster, show
# the stuck state, and leave nothing behind.
#
# Seed 000: node-b's kubelet dies but its rbd client stays alive, so the replacement pod on
# node-a cannot stage the volume: ceph-csi sees a watcher that is not its own and reports
# "rbd image <pool>/<image> is still being used".
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own lab prefix (names, subnet, ports, folder): a developer's `make lab-up` lab is left alone.
export LAB_PREFIX="${DEMO_LAB_PREFIX:-vfdemo}"
unset LAB_DIR LAB_SLOT LAB_NODES
LAB="/usr/bin/python3 tests/lab/lab.py"
trap '$LAB down >/dev/null 2>&1 || true' EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Starting the lab (real Ceph 16 cluster, simulated nodes in network namespaces)"
$LAB up | grep -E '^(CEPH_CONF|LAB_NODES|# lab up)'
# shellcheck disable=SC1091
. ".lab-$LAB_PREFIX/env"
node_ip() { for kv in $LAB_NODES; do [ "${kv%%=*}" = "$1" ] && echo "${kv#*=}"; done; }
IMAGE="$CEPH_POOL/csi-vol-10ff5cc1-c00b-11ee-bb20-fa163e1aa998"

say "An RWO volume is mounted on node-b ($(node_ip node-b)): its rbd client holds a watcher"
rbd create "$IMAGE" --size 64
$LAB hold node-b "$IMAGE" >/dev/null
rbd status "$IMAGE"

say "node-b's kubelet dies; its rbd client does not. The replacement pod lands on node-a"
echo "node-a stages the volume the way ceph-csi's NodeStageVolume does (watchers other than its own?):"
check_from_node_a() {
  $LAB exec node-a "rbd status $IMAGE --format json" | /usr/bin/python3 -c '
import json, sys
watchers = json.load(sys.stdin)["watchers"]
image = sys.argv[1]
if watchers:
    print("  MountVolume.MountDevice failed: rpc error: code = Internal desc = rbd image %s is still being used" % image)
    for w in watchers:
        print("  watcher=%s client.%s cookie=%s" % (w["address"], w["client"], w["cookie"]))
    sys.exit(1)
print("  NodeStageVolume: image %s has no other watcher: staged, pod can start" % image)
' "$IMAGE"
}
check_from_node_a || echo "  => the pod stays in ContainerCreating (seed 000, stuck)"

say "What fixes it (and what volfence.csi automates safely): fence node-b's client"
echo "+ ceph osd blocklist add $(node_ip node-b)"
ceph osd blocklist add "$(node_ip node-b)"
for _ in $(seq 1 50); do
  [ "$(rbd status "$IMAGE" --format json)" = '{"watchers":[]}' ] && break
  sleep 0.2
done
check_from_node_a
echo "+ ceph osd blocklist ls"
ceph osd blocklist ls 2>&1

say "Stopping the lab"
$LAB down
trap - EXIT

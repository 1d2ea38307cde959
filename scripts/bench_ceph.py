#!/usr/bin/env python3
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark the Ceph modules' code paths against the lab (needs `make lab-up` and the bindings).

    .venv/bin/python scripts/bench_ceph.py [--baseline-sample 20] [--images 1000]

1. Fencing a /24 (254 hosts), side by side in one run:
   - range mode: one `osd blocklist range add` (ceph_blocklist, cidr_mode=range);
   - parallel per-address mode: 254 adds from a bounded thread pool over ONE librados
     connection (ceph_blocklist, cidr_mode=addresses);
   - the sequential baseline ceph-csi falls back to: one `ceph osd blocklist add` process per
     address, one after the other. It is sampled (--baseline-sample addresses, then
     extrapolated to 254; the output says so) to keep the run short.
2. Watcher audit of --images images: rbd_watchers_info's path (one connection, read-only opens,
   watchers and metadata) vs one `rbd status` process per image, in sequence; and the failover's fence read
   of the same images, with their locks too (issue 43), against the same read without them.

The modules' own code (module_utils) is timed, with the connection set-up and the reads that
the modules do (blocklist, daemon maps) included; Ansible's start-up is not. The CIDR fenced is
198.51.100.0/24 (TEST-NET-2): a blocklist entry is only an OSD map record, no packet is sent to
it. Only what the benchmark added is removed afterwards (its entries, its images).

Results: .cache/bench/ceph.json and a table on stdout. Exit status 1 when a goal is missed.
"""

import json
import os
import subprocess
import sys
import time
import uuid

from volfence_lab.lab import import_roots, read_env

from benchtools import COLLECTIONS, bench_parser  # COLLECTIONS: the collection as make setup links it

CIDR = "198.51.100.0/24"
# fence_read_extra_ratio: the locks read beside the watchers and metadata (issue 43) in the same open cost at most a
# quarter more than the same read without them (a ratio, so that the machine's load, which slows both, does not decide;
# measured at a load of 10: 12 % more, 2.1 ms an image).
GOALS = {"fence_speedup": 50.0, "fence_range_seconds": 2.0, "audit_speedup": 5.0, "audit_seconds": 5.0,
         "fence_read_extra_ratio": 0.25}


def lab_env():
    env = read_env()  # the lab's own rule for where a lab lives (LAB_DIR, LAB_PREFIX)
    if env is None:
        sys.exit("bench_ceph: no lab running: start it with `make lab-up`")
    return env


def main(argv=None):
    parser = bench_parser(__doc__, "ceph.json")
    parser.add_argument("--baseline-sample", type=int, default=20,
                        help="addresses added one process each for the sequential baseline (extrapolated to 254)")
    parser.add_argument("--images", type=int, default=1000, help="images in the watcher audit")
    parser.add_argument("--audit-baseline-sample", type=int, default=0,
                        help="time `rbd status` on this many images and extrapolate (0: all of them)")
    parser.add_argument("--workers", type=int, default=64, help="parallel per-address blocklist adds")
    args = parser.parse_args(argv)

    env = lab_env()
    lab_python = os.path.join(env.get("LAB_CEPH_BIN", ""), "ceph-python3")
    if env.get("LAB_CEPH_BIN") and not os.environ.get("VOLFENCE_BENCH_LAB_PYTHON"):
        # The bindings must be the lab release's (a Pacific client cannot read Tentacle's keys).
        # Nothing is installed for that Python: it imports the lab's packages and the collection by path.
        os.execve(lab_python, [lab_python, os.path.abspath(__file__)] + list(argv if argv is not None else sys.argv[1:]),
                  dict(os.environ, VOLFENCE_BENCH_LAB_PYTHON=lab_python,
                       PYTHONPATH=os.pathsep.join(import_roots() + [COLLECTIONS])))
    try:
        import rados  # noqa: F401  pylint: disable=unused-import
        import rbd
    except ImportError as exc:
        sys.exit("bench_ceph: needs the rados/rbd bindings (it runs itself again with the lab release's Python, <lab>/ceph-bin/ceph-python3): %s" % exc)
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import connect, parse_image_spec
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import ensure_blocklist
    from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import image_report

    params = dict(cluster="ceph", conf=env["CEPH_CONF"], keyring=env["CEPH_KEYRING"], key=None,
                  user=env["CEPH_USER"], mon_host=None, timeout=60, backend="rados", command_prefix=None)
    tools = env.get("LAB_CEPH_BIN", "")
    ceph_cli = [os.path.join(tools, "ceph"), "-c", env["CEPH_CONF"], "-k", env["CEPH_KEYRING"], "-n", "client." + env["CEPH_USER"]]
    rbd_cli = [os.path.join(tools, "rbd"), "-c", env["CEPH_CONF"], "-k", env["CEPH_KEYRING"], "-n", "client." + env["CEPH_USER"]]
    cli_env = dict(os.environ)
    cli_env.pop("CEPH_ARGS", None)
    results = {"cidr": CIDR, "hosts": 254, "notes": []}

    def lift():
        with connect(params) as client:
            ensure_blocklist(client, "absent", cidrs=[CIDR])

    # ------------------------------------------------------------------ 1. fencing a /24
    lift()
    started = time.time()
    with connect(params) as client:
        out = ensure_blocklist(client, "present", cidrs=[CIDR], cidr_mode="range", expire=600)
    results["fence_range_seconds"] = round(time.time() - started, 3)
    assert out["cidr_mode"] == "range" and len(out["actions"]) == 1, out
    lift()

    started = time.time()
    with connect(params) as client:
        out = ensure_blocklist(client, "present", cidrs=[CIDR], cidr_mode="addresses", expire=600,
                               workers=args.workers)
    results["fence_parallel_seconds"] = round(time.time() - started, 3)
    results["fence_parallel_workers"] = args.workers
    assert len(out["actions"]) == 254 and not out["failed_actions"], out["failed_actions"]
    lift()

    sample = max(1, min(args.baseline_sample, 254))
    started = time.time()
    for host in range(1, sample + 1):
        subprocess.run(ceph_cli + ["osd", "blocklist", "add", "198.51.100.%d" % host, "600"], env=cli_env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampled = time.time() - started
    results["fence_sequential_sampled_addresses"] = sample
    results["fence_sequential_sampled_seconds"] = round(sampled, 3)
    results["fence_sequential_seconds"] = round(sampled / sample * 254, 3)
    results["fence_sequential_extrapolated"] = sample < 254
    if sample < 254:
        results["notes"].append("sequential fence baseline: %d addresses timed, extrapolated to 254" % sample)
    lift()
    results["fence_speedup_parallel"] = round(results["fence_sequential_seconds"] / results["fence_parallel_seconds"], 1)
    results["fence_speedup_range"] = round(results["fence_sequential_seconds"] / results["fence_range_seconds"], 1)

    # ------------------------------------------------------------------ 2. watcher audit
    prefix = "bench-%s" % uuid.uuid4().hex[:6]
    names = ["%s-%04d" % (prefix, i) for i in range(args.images)]
    lab_py = [sys.executable, "-m", "volfence_lab"]
    lab_env_vars = dict(os.environ, LAB_DIR=env["LAB_DIR"], LAB_PREFIX=env["LAB_PREFIX"], LAB_SLOT=env["LAB_SLOT"],
                        LAB_NODES=env["LAB_NODES"])
    with connect(params) as client:
        ioctx = client.cluster.open_ioctx(env.get("CEPH_POOL", "rbd"))
        creator = rbd.RBD()
        client.run_parallel(lambda name: creator.create(ioctx, name, 4 * 1024 * 1024), names, 16)
        held = names[:3]
        try:
            for name in held:
                subprocess.run(lab_py + ["hold", "node-b", "%s/%s" % (env.get("CEPH_POOL", "rbd"), name)],
                               env=lab_env_vars, check=True, stdout=subprocess.DEVNULL)
            specs = [parse_image_spec("%s/%s" % (env.get("CEPH_POOL", "rbd"), n)) for n in names]

            started = time.time()
            with connect(params) as auditor:
                inspected = auditor.inspect_images(specs, metadata=True, workers=16)
            reports = [image_report(spec, raw) for spec, raw, error in inspected if error is None]
            results["audit_module_seconds"] = round(time.time() - started, 3)
            assert len(reports) == len(specs), [e for _s, _r, e in inspected if e][:3]
            results["audit_images"] = len(specs)
            results["audit_in_use"] = sum(1 for r in reports if r["in_use"])
            assert results["audit_in_use"] == len(held), results["audit_in_use"]

            # The failover's fence read (issue 43): the same images with their locks, in the same read-only open;
            # medians of 3 each way, alternating, so that the extra read's cost is not the machine's noise.
            plain, with_locks = [], []
            for _round in range(3):
                for locks, into in ((False, plain), (True, with_locks)):
                    started = time.time()
                    with connect(params) as reader:
                        read = reader.inspect_images(specs, metadata=True, workers=16, locks=locks)
                    into.append(time.time() - started)
                    assert not [e for _s, _r, e in read if e], [e for _s, _r, e in read if e][:3]
            results["fence_read_seconds"] = round(sorted(with_locks)[1], 3)
            results["fence_read_without_locks_seconds"] = round(sorted(plain)[1], 3)
            results["fence_read_extra_ms_per_image"] = round(
                (results["fence_read_seconds"] - results["fence_read_without_locks_seconds"]) * 1000.0 / len(specs), 3)

            timed = specs if not args.audit_baseline_sample else specs[:args.audit_baseline_sample]
            started = time.time()
            for spec in timed:
                subprocess.run(rbd_cli + ["status", str(spec), "--format", "json"], env=cli_env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            elapsed = time.time() - started
            results["audit_cli_sampled_images"] = len(timed)
            results["audit_cli_seconds"] = round(elapsed / len(timed) * len(specs), 3)
            if len(timed) < len(specs):
                results["notes"].append("rbd status baseline: %d images timed, extrapolated to %d"
                                        % (len(timed), len(specs)))
            results["audit_speedup"] = round(results["audit_cli_seconds"] / results["audit_module_seconds"], 1)
        finally:
            for name in held:
                subprocess.run(lab_py + ["release", "node-b", "%s/%s" % (env.get("CEPH_POOL", "rbd"), name)],
                               env=lab_env_vars, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # A released holder's watch lingers until it times out: retry removals for a while.
            pending = list(names)
            deadline = time.time() + 90
            while pending and time.time() < deadline:
                failed = []
                for name, _result, error in client.run_parallel(
                        lambda n: _remove(rbd, creator, ioctx, n), pending, 16):
                    if error is not None or _result is False:
                        failed.append(name)
                pending = failed
                if pending:
                    time.sleep(2)
            if pending:
                results["notes"].append("%d bench images could not be removed: %s..." % (len(pending), pending[:3]))
            ioctx.close()

    results["goals"] = GOALS
    results["pass"] = {
        "fence_speedup": results["fence_speedup_parallel"] >= GOALS["fence_speedup"],
        "fence_range_seconds": results["fence_range_seconds"] <= GOALS["fence_range_seconds"],
        "audit_speedup": results["audit_speedup"] >= GOALS["audit_speedup"],
        "audit_seconds": results["audit_module_seconds"] <= GOALS["audit_seconds"],
        "fence_read_extra_ratio": (results["fence_read_seconds"]
                                   <= results["fence_read_without_locks_seconds"] * (1 + GOALS["fence_read_extra_ratio"])),
    }
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
        handle.write("\n")
    print_table(results, args.output)
    return 0 if all(results["pass"].values()) else 1


def _remove(rbd, creator, ioctx, name):
    try:
        creator.remove(ioctx, name)
    except rbd.ImageNotFound:
        return True
    except rbd.ImageBusy:
        return False
    return True


def print_table(r, output):
    ok = lambda key: "ok" if r["pass"][key] else "MISSED"  # noqa: E731
    seq = "%.1f s%s" % (r["fence_sequential_seconds"], " (%d timed, extrapolated)" % r[
        "fence_sequential_sampled_addresses"] if r["fence_sequential_extrapolated"] else "")
    rows = [
        ("fence %s (254 hosts)" % r["cidr"], "", "", ""),
        ("  range mode (1 command)", "%.2f s" % r["fence_range_seconds"], "%.0fx" % r["fence_speedup_range"],
         "<= 2 s: %s" % ok("fence_range_seconds")),
        ("  parallel per-address (%d workers, 1 conn)" % r["fence_parallel_workers"],
         "%.2f s" % r["fence_parallel_seconds"], "%.0fx" % r["fence_speedup_parallel"],
         ">= 50x: %s" % ok("fence_speedup")),
        ("  sequential `ceph osd blocklist add` x254", seq, "1x", "baseline"),
        ("watcher audit, %d images (%d in use)" % (r["audit_images"], r["audit_in_use"]), "", "", ""),
        ("  rbd_watchers_info (1 conn, read-only opens)", "%.2f s" % r["audit_module_seconds"],
         "%.1fx" % r["audit_speedup"], ">= 5x, <= 5 s: %s/%s" % (ok("audit_speedup"), ok("audit_seconds"))),
        ("  `rbd status` per image, in sequence", "%.1f s" % r["audit_cli_seconds"], "1x", "baseline"),
        ("failover's fence read, with the locks (median of 3)", "%.2f s" % r["fence_read_seconds"], "",
         "<= 25%% more: %s (%.3f ms/image more)" % (ok("fence_read_extra_ratio"), r["fence_read_extra_ms_per_image"])),
        ("  the same read without the locks", "%.2f s" % r["fence_read_without_locks_seconds"], "", "baseline"),
    ]
    width = max(len(row[0]) for row in rows)
    print("%-*s  %12s  %7s  %s" % (width, "benchmark", "time", "speedup", "goal"))
    for row in rows:
        print("%-*s  %12s  %7s  %s" % (width, row[0], row[1], row[2], row[3]))
    for note in r["notes"]:
        print("note: " + note)
    print("results: %s" % output)


if __name__ == "__main__":
    sys.exit(main())

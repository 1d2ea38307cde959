#!/usr/bin/env python3
"""Record what the storage_incidents event source sees, as JSON lines, for the unit tests' replays.

    .venv/bin/python scripts/record_watch_stream.py OUT.jsonl --seconds 60 [--kubeconfig PATH]

Lists then watches the kinds the source watches (_decisions/incidents.WATCHED) with the source's own
ListWatch, and writes one line per update: {"t": seconds since the start, "kind", "type" (RELIST, BROKEN
or the watch event's type), "payload"}, after a header line {"started": ISO time, "kinds": [...]}.
metadata.managedFields is left out. The unit tests replay a
recording into IncidentTracker, evaluating at the recorded times
(tests/unit/plugins/module_utils/fixtures/watch-streams/).
"""

import argparse
import datetime
import json
import os
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.volfence.csi.plugins.module_utils._decisions.incidents import WATCHED  # noqa: E402
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import connect_params  # noqa: E402
from ansible_collections.volfence.csi.plugins.module_utils._k8s.watch import ListWatch, start_watches  # noqa: E402


def slim(payload):
    """The object (or list of objects) without metadata.managedFields."""
    if isinstance(payload, list):
        return [slim(o) for o in payload]
    if isinstance(payload, dict) and isinstance(payload.get("metadata"), dict):
        payload = dict(payload, metadata=dict((k, v) for k, v in payload["metadata"].items() if k != "managedFields"))
    return payload


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    args = parser.parse_args()
    api = connect_params(dict(kubeconfig=args.kubeconfig))
    started, lock, stop = time.time(), threading.Lock(), threading.Event()
    with open(args.out, "w") as out:
        # the header: when the recording started (the replays evaluate at started + t)
        out.write(json.dumps({"started": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(),
                              "kinds": sorted(WATCHED)}, sort_keys=True) + "\n")
        def deliver(kind, event_type, payload):
            with lock:
                if stop.is_set():
                    return
                out.write(json.dumps({"t": round(time.time() - started, 3), "kind": kind, "type": event_type,
                                      "payload": slim(payload)}, sort_keys=True) + "\n")
                out.flush()
        watches = [ListWatch(api, kind, path, field_selector=selector, watch_timeout=30)
                   for kind, (path, selector) in sorted(WATCHED.items())]
        start_watches(watches, deliver, stop)
        stop.wait(args.seconds)
        with lock:
            stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())

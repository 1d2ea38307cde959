"""CLI: python -m kubeemu --host 127.0.0.1 --port PORT [--version v1.30.2]
[--kubeconfig-out PATH] [--state-file PATH]"""

import argparse
import signal
import sys
import threading

from .server import EmulatorServer
from .store import DEFAULT_VERSION


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kubeemu", description="Kubernetes API emulator (HTTP)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--version", default=DEFAULT_VERSION, help="gitVersion served on /version")
    ap.add_argument("--kubeconfig-out", help="write a kubeconfig (context volfence-lab) here")
    ap.add_argument("--state-file", help="load state from / dump state to this JSON file")
    ap.add_argument("--history", type=int, default=10000, help="watch history size (events)")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = ap.parse_args(argv)

    srv = EmulatorServer(host=args.host, port=args.port, version=args.version,
                         state_file=args.state_file, history=args.history, verbose=args.verbose)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    srv.start()
    if args.kubeconfig_out:
        srv.write_kubeconfig(args.kubeconfig_out)
    sys.stderr.write("kubeemu listening on %s (version %s)\n" % (srv.url, args.version))
    sys.stderr.flush()
    print("ready", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

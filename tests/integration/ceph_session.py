"""The integration tests' own Ceph client: `ceph` commands sent as the ceph CLI sends them, over one
connection kept for the whole test session.

Run by labtools.Lab under the lab release's Python (<lab>/ceph-bin/ceph-python3), which has that
release's rados binding and ceph_argparse. One request per line on stdin, {"args": [...], "format":
"json" or null}; one answer per line on stdout, {"rc", "stdout", "stderr"}, what the `ceph` CLI of
the release would have exited with and printed (src/ceph.in: find_cmd_target, the target's
get_command_descriptions, validate_command, json_command; stdout a blank line then the output with
--format json; stderr the status text, or "Error <ERRNO>: ..." on a failure).

Why: the tests read and reset the blocklist before and after nearly every Ceph-facing test. A
`ceph` process spends about 0.16 s of CPU starting Python, connecting and authenticating; this
connection does it once. The collection's own code never goes through here: its CLI backend runs the
real `ceph` program.
"""

import errno
import json
import os
import sys

import rados
from ceph_argparse import find_cmd_target, json_command, parse_json_funcsigs, validate_command

TIMEOUT = 60
VALIDATED = {}   # (target, args) -> validate_command's answer


# The answers' own channel: ceph_argparse prints some of its messages to stdout, which goes to stderr.
CHANNEL = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr


def answer(rc, stdout="", stderr=""):
    CHANNEL.write(json.dumps({"rc": rc, "stdout": stdout, "stderr": stderr}) + "\n")
    CHANNEL.flush()


def run(cluster, sigdicts, args, output_format):
    target = find_cmd_target(args)
    if target not in sigdicts:
        ret, outbuf, outs = json_command(cluster, target=target, prefix="get_command_descriptions",
                                         timeout=TIMEOUT)
        if ret:
            return abs(ret), "", "Error %s: %s\n" % (errno.errorcode.get(abs(ret), "Unknown"), outs)
        sigdicts[target] = parse_json_funcsigs(outbuf.decode("utf-8"), "cli")
    # The same arguments validate to the same command against the same signatures: validated once per
    # session (validate_command deep-copies the signatures it tries, about 0.03 CPU-s a call).
    key = (str(target), tuple(args))
    if key not in VALIDATED:
        VALIDATED[key] = validate_command(sigdicts[target], args, False)
    valid = dict(VALIDATED[key]) if VALIDATED[key] else None
    if not valid:
        return -1, "", "invalid command: the CLI says why"  # the caller runs the CLI, which prints the usage
    if output_format:
        valid["format"] = output_format
    ret, outbuf, outs = json_command(cluster, target=target, argdict=valid, timeout=TIMEOUT)
    if ret < 0 or ret > 0:
        ret = abs(ret)
        return ret, "", "Error %s: %s\n" % (errno.errorcode.get(ret, "Unknown"), outs)
    stdout = ("\n" if output_format and output_format.startswith("json") else "") + outbuf.decode("utf-8")
    return 0, stdout, (outs + "\n") if outs else ""


def main(conf, keyring, user):
    cluster = rados.Rados(conffile=conf, name="client." + user, conf={"keyring": keyring})
    cluster.connect(timeout=TIMEOUT)
    sigdicts = {}
    answer(0, "connected")
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer(*run(cluster, sigdicts, request["args"], request.get("format")))
        except Exception as exc:  # the caller runs the real CLI instead and says why if that fails too
            answer(-1, "", "ceph_session: %s: %s" % (type(exc).__name__, exc))
    cluster.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])

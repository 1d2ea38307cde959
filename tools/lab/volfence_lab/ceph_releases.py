#!/usr/bin/python3
"""The Ceph releases the lab runs, and the Debian roots that bring the newer ones to this machine.

Pacific 16.2 is this machine's own Debian bookworm packages. Reef 18.2 and Tentacle 20.2 come from
Debian's newer suites (trixie, forky) as complete Debian roots built with mmdebstrap, once, into a
cache shared by every checkout (VOLFENCE_CEPH_ROOTS, default ~/.cache/volfence/ceph-roots). A root
is used only when its stamp says it was built completely from today's recipe; anything else there is
removed and rebuilt, never half-used.

A command runs "with Ceph 20" through a small wrapper script (see wrapper_script): a private mount
namespace in which the root sees this machine's /proc, /sys, /dev, /run (network namespaces), /tmp,
the home folder, the checkout and the lab folder, then chroot. That is also how a real admin host
with an older distribution can run a current Ceph client (docs/ceph-releases.md).

Usage: ceph_releases.py build [RELEASE ...]   build the missing roots (default: all that need one)
       ceph_releases.py status                  one line per release: version and root
"""

import fcntl
import glob
import hashlib
import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# suite None: this machine's own packages (scripts/setup.sh installs them).
RELEASES = {
    "20": {"name": "Tentacle", "suite": "forky"},
    "18": {"name": "Reef", "suite": "trixie"},
    "16": {"name": "Pacific", "suite": None},
}
DEFAULT = "20"
PACKAGES = ["ceph-mon", "ceph-osd", "ceph-mgr", "ceph-common", "python3-rados", "python3-rbd",
            "python3-pytest", "iproute2"]
# Debian's mirror keeps these suites' Release files past their Valid-Until date.
APT_OPTIONS = ['Acquire::Check-Valid-Until "false"']


class ReleaseError(Exception):
    pass


def check_release(release):
    release = str(release or DEFAULT)
    if release not in RELEASES:
        raise ReleaseError("LAB_CEPH must be one of %s (Ceph major release), got %r"
                           % (", ".join(sorted(RELEASES, key=int)), release))
    return release


def roots_dir():
    return os.environ.get("VOLFENCE_CEPH_ROOTS") or os.path.join(os.path.expanduser("~"), ".cache", "volfence",
                                                                 "ceph-roots")


def recipe(release):
    suite = RELEASES[release]["suite"]
    text = json.dumps({"suite": suite, "packages": PACKAGES, "apt": APT_OPTIONS, "variant": "apt"}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def root_path(release):
    """The Debian root of a release, or None when this machine's own packages are that release."""
    release = check_release(release)
    if RELEASES[release]["suite"] is None:
        return None
    return os.path.join(roots_dir(), "ceph-%s-%s" % (release, RELEASES[release]["suite"]))


def _stamp_path(root):
    return root + ".ready"


def read_stamp(release):
    root = root_path(release)
    if root is None:
        return {"version": host_version()}
    try:
        with open(_stamp_path(root)) as handle:
            stamp = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    if stamp.get("recipe") != recipe(release) or not os.path.exists(os.path.join(root, "usr", "bin", "ceph")):
        return None
    return stamp


def host_version():
    return _version_of(["/usr/bin/ceph", "--version"])  # not a lab wrapper a PATH may hold


def _version_of(argv):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                             timeout=60).stdout
    except OSError:
        return None
    words = out.split()
    return words[2] if len(words) > 2 and words[:2] == ["ceph", "version"] else None


def build(release, log=sys.stderr):
    """Build a release's root unless a complete one is there. Returns its stamp."""
    release = check_release(release)
    root = root_path(release)
    if root is None:
        version = host_version()
        if not version or not version.startswith(release + "."):
            raise ReleaseError("Ceph %s is this machine's own packages, but `ceph --version` says %s "
                               "(run scripts/setup.sh)" % (release, version))
        return {"version": version}
    os.makedirs(roots_dir(), exist_ok=True)
    with open(os.path.join(roots_dir(), ".lock-" + release), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per root; others wait for it and reuse it
        stamp = read_stamp(release)
        if stamp:
            return stamp
        partial = root + ".partial"
        for path in (partial, root, _stamp_path(root)):
            _remove(path)
        if not shutil.which("mmdebstrap"):
            raise ReleaseError("mmdebstrap is not installed (scripts/setup.sh installs it)")
        suite = RELEASES[release]["suite"]
        argv = ["mmdebstrap", "--variant=apt", "--include=" + ",".join(PACKAGES)]
        argv += ["--aptopt=" + opt for opt in APT_OPTIONS] + [suite, partial]
        started = time.time()
        log.write("ceph_releases: building Ceph %s (%s) from Debian %s into %s\n"
                  % (release, RELEASES[release]["name"], suite, root))
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=1800)
        if proc.returncode != 0:
            _remove(partial)
            raise ReleaseError("building the Ceph %s root failed (rc=%d): %s\n%s" % (
                release, proc.returncode, " ".join(shlex.quote(a) for a in argv), proc.stdout[-3000:]))
        version = _version_of(["chroot", partial, "ceph", "--version"])
        if not version or not version.startswith(release + "."):
            _remove(partial)
            raise ReleaseError("Debian %s gave Ceph %s, not %s.x: the lab's release table needs updating"
                               % (suite, version, release))
        os.rename(partial, root)
        stamp = {"recipe": recipe(release), "version": version, "suite": suite,
                 "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "seconds": round(time.time() - started, 1)}
        with open(_stamp_path(root) + ".tmp", "w") as handle:
            json.dump(stamp, handle)
        os.rename(_stamp_path(root) + ".tmp", _stamp_path(root))
        log.write("ceph_releases: Ceph %s root ready in %.0f s\n" % (version, time.time() - started))
        return stamp


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def class_dir(release):
    """The OSD object classes' folder (cls_rbd, cls_lock) of a release, as its daemons see it."""
    root = root_path(release) or "/"
    found = sorted(glob.glob(os.path.join(root, "usr", "lib", "*", "rados-classes")))
    if not found:
        raise ReleaseError("Ceph %s has no rados-classes folder under %s/usr/lib" % (release, root.rstrip("/")))
    return "/" + os.path.relpath(found[0], root)


def passwd_home():
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def visible_paths(extra=()):
    """What a command in a root must see of this machine, outermost first, nested ones left out."""
    # HOME, and the home the password database gives (Ansible's remote temporary folder is `~<user>`'s,
    # which is the latter where HOME was changed, as in CI runners or scripts/newcomer.sh)
    wanted = ["/proc", "/sys", "/dev", "/run", "/tmp", os.path.expanduser("~"), passwd_home()]
    wanted += [os.path.abspath(p) for p in extra]
    chosen = []
    for path in wanted:
        if path and path != "/" and not any(path == c or path.startswith(c.rstrip("/") + "/") for c in chosen):
            chosen.append(path)
    return chosen


def wrapper_script(release, program, extra_paths=(), first=""):
    """A /bin/sh script that runs `program` (with the script's arguments) with the release's Ceph;
    `first`, shell lines run before anything else (the lab's Python: python_starter.starter_hook)."""
    release = check_release(release)
    root = root_path(release)
    header = "#!/bin/sh\n# Ceph %s (%s): %s\n%s" % (release, RELEASES[release]["name"], program, first)
    if root is None:
        return header + "exec %s \"$@\"\n" % shlex.quote(program)
    paths = " ".join(shlex.quote(p) for p in visible_paths(extra_paths))
    # A private mount namespace per command (the script runs itself again inside it): its binds
    # vanish with it, so nothing is left mounted, and `slave` propagation still shows it network
    # namespaces and mounts made later. chroot starts in /, so the caller's folder is entered again.
    return header + (
        "# Debian %(suite)s root, seeing this machine's %(paths)s\n"
        "root=%(qroot)s\n"
        "# Already inside the root (a program of the lab release starting another): run it here.\n"
        "if [ \"$(stat -c %%d:%%i / 2>/dev/null)\" = \"$(stat -c %%d:%%i \"$root\" 2>/dev/null)\" ]; then\n"
        "  exec %(program)s \"$@\"\n"
        "fi\n"
        "if [ \"$1\" != --volfence-inside ]; then\n"
        "  exec unshare --mount --propagation slave \"$0\" --volfence-inside \"$@\"\n"
        "fi\n"
        "shift\n"
        "# The root a mount point of its own: `ip netns exec` run inside it remounts / as a slave.\n"
        "mount --bind \"$root\" \"$root\" || exit 125\n"
        "for d in %(paths)s; do\n"
        "  mkdir -p \"$root$d\" && mount --rbind \"$d\" \"$root$d\" || exit 125\n"
        "done\n"
        "exec chroot \"$root\" /bin/sh -c 'cd \"$1\" 2>/dev/null || cd /; shift; exec \"$@\"' sh \"$PWD\" %(program)s \"$@\"\n"
    ) % {"suite": RELEASES[release]["suite"], "paths": paths, "qroot": shlex.quote(root),
         "program": shlex.quote(program)}


def main(argv):
    command = argv[0] if argv else "status"
    try:
        if command == "build":
            wanted = [check_release(r) for r in argv[1:]] or sorted(RELEASES, key=int)
            with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
                list(pool.map(build, wanted))
            return 0
        if command == "status":
            for release in sorted(RELEASES, key=int):
                stamp = read_stamp(release)
                print("%s %-8s %-9s %s" % (release, RELEASES[release]["name"],
                                           (stamp or {}).get("version") or "missing",
                                           root_path(release) or "(this machine)"))
            return 0
    except ReleaseError as exc:
        sys.stderr.write("ceph_releases: error: %s\n" % exc)
        return 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

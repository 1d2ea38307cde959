"""A module's Python start-up, paid once per interpreter and environment: the Python that runs a module
(AnsiballZ: `python /path/AnsiballZ_x.py`, or the payload on standard input) is a fork of a Python of
that interpreter and environment that has already imported the third-party libraries and the standard
library modules the modules import (PREIMPORTS), and then runs the payload as the interpreter would.

Why: a Kubernetes module spends about half its CPU importing `kubernetes` (and with it pydantic,
requests, oauthlib, yaml) before it reads its arguments (kubernetes.core.k8s_info: 0.66 CPU-s started
afresh, 0.34 in a starter's fork); the integration tests run modules thousands of times on 2 cores.
Nothing of ansible-core or of any collection is imported ahead: the
payload imports ansible.module_utils and the collections' module_utils from its own zip, as it does in
a fresh interpreter, so what the payload carries is tested as it is. The libraries imported ahead are
the interpreter's own installed ones, imported in the same environment (the starter is keyed by it:
`kubernetes` reads KUBECONFIG at import), before any payload ran.

How it is reached: the lab's interpreters (its inventory's `ansible_python_interpreter`, wrappers that
`interpreter_wrapper` writes) call the client when VOLFENCE_PYTHON_STARTERS says `OWNER:FOLDER` (the
pid of the process that owns the starters, and their folder), which only a test run sets
(ansible_runs.Starters): without it they run the interpreter itself, as a user's cluster does. The
client takes the variable out of the environment, so the program never sees it. The first run of an
interpreter and environment (`environment_key`) makes the folder if needed, starts their starter (the
interpreter running this file, `serve`) and runs the interpreter itself; the runs after it go through the
starter once it listens. A starter ends when its owner ends (it then removes the folder: a killed owner
removed nothing), or on SIGTERM (the owner's own stop, which removes the folder).

The modules' own code is compiled once per source text, not once per run: the payload's modules are
imported from its zip, which Python compiles on every import (zipimport writes no bytecode): more
than half of a module's CPU in a starter's fork (kubernetes.core.k8s_info: 0.34-0.39 CPU-s a run in a
fork, 0.14-0.17 with its code compiled once; 10 runs each, the machine at a load of about 5). The starter's forks keep each compiled module in its folder (`compiled/`), keyed by the
source text, the interpreter's bytecode tag and optimization level, and load it from there as Python
loads a .pyc; the code then names the run's own zip path, as if compiled there (tracebacks point at
this run's payload). What runs is still the payload's source: a changed source is another key.

The protocol and the fork's set-up are ansible_starter's (one implementation: `Starter`, `client`).
This file runs under every Python the lab's hosts have (3.9 and newer): the standard library only.
"""

import gc
import hashlib
import json
import marshal
import os
import select
import shutil
import sys
import types

VARIABLE = "VOLFENCE_PYTHON_STARTERS"
# What a Python reads as it starts (the dynamic loader, the interpreter, its site, its streams' encoding),
# what the wrappers use to reach it, and what the PREIMPORTS read at import (kubernetes: KUBECONFIG). A
# starter serves only runs whose values of these are its own; any other variable may differ (each run
# gets its own whole environment), and a starter whose imports read one it does not key on serves nothing.
KEYED = ("HOME", "PATH", "LANG", "LANGUAGE", "KUBECONFIG", "PYDANTIC_DISABLE_PLUGINS", "APPENGINE_RUNTIME")
KEYED_PREFIXES = ("PYTHON", "_PYTHON", "LC_", "LD_")
# What the modules import before they read their arguments, beyond ansible-core and the collections (which
# are never imported ahead): imported when the interpreter has them, skipped when it has not.
PREIMPORTS = (
    # the standard library as ansible.module_utils.basic and the AnsiballZ wrapper use it
    "base64", "datetime", "errno", "grp", "hashlib", "inspect", "json", "locale", "platform", "pwd", "re",
    "runpy", "select", "shlex", "shutil", "signal", "subprocess", "syslog", "tempfile", "traceback", "types",
    "typing", "dataclasses", "zipfile", "zipimport", "importlib.util", "ipaddress", "socket", "ssl", "uuid",
    "logging", "copy", "collections.abc", "functools", "string", "textwrap", "time", "enum", "pathlib",
    "decimal", "fractions", "contextlib", "concurrent.futures", "email.utils", "http.client", "urllib.parse",
    # the Kubernetes modules' libraries (kubernetes.core and volfence.csi's Kubernetes modules)
    "yaml", "urllib3", "requests", "jsonpatch", "kubernetes", "kubernetes.client", "kubernetes.config",
    "kubernetes.dynamic", "kubernetes.dynamic.exceptions",
    # the Ceph modules' bindings
    "rados", "rbd",
)
HERE = os.path.abspath(__file__)


def keyed(name):
    return name in KEYED or name.startswith(KEYED_PREFIXES)


def environment_key(real, env):
    """The interpreter command and the KEYED variables of env: 32 hex digits (the socket's path must fit
    in 108 bytes)."""
    stable = sorted(item for item in env.items() if keyed(item[0]))
    return hashlib.sha256(json.dumps([real, stable]).encode()).hexdigest()[:32]


class ReadsRecorded(dict):
    """os.environ while the starter imports: the names read are kept (`read`); a library that walks the
    whole environment at import records "*"."""

    def __init__(self, environ):
        super().__init__()
        self.environ = environ
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return self.environ[name]

    def __contains__(self, name):
        self.read.add(name)
        return name in self.environ

    def get(self, name, default=None):
        self.read.add(name)
        return self.environ.get(name, default)

    def __iter__(self):
        self.read.add("*")
        return iter(self.environ)

    def __len__(self):
        return len(self.environ)

    def keys(self):
        self.read.add("*")
        return self.environ.keys()

    def items(self):
        self.read.add("*")
        return self.environ.items()

    def copy(self):
        self.read.add("*")
        return self.environ.copy()

    def __getattr__(self, name):   # setdefault, putenv's users...: the real environment's
        self.read.add("*")
        return getattr(self.environ, name)


def import_ahead(names):
    """Import the names this interpreter has; the environment variables they read at import, as a set."""
    environ = os.environ
    recorder = os.environ = ReadsRecorded(environ)
    try:
        for name in names:
            try:
                __import__(name)
            except Exception:   # a library this interpreter does not have: the program finds it missing too
                pass
    finally:
        os.environ = environ
    return recorder.read


def servable(args):
    """The interpreter's arguments the starter runs as the interpreter would: none (the program on
    standard input) or a program's path and its arguments. Options (-c, -m, -u ...) run the interpreter."""
    return not args or (not args[0].startswith("-") and os.path.isfile(args[0]))


def client(real, args):
    """Run the interpreter `real` (a command: the interpreter, or a wrapper that runs it) with `args`,
    through the starter of its environment when the test run has one; never returns."""
    owner, _, folder = os.environ.pop(VARIABLE, "").partition(":")   # (pop: unset for what is exec'd below)
    direct = list(real) + list(args)
    if not owner.isdigit() or not os.path.isabs(folder) or not servable(args):
        os.execv(direct[0], direct)
    key = environment_key(real, os.environ)
    sock = os.path.join(folder, key + ".sock")
    if not os.path.exists(sock):
        start_once(owner, folder, key, real)
        os.execv(direct[0], direct)
    sys.path.insert(0, os.path.dirname(HERE))
    from ansible_starter import client as run_through
    run_through(sock, list(args), fallback=direct)


def claim(path):
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except OSError:
        return False


def start_once(owner, folder, key, real):
    """The starter of an interpreter and environment, started by the first run that claims it, in the
    background (the run itself does not wait for it)."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not claim(os.path.join(folder, key + ".claimed")):
        return
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        if os.fork():
            os._exit(0)
        # the starter holds none of the run's streams: the module's caller waits for their end
        null = os.open(os.devnull, os.O_RDWR)
        log = os.open(os.path.join(folder, key + ".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(log, 2)
        os.closerange(3, 65536)
        argv = list(real) + [HERE, "serve", os.path.join(folder, key + ".sock"), owner]
        os.execv(argv[0], argv)
    finally:
        os._exit(127)


# ----------------------------------------------------------------------------- in the starter's forks

def become_the_program(request, fds, own_fds):
    """In the fork: the interpreter at the start of the program it was given (`python PATH ARGS` or
    `python` reading the program from standard input), then the program, then the interpreter's end."""
    import builtins
    import types
    from ansible_starter import exit_as_python_does, take_the_request

    take_the_request(request, fds, own_fds)
    args = request["argv"]
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __cached__=None)
    if args:
        filename = args[0]
        sys.argv = list(args)
        sys.path[:] = [os.path.dirname(os.path.realpath(filename))] + BASE_PATH
        main.__file__ = filename
        with open(filename, "rb") as handle:
            source = handle.read()
    else:
        filename = main.__file__ = "<stdin>"
        sys.argv = [""]
        sys.path[:] = [""] + BASE_PATH
        source = sys.stdin.buffer.read()
    for name in ("ansible_starter", "python_starter"):
        sys.modules.pop(name, None)
    sys.modules["__main__"] = main
    code = 0
    try:
        exec(compile(source, filename, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:   # as the interpreter: the traceback, then death by SIGINT
        import signal
        import traceback
        traceback.print_exc()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    exit_as_python_does(code)


BASE_PATH = []


def named(code, filename):
    """code and the code objects in it, naming `filename` (compile's second argument)."""
    consts = tuple(named(const, filename) if isinstance(const, types.CodeType) else const
                   for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def compile_once(folder):
    """Make zipimport compile each module source once for all the starter's forks: the code kept in
    `folder`, keyed by the source, this interpreter's bytecode tag and optimization level (zipimport's
    _compile_source(pathname, source), the one place where it compiles, in Python 3.9 to 3.14)."""
    import zipimport
    compile_source = zipimport._compile_source
    tag = "%s-%d" % (sys.implementation.cache_tag, sys.flags.optimize)

    def cached(pathname, source):
        path = os.path.join(folder, "%s-%s" % (hashlib.sha256(source).hexdigest(), tag))
        try:
            with open(path, "rb") as handle:
                return named(marshal.loads(handle.read()), pathname)
        except (OSError, EOFError, ValueError, TypeError):
            pass
        code = compile_source(pathname, source)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            partial = "%s.%d" % (path, os.getpid())
            with open(partial, "wb") as handle:
                handle.write(marshal.dumps(code))
            os.rename(partial, path)   # whole or absent: a fork reading it never sees half
        except OSError:
            pass
        return code
    zipimport._compile_source = cached


def serve(sock_path, owner):
    """Import PREIMPORTS, listen at sock_path (only once ready: the socket appears by rename), serve
    until `owner` ends or SIGTERM, then remove the socket (and the folder if the owner ended)."""
    import threading
    from ansible_starter import Starter
    gc.disable()   # until each fork: what the starter frees leaves no holes in pages its forks share
    here = sys.path.pop(0)   # this file's folder: a program's Python has its own program's folder there
    BASE_PATH[:] = sys.path
    unkeyed = sorted(name for name in import_ahead(PREIMPORTS) if not keyed(name))
    sys.path.insert(0, here)
    if unkeyed:   # a run with another value would find what this one read: serve nothing
        sys.stderr.write("python_starter: the imports read %s, not in the key: not serving\n" % ", ".join(unkeyed))
        return 1
    if threading.active_count() != 1:   # a fork would inherit their locks: serve nothing
        sys.stderr.write("python_starter: threads after the imports: not serving\n")
        return 1
    try:
        stop_fd = os.pidfd_open(int(owner))
    except ProcessLookupError:   # the owner is gone already: nothing to serve, and nobody to clean up
        shutil.rmtree(os.path.dirname(sock_path), ignore_errors=True)
        return 0
    except (OSError, AttributeError):   # no pidfd here: nothing served
        return 1
    compile_once(os.path.join(os.path.dirname(sock_path), "compiled"))
    ready = "%s.%d" % (sock_path, os.getpid())
    starter = Starter(ready, become=become_the_program)
    pid_path = sock_path[:-len(".sock")] + ".pid"
    with open(pid_path, "w") as handle:   # for the owner, which stops its starters (SIGTERM) as it ends
        handle.write("%d\n" % os.getpid())
    os.rename(ready, sock_path)
    starter.sock_path = sock_path
    starter.serve(stop_fd)
    for path in (sock_path, pid_path):
        try:
            os.unlink(path)
        except OSError:
            pass
    if select.select([stop_fd], [], [], 0)[0]:   # the owner ended (killed: it removed nothing): its folder goes
        shutil.rmtree(os.path.dirname(sock_path), ignore_errors=True)
    return 0


def interpreter_wrapper(path, real, comment):
    """Write at `path` an interpreter for an inventory: a shell script that runs `real` (a shell command
    line) with its arguments, through the test run's starter when VOLFENCE_PYTHON_STARTERS is set. The
    client runs on this Python, with -I -S (no site: it starts in milliseconds)."""
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n# %s\n" % comment)
        handle.write(starter_hook(sys.executable))
        handle.write("exec %s \"$@\"\n" % real)
    os.chmod(path, 0o755)


def starter_hook(python):
    """The shell line, at the top of an interpreter wrapper, that hands the run to the client when the
    test run has starters; the client runs the wrapper itself ("$0", without the variable) otherwise."""
    return ("[ -n \"$%s\" ] && exec %s -I -S %s client \"$0\" -- \"$@\"\n" % (VARIABLE, python, HERE))


if __name__ == "__main__":
    if sys.argv[1] == "client":
        split = sys.argv.index("--")
        client(sys.argv[2:split], sys.argv[split + 1:])
    else:
        sys.exit(serve(sys.argv[2], sys.argv[3]))

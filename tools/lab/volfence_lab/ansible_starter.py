"""Ansible's start-up, paid once per environment: a process that has imported `ansible` (and read its
configuration) forks a copy of itself for each `ansible` or `ansible-playbook` command, which then runs
the command's own `main()`, exactly what the program's script runs.

Why: a test run starts Ansible about 2,000 times. A fresh `ansible` spends about 0.65 s of CPU importing
ansible-core and reading its configuration before it looks at the command; the machine has 2 cores.
What runs after the fork is ansible-core's unchanged code: the CLI, its workers, the modules (each in a
Python of its own, as AnsiballZ). Nothing of the collection is imported here (docs/lab.md,
"Independent of the code under test").

Because ansible-core reads its configuration (environment, ansible.cfg) at import, a starter serves
only commands run in the environment and folder it was started with: ansible_runs keeps one starter
per environment (`environment_key`). What ansible-core sets up per process at import is set up again
in each fork (`become_the_command`): its local temporary folder (a process's own, removed at its
exit), the signal handlers of a fresh Python, only the command's standard streams open.

The forks of one starter share the modules' payloads (`share_module_payloads`): ansible-core zips each module
with the module_utils it imports (AnsiballZ) once per run, into its local temporary folder, which is a
process's own; building one costs 0.14-0.18 CPU-s on an idle machine (ansible-core 2.21: recursive_finder
parses the module and every module_utils it reaches), and most test commands run one to a dozen modules once. A fork's
payload folder is the starter's, named by the sources a payload can hold (`payload_sources_fingerprint`):
a module or module_utils changed while the starter lives gets a new folder, never an old payload.

Protocol, over a Unix socket: the client (`python -I -S ansible_starter.py client SOCKET -- CMD...`)
sends one JSON line {"argv", "cwd", "env"} with its three standard streams (SCM_RIGHTS); the starter answers
{"pid"} then, when the command ends, {"status"} (a wait status). Signals the client gets (SIGTERM,
SIGINT, SIGHUP) are passed to the command; a client that goes away (killed) takes its command with it
(SIGKILL), as `kill` on a directly started `ansible` ends it. A client that finds no starter runs the
command itself (exec): the starter saves time, it is never needed.
"""

import gc
import glob
import hashlib
import json
import os
import selectors
import shutil
import signal
import socket
import sys

PROGRAMS = {"ansible": "ansible.cli.adhoc", "ansible-playbook": "ansible.cli.playbook"}
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# ansible-core's cache of module payloads in its local temporary folder (executor/module_common.py,
# _find_module_utils: lookup_path), and the starter's folder that its forks share instead (starter_main)
PAYLOAD_CACHE = "ansiballz_cache"
SHARED_PAYLOADS = {"folder": None}


# ----------------------------------------------------------------------------- client (stdlib only)

def client(sock_path, argv, fallback=None):
    """Run argv through the starter at sock_path, or `fallback` (argv itself by default) when there is
    none; never returns."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(sock_path)
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        data = (json.dumps(request) + "\n").encode()
        sent = socket.send_fds(conn, [data], [0, 1, 2])
        conn.sendall(data[sent:])
        reader = conn.makefile("r")
        started = reader.readline()
    except OSError:
        started = ""
    if not started:
        conn.close()
        fallback = fallback or argv
        os.execv(fallback[0], fallback)   # no starter: the command as it is

    def forward(signum, _frame):
        try:
            conn.sendall((json.dumps({"signal": signum}) + "\n").encode())
        except OSError:
            pass
    for signum in FORWARDED:
        signal.signal(signum, forward)
    line = reader.readline()
    if not line:
        sys.stderr.write("ansible_starter: the starter went away while %s ran\n" % argv[0])
        os._exit(255)
    status = json.loads(line)["status"]
    if os.WIFSIGNALED(status):   # die of the command's signal, so the caller sees what it would have seen
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128 + os.WTERMSIG(status))


# ----------------------------------------------------------------------------- starter

class Starter(object):
    """Accepts commands on a Unix socket and runs each in a fork of this process. One thread only: a
    fork of a process with other threads could inherit a lock another thread held."""

    def __init__(self, sock_path, become=None):
        self.sock_path = sock_path
        # what the fork does with a request: become_the_command(request, fds, own_fds), never returning
        self.become = become or become_the_command
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(sock_path)
        self.listener.listen(64)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.wakeup_read, self.wakeup_write = os.pipe()
        os.set_blocking(self.wakeup_write, False)
        self.selector.register(self.wakeup_read, selectors.EVENT_READ, "child")
        self.stop_fd = None
        self.commands = {}   # pid -> client connection
        self.clients = {}    # client connection -> [pid or None, buffered bytes]

    def own_fds(self):
        fds = [self.listener.fileno(), self.wakeup_read, self.wakeup_write]
        fds += [self.stop_fd] if self.stop_fd is not None else []
        fds += [conn.fileno() for conn in self.clients]
        selector_fd = getattr(self.selector, "fileno", None)
        return fds + ([selector_fd()] if selector_fd else [])

    def serve(self, stop_fd=None):
        """Until SIGTERM, or stop_fd is readable (a pidfd: its process ended), or without one until the
        process that started it is gone (PR_SET_PDEATHSIG would follow the thread that started it, not
        the process)."""
        signal.set_wakeup_fd(self.wakeup_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        if stop_fd is not None:
            self.stop_fd = stop_fd
            self.selector.register(stop_fd, selectors.EVENT_READ, "stop")
        parent = os.getppid()
        while (stop_fd is not None or os.getppid() == parent) and not stopping:
            for key, _events in self.selector.select(timeout=2):
                if key.data == "stop":
                    stopping.append(True)
                elif key.data == "accept":
                    conn, _ = self.listener.accept()
                    self.clients[conn] = [None, b""]
                    self.selector.register(conn, selectors.EVENT_READ, "client")
                elif key.data == "child":
                    try:
                        os.read(self.wakeup_read, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                else:
                    try:
                        self.read_client(key.fileobj)
                    except Exception as exc:   # one client's trouble must not end the others' commands
                        sys.stderr.write("ansible_starter: %s: %s\n" % (type(exc).__name__, exc))
                        if key.fileobj in self.clients:
                            if self.clients[key.fileobj][0] is None:
                                self.drop(key.fileobj)
                            else:
                                self.end(key.fileobj)

    def read_client(self, conn):
        state = self.clients[conn]
        if state[0] is None:   # the request: a line and the client's standard streams
            msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
            while msg and not msg.endswith(b"\n"):
                more = conn.recv(65536)
                msg = msg + more if more else b""
            if not msg or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                self.drop(conn)
                return
            request = json.loads(msg.decode())
            pid = self.start(request, fds)
            for fd in fds:
                os.close(fd)
            state[0] = pid
            self.commands[pid] = conn
            try:
                conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
            except OSError:   # the client was killed as its command started: so is the command
                self.end(conn)
            return
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if not data:   # the client is gone: so is its command
            self.end(conn)
            return
        state[1] += data
        while b"\n" in state[1]:
            line, state[1] = state[1].split(b"\n", 1)
            try:
                os.kill(state[0], json.loads(line.decode())["signal"])
            except ProcessLookupError:
                pass

    def end(self, conn):
        """The client went away: SIGKILL its command, as `kill` ends a directly started program."""
        try:
            os.kill(self.clients[conn][0], signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.drop(conn)

    def drop(self, conn):
        self.selector.unregister(conn)
        self.clients.pop(conn, None)
        conn.close()

    def reap(self):
        while self.commands:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.commands.pop(pid, None)
            if conn is not None and conn in self.clients:
                try:
                    conn.sendall((json.dumps({"status": status}) + "\n").encode())
                except OSError:
                    pass
                self.drop(conn)

    def start(self, request, fds):
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()   # the fork's collections then leave the starter's objects (and their pages) alone
        pid = os.fork()
        if pid:
            return pid
        try:
            self.become(request, fds, self.own_fds())
        except BaseException:   # noqa: the fork must never return into the starter's loop
            import traceback
            traceback.print_exc()
            os._exit(255)


def take_the_request(request, fds, own_fds):
    """In the fork: what the starter set up undone (signal handlers, its descriptors), the request's
    standard streams, folder and environment taken."""
    gc.enable()
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(own_fds) | set(fds):
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
    os.chdir(request["cwd"])
    os.environ.clear()   # the request's own (it differs from the starter's only in what was not read at
    os.environ.update(request["env"])   # import: environment_key in ansible_runs.py, python_starter.py)


def exit_as_python_does(code):
    """The end of a Python program: SystemExit's code as the interpreter reads it, the threads it waits
    for, its exit functions, its streams flushed."""
    import atexit
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write("%s\n" % code)
        code = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception:   # as the interpreter: a stdout it cannot flush is exit status 120
        code = 120
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(code & 0xFF)


def payload_sources_fingerprint(collection_roots, module_folders=()):
    """A digest of the path, size and modification time of every file a module payload can take from
    outside ansible-core and the virtualenv (which a test run does not change): the plugins/modules and
    plugins/module_utils of each collection under `collection_roots`, and `module_folders` (ansible's
    library and module_utils paths)."""
    folders = [os.path.join(collection, "plugins", part)
               for root in collection_roots
               for collection in sorted(glob.glob(os.path.join(root, "ansible_collections", "*", "*")))
               for part in ("modules", "module_utils")] + list(module_folders)
    digest = hashlib.sha256()
    for top in folders:
        for folder, subfolders, files in os.walk(top):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                try:
                    stat = os.stat(path)
                except OSError:   # gone meanwhile: so it is in no payload
                    continue
                digest.update(("%s\0%d\0%d\n" % (path, stat.st_size, stat.st_mtime_ns)).encode())
    return digest.hexdigest()[:24]


def share_module_payloads(local_tmp, shared, constants):
    """The command's payload cache (<local_tmp>/ansiballz_cache) becomes the starter's folder for the
    sources as they are now: payloads an earlier command built from the same sources are used as they
    are, as the workers of one ansible-playbook use them (ansible-core's own lock and check-then-load
    on that folder work across processes). A symlink: the command's exit removes its local temporary
    folder (shutil.rmtree), the link and not the shared folder."""
    module_folders = list(constants.DEFAULT_MODULE_PATH or []) + list(constants.DEFAULT_MODULE_UTILS_PATH or [])
    fingerprint = payload_sources_fingerprint(constants.COLLECTIONS_PATHS, module_folders)
    folder = os.path.join(shared, fingerprint)
    os.makedirs(folder, exist_ok=True)
    os.symlink(folder, os.path.join(local_tmp, PAYLOAD_CACHE))


def become_the_command(request, fds, own_fds):
    """In the fork: the process a fresh `argv[0]` would be at the start of its main(), then main()."""
    import importlib
    from ansible import constants

    take_the_request(request, fds, own_fds)
    argv = request["argv"]
    sys.argv = list(argv)
    # ansible-core makes its local temporary folder while reading its configuration, and removes it at
    # exit: the fork makes one of its own, as the program would
    # (its default names ANSIBLE_HOME: rendered with the constants' values, as ansible.constants does)
    constants.DEFAULT_LOCAL_TMP = constants.config.get_config_value("DEFAULT_LOCAL_TMP", variables=vars(constants))
    if SHARED_PAYLOADS["folder"]:
        share_module_payloads(constants.DEFAULT_LOCAL_TMP, SHARED_PAYLOADS["folder"], constants)
    main = importlib.import_module(PROGRAMS[os.path.basename(argv[0])]).main
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    exit_as_python_does(code)


def starter_main(sock_path):
    """Import what every command needs, say so on stdout, then serve (until killed)."""
    import threading
    gc.disable()   # until each fork: what the starter frees leaves no holes in pages its forks share
    sys.argv = [os.path.join(os.path.dirname(sys.executable), "ansible")]
    for name in PROGRAMS.values():
        __import__(name)
    # the local temporary folder ansible-core made while reading its configuration: each fork makes its own
    import atexit
    from ansible import constants
    from ansible.config.manager import cleanup_tmp_file
    atexit.unregister(cleanup_tmp_file)
    cleanup_tmp_file(constants.DEFAULT_LOCAL_TMP)
    if threading.active_count() != 1:   # a fork would inherit their locks: serve nothing
        sys.stdout.write("threads\n")
        sys.stdout.flush()
        return 1
    SHARED_PAYLOADS["folder"] = sock_path + ".payloads"
    starter = Starter(sock_path)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)   # the starter prints nothing more; its forks get their own streams
    os.close(devnull)
    starter.serve()
    # gone with the process that started it, or told to stop: leave nothing behind
    shutil.rmtree(SHARED_PAYLOADS["folder"], ignore_errors=True)
    for path in (sock_path, sock_path + ".log"):
        try:
            os.unlink(path)
        except OSError:
            pass
    try:
        os.rmdir(os.path.dirname(sock_path))
    except OSError:   # another starter of that process still has its socket there
        pass
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[sys.argv.index("--") + 1:])
    else:
        sys.exit(starter_main(sys.argv[2]))

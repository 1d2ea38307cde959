"""The Python starter (volfence_lab/python_starter.py) runs a program as the interpreter would: the same
output, exit status, arguments, path, folder and environment (without its own variable); only runs of
the environment it was started in reach it; it ends with the process that owns its folder; imports that
read a variable it does not key on make it serve nothing."""

import json
import os
import subprocess
import sys

import pytest
from kubeemu.wait import wait_until

from volfence_lab import python_starter
from volfence_lab.ansible_runs import VENV_BIN, Starters

WAIT = 120   # for a state that comes in well under a second on an idle machine

PROGRAM = r'''
import json, os, sys
what = {"argv": sys.argv, "path0": sys.path[0], "name": __name__, "file": globals().get("__file__"),
        "cwd": os.getcwd(), "mine": os.environ.get("MINE"), "starters": os.environ.get("VOLFENCE_PYTHON_STARTERS"),
        "stdin": sys.stdin.read() if len(sys.argv) > 2 and sys.argv[2] == "read" else None,
        "main": sys.modules["__main__"].__dict__ is globals()}
print(json.dumps(what))
sys.stderr.write("to stderr\n")
ending = sys.argv[1] if len(sys.argv) > 1 else ""
if ending == "code":
    sys.exit(3)
if ending == "message":
    sys.exit("a message")
if ending == "raise":
    raise ValueError("raised")
'''


@pytest.fixture
def starters():
    owned = Starters()
    yield owned
    owned.stop()


@pytest.fixture
def setup(tmp_path, starters):
    python = tmp_path / "python"
    python_starter.interpreter_wrapper(str(python), os.path.join(VENV_BIN, "python"), "the test's interpreter")
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    value = starters.python_starters()
    return {"python": str(python), "program": str(program), "value": value, "folder": value.split(":", 1)[1],
            "tmp": tmp_path}


def run(setup, args, starters=True, stdin="", **extra):
    env = dict(os.environ, MINE="mine", **extra)
    env.pop("VOLFENCE_PYTHON_STARTERS", None)
    if starters:
        env["VOLFENCE_PYTHON_STARTERS"] = setup["value"]
    return subprocess.run([setup["python"]] + args, cwd=str(setup["tmp"]), env=env, input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)


def starter_pids(folder):
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return [int(open(os.path.join(folder, name)).read()) for name in names if name.endswith(".pid")]


def ready(setup, args=None, **extra):
    """A run (the first of an environment starts its starter), then the starter listening."""
    run(setup, args or [setup["program"]], **extra)
    wait_until(lambda: starter_pids(setup["folder"]), timeout=WAIT, what="a Python starter listening")


def comparable(proc):
    # the traceback names the starter's frames above the program's: compare from the program's own
    err = proc.stderr[proc.stderr.find("program.py"):] if "Traceback" in proc.stderr else proc.stderr
    return proc.returncode, proc.stdout, err


@pytest.mark.parametrize("ending", ["", "code", "message", "raise"])
def test_a_program_file_answers_as_the_interpreter(setup, ending):
    ready(setup)
    direct = run(setup, [setup["program"], ending], starters=False)
    served = run(setup, [setup["program"], ending])
    assert comparable(served) == comparable(direct)
    assert served.returncode == {"": 0, "code": 3, "message": 1, "raise": 1}[ending]
    what = json.loads(served.stdout)
    assert what["starters"] is None and what["mine"] == "mine" and what["name"] == "__main__" and what["main"]
    assert what["path0"] == os.path.dirname(os.path.realpath(setup["program"]))


def test_a_program_on_standard_input_answers_as_the_interpreter(setup):
    ready(setup, [])
    direct = run(setup, [], starters=False, stdin=PROGRAM)
    served = run(setup, [], stdin=PROGRAM)
    assert (served.returncode, served.stdout, served.stderr) == (direct.returncode, direct.stdout, direct.stderr)
    assert json.loads(served.stdout)["path0"] == ""


def test_runs_reach_the_starter_of_their_environment_only(setup, tmp_path):
    probe = tmp_path / "parent.py"
    probe.write_text("import os\nprint(os.getppid())\n")
    ready(setup, [str(probe)])
    (pid,) = starter_pids(setup["folder"])
    assert int(run(setup, [str(probe)]).stdout) == pid
    # another KUBECONFIG (read by kubernetes at import) is another environment: the interpreter itself
    other = run(setup, [str(probe)], KUBECONFIG=str(tmp_path / "other"))
    assert int(other.stdout) != pid
    # an option (here -c) is the interpreter's own business
    assert run(setup, ["-c", "print(1)"]).stdout == "1\n"


ZIPPED = r'''
import json, sys, traceback, zipfile
zip_path, body = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(zip_path, "w") as archive:   # as AnsiballZ: the modules' code in a zip on sys.path
    archive.writestr("zipped_module.py", body)
sys.path.insert(0, zip_path)
import zipped_module
try:
    zipped_module.fail()
except ValueError:
    where = traceback.extract_tb(sys.exc_info()[2])[-1].filename
print(json.dumps({"value": zipped_module.VALUE, "where": where}))
'''


def test_a_zipped_module_is_compiled_once_per_source_and_names_its_own_zip(setup, tmp_path):
    program = tmp_path / "zipped.py"
    program.write_text(ZIPPED)
    body = "VALUE = %d\ndef fail():\n    raise ValueError('from the zip')\n"
    compiled = os.path.join(setup["folder"], "compiled")
    ready(setup, [str(program), str(tmp_path / "ready.zip"), body % 0])
    answers, kept = [], []
    for n, value in enumerate((1, 1, 2)):
        zipped = str(tmp_path / ("payload%d.zip" % n))
        direct = run(setup, [str(program), zipped + ".direct", body % value], starters=False)
        served = run(setup, [str(program), zipped, body % value])
        assert served.returncode == direct.returncode == 0, served.stderr
        answers.append(json.loads(served.stdout))
        assert answers[-1] == dict(json.loads(direct.stdout), where=zipped + "/zipped_module.py")
        # (name, inode): a run that finds its source's code loads it; one that compiles writes it anew
        kept.append(sorted((name, os.stat(os.path.join(compiled, name)).st_ino)
                           for name in os.listdir(compiled) if "." not in name))
    assert [a["value"] for a in answers] == [1, 1, 2]
    assert len(kept[0]) == 1 and kept[1] == kept[0], "the second run of a source loads the first one's code"
    assert len(kept[2]) == 2 and kept[0][0] in kept[2], "a changed source is compiled and kept beside it"


def test_a_starter_ends_with_the_owner_of_its_folder(setup):
    owner = subprocess.Popen(["sleep", "600"])
    setup["value"] = "%d:%s" % (owner.pid, setup["folder"])
    ready(setup)
    (pid,) = starter_pids(setup["folder"])
    owner.kill()
    owner.wait()
    wait_until(lambda: not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z",
               timeout=WAIT, what="the starter gone with its owner")
    wait_until(lambda: not os.path.exists(setup["folder"]), timeout=WAIT, what="the owner's folder removed")


def test_imports_that_read_an_unkeyed_variable_make_the_starter_serve_nothing(tmp_path):
    (tmp_path / "reads_at_import.py").write_text("import os\nSETTING = os.environ.get('SOME_SETTING')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        read = python_starter.import_ahead(["reads_at_import", "no_such_library_here"])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("reads_at_import", None)
    assert "SOME_SETTING" in read and not python_starter.keyed("SOME_SETTING")
    assert python_starter.keyed("KUBECONFIG") and python_starter.keyed("PYTHONPATH")


def test_the_preimports_read_only_keyed_variables():
    """On the interpreters here (the project's and this machine's); the starter also checks as it starts."""
    for python in (os.path.join(VENV_BIN, "python"), "/usr/bin/python3"):
        if not os.path.exists(python):
            continue
        out = subprocess.run([python, "-c", "import sys; sys.path.insert(0, %r); import python_starter as p; "
                              "print(sorted(n for n in p.import_ahead(p.PREIMPORTS) if not p.keyed(n)))"
                              % os.path.dirname(python_starter.HERE)],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        assert out.strip() == "[]", (python, out)

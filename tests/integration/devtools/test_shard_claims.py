"""make test's integration shards share the test files (tests/integration/shard_claims.py): pytest
processes given the same files run each file once among them, each file whole in one process, a file's
module fixture ended before the next file's starts; one process alone runs them all. No lab needed:
the files here are the test's own."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/integration: shard_claims.py

TEST_FILE = '''
import json, os, pytest

def note(event):
    with open(os.environ["CLAIMS_LOG"], "a") as handle:
        handle.write(json.dumps([os.getpid(), __name__, event]) + "\\n")

@pytest.fixture(scope="module")
def per_file():
    note("setup")
    yield
    note("teardown")

@pytest.mark.parametrize("n", range(%d))
def test_one(per_file, n):
    note("test %%d" %% n)
'''


def shards(tmp_path, count, files=6):
    for index in range(files):
        (tmp_path / ("test_f%d.py" % index)).write_text(TEST_FILE % (index + 1))
    claims, log = tmp_path / "claims", tmp_path / "log"
    claims.mkdir()
    env = dict(os.environ, VOLFENCE_SHARD_CLAIMS=str(claims), CLAIMS_LOG=str(log),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTEST_ADDOPTS", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "shard_claims",
            "--rootdir", str(tmp_path)] + ["test_f%d.py" % index for index in range(files)]
    procs = [subprocess.Popen(args, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True) for _ in range(count)]
    outputs = [proc.communicate(timeout=600)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    return [json.loads(line) for line in log.read_text().splitlines()], outputs


def test_shards_run_each_file_once_whole_in_one_of_them_with_its_fixture_ended_before_the_next(tmp_path):
    events, _outputs = shards(tmp_path, 3)
    tests = [(module, event) for _pid, module, event in events if event.startswith("test")]
    assert sorted(tests) == sorted(("test_f%d" % i, "test %d" % n) for i in range(6) for n in range(i + 1))
    runner = {}
    for pid, module, _event in events:
        assert runner.setdefault(module, pid) == pid, "%s ran in two shards" % module
    for pid in set(runner.values()):
        mine = [(module, event) for p, module, event in events if p == pid and event in ("setup", "teardown")]
        # each file's fixture set up and ended before the next file's starts
        assert mine == [pair for module in dict.fromkeys(m for m, _e in mine)
                        for pair in ((module, "setup"), (module, "teardown"))], mine


def test_one_shard_alone_runs_every_file(tmp_path):
    events, outputs = shards(tmp_path, 1, files=3)
    assert len([e for e in events if e[2].startswith("test")]) == 1 + 2 + 3
    assert "6 passed" in outputs[0]

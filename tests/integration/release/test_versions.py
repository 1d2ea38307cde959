"""The versions the collection claims (docs/versions.md) and what `make test` runs on them stay in step:
every ansible-core release from requires_ansible's lower bound to the one in .venv is listed, has its sanity
stage and its row in the docs; the Pythons tests/config.yml claims are those the docs name."""

import os
import re
import sys

import yaml
from ansible.release import __version__ as ansible_core_version

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import run_tests  # noqa: E402  scripts/run_tests.py: the stages of `make test`


def minor(version):
    return tuple(int(part) for part in version.split(".")[:2])


def read(*path):
    with open(os.path.join(REPO, *path)) as handle:
        return handle.read()


def test_the_listed_ansible_core_releases_run_from_requires_ansible_to_the_newest_installed():
    listed = run_tests.claimed_cores()
    lower = re.match(r"^>=\s*(\d+\.\d+)", yaml.safe_load(read("meta", "runtime.yml"))["requires_ansible"])
    assert lower, "requires_ansible has no lower bound"
    assert listed[0] == lower.group(1)
    assert minor(listed[-1]) == minor(ansible_core_version), (
        "tests/ansible-core-versions.txt ends at %s, .venv has ansible-core %s" % (listed[-1], ansible_core_version))
    for older, newer in zip(listed, listed[1:]):
        assert minor(newer) == (minor(older)[0], minor(older)[1] + 1), "a release is skipped after %s" % older


def test_make_test_runs_sanity_on_each_listed_release():
    listed = run_tests.claimed_cores()
    stages = [stage for lane in run_tests.LANES for stage in lane]
    assert "sanity" in stages  # the newest, in .venv
    assert ["sanity-" + release for release in listed[:-1]] == [s for s in stages if s.startswith("sanity-")]


def test_the_docs_have_a_row_for_each_listed_release_and_name_the_python_claim():
    page = read("docs", "versions.md")
    rows = re.findall(r"^\| (\d+\.\d+) \|", page, re.M)
    assert rows == run_tests.claimed_cores()
    claim = yaml.safe_load(read("tests", "config.yml"))["modules"]["python_requires"]
    assert '`python_requires: "%s"`' % claim in page

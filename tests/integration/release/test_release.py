"""Release checks (issue 8) as pytest tests: the steps of scripts/check_release.sh, one test each.

They need neither the lab nor a network: the collection tarball is built and installed into a
temporary collections path once per session and reused by the later steps (each step builds what
it needs when run alone, e.g. `pytest tests/integration/release -k ee_create`).

The docs step fails on a rendering error, a docs-lint finding or docs/modules out of date with the
plugins (`make docs` renders them), as scripts/check_release.sh does.
"""

import os

import pytest

import release_steps
from release_steps import Release, run_step


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return Release(str(tmp_path_factory.mktemp("release")))


def check(release, name):
    summary = run_step(release, name)
    print("%s: %s" % (name, summary))
    return summary


def test_changelog_lint(release):
    check(release, "changelog")


def test_ansible_lint_production_profile(release):
    check(release, "ansible-lint")


def test_galaxy_build(release):
    summary = check(release, "galaxy-build")
    assert release.tarball_name in summary


def test_galaxy_install_offline_into_clean_path(release):
    check(release, "galaxy-install")
    assert os.path.exists(os.path.join(release.installed, "MANIFEST.json"))


def test_galaxy_importer_imports_the_tarball_with_no_finding(release):
    summary = check(release, "galaxy-importer")
    assert "no warning or error" in summary


def test_ansible_doc_every_module_from_installed_copy(release):
    check(release, "module-docs")


def test_modules_run_from_installed_copy(release):
    check(release, "module-run")


def test_ee_introspect_finds_requirements_and_bindep(release):
    summary = check(release, "ee-introspect")
    for package in release_steps.CEPH_SYSTEM_PACKAGES + ("kubernetes", "jmespath"):
        assert package in summary


def test_ee_create_build_context(release):
    check(release, "ee-create")
    assert os.path.exists(os.path.join(release.work, "ee-context", "Containerfile"))


def test_de_create_build_context(release):
    summary = check(release, "de-create")
    assert os.path.exists(os.path.join(release.work, "de-context", "Containerfile"))
    for package in release_steps.CEPH_SYSTEM_PACKAGES:
        assert package in summary


def test_eda_content_as_ansible_rulebook_finds_it(release):
    check(release, "eda")


def test_plugin_docs_render_lint_clean_and_are_current(release):
    check(release, "docs")


# ----------------------------------------------------------------------------- the runner itself

def test_check_release_script_closing_line_and_exit_status():
    proc = release_steps.subprocess.run(
        [os.path.join(release_steps.REPO, "scripts", "check_release.sh"), "--step", "changelog"],
        stdout=release_steps.subprocess.PIPE, stderr=release_steps.subprocess.STDOUT,
        universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "release: 1 passed, 0 failed"


def test_failed_step_counts_and_exits_nonzero(tmp_path, monkeypatch, capsys):
    def broken(self):
        raise release_steps.StepFailed("broken on purpose")
    monkeypatch.setattr(Release, "step_changelog", broken)
    rc = release_steps.main(["--step", "changelog", "--step", "ee-create", "--work", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAILED changelog" in out and "broken on purpose" in out
    assert "PASSED ee-create" in out
    assert out.rstrip().splitlines()[-1] == "release: 1 passed, 1 failed"


def test_unknown_step_is_a_usage_error():
    with pytest.raises(SystemExit) as exc:
        release_steps.main(["--step", "no-such-step"])
    assert exc.value.code == 2

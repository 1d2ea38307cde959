#!/usr/bin/env python3
"""The engineers' fast loop (`make check`): sanity, and the unit and integration tests of what a change
touches, in minutes. `make test` stays the whole suite and CI's gate.

Usage: scripts/quick_check.py [--base REV] [--list] [path ...]
  path ...     the changed files (default: what differs from --base, committed or not, and untracked files)
  --base REV   compare with REV (default HEAD: the work not committed yet; HEAD~3: the last three commits too)
  --list       print what would run, run nothing

What runs:
  1. ansible-test sanity on the controller Python (3.12), on the changed collection files;
  2. the unit tests that import a changed plugin (or a plugin that imports it, transitively), with the
     changed unit tests themselves, two workers;
  3. the integration test files that name a touched module, filter, playbook or role (and the changed
     integration tests), on a lab of their own (prefix vfq, fast clocks), stopped afterwards; the Ceph
     bindings tests among them with the lab release's Python; changes to the lab or the API emulator run
     their own tests and the lab's and Kubernetes' integration areas.
A change to a shared test helper (conftest.py, labtools.py) selects its whole area.
"""

import argparse
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
COLLECTION = os.path.join(REPO, ".cache", "collections", "ansible_collections", "volfence", "csi")
PLUGIN_DIRS = ("plugins/modules", "plugins/module_utils", "plugins/filter", "plugins/action", "plugins/lookup")


def read(path):
    try:
        with open(os.path.join(REPO, path), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (IOError, OSError):
        return ""


def files_under(*tops, suffixes=(".py", ".yml", ".yaml")):
    out = []
    for top in tops:
        for root, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
            out += [os.path.relpath(os.path.join(root, f), REPO) for f in files if f.endswith(suffixes)]
    return sorted(out)


def plugin_needles(path):
    """The strings by which other files use a plugin file: a module's FQCN and import, a module_utils'
    dotted path, a filter file's filter names."""
    stem = os.path.splitext(path)[0]
    parts = stem.split("/")
    if path.startswith("plugins/module_utils/"):
        dotted = ".".join(parts[1:])  # module_utils._ceph.ops
        return [dotted, "plugins." + dotted]
    if path.startswith("plugins/modules/"):
        return ["volfence.csi." + parts[-1], "modules." + parts[-1], "modules import " + parts[-1]]
    if path.startswith("plugins/filter/"):
        names = re.findall(r"['\"](\w+)['\"]\s*:\s*[A-Za-z_]", read(path))
        return ["volfence.csi." + n for n in names] + ["filter." + parts[-1], "filter import " + parts[-1]]
    return ["volfence.csi." + parts[-1]]


def mentions(path, needles):
    text = read(path)
    return any(re.search(re.escape(n) + r"(?![\w])", text) for n in needles)


def select(changed):
    """{sanity: [collection files], units: [test files], integration: [test files], tools: [test folders],
    why: {test file: the changed file that selected it}} for the changed repository paths."""
    changed = [p for p in changed if os.path.exists(os.path.join(REPO, p))]
    plugins = [p for p in files_under(*PLUGIN_DIRS) if p.endswith(".py")]
    units = [p for p in files_under("tests/unit") if os.path.basename(p).startswith("test_") and p.endswith(".py")]
    integration = [p for p in files_under("tests/integration")
                   if os.path.basename(p).startswith("test_") and p.endswith(".py")]
    playbooks = [p for p in files_under("playbooks") if p.endswith(".yml") and "/" not in p[len("playbooks/"):]]
    why = {}

    def pick(test, cause):
        why.setdefault(test, cause)

    # plugins touched: the changed ones, then every plugin importing a touched module_utils or filter
    touched = dict((p, p) for p in changed if p.startswith(PLUGIN_DIRS) and p.endswith(".py"))
    grown = True
    while grown:
        grown = False
        for plugin in plugins:
            if plugin in touched:
                continue
            for source in list(touched):
                if source.startswith("plugins/module_utils/") and mentions(plugin, plugin_needles(source)):
                    touched[plugin] = touched[source]
                    grown = True
                    break
    # playbooks and roles touched: changed ones, and those using a touched plugin
    task_files = [p for p in files_under("playbooks") if p.endswith(".yml") and p not in playbooks]
    steps = dict((p, p) for p in changed if p.startswith(("playbooks/", "roles/")))
    for plugin, cause in touched.items():
        needles = plugin_needles(plugin)
        for path in playbooks + task_files + files_under("roles"):
            if path not in steps and mentions(path, needles):
                steps[path] = cause
    # a playbook's task files (playbooks/tasks/) touch the playbooks, and task files, that include them
    grown = True
    while grown:
        grown = False
        for step, cause in list(steps.items()):
            if step in task_files:
                for path in playbooks + task_files:
                    if path not in steps and mentions(path, [os.path.relpath(step, "playbooks")]):
                        steps[path] = cause
                        grown = True
    for test in units:
        if test in changed:
            pick(test, test)
            continue
        for plugin, cause in touched.items():
            if mentions(test, plugin_needles(plugin)):
                pick(test, cause)
                break
    for test in integration:
        if test in changed:
            pick(test, test)
            continue
        area = os.path.dirname(test)
        for helper in changed:
            if os.path.basename(helper) in ("conftest.py", "labtools.py") and (
                    area.startswith(os.path.dirname(helper))):
                pick(test, helper)
        for plugin, cause in touched.items():
            if mentions(test, plugin_needles(plugin)):
                pick(test, cause)
        for step, cause in steps.items():
            if step.startswith("playbooks/"):
                needles = [os.path.basename(step), "volfence.csi." + os.path.splitext(os.path.basename(step))[0]]
            else:
                role = step.split("/")[1]
                needles = ["volfence.csi." + role, "roles/" + role]
            if mentions(test, needles) or (step.startswith("roles/") and area.endswith("/roles")
                                           and step.split("/")[1] in test):
                pick(test, cause)
    tools = []
    for tool in ("lab", "kubeemu"):
        cause = next((p for p in changed if p.startswith("tools/%s/" % tool)), None)
        if cause:
            tools.append("tools/%s/tests" % tool)
            for test in integration:
                if test.startswith(("tests/integration/lab/", "tests/integration/k8s/")):
                    pick(test, cause)
    sanity = [p for p in changed if p.startswith(("plugins/", "roles/", "playbooks/", "tests/", "docs/", "meta/",
                                                  "changelogs/", "extensions/"))
              or p in ("galaxy.yml", "README.md")]
    return dict(sanity=sanity, units=sorted(t for t in why if t.startswith("tests/unit/")),
                integration=sorted(t for t in why if t.startswith("tests/integration/")),
                tools=tools, why=why)


def changed_files(base):
    diff = subprocess.run(["git", "diff", "--name-only", base], cwd=REPO, stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout.split()
    untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=REPO,
                               stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.split()
    return sorted(set(diff + untracked))


def run(cmd, env=None, cwd=REPO):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=cwd, env=env)


def lab_env(prefix):
    env = dict(os.environ, LAB_PREFIX=prefix, LAB_DIR=os.path.join(REPO, ".lab-" + prefix), LAB_CLOCKS="fast")
    for key in ("LAB_SLOT", "LAB_NODES", "KUBECONFIG"):
        env.pop(key, None)
    return env


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    changed = sorted(set(args.paths)) if args.paths else changed_files(args.base)
    plan = select(changed)
    print("changed: %s" % (", ".join(changed) or "nothing"))
    for kind in ("sanity", "units", "integration", "tools"):
        print("%s: %s" % (kind, ", ".join(plan[kind]) or "none"))
    for test in plan["units"] + plan["integration"]:
        if plan["why"][test] != test:
            print("  %s (by %s)" % (test, plan["why"][test]))
    if args.list:
        return 0
    failed = []
    if plan["sanity"]:
        targets = [p for p in plan["sanity"] if os.path.isfile(os.path.join(REPO, p))]
        if run([os.path.join(REPO, "scripts", "ansible_test.sh"), "sanity", "--python", "3.12"] + targets):
            failed.append("sanity")
    if plan["units"]:
        if run([VENV_PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"] + plan["units"], cwd=COLLECTION):
            failed.append("units")
    for folder in plan["tools"]:
        if run([VENV_PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", folder]):
            failed.append(folder)
    controller = [t for t in plan["integration"] if not t.startswith("tests/integration/bindings/")]
    bindings = [t for t in plan["integration"] if t.startswith("tests/integration/bindings/")]
    if controller or bindings:
        env = lab_env("vfq")
        lab = [VENV_PY, "-m", "volfence_lab"]
        if run(lab + ["up"], env=env):
            failed.append("lab up")
        else:
            try:
                common = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", "-c", "tests/integration/pytest.ini",
                          "--rootdir", REPO]
                if controller and run([VENV_PY] + common + controller, env=env):
                    failed.append("integration")
                ceph_python = os.path.join(env["LAB_DIR"], "ceph-bin", "ceph-python3")
                if bindings and run([ceph_python] + common + bindings, env=env):
                    failed.append("bindings")
            finally:
                run(lab + ["down"], env=env)
    print("quick check: %s" % ("FAILED: " + ", ".join(failed) if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""The release checks of volfence.csi (issue 8), one function per step.

Run by scripts/check_release.sh (all steps in order, a closing line `release: N passed, N failed`)
and by test_release.py beside this file (one pytest test per step, so `make test` runs them).

Steps, in order:
  changelog       antsibull-changelog lint (fragments and changelogs/changelog.yaml); fragments exist
  ansible-lint    ansible-lint with .ansible-lint (production profile, offline)
  galaxy-build    ansible-galaxy collection build: nothing of .venv/.lab*/.cache/tests/output/...
                  inside, every module, event source and rulebook and the EE metadata inside, size measured
  galaxy-install  the tarball installs offline (--no-deps) into an empty collections path
  galaxy-importer Galaxy's importer (galaxy-importer, .venv-importer) imports the tarball with no warning or
                  error: metadata, ansible-doc of every plugin with no other collection's docs, ansible-lint
                  production profile, required tags; every module and filter documented
  module-docs     ansible-doc of every module (and filter/lookup/... plugin), from that installed copy
  module-run      every module runs from the installed copy (ad hoc, argument validation), and
                  ceph_blocklist_info refuses a missing keyring before contacting any cluster
  ee-introspect   ansible-builder introspect on the installed copy (+ kubernetes.core): the
                  collection's Python and bindep requirements are found, bindep selects the Ceph
                  packages on rpm and dpkg platforms
  ee-create       ansible-builder create on execution-environment.yml: the build context (Containerfile,
                  galaxy requirements, the tarball) is complete and its collection file installs
  de-create       the same for the decision environment, extensions/eda/decision-environment.yml (EDA,
                  issue 15): kubernetes in its Python requirements, the Ceph client excluded
  eda             the installed copy's event sources (extensions/eda/plugins/event_source: an
                  `async def main(queue, args)`, YAML DOCUMENTATION/EXAMPLES) and rulebooks, found by FQCN
                  through ansible-rulebook's own lookup, valid for its schema, their conditions parsed
  docs            scripts/build_docs.sh --check: plugin docs render, lint clean, docs/modules current

Everything runs offline, without a container engine, a Galaxy server or the lab. Commands that
must see the built collection (and not the checkout) run in the work folder with an empty
ansible.cfg and ANSIBLE_COLLECTIONS_PATH pointing at the installed copy only (the `ansible`
package's collections, e.g. kubernetes.core, stay visible through the Python path).
"""

import argparse
import ast
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV = os.environ.get("VOLFENCE_VENV", os.path.join(REPO, ".venv"))
VENV_BIN = os.path.join(VENV, "bin")

# Galaxy's importer (step galaxy-importer) runs from a virtualenv of its own (scripts/setup.sh), which holds the
# collection's declared dependency (kubernetes.core) and nothing else of Ansible's collections.
IMPORTER_VENV = os.environ.get("VOLFENCE_IMPORTER_VENV", os.path.join(REPO, ".venv-importer"))
# Its settings, each written out rather than left to a default or to /etc/galaxy-importer: every check it
# can run without a container engine, and one stricter than its defaults (check_required_tags: the tags
# Automation Hub requires). Left at its defaults:
#   run_ansible_test  galaxy-importer runs ansible-test only in a container image; `make test` runs
#                     ansible-test sanity on every claimed ansible-core instead.
#   run_flake8        off, as Galaxy runs it: galaxy-importer 0.4.44 hands flake8 the filters' YAML docs
#                     (plugins/filter/*.yml) as Python (E999 on each), and its W503 is a rule ansible-test's
#                     pep8 leaves out; ansible-test sanity's pep8 and pylint check the Python.
#   require_v1_or_greater  off while the collection is 0.x.
IMPORTER_CONFIG = """[galaxy-importer]
run_ansible_doc = True
run_ansible_lint = True
offline_ansible_lint = True
run_flake8 = False
check_changelog = True
check_required_tags = True
run_ansible_test = False
ansible_test_local_image = False
require_v1_or_greater = False
log_level_main = INFO
"""
# Paths that must never be in the tarball (prefixes of member names).
FORBIDDEN_IN_TARBALL = (".venv/", ".lab", ".cache/", "tests/output/", ".git/", "dist/", ".pytest_cache/",
                        ".hypothesis/", ".ansible/", ".ci/", "tools/", "scripts/", "tests/integration/lab/")
# A tarball above this is a sign that something big got in (it is ~0.2 MiB at 0.1.0).
MAX_TARBALL_BYTES = 5 * 1024 * 1024
CEPH_SYSTEM_PACKAGES = ("ceph-common", "python3-rados", "python3-rbd")
# Event-Driven Ansible (issue 15): the decision environment's definition, the event sources' folder.
DE_DEFINITION = os.path.join("extensions", "eda", "decision-environment.yml")
EDA_SOURCES = os.path.join("extensions", "eda", "plugins", "event_source")
EDA_RULEBOOKS = os.path.join("extensions", "eda", "rulebooks")
# Run by the step `eda` in the venv's Python (ansible_rulebook), with ANSIBLE_COLLECTIONS_PATH set to
# the installed copy: argv = FQCN, the installed collection's root. Prints one JSON line.
EDA_RULEBOOK_CHECK = r"""
import glob, json, os, sys
from ansible_rulebook import collection
from ansible_rulebook.rules_parser import parse_rule_sets
from ansible_rulebook.validators import Validate

fqcn, root = sys.argv[1], sys.argv[2]
result = {"rulebooks": [], "problems": []}
if collection.find_collection(fqcn) != root:
    result["problems"].append("ansible-rulebook finds %s at %s, not at %s" % (fqcn, collection.find_collection(fqcn), root))
for path in sorted(glob.glob(os.path.join(root, "extensions", "eda", "rulebooks", "*"))):
    name, ext = os.path.splitext(os.path.basename(path))
    ref = "%s.%s" % (fqcn, name)
    if ext != ".yml":
        result["problems"].append("%s: ansible-rulebook finds a collection's rulebooks by NAME.yml only" % path)
        continue
    try:
        if not collection.has_rulebook(fqcn, name):
            raise LookupError("not found")
        data = collection.load_rulebook(fqcn, name)[1]
        Validate.rulebook(data)
        rulesets = parse_rule_sets(data)
    except Exception as exc:
        result["problems"].append("rulebook %s: %s: %s" % (ref, type(exc).__name__, exc))
        continue
    for ruleset in rulesets:
        for source in ruleset.sources:
            own = source.source_name.startswith(fqcn + ".")
            if own and not collection.has_source(fqcn, source.source_name[len(fqcn) + 1:]):
                result["problems"].append("rulebook %s: event source %s not found" % (ref, source.source_name))
    result["rulebooks"].append(ref)
print(json.dumps(result))
"""


class StepFailed(Exception):
    """A release check failed; the message says what and how to see more."""


def tail(text, lines=40):
    text = (text or "").rstrip()
    parts = text.splitlines()
    return "\n".join(parts[-lines:]) if len(parts) > lines else text


def requirement_name(line):
    """'kubernetes>=24.2.0  # from collection x' -> 'kubernetes'; bindep 'ceph-common [platform:rpm]' -> 'ceph-common'."""
    line = line.split("#", 1)[0].strip()
    return re.split(r"[\s\[<>=!~;]", line, 1)[0].lower() if line else ""


def read_yaml(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


class Release(object):
    """The release checks on one work folder (artifacts are built once and reused by later steps)."""

    def __init__(self, work, verbose=False):
        self.work = os.path.abspath(work)
        self.verbose = verbose
        os.makedirs(self.work, exist_ok=True)
        self.galaxy = read_yaml(os.path.join(REPO, "galaxy.yml"))
        self.namespace = self.galaxy["namespace"]
        self.name = self.galaxy["name"]
        self.version = str(self.galaxy["version"])
        self.fqcn = "%s.%s" % (self.namespace, self.name)
        self.tarball_name = "%s-%s-%s.tar.gz" % (self.namespace, self.name, self.version)
        self.dist = os.path.join(self.work, "dist")
        self.collections = os.path.join(self.work, "collections")
        self.installed = os.path.join(self.collections, "ansible_collections", self.namespace, self.name)
        self.cfg = os.path.join(self.work, "ansible.cfg")
        if not os.path.exists(self.cfg):
            with open(self.cfg, "w") as handle:
                handle.write("[defaults]\n")

    # ------------------------------------------------------------------ running tools

    def tool(self, name):
        path = os.path.join(VENV_BIN, name)
        if not os.path.exists(path):
            raise StepFailed("%s not found: run scripts/setup.sh (or `make setup`)" % path)
        return path

    def env(self, isolated=False, collections_path=None):
        env = dict(os.environ)
        env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
        env["ANSIBLE_NOCOLOR"] = "1"
        env["NO_COLOR"] = "1"
        env.pop("ANSIBLE_STDOUT_CALLBACK", None)
        if isolated:
            # Nothing of a lab or a user's cluster reaches the modules run from the built copy.
            for name in list(env):
                if name.startswith(("CEPH_", "K8S_AUTH_")) or name == "KUBECONFIG":
                    del env[name]
            env["ANSIBLE_CONFIG"] = self.cfg
            env["ANSIBLE_COLLECTIONS_PATH"] = collections_path or self.collections
        return env

    def run(self, cmd, cwd=None, isolated=False, env=None, timeout=300):
        if self.verbose:
            print("  $ %s" % " ".join(cmd), flush=True)
        try:
            proc = subprocess.run(cmd, cwd=cwd or (self.work if isolated else REPO),
                                  env=env or self.env(isolated), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StepFailed("%s: timed out after %d s" % (" ".join(cmd), timeout))
        proc.output = (proc.stdout or "") + (proc.stderr or "")
        return proc

    def expect_ok(self, proc, what):
        if proc.returncode != 0:
            raise StepFailed("%s failed (rc=%d):\n%s" % (what, proc.returncode, tail(proc.output)))
        return proc

    # ------------------------------------------------------------------ shared artifacts

    def tarball(self):
        path = os.path.join(self.dist, self.tarball_name)
        if not os.path.exists(path):
            os.makedirs(self.dist, exist_ok=True)
            self.expect_ok(self.run([self.tool("ansible-galaxy"), "collection", "build", "--force",
                                     "--output-path", self.dist, REPO], isolated=True),
                           "ansible-galaxy collection build")
            if not os.path.exists(path):
                raise StepFailed("ansible-galaxy collection build made no %s (dist: %s)"
                                 % (self.tarball_name, os.listdir(self.dist)))
        return path

    def install(self):
        manifest = os.path.join(self.installed, "MANIFEST.json")
        if not os.path.exists(manifest):
            tarball = self.tarball()
            self.expect_ok(self.run([self.tool("ansible-galaxy"), "collection", "install", "--offline",
                                     "--no-deps", "--force", "-p", self.collections, tarball], isolated=True),
                           "ansible-galaxy collection install --offline --no-deps")
            if not os.path.exists(manifest):
                raise StepFailed("the install made no %s" % manifest)
        return self.installed

    def modules(self, root):
        names = []
        for path in sorted(glob.glob(os.path.join(root, "plugins", "modules", "*.py"))):
            base = os.path.basename(path)[:-3]
            if base != "__init__" and not base.startswith("_"):
                names.append(base)
        return names

    # ------------------------------------------------------------------ steps

    def step_changelog(self):
        fragments = sorted(glob.glob(os.path.join(REPO, "changelogs", "fragments", "*.yml"))
                           + glob.glob(os.path.join(REPO, "changelogs", "fragments", "*.yaml")))
        if not fragments:
            raise StepFailed("no changelog fragment in changelogs/fragments/")
        tool = self.tool("antsibull-changelog")
        proc = self.expect_ok(self.run([tool, "lint"]), "antsibull-changelog lint")
        if proc.stdout.strip():
            raise StepFailed("antsibull-changelog lint reported:\n%s" % tail(proc.stdout))
        proc = self.expect_ok(self.run([tool, "lint-changelog-yaml", os.path.join("changelogs", "changelog.yaml")]),
                              "antsibull-changelog lint-changelog-yaml")
        if proc.stdout.strip():
            raise StepFailed("antsibull-changelog lint-changelog-yaml reported:\n%s" % tail(proc.stdout))
        return "%d fragments, lint clean" % len(fragments)

    def step_ansible_lint(self):
        # The playbooks name this collection's modules: let it resolve to the checkout, as
        # `make setup`'s .cache/collections link does, even where that link does not exist yet.
        tree = os.path.join(self.work, "checkout-collections")
        link_dir = os.path.join(tree, "ansible_collections", self.namespace)
        os.makedirs(link_dir, exist_ok=True)
        link = os.path.join(link_dir, self.name)
        if not os.path.islink(link):
            os.symlink(REPO, link)
        env = self.env()
        env["ANSIBLE_COLLECTIONS_PATH"] = tree
        proc = self.run([self.tool("ansible-lint"), "--nocolor"], env=env, timeout=600)
        if proc.returncode != 0:
            raise StepFailed("ansible-lint (rc=%d):\n%s" % (proc.returncode, tail(proc.output, 60)))
        summary = [line for line in proc.output.splitlines() if line.startswith("Passed")]
        return summary[-1] if summary else "passed"

    def step_galaxy_build(self):
        # Always a fresh build: this step checks the build itself.
        if os.path.isdir(self.dist):
            shutil.rmtree(self.dist)
        if os.path.isdir(self.collections):
            shutil.rmtree(self.collections)
        started = time.time()
        path = self.tarball()
        elapsed = time.time() - started
        with tarfile.open(path) as tar:
            members = [m.name[2:] if m.name.startswith("./") else m.name for m in tar.getmembers()]
            manifest = json.load(tar.extractfile("MANIFEST.json"))
        bad = sorted(m for m in members
                     if m.startswith(FORBIDDEN_IN_TARBALL) or "__pycache__" in m.split("/") or m.endswith(".pyc"))
        if bad:
            raise StepFailed("the tarball holds what galaxy.yml build_ignore should keep out: %s%s"
                             % (", ".join(bad[:10]), " ..." if len(bad) > 10 else ""))
        info = manifest["collection_info"]
        if (info["namespace"], info["name"], info["version"]) != (self.namespace, self.name, self.version):
            raise StepFailed("MANIFEST.json names %s.%s %s, galaxy.yml %s %s"
                             % (info["namespace"], info["name"], info["version"], self.fqcn, self.version))
        wanted = ["meta/runtime.yml", "meta/execution-environment.yml", "meta/ee-requirements.txt",
                  "meta/ee-bindep.txt", "README.md"]
        wanted += ["plugins/modules/%s.py" % m for m in self.modules(REPO)]
        # Event-Driven Ansible content (issue 15): every event source and rulebook of the checkout.
        wanted += sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, EDA_SOURCES, "*.py"))
                         + glob.glob(os.path.join(REPO, EDA_RULEBOOKS, "*.yml")))
        missing = [w for w in wanted if w not in members]
        if missing:
            raise StepFailed("missing from the tarball: %s" % ", ".join(missing))
        size = os.path.getsize(path)
        if size > MAX_TARBALL_BYTES:
            raise StepFailed("the tarball is %d bytes (over %d): something big got in" % (size, MAX_TARBALL_BYTES))
        files = len([m for m in members if not m.endswith("/")])
        return "%s: %d bytes (%.0f KiB), %d entries, built in %.1f s" % (
            self.tarball_name, size, size / 1024.0, files, elapsed)

    def step_galaxy_install(self):
        if os.path.isdir(self.collections):
            shutil.rmtree(self.collections)
        root = self.install()
        manifest = json.load(open(os.path.join(root, "MANIFEST.json")))
        version = manifest["collection_info"]["version"]
        if version != self.version:
            raise StepFailed("installed version %s, galaxy.yml %s" % (version, self.version))
        proc = self.expect_ok(self.run([self.tool("ansible-galaxy"), "collection", "list", self.fqcn,
                                        "--format", "json"], isolated=True), "ansible-galaxy collection list")
        listed = json.loads(proc.stdout[proc.stdout.index("{"):])
        where = [path for path, cols in listed.items() if self.fqcn in cols]
        if where != [os.path.join(self.collections, "ansible_collections")]:
            raise StepFailed("ansible-galaxy collection list finds %s in %s, expected only the clean path %s"
                             % (self.fqcn, where, self.collections))
        return "%s %s installed into an empty collections path (offline, --no-deps)" % (self.fqcn, version)

    def step_galaxy_importer(self):
        """Galaxy's importer on the tarball, as galaxy.ansible.com and Automation Hub import an upload: its
        metadata checks, ansible-doc of every plugin with only the collection installed, and ansible-lint's
        production profile with the importer's own rule choices. Passed when it imports with no warning and
        no error and every module and filter has its docs in the result."""
        python = os.path.join(IMPORTER_VENV, "bin", "python")
        if not os.path.exists(python):
            raise StepFailed("%s not found: run scripts/setup.sh (or `make setup`)" % python)
        tarball = self.tarball()
        folder = os.path.join(self.work, "galaxy-importer")
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        config = os.path.join(folder, "galaxy-importer.cfg")
        with open(config, "w") as handle:
            handle.write(IMPORTER_CONFIG)
        env = dict(os.environ, GALAXY_IMPORTER_CONFIG=config, ANSIBLE_NOCOLOR="1", NO_COLOR="1",
                   PATH=os.path.join(IMPORTER_VENV, "bin") + os.pathsep + os.environ.get("PATH", ""))
        for name in list(env):
            # The importer reads GALAXY_IMPORTER_<SETTING> over its file, and ansible-doc/-lint read ANSIBLE_*.
            if name.startswith(("GALAXY_IMPORTER_", "ANSIBLE_")) and name not in (
                    "GALAXY_IMPORTER_CONFIG", "ANSIBLE_NOCOLOR"):
                del env[name]
        started = time.time()
        proc = self.run([python, "-m", "galaxy_importer.main", tarball], cwd=folder, env=env, timeout=600)
        elapsed = time.time() - started
        findings = [line for line in proc.output.splitlines() if line.startswith(("WARNING:", "ERROR:"))]
        if proc.returncode != 0 or "Importer processing completed successfully" not in proc.output or findings:
            raise StepFailed("galaxy-importer (rc=%d), %d finding(s):\n%s" % (
                proc.returncode, len(findings), "\n".join(findings[:40]) if findings else tail(proc.output)))
        with open(os.path.join(folder, "importer_result.json")) as handle:
            result = json.load(handle)
        documented = dict(((c["content_type"], c["content_name"]), bool(c.get("doc_strings")))
                          for c in result["docs_blob"]["contents"])
        modules = ["module %s" % m for m in self.modules(REPO) if not documented.get(("module", m))]
        # A filter plugin file holds several filters: ansible-doc documents the filters, not the file.
        filter_files = set(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "plugins", "filter", "*.py")))
        filters = sorted(name for (kind, name), has_docs in documented.items()
                         if kind == "filter" and not has_docs and name not in filter_files)
        if modules or filters:
            raise StepFailed("galaxy-importer has no docs for: %s" % ", ".join(modules + ["filter " + f for f in filters]))
        if result.get("requires_ansible") != read_yaml(os.path.join(REPO, "meta", "runtime.yml"))["requires_ansible"]:
            raise StepFailed("galaxy-importer reads requires_ansible %r" % result.get("requires_ansible"))
        # Galaxy imports with no other collection installed; the importer here has the declared dependency on
        # its Python path, which ansible-doc would find. The modules' docs must render without it (a module
        # whose docs extend kubernetes.core's fragment has none there): ansible-doc with the installed copy only.
        root = self.install()
        env = self.env(isolated=True)
        env["ANSIBLE_COLLECTIONS_SCAN_SYS_PATH"] = "false"
        fqcns = ["%s.%s" % (self.fqcn, m) for m in self.modules(root)]
        alone = self.run([self.tool("ansible-doc"), "-t", "module", "--json"] + fqcns, isolated=True, env=env)
        rendered = json.loads(alone.stdout) if alone.returncode == 0 and alone.stdout.strip().startswith("{") else {}
        if alone.returncode != 0:   # one module without docs fails the whole call: name which
            for fqcn in fqcns:
                one = self.run([self.tool("ansible-doc"), "-t", "module", "--json", fqcn], isolated=True, env=env)
                if one.returncode == 0 and one.stdout.strip().startswith("{"):
                    rendered.update(json.loads(one.stdout))
                else:
                    alone = one
        undocumented = [f for f in fqcns if not (rendered.get(f) or {}).get("doc")]
        if undocumented:
            raise StepFailed("with no other collection installed, ansible-doc has no docs for %s:\n%s"
                             % (", ".join(undocumented), tail(alone.output, 8)))
        counts = {}
        for kind, name in documented:
            counts[kind] = counts.get(kind, 0) + 1
        version = re.search(r"galaxy-importer (\S+)", proc.output)
        return ("galaxy-importer %s: imported with no warning or error in %.0f s; %d modules and %d filters documented; "
                "the modules' docs render with no other collection installed" % (
            version.group(1) if version else "?", elapsed,
            sum(1 for (k, _n), d in documented.items() if k == "module" and d),
            sum(1 for (k, _n), d in documented.items() if k == "filter" and d)))

    def plugin_docs(self, root, plugin_type, names):
        """ansible-doc --json for `names` (one call; one call per plugin to pinpoint a failure)."""
        problems = []
        fqcns = ["%s.%s" % (self.fqcn, n) for n in names]
        proc = self.run([self.tool("ansible-doc"), "-t", plugin_type, "--json"] + fqcns, isolated=True)
        docs = {}
        if proc.returncode == 0 and proc.stdout.strip().startswith("{"):
            docs = json.loads(proc.stdout)
        if set(docs) != set(fqcns):
            for fqcn in fqcns:
                one = self.run([self.tool("ansible-doc"), "-t", plugin_type, "--json", fqcn], isolated=True)
                if one.returncode != 0 or not one.stdout.strip().startswith("{"):
                    problems.append("%s %s: ansible-doc rc=%d: %s" % (plugin_type, fqcn, one.returncode,
                                                                      tail(one.output, 8)))
                else:
                    docs.update(json.loads(one.stdout))
        for fqcn in fqcns:
            doc = (docs.get(fqcn) or {}).get("doc")
            if doc is None:
                continue
            if not doc.get("filename", "").startswith(root + os.sep):
                problems.append("%s %s: documented from %s, not from the installed copy"
                                % (plugin_type, fqcn, doc.get("filename")))
            if not doc.get("short_description"):
                problems.append("%s %s: no short_description" % (plugin_type, fqcn))
        return problems

    def step_module_docs(self):
        root = self.install()
        modules = self.modules(root)
        if not modules:
            raise StepFailed("the installed collection has no modules")
        problems = []
        counts = []
        # Modules, and the other documented plugin types the collection has (filter, test, lookup, ...).
        types = ["module"] + sorted(
            t for t in ("filter", "test", "lookup", "inventory", "callback", "connection", "become", "cache", "vars")
            if os.path.isdir(os.path.join(root, "plugins", t)))
        for plugin_type in types:
            proc = self.run([self.tool("ansible-doc"), "-t", plugin_type, "--list", "--json", self.fqcn], isolated=True)
            if proc.returncode != 0 or not proc.stdout.strip().startswith("{"):
                problems.append("ansible-doc -t %s --list %s rc=%d: %s" % (plugin_type, self.fqcn, proc.returncode,
                                                                         tail(proc.output, 8)))
                continue
            listed = sorted(k[len(self.fqcn) + 1:] for k in json.loads(proc.stdout))
            if plugin_type == "module" and listed != modules:
                problems.append("ansible-doc --list %s gives %s, the collection has %s" % (self.fqcn, listed, modules))
            if listed:
                problems.extend(self.plugin_docs(root, plugin_type, listed))
                counts.append("%d %s" % (len(listed), plugin_type if len(listed) == 1 else plugin_type + "s"))
        if problems:
            raise StepFailed("ansible-doc:\n" + "\n".join(problems))
        return "%s documented from the installed copy (modules: %s)" % (", ".join(counts), ", ".join(modules))

    def adhoc(self, module, args, check=False):
        cmd = [self.tool("ansible"), "localhost", "-m", "%s.%s" % (self.fqcn, module), "-a", json.dumps(args)]
        if check:
            cmd.append("--check")
        env = self.env(isolated=True)
        env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json",
                   ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        proc = self.run(cmd, isolated=True, env=env, timeout=120)
        try:
            data = json.loads(proc.stdout[proc.stdout.index("{"):])
            result = data["plays"][0]["tasks"][0]["hosts"]["localhost"]
        except (ValueError, KeyError, IndexError):
            raise StepFailed("ansible -m %s printed no result (rc=%d):\n%s" % (module, proc.returncode, tail(proc.output)))
        return proc.returncode, result

    def step_module_run(self):
        root = self.install()
        modules = self.modules(root)
        problems = []
        validation = ("Unsupported parameters for (%s." % self.fqcn, "missing required arguments",
                      "one of the following is required", "parameters are mutually exclusive",
                      "parameters are required together")
        # One `ansible` process per module, a few at a time (each is mostly Python start-up).
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            runs = list(pool.map(lambda m: self.adhoc(m, {"volfence_release_check": 1}), modules))
        for module, (rc, result) in zip(modules, runs):
            msg = result.get("msg", "")
            # ansible-core 2.21 puts "exception": "(traceback unavailable)" in every failure;
            # a crash (import error, exception) shows as MODULE FAILURE / module_stderr / a traceback.
            if "MODULE FAILURE" in msg or result.get("module_stderr") or "Traceback" in str(result.get("exception")):
                problems.append("%s: the module crashed: %s %s" % (module, msg, tail(result.get("module_stderr")
                                                                                    or result.get("exception") or "", 8)))
            elif rc != 2 or not result.get("failed") or not any(v in msg for v in validation):
                problems.append("%s: expected an argument validation failure (rc 2), got rc=%d: %s" % (module, rc, msg))
        checked = ["%d modules validate their arguments" % len(modules)]
        if "ceph_blocklist_info" in modules:
            keyring = os.path.join(self.work, "no-such.keyring")
            rc, result = self.adhoc("ceph_blocklist_info", {"keyring": keyring}, check=True)
            if rc != 2 or not result.get("failed") or keyring not in result.get("msg", ""):
                problems.append("ceph_blocklist_info with a missing keyring: expected a failure naming %s, got rc=%d: %s"
                                % (keyring, rc, result.get("msg")))
            else:
                checked.append("ceph_blocklist_info refuses a missing keyring (%s)" % result["msg"])
        if problems:
            raise StepFailed("modules run from the installed copy:\n" + "\n".join(problems))
        return "; ".join(checked)

    def kubernetes_core(self):
        found = sorted(glob.glob(os.path.join(VENV, "lib", "python*", "site-packages", "ansible_collections",
                                              "kubernetes", "core")))
        return found[-1] if found else None

    def step_ee_introspect(self):
        root = self.install()
        tree = os.path.join(self.work, "ee-tree")
        if os.path.isdir(tree):
            shutil.rmtree(tree)
        links = {(self.namespace, self.name): root}
        k8s = self.kubernetes_core()
        if k8s:
            links[("kubernetes", "core")] = k8s
        for (namespace, name), target in links.items():
            os.makedirs(os.path.join(tree, "ansible_collections", namespace), exist_ok=True)
            os.symlink(target, os.path.join(tree, "ansible_collections", namespace, name))
        pip_out = os.path.join(self.work, "ee-requirements.txt")
        bindep_out = os.path.join(self.work, "ee-bindep.txt")
        proc = self.expect_ok(self.run([self.tool("ansible-builder"), "introspect", tree, "--write-pip", pip_out,
                                        "--write-bindep", bindep_out]), "ansible-builder introspect")
        data = yaml.safe_load(proc.stdout) or {}
        source = "# from collection %s" % self.fqcn
        ours_py = sorted(requirement_name(l) for l in data.get("python") or [] if l.endswith(source))
        ours_sys = sorted(requirement_name(l) for l in data.get("system") or [] if l.endswith(source))
        with open(os.path.join(REPO, "meta", "ee-requirements.txt")) as handle:
            want_py = sorted(n for n in (requirement_name(l) for l in handle) if n)
        problems = []
        if ours_py != want_py or not {"kubernetes", "jmespath"} <= set(ours_py):
            problems.append("python requirements of %s: %s (meta/ee-requirements.txt: %s)" % (self.fqcn, ours_py, want_py))
        if not set(CEPH_SYSTEM_PACKAGES) <= set(ours_sys):
            problems.append("system requirements of %s: %s (want %s)" % (self.fqcn, ours_sys, CEPH_SYSTEM_PACKAGES))
        if k8s and not any(l.endswith("# from collection kubernetes.core") for l in data.get("python") or []):
            problems.append("kubernetes.core's requirements are missing: %s" % data.get("python"))
        # What the EE's final stage installs: bindep on the combined file, per platform.
        try:
            from bindep.depends import Depends
        except ImportError:
            raise StepFailed("bindep is not installed in %s (it comes with ansible-builder)" % VENV)
        with open(bindep_out) as handle:
            depends = Depends(handle.read())
        selected = {}
        for label, profiles in (("rpm/Fedora", ["platform:rpm", "platform:redhat", "platform:fedora"]),
                                ("rpm/CentOS", ["platform:rpm", "platform:redhat", "platform:centos"]),
                                ("dpkg/Debian", ["platform:dpkg", "platform:debian"])):
            packages = sorted(set(rule[0] for rule in depends.active_rules(profiles + ["default"])))
            selected[label] = packages
            if not set(CEPH_SYSTEM_PACKAGES) <= set(packages):
                problems.append("bindep on %s selects %s, missing %s" % (
                    label, packages, sorted(set(CEPH_SYSTEM_PACKAGES) - set(packages))))
        if problems:
            raise StepFailed("ansible-builder introspect:\n" + "\n".join(problems) + "\n--- output:\n" + proc.stdout)
        return "python %s, system %s; bindep selects them on %s" % (
            ", ".join(ours_py), ", ".join(ours_sys), ", ".join(sorted(selected)))

    def check_definition(self, relpath):
        """Static checks of an ansible-builder v3 definition (REPO/relpath) that installs kubernetes.core
        and this collection's tarball from the repository's dist/; returns (definition, base image, problems)."""
        definition = read_yaml(os.path.join(REPO, relpath))
        problems = []
        if definition.get("version") != 3:
            problems.append("%s: version %r, ansible-builder v3 wants 3" % (relpath, definition.get("version")))
        base_image = ((definition.get("images") or {}).get("base_image") or {}).get("name")
        if not base_image:
            problems.append("%s: no images.base_image.name" % relpath)
        deps = definition.get("dependencies") or {}
        galaxy_cols = (deps.get("galaxy") or {}).get("collections") or []
        by_name = dict((c.get("name"), c) for c in galaxy_cols)
        want_k8s = (self.galaxy.get("dependencies") or {}).get("kubernetes.core")
        if (by_name.get("kubernetes.core") or {}).get("version") != want_k8s:
            problems.append("%s: kubernetes.core %r, galaxy.yml dependencies say %r"
                            % (relpath, (by_name.get("kubernetes.core") or {}).get("version"), want_k8s))
        files = [c for c in galaxy_cols if c.get("type") == "file"]
        if [os.path.basename(c["name"]) for c in files] != [self.tarball_name]:
            problems.append("%s: the collection file entry is %s, galaxy.yml version %s makes %s"
                            % (relpath, [c["name"] for c in files], self.version, self.tarball_name))
        # additional_build_files' src is relative to the definition: the repository root's dist/.
        want_src = os.path.relpath(os.path.join(REPO, "dist", self.tarball_name),
                                   os.path.dirname(os.path.join(REPO, relpath)))
        sources = [f.get("src") for f in definition.get("additional_build_files") or []]
        if want_src not in sources:
            problems.append("%s: additional_build_files copies %s, not %s" % (relpath, sources, want_src))
        return definition, base_image, problems

    def builder_create(self, relpath, label):
        """ansible-builder create on REPO/relpath, as it is used: at the same place in a copy of the
        checkout's layout, beside a dist/ holding the tarball (the checkout stays untouched). Checks
        the Containerfile and that the context's collection file installs as the galaxy stage would.
        Returns (context folder, Containerfile text, collection names of requirements.yml, problems)."""
        tarball = self.tarball()
        defdir = os.path.join(self.work, "%s-definition" % label)
        context = os.path.join(self.work, "%s-context" % label)
        for path in (defdir, context):
            if os.path.isdir(path):
                shutil.rmtree(path)
        definition_copy = os.path.join(defdir, relpath)
        os.makedirs(os.path.dirname(definition_copy), exist_ok=True)
        os.makedirs(os.path.join(defdir, "dist"))
        shutil.copy(os.path.join(REPO, relpath), definition_copy)
        shutil.copy(tarball, os.path.join(defdir, "dist"))
        proc = self.expect_ok(self.run([self.tool("ansible-builder"), "create", "-f", definition_copy, "-c", context,
                                        "--output-filename", "Containerfile"], cwd=defdir),
                              "ansible-builder create -f %s" % relpath)
        problems = []
        if "No matches" in proc.output or "does not exist" in proc.output:
            problems.append("ansible-builder create warned: %s" % tail(proc.output, 10))
        with open(os.path.join(context, "Containerfile")) as handle:
            containerfile = handle.read()
        base_image = read_yaml(os.path.join(REPO, relpath))["images"]["base_image"]["name"]
        for needle in ('ARG EE_BASE_IMAGE="%s"' % base_image, "FROM $EE_BASE_IMAGE AS base",
                       "ansible-galaxy collection install", "introspect.py introspect", "install-from-bindep",
                       "LABEL ansible-execution-environment=true"):
            if needle not in containerfile:
                problems.append("Containerfile lacks %r" % needle)
        build = os.path.join(context, "_build")
        requirements = read_yaml(os.path.join(build, "requirements.yml")) or {}
        names = [c.get("name") for c in requirements.get("collections") or []]
        if "kubernetes.core" not in names:
            problems.append("_build/requirements.yml lacks kubernetes.core: %s" % names)
        # The galaxy stage runs `ansible-galaxy collection install -r requirements.yml` in /build
        # (= _build): the file entry must be there and install (here offline, without kubernetes.core).
        installed_version = None
        for entry in requirements.get("collections") or []:
            if entry.get("type") != "file":
                continue
            path = os.path.join(build, entry["name"])
            if not os.path.exists(path):
                problems.append("the galaxy stage would not find %s in the build context" % entry["name"])
                continue
            target = os.path.join(self.work, "%s-galaxy-stage" % label)
            if os.path.isdir(target):
                shutil.rmtree(target)
            proc = self.run([self.tool("ansible-galaxy"), "collection", "install", "--offline", "--no-deps",
                             "-p", target, entry["name"]], cwd=build, isolated=True,
                            env=dict(self.env(isolated=True, collections_path=target)))
            manifest = os.path.join(target, "ansible_collections", self.namespace, self.name, "MANIFEST.json")
            if proc.returncode != 0 or not os.path.exists(manifest):
                problems.append("installing %s as the galaxy stage does failed (rc=%d): %s"
                                % (entry["name"], proc.returncode, tail(proc.output, 10)))
                continue
            installed_version = json.load(open(manifest))["collection_info"]["version"]
        if installed_version != self.version:
            problems.append("the build context's collection file installs version %s, galaxy.yml is %s"
                            % (installed_version, self.version))
        return context, containerfile, names, problems

    def step_ee_create(self):
        _, base_image, problems = self.check_definition("execution-environment.yml")
        if problems:
            raise StepFailed("\n".join(problems))
        _, _, names, problems = self.builder_create("execution-environment.yml", "ee")
        if problems:
            raise StepFailed("ansible-builder create:\n" + "\n".join(problems))
        return "context with Containerfile (base %s), requirements.yml %s, %s installs as the galaxy stage does" % (
            base_image, names, self.tarball_name)

    def step_de_create(self):
        definition, base_image, problems = self.check_definition(DE_DEFINITION)
        deps = definition.get("dependencies") or {}
        python = [requirement_name(r) for r in deps.get("python") or []]
        if "kubernetes" not in python:
            problems.append("%s: dependencies.python %s lacks kubernetes (the event source's client)"
                            % (DE_DEFINITION, python))
        # The DE runs ansible-rulebook from its base image: a definition installing ansible-core or
        # ansible-runner over it would replace the image's own.
        for key in ("ansible_core", "ansible_runner"):
            if key in deps:
                problems.append("%s: dependencies.%s would replace the base image's" % (DE_DEFINITION, key))
        if problems:
            raise StepFailed("\n".join(problems))
        context, containerfile, names, problems = self.builder_create(DE_DEFINITION, "de")
        build = os.path.join(context, "_build")
        with open(os.path.join(build, "requirements.txt")) as handle:
            pip = [requirement_name(l) for l in handle]
        if "kubernetes" not in pip:
            problems.append("_build/requirements.txt lacks kubernetes: %s" % pip)
        # The Ceph client is left out of the DE (the Ceph modules run in the EE): the build's
        # introspection must get the exclusion, or the final stage needs a Ceph repository.
        excluded = []
        if os.path.exists(os.path.join(build, "exclude-bindep.txt")):
            with open(os.path.join(build, "exclude-bindep.txt")) as handle:
                excluded = [requirement_name(l) for l in handle]
        if not set(CEPH_SYSTEM_PACKAGES) <= set(excluded) or "--exclude-bindep-reqs" not in containerfile:
            problems.append("the Ceph client is not excluded from the DE: exclude-bindep.txt %s" % excluded)
        if problems:
            raise StepFailed("ansible-builder create (%s):\n%s" % (DE_DEFINITION, "\n".join(problems)))
        return "context with Containerfile (base %s), requirements.yml %s, requirements.txt %s, %s excluded" % (
            base_image, names, ", ".join(n for n in pip if n), ", ".join(CEPH_SYSTEM_PACKAGES))

    def step_eda(self):
        """The installed copy's EDA content as ansible-rulebook finds it (no JVM, no event is run)."""
        root = self.install()
        sources = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(root, EDA_SOURCES, "*.py"))
                         if not os.path.basename(p).startswith("_"))
        problems = []
        for name in sources:
            path = os.path.join(root, EDA_SOURCES, name + ".py")
            with open(path) as handle:
                text = handle.read()
            try:
                tree = ast.parse(text, path)
            except SyntaxError as exc:
                problems.append("event source %s: %s" % (name, exc))
                continue
            mains = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "main"]
            if not mains or not isinstance(mains[0], ast.AsyncFunctionDef) or len(mains[0].args.args) != 2:
                problems.append("event source %s: no top-level `async def main(queue, args)`" % name)
            for node in tree.body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                        and node.targets[0].id in ("DOCUMENTATION", "EXAMPLES") and isinstance(node.value, ast.Constant)):
                    try:
                        yaml.safe_load(node.value.value)
                    except yaml.YAMLError as exc:
                        problems.append("event source %s: %s is not YAML: %s" % (name, node.targets[0].id, exc))
        # Rulebooks: ansible-rulebook's own lookup (ansible-galaxy collection list on the installed
        # path only), its JSON schema and its condition parser, in the venv's Python.
        proc = self.run([os.path.join(VENV_BIN, "python"), "-c", EDA_RULEBOOK_CHECK, self.fqcn, root], isolated=True)
        try:
            found = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise StepFailed("the rulebook check printed no result (rc=%d):\n%s" % (proc.returncode, tail(proc.output)))
        problems.extend(found["problems"])
        if problems:
            raise StepFailed("EDA content of the installed copy:\n" + "\n".join(problems))
        return "event sources %s; rulebooks %s load, validate and parse as ansible-rulebook does" % (
            ", ".join(sources) or "none", ", ".join(found["rulebooks"]) or "none")

    def step_docs(self):
        proc = self.run([os.path.join(REPO, "scripts", "build_docs.sh"), "--check"], timeout=300)
        if proc.returncode == 3:
            raise StepFailed("plugin docs: docs lint findings or docs/modules out of date (`make docs`):\n%s"
                             % tail(proc.output, 30))
        self.expect_ok(proc, "scripts/build_docs.sh --check")
        return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "docs current"


# (step name, Release method): in the order scripts/check_release.sh runs them.
STEPS = [
    ("changelog", "step_changelog"),
    ("ansible-lint", "step_ansible_lint"),
    ("galaxy-build", "step_galaxy_build"),
    ("galaxy-install", "step_galaxy_install"),
    ("galaxy-importer", "step_galaxy_importer"),
    ("module-docs", "step_module_docs"),
    ("module-run", "step_module_run"),
    ("ee-introspect", "step_ee_introspect"),
    ("ee-create", "step_ee_create"),
    ("de-create", "step_de_create"),
    ("eda", "step_eda"),
    ("docs", "step_docs"),
]
STEP_NAMES = [name for name, _ in STEPS]


def run_step(release, name):
    """Run one step; returns its one-line summary or raises StepFailed."""
    return getattr(release, dict(STEPS)[name])()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="check_release.sh", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", action="append", choices=STEP_NAMES, metavar="STEP",
                        help="run only this step (repeatable): %s" % ", ".join(STEP_NAMES))
    parser.add_argument("--work", help="work folder (default: a temporary one, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument("--list", action="store_true", help="list the steps and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the commands")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(STEP_NAMES))
        return 0
    names = [n for n in STEP_NAMES if n in (args.step or STEP_NAMES)]
    work = args.work or tempfile.mkdtemp(prefix="volfence-release.")
    release = Release(work, verbose=args.verbose)
    passed = failed = 0
    started = time.time()
    try:
        for name in names:
            print("===== %s" % name, flush=True)
            step_started = time.time()
            try:
                summary = run_step(release, name)
            except StepFailed as exc:
                failed += 1
                print("FAILED %s (%.1f s)\n%s" % (name, time.time() - step_started, exc), flush=True)
            else:
                passed += 1
                print("PASSED %s (%.1f s): %s" % (name, time.time() - step_started, summary), flush=True)
    finally:
        if args.work or args.keep:
            print("work folder: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("===== %.0f s" % (time.time() - started))
    print("release: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

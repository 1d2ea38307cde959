"""The lab and the API emulator stay independent of the code under test (docs/lab.md): no module of
theirs imports the collection, so no test can pass because the lab shares one of its bugs."""

import ast
import os

import pytest

TOOLS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = [os.path.join(TOOLS, "lab", "volfence_lab"), os.path.join(TOOLS, "kubeemu", "kubeemu")]


def python_files():
    return sorted(os.path.join(top, name) for package in PACKAGES for top, _dirs, files in os.walk(package)
                  for name in files if name.endswith(".py"))


def imported_modules(path):
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    for item in ast.walk(tree):
        if isinstance(item, ast.Import):
            for alias in item.names:
                yield alias.name
        elif isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
            yield item.module


def test_the_tools_have_modules_to_check():
    assert len(python_files()) > 10


# The Ansible starter is the `ansible` program itself, started once: it imports ansible-core to run the
# CLI's own main() in each fork (volfence_lab/ansible_starter.py), never the collection.
ANSIBLE_ITSELF = os.path.join(TOOLS, "lab", "volfence_lab", "ansible_starter.py")


@pytest.mark.parametrize("path", python_files(), ids=lambda p: os.path.relpath(p, TOOLS))
def test_no_tool_module_imports_the_collection_or_ansible(path):
    forbidden = ("ansible_collections", "ansible_test") + (() if path == ANSIBLE_ITSELF else ("ansible",))
    found = [name for name in imported_modules(path) if name.split(".")[0] in forbidden]
    assert found == [], "%s imports %s: the lab runs the collection only as Ansible programs" % (path, found)

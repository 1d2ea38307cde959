"""scripts/quick_check.py (`make check`) picks the tests of what a change touches, on this repository's
own files: no lab needed."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import quick_check  # noqa: E402  (scripts/quick_check.py, by its folder)


def test_a_playbook_selects_the_tests_that_run_it_and_no_unit_test():
    plan = quick_check.select(["playbooks/node_recover.yml"])
    assert "tests/integration/playbooks/test_node_recover.py" in plan["integration"]
    assert "tests/integration/playbooks/test_readiness.py" not in plan["integration"]
    assert plan["units"] == [] and plan["sanity"] == ["playbooks/node_recover.yml"] and plan["tools"] == []


def test_a_module_utils_change_reaches_the_modules_and_playbooks_that_import_it():
    plan = quick_check.select(["plugins/module_utils/_ceph/ops.py"])
    assert "tests/unit/plugins/module_utils/test__ceph_ops.py" in plan["units"]
    # failed_nodes_fence imports _ceph.ops; node_failover.yml runs failed_nodes_fence
    assert "tests/integration/ceph/test_ceph_failover_fence.py" in plan["integration"]
    assert "tests/integration/playbooks/test_node_failover.py" in plan["integration"]
    assert plan["why"]["tests/integration/playbooks/test_node_failover.py"] == "plugins/module_utils/_ceph/ops.py"
    # a module_utils nothing Ceph-facing imports leaves the Kubernetes-only unit tests out
    assert "tests/unit/plugins/module_utils/test__k8s_watch.py" not in plan["units"]


def test_the_lab_selects_its_own_tests_and_the_areas_that_run_on_it():
    plan = quick_check.select(["tools/lab/volfence_lab/lab.py"])
    assert plan["tools"] == ["tools/lab/tests"]
    assert "tests/integration/lab/test_lab.py" in plan["integration"]
    assert not [t for t in plan["integration"] if t.startswith("tests/integration/playbooks/")]


def test_docs_get_sanity_only_and_a_deleted_file_nothing():
    plan = quick_check.select(["README.md", "plugins/modules/no_such_module.py"])
    assert plan["sanity"] == ["README.md"] and plan["units"] == plan["integration"] == plan["tools"] == []


def test_a_changed_test_helper_selects_its_area():
    plan = quick_check.select(["tests/integration/conftest.py"])
    assert "tests/integration/playbooks/test_node_failover.py" in plan["integration"]
    assert "tests/integration/ceph/test_ceph_modules.py" in plan["integration"]
    assert plan["units"] == []

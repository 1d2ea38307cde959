"""The lab's Kubernetes clocks (volfence_lab.clocks) and the pure rules of its control plane."""

import os

import pytest

from volfence_lab import clocks
from volfence_lab.kubesim import NOT_READY_TAINT, OUT_OF_SERVICE_TAINT, UNREACHABLE_TAINT, toleration_seconds


def test_real_clocks_are_kubernetes_defaults():
    real = clocks.clocks("real")
    assert (real.heartbeat, real.node_grace, real.eviction, real.force_detach) == (10.0, 50.0, 300.0, 360.0)
    assert (real.attachment_sync, real.pod_gc, real.lease_duration, real.mount_retry_max) == (60.0, 20.0, 40, 122.0)


def test_never_has_no_eviction_nor_force_detach_and_fast_has_both():
    never, fast = clocks.clocks("never"), clocks.clocks("fast")
    assert never.eviction is None and never.force_detach is None
    assert fast.eviction == 5.0 and fast.force_detach == 6.0
    assert never.node_grace == fast.node_grace == 4.0


def test_a_lab_without_a_clocks_file_is_fast_and_a_written_mode_is_followed(tmp_path):
    follower = clocks.Follower(str(tmp_path))
    assert clocks.read_mode(str(tmp_path)) == "fast" and follower.get().mode == "fast"
    clocks.write(str(tmp_path), "never")
    assert follower.get().mode == "never"
    clocks.write(str(tmp_path), "real")
    os.utime(clocks.path(str(tmp_path)), ns=(1, 1))  # a change within the same tick is still seen
    assert follower.get().mode == "real"


def test_an_unknown_mode_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(ValueError, match="unknown clocks 'slow'"):
        clocks.write(str(tmp_path), "slow")
    assert not os.path.exists(clocks.path(str(tmp_path)))
    (tmp_path / "clocks").write_text("garbage\n")
    assert clocks.read_mode(str(tmp_path)) == "fast"


def pod(*tolerations):
    return {"spec": {"tolerations": list(tolerations)}}


@pytest.mark.parametrize("taint_key, default, expected", [
    (UNREACHABLE_TAINT, 300.0, 300.0),   # DefaultTolerationSeconds
    (NOT_READY_TAINT, 300.0, 300.0),
    (UNREACHABLE_TAINT, None, None),      # never: tolerated forever
    (OUT_OF_SERVICE_TAINT, 300.0, False),  # no default toleration: evicted at once
])
def test_a_pod_naming_no_toleration_gets_the_defaults(taint_key, default, expected):
    assert toleration_seconds(pod(), {"key": taint_key, "effect": "NoExecute"}, default) == expected


def test_a_pods_own_tolerations_win():
    taint = {"key": UNREACHABLE_TAINT, "effect": "NoExecute"}
    assert toleration_seconds(pod({"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute",
                                   "tolerationSeconds": 30}), taint, 300.0) == 30
    assert toleration_seconds(pod({"operator": "Exists"}), taint, 300.0) is None  # tolerates everything
    assert toleration_seconds(pod({"key": "other", "operator": "Exists"}), taint, 300.0) == 300.0
    both = pod({"key": UNREACHABLE_TAINT, "operator": "Exists", "tolerationSeconds": 60},
               {"key": UNREACHABLE_TAINT, "operator": "Exists", "tolerationSeconds": 10})
    assert toleration_seconds(both, taint, 300.0) == 10
    oos = {"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}
    assert toleration_seconds(pod({"key": OUT_OF_SERVICE_TAINT, "operator": "Equal", "value": "nodeshutdown"}),
                              oos, 300.0) is None

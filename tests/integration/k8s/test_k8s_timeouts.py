"""I8: every Kubernetes module is bounded in time against an API server that accepts connections and
never answers (a hung apiserver, a black-holing load balancer). A local TCP server on 127.0.0.1 plays
that server; the modules run through `ansible` as a user runs them. Independent of the emulator, so
it runs the same way with KUBECONFIG set (the modules get this server's kubeconfig explicitly)."""

import subprocess
import time

import pytest

from k8s_helpers import AnsibleRunner

# The hung server of the unit tests of connect() (the collection as `make setup` links it: pytest.ini)
from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.k8s_fakes import SilentServer


@pytest.fixture
def silent(tmp_path):
    server = SilentServer()
    try:
        yield server, AnsibleRunner(tmp_path, kubeconfig=server.write_kubeconfig(tmp_path / "kubeconfig"))
    finally:
        server.close()


@pytest.mark.parametrize("module, args", [
    ("volumeattachment_info", {}),
    ("volumeattachment", {"node": "vft-hung"}),
    ("networkfence_info", {}),
    ("networkfence", {"name": "vft-hung", "cidrs": ["198.51.100.12"], "fence_state": "Fenced",
                      "network_fence_class": "vft-class"}),
])
def test_a_server_that_never_answers_fails_within_request_timeout_i8(silent, module, args):
    """I8: connect and API discovery against a hung server end after request_timeout, with a clear message.
    Before, the module still hung at 40 s whatever request_timeout said."""
    server, runner = silent
    proc = runner.start(module, dict(args, request_timeout=3, api_retries=0))
    try:
        result = runner.finish(proc, timeout=90)   # generous: what this test catches is a hang
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("%s still runs after 90 s against a server that never answers (request_timeout=3)" % module)
    ended = time.monotonic()
    assert server.accepted, "the module never reached the server"
    assert result["_rc"] != 0 and result["failed"], result
    assert "The Kubernetes API at http://127.0.0.1:%d is not reachable" % server.port in result["msg"], result["msg"]
    assert "timed out after request_timeout=3s" in result["msg"] and "nothing was done" in result["msg"]
    assert not result.get("changed")
    # Measured from the first connection, so Ansible's start-up (long on a loaded machine) is left out:
    # the fix gives up about request_timeout (3 s) after it, the defect held on for about 40 s; the
    # bound sits halfway.
    waited = ended - server.first_accepted_at
    assert waited < 20, "%.1f s after the first connection" % waited

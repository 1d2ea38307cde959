"""kubeemu.client.KubeClient, the lab's and the tests' own client: one kept-alive connection per thread
(issue 44: the lab's kubelets and controllers polled with a new connection every half second)."""

import socket
import threading

import pytest

from kube_helpers import EMULATOR_ONLY, REAL_CLUSTER
from kubeemu.client import Admin, ApiError, KubeClient

pytestmark = pytest.mark.skipif(REAL_CLUSTER, reason=EMULATOR_ONLY)


def clients_since(admin, seq, agent):
    return [r["client"] for r in admin.requests(since=seq) if r.get("user_agent") == agent]


def test_one_connection_per_thread_whatever_the_answer(kubeemu):
    admin = Admin(kubeemu.url)
    seq = admin.last_seq()
    kube = KubeClient(kubeemu.url, user_agent="vft-keepalive")
    for _ in range(20):
        kube.list("nodes")
    with pytest.raises(ApiError) as info:
        kube.get("nodes", "vft-no-such-node")
    assert info.value.status == 404 and info.value.reason == "NotFound"
    kube.list("namespaces")   # an error answer leaves the connection usable
    used = clients_since(admin, seq, "vft-keepalive")
    assert len(used) == 22 and len(set(used)) == 1, used

    def other_thread():
        kube.list("nodes")
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    used = clients_since(admin, seq, "vft-keepalive")
    assert len(set(used)) == 2, used


def test_a_connection_the_server_closed_is_replaced(kubeemu):
    admin = Admin(kubeemu.url)
    seq = admin.last_seq()
    kube = KubeClient(kubeemu.url, user_agent="vft-stale")
    kube.list("nodes")
    for conn in list(kubeemu._conns):   # the server ends every connection it holds, as at an idle timeout
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    created = kube.create("namespaces", {"metadata": {"name": "vft-stale-conn"}})
    assert created["metadata"]["name"] == "vft-stale-conn"
    kube.delete("namespaces", "vft-stale-conn")
    used = clients_since(admin, seq, "vft-stale")
    assert len(used) == 3 and len(set(used)) == 2, used
    # the write went once
    posts = [r for r in admin.requests(since=seq, method="POST") if r.get("user_agent") == "vft-stale"]
    assert len(posts) == 1


def test_an_unreachable_server_is_an_os_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kube = KubeClient("http://127.0.0.1:%d" % port, timeout=2)
    with pytest.raises(OSError):
        kube.list("nodes")

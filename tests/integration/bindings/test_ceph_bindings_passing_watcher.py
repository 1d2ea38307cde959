"""node_failover's fence beside a CSI controller that opens the failed node's image for a moment, on
the real cluster, in process.

ceph-csi's controller plugin opens the image on ControllerUnpublish (it reads and removes the client
address it recorded at NodeStage, and with --enable-fencing blocklists it meanwhile): for that moment
Ceph lists a watcher that no node owns. Read once, the fence plan keeps it as unknown and node_failover
fails the release (I6). Here this test's own client is that controller: it opens the image from the
host (an address no node lists) and closes it when the fence first waits to read again. That wait is
the state the test needs; nothing is timed.

Run with the lab release's Python (python3-rados/-rbd), like the other bindings tests.
"""

import datetime
import json
import time

import pytest

rados = pytest.importorskip("rados")
rbd = pytest.importorskip("rbd")

from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import connect, parse_image_spec  # noqa: E402
from ansible_collections.volfence.csi.plugins.module_utils._clock import Clock  # noqa: E402
from ansible_collections.volfence.csi.plugins.module_utils._ceph.ops import fence_failed_nodes  # noqa: E402
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import NodeMap  # noqa: E402
from labtools import blocklist_entries  # noqa: E402


def k8s_time(age):
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=age)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cluster_objects(lab, failed):
    nodes = [dict(metadata=dict(name=n), status=dict(
        addresses=[dict(type="InternalIP", address=ip)],
        conditions=[dict(type="Ready", status="Unknown" if n == failed else "True", lastTransitionTime=k8s_time(900))],
        nodeInfo=dict(bootID="boot-" + n))) for n, ip in sorted(lab.nodes.items())]
    leases = [dict(metadata=dict(name=n, namespace="kube-node-lease"),
                   spec=dict(holderIdentity=n, leaseDurationSeconds=40, renewTime=k8s_time(3600 if n == failed else 2)))
              for n in sorted(lab.nodes)]
    return nodes, leases


class ControllerOpen(object):
    """The image opened read-write from the host, as ceph-csi's controller plugin does during
    ControllerUnpublish; closed at the fence's first wait (`sleep`)."""

    def __init__(self, lab, spec):
        pool, name = spec.split("/", 1)
        self.cluster = rados.Rados(conffile=lab.conf, rados_id=lab.user, conf={"keyring": lab.keyring})
        self.cluster.connect(timeout=10)
        self.ioctx = self.cluster.open_ioctx(pool)
        self.image = rbd.Image(self.ioctx, name)
        self.sleeps = 0

    def sleep(self, seconds):
        if self.image is None:
            time.sleep(seconds)
            return
        self.sleeps += 1
        self.close()

    def close(self):
        if self.image is not None:
            self.image.close()
            self.ioctx.close()
            self.cluster.shutdown()
            self.image = None


@pytest.mark.parametrize("backend", ["rados", "cli"])
def test_a_controller_that_opens_the_image_for_a_moment_is_read_again_not_kept(clean_lab, backend):
    lab = clean_lab
    spec = lab.new_image("passing")
    held = json.loads(lab.lab("hold", "node-b", spec))
    controller = ControllerOpen(lab, spec)
    try:
        before = sorted(w["address"] for w in lab.watchers(spec))
        passing = [a for a in before if a != held["address"]]
        assert len(before) == 2 and len(passing) == 1, before
        assert passing[0].split(":")[0] not in lab.nodes.values()  # no node lists the host's address
        client = connect(dict(cluster="ceph", conf=lab.conf, keyring=lab.keyring, key=None, user=lab.user,
                              mon_host=None, timeout=10, backend=backend, command_prefix=None))
        nodes, leases = cluster_objects(lab, "node-b")
        try:
            node_map = NodeMap(dict((n, [ip]) for n, ip in lab.nodes.items()))
            out = fence_failed_nodes(client, [parse_image_spec(spec)], failed_nodes=["node-b"], nodes=nodes, leases=leases,
                                     node_map=node_map, expire=300, wait_timeout=60, settle_timeout=30,
                                     clock=Clock(sleep=controller.sleep))
        finally:
            client.close()
    finally:
        controller.close()
    # the plan was made once the controller had closed the image: nothing kept, node-b's client fenced
    assert controller.sleeps == 1
    assert out["plan"]["kept"] == [] and out["plan"]["fence"] == [held["address"]], out["plan"]
    assert out["passed"] == [dict(image=spec, address=passing[0])]
    assert out["still"] == [] and held["address"] in blocklist_entries(lab)

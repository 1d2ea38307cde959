"""The later benchmark creates/patches 1,000 NetworkFences and lists them: keep it fast."""

import time

import pytest

from kube_helpers import REAL_CLUSTER, unique
from kube_crds import GROUP, VERSION, networkfence

N = 1000


@pytest.mark.skipif(REAL_CLUSTER, reason="would create 1,000 objects on a real cluster")
def test_thousand_network_fences(custom, csiaddons_crds):
    prefix = unique("bench")
    t0 = time.time()
    for i in range(N):
        body = networkfence("%s-%04d" % (prefix, i), cidrs=["10.%d.%d.%d/32" % (i // 65536, i // 256 % 256, i % 256)])
        body["metadata"]["labels"] = {"bench": prefix}
        custom.create_cluster_custom_object(GROUP, VERSION, "networkfences", body)
    t_create = time.time() - t0
    t0 = time.time()
    for i in range(N):
        custom.patch_cluster_custom_object_status(GROUP, VERSION, "networkfences", "%s-%04d" % (prefix, i),
                                                  {"status": {"result": "Succeeded"}})
    t_patch = time.time() - t0
    t0 = time.time()
    lst = custom.list_cluster_custom_object(GROUP, VERSION, "networkfences", label_selector="bench=" + prefix)
    t_list = time.time() - t0
    assert len(lst["items"]) == N
    assert all(i["status"]["result"] == "Succeeded" for i in lst["items"])
    t0 = time.time()
    custom.delete_collection_cluster_custom_object(GROUP, VERSION, "networkfences",
                                                   label_selector="bench=" + prefix)
    t_delete = time.time() - t0
    print("\n%d NetworkFences: create %.2fs, patch %.2fs, list %.2fs, deletecollection %.2fs"
          % (N, t_create, t_patch, t_list, t_delete))
    assert not custom.list_cluster_custom_object(GROUP, VERSION, "networkfences",
                                                 label_selector="bench=" + prefix)["items"]
    # generous bounds: 2 cores, shared machine
    assert t_create < 20 and t_patch < 20 and t_list < 5 and t_delete < 10

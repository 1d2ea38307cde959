"""How the lab names and finds its RBD volumes as ceph-csi does (volume IDs, RADOS namespaces, image
features), and the settings of its writing holders and frozen nodes: the parts that need no lab."""

import pytest

from volfence_lab import lab, scenarios
from volfence_lab.kubesim import compose_volume_id, csi_image_spec, split_spec, volume_id_cluster

UUID = "1f8b8442-eb0f-11f1-bfc0-02fc00000001"


def test_a_volume_id_is_composed_as_ceph_csi_composes_it_and_gives_its_cluster_back():
    # internal/util/volid.go: version, clusterID length, clusterID, pool ID (16 hex digits), image UUID
    assert compose_volume_id("lab", 2, UUID) == "0001-0003-lab-0000000000000002-" + UUID
    assert compose_volume_id("lab-tenant-a", 2, UUID) == "0001-000c-lab-tenant-a-0000000000000002-" + UUID
    assert volume_id_cluster(compose_volume_id("lab-tenant-a", 2, UUID)) == "lab-tenant-a"
    assert volume_id_cluster("0001-0009-rook-0000000000000001-" + UUID) == "rook-0000"  # read as ceph-csi reads it


@pytest.mark.parametrize("bad", ["", "bucket-1", "zzzz-0003-lab", "0001-00zz-lab-0000000000000002-" + UUID,
                                 "0001-0040-lab-0000000000000002-" + UUID])
def test_what_is_no_volume_id_has_no_cluster(bad):
    assert volume_id_cluster(bad) is None


def test_a_volume_id_too_long_for_ceph_csi_is_refused():
    with pytest.raises(ValueError):
        compose_volume_id("c" * 65, 2, UUID)


def pv(cluster="lab", attrs=None):
    attributes = {"clusterID": cluster, "pool": "rbd", "imageName": "csi-vol-" + UUID}
    attributes.update(attrs or {})
    return {"spec": {"csi": {"volumeHandle": compose_volume_id(cluster, 2, UUID), "volumeAttributes": attributes}}}


CLUSTERS = {"lab": {"clusterID": "lab", "monitors": ["10.231.1.1:6789"]},
            "lab-tenant-a": {"clusterID": "lab-tenant-a", "monitors": ["10.231.1.1:6789"],
                             "rbd": {"radosNamespace": "tenant-a"}}}


def test_the_namespace_of_an_image_is_the_one_ceph_csi_config_gives_the_cluster_of_its_volume_id():
    assert csi_image_spec(pv(), CLUSTERS) == "rbd/csi-vol-" + UUID
    assert csi_image_spec(pv("lab-tenant-a"), CLUSTERS) == "rbd/tenant-a/csi-vol-" + UUID
    # the attribute alone does not move an image: ceph-csi reads its config, as the lab does
    assert csi_image_spec(pv("lab", {"radosNamespace": "tenant-a"}), CLUSTERS) == "rbd/csi-vol-" + UUID


def test_a_static_volume_takes_its_cluster_from_its_attributes():
    static = pv("lab", {"staticVolume": "true", "clusterID": "lab-tenant-a"})
    assert csi_image_spec(static, CLUSTERS) == "rbd/tenant-a/csi-vol-" + UUID


def test_a_cluster_the_config_does_not_list_fails_as_in_ceph_csi():
    with pytest.raises(lab.LabError, match="missing configuration for cluster ID 'other'"):
        csi_image_spec(pv("other"), CLUSTERS)


def test_an_image_spec_splits_into_pool_namespace_and_image():
    assert split_spec("rbd/img") == ("rbd", "", "img")
    assert split_spec("rbd/tenant-a/img") == ("rbd", "tenant-a", "img")


@pytest.mark.parametrize("value, features", [
    (None, "layering"), ("", "layering"), ("layering", "layering"), ("default", None),
    ("layering, exclusive-lock", "layering,exclusive-lock")])
def test_images_get_layering_as_ceph_csis_example_storage_class_unless_lab_image_features_says_otherwise(
        value, features):
    environ = {} if value is None else {"LAB_IMAGE_FEATURES": value}
    assert scenarios.image_features_setting(environ) == features


@pytest.mark.parametrize("value", ["layring", ",", "layering,turbo"])
def test_an_unknown_image_feature_is_refused(value):
    with pytest.raises(lab.LabError, match="image features must be"):
        scenarios.image_features_setting({"LAB_IMAGE_FEATURES": value})


@pytest.mark.parametrize("value, seconds", [(None, 0.5), ("2", 2.0), ("0", None), ("0.25", 0.25)])
def test_stage_holders_write_every_half_second_unless_lab_write_every_says_otherwise(value, seconds):
    assert lab.write_every({} if value is None else {"LAB_WRITE_EVERY": value}) == seconds


@pytest.mark.parametrize("value", ["often", "-1"])
def test_a_bad_write_interval_is_refused(value):
    with pytest.raises(lab.LabError, match="LAB_WRITE_EVERY"):
        lab.write_every({"LAB_WRITE_EVERY": value})


@pytest.mark.parametrize("command", ["pause-node", "resume-node", "partition-node", "heal-node"])
def test_freezing_an_unknown_node_is_refused(tmp_path, monkeypatch, capsys, command):
    monkeypatch.setenv("LAB_DIR", str(tmp_path))
    assert lab.main([command, "node-x"]) == 1
    assert "unknown node 'node-x' (lab nodes: node-a, node-b, node-c)" in capsys.readouterr().err


def test_the_frozen_node_scenarios_are_registered():
    assert scenarios.SCENARIOS["frozen-rbd-watcher"] is scenarios.frozen_rbd_watcher
    assert set(scenarios.FREEZE) == {"pause", "partition"}
    with pytest.raises(lab.LabError, match="how must be one of partition, pause"):
        scenarios.frozen_rbd_watcher(lab.Config({"LAB_DIR": "/nonexistent"}), how="suspend")

"""The lab's configuration from its environment (volfence_lab.lab.Config) and the env file it writes."""

import pytest

from volfence_lab import lab


def test_a_lab_has_its_kubernetes_side_unless_lab_kube_is_none(tmp_path):
    assert lab.Config({"LAB_DIR": str(tmp_path)}).kube == "lab"
    assert lab.Config({"LAB_DIR": str(tmp_path), "LAB_KUBE": "none"}).kube == "none"


def test_an_unknown_kube_side_is_refused():
    with pytest.raises(lab.LabError, match="LAB_KUBE must be one of lab, none, got 'off'"):
        lab.Config({"LAB_KUBE": "off"})


@pytest.mark.parametrize("kube", ["lab", "none"])
def test_the_env_file_names_a_kubeconfig_only_where_the_lab_has_one(tmp_path, kube):
    cfg = lab.Config({"LAB_DIR": str(tmp_path), "LAB_KUBE": kube, "LAB_SLOT": "7"})
    cfg.version = "20.2.4"
    lab.write_env(cfg)
    env = lab.read_env(str(tmp_path))
    assert env["LAB_KUBE"] == kube
    assert ("KUBECONFIG" in env) == (kube == "lab")
    if kube == "lab":
        assert env["KUBECONFIG"] == str(tmp_path / "kubeconfig")


def test_commands_that_act_through_kubernetes_refuse_a_lab_without_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAB_DIR", str(tmp_path))
    for command in (["kill-node", "node-b"], ["scenario", "stale-rbd-watcher"]):
        assert lab.main(command) == 1
        assert "needs the lab's Kubernetes side, and this lab has none" in capsys.readouterr().err

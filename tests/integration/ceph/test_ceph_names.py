"""Issue 16 on the lab's real cluster: the read-only RBD modules under their `_info` names, and
the old ones kept working.

* volfence.csi.rbd_watchers is routed to rbd_watchers_info (meta/runtime.yml plugin_routing): it
  runs, answers the same, gets its connection options from module_defaults group/volfence.csi.ceph,
  and ansible-core prints the deprecation with its removal version.
* rbd_lock_info lists what rbd_lock without state listed; that use of rbd_lock still works and
  returns a deprecation that points to rbd_lock_info.
* image_spec names the image in one string, in a playbook, as the playbooks now pass it.
"""

import json

from labtools import blocklist_entries as blocklist, run_playbook

PLAYBOOK = """---
- name: The RBD modules by their old and new names, connection options from the ceph group only
  hosts: ceph-admin
  gather_facts: false
  module_defaults:
    group/volfence.csi.ceph:
      conf: {conf}
      keyring: {keyring}
      user: {user}
      backend: rados
      timeout: 20
  tasks:
    - name: Watchers by the old name
      volfence.csi.rbd_watchers:
        images: [{image}]
        node_addresses: {nodes}
    - name: Watchers by the new name
      volfence.csi.rbd_watchers_info:
        image_spec: {image}
        node_addresses: {nodes}
    - name: Locks by rbd_lock_info
      volfence.csi.rbd_lock_info:
        image_spec: {image}
        node_addresses: {nodes}
    - name: Locks by rbd_lock without state
      volfence.csi.rbd_lock:
        image_spec: {image}
        node_addresses: {nodes}
"""


def test_old_and_new_names_answer_the_same_and_the_old_ones_warn(clean_lab, lab_inventory, tmp_path):
    lab = clean_lab
    image = lab.new_image("names")
    held = lab.hold("node-b", image, lock_id="kubelet_lock_magic_node-b")
    nodes = dict((node, [ip]) for node, ip in lab.nodes.items())
    locks_before = json.loads(lab.rbd("lock", "ls", image, "--format", "json"))
    playbook = tmp_path / "names.yml"
    playbook.write_text(PLAYBOOK.format(conf=json.dumps(lab.conf), keyring=json.dumps(lab.keyring), user=lab.user,
                                        image=json.dumps(image), nodes=json.dumps(nodes)))

    run = run_playbook(lab_inventory, str(playbook))
    assert run.rc == 0, run.stderr + run.stdout
    old_watchers, new_watchers, lock_info, lock_listed = run.results("ceph-admin")
    for result in (old_watchers, new_watchers, lock_info, lock_listed):
        assert result.get("failed") is not True and result["changed"] is False, result
        assert result["backend"] == "rados", result  # the group's backend reached every name

    # the old name is the new module: same answer, the holder's watcher named by its node
    assert old_watchers["images"] == new_watchers["images"]
    assert [w["address"] for w in new_watchers["images"][0]["watchers"]] == [held["address"]]
    assert new_watchers["images"][0]["nodes"] == ["node-b"]
    deprecation = " ".join(run.stderr.split())
    assert "volfence.csi.rbd_watchers has been deprecated" in deprecation, run.stderr
    assert "use volfence.csi.rbd_watchers_info" in deprecation and "2.0.0" in deprecation, run.stderr

    # rbd_lock_info lists what rbd_lock without state lists; only the latter is deprecated
    assert [(lk["id"], lk["address"], lk["node"]) for lk in lock_info["locks"]] == [
        ("kubelet_lock_magic_node-b", held["address"], "node-b")]
    for key in ("locks", "exclusive_lock_owners", "lock_owners"):
        assert lock_info[key] == lock_listed[key], key
    assert not lock_info.get("deprecations"), lock_info
    listed_deprecations = json.dumps(lock_listed.get("deprecations"))
    assert "volfence.csi.rbd_lock_info" in listed_deprecations and "2.0.0" in listed_deprecations, lock_listed

    # all of it read only
    assert json.loads(lab.rbd("lock", "ls", image, "--format", "json")) == locks_before
    assert blocklist(lab) == []

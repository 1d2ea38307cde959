"""kubernetes.core k8s / k8s_info / k8s_json_patch / k8s_cluster_info through
ansible-playbook against the API (discovery, dynamic client, patch fallbacks, wait)."""

import os
import threading

import pytest
from kubernetes import watch

from kube_helpers import REAL_CLUSTER, VENV_BIN, ansible_playbook, unique
from kube_crds import GROUP, VERSION

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(VENV_BIN, "ansible-playbook")),
                                reason="ansible-playbook not installed in .venv")

PLAYBOOK = r"""
- hosts: localhost
  gather_facts: false
  vars:
    nf_api: csiaddons.openshift.io/v1alpha1
  tasks:
    - name: create a ConfigMap
      kubernetes.core.k8s:
        definition: &cm
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: cm1, namespace: "{{ ns }}", labels: {app: x, tier: a}}
          data: {a: "1"}
      register: cm_create
    - name: same ConfigMap again (idempotent)
      kubernetes.core.k8s:
        definition: *cm
      register: cm_again
    - name: change it (strategic merge patch)
      kubernetes.core.k8s:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: cm1, namespace: "{{ ns }}"}
          data: {b: "2"}
      register: cm_change
    - name: client-side apply, twice
      kubernetes.core.k8s:
        apply: true
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: cm2, namespace: "{{ ns }}", labels: {app: x, tier: b}}
          data: {c: "3"}
      register: apply1
      loop: [1, 2]
    - name: state patched
      kubernetes.core.k8s:
        state: patched
        kind: ConfigMap
        name: cm2
        namespace: "{{ ns }}"
        definition: {metadata: {labels: {patched: "yes"}}}
      register: patched
    - name: label and field selectors
      kubernetes.core.k8s_info:
        kind: ConfigMap
        namespace: "{{ ns }}"
        label_selectors: ["app=x", "tier in (a,b)"]
        field_selectors: ["metadata.name!=cm2"]
      register: cms
    - name: a pod bound to a node
      kubernetes.core.k8s:
        definition:
          apiVersion: v1
          kind: Pod
          metadata: {name: web-0, namespace: "{{ ns }}"}
          spec:
            nodeName: "{{ node }}"
            containers: [{name: c, image: busybox}]
    - name: pods on the node
      kubernetes.core.k8s_info:
        kind: Pod
        namespace: "{{ ns }}"
        field_selectors: ["spec.nodeName={{ node }}"]
      register: pods
    - name: json patch a label onto the pod
      kubernetes.core.k8s_json_patch:
        kind: Pod
        namespace: "{{ ns }}"
        name: web-0
        patch:
          - {op: add, path: /metadata/labels, value: {fenced: "true"}}
      register: jp
    - name: create a NetworkFence and wait for the Fenced condition
      kubernetes.core.k8s:
        wait: true
        wait_timeout: 20
        wait_sleep: 1
        wait_condition: {type: Fenced, status: "True"}
        definition:
          apiVersion: "{{ nf_api }}"
          kind: NetworkFence
          metadata: {name: "{{ nf }}"}
          spec:
            driver: rbd.csi.ceph.com
            fenceState: Fenced
            cidrs: ["10.0.0.9/32"]
            secret: {name: csi-rbd-provisioner, namespace: ceph-csi}
      register: nf_create
    - name: update the NetworkFence (strategic merge refused -> merge patch)
      kubernetes.core.k8s:
        definition:
          apiVersion: "{{ nf_api }}"
          kind: NetworkFence
          metadata: {name: "{{ nf }}"}
          spec: {fenceState: Unfenced}
      register: nf_update
    - name: read it back
      kubernetes.core.k8s_info:
        api_version: "{{ nf_api }}"
        kind: NetworkFence
        name: "{{ nf }}"
      register: nf_info
    - name: delete the ConfigMap and wait
      kubernetes.core.k8s:
        state: absent
        kind: ConfigMap
        name: cm1
        namespace: "{{ ns }}"
        wait: true
        wait_timeout: 10
      register: cm_delete
    - name: force-delete the pod
      kubernetes.core.k8s:
        state: absent
        kind: Pod
        name: web-0
        namespace: "{{ ns }}"
        delete_options: {gracePeriodSeconds: 0}
    - name: nothing left but cm2
      kubernetes.core.k8s_info:
        kind: ConfigMap
        namespace: "{{ ns }}"
        label_selectors: ["app=x"]
      register: left
    - name: remove the NetworkFence
      kubernetes.core.k8s:
        state: absent
        api_version: "{{ nf_api }}"
        kind: NetworkFence
        name: "{{ nf }}"
        wait: true
        wait_timeout: 10
    - name: cluster info
      kubernetes.core.k8s_cluster_info:
      register: ci
    - name: check everything
      assert:
        that:
          - cm_create.changed
          - not cm_again.changed
          - "cm_change.changed and cm_change.result.data == {'a': '1', 'b': '2'}"
          - apply1.results[0].changed and not apply1.results[1].changed
          - patched.changed and patched.result.metadata.labels.patched == "yes"
          - cms.resources | map(attribute='metadata.name') | list == ["cm1"]
          - pods.resources | length == 1
          - jp.changed and jp.result.metadata.labels.fenced == "true"
          - nf_create.changed and nf_create.duration is defined
          - nf_create.result.status.conditions[0].type == "Fenced"
          - nf_update.changed
          - nf_info.resources[0].spec.fenceState == "Unfenced"
          - nf_info.resources[0].spec.cidrs == ["10.0.0.9/32"]
          - cm_delete.changed
          - left.resources | map(attribute='metadata.name') | list == ["cm2"]
          - ci.apis[nf_api] is defined
          - expected_version == "" or ci.version.server.kubernetes.gitVersion == expected_version
"""


def _fence_controller(custom, name, stop):
    """Stand-in for the CSI-Addons controller: marks the NetworkFence as Fenced."""
    w = watch.Watch()
    for ev in w.stream(custom.list_cluster_custom_object, GROUP, VERSION, "networkfences",
                       field_selector="metadata.name=" + name, timeout_seconds=60):
        if ev["type"] == "ADDED":
            custom.patch_cluster_custom_object_status(GROUP, VERSION, "networkfences", name, {
                "status": {"result": "Succeeded", "message": "fencing operation successful",
                           "conditions": [{"type": "Fenced", "status": "True",
                                           "reason": "FencingSucceeded", "message": "ok",
                                           "lastTransitionTime": "2024-01-01T00:00:00Z"}]}})
        if stop.is_set() or ev["type"] == "DELETED":
            w.stop()
            break


def test_kubernetes_core_modules(tmp_path, kubeconfig_path, kubeemu, custom, ns, csiaddons_crds):
    nf = unique("nf-ans")
    stop = threading.Event()
    t = threading.Thread(target=_fence_controller, args=(custom, nf, stop), daemon=True)
    t.start()
    expected_version = ""
    adm = None
    if kubeemu is not None:
        from kube_helpers import Admin
        adm = Admin(kubeemu.url)
        adm.version("v1.23.5")  # cluster-version dependent logic reads /version
        expected_version = "v1.23.5"
        since = adm.last_seq()
    try:
        proc = ansible_playbook(tmp_path, kubeconfig_path, PLAYBOOK,
                                {"ns": ns, "nf": nf, "node": "node-b",
                                 "expected_version": expected_version})
    finally:
        stop.set()
        if adm is not None:
            adm.version("v1.30.2")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    t.join(10)
    if adm is not None and not REAL_CLUSTER:
        nf_patches = [(e["content_type"], e["status"]) for e in adm.requests(
            method="PATCH", path_regex="/networkfences/%s$" % nf, since=since)]
        assert nf_patches == [("application/strategic-merge-patch+json", 415),
                              ("application/merge-patch+json", 200)]
        # discovery went through /apis/<group>/<version> documents
        paths = {e["path"] for e in adm.requests(method="GET", since=since)}
        assert "/apis/%s/%s" % (GROUP, VERSION) in paths and "/version" in paths

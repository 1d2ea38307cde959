"""CSI-Addons CRDs (csiaddons.openshift.io/v1alpha1), trimmed to what the tests need.

The schemas preserve unknown fields; kubeemu does not validate schemas anyway, but a
real cluster requires a structural schema.
"""

GROUP = "csiaddons.openshift.io"
VERSION = "v1alpha1"

_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {
    "spec": _OPEN, "status": _OPEN}, "x-kubernetes-preserve-unknown-fields": True}}


def _crd(kind, plural, singular, scope, columns=(), short=()):
    names = {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": singular}
    if short:
        names["shortNames"] = list(short)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, GROUP)},
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": scope,
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "schema": _SCHEMA,
                "subresources": {"status": {}},
                "additionalPrinterColumns": list(columns),
            }],
        },
    }


NETWORKFENCE = _crd("NetworkFence", "networkfences", "networkfence", "Cluster", columns=[
    {"name": "Driver", "type": "string", "jsonPath": ".spec.driver"},
    {"name": "Cidrs", "type": "string", "jsonPath": ".spec.cidrs"},
    {"name": "FenceState", "type": "string", "jsonPath": ".spec.fenceState"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Result", "type": "string", "jsonPath": ".status.result"},
])
NETWORKFENCECLASS = _crd("NetworkFenceClass", "networkfenceclasses", "networkfenceclass", "Cluster")
CSIADDONSNODE = _crd("CSIAddonsNode", "csiaddonsnodes", "csiaddonsnode", "Namespaced",
                     short=("csiaddonsnode",))

CSIADDONS_CRDS = [NETWORKFENCE, NETWORKFENCECLASS, CSIADDONSNODE]


def networkfence(name, cidrs=("10.0.0.1/32",), state="Fenced", driver="rbd.csi.ceph.com"):
    return {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "NetworkFence",
            "metadata": {"name": name},
            "spec": {"driver": driver, "fenceState": state, "cidrs": list(cidrs),
                     "secret": {"name": "csi-rbd-provisioner", "namespace": "ceph-csi"},
                     "parameters": {"clusterID": "lab"}}}

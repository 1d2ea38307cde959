"""The volfence.csi lab: a real Ceph cluster and simulated Kubernetes nodes on this machine.

    .venv/bin/python -m volfence_lab up|down|status|scenario NAME|...   (make lab-up, make lab-down, ...)

lab.py (the command and its configuration), kubesim.py (kubelets, control plane and CSI-Addons stand-in
acting on the lab's Ceph), scenarios.py (incidents), holder.py (a Ceph client on a node),
ceph_releases.py (the Ceph releases it runs), ansible_runs.py (Ansible run as users run it, for the tests
and benchmarks). See docs/lab.md.
"""

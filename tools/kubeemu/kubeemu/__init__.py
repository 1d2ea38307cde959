"""kubeemu: an HTTP-level Kubernetes API emulator for the volfence.csi tests.

See tools/kubeemu/README.md.  Entry points:

* ``python -m kubeemu --host 127.0.0.1 --port PORT ...``
* ``from kubeemu.server import EmulatorServer``
"""

__version__ = "1.0.0"

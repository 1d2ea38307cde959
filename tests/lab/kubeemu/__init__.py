"""kubeemu: an HTTP-level Kubernetes API emulator for the volfence.csi tests.

See README.md in this directory.  Entry points:

* ``python -m kubeemu --host 127.0.0.1 --port PORT ...`` (run with PYTHONPATH=tests/lab)
* ``from kubeemu.server import EmulatorServer``
"""

__version__ = "1.0.0"

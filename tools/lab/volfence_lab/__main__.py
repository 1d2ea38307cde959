"""python -m volfence_lab COMMAND: the lab's command line (see lab.py)."""

import sys

from volfence_lab.lab import main

sys.exit(main())

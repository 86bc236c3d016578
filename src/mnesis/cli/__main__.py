"""``python -m mnesis.cli``."""

import sys

from mnesis.cli import run

sys.exit(run())

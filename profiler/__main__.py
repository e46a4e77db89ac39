"""``python -m profiler ...``: the same as ``cotune profile ...``."""

import sys

from profiler.cli import main

sys.exit(main(sys.argv[1:], prog="python -m profiler"))

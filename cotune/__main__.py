"""``python -m cotune`` is the ``cotune`` command."""

import sys

from cotune.cli import main

sys.exit(main())

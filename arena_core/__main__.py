"""``python -m arena_core``: see :mod:`arena_core.cli`."""

import sys

from arena_core.cli import main

sys.exit(main())

"""``python -m memory_es.cli``: the same as the ``memory-es`` console script."""

import sys

from memory_es.cli import main

sys.exit(main())

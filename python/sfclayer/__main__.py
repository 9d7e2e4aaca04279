"""``python -m sfclayer``: the ``sfclayer`` command (see :mod:`sfclayer.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m app.cli``: the same command line as the ``compute-advisor`` console script."""

import sys

from app.cli import main

sys.exit(main())

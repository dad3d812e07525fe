"""``python -m adapters.cli``: the same as the ``meeting-agents`` command."""

import sys

from adapters.cli import main

sys.exit(main())

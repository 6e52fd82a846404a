"""``python -m promoter.cli``: the same as the ``promoter`` command."""

import sys

from promoter.cli.main import main

sys.exit(main())

"""`python -m verdryx_core.cli`: the `verdryx` console script."""

import sys

from verdryx_core.cli.main import main

sys.exit(main())

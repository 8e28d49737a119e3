"""``python -m mnemon_langgraph.cli …`` runs the ``mnemon`` command (same as the script)."""

import sys

from mnemon_langgraph.cli import main

sys.exit(main())

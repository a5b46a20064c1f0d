"""`python -m groupchat_core ...`: see groupchat_core.cli."""

import sys

from .cli import main

sys.exit(main())

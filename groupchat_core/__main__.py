"""`python -m groupchat_core ...`: see groupchat_core.cli."""

import sys

from .cli._main import main

sys.exit(main())

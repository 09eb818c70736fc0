"""``python -m eval.dialogue``: see ``eval.dialogue.cli``."""

import sys

from eval.dialogue.cli import main

sys.exit(main())

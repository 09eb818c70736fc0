import sys

from eval.reply_branch.cli import main

sys.exit(main())

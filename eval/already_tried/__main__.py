import sys

from eval.already_tried.cli import main

sys.exit(main())

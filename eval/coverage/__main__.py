import sys

from eval.coverage.cli import main

sys.exit(main())

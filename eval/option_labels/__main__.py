import sys

from eval.option_labels.cli import main

sys.exit(main())

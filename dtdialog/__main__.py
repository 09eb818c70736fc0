import sys

from dtdialog.cli import main

sys.exit(main())

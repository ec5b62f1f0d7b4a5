import sys

from .workflow.cli import main

sys.exit(main())

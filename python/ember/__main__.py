"""``python -m ember``: the ``ember`` command (``ember.cli.main()``), exiting with its status."""
import sys

from .cli import main

sys.exit(main())

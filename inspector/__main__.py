"""``python -m inspector …`` — see inspector/cli.py."""

import sys

from inspector.cli import main

sys.exit(main())

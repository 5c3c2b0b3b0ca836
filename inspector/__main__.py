"""``python -m inspector …`` — see inspector/cli/."""

import sys

from inspector.cli import main

sys.exit(main())

"""``python -m analyzer``: the command-line entry point."""

import sys

# First, before the CLI's imports: a cancel during the guard's start-up is kept for its report
# instead of killing it with none (see the module).
from .supervise import early_cancel

if sys.argv[1:2] == ["run"]:  # a scan keeps Ctrl-C's KeyboardInterrupt
    early_cancel.hold()

from .cli import main  # noqa: E402 - after the cancel is held

sys.exit(main())

"""Open a log group and stop workflow commands, as a tool that fences its own output does, then hang.

The shard runner of a suite run with allow-workflow-commands, killed by the guard's timeout before it
printed its ``::endgroup::`` and resume token. argv[1] is the stop token; argv[2], when given, is
printed on stderr instead of stdout.
"""

import sys
import time

stream = sys.stderr if sys.argv[2:] == ["stderr"] else sys.stdout
print("::group::Running shard 3 of 4", file=stream, flush=True)
print(f"::stop-commands::{sys.argv[1]}", file=stream, flush=True)
print("entering all_reduce", file=stream, flush=True)
time.sleep(600)

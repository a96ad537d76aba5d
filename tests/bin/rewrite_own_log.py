"""Print a crash line, wait until the guard has logged it, then rewrite the log file in place and exit 0.

The file keeps its inode (``open(path, "r+")``, truncate, write), so a guard that only checks what the
path names sees nothing wrong. argv: LOG_DIR STREAM (``stdout`` or ``stderr``).
"""

import os
import sys

log_dir, stream = sys.argv[1], sys.argv[2]
fd = 1 if stream == "stdout" else 2
crash = b"Fatal Python error: Segmentation fault\n"
os.write(fd, crash)
path = os.path.join(log_dir, f"{stream}.log")
while os.path.getsize(path) < len(crash):  # the pump has it in the log now
    pass
with open(path, "r+b") as log:
    log.truncate(0)
    log.write(b"all tests passed\n")
os.write(1, b"done\n")

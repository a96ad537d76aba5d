"""Print a crash line, then put something else where the guard's stdout.log was, and exit 0.

argv: LOG_DIR HOW, HOW one of ``fifo``, ``directory`` (holding a fake stdout.log), ``symlink`` (to a
file of the command's own saying that all tests passed).
"""

import os
import sys
import time

log_dir, how = sys.argv[1], sys.argv[2]
crash = b"Fatal Python error: Segmentation fault\n"
os.write(1, crash)
path = os.path.join(log_dir, "stdout.log")
while os.path.getsize(path) < len(crash):  # the pump has it in the log now
    time.sleep(0.01)
os.unlink(path)
if how == "fifo":
    os.mkfifo(path)
elif how == "directory":
    os.mkdir(path)
    with open(os.path.join(path, "stdout.log"), "w") as fake:
        fake.write("all tests passed\n")
else:
    decoy = os.path.join(os.path.dirname(log_dir), "decoy.log")
    with open(decoy, "w") as fake:
        fake.write("all tests passed\n")
    os.symlink(decoy, path)

"""Print, delete the guard's log dir (as `git clean -xdf` or a cleanup would), print more, then hang or exit.

argv: LOG_DIR MODE [DECOY], MODE ``hang`` (sleep until killed) or ``exit`` (exit 0); with DECOY, a
symlink to that directory is put where the log dir was (what the uploaded artifact would then show).
"""

import os
import shutil
import sys
import time

log_dir, mode = sys.argv[1], sys.argv[2]
print("before the cleanup", flush=True)
print("Fatal Python error: Segmentation fault", file=sys.stderr, flush=True)
time.sleep(0.2)  # the pump has written both lines into the logs
shutil.rmtree(log_dir)
if len(sys.argv) > 3:
    os.symlink(sys.argv[3], log_dir)
print("after the cleanup", flush=True)
if mode == "hang":
    while True:
        time.sleep(0.05)

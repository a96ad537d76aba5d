"""Find the guard's scanner (a fork of the guard: same command line) and send it SIGSTOP, then print a
crash line and exit 0. A guard that waits for a stopped scanner's results waits forever.
"""

import os
import signal

guard = os.getppid()
with open(f"/proc/{guard}/cmdline", "rb") as handle:
    me = handle.read()
stopped = 0
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) in (guard, os.getpid()):
        continue
    try:
        with open(f"/proc/{entry}/cmdline", "rb") as handle:
            if handle.read() != me:
                continue
        os.kill(int(entry), signal.SIGSTOP)
        stopped += 1
    except OSError:
        pass
print(f"scanners stopped: {stopped}", flush=True)
print("Fatal Python error: Segmentation fault", flush=True)

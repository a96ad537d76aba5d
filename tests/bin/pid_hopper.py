"""Forks, setsid()s and exits every 2 ms, forever: never at the pid a /proc scan is reading.

Usage: pid_hopper.py HEARTBEAT_FILE. Prints ``hopping`` and lets its first process exit 0 at once;
every hop appends one byte to HEARTBEAT_FILE, so a test can see whether it still runs. It stops by
itself once HEARTBEAT_FILE.stop exists: the test's safety net should the guard ever miss it (no scan
of /proc could find it to kill it).
"""

import os
import sys
import time

heartbeat = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
print("hopping", flush=True)
devnull = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(devnull, fd)  # hold no pipe of the guard: only the hopping is under test
if os.fork() != 0:
    os._exit(0)
stop = sys.argv[1] + ".stop"
while not os.path.exists(stop):
    time.sleep(0.002)
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    os.write(heartbeat, b".")

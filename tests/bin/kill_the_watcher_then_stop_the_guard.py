"""SIGKILL the guard's other children (its watcher), wait a while, then SIGSTOP the guard and hang.

Prints a line for each step. Run with a --timeout: only a guard that is resumed can end it.
"""

import os
import signal
import time

guard = os.getppid()
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) == os.getpid():
        continue
    try:
        with open(f"/proc/{entry}/stat", "rb") as handle:
            parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        continue
    if parent == guard:
        os.kill(int(entry), signal.SIGKILL)
        print("killed a sibling", flush=True)
time.sleep(2.5)
os.kill(guard, signal.SIGSTOP)
print("the guard is stopped", flush=True)
while True:
    time.sleep(1)

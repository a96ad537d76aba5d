"""Fork until the kernel refuses (the user's process limit, a pids cgroup), every process ignoring SIGTERM,
then hang. The guard, sharing that limit, can then start no thread or helper to diagnose the hang.
"""

import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
forked = 0
while True:
    try:
        pid = os.fork()
    except OSError as err:
        print(f"fork refused after {forked}: {err.strerror}", flush=True)
        break
    if pid == 0:
        time.sleep(3600)
        os._exit(0)
    forked += 1
time.sleep(3600)

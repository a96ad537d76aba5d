"""Send the guard (the parent process) a signal, or its whole process group, then go on and exit 0.

``python signal_the_guard.py SIGTERM parent|group``: as a test script's `kill -TERM $PPID` or
`os.killpg(os.getpgid(os.getppid()), ...)` would. Prints "sent" before and "went on" after.
"""

import os
import signal
import sys
import time

signum = getattr(signal, sys.argv[1])
print("sent", flush=True)
if sys.argv[2] == "group":
    os.killpg(os.getpgid(os.getppid()), signum)
else:
    os.kill(os.getppid(), signum)
time.sleep(0.5)
print("went on", flush=True)

"""Send the guard (the parent process) a job-control stop signal, as `kill -TSTP $PPID` would, then hang.

argv: SIGNAME (SIGTSTP, SIGTTIN or SIGTTOU). First prints how this process itself handles that signal
(``default`` when the guard passed on no disposition of its own).
"""

import os
import signal
import sys
import time

signum = getattr(signal, sys.argv[1])
disposition = signal.getsignal(signum)
print("default" if disposition == signal.SIG_DFL else f"inherited {disposition}", flush=True)
os.kill(os.getppid(), signum)
while True:
    time.sleep(0.05)

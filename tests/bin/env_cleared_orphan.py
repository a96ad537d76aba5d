"""Leaves an orphan that cleared its environment (no tree token) and left the session.

Only the guard being a child subreaper finds it: the orphan is re-parented to the guard.
Prints ``orphan pid=N``.
"""

import os
import sys
import time

child = os.fork()
if child == 0:
    grandchild = os.fork()
    if grandchild == 0:
        os.setsid()
        os.execve(sys.executable, [sys.executable, "-c", "import time\nwhile True: time.sleep(0.05)"], {})
    print(f"orphan pid={grandchild}", flush=True)
    os._exit(0)
os.waitpid(child, 0)
time.sleep(0.1)

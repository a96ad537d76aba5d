"""Double-forks a grandchild that setsid()s away, keeps stdout open and outlives the command.

Prints ``grandchild pid=N`` so a test can check that the guard ended it.
"""

import os
import sys
import time

child = os.fork()
if child == 0:
    if os.fork() == 0:
        os.setsid()
        print(f"grandchild pid={os.getpid()}", flush=True)
        while True:
            time.sleep(0.05)
    os._exit(0)
os.waitpid(child, 0)
time.sleep(0.2)  # let the grandchild print first
print("command done", flush=True)
sys.exit(0)

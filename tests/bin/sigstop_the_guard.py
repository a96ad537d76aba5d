"""Stop the guard (the parent process) with SIGSTOP, which it cannot catch, then stop its own group.

Prints a line before and after each stop; a child in the same group hangs too. Run with a --timeout:
only a guard that is resumed can end it.
"""

import os
import signal
import time

print("stopping the guard", flush=True)
if os.fork() == 0:
    while True:
        time.sleep(1)
os.kill(os.getppid(), signal.SIGSTOP)
print("the guard is stopped", flush=True)
os.killpg(0, signal.SIGSTOP)
print("resumed", flush=True)
while True:
    time.sleep(1)

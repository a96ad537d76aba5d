"""Stops itself with SIGSTOP (state T): SIGTERM does nothing until SIGCONT."""

import os
import signal

print("stopping myself", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
print("continued", flush=True)
while True:
    signal.pause()

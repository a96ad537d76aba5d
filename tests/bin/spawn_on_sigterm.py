"""On SIGTERM, starts a new child in its own session instead of dying, then ignores further SIGTERMs."""

import os
import signal
import subprocess
import sys
import time


def on_term(signum, frame):
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "while True: time.sleep(0.05)"],
        start_new_session=True,
    )
    os.write(1, f"spawned pid={child.pid}\n".encode())
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
while True:
    time.sleep(0.05)

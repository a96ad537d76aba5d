"""Leaves a child that ignores SIGTERM and SIGINT running, prints its pid, and exits 0 at once.

The guard must end the child after the command exited; only SIGKILL does it.
"""

import subprocess
import sys

CHILD = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('child ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)
child = subprocess.Popen(
    [sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
)
child.stdout.readline()
print(f"stubborn pid={child.pid}", flush=True)

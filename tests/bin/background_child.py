"""Starts a background child with its own stdio (not holding our pipes) and exits 0 while it runs on."""

import subprocess
import sys

child = subprocess.Popen(
    [sys.executable, "-c", "import time\nwhile True: time.sleep(0.05)"],
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
print(f"background pid={child.pid}", flush=True)

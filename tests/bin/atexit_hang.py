"""Prints a passing pytest verdict, then hangs in an atexit handler (the run "passed", then never ends)."""

import atexit
import time


def stuck_in_atexit_handler():
    while True:
        time.sleep(0.05)


atexit.register(stuck_in_atexit_handler)
print("=== 3 passed in 0.1s ===", flush=True)

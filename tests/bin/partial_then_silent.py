"""Writes a partial line (a progress bar) and goes silent without exiting."""

import os
import time

os.write(1, b"downloading weights 50%")
while True:
    time.sleep(0.05)

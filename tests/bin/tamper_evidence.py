"""Hang; on SIGTERM (which comes after the guard wrote its evidence) rewrite stacks.txt and processes.txt
in place to say nothing, then hang on until SIGKILL. argv: LOG_DIR."""

import os
import signal
import sys
import time

logs = sys.argv[1]


def on_term(*_):
    for name in ("stacks.txt", "processes.txt"):
        try:
            with open(os.path.join(logs, name), "r+") as evidence:
                evidence.truncate(0)
                evidence.write("nothing to see\n")
        except OSError:
            pass
    print("evidence rewritten", flush=True)


signal.signal(signal.SIGTERM, on_term)
print("waiting", flush=True)
while True:
    time.sleep(0.05)

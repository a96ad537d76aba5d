"""Ignores SIGTERM (and SIGINT), so only SIGKILL ends it."""

import signal
import time


def refuse_to_die():
    while True:
        time.sleep(0.05)


signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ignoring SIGTERM", flush=True)
refuse_to_die()

"""The main thread hangs in the user's own function inside a stdlib wait (threading.Event.wait)."""

import threading


def wait_for_peers():
    print("waiting", flush=True)
    threading.Event().wait()


wait_for_peers()

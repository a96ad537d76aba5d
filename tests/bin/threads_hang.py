"""Main thread hangs in one function while a busy background thread runs another (py-spy must pick main)."""

import threading
import time


def background_spin():
    while True:
        sum(range(1000))


def main_thread_waits_forever():
    # Printed from inside the function: a dump taken as soon as the line arrives must already
    # find the main thread here, not still returning from a module-level print under GIL contention.
    print("threads up", flush=True)
    while True:
        time.sleep(0.05)


threading.Thread(target=background_spin, name="spinner", daemon=True).start()
main_thread_waits_forever()

"""Main thread hangs in one function while a busy background thread runs another (py-spy must pick main)."""

import threading
import time


def background_spin():
    while True:
        sum(range(1000))


def main_thread_waits_forever():
    while True:
        time.sleep(0.05)


threading.Thread(target=background_spin, name="spinner", daemon=True).start()
print("threads up", flush=True)
main_thread_waits_forever()

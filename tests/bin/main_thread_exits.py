"""The main thread calls pthread_exit while a worker thread runs on: the kernel shows the process's
leader as a zombie (no command line, no memory map) though the process lives, and prints, on."""

import ctypes
import threading
import time


def worker_runs_on():
    while True:
        print("worker alive", flush=True)
        time.sleep(0.2)


threading.Thread(target=worker_runs_on).start()
time.sleep(0.3)
ctypes.CDLL(None).pthread_exit(None)

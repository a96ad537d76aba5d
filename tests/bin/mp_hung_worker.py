"""A parent that join()s a multiprocessing worker hung in a collective that never completes.

Like torchrun's agent and its workers: the parent only waits, the hang is in the child.
"""

import multiprocessing
import time


def all_reduce_that_never_returns():
    while True:
        time.sleep(0.05)


def worker():
    all_reduce_that_never_returns()


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    child = multiprocessing.Process(target=worker)
    child.start()
    print(f"worker pid={child.pid}", flush=True)
    child.join()

"""A parent that join()s a worker started with the "spawn" method, hung in the user's own code.

The spawn (and forkserver) start methods start multiprocessing's resource tracker first: a helper
process idle in its loop for the whole run, earlier in the tree than the worker.
"""

import multiprocessing
import time


def stuck_in_the_workers_own_code():
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    results = context.Queue()  # a queue's semaphore is what makes spawn start the resource tracker
    child = context.Process(target=stuck_in_the_workers_own_code)
    child.start()
    print(f"worker pid={child.pid}", flush=True)
    child.join()

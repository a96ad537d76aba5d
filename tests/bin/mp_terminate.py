"""A parent that terminate()s its multiprocessing workers; they die with exitcode -15, it exits 0."""

import multiprocessing
import time


def worker():
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    workers = [multiprocessing.Process(target=worker) for _ in range(2)]
    for w in workers:
        w.start()
    time.sleep(0.2)
    for w in workers:
        w.terminate()
    for w in workers:
        w.join()
        print(f"worker {w.pid} exitcode={w.exitcode}", flush=True)

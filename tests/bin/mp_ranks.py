"""Two ranks under a waiting parent: rank 0 sits in a collective (`all_reduce`), rank 1 never arrives.

The shape of a torchrun hang without torch: the guard must name rank 1, the root cause.
"""

import multiprocessing
import time


def all_reduce():  # stands in for torch.distributed.all_reduce waiting on its peers
    while True:
        time.sleep(0.05)


def rank_one_never_arrives():
    while True:
        time.sleep(0.05)


def rank(index):
    if index == 1:
        rank_one_never_arrives()
    all_reduce()


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    ranks = [multiprocessing.Process(target=rank, args=(i,)) for i in range(2)]
    for r in ranks:
        r.start()
    print(" ".join(f"rank{i} pid={r.pid}" for i, r in enumerate(ranks)), flush=True)
    for r in ranks:
        r.join()

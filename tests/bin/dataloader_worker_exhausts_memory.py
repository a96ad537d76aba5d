"""A torch DataLoader whose worker joins the memory cgroup whose cgroup.procs is argv[1] and then uses
memory without end: the kernel's OOM killer kills the worker, and the main process raises DataLoader's
"worker (pid N) is killed by signal: Killed"."""

import os
import sys

from torch.utils.data import DataLoader, Dataset


class Hoarder(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> bytes:
        with open(sys.argv[1], "w") as procs:  # the worker alone: the main process must live to tell it
            procs.write(str(os.getpid()))
        hoard = []
        while True:
            hoard.append(b"x" * (8 << 20))


if __name__ == "__main__":
    for batch in DataLoader(Hoarder(), num_workers=1):
        print(batch)

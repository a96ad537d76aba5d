"""torchrun worker (gloo, CPU): rank 1 never reaches the all_reduce that rank 0 waits in.

Run by tests/supervise/test_guard_torchrun.py where torch is installed (.ci/run installs it), or by hand:
    python -m analyzer run --timeout 30s -- torchrun --nproc-per-node 2 tests/bin/torch_hung_rank.py
"""

import time

import torch
import torch.distributed as dist

def rank_one_never_arrives():
    while True:
        time.sleep(0.05)

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} up", flush=True)
if rank == 1:
    rank_one_never_arrives()
t = torch.ones(1)
dist.all_reduce(t)

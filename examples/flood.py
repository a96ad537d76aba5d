"""Floods stdout like a verbose training job, with a worker failure every 1,000 lines, then exits 1."""

import sys

LINES = 200_000
FAILURE_EVERY = 1_000


def main() -> int:
    out = sys.stdout
    for i in range(LINES):
        if i % FAILURE_EVERY == FAILURE_EVERY - 1:
            rank = (i // FAILURE_EVERY) % 8
            out.write(
                f"[rank{rank}]:[E ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
                f"operation timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
                "Timeout(ms)=600000) ran for 600107 milliseconds before timing out.\n"
            )
        else:
            out.write(f"step {i:6d} | loss {1.0 / (i + 1):.6f} | lr 3.0e-04 | tokens/s 181234\n")
    out.flush()
    return 1


if __name__ == "__main__":
    sys.exit(main())

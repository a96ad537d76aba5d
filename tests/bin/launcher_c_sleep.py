"""A torchrun-like launcher waiting on N stuck ranks: each rank waits in a different way.

Usage: launcher_c_sleep.py N. The launcher starts ranks 0..N-1 and waits for them (``Popen.wait``), as
torchrun's agent does. The last rank sleeps in C (``libc.sleep`` through ctypes: the Python frame is
the caller's line, only native frames show where it is), rank 1 (with N > 2) blocks on a lock it
already holds, every other rank sleeps in Python (``time.sleep``). Each rank prints
``rank I pid P up``; the launcher prints ``N up`` once every rank is up, then nothing.
"""

import ctypes
import os
import subprocess
import sys
import threading
import time


def rank(index: int, count: int, ready: int) -> None:
    os.write(1, f"rank {index} pid {os.getpid()} up\n".encode())  # one write: ranks share the pipe
    os.write(ready, b".")
    os.close(ready)
    if index == count - 1:
        ctypes.CDLL(None).sleep(10000)
    if index == 1:
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()
    while True:  # one long sleep: a dump never catches it between two
        time.sleep(10000)


if __name__ == "__main__":
    count = int(sys.argv[1])
    if len(sys.argv) > 2:
        rank(int(sys.argv[2]), count, int(sys.argv[3]))
    read_end, write_end = os.pipe()
    ranks = [
        subprocess.Popen([sys.executable, __file__, str(count), str(index), str(write_end)],
                         pass_fds=(write_end,))
        for index in range(count)
    ]
    os.close(write_end)
    got = 0
    while got < count:
        chunk = os.read(read_end, 64)
        if not chunk:
            break
        got += len(chunk)
    print(f"{count} up", flush=True)
    for process in ranks:
        process.wait()

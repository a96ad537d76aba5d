"""A stuck job of N Python processes that end in every way a real one does: prints ``N up`` once all run.

Usage: mixed_stuck_tree.py N. First prints ``started T`` (T its ``time.monotonic()``, the clock every
process shares, so a bench can time from it). The root (which ignores SIGINT, as a job busy in C code
does) starts N - 1 children, in turn: one that ignores SIGTERM and SIGINT; one that moved to a new
session (``setsid``) and ignores them; one that double-forked into a new session (an orphan: its parent
exited) and ignores them; and one with the default handlers, that SIGTERM ends. Each waits forever in
``wait_for_the_collective``. Every process has this file's path in its command line, so a test can count
the survivors.
"""

import os
import signal
import subprocess
import sys
import time


def wait_for_the_collective():
    while True:
        time.sleep(0.05)


def refuse():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def child(kind: str, ready: int) -> None:
    if kind == "session":
        os.setsid()
    if kind == "orphan":
        os.setsid()
        if os.fork():
            os._exit(0)
    if kind != "default":
        refuse()
    os.write(ready, b".")
    os.close(ready)
    wait_for_the_collective()


KINDS = ("ignore", "session", "orphan", "default")

if __name__ == "__main__":
    if len(sys.argv) > 2:
        child(sys.argv[2], int(sys.argv[3]))
    print(f"started {time.monotonic()}", flush=True)
    count = int(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    read_end, write_end = os.pipe()
    for index in range(count - 1):
        subprocess.Popen(
            [sys.executable, __file__, str(count), KINDS[index % len(KINDS)], str(write_end)],
            pass_fds=(write_end,),
            stdin=subprocess.DEVNULL,
        )
    os.close(write_end)
    got = 0
    while got < count - 1:
        chunk = os.read(read_end, 64)
        if not chunk:
            break
        got += len(chunk)
    print(f"{count} up", flush=True)
    wait_for_the_collective()

"""SIGSTOP the guard's parent (the reader of the guard's stdout: the runner, a tee), then flood stdout.

argv[1]: MiB to print after the stop, then exit 0. The guard's echo fills the stopped reader's pipe,
so the command blocks on its own output (as under tee) until the guard's --timeout ends it; a guard
that then waits to write its console before its report files never writes them.
"""

import os
import signal
import sys

guard = os.getppid()
with open(f"/proc/{guard}/stat", "rb") as handle:
    reader = int(handle.read().rsplit(b")", 1)[1].split()[1])  # field 4, after the command name
print(f"stopping the reader {reader}", flush=True)
os.kill(reader, signal.SIGSTOP)
line = b"x" * 1023 + b"\n"
for _ in range(int(sys.argv[1]) * 1024):
    os.write(1, line)

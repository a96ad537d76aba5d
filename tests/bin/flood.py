"""Writes N bytes to stdout and N bytes to stderr at the same time, in odd-sized unaligned chunks.

Content: ``pattern(stream)`` repeated; a test rebuilds it with ``expected(stream, n)``.
Usage: flood.py N [PROGRESS_FILE]. With PROGRESS_FILE, after each complete write of stdout the
number of stdout bytes written so far is stored there (a lower bound on what reached the pipe).
"""

import os
import sys
import threading


def pattern(stream: str) -> bytes:
    line = (stream * 3 + " " + "".join(chr(33 + i % 90) for i in range(97))).encode()
    return (line + b"\n" + b"\xff\x00partial") * 64


def expected(stream: str, n: int) -> bytes:
    block = pattern(stream)
    return (block * (n // len(block) + 1))[:n]


def flood(fd: int, stream: str, n: int, progress: str = "") -> None:
    block = pattern(stream)
    step = 40_001  # not a divisor of anything the pump reads
    data = block * (step // len(block) + 2)
    offset = 0
    while offset < n:
        start = offset % len(block)
        chunk = data[start:start + min(step, n - offset)]
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
        offset += len(chunk)
        if progress:
            os.pwrite(progress_fd, str(offset).encode().ljust(20), 0)


if __name__ == "__main__":
    size = int(sys.argv[1])
    progress_path = sys.argv[2] if len(sys.argv) > 2 else ""
    if progress_path:
        progress_fd = os.open(progress_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    threads = [
        threading.Thread(target=flood, args=(fd, name, size, progress_path if fd == 1 else ""))
        for fd, name in ((1, "out"), (2, "err"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

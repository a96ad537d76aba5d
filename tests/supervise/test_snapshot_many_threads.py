"""A dump of a process with 1000 threads is parsed once, however often the diagnosis reads it.

red41's q03 (three processes of 1000 threads each, `--timeout 5s --kill-grace 2s`): the diagnosis between
the stacks and the SIGTERM asked each dump for its main thread 58 times, and each time the 1 MB text was
parsed again: 3.6-5 s of Python on no deadline, the guard's exit at grace + 6.4 s after the clock ran
out. A real process and a real py-spy dump here; what is counted is the parses, not the time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from analyzer.supervise import diagnosis, snapshot, tree

THOUSAND_THREADS = textwrap.dedent("""
    import threading
    def main_thread_waits(event):
        event.wait()
    event = threading.Event()
    for _ in range(1000):
        threading.Thread(target=event.wait, daemon=True).start()
    print("threads up", flush=True)
    main_thread_waits(event)
""")


def test_a_thousand_thread_dump_is_parsed_once(monkeypatch):
    proc = subprocess.Popen([sys.executable, "-c", THOUSAND_THREADS], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"threads up\n"
        [dump] = snapshot.dump_stacks([proc.pid], 60.0)
    finally:
        proc.kill()
        proc.wait()
    if dump.error:
        pytest.skip(f"py-spy could not dump the process here: {dump.error}")
    parses = []
    parse = snapshot._parse_threads
    monkeypatch.setattr(snapshot, "_parse_threads", lambda text, pid: parses.append(pid) or parse(text, pid))
    snapshot._threads.cache_clear()
    for _ in range(50):  # as the diagnosis asks: every candidate, helper and runtime check
        frames = dump.main_thread_frames()
        threads = dump.threads()
    assert parses == [proc.pid]
    assert frames[0].function.endswith("wait") and any(f.function == "main_thread_waits" for f in frames)
    assert len(threads) == 1001 and sum(is_main for is_main, _ in threads) == 1


def test_a_hang_finding_says_why_the_hung_process_has_no_python_stack():
    """red41's q03 at load 14: py-spy timed out on every 1000-thread process, and the finding named only
    the kernel's wait (state S, futex_do_wait), as if no stack had been asked for. The dump here times
    out for real: a bound too short for any py-spy run."""
    proc = subprocess.Popen([sys.executable, "-c", THOUSAND_THREADS], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"threads up\n"
        [dump] = snapshot.dump_stacks([proc.pid], 0.001)
        [info] = tree.describe_all([tree.proc_of(proc.pid)])
    finally:
        proc.kill()
        proc.wait()
    assert dump.error == "timed out" and not dump.text.strip()
    chosen, where = diagnosis.where_it_hung(os.getpid(), [info], [dump])
    assert chosen is None
    assert where.startswith(f"`{info.cmdline}` (pid {proc.pid}, state ")
    assert where.endswith("; no Python stack: py-spy timed out")

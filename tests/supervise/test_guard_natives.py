"""Native dumps go where a Python stack does not explain the wait (issue 8: 16 processes within the grace).

A native dump pauses its process (ptrace) and costs several times a plain one, so the guard takes at
most MAX_NATIVE_DUMPS. A launcher waiting on its ranks (``Popen.wait``) or a rank asleep in
``time.sleep`` shows all there is in its Python frames; a rank asleep in C (ctypes) or blocked on a lock
does not, and its native stack is the evidence. Real process trees (tests/bin/launcher_c_sleep.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from analyzer.model import Kind
from analyzer.supervise import diagnosis, guard as guard_module, snapshot

from .conftest import program

HEAD = re.compile(r"^=== pid (\d+)( \(native frames\))?: ", re.M)


@pytest.fixture(autouse=True)
def whole_bound_for_natives(monkeypatch):
    # Which processes get a native dump, and what it shows: on 2 loaded CPUs a native dump can take
    # longer than its share (test_snapshot covers the share), so here it has the dumps' whole bound.
    monkeypatch.setattr(guard_module, "NATIVE_DUMP_SHARE_S", guard_module.DUMP_TIMEOUT_S)
    monkeypatch.setattr(guard_module, "STACKS_SHARE_S", guard_module.DUMP_TIMEOUT_S)


def run_launcher(guard, ranks: int):
    result, took = guard(program("launcher_c_sleep.py", str(ranks)), idle_timeout_s=1.5, timeout_s=120.0,
                         kill_grace_s=1.0)
    assert result.command.timed_out and result.command.timeout_reason == "idle", result.command
    stdout = Path(result.stdout_path).read_text()
    pids = {int(i): int(p) for i, p in re.findall(r"^rank (\d+) pid (\d+) up$", stdout, re.M)}
    assert f"{ranks} up" in stdout and len(pids) == ranks, stdout
    stacks = (Path(result.command.log_dir) / "stacks.txt").read_text()
    heads = HEAD.findall(stacks)
    natives = {int(pid) for pid, native in heads if native}
    plain = {int(pid) for pid, native in heads if not native}
    return result, pids, natives, plain, stacks


def test_the_native_dumps_go_to_the_ranks_waiting_in_c_not_to_the_launcher(guard):
    result, pids, natives, plain, stacks = run_launcher(guard, 3)
    assert len(plain) == 4 and set(pids.values()) <= plain  # every process's Python stack, as before
    # Rank 1 blocks on a lock, rank 2 sleeps in libc: their Python frames are only the caller's line.
    assert natives == {pids[1], pids[2]}, stacks
    native_of_2 = stacks.split(f"=== pid {pids[2]} (native frames): ", 1)[1].split("\n=== ", 1)[0]
    assert "ffi_call" in native_of_2 and "sleep" in native_of_2, native_of_2
    # The hang finding names a rank its Python frames leave unexplained (rank 1, first in tree order),
    # not rank 0 asleep in time.sleep, and says why; main named rank 0.
    hang = next(f for f in result.findings if f.kind == Kind.HANG)
    assert hang.message.startswith("hung in `rank` (launcher_c_sleep.py:"), hang.message
    assert (f"(pid {pids[1]}: its Python frames do not explain its wait, a call into C or a lock, while "
            f"pid {pids[0]} only sleeps)") in hang.message, hang.message
    assert hang.excerpt.startswith(f"Process {pids[1]}:"), hang.excerpt


def test_a_rank_in_c_gets_its_native_dump_past_the_cap_in_tree_order(guard):
    # Six ranks: in tree order the launcher and ranks 0-2 took the four native dumps, and rank 5, the one
    # asleep in C, had none.
    assert guard_module.MAX_NATIVE_DUMPS == 4
    result, pids, natives, plain, stacks = run_launcher(guard, 6)
    assert len(plain) == 7
    assert natives == {pids[1], pids[5]}, stacks


def dump(text: str, pid: int = 10) -> snapshot.StackDump:
    head = f"Process {pid}: python x.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
    return snapshot.StackDump(pid, head + text)


SLEEPS = 'Thread 10 (idle): "MainThread"\n    main (/w/x.py:4)\n'
WAITS = ('Thread 10 (idle): "MainThread"\n    Popen._try_wait (/usr/lib/python3.11/subprocess.py:2004)\n'
         "    Popen.wait (/usr/lib/python3.11/subprocess.py:1264)\n    <module> (/w/x.py:12)\n")
SELECTS = ('Thread 10 (idle): "MainThread"\n'
           "    DefaultSelector.select (/usr/lib/python3.11/selectors.py:415)\n    main (/w/x.py:7)\n")
TWO = SLEEPS + 'Thread 11 (idle): "nccl"\n    run (/w/x.py:9)\n'


@pytest.mark.parametrize(
    "text, line, has_children, in_wait4, explained",
    [
        (SLEEPS, "    time.sleep(0.05)", False, False, True),
        (SLEEPS, "    libc.sleep(10000)", False, False, False),  # ctypes: only native frames show it
        (SLEEPS, "    lock.acquire()", False, False, False),
        (SLEEPS, "    os.waitpid(pid, 0)", True, True, True),  # the kernel has it in wait4
        (SLEEPS, "    os.waitpid(pid, 0)", False, False, False),
        (WAITS, "", True, False, True),
        (WAITS, "", False, False, False),  # no child to wait for: something else holds it
        (SELECTS, "", True, False, True),
        (SELECTS, "", False, False, False),
        (TWO, "    time.sleep(1)", False, False, False),  # a thread in work.wait(): C
        ("", "    time.sleep(1)", False, False, False),  # no frames: nothing is explained
    ],
)
def test_explains_wait(text, line, has_children, in_wait4, explained):
    lines = {4: line, 12: line, 7: line, 9: "    work.wait()"}
    got = diagnosis.explains_wait(dump(text), has_children, in_wait4, lambda frame: lines.get(frame.line, ""))
    assert got is explained


def test_source_lines_are_read_from_regular_files_only(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("import time\n\ntime.sleep(1)\n")
    fifo = tmp_path / "planted.py"
    os.mkfifo(fifo)  # opened for reading without O_NONBLOCK, this would block the guard
    lines = snapshot.SourceLines()
    assert lines.line(snapshot.Frame("<module>", str(source), 3)) == "time.sleep(1)"
    assert lines.line(snapshot.Frame("<module>", str(source), 9)) == ""
    assert lines.line(snapshot.Frame("<module>", str(fifo), 1)) == ""
    assert lines.line(snapshot.Frame("<module>", "<string>", 1)) == ""


def test_where_it_hung_prefers_a_rank_waiting_in_c_but_not_over_one_that_never_reached_the_collective():
    sleeps = dump('Thread 21 (idle): "MainThread"\n    rank (/w/r.py:4)\n', 21)
    in_c = dump('Thread 22 (idle): "MainThread"\n    rank (/w/r.py:6)\n', 22)
    collective = dump('Thread 23 (idle): "MainThread"\n    all_reduce (/t/distributed_c10d.py:3252)\n'
                      "    rank (/w/r.py:8)\n", 23)
    launcher = dump(WAITS.replace("Thread 10", "Thread 20"), 20)
    tree = (launcher, sleeps, in_c)
    assert diagnosis.where_it_hung(20, (), tree)[0] is sleeps  # not judged: tree order, as before
    chosen, where = diagnosis.where_it_hung(20, (), tree, (22,))
    assert chosen is in_c
    assert where == ("`rank` (r.py:6) (pid 22: its Python frames do not explain its wait, a call into C or a "
                     "lock, while pid 21 only sleeps)")
    # Every rank unexplained: no reason to give. A rank asleep outside the collective still comes first.
    assert diagnosis.where_it_hung(20, (), tree, (21, 22)) == (sleeps, "`rank` (r.py:4) (pid 21)")
    assert diagnosis.where_it_hung(20, (), (launcher, collective, sleeps), (23,))[0] is sleeps

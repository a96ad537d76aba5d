"""Walking a tree of thousands of zombies (a parent that never reaps) stays one stat read per zombie."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from analyzer.supervise import tree

from .conftest import BIN


def test_a_real_zombie_is_read_without_listing_its_threads(monkeypatch):
    pids = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    try:
        for pid in pids:  # each becomes a zombie within moments
            for _ in range(200):
                if tree.read_stat(pid).state == "Z":
                    break
                time.sleep(0.01)
        looked = []
        monkeypatch.setattr(tree, "_live_thread", lambda pid: looked.append(pid))
        assert [tree.read_stat(pid).state for pid in pids] == ["Z"] * len(pids)
        assert looked == []
    finally:
        for pid in pids:
            os.waitpid(pid, 0)


def test_a_leader_that_exited_while_its_threads_run_still_reads_as_running():
    proc = subprocess.Popen([sys.executable, str(BIN / "main_thread_exits.py")], stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()
        for _ in range(300):
            with open(f"/proc/{proc.pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.01)
        assert tree.read_stat(proc.pid).state in ("S", "R")
    finally:
        proc.kill()
        proc.wait()

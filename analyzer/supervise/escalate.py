"""End a process tree within a bound, whatever it does: SIGCONT + SIGTERM, wait, SIGKILL, wait, report.

Every signal goes to each distinct process group of the tree (never the guard's own group) and to
each process by pid, because a descendant may have left the group. A stopped process ignores SIGTERM
until continued, hence SIGCONT first. Signalling is idempotent: a process that is already gone is
silently skipped. Processes that survive SIGKILL (D state in the kernel, a frozen cgroup) are
returned, never waited on again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import psutil

from .tree import is_alive

KILL_WAIT_S = 1.0  # after SIGKILL only the kernel can delay an exit; longer than this, it won't happen
_POLL_S = (0.005, 0.05)  # first and largest pause between liveness checks


@dataclass(frozen=True)
class Ending:
    """What teardown achieved: pids that ended after SIGTERM, after SIGKILL, and the survivors."""

    terminated: Tuple[int, ...]
    killed: Tuple[int, ...]
    survivors: Tuple[psutil.Process, ...]


def send(procs: Sequence[psutil.Process], signums: Sequence[int], protect_pgid: int) -> None:
    """Send each of ``signums`` to every group of ``procs`` except ``protect_pgid``, and by pid to the rest.

    A process whose group was signalled is not signalled again by pid: a handler that runs per
    delivery (say, one that spawns a helper on SIGTERM) should see one signal, not two.
    """
    group_of = {}
    for proc in procs:
        try:
            group_of[proc.pid] = os.getpgid(proc.pid)
        except OSError:
            continue
    for signum in signums:
        reached = set()
        for pgid in sorted(set(group_of.values()) - {protect_pgid, 0, 1}):
            try:
                os.killpg(pgid, signum)
                reached.add(pgid)
            except OSError:
                pass
        for proc in reversed(procs):  # descendants were listed after their parents
            if group_of.get(proc.pid) in reached:
                continue
            try:
                proc.send_signal(signum)  # checks the pid still names the same process
            except (psutil.Error, OSError):
                pass


def wait_gone(
    procs: Sequence[psutil.Process], timeout: float, main: Optional[subprocess.Popen] = None
) -> List[psutil.Process]:
    """Wait up to ``timeout`` seconds for ``procs`` to end, reaping those that are our children.

    The command itself is reaped through ``main`` so that ``Popen`` keeps its exit status. Returns
    the ones still alive. Zombies count as ended.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    pause = _POLL_S[0]
    alive = list(procs)
    while True:
        still = []
        for proc in alive:
            if main is not None and proc.pid == main.pid:
                if main.poll() is None:
                    still.append(proc)
                continue
            reap(proc.pid)
            if is_alive(proc):
                still.append(proc)
        alive = still
        remaining = deadline - time.monotonic()
        if not alive or remaining <= 0:
            return alive
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, _POLL_S[1])


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our (possibly adopted) child and has ended."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass


def end_tree(
    procs: Sequence[psutil.Process],
    grace_s: float,
    protect_pgid: int,
    main: Optional[subprocess.Popen] = None,
    kill_wait_s: float = KILL_WAIT_S,
) -> Ending:
    """SIGCONT + SIGTERM, wait ``grace_s``, SIGKILL the living, wait ``kill_wait_s``; bounded in total."""
    if not procs:
        return Ending((), (), ())
    send(procs, (signal.SIGCONT, signal.SIGTERM), protect_pgid)
    alive = wait_gone(procs, grace_s, main)
    terminated = tuple(p.pid for p in procs if p not in alive)
    if not alive:
        return Ending(terminated, (), ())
    send(alive, (signal.SIGKILL,), protect_pgid)
    survivors = wait_gone(alive, kill_wait_s, main)
    killed = tuple(p.pid for p in alive if p not in survivors)
    return Ending(terminated, killed, tuple(survivors))

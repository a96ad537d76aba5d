"""End a process tree within a bound, whatever it does: SIGCONT + SIGTERM, wait, SIGKILL, wait, report.

Every signal goes to each distinct process group of the tree (never the guard's own group), to each
process by pid (a descendant may have left the group), and, when the kernel holds the tree in a
cgroup, to every member of the frozen cgroup (a process that forks away between two reads of
``/proc`` cannot escape that). A stopped process ignores SIGTERM until continued, hence SIGCONT
first. Signalling is idempotent: a process that is already gone is silently skipped. Processes that
survive SIGKILL (D state in the kernel, a frozen cgroup) are returned, never waited on again. Every
wait takes its time from one ``Deadline``.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .containment import Containment
from .deadline import Deadline
from .tree import Proc, is_alive

KILL_WAIT_S = 1.0  # after SIGKILL only the kernel can delay an exit; longer than this, it won't happen
_POLL_S = (0.005, 0.05)  # first and largest pause between liveness checks
_LAST_LOOK_S = 0.1


@dataclass(frozen=True)
class Ending:
    """What teardown achieved: pids that ended after SIGTERM, after SIGKILL, and the survivors."""

    terminated: Tuple[int, ...]
    killed: Tuple[int, ...]
    survivors: Tuple[Proc, ...]


def send(
    procs: Sequence[Proc],
    signums: Sequence[int],
    protect_pgid: int,
    containment: Optional[Containment] = None,
) -> None:
    """Send each of ``signums`` to every group of ``procs`` except ``protect_pgid``, and by pid to the rest.

    A process whose group was signalled is not signalled again by pid: a handler that runs per
    delivery (say, one that spawns a helper on SIGTERM) should see one signal, not two. With a
    kernel ``containment``, its members get each signal at one frozen instant too.
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
            if group_of.get(proc.pid) in reached or not is_alive(proc):
                continue  # is_alive: the pid still names the same process
            try:
                os.kill(proc.pid, signum)
            except OSError:
                pass
    if containment is not None and containment.kernel:
        containment.signal(*signums)  # every signal at one frozen instant: one freeze, not one each


def may_signal(pid: int) -> bool:
    """False when the kernel refuses the guard to signal ``pid`` (EPERM): not a process SIGKILL failed on."""
    try:
        os.kill(pid, 0)
    except OSError as err:
        return err.errno != errno.EPERM
    return True


def wait_gone(
    procs: Sequence[Proc],
    timeout: float,
    main: Optional[subprocess.Popen] = None,
    deadline: Optional[Deadline] = None,
    reserve_s: float = 0.0,
) -> List[Proc]:
    """Wait up to ``timeout`` seconds for ``procs`` to end, reaping those that are our children.

    With a ``deadline`` the wait also ends when only ``reserve_s`` of it is left (a cancel may pull
    it in while this waits). The command itself is reaped through ``main`` so that ``Popen`` keeps
    its exit status. Returns the ones still alive. Zombies count as ended.
    """
    until = time.monotonic() + max(0.0, timeout)
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
        remaining = until - time.monotonic()
        if deadline is not None:
            remaining = min(remaining, deadline.remaining() - reserve_s)
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
    procs: Sequence[Proc],
    grace_s: float,
    protect_pgid: int,
    main: Optional[subprocess.Popen] = None,
    kill_wait_s: float = KILL_WAIT_S,
    deadline: Optional[Deadline] = None,
    containment: Optional[Containment] = None,
    reserve_s: float = 0.0,
) -> Ending:
    """SIGCONT + SIGTERM, wait ``grace_s``, SIGKILL the living, wait ``kill_wait_s``; bounded in total.

    With a ``deadline`` the grace ends early enough for the SIGKILL wait and ``reserve_s`` (the
    stages after this one) to fit before it, also when a cancel brings the deadline in meanwhile.
    """
    kernel = containment is not None and containment.kernel
    if not procs and not (kernel and containment.members()):
        return Ending((), (), ())
    deadline = deadline or Deadline(grace_s + kill_wait_s)
    send(procs, (signal.SIGCONT, signal.SIGTERM), protect_pgid, containment)
    kill_wait = min(kill_wait_s, max(0.0, deadline.remaining() - reserve_s))
    alive = wait_gone(procs, grace_s, main, deadline, reserve_s + kill_wait)
    terminated = tuple(p.pid for p in procs if p not in alive)
    if not alive and not (kernel and containment.members()):
        return Ending(terminated, (), ())
    if kernel:
        containment.kill(deadline.within(kill_wait_s / 2, reserve_s))
    send(alive, (signal.SIGKILL,), protect_pgid)
    survivors = wait_gone(alive, kill_wait_s, main, deadline, reserve_s)
    if survivors and deadline.remaining() <= reserve_s:
        # No time was left for the SIGKILL wait: a short last look, so a process that is merely slow
        # to die is not reported as unkillable.
        survivors = wait_gone(survivors, _LAST_LOOK_S, main)
    killed = tuple(p.pid for p in alive if p not in survivors)
    return Ending(terminated, killed, tuple(survivors))

"""Start the guarded command so that the guard owns its whole process tree, and reap what it adopts.

Where the kernel allows, ``containment`` puts the command in a cgroup of its own (joined between
fork and exec); these three layers stay on regardless and are all there is elsewhere, because each
alone misses something (psutil's docs say ``children(recursive=True)``
misses orphans): the command starts in its own session (its groups are never ours, so signalling
them cannot hit the guard); the guard becomes a child subreaper on Linux so orphans re-parent to it
instead of to init; and every process inherits an environment token, readable from
``/proc/PID/environ``, so descendants that ``setsid()`` or double-fork away are still found.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import shutil
import subprocess
import sys
import threading
import uuid
from typing import Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple

from ..errors import CommandNotStarted, UsageError
from . import senders, tree

TOKEN_ENV = "GPU_HANG_GUARD_TOKEN"

# prctl(2) option numbers, from <linux/prctl.h>.
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37

PIPE_BYTES = 1 << 20  # the default pipe-max-size, so unprivileged users get it too
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # fcntl(2); Python names it from 3.10

# Defaults for the command's environment; a value the user set wins.
_CHILD_DEFAULTS = {"PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}


def new_tree_token() -> str:
    """A random value for ``TOKEN_ENV``, unique to one guarded run."""
    return uuid.uuid4().hex


def child_environment(
    base: Mapping[str, str],
    token: str,
    extra: Sequence[Tuple[str, str]] = (),
    remove: Sequence[str] = (),
) -> Dict[str, str]:
    """``base`` without ``remove``, plus ``extra`` and the tree token.

    Faulthandler and unbuffered output are on unless ``base`` or ``extra`` set them; the token is
    always the guard's own.
    """
    env = {key: value for key, value in base.items() if key not in set(remove)}
    for key, value in _CHILD_DEFAULTS.items():
        env.setdefault(key, value)
    env.update(extra)
    env[TOKEN_ENV] = token
    return env


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); True when it is one afterwards.

    Setting it is idempotent, and it is checked first so a guard process sets it at most once.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the running interpreter already links libc
    except OSError:
        return False
    current = ctypes.c_int(0)
    if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(current), 0, 0, 0) == 0 and current.value:
        return True
    return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def close_proc_to_the_command() -> bool:
    """Make the guard non-dumpable (Linux); True when it is.

    ``/proc/PID/{environ,fd,mem,...}`` are open to any same-user process of a dumpable target: the
    command could read the real ``GITHUB_OUTPUT`` path from the guard's environment, open the guard's
    private log copies, or write workflow commands onto the guard's stderr outside the fence. A
    non-dumpable process's ``/proc`` entries need ``CAP_SYS_PTRACE``. ``execve`` makes the command
    dumpable again, so py-spy can still read it; processes forked from the guard stay closed.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    return libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def start(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Optional[str] = None,
    before_exec: Optional[Callable[[], None]] = None,
) -> subprocess.Popen:
    """Start ``argv`` in a new session, stdout and stderr on pipes.

    Raises ``CommandNotStarted`` (a ``UsageError`` with a shell's status) when the command is not there
    or execve(2) refuses it, ``UsageError`` for other failures, and ``OSError`` (EMFILE, ENFILE) when the
    guard itself is out of descriptors.

    ``before_exec`` runs in the child between fork and exec (joining a cgroup): it must only make
    system calls, since other threads' locks may be held in the forked child.
    """
    if not argv:
        raise UsageError("run: no command given after --")
    try:
        # The guard's cancel signals are blocked in its threads (senders.py), never in the command: its
        # mask is emptied in the child, since a command's `kill $PPID` can come before Popen returns,
        # while a parent thread unblocked would take it the old way, its sender unknown.
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=None,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
            preexec_fn=senders.unblock_then(before_exec),
        )
    except OSError as err:
        if err.errno in _GUARDS_OWN_LIMITS:
            raise  # no pipe or fork for the guard (``ulimit -n``): not the command's fault (cli.main says so)
        if err.errno != errno.ENOENT and err.errno not in _EXEC_REFUSED:
            raise UsageError(f"run: cannot start {argv[0]!r}: {err.strerror or err}") from err
        raise _not_started(argv[0], err, env) from err
    for stream in (proc.stdout, proc.stderr):
        _enlarge_pipe(stream.fileno())
    return proc


# What a shell exits with when it cannot run a command (POSIX, "Command Search and Execution").
NOT_FOUND_EXIT_STATUS = 127
NOT_EXECUTABLE_EXIT_STATUS = 126


# execve(2)'s refusals of a file that is there: a shell's 126 ("Permission denied", "Is a directory",
# "Exec format error", "Text file busy"...).
_EXEC_REFUSED = frozenset({
    errno.EACCES, errno.EPERM, errno.ENOEXEC, errno.EISDIR, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG,
    errno.ETXTBSY, errno.E2BIG, errno.ELIBBAD,
})
# Popen's own pipes and fork failing: the guard's limits, not the command's.
_GUARDS_OWN_LIMITS = frozenset({errno.EMFILE, errno.ENFILE})


def _not_started(program: str, err: OSError, env: Mapping[str, str]) -> CommandNotStarted:
    """Why ``program`` did not start, with a shell's exit status: 127 not found, 126 not executable.

    execve(2) says ENOENT also for a script whose ``#!`` interpreter is missing: the script is then
    named with its interpreter, as bash says "bad interpreter", not as a command that is not there.
    """
    problem = err.strerror or str(err)
    if err.errno in _EXEC_REFUSED:
        return CommandNotStarted(f"{program!r}: {problem}", NOT_EXECUTABLE_EXIT_STATUS)
    found = program if os.sep in program else shutil.which(program, path=env.get("PATH", os.defpath))
    interpreter = _interpreter(found) if found and os.path.isfile(found) else None
    if interpreter is not None:
        return CommandNotStarted(
            f"{program!r}: its interpreter {interpreter!r} (#! line) was not found",
            NOT_FOUND_EXIT_STATUS,
        )
    return CommandNotStarted(f"{program!r}: {problem}", NOT_FOUND_EXIT_STATUS)


def _interpreter(path: str) -> Optional[str]:
    """The ``#!`` line's interpreter of the file at ``path``, if it has one."""
    try:
        with open(path, "rb") as script:
            first = script.read(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].split(b"\n", 1)[0].split()
    return os.fsdecode(words[0]) if words else None


def _enlarge_pipe(fd: int) -> None:
    """Give the pipe ``PIPE_BYTES`` of buffer (best effort): a flooding command stalls less on us."""
    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass  # above /proc/sys/fs/pipe-max-size for an unprivileged user, or not Linux


def own_process_group() -> int:
    """The guard's own process group, which must never be signalled."""
    return os.getpgrp()


class Reaper:
    """Reap the orphans the subreaper adopts, continuously, without stealing anyone's exit status.

    Adopted orphans become the guard's zombies; left there they pile up by the thousand (``for i in
    $(seq 2000); do ( true & ); done``) and every later walk of ``/proc`` pays for them. A thread
    peeks at the next ended child (``waitid(WNOWAIT)``) and reaps it, except: the command itself is
    reaped through its ``Popen`` (which records its status), pids in ``protect`` (the guard's own
    helpers, reaped by their ``Popen``) and children older than the command (someone else's) are
    left alone; ``paused()`` stops it while helpers start, so none is reaped before it is known.
    """

    def __init__(self, command: subprocess.Popen, protect: Sequence[int], interval_s: float = 0.1):
        self._command = command
        self._protect = protect
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._since = _start_ticks(command.pid)
        self.reaped = 0
        self._thread = threading.Thread(target=self._run, name="guard-reaper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            yield

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            with self._lock:
                self.reap_now()

    def reap_now(self) -> None:
        """Reap every ended child that may be reaped; returns when none is left or the next is not ours."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except (ChildProcessError, OSError):
                return
            if info is None or info.si_pid == 0:
                return
            pid = info.si_pid
            if pid == self._command.pid:
                if self._command.poll() is None:
                    return  # another thread is reaping it right now
                continue
            if pid in self._protect or _start_ticks(pid) < self._since:
                self._reap_behind(pid)
                return
            try:
                os.waitpid(pid, os.WNOHANG)
                self.reaped += 1
            except ChildProcessError:
                continue

    def _reap_behind(self, blocker: int) -> None:
        """The next ended child is not ours to reap: reap the adopted zombies behind it one by one."""
        guard = os.getpid()
        for entry in os.listdir("/proc"):
            pid = int(entry) if entry.isdigit() else 0
            if not pid or pid in (blocker, self._command.pid) or pid in self._protect:
                continue
            stat = tree.read_stat(pid)
            if stat and stat.state == "Z" and stat.ppid == guard and stat.start >= self._since:
                try:
                    os.waitpid(pid, os.WNOHANG)
                    self.reaped += 1
                except ChildProcessError:
                    pass


def _start_ticks(pid: int) -> int:
    stat = tree.read_stat(pid)
    return stat.start if stat else 0

"""Evidence taken before any signal: Python stacks (py-spy) and a GPU snapshot (nvidia-smi).

Both tools run as helper processes with their own short timeouts, all at once, so a hung target (or
a hung driver) cannot stall the guard. ``py-spy dump --nonblocking`` reads the target's memory
without stopping it, which also works for stopped and D-state processes. py-spy refuses ``--native``
together with ``--nonblocking``, so native frames come from a second, pausing dump of a few
processes that can be paused, started at the same moment as the others (not on cancel, where time
is short).
"""

from __future__ import annotations

import fcntl
import functools
import operator
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..durations import format_duration
from .senders import unblocked

PY_SPY_NAME = "py-spy"
NVIDIA_SMI_NAME = "nvidia-smi"
GPU_QUERY = (
    "--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu",
    "--format=csv,noheader,nounits",
)
APPS_QUERY = ("--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits")

_HELPER_TERM_WAIT_S = 0.3
START_THREADS = 4  # helpers started at once: each start mostly waits for its exec
SOURCE_READ_BYTES = 1 << 20
SOURCE_READ_S = 0.2
# What a native dump's block says when the deadline's share for native stacks ran out first.
NATIVE_ABANDONED = "abandoned: no result within the {share} the deadline leaves native stacks"
NATIVE_NOT_STARTED = "not taken: its plain dump was read after the {share} the deadline leaves native stacks"
_TIMED_OUT = "timed out"
# What a plain dump's block says when it got no place, or lost its place, among the dumps run at once.
PLAIN_NOT_STARTED = "not taken: the {share} the deadline leaves the stacks were spent on the ones above"
PLAIN_CUT = "cut after {each}, past three times the slowest finished dump: its place went to one waiting"
_POOL_POLL_S = 0.005  # how often the running dumps are looked at for a free place
_END_POLL_S = (0.001, 0.01)  # first and largest pause between looks at the helpers being ended
_DECIDE_POLL_S = 0.01  # how often the plain dumps are looked at while natives are chosen from them
# Where the interpreter's own modules and installed packages live, whatever the prefix or venv.
_LIBRARY_PATH_PARTS = ("/lib/python3", "/site-packages/", "/dist-packages/", "/lib64/python3")
_THREAD = re.compile(r'^Thread (?P<tid>0x[0-9a-fA-F]+|\d+) \((?P<status>[^)]*)\)(?:: "(?P<name>.*)")?\s*$')
_FRAME = re.compile(r"^\s+(?P<func>.+?) \((?P<file>[^()]*?):(?P<line>\d+)\)\s*$")


@dataclass(frozen=True)
class Frame:
    """One Python frame as py-spy names it (``--full-filenames``): function, file path, line."""

    function: str
    file: str
    line: int

    def describe(self) -> str:
        return f"`{self.function}` ({os.path.basename(self.file)}:{self.line})"

    @property
    def in_library(self) -> bool:
        """Whether the frame is the interpreter's or an installed package's rather than the user's own.

        A hang is nearly always *inside* such a frame (``Condition.wait``, ``socket.recv``); the frame
        worth naming first is the user's code that called it.
        """
        path = self.file.replace("\\", "/")
        return path.startswith("<") or any(part in path for part in _LIBRARY_PATH_PARTS)

    @staticmethod
    def where(frames: Sequence["Frame"]) -> str:
        """``frames`` (innermost first) as a place: the user's innermost frame, then the library call.

        ``"`wait_for_peers` (test_dist.py:12), waiting in `Condition.wait` (threading.py:327)"``.
        """
        if not frames:
            return "an unknown place"
        own = next((frame for frame in frames if not frame.in_library), None)
        if own is None or own is frames[0]:
            return frames[0].describe()
        return f"{own.describe()}, waiting in {frames[0].describe()}"


@dataclass(frozen=True)
class StackDump:
    """The ``py-spy dump`` of one process: its text, or why there is none."""

    pid: int
    text: str
    error: str = ""

    def main_thread_frames(self) -> Tuple[Frame, ...]:
        """Frames of the main thread, innermost first (empty when unknown)."""
        return _main_thread_frames(self.text, self.pid)

    def threads(self) -> Tuple[Tuple[bool, Tuple[Frame, ...]], ...]:
        """Every thread the dump shows, in its order: (whether it is the main thread, its frames)."""
        return _threads(self.text, self.pid)


class SourceLines:
    """Lines of the tree's source files, as a stack's frames name them, read without ever hanging the guard.

    Only a regular file's first ``SOURCE_READ_BYTES``, opened without blocking (the command may leave a
    FIFO at a path its frames name) and read in a thread given ``SOURCE_READ_S``: one read stalled past
    that (a hung network or FUSE mount) ends every later read, each then ``""``. Files are read once.
    """

    def __init__(self) -> None:
        self._files: Dict[str, List[bytes]] = {}
        self._stalled = False

    def line(self, frame: Frame) -> str:
        """The text of ``frame``'s line, ``""`` where it cannot be read at once."""
        if self._stalled or frame.line < 1 or not frame.file.startswith("/"):
            return ""
        if frame.file not in self._files:
            box: List[List[bytes]] = []
            try:
                reader = threading.Thread(target=lambda: box.append(_read_lines(frame.file)), daemon=True)
                reader.start()
            except RuntimeError:  # "can't start new thread"
                return ""
            reader.join(SOURCE_READ_S)
            if not box:
                self._stalled = True
                return ""
            self._files[frame.file] = box[0]
        lines = self._files[frame.file]
        return lines[frame.line - 1].decode("utf-8", "replace") if frame.line <= len(lines) else ""


def _read_lines(path: str) -> List[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        return os.pread(fd, SOURCE_READ_BYTES, 0).split(b"\n")
    except OSError:
        return []
    finally:
        os.close(fd)


def find_tool(name: str) -> Optional[str]:
    """The tool next to this interpreter (a venv's own py-spy) or else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


@dataclass(frozen=True)
class Tool:
    """A helper program as it was when the guard started, before the command could touch it.

    Every file the step can write the command can write too: the action's virtualenv (py-spy beside
    the interpreter) and a directory on PATH such as ``~/.local/bin``. Looked up and started by path
    at a timeout, a program the command put there ran as the guard's helper: outside the command's tree
    and cgroup, with the guard's environment (the runner's real ``GITHUB_OUTPUT``), and through
    ``sudo -n`` as root. So each tool is found once, before the command starts, and run from a
    descriptor: a binary from a sealed copy in memory (``memfd_create(2)``, ``F_SEAL_WRITE``), a script
    (its interpreter may read files beside the path it was started by) from the file found then.
    """

    path: str  # where it was found
    fd: int = -1  # the kept copy or file; -1: run by path (no copy could be made)

    def argv0(self, through_sudo: bool) -> str:
        """The name to run it by: the kept descriptor, through ``/proc``.

        sudo closes every descriptor but 0-2 before it runs the tool, so through sudo it is the
        guard's own ``/proc`` entry (root may open it; the command, the same user as a non-dumpable
        guard, may not); otherwise the helper's own inherited descriptor (``pass_fds``).
        """
        if self.fd < 0:
            return self.path
        return f"/proc/{os.getpid() if through_sudo else 'self'}/fd/{self.fd}"

    @property
    def pass_fds(self) -> Tuple[int, ...]:
        return (self.fd,) if self.fd >= 0 else ()

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass


@dataclass(frozen=True)
class Tools:
    """py-spy, nvidia-smi and sudo, found before the command started (``find_tools``)."""

    py_spy: Optional[Tool]
    nvidia_smi: Optional[Tool]
    sudo: Optional[str]  # set-user-ID: run by the path found then (a copy would not be)
    # The environment they run with; None: the guard's own. A helper is an ordinary (dumpable) process
    # of the command's user, so its /proc/PID/environ is open to the command while it runs: it must not
    # hold what the guard keeps from the command (the runner's real GITHUB_OUTPUT path, the action's
    # own variables).
    env: Optional[Tuple[Tuple[str, str], ...]] = None

    def close(self) -> None:
        for tool in (self.py_spy, self.nvidia_smi):
            if tool is not None:
                tool.close()


def find_tools(hidden: Sequence[str] = ()) -> Tools:
    """Find and keep the helpers now; call before the command starts, ``close`` after the run.

    ``hidden``: names of variables of the guard's environment the helpers must not get.
    """
    env = tuple((k, v) for k, v in os.environ.items() if k not in set(hidden)) if hidden else None
    return Tools(keep_tool(find_tool(PY_SPY_NAME)), keep_tool(shutil.which(NVIDIA_SMI_NAME)),
                 shutil.which("sudo"), env)


def _tools_now() -> Tools:
    """The tools by their paths now, for a caller with none found before a command (a direct call)."""
    py_spy, nvidia_smi = find_tool(PY_SPY_NAME), shutil.which(NVIDIA_SMI_NAME)
    return Tools(Tool(py_spy) if py_spy else None, Tool(nvidia_smi) if nvidia_smi else None,
                 shutil.which("sudo"))


_MFD_EXEC = 0x0010  # linux/memfd.h since 6.3: executable even where vm.memfd_noexec asks otherwise
_SEALS = ("F_SEAL_SEAL", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")


def keep_tool(path: Optional[str]) -> Optional[Tool]:
    """``path`` kept as it is now (see ``Tool``); a plain path where the system offers no way to."""
    if path is None:
        return None
    try:
        source = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return Tool(path)  # execute-only: not ours to copy, nor the command's to write
    try:
        if os.pread(source, 2, 0) == b"#!":
            return Tool(path, source)
        copy = _sealed_copy(source, os.path.basename(path))
    except OSError:
        copy = -1
    os.close(source)
    return Tool(path, copy)


def _sealed_copy(source: int, name: str) -> int:
    """An executable, sealed in-memory copy of the file open at ``source`` (-1 where none can be)."""
    if not hasattr(os, "memfd_create") or not hasattr(fcntl, "F_ADD_SEALS"):
        return -1
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    try:
        fd = os.memfd_create(name, flags | _MFD_EXEC)
    except OSError:  # EINVAL before Linux 6.3
        fd = os.memfd_create(name, flags)
    try:
        while os.sendfile(fd, source, None, 1 << 24):
            pass
        if not os.fstat(fd).st_mode & 0o111:  # vm.memfd_noexec made it a data file
            raise OSError("memfd not executable")
        seals = functools.reduce(operator.or_, [getattr(fcntl, name) for name in _SEALS])
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError:
        os.close(fd)
        return -1
    return fd


def privilege_prefix(euid: int, ptrace_scope: Optional[int], sudo: Optional[str]) -> List[str]:
    """What to put before ``py-spy`` so it may read the tree's memory.

    Yama's ``ptrace_scope`` 1 (Ubuntu's default, GitHub's hosted runners included) lets a process
    trace only its own descendants, and py-spy is the tree's sibling, not its parent: unless the
    guard is root, py-spy runs through ``sudo -n`` when sudo exists (passwordless on hosted runners;
    otherwise it fails at once and the dump says why).
    """
    if euid == 0 or not ptrace_scope or sudo is None:
        return []
    return [sudo, "-n"]


def _ptrace_scope() -> Optional[int]:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope", encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None  # no Yama: ordinary same-user ptrace rules


def _main_thread_frames(text: str, pid: int) -> Tuple[Frame, ...]:
    threads = _threads(text, pid)
    for is_main, frames in threads:
        if is_main:
            return tuple(frames)
    return tuple(threads[0][1]) if threads else ()


# Parsed once per dump: the diagnosis asks each dump for its main thread dozens of times (every
# candidate, helper and runtime check), and a process of 1000 threads (red41's q03) gave a 1 MB text
# whose every re-parse took 0.1 s: 3.6 s of Python between the stacks and the SIGTERM, on no deadline.
@functools.lru_cache(maxsize=64)  # twice the dumps one diagnosis takes (guard.MAX_DUMPS)
def _threads(text: str, pid: int) -> Tuple[Tuple[bool, Tuple[Frame, ...]], ...]:
    return tuple((is_main, tuple(frames)) for is_main, frames in _parse_threads(text, pid))


def _parse_threads(text: str, pid: int) -> List[Tuple[bool, List[Frame]]]:
    threads: List[Tuple[bool, List[Frame]]] = []
    for row in text.splitlines():
        thread = _THREAD.match(row)
        if thread:
            tid = thread.group("tid")
            is_main = thread.group("name") == "MainThread" or tid == str(pid)
            threads.append((is_main, []))
            continue
        frame = _FRAME.match(row)
        if frame and threads:
            threads[-1][1].append(Frame(frame.group("func"), frame.group("file"), int(frame.group("line"))))
    return threads


class _Helper:
    """A helper process writing to a temporary file (no pipe to fill), killed at its deadline."""

    def __init__(
        self, argv: Sequence[str], pass_fds: Sequence[int] = (),
        env: Optional[Tuple[Tuple[str, str], ...]] = None,
    ) -> None:
        self.out = tempfile.TemporaryFile()
        self.error = ""
        try:
            with unblocked():  # see senders.py: a helper must get the guard's SIGTERM
                self.proc: Optional[subprocess.Popen] = subprocess.Popen(
                    list(argv), stdin=subprocess.DEVNULL, stdout=self.out, stderr=subprocess.STDOUT,
                    pass_fds=tuple(pass_fds), env=dict(env) if env is not None else None,
                )
        except OSError as err:
            self.proc = None
            self.error = f"could not start {argv[0]}: {err.strerror or err}"

    def ended(self, deadline: float) -> bool:
        """True once it has exited; waits for that until ``deadline`` (monotonic) at most."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
        return True

    def send(self, signum: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.send_signal(signum)
            except OSError:
                pass

    def result(self) -> Tuple[int, str]:
        """(exit status or -1, output); call after ``end_together``."""
        status = -1
        if self.proc is not None and self.proc.returncode is not None and not self.error:
            status = self.proc.returncode
        self.out.seek(0)
        text = self.out.read().decode("utf-8", "backslashreplace")
        self.out.close()
        return status, text


class _Queued:
    """A plain dump waiting for a place among those run at once; a ``_Helper`` once ``_Pool`` starts it."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = argv
        self.helper: Optional[_Helper] = None
        self._error = ""
        self.settled = threading.Event()  # started, or never will be
        self.started_at = 0.0

    @property
    def error(self) -> str:
        """Why there is no dump: never started, cut, timed out, or the helper's own (not started)."""
        return self._error or (self.helper.error if self.helper is not None else "")

    @error.setter
    def error(self, why: str) -> None:
        self._error = self._error or why  # the first reason stays: a cut dump is not "timed out" too

    @property
    def proc(self) -> Optional[subprocess.Popen]:
        return self.helper.proc if self.helper is not None else None

    def ended(self, deadline: float) -> bool:
        if not self.settled.wait(max(0.0, deadline - time.monotonic())):
            return False
        return self.helper.ended(deadline) if self.helper is not None else True

    def send(self, signum: int) -> None:
        if self.helper is not None:
            self.helper.send(signum)

    def result(self) -> Tuple[int, str]:
        if self.helper is None:
            return -1, ""
        status, text = self.helper.result()
        return (-1 if self.error else status), text


class _Pool:
    """Starts queued plain dumps, ``parallel`` running at once, each given ``each_s`` while others wait.

    On 2 loaded CPUs 17 py-spy started at once shared the CPUs until the bound and none had finished
    when they were ended (issue 8 item 6): a few at a time finish one after another, so what the
    deadline cuts is the last ones in tree order, the command's own first. A thread feeds the places
    until the queue is empty or ``deadline``; a queued dump not started by then is not taken.
    """

    def __init__(self, argvs: Sequence[Sequence[str]], parallel: int, each_s: float, deadline: float,
                 share: str, pass_fds: Sequence[int], env: Optional[Tuple[Tuple[str, str], ...]],
                 helper_pids: Optional[List[int]]) -> None:
        self.slots = [_Queued(argv) for argv in argvs]
        self._parallel, self._each_s, self._deadline, self._share = max(1, parallel), each_s, deadline, share
        self._start = functools.partial(start_helpers, pass_fds=pass_fds, env=env, helper_pids=helper_pids)
        self._thread: Optional[threading.Thread] = threading.Thread(target=self._feed, daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # "can't start new thread": every dump at once, as before the pool
            self._thread = None
            self._start_now(self.slots)

    def _start_now(self, slots: Sequence[_Queued]) -> None:
        for slot, helper in zip(slots, self._start([slot.argv for slot in slots])):
            slot.helper, slot.started_at = helper, time.monotonic()
            slot.settled.set()

    def _feed(self) -> None:
        queue = list(self.slots)
        running: List[_Queued] = []
        took: List[float] = []  # how long each finished dump ran
        try:
            while queue and time.monotonic() < self._deadline:
                now = time.monotonic()
                for slot in running:
                    if slot.proc is None or slot.proc.poll() is not None:
                        took.append(now - slot.started_at)
                running = [slot for slot in running if slot.proc is not None and slot.proc.poll() is None]
                # Only an outlier gives its place up (a thousand threads, a target in D state): under
                # load every dump is slow alike, and cutting them at a fixed time left none at all.
                bound = max(self._each_s, 3 * max(took)) if took else float("inf")
                over = [slot for slot in running if now - slot.started_at > bound]
                if over and len(running) >= self._parallel:  # the longest running gives its place up
                    slot = over[0]
                    slot.error = PLAIN_CUT.format(each=format_duration(now - slot.started_at))
                    slot.send(signal.SIGTERM)  # not waited for here: end_together does at the bound
                    running.remove(slot)
                room = self._parallel - len(running)
                if room > 0:
                    batch, queue = queue[:room], queue[room:]
                    self._start_now(batch)
                    running += batch
                else:
                    time.sleep(_POOL_POLL_S)
        finally:
            for slot in queue:
                slot.error = PLAIN_NOT_STARTED.format(share=self._share)
                slot.settled.set()

    def join(self) -> None:
        """Wait until every dump is started or marked not taken (at ``deadline`` at the latest)."""
        if self._thread is not None:
            self._thread.join()


def end_together(helpers: Sequence[_Helper], deadline: float,
                 later: Sequence[_Helper] = (), later_by: float = 0.0) -> None:
    """Every helper ended by ``deadline`` (``later`` by ``later_by``), or else ended together: one SIGTERM
    to each still running (sudo passes it on to py-spy, while a SIGKILL would orphan py-spy), one short
    wait for them all, then SIGKILL to the rest and one more short wait. Ending them one after another
    cost each late helper its own waits: 16 py-spy starved by the hung tree's own threads took the guard
    20 s past its 3 s bound. A helper the kernel holds even after SIGKILL (state D) is left, marked timed
    out.

    The waits look at every late helper every few milliseconds: waiting on each in turn (``Popen.wait``
    backs off to 50 ms) and ending the plain dumps and the natives one group after the other held the
    stacks 0.05-0.13 s past their share on 2 loaded CPUs (bench/guard_stages.py --work spin).
    """
    late = [helper for helper in helpers if not helper.ended(deadline)]
    late += [helper for helper in later if not helper.ended(later_by)]
    for helper in late:
        helper.error = _TIMED_OUT
        helper.send(signal.SIGTERM)
    for signum in (signal.SIGKILL, None):
        late = _wait_for_all(late, time.monotonic() + _HELPER_TERM_WAIT_S)
        for helper in late:
            if signum is not None:
                helper.send(signum)


def _wait_for_all(helpers: Sequence[_Helper], bound: float) -> List[_Helper]:
    """Those of ``helpers`` still running at ``bound`` (monotonic), each looked at every few ms until then."""
    pause = _END_POLL_S[0]
    while True:
        helpers = [helper for helper in helpers if not helper.ended(0.0)]
        left = bound - time.monotonic()
        if not helpers or left <= 0:
            return helpers
        time.sleep(min(pause, left))
        pause = min(2 * pause, _END_POLL_S[1])


def start_helpers(
    argvs: Sequence[Sequence[str]], pass_fds: Sequence[int] = (),
    env: Optional[Tuple[Tuple[str, str], ...]] = None, helper_pids: Optional[List[int]] = None,
) -> List[_Helper]:
    """One helper per argv, in order, started from up to ``START_THREADS`` threads at once.

    Each start waits for its exec: in a loop, 20 py-spy took 0.4-0.6 s to start on 2 loaded CPUs
    before the first could be waited for. Where no thread can be started (the tree took the user's
    last processes) the rest start one after another here. ``helper_pids`` gets each pid as it starts.
    """
    helpers: List[Optional[_Helper]] = [None] * len(argvs)
    claimed = iter(range(len(argvs)))  # next() on one shared iterator: each index is started once
    lock = threading.Lock()

    def start_some() -> None:
        while True:
            with lock:
                index = next(claimed, None)
            if index is None:
                return
            helper = helpers[index] = _Helper(argvs[index], pass_fds, env)
            if helper_pids is not None and helper.proc is not None:
                helper_pids.append(helper.proc.pid)

    threads: List[threading.Thread] = []
    for _ in range(min(START_THREADS, len(argvs) - 1)):
        thread = threading.Thread(target=start_some, daemon=True)
        try:
            thread.start()
        except RuntimeError:  # "can't start new thread"
            break
        threads.append(thread)
    start_some()
    for thread in threads:
        thread.join()
    return [helper for helper in helpers if helper is not None]


def dump_stacks(
    pids: Sequence[int],
    timeout_s: float,
    helper_pids: Optional[List[int]] = None,
    native: bool = False,
) -> List[StackDump]:
    """``py-spy dump --nonblocking`` of every pid at once, all within ``timeout_s`` seconds.

    With ``native``, ``py-spy dump --native`` instead: C/C++ frames too (where a GPU or NCCL wait
    shows), but py-spy pauses each process while it reads, so only for processes about to be
    killed and not stopped or in D state. ``helper_pids`` receives the helpers' pids so the tree
    walk can leave them out.
    """
    plain, natives = dump_all(() if native else pids, pids if native else (), timeout_s, helper_pids)
    return natives if native else plain


def dump_all(
    pids: Sequence[int],
    native_pids: Sequence[int],
    timeout_s: float,
    helper_pids: Optional[List[int]] = None,
    tools: Optional[Tools] = None,
    maybe_native: Sequence[int] = (),
    needs_native: Optional[Callable[[StackDump], bool]] = None,
    max_native: Optional[int] = None,
    native_s: Optional[float] = None,
    parallel: Optional[int] = None,
    each_s: Optional[float] = None,
) -> Tuple[List[StackDump], List[StackDump]]:
    """Non-blocking dumps of ``pids`` and native dumps of ``native_pids``, every helper started at once.

    One ``timeout_s`` bounds them all: many processes cost about what one does, not the sum. A pid of
    ``maybe_native`` (and of ``pids``) gets a native dump too where ``needs_native`` says its plain dump
    does not explain its wait, started the moment that plain dump is read while the others still run;
    ``max_native`` native dumps at most in all, ``native_pids`` first, and a place kept for the first of
    ``maybe_native`` (the command) until its plain dump is read. Natives come back in the order they
    were started. ``native_s`` (at most ``timeout_s``) is the share of native dumps: one still running
    that long after the call, and after every plain dump, is abandoned, and one needed later is not
    started, each dump saying so; the plain dumps keep ``timeout_s``. With ``parallel``, at most that
    many plain dumps run at once, in the order of ``pids``, one running past ``each_s`` seconds ended
    when another waits for its place; one not started within ``timeout_s`` says it was not taken.
    """
    tools = tools or _tools_now()
    tool = tools.py_spy
    if tool is None:
        missing = "py-spy is not installed"
        return ([StackDump(pid, "", missing) for pid in pids],
                [StackDump(pid, "", missing) for pid in native_pids][:max_native])
    now = time.monotonic()
    deadline = now + timeout_s
    natives_by = now + min(timeout_s, timeout_s if native_s is None else native_s)
    share = format_duration(natives_by - now)
    at_once = list(native_pids)[:max_native]
    deferred = [pid for pid in maybe_native if needs_native and pid in pids and pid not in at_once]
    wanted = [(pid, False) for pid in pids] + [(pid, True) for pid in at_once]
    prefix = privilege_prefix(os.geteuid(), _ptrace_scope(), tools.sudo) if wanted else []
    argv0, pass_fds = tool.argv0(through_sudo=bool(prefix)), () if prefix else tool.pass_fds

    def argv(pid: int, is_native: bool) -> List[str]:
        return [*prefix, argv0, "dump", "--native" if is_native else "--nonblocking", "--full-filenames",
                "--pid", str(pid)]

    pool: Optional[_Pool] = None
    plain_helpers: Sequence = []
    if parallel is not None and parallel < len(pids):
        pool = _Pool([argv(pid, False) for pid in pids], parallel, timeout_s if each_s is None else each_s,
                     deadline, format_duration(timeout_s), pass_fds, tools.env, helper_pids)
        plain_helpers, wanted = pool.slots, wanted[len(pids):]
    started = start_helpers([argv(pid, is_native) for pid, is_native in wanted], pass_fds, tools.env,
                            helper_pids)
    if pool is None:
        plain_helpers, started = started[: len(pids)], started[len(pids):]
    natives: List[Tuple[int, _Helper]] = list(zip(at_once, started))
    read: dict = {}  # index in pids -> its plain dump, read early to choose the natives
    undecided: List[int] = []
    room = 0
    not_taken: List[StackDump] = []
    if deferred and needs_native is not None:
        room = len(deferred) if max_native is None else max_native - len(natives)
        undecided = [pids.index(pid) for pid in deferred]
        first = undecided[0] if undecided else -1
        # Read, asking for a native, while the last place was kept for the command: they get it if the
        # command's own dump turns out not to need it (its dump may be read after theirs).
        waiting: List[int] = []
        while (undecided or waiting) and room > 0 and time.monotonic() < natives_by:
            done = [index for index in undecided if plain_helpers[index].ended(0.0)]
            if not done and undecided:
                plain_helpers[undecided[0]].ended(min(natives_by, time.monotonic() + _DECIDE_POLL_S))
                continue
            for index in done:
                undecided.remove(index)
                dump = read[index] = _dump_from(pids[index], plain_helpers[index])
                if needs_native(dump):
                    waiting.insert(0 if index == first else len(waiting), index)
            kept = 1 if first in undecided else 0
            while waiting and room > kept:
                index = waiting.pop(0)
                room -= 1
                if time.monotonic() >= natives_by:  # its result could not arrive within the share
                    not_taken.append(StackDump(pids[index], "", NATIVE_NOT_STARTED.format(share=share)))
                    continue
                natives.extend((pids[index], helper) for helper in start_helpers(
                    [argv(pids[index], True)], pass_fds, tools.env, helper_pids))
            if not undecided:
                break
    if pool is not None:
        pool.join()  # every dump started or not taken: none starts while the late ones are ended
    unread = [h for i, h in enumerate(plain_helpers) if i not in read]
    if natives_by < deadline:
        # The plain dumps keep the whole bound. A native is abandoned only past its share and once it
        # alone holds the stage: ending it while plain dumps still run would lose it and gain nothing.
        end_together(unread, deadline, [h for _, h in natives], natives_by)
        for _, helper in natives:
            if helper.error == _TIMED_OUT:
                helper.error = NATIVE_ABANDONED.format(share=share)
    else:
        end_together(unread + [h for _, h in natives], deadline)
    plain = [read[index] if index in read else _dump_from(pid, helper)
             for index, (pid, helper) in enumerate(zip(pids, plain_helpers))]
    # A plain dump read after the natives' share that asks for one: said, not taken.
    late = [plain[index] for index in undecided
            if room > 0 and natives_by < deadline and needs_native is not None and needs_native(plain[index])]
    not_taken += [StackDump(dump.pid, "", NATIVE_NOT_STARTED.format(share=share)) for dump in late[:room]]
    return plain, [_dump_from(pid, helper) for pid, helper in natives] + not_taken


def _dump_from(pid: int, helper: _Helper) -> StackDump:
    """The dump an ended helper wrote, or why there is none (reads and closes its output)."""
    status, text = helper.result()
    if helper.error:
        return StackDump(pid, text, helper.error)
    if status != 0:
        why = text.strip().splitlines()[-1] if text.strip() else f"exit {status}"
        return StackDump(pid, "", why)
    return StackDump(pid, text)


@dataclass(frozen=True)
class Gpu:
    index: str
    uuid: str
    name: str
    memory_used_mib: Optional[int]
    memory_total_mib: Optional[int]
    utilization_pct: Optional[int]


@dataclass(frozen=True)
class GpuApp:
    pid: int
    gpu_uuid: str
    used_memory_mib: Optional[int]


@dataclass(frozen=True)
class GpuSnapshot:
    """What ``nvidia-smi`` said; ``error`` when it could not say it."""

    gpus: Tuple[Gpu, ...] = ()
    apps: Tuple[GpuApp, ...] = ()
    error: str = ""

    def render(self, tree_pids: Sequence[int]) -> str:
        """The text of ``gpu.txt``: each GPU, then which of ``tree_pids`` hold memory on which GPU."""
        if self.error:
            return f"nvidia-smi: {self.error}\n"
        lines = ["GPU  MEM_USED_MIB  MEM_TOTAL_MIB  UTIL_%  NAME"]
        index_of = {gpu.uuid: gpu.index for gpu in self.gpus}
        for gpu in self.gpus:
            lines.append(
                f"{gpu.index:<4} {_show(gpu.memory_used_mib):<13} {_show(gpu.memory_total_mib):<14} "
                f"{_show(gpu.utilization_pct):<7} {gpu.name}"
            )
        ours = set(tree_pids)
        holders = [app for app in self.apps if app.pid in ours]
        lines.append("")
        if holders:
            lines.append("Processes of the guarded tree holding GPU memory:")
            for app in holders:
                lines.append(
                    f"  pid {app.pid} on GPU {index_of.get(app.gpu_uuid, app.gpu_uuid)}: "
                    f"{_show(app.used_memory_mib)} MiB"
                )
        else:
            lines.append("No process of the guarded tree holds GPU memory (pids in another pid namespace"
                         " do not match).")
        others = [app for app in self.apps if app.pid not in ours]
        if others:
            lines.append("Other compute processes: " + ", ".join(
                f"pid {app.pid} ({_show(app.used_memory_mib)} MiB)" for app in others))
        return "\n".join(lines) + "\n"


def _show(value: Optional[int]) -> str:
    return "?" if value is None else str(value)


def _number(text: str) -> Optional[int]:
    try:
        return int(float(text.strip()))
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_nvidia_smi(gpu_csv: str, apps_csv: str) -> GpuSnapshot:
    """Parse the two ``--format=csv,noheader,nounits`` queries of ``GPU_QUERY`` and ``APPS_QUERY``."""
    gpus = []
    for row in gpu_csv.splitlines():
        cells = [cell.strip() for cell in row.split(",")]
        if len(cells) < 6:
            continue
        memory_used, memory_total, utilization = (_number(cell) for cell in cells[3:6])
        gpus.append(Gpu(cells[0], cells[1], cells[2], memory_used, memory_total, utilization))
    apps = []
    for row in apps_csv.splitlines():
        cells = [cell.strip() for cell in row.split(",")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        apps.append(GpuApp(int(cells[0]), cells[1], _number(cells[2])))
    return GpuSnapshot(tuple(gpus), tuple(apps))


def gpu_snapshot(timeout_s: float, helper_pids: Optional[List[int]] = None,
                 tools: Optional[Tools] = None) -> Optional[GpuSnapshot]:
    """Query ``nvidia-smi`` (both queries at once, within ``timeout_s``); None when it is not installed.

    ``tools``: as found before the command started (``find_tools``); None looks them up now.
    """
    tools = tools or _tools_now()
    tool = tools.nvidia_smi
    if tool is None:
        return None
    deadline = time.monotonic() + timeout_s
    argv0 = tool.argv0(through_sudo=False)
    gpu_helper = _Helper([argv0, *GPU_QUERY], tool.pass_fds, tools.env)
    apps_helper = _Helper([argv0, *APPS_QUERY], tool.pass_fds, tools.env)
    for helper in (gpu_helper, apps_helper):
        if helper_pids is not None and helper.proc is not None:
            helper_pids.append(helper.proc.pid)
    end_together((gpu_helper, apps_helper), deadline)
    gpu_status, gpu_text = gpu_helper.result()
    apps_status, apps_text = apps_helper.result()
    if gpu_helper.error or gpu_status != 0:
        return GpuSnapshot(error=gpu_helper.error or gpu_text.strip() or f"exit {gpu_status}")
    return parse_nvidia_smi(gpu_text, apps_text if apps_status == 0 else "")

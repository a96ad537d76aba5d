"""What the evidence says: where a hang sits, and the guard's findings about the tree. Pure: no I/O.

The guard collects process infos, Python stack dumps and a GPU snapshot before any signal; these
functions turn them into a finding (the hang's root cause: the user's frame a rank is stuck in, the
rank that never reached the collective named before the ranks waiting in it), the diagnostics shown
in the report, and the text of the evidence files, credentials redacted. ``guard`` writes the files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Collection, List, Optional, Sequence, Tuple

from ..durations import format_duration
from ..model import (
    GUARD_ABORTED_RULE,
    GUARD_CANCELLED_RULE,
    GUARD_IDLE_TIMEOUT_RULE,
    GUARD_LEAKED_RULE,
    GUARD_OOM_KILL_RULE,
    GUARD_TIMEOUT_RULE,
    GUARD_UNKILLABLE_RULE,
    Diagnostic,
    Finding,
    Kind,
    ProcessInfo,
    Severity,
    TimeoutReason,
)
from ..redact import redact
from . import tree
from .keepalive import WATCHER_BOOT, WATCHER_FILE
from .oom import HOST_SCOPE, OomKills
from .snapshot import Frame, GpuSnapshot, StackDump

STACKS_FILE = "stacks.txt"
PROCESSES_FILE = "processes.txt"
GPU_FILE = "gpu.txt"
PLACE_NOT_YET_KNOWN = "a place not known yet (the guard was taking the stacks)"

RULE_FOR_REASON = {
    TimeoutReason.WALL: GUARD_TIMEOUT_RULE,
    TimeoutReason.IDLE: GUARD_IDLE_TIMEOUT_RULE,
    TimeoutReason.CANCELLED: GUARD_CANCELLED_RULE,
    TimeoutReason.ABORTED: GUARD_ABORTED_RULE,
}

_MAX_EXCERPT = 4000
_MAX_OTHERS_NAMED = 3
# /proc/PID/stat states of a process stopped by a signal (T) or at a tracer's stop (t, Linux 2.6.33+).
_STOPPED_STATES = frozenset({"T", "t"})
# Innermost frames of a process that is only waiting for its children (torchrun's agent, a
# multiprocessing parent, subprocess.wait): the hang is in a child, so name the child's frame.
_WAITING_ON_CHILDREN = frozenset(
    {"wait", "_wait", "_try_wait", "poll", "join", "_wait_for_tstate_lock", "communicate", "_invoke_run",
     "_monitor_workers", "wait_procs"}
)
# Where the kernel says a process sleeps while it waits for a child to change state (wait4, waitid:
# kernel/exit.c; /proc/PID/wchan shows the function that called schedule()): a parent waiting, such as
# the shell that runs a step's script or a Python parent in ``os.waitpid``, whose frames py-spy shows
# as its own code. The hang is in the child.
KERNEL_CHILD_WAITS = frozenset({"do_wait", "__do_wait", "kernel_wait4", "kernel_waitid"})
# Where a process sleeps that only passes on what others do: reading a pipe (``| tee log``) or waiting for
# a signal (coreutils ``timeout`` in sigsuspend). Named after any other process with no stack to show.
_KERNEL_PASSIVE_WAITS = frozenset(
    {"pipe_read", "anon_pipe_read", "pipe_wait", "pipe_wait_readable", "sigsuspend", "do_sigtimedwait"}
)
# Frames of a supervisor's periodic check between two waits: torchrun's agent wakes every
# monitor interval to poll its workers and ask the rendezvous whether nodes wait
# (SimpleElasticAgent._invoke_run, torch/distributed/elastic/agent/server/api.py), so a dump can
# catch it anywhere below these, in a store call or a lock, while a worker is what hangs.
_POLLING_CHILDREN = frozenset({"_monitor_workers", "num_nodes_waiting"})
# Innermost frames of a rank that waits for its peers: when one rank hangs elsewhere, the others
# sit in a collective; the rank that never arrived is the root cause, so it is named first.
_WAITING_ON_PEERS = frozenset(
    {"all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
     "broadcast", "barrier", "monitored_barrier", "all_to_all", "all_to_all_single", "gather", "scatter",
     "reduce", "recv", "send", "irecv", "isend"}
)
# The interpreter's own helper servers, started by multiprocessing and idle in their loop for as long as
# the program runs: the resource tracker (every spawn or forkserver start) and the fork server. Never
# where a hang is, however early in the tree they sit.
_RUNTIME_HELPER_FILES = ("multiprocessing/resource_tracker.py", "multiprocessing/forkserver.py")
# A guard run inside the guarded command (a script that guards each shard itself): its main thread waits
# in its watch loop while its own command runs, and its live scanner idles in its loop. Neither is
# where a hang is; the inner command is.
_GUARD_FILE, _GUARD_WAIT = "analyzer/supervise/guard.py", "watch"
_SCANNER_FILE, _SCANNER_LOOP = "analyzer/guarded.py", "_child_main"
_PROCESS_FILE = "multiprocessing/process.py"
# A thread asleep in Python's own sleep, as the source line of its innermost frame reads: native frames
# there show only the interpreter's clock_nanosleep (select before 3.11). A ctypes or extension call that
# sleeps or waits in C reads otherwise, and keeps its native dump.
_PYTHON_SLEEP = re.compile(r"\btime\.sleep\s*\(")
_SELECTORS_FILE = "/selectors.py"
# A pool's worker loop, and where it waits for its next task: a queue's get over a pipe and a lock.
_POOL_WORKERS = frozenset({"worker", "_process_worker"})
_POOL_FILES = ("multiprocessing/pool.py", "concurrent/futures/process.py")
_TASK_WAIT_FILES = (
    "multiprocessing/connection.py", "multiprocessing/queues.py", "multiprocessing/synchronize.py",
)
# The frames that call a test: pytest's call of a test function (_pytest/python.py, pytest_pyfunc_call)
# and unittest's call of a test method (unittest/case.py, TestCase._callTestMethod, Python 3.8+). A test
# hung under ``pytest -s``, ``-q`` or xdist prints no line naming it; its stack still does.
_PYTEST_CALL = ("pytest_pyfunc_call", "_pytest/python.py")
_UNITTEST_CALL = ("_callTestMethod", "unittest/case.py")
_PYTEST_FILES = "/_pytest/"
# py-spy names a method with its class (``Class.test_m``) only for Python 3.11+ (co_qualname): before
# that a test method cannot be told from a function, so no id is made up.
_QUALIFIED_FROM = (3, 11)
_DUMP_PYTHON = re.compile(r"^Python v(?P<major>\d+)\.(?P<minor>\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Evidence:
    """What was taken before any signal: the tree's processes, their stacks, the GPUs."""

    infos: Tuple[ProcessInfo, ...]
    dumps: Tuple[StackDump, ...] = ()
    native: Tuple[StackDump, ...] = ()
    gpu: Optional[GpuSnapshot] = None
    skipped_dumps: int = 0  # Python processes not dumped for lack of time
    # Pids whose Python stack does not explain their wait (``explains_wait``: a call into C, a lock),
    # where the others only sleep or join; empty when the guard did not judge them.
    unexplained: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Hang:
    """Why the clock ran out, as the finding needs it; durations in seconds."""

    reason: TimeoutReason
    root_pid: int
    elapsed_s: float
    timeout_s: Optional[float] = None
    idle_timeout_s: Optional[float] = None
    signal_name: str = ""  # of a cancel
    event: str = ""  # of an abort: "NCCL watchdog timeout at stderr.log:812"
    cwd: str = ""  # where the command started: test ids are relative to it, as pytest's and unittest's are


@dataclass(frozen=True)
class Diagnosis:
    """A finding, the diagnostics for the report, and the evidence files' (name, text)."""

    findings: Tuple[Finding, ...]
    diagnostics: Tuple[Diagnostic, ...]
    files: Tuple[Tuple[str, str], ...]


def diagnose_hang(hang: Hang, evidence: Evidence, log_dir: str) -> Diagnosis:
    """The hang finding and its evidence for a run the guard had to end."""
    stacks = render_stacks(evidence)
    table = tree.format_table(evidence.infos)
    diagnostics = [
        Diagnostic("Python stacks before any signal (py-spy dump)", stacks),
        Diagnostic("Processes of the guarded tree before any signal", table),
    ]
    files = [(STACKS_FILE, stacks), (PROCESSES_FILE, table)]
    if evidence.gpu is not None:
        text = evidence.gpu.render([info.pid for info in evidence.infos])
        diagnostics.append(Diagnostic("GPU snapshot (nvidia-smi)", text))
        files.append((GPU_FILE, text))
    finding = hang_finding(hang, evidence, log_dir)
    return Diagnosis((finding,), tuple(diagnostics), tuple(files))


def render_stacks(evidence: Evidence) -> str:
    """The text of ``stacks.txt``: one block per dump, headed by the pid and its (redacted) command."""
    cmdlines = {info.pid: info.cmdline for info in evidence.infos}
    blocks = []
    labelled = [(d, "") for d in evidence.dumps] + [(d, " (native frames)") for d in evidence.native]
    for dump, label in labelled:
        head = f"=== pid {dump.pid}{label}: {cmdlines.get(dump.pid, '?')}"
        body = dump.text.rstrip() if dump.text.strip() else ""
        if dump.error:
            body = (body + "\n" if body else "") + f"(py-spy: {dump.error})"
        blocks.append(f"{head}\n{body}\n")
    if evidence.skipped_dumps:
        blocks.append(f"({evidence.skipped_dumps} more Python processes were not dumped: no time was left)\n")
    text = "\n".join(blocks) if blocks else "No Python process was found in the tree.\n"
    return redact(text)


def first_hang_finding(hang: Hang) -> Finding:
    """The hang finding before any stack is read: what ended the run and when, the place not yet known.

    It is what an early report says if the guard is killed while it takes the stacks (no path: the
    stacks file may never be written).
    """
    return Finding(
        kind=Kind.HANG,
        rule=RULE_FOR_REASON[hang.reason],
        severity=Severity.ERROR,
        path="",
        line=0,
        message=redact(_hang_message(hang, PLACE_NOT_YET_KNOWN)),
    )


def _hang_message(hang: Hang, where: str) -> str:
    elapsed = format_duration(hang.elapsed_s)
    if hang.reason == TimeoutReason.WALL:
        return f"hung in {where} for {format_duration(hang.timeout_s or hang.elapsed_s)}"
    if hang.reason == TimeoutReason.IDLE:
        return f"hung in {where}: no output for {format_duration(hang.idle_timeout_s or 0)}"
    if hang.reason == TimeoutReason.ABORTED:
        return f"aborted after {elapsed} on {hang.event or 'a fatal event'}, while in {where}"
    return f"cancelled ({hang.signal_name or 'a signal'}) after {elapsed} while in {where}"


def hang_finding(hang: Hang, evidence: Evidence, log_dir: str) -> Finding:
    """The guard's hang finding: where the tree hung, how long, and what ended it."""
    chosen, where = where_it_hung(hang.root_pid, evidence.infos, evidence.dumps, evidence.unexplained)
    _, described = _hung_process(hang.root_pid, evidence.infos, evidence.dumps, evidence.unexplained)
    message = _hang_message(hang, where)
    others = [
        f"pid {dump.pid} in {Frame.where(_own_frames(dump))}"
        for dump in evidence.dumps
        if dump is not chosen and _own_frames(dump) and not _runtime_helper(dump)
    ]
    if others:
        message += "; also " + ", ".join(others[:_MAX_OTHERS_NAMED])
        if len(others) > _MAX_OTHERS_NAMED:
            message += f" and {len(others) - _MAX_OTHERS_NAMED} more (see {STACKS_FILE})"
    if chosen is not None:
        excerpt = chosen.text.strip()
    else:
        excerpt = tree.format_table([described] if described is not None else evidence.infos[:1]).strip()
    return Finding(
        kind=Kind.HANG,
        rule=RULE_FOR_REASON[hang.reason],
        severity=Severity.ERROR,
        path=os.path.join(log_dir, STACKS_FILE),
        line=0,
        message=redact(message),
        excerpt=redact(excerpt)[:_MAX_EXCERPT],
        test=running_test(chosen, evidence.infos, evidence.dumps, hang.cwd),
    )


def running_test(
    chosen: Optional[StackDump], infos: Sequence[ProcessInfo], dumps: Sequence[StackDump], cwd: str
) -> Optional[str]:
    """The test the stacks show running: the outermost one in the line from the command down to the
    quoted process ``chosen`` (where it hangs), else the first in tree order.

    A pytest node id (``tests/test_x.py::TestY::test_z``, relative to ``cwd``; a parametrized test's
    id is not on the stack, so its brackets are missing) or a unittest id (``test_z (tests.test_x.TestY)``);
    None when no stack shows a test being called, or the dumps cannot tell a method's class. The hung
    process need not be the test's: a test waits for the worker that hangs, a test that runs pytest in
    a subprocess (pytester) owns the inner run's tests, and under xdist the hung worker's test is the one.
    """
    parents = {info.pid: info.ppid for info in infos}
    line: List[int] = []
    pid = chosen.pid if chosen is not None else None
    while pid is not None and pid not in line:
        line.insert(0, pid)
        pid = parents.get(pid)
    by_pid = {dump.pid: dump for dump in dumps}
    ordered = [by_pid[pid] for pid in line if pid in by_pid] + [d for d in dumps if d.pid not in line]
    for dump in ordered:
        test = _test_in(dump, cwd)
        if test is not None:
            return test
    return None


def _test_in(dump: StackDump, cwd: str) -> Optional[str]:
    frames = dump.main_thread_frames()
    for index, frame in enumerate(frames):
        call = (_bare_name(frame.function), frame.file.replace("\\", "/"))
        if index == 0 or not any(call[0] == name and call[1].endswith(file) for name, file in
                                 (_PYTEST_CALL, _UNITTEST_CALL)):
            continue
        inside = [f for f in frames[:index] if not f.in_library] or list(frames[:index])
        # The frame nearest the caller that looks like a test (a decorator's wrapper may sit between).
        test = next((f for f in reversed(inside) if _bare_name(f.function).startswith("test")), inside[-1])
        version = _DUMP_PYTHON.search(dump.text)
        if version is not None and (int(version["major"]), int(version["minor"])) < _QUALIFIED_FROM:
            return None
        if "<" in test.function:  # "make.<locals>.test_x": no id a runner would print
            return None
        under_pytest = any(_PYTEST_FILES in f.file.replace("\\", "/") for f in frames[index:])
        return _pytest_id(test, cwd) if under_pytest else _unittest_id(test, cwd)
    return None


def _relative(path: str, cwd: str) -> str:
    if cwd and os.path.isabs(path):
        relative = os.path.relpath(path, cwd)
        if not relative.startswith(os.pardir):
            return relative
    return path


def _pytest_id(frame: Frame, cwd: str) -> str:
    return "::".join([_relative(frame.file, cwd).replace(os.sep, "/"), *frame.function.split(".")])


def _unittest_id(frame: Frame, cwd: str) -> Optional[str]:
    cls, _, name = frame.function.rpartition(".")
    if not cls:
        return None
    relative = _relative(frame.file, cwd)
    module = os.path.splitext(relative if not os.path.isabs(relative) else os.path.basename(relative))[0]
    return f"{name} ({module.replace(os.sep, '.')}.{cls})"


def cancelled_in_teardown(signal_name: str, elapsed_s: float, leftovers: int, log_dir: str) -> Finding:
    """The runner cancelled while the guard was ending what the command left running."""
    return Finding(
        kind=Kind.HANG,
        rule=GUARD_CANCELLED_RULE,
        severity=Severity.ERROR,
        path=os.path.join(log_dir, PROCESSES_FILE),
        line=0,
        message=(
            f"cancelled ({signal_name}) after {format_duration(elapsed_s)} while ending {leftovers} "
            f"process{'es' if leftovers != 1 else ''} the command left running"
        ),
    )


def leftovers(infos: Sequence[ProcessInfo], ran_on_s: float, log_dir: str) -> Diagnosis:
    """Leaked-process findings for what still ran after the command exited, and their table."""
    table = tree.format_table(infos)
    findings = tuple(
        Finding(
            kind=Kind.LEAKED_PROCESS,
            rule=GUARD_LEAKED_RULE,
            severity=Severity.WARNING,
            path=os.path.join(log_dir, PROCESSES_FILE),
            line=0,
            message=(
                f"pid {info.pid} `{redact(info.cmdline)}` was still running {format_duration(ran_on_s)} "
                f"after the command exited; the guard ended it"
            ),
        )
        for info in infos
    )
    diagnostic = Diagnostic("Processes still running after the command exited", table)
    return Diagnosis(findings, (diagnostic,), ((PROCESSES_FILE, table),))


def oom_kills(kills: OomKills, command_failed: bool) -> Optional[Finding]:
    """The finding for OOM kills while the command ran: an error when the command failed (what it died
    of, or what its workers did), a warning when it passed anyway; None when only the host's count
    moved and the command passed (another job's kill, as likely as its own)."""
    if not command_failed and kills.scope == HOST_SCOPE:
        return None
    victims = ", ".join(f"{redact(name)}, pid {pid}" for pid, name in kills.victims)
    plural = "es" if kills.count != 1 else ""
    message = (
        f"the kernel's OOM killer killed {kills.count} process{plural} {kills.scope} while the command ran"
        f"{' (' + victims + ')' if victims else ''}: the host or the job's memory limit ran out of RAM "
        "(not GPU memory), and a process killed so prints nothing"
    )
    severity = Severity.ERROR if command_failed else Severity.WARNING
    return Finding(Kind.SIGNAL_EXIT, GUARD_OOM_KILL_RULE, severity, "", 0, message)


def unkillable(info: ProcessInfo, log_dir: str, refused: bool) -> Finding:
    """A survivor of teardown: SIGKILL failed on it, or (``refused``) the kernel denied the signal."""
    if refused:
        message = (
            f"pid {info.pid} could not be signalled (EPERM: it belongs to another user) and still runs "
            f"(state {info.state}): `{redact(info.cmdline)}`"
        )
    else:
        message = (
            f"pid {info.pid} survived SIGKILL (state {info.state}, wchan {info.wchan or '?'}): "
            f"`{redact(info.cmdline)}`; the host may need recycling"
        )
    return Finding(
        kind=Kind.UNKILLABLE_PROCESS,
        rule=GUARD_UNKILLABLE_RULE,
        severity=Severity.ERROR,
        path=os.path.join(log_dir, PROCESSES_FILE),
        line=0,
        message=message,
        excerpt=info.kernel_stack,
    )


def _innermost(dump: StackDump) -> str:
    return _bare_name(_own_frames(dump)[0].function)


def _only_waits(dump: StackDump) -> bool:
    if _innermost(dump) in _WAITING_ON_CHILDREN or _idle_pool_worker(dump) or _guard_waiting(dump):
        return True
    return any(_bare_name(frame.function) in _POLLING_CHILDREN for frame in _own_frames(dump))


def explains_wait(dump: StackDump, has_children: bool, waits_in_kernel: bool,
                  line_of: Callable[[Frame], str]) -> bool:
    """Whether ``dump``'s Python frames already say what each of its threads waits for, so that native
    frames would add nothing: a parent with children waiting for them (``Popen.wait``, a join,
    torchrun's agent, ``selectors``' select, or ``waits_in_kernel``: the kernel has it in wait4/waitid),
    a pool's idle worker, the interpreter's helper servers, and any thread whose innermost line
    (``line_of``) calls ``time.sleep``. Anything else, a lock taken at the user's line or a call into C,
    is where a native stack is the evidence (NCCL, CUDA, an extension's lock)."""
    threads = dump.threads() if dump.text and not dump.error else ()
    if not threads or any(not frames for _, frames in threads):
        return False
    if _runtime_helper(dump) or _idle_pool_worker(dump) or _guard_waiting(dump):
        return True
    for is_main, frames in threads:
        if is_main and has_children and (waits_in_kernel or _only_waits(dump) or _selects(frames[0])):
            continue
        if not _PYTHON_SLEEP.search(line_of(frames[0])):
            return False
    return True


def _selects(frame: Frame) -> bool:
    return _bare_name(frame.function) == "select" and _path(frame).endswith(_SELECTORS_FILE)


def _own_frames(dump: StackDump) -> Tuple[Frame, ...]:
    """The main thread's frames that are the process's own: a multiprocessing child forked from a test
    carries its parent's stack below ``BaseProcess._bootstrap`` (``Pool.__init__`` in the test's frame),
    which says where it was forked, not where it is."""
    frames = dump.main_thread_frames()
    for index, frame in enumerate(frames):
        if _bare_name(frame.function) == "_bootstrap" and _path(frame).endswith(_PROCESS_FILE):
            return frames[: index + 1]
    return frames


def _idle_pool_worker(dump: StackDump) -> bool:
    """Whether ``dump`` is a pool's worker waiting for its next task (multiprocessing.Pool's ``worker``,
    concurrent.futures' ``_process_worker`` in a queue's get): idle, not where a run hangs."""
    frames = _own_frames(dump)
    if not frames or not _path(frames[0]).endswith(_TASK_WAIT_FILES):
        return False
    return any(
        _bare_name(frame.function) in _POOL_WORKERS and _path(frame).endswith(_POOL_FILES) for frame in frames
    )


def _path(frame: Frame) -> str:
    return frame.file.replace("\\", "/")


def _runtime_helper(dump: StackDump) -> bool:
    """Whether ``dump`` is one of multiprocessing's helper servers in its loop (a child the fork server
    forked runs the user's code, so it is not), or a nested guard's live scanner or watcher."""
    frames = dump.main_thread_frames()
    if frames and _path(frames[0]).endswith(WATCHER_FILE) and all(
        _path(frame).endswith(WATCHER_FILE) or frame.file == WATCHER_BOOT for frame in frames
    ):
        return True  # the guard's own watcher (keepalive), here a nested guard's
    if frames and _bare_name(frames[0].function) == _SCANNER_LOOP and _path(frames[0]).endswith(
        _SCANNER_FILE
    ):
        return True
    return all(frame.in_library for frame in frames) and any(
        frame.file.replace("\\", "/").endswith(_RUNTIME_HELPER_FILES) for frame in frames
    )


def _guard_waiting(dump: StackDump) -> bool:
    """Whether ``dump`` is a nested guard waiting for its own command."""
    frame = _own_frames(dump)[0]
    return _bare_name(frame.function) == _GUARD_WAIT and _path(frame).endswith(_GUARD_FILE)


def _bare_name(function: str) -> str:
    # py-spy names methods with their class on 3.11+ ("Popen.poll"), so compare the last part.
    return function.rsplit(".", 1)[-1]


def where_it_hung(
    root_pid: int, infos: Sequence[ProcessInfo], dumps: Sequence[StackDump], unexplained: Collection[int] = ()
) -> Tuple[Optional[StackDump], str]:
    """The dump to quote and where its main thread is: the command's own, unless it only waits for a child.

    Then the first descendant that is neither waiting for children nor for its peers in a collective,
    one of ``unexplained`` (its Python frames do not explain its wait: a call into C, a lock) before
    one idle in a sleep, and the message says why; without such a Python process, the first process
    with no stack to show that is not waiting for a child either (a test binary under the step's
    shell), described by the kernel (dump ``None``).
    """
    chosen, info = _hung_process(root_pid, infos, dumps, unexplained)
    if chosen is not None:
        where = Frame.where(_own_frames(chosen))
        # A stopped process's stack shows where the stop hit it, not a wait: say it was stopped (red40).
        state = next((i.state for i in infos if i.pid == chosen.pid), "")
        if state in _STOPPED_STATES:
            where += f", stopped (state {state}: SIGSTOP, or a debugger's stop)"
        if chosen.pid == root_pid:
            return chosen, where
        idle = [d.pid for d in _candidates(root_pid, infos, dumps) if d.pid not in unexplained
                and _innermost(d) not in _WAITING_ON_PEERS]
        if chosen.pid in unexplained and idle:
            asleep = ", ".join(f"pid {pid}" for pid in idle[:_MAX_OTHERS_NAMED])
            asleep += f" and {len(idle) - _MAX_OTHERS_NAMED} more" if len(idle) > _MAX_OTHERS_NAMED else ""
            return chosen, (f"{where} (pid {chosen.pid}: its Python frames do not explain its wait, a call "
                            f"into C or a lock, while {asleep} only sleep{'s' if len(idle) == 1 else ''})")
        return chosen, f"{where} (pid {chosen.pid})"
    if info is None:
        return None, "an unknown place (the command was gone before it could be inspected)"
    described = f"`{info.cmdline}` (pid {info.pid}, state {info.state}, wchan {info.wchan or '?'})"
    # A Python process whose dump failed is described by the kernel: say why its stack is missing
    # (red41's q03: py-spy timed out on 1000-thread processes and the finding named only a futex wait).
    failed = next((dump.error for dump in dumps if dump.pid == info.pid and dump.error), "")
    return None, f"{described}; no Python stack: py-spy {failed}" if failed else described


def _candidates(
    root_pid: int, infos: Sequence[ProcessInfo], dumps: Sequence[StackDump]
) -> List[StackDump]:
    """Descendants with frames of their own that wait neither for children nor in the kernel's wait4."""
    waiting = {info.pid for info in infos if info.wchan in KERNEL_CHILD_WAITS}
    return [d for d in dumps if d.pid != root_pid and _own_frames(d) and not _runtime_helper(d)
            and not _only_waits(d) and d.pid not in waiting]


def _hung_process(
    root_pid: int, infos: Sequence[ProcessInfo], dumps: Sequence[StackDump], unexplained: Collection[int] = ()
) -> Tuple[Optional[StackDump], Optional[ProcessInfo]]:
    """``where_it_hung``'s choice: the dump to quote, else the process to describe by the kernel."""
    waiting = {info.pid for info in infos if info.wchan in KERNEL_CHILD_WAITS}
    with_frames = [dump for dump in dumps if _own_frames(dump) and not _runtime_helper(dump)]
    root = next((dump for dump in with_frames if dump.pid == root_pid), None)
    root_info = next((i for i in infos if i.pid == root_pid), infos[0] if infos else None)
    if root is not None and not _only_waits(root) and root_pid not in waiting:
        return root, root_info
    busy = _candidates(root_pid, infos, dumps)
    # Stable: tree order otherwise. A rank in a collective waits for the one that never arrived; of the
    # rest, one whose wait its Python frames leave unexplained (C, a lock) before one asleep in Python.
    busy.sort(key=lambda d: (_innermost(d) in _WAITING_ON_PEERS, d.pid not in unexplained))
    if busy:
        return busy[0], None
    shown = {dump.pid for dump in dumps if _own_frames(dump)}
    unseen = [i for i in infos if i.pid not in shown and i.pid not in waiting and i.state != "Z"]
    # The command itself first, then what is not merely passing on; tree order otherwise.
    unseen.sort(key=lambda i: (i.pid != root_pid, i.wchan in _KERNEL_PASSIVE_WAITS))
    if unseen:
        return None, unseen[0]
    return (root or (with_frames[0] if with_frames else None)), root_info

"""Guard one command: run it, stream and save its output, enforce its clocks, end its tree. The lifecycle.

``supervise`` is the whole lifecycle with one monotonic clock::

    contain (own cgroup where the kernel lets us, else session + subreaper + env token) -> start
      -> pump output (log first, then console), reap adopted orphans -> wait for exit / clock / cancel
      exit:    wait ``leak_grace_s`` for descendants -> end the leftovers -> leaked-process findings
      clock:   one deadline -> processes, py-spy every Python process at once, nvidia-smi
               -> ``diagnosis`` (pure) -> SIGCONT+SIGTERM, wait, SIGKILL, wait -> unkillable-process
    -> drain the pipes into the logs (bounded), cut the echo -> CommandResult

Every stage after a clock ran out takes its time from one ``Deadline``; a cancel (SIGINT, SIGTERM,
SIGHUP) at any stage brings that deadline inside the runner's window. It returns within timeout +
kill grace + a few seconds whatever the tree does, and nothing the command started is left running
unless the kernel refused SIGKILL or the signal itself (then it is reported, never waited on).
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import secrets
import select
import stat
import signal
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..durations import format_duration
from ..exits import REAL_TIME_SIGNALS, shell_status, signal_name, signal_number
from ..model import CommandResult, Diagnostic, Finding, ProcessInfo, TimeoutReason
from . import diagnosis, early_cancel, escalate, senders, snapshot, spawn, tree, workflow
from .keepalive import KeepAlive
from .oom import OomWatch
from .containment import CHOICES, Containment, open_containment
from .deadline import Deadline
from .diagnosis import GPU_FILE, PROCESSES_FILE, RULE_FOR_REASON, STACKS_FILE  # noqa: F401 - re-exported
from .pump import Activity, Console, StreamPump

STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
EVIDENCE_FILES = (STACKS_FILE, PROCESSES_FILE, GPU_FILE)

ABORT_POLL_S = 0.25
DUMP_TIMEOUT_S = 3.0  # the bound for all stack dumps together (non-blocking and native run at once)
_PAUSABLE_STATES = ("R", "S")  # py-spy --native attaches with ptrace: not to stopped or D-state ones
GPU_TIMEOUT_S = 3.0
MAX_DUMPS = 32  # a tree of thousands of Python processes gets the first 32 in tree order dumped
# Native dumps pause their target (ptrace) and cost far more: the first few whose Python stack does
# not explain their wait, a place kept for the command's own.
MAX_NATIVE_DUMPS = 4
# ... and must be done this long after the clock ran out (issue 8: deadline to exit within the kill
# grace + 1 s; after the dumps the escalation's last wait, the report and the interpreter's exit took
# 0.1-0.3 s on 2 loaded CPUs): one still running then, once every plain dump is in, is abandoned, one
# not yet started is not taken, and stacks.txt says so. Every plain dump keeps DUMP_TIMEOUT_S.
NATIVE_DUMP_SHARE_S = 0.7
# The deadline is the promise, the stacks its evidence (issue 8 item 6, guard23): every plain dump is
# in, or given up, this long after the clock ran out, so the exit can come within the grace + 1 s. 17
# dumps took 0.3-0.7 s at load 2-10 but 0.7-2.9 s at load 12-17, which put the exit at grace + 1.0-3.7
# s; the rest after the dumps (ending late dumps, the SIGKILL wait, the report, the exit) took 0.2-0.4
# s at load 10-14 (bench/guard_stages.py). 0.5 s lost 4-7 of 17 stacks where all fit within the promise.
STACKS_SHARE_S = 0.7
# At most this many plain dumps at once (py-spy is CPU-bound: more only share the CPUs, and at the
# share's end none is finished), in tree order, the command's first; one running past DUMP_EACH_S
# gives its place up to one still waiting.
PARALLEL_DUMPS = 2 * (os.cpu_count() or 1)
DUMP_EACH_S = 0.25
# The runner's cancel sends SIGINT, SIGTERM 7.5 s later and SIGKILL 2.5 s after that
# (actions/runner src/Runner.Sdk/ProcessInvoker.cs, CancelAndKillProcessTree): the guard's part
# must be over CANCEL_WINDOW_S after the first signal, leaving the rest for the scan and the report;
# a second signal leaves LAST_WINDOW_S.
CANCEL_WINDOW_S = 6.0
LAST_WINDOW_S = 1.0
CANCEL_DUMP_TIMEOUT_S = 1.5
CANCEL_KILL_GRACE_S = 3.0
PIPE_DRAIN_S = 2.0
CANCEL_PIPE_DRAIN_S = 0.5
DRAIN_AFTER_STOP_S = 0.5  # copying what is left in a pipe into the log: 1 MiB takes milliseconds
CONSOLE_CUT_WAIT_S = 0.5
_SWEEP_ROUNDS = 3
_STREAM_SETTLE_S = 0.05
_CREATE_TRIES = 3
CHUNK_COPY_BYTES = 1 << 20
# How much of a log is compared with the guard's copy to say whether it was rewritten; past that, the
# copy replaces the log unread (it is the truth either way) and only a changed size is reported.
COMPARE_BYTES = 256 << 20
_RENAME_EXCHANGE = 2  # linux/fs.h
# Signals whose default action would kill the guard without a report and leave the tree running; the
# command (same user) can send any of them to its parent (signal(7): "Term" or "Core", the real-time
# signals included). Each ends the run as the runner's cancel does. SIGSEGV, SIGBUS, SIGFPE and SIGILL
# are left alone: raised by the guard's own fault, a Python handler would return to the faulting
# instruction forever. The guard's own abort() still ends it: abort(3) raises SIGABRT again with the
# default action once a handler returns.
CANCEL_SIGNALS = tuple(
    number for number in (signal_number(name) for name in (
        "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF",
        "SIGIO", "SIGXCPU", "SIGPWR", "SIGTRAP", "SIGABRT", "SIGSYS", "SIGSTKFLT",
    )) if number is not None
) + tuple(REAL_TIME_SIGNALS)
# A cancel signal the command's own tree sent the guard (its parent, or the guard's process group): the
# runner's cancel comes from outside the tree, so the run goes on and the report says so.
SIGNALS_FROM_TREE_TITLE = "The command signalled the guard; not a cancel"
MAX_SIGNALS_FROM_TREE_NAMED = 10
MORE_SIGNALS_FROM_TREE = "and {count} more signals from the command's tree\n"
SIGNAL_FROM_TREE = ("{signal} from pid {pid} `{cmdline}` {after} after the command started: it came from the"
                    " command's own tree, not the runner, so the guard went on with the run and its clocks")
# The job-control stops a command can send its parent (`kill -TSTP $PPID`): unlike SIGSTOP they can be
# caught, and a stopped guard runs no clock, so --timeout never fired. They are caught and dropped by a
# handler rather than ignored: execve resets a handler to the default, while SIG_IGN would be inherited
# by the command, whose own Ctrl-Z handling a test may check.
STOP_SIGNALS = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
RESUMED_TITLE = "The guard was stopped during the run and resumed by its watcher"
RESUMED = (
    "Something stopped the guard with SIGSTOP, which it cannot catch (the command can: it runs as the"
    " guard's user, e.g. `kill -STOP $PPID`), {count} time(s); its watcher process sent SIGCONT each"
    " time. The clocks ran on, so a clock that ran out while it was stopped was acted on late.\n"
)
# SGR 0, G0 back to ASCII, shift in (SI): a terminal's look after the command's echo, without moving
# the cursor or leaving an alternate screen (the command's output stays where it is).
SGR_RESET = b"\x1b[0m\x1b(B\x0f"
COMMANDS_LEFT_STOPPED_TITLE = (
    "The command left GitHub's workflow commands stopped: the annotations are not shown"
)
COMMANDS_LEFT_STOPPED = (
    "With --allow-workflow-commands the command's own ::stop-commands:: reaches the runner, and the command "
    "stopped workflow commands with a token that no line can resume (one with a space or '::' in it), or "
    "with a line too long for the guard to follow. The runner shows every annotation after it, the guard's "
    "included, as plain text: the verdict and findings are in this report and the job summary.\n"
)
NO_PRIVATE_COPY_TITLE = "The logs could not be kept privately: a log rewritten in place goes unnoticed"
NO_PRIVATE_COPY = (
    "The file system of {log_dir} does not support O_TMPFILE (overlayfs before Linux 6.6, NFS, some FUSE "
    "file systems), so the guard kept no private copy of stdout.log and stderr.log: the logs it scanned "
    "and left are files the command could also write. Put --log-dir on a local file system to keep them.\n"
)
CONSOLE_CUT_NOTE = (
    "gpu-hang-guard: the last {missed} bytes of {stream} were not echoed here (the console fell behind"
    " or the pipe was drained at the end); they are in {log}\n"
)


@dataclass(frozen=True)
class GuardOptions:
    """What to run and how long to let it; durations in seconds, ``None`` meaning no limit.

    The hooks let a caller (the live scan) follow the run without the guard knowing what it does:

    - ``on_log_ready(stream, fd)``: once per stream (``"stdout"``, ``"stderr"``) right after the guard
      created that log, with a new read-only descriptor on the very file the guard writes (it stays
      that file even if the command replaces the path); the callee owns and closes ``fd``.
    - ``on_output(stream, total_bytes, arrived)``: from the pump thread after each chunk is fully in
      the log (``arrived`` is ``time.monotonic()`` when it was read), and once more with the final
      total when the pump stops. It must be cheap: the pump waits for it.
    - ``abort_requested()``: polled at least every ``ABORT_POLL_S`` while the command runs; a returned
      description (``"NCCL watchdog timeout at stderr.log:812"``) makes the guard diagnose and end the
      tree as for a wall timeout, with ``TimeoutReason.ABORTED``.
    - ``on_findings(command, findings)``: when a clock ran out or a cancel came, the guard's own findings
      as they stand: first the hang alone (before any stack is taken), then
      with the stacks (before any signal). ``command`` is the run so far (``exit_code`` None: the tree
      is still being ended). A caller writes its report early with it, so a guard killed while it ends
      the tree still leaves one behind. It must be quick: the one deadline is running.
    - ``extra_env`` is set in the command's environment and ``remove_env`` names are removed from it.

    ``containment`` is ``"auto"`` (the strongest the host allows) or one of ``containment.CHOICES``.
    """

    argv: Tuple[str, ...]
    log_dir: str
    timeout_s: Optional[float] = None
    idle_timeout_s: Optional[float] = None
    kill_grace_s: float = 10.0
    leak_grace_s: float = 2.0
    allow_workflow_commands: bool = False
    echo: bool = True
    on_log_ready: Optional[Callable[[str, int], None]] = None
    on_output: Optional[Callable[[str, int, float], None]] = None
    abort_requested: Optional[Callable[[], Optional[str]]] = None
    on_findings: Optional[Callable[[CommandResult, Tuple[Finding, ...]], None]] = None
    extra_env: Tuple[Tuple[str, str], ...] = ()
    remove_env: Tuple[str, ...] = ()
    containment: str = "auto"


@dataclass(frozen=True)
class Supervision:
    """The outcome: how the command ended, the guard's own findings and evidence, and the saved logs.

    ``stdout_path`` and ``stderr_path`` name the files the guard wrote: if the command replaced them,
    the guard restored its own copy before returning.
    """

    command: CommandResult
    findings: Tuple[Finding, ...]
    diagnostics: Tuple[Diagnostic, ...]
    stdout_path: str
    stderr_path: str
    # time.monotonic() when a clock ran out or a cancel came, before any signal: what the command printed
    # from then on is its answer to being ended (a verdict printed on the guard's SIGTERM is no verdict).
    ended_by_guard_at: Optional[float] = None


class _Cancel:
    """Set by the SIGINT/SIGTERM/SIGHUP handler; wakes the watch loop and pulls the deadline in."""

    def __init__(self, wake_fd: int) -> None:
        self.signum: Optional[int] = None
        self.at = 0.0
        self.deadline: Optional[Deadline] = None  # the stage in progress, if one has a deadline
        self._wake_fd = wake_fd

    @property
    def name(self) -> str:
        return signal_name(self.signum) if self.signum else "a signal"

    def handle(self, signum: int, _frame: object) -> None:
        first = self.signum is None
        if first:
            self.signum, self.at = signum, time.monotonic()
        if self.deadline is not None:
            self.deadline.cap(CANCEL_WINDOW_S if first else LAST_WINDOW_S)
        try:
            os.write(self._wake_fd, b"x")
        except OSError:
            pass

    def window(self) -> float:
        """Seconds the runner still gives the guard's part after the cancel."""
        return max(0.0, self.at + CANCEL_WINDOW_S - time.monotonic())

    def arm(self, deadline: Deadline) -> Deadline:
        """Make ``deadline`` the one a cancel pulls in, also for a cancel that came before this call."""
        self.deadline = deadline
        if self.signum is not None:
            deadline.cap(self.window())
        return deadline


def _validate(options: GuardOptions) -> None:
    if not options.argv:
        raise UsageError("run: no command given after --")
    for name, value in (("--timeout", options.timeout_s), ("--idle-timeout", options.idle_timeout_s)):
        if value is not None and value <= 0:
            raise UsageError(f"{name}: {value!r} must be more than zero")
    for name, value in (("--kill-grace", options.kill_grace_s), ("leak grace", options.leak_grace_s)):
        if value < 0:
            raise UsageError(f"{name}: {value!r} must not be negative")
    if options.containment not in CHOICES:
        raise UsageError(f"containment: {options.containment!r} is not one of {', '.join(CHOICES)}")


class _Run:
    """The state of one guarded run; ``supervise`` drives it step by step."""

    def __init__(self, options: GuardOptions, cancel: _Cancel) -> None:
        self.options = options
        self.cancel = cancel
        # Absolute now: the command may delete the working directory, after which no relative path resolves.
        self.log_dir = os.path.abspath(options.log_dir)
        self.stdout_path = os.path.join(self.log_dir, STDOUT_LOG)
        self.stderr_path = os.path.join(self.log_dir, STDERR_LOG)
        self.token = spawn.new_tree_token()
        self.protect_pgid = spawn.own_process_group()
        self.helper_pids: List[int] = []
        self.tools = snapshot.Tools(None, None, None)  # as ``supervise`` found them before the command
        self.findings: List[Finding] = []
        self.diagnostics: List[Diagnostic] = []
        self.unkillable: Dict[int, ProcessInfo] = {}
        self.leftover_pids: List[int] = []
        self.activity = Activity()
        self.containment: Containment = Containment()
        self.oom: Optional[OomWatch] = None
        self.proc: Optional[subprocess.Popen] = None
        self.root: Optional[tree.Proc] = None
        self.reaper: Optional[spawn.Reaper] = None
        self.pumps: List[StreamPump] = []
        self.started = time.monotonic()
        self.ended: Optional[float] = None
        self.ended_by_guard_at: Optional[float] = None  # when diagnose_and_end began
        self.abort_event = ""
        self.cancelled_after_exit = False
        self.signals_from_tree: List[str] = []  # the command's own signals to the guard, the first few
        self.more_signals_from_tree = 0
        self.dir_fd = -1  # the log dir, held open: evidence goes there even if the path is swapped
        self.log_dir_deleted = False
        self.log_dir_mended = False
        self.evidence: Dict[str, str] = {}  # evidence file name -> what the guard wrote there
        self.keepalive = KeepAlive()

    # -- start ----------------------------------------------------------------------------------
    def start(self, env: Dict[str, str]) -> None:
        """Start the command inside the strongest containment available (``UsageError`` if it can't)."""
        self.containment = open_containment(self.token, self.options.containment)
        self.keepalive.start()  # a child before the command: one of the helpers below
        # The guard's children from before the command are never the command's, even one that started
        # in the command's clock tick (the tree walk's "started before it" cannot tell them apart): in
        # a process that runs the guard again, already a subreaper, the live scanner is one of them.
        guard_pid = os.getpid()
        self.helper_pids.extend(pid for pid, stat in tree.all_stats().items() if stat.ppid == guard_pid)
        self.oom = OomWatch(self.containment.cgroup_dirs())
        self.started = time.monotonic()
        try:
            self.proc = spawn.start(self.options.argv, env, before_exec=self.containment.before_exec())
        except subprocess.SubprocessError:
            # The kernel refused the move into the cgroup (a delegation that does not reach here).
            self.containment.close()
            self.containment = Containment()
            self.proc = spawn.start(self.options.argv, env)
        except BaseException:
            self.containment.close()  # the command never started: no cgroup left behind
            raise
        self.root = tree.proc_of(self.proc.pid) or tree.Proc(self.proc.pid, 0)
        self.reaper = spawn.Reaper(self.proc, self.helper_pids)
        self.reaper.start()

    # -- tree -----------------------------------------------------------------------------------
    def sent_from_the_tree(self, pid: int) -> bool:
        """Whether ``pid`` (a signal's sender) is the command or one of its processes, exited or not.

        The runner's cancel comes from outside the tree (the runner, the step's shell); a sender that
        exited and was reaped before this look cannot be placed and counts as outside (a cancel).
        """
        if pid <= 0 or pid == os.getpid():
            return False
        if tree.carries_token(pid, spawn.TOKEN_ENV, self.token):  # also before the guard has its pid
            return True
        if self.proc is None or self.root is None:
            return False
        table = tree.all_stats()
        ancestor, steps = pid, 0
        while ancestor in table and steps < 256:  # a zombie's parent still reads: `kill` run from a shell
            if ancestor == self.proc.pid:
                return True
            ancestor, steps = table[ancestor].ppid, steps + 1
        return pid in {p.pid for p in self.living_tree()}  # an orphan the guard adopted, by its token

    def take_signal(self, signum: int, sender: int) -> None:
        """A cancel signal with its sender: the runner's cancel, or the command's own, noted and let be."""
        if self.sent_from_the_tree(sender):
            if len(self.signals_from_tree) >= MAX_SIGNALS_FROM_TREE_NAMED:  # a loop of `kill $PPID`
                self.more_signals_from_tree += 1
                return
            self.signals_from_tree.append(SIGNAL_FROM_TREE.format(
                signal=signal_name(signum), pid=sender, cmdline=tree.cmdline(sender),
                after=format_duration(time.monotonic() - self.started)))
            return
        self.cancel.handle(signum, None)

    def living_tree(self, hold: bool = False) -> List[tree.Proc]:
        """The tree now; with ``hold``, walked with the cgroup frozen.

        Frozen, a pid hopper cannot be between two pids while the walk reads them, but a frozen
        process no longer shows the state and wait channel it was in: evidence is walked unfrozen.
        """
        if not hold:
            found = tree.find_tree(
                self.root, spawn.TOKEN_ENV, self.token, self.helper_pids, self.containment.members()
            )
            if found or not self.containment.members():
                return [p for p in found if p.pid not in self.unkillable]
        with self.containment.frozen():
            found = tree.find_tree(
                self.root, spawn.TOKEN_ENV, self.token, self.helper_pids, self.containment.members()
            )
        return [p for p in found if p.pid not in self.unkillable]

    def end(
        self, procs: Sequence[tree.Proc], grace_s: float, deadline: Deadline, reserve_s: float = 0.0
    ) -> None:
        self.cancel.arm(deadline)
        ending = escalate.end_tree(
            procs, grace_s, self.protect_pgid, self.proc, deadline=deadline,
            containment=self.containment, reserve_s=reserve_s,
        )
        self._record_survivors(ending.survivors)

    def sweep(self, deadline: Deadline, reserve_s: float = 0.0) -> None:
        """SIGKILL whatever of the tree appeared or was missed during teardown (bounded rounds)."""
        for _ in range(_SWEEP_ROUNDS):
            extra = self.living_tree(hold=True)
            if not extra:
                return
            if self.containment.kernel:
                self.containment.kill(deadline.within(escalate.KILL_WAIT_S / 2, reserve_s))
            escalate.send(extra, (signal.SIGCONT, signal.SIGKILL), self.protect_pgid)
            self._record_survivors(
                escalate.wait_gone(extra, deadline.within(escalate.KILL_WAIT_S, reserve_s), self.proc)
            )
            if deadline.remaining() <= reserve_s:
                return

    def _record_survivors(self, survivors: Sequence[tree.Proc]) -> None:
        for proc in survivors:
            if proc.pid in self.unkillable or not tree.is_alive(proc):
                continue
            info = tree.describe(proc)
            self.unkillable[proc.pid] = info
            refused = not escalate.may_signal(proc.pid)
            self.findings.append(diagnosis.unkillable(info, self.log_dir, refused))

    # -- clocks ---------------------------------------------------------------------------------
    def watch(self, wake_fd: int) -> Optional[TimeoutReason]:
        """Block until the command exits (None) or a clock runs out, a cancel or an abort comes."""
        options = self.options
        pidfd = _pidfd(self.proc.pid)
        try:
            while True:
                if self.proc.poll() is not None:
                    return None
                if self.cancel.signum is not None:
                    return TimeoutReason.CANCELLED
                if options.abort_requested is not None:
                    event = options.abort_requested()
                    if event:
                        self.abort_event = event
                        return TimeoutReason.ABORTED
                now = time.monotonic()
                waits = [1.0 if pidfd is not None else 0.05]
                if options.abort_requested is not None:
                    waits.append(ABORT_POLL_S)
                if options.timeout_s is not None:
                    left = self.started + options.timeout_s - now
                    if left <= 0:
                        return TimeoutReason.WALL
                    waits.append(left)
                if options.idle_timeout_s is not None:
                    left = self.activity.last + options.idle_timeout_s - now
                    if left <= 0:
                        return TimeoutReason.IDLE
                    waits.append(left)
                with self.reaper.paused():  # a new watcher is a helper before anyone sees it
                    watcher = self.keepalive.resume()
                    if watcher is not None:
                        self.helper_pids.append(watcher)
                fds = [wake_fd] + ([pidfd] if pidfd is not None else [])
                ready, _, _ = select.select(fds, [], [], max(0.0, min(waits)))
                if wake_fd in ready:
                    _drain(wake_fd)
        finally:
            if pidfd is not None:
                os.close(pidfd)

    # -- after a clock ran out ------------------------------------------------------------------
    def teardown_budget(self, cancelled: bool) -> Tuple[Deadline, float]:
        """The one deadline for diagnosis, teardown and drains, and the SIGTERM grace inside it."""
        if cancelled:
            grace = min(self.options.kill_grace_s, CANCEL_KILL_GRACE_S)
            return Deadline(self.cancel.window()), grace
        grace = self.options.kill_grace_s
        total = DUMP_TIMEOUT_S + grace + escalate.KILL_WAIT_S + PIPE_DRAIN_S
        return Deadline(total), grace

    def diagnose_and_end(self, reason: TimeoutReason) -> Deadline:
        hit = self.ended_by_guard_at = time.monotonic()
        cancelled = reason == TimeoutReason.CANCELLED
        deadline, grace = self.teardown_budget(cancelled)
        self.cancel.arm(deadline)
        hang = diagnosis.Hang(
            reason=reason,
            root_pid=self.proc.pid,
            elapsed_s=hit - self.started,
            timeout_s=self.options.timeout_s,
            idle_timeout_s=self.options.idle_timeout_s,
            signal_name=self.cancel.name if cancelled else "",
            event=self.abort_event,
            cwd=_cwd(),
        )
        if self.options.on_findings is not None:  # the report on disk before the slowest stage
            self.tell(reason, diagnosis.first_hang_finding(hang))
        evidence = self.collect_evidence(deadline, cancelled, grace)
        self.apply(diagnosis.diagnose_hang(hang, evidence, self.log_dir))
        self.tell(reason)
        drain = CANCEL_PIPE_DRAIN_S if self.cancel.signum is not None else PIPE_DRAIN_S
        # What lives now: children spawned while the stacks were taken are ended too.
        self.end(self.living_tree(), grace, deadline, reserve_s=drain / 2)
        self.sweep(deadline, reserve_s=drain / 2)
        return deadline

    def tell(self, reason: TimeoutReason, *extra: Finding) -> None:
        """Hand ``options.on_findings`` the findings so far (plus ``extra``) and the run so far."""
        if self.options.on_findings is not None:
            self.options.on_findings(self.result(reason), (*self.findings, *extra))

    def collect_evidence(self, deadline: Deadline, cancelled: bool, grace: float) -> diagnosis.Evidence:
        """Processes, stacks (all dumps at once) and GPUs, within the deadline's share for evidence."""
        reserve = grace + escalate.KILL_WAIT_S + (CANCEL_PIPE_DRAIN_S if cancelled else PIPE_DRAIN_S)
        procs = self.living_tree()
        infos = tree.describe_all(procs)
        python_pids = [p.pid for p in procs if tree.is_python(p.pid)]
        if self.proc.pid in python_pids:  # the command's own stack first, whatever the cap
            python_pids.remove(self.proc.pid)
            python_pids.insert(0, self.proc.pid)
        skipped = max(0, len(python_pids) - MAX_DUMPS)
        python_pids = python_pids[:MAX_DUMPS]
        dump_s = gpu_s = deadline.within(CANCEL_DUMP_TIMEOUT_S if cancelled else DUMP_TIMEOUT_S, reserve)
        if not cancelled:  # a cancel has its own window (CANCEL_WINDOW_S)
            clock_out = self.ended_by_guard_at or time.monotonic()
            dump_s = min(dump_s, max(0.0, clock_out + STACKS_SHARE_S - time.monotonic()))
        pausable: List[int] = []
        if not cancelled:  # on cancel every second counts: Python frames only
            states = {info.pid: info.state for info in infos}
            pausable = [pid for pid in python_pids if states.get(pid) in _PAUSABLE_STATES]
        parents = {info.ppid for info in infos}
        in_wait4 = {info.pid for info in infos if info.wchan in diagnosis.KERNEL_CHILD_WAITS}
        lines = snapshot.SourceLines()

        def needs_native(dump: snapshot.StackDump) -> bool:
            # A native stack is evidence where a process waits in C; where its Python stack already
            # shows an idle wait (a launcher on its children, time.sleep) it would add nothing.
            return not diagnosis.explains_wait(dump, dump.pid in parents, dump.pid in in_wait4, lines.line)
        gpu_box: List[Optional[snapshot.GpuSnapshot]] = [None]
        with self.reaper.paused():  # no helper may be reaped before its pid is known
            gpu_thread: Optional[threading.Thread] = threading.Thread(
                target=lambda: gpu_box.__setitem__(
                    # One helper whatever the tree's size, joined at most 0.5 s after the stacks.
                    0, snapshot.gpu_snapshot(gpu_s, self.helper_pids, self.tools)),
                daemon=True,
            )
            try:
                gpu_thread.start()
            except RuntimeError:  # "can't start new thread": the tree took the user's last processes
                gpu_thread = None
            # Every dump at once, under one bound: 16 ranks cost about what one does. A native dump
            # starts the moment its process's plain dump shows it is needed, at most MAX_NATIVE_DUMPS.
            native_s = (self.ended_by_guard_at or time.monotonic()) + NATIVE_DUMP_SHARE_S - time.monotonic()
            dumps, native = snapshot.dump_all(python_pids, (), dump_s, self.helper_pids, self.tools,
                                              pausable, needs_native, MAX_NATIVE_DUMPS, max(0.0, native_s),
                                              PARALLEL_DUMPS, DUMP_EACH_S)
            if gpu_thread is not None:
                gpu_thread.join(deadline.within(0.5))
        # The same judgement for every dump (its source lines mostly read by now): where_it_hung names a
        # process waiting in C or on a lock before ranks idle in a sleep. Not on cancel, where no native
        # dump read them: 16 dumps' first reads took 50-130 ms at load 18.
        unexplained = () if cancelled else tuple(dump.pid for dump in dumps if needs_native(dump))
        return diagnosis.Evidence(tuple(infos), tuple(dumps), tuple(native), gpu_box[0], skipped, unexplained)

    def apply(self, result: diagnosis.Diagnosis) -> None:
        """Take a diagnosis's findings and diagnostics, and write its evidence files."""
        self.findings.extend(result.findings)
        self.diagnostics.extend(result.diagnostics)
        self.mend_the_log_dir()
        for name, text in result.files:
            _write_text(self.dir_fd, name, text)
            self.evidence[name] = text

    def _give_back_the_rights(self, mode: int) -> None:
        """``chmod 000`` by the command would stop the evidence, the restored logs and the upload."""
        if mode & 0o700 == 0o700:
            return
        try:
            os.fchmod(self.dir_fd, stat.S_IMODE(mode) | 0o700)
        except OSError:
            return
        if not self.log_dir_mended:
            self.log_dir_mended = True
            self.diagnostics.append(Diagnostic(
                "The log dir's permissions were taken away during the run; the guard gave them back",
                f"{self.log_dir} had mode {stat.S_IMODE(mode):o}; the guard made it readable, writable and "
                "searchable by its owner again.\n",
            ))

    def keep_the_evidence(self) -> None:
        """Write again any evidence file the command changed after the guard wrote it.

        The evidence is written before the tree is signalled, so a command still runs during the kill
        grace (a SIGTERM handler) and can rewrite ``stacks.txt`` in place; by now nothing of it runs.
        """
        for name, text in self.evidence.items():
            if _read_own(self.dir_fd, name) != text.encode("utf-8", "backslashreplace"):
                _write_text(self.dir_fd, name, text)
                self.diagnostics.append(Diagnostic(
                    f"{name} was changed during the run; the guard wrote it again",
                    f"{name} in {self.log_dir} no longer held what the guard wrote; it holds it again.\n",
                ))
        for name in EVIDENCE_FILES:
            if name not in self.evidence:
                self._move_aside_forged(name)

    def _move_aside_forged(self, name: str) -> None:
        """An evidence file the guard did not write (a command's fake ``stacks.txt`` of a hang that never
        was, uploaded beside the real logs) gets a name that says whose it is; kept, it may be useful."""
        aside = _aside_name(name)
        try:
            os.rename(name, aside, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError:
            return  # nothing there (the usual case), or it cannot be moved: nothing the guard can say
        self.diagnostics.append(Diagnostic(
            f"{name} was written by the command, not by the guard; the guard renamed it {aside}",
            f"The guard collected no {name} in this run; a file of that name in {self.log_dir} came from the "
            f"command and is kept as {aside}.\n",
        ))

    def mend_the_log_dir(self) -> None:
        """If the command deleted the log dir (``git clean -xdf``, a suite's cleanup), make it again;
        if it took its owner's rights away, give them back.

        Files cannot be created in a deleted directory, so evidence written through the old
        descriptor would be lost, and the logs the guard still holds open would name nothing.
        """
        try:
            here = os.fstat(self.dir_fd)
            if here.st_nlink > 0:
                self._give_back_the_rights(here.st_mode)
                return
            aside = _move_aside_a_non_directory(self.log_dir)
            os.makedirs(self.log_dir, exist_ok=True)
            fresh = os.open(self.log_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return  # the report still names the logs the guard could not put back
        os.close(self.dir_fd)
        self.dir_fd = fresh
        if not self.log_dir_deleted:
            self.log_dir_deleted = True
            instead = f"What the command put at its path is now {aside}.\n" if aside else ""
            self.diagnostics.append(Diagnostic(
                "The log dir was deleted during the run; the guard made it again and restored its logs",
                f"{self.log_dir} was removed while the command ran; the guard re-created it and wrote back "
                f"the logs and evidence from what it holds.\n{instead}",
            ))

    # -- after the command exited ---------------------------------------------------------------
    def collect_leftovers(self) -> Deadline:
        exited = time.monotonic()
        options = self.options
        deadline = Deadline(options.leak_grace_s + options.kill_grace_s + escalate.KILL_WAIT_S + PIPE_DRAIN_S)
        self.cancel.arm(deadline)
        leak_by = exited + options.leak_grace_s
        # A process holding the pipes is in the tree, so an empty tree also means the pipes will close.
        procs = self.living_tree()
        while procs and time.monotonic() < leak_by and self.cancel.signum is None:
            escalate.wait_gone(procs, min(0.1, leak_by - time.monotonic()))
            procs = self.living_tree()
        if procs:
            infos = tree.describe_all(procs)
            drain = CANCEL_PIPE_DRAIN_S if self.cancel.signum is not None else PIPE_DRAIN_S
            self.end(procs, options.kill_grace_s, deadline, reserve_s=drain / 2)
            self.sweep(deadline, reserve_s=drain / 2)
            self.apply(diagnosis.leftovers(infos, time.monotonic() - exited, self.log_dir))
            self.leftover_pids.extend(info.pid for info in infos)
        return deadline

    def note_cancel_after_exit(self) -> None:
        """A cancel during the teardown after exit still ends the run as cancelled: never a pass."""
        if self.cancel.signum is None:
            return
        self.cancelled_after_exit = True
        self.findings.insert(0, diagnosis.cancelled_in_teardown(
            self.cancel.name, self.cancel.at - self.started, len(self.leftover_pids), self.log_dir
        ))

    def close_pumps(self, deadline: Deadline, consoles: Sequence[Console]) -> None:
        """Wait for EOF (bounded), then stop the pumps: drain the pipes into the logs, cut the echo.

        After this returns no byte of the command reaches a console any more.
        """
        bound = CANCEL_PIPE_DRAIN_S if self.cancel.signum is not None or self.unkillable else PIPE_DRAIN_S
        wait_until = time.monotonic() + deadline.within(bound, reserve=DRAIN_AFTER_STOP_S)
        for pump in self.pumps:
            pump.join(wait_until - time.monotonic())
        drain = max(0.1, deadline.within(DRAIN_AFTER_STOP_S))
        for pump in self.pumps:
            pump.stop(drain_s=drain)
        for console in consoles:
            console.cut(CONSOLE_CUT_WAIT_S)
        for pump in self.pumps:
            if not pump.join(drain + 0.5):
                pump.stop(now=True)
                pump.join(0.5)
        if all(pump.finished for pump in self.pumps):
            for stream in (self.proc.stdout, self.proc.stderr):
                stream.close()

    def note_oom_kills(self, reason: Optional[TimeoutReason]) -> None:
        """Say whether the kernel's OOM killer struck while the command ran (read once it was reaped)."""
        kills = self.oom.kills() if self.oom is not None else None
        if kills is None:
            return
        failed = reason is not None or self.proc.poll() != 0 or self.cancelled_after_exit
        finding = diagnosis.oom_kills(kills, failed)
        if finding is not None:
            self.findings.append(finding)

    def finish_containment(self) -> None:
        if self.oom is not None:
            self.oom.close()
        if self.reaper is not None:
            self.reaper.stop()
            self.reaper.reap_now()
        resumed = self.keepalive.close()
        self.containment.close()
        if resumed:
            self.diagnostics.append(Diagnostic(RESUMED_TITLE, RESUMED.format(count=resumed)))

    def result(self, reason: Optional[TimeoutReason]) -> CommandResult:
        returncode = self.proc.poll()
        if reason is None and self.cancelled_after_exit:
            reason = TimeoutReason.CANCELLED
        return CommandResult(
            argv=tuple(self.options.argv),
            exit_code=shell_status(returncode) if returncode is not None else None,
            signal=signal_name(-returncode) if returncode is not None and returncode < 0 else None,
            timed_out=reason is not None,
            timeout_reason=reason,
            duration_s=(self.ended or time.monotonic()) - self.started,
            leftover_pids=tuple(self.leftover_pids),
            unkillable_pids=tuple(sorted(self.unkillable)),
            log_dir=self.log_dir,
            containment=self.containment.name,
        )


def supervise(options: GuardOptions) -> Supervision:
    """Run ``options.argv`` under the guard and return how it went; raises ``UsageError`` for bad options.

    Saves ``stdout.log`` and ``stderr.log`` byte-exact in ``options.log_dir`` (plus ``stacks.txt``,
    ``processes.txt`` and ``gpu.txt`` when it diagnoses). Installs SIGINT/SIGTERM/SIGHUP handlers for
    the duration when called from the main thread: each cancels the run (``timeout_reason ==
    "cancelled"``) with the same diagnosis, inside the runner's 10 s window, at whatever stage it comes.
    """
    _validate(options)
    _undo_inherited_signal_state()
    spawn.close_proc_to_the_command()  # before the scanner forks from us and the command starts
    log_fds: Dict[str, int] = {}
    dir_fd = -1
    try:
        os.makedirs(options.log_dir, exist_ok=True)
        dir_fd = os.open(options.log_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        _claim_log_dir(dir_fd, options.log_dir)
        for name in EVIDENCE_FILES:
            _unlink_stale(dir_fd, name)  # a reused log dir's old evidence
        for stream, name in (("stdout", STDOUT_LOG), ("stderr", STDERR_LOG)):
            log_fds[stream] = _create_exclusive(dir_fd, name)
    except (OSError, UsageError) as err:
        for fd in [*log_fds.values(), dir_fd]:
            if fd >= 0:
                os.close(fd)
        if isinstance(err, UsageError):
            raise
        problem = err.strerror or err
        raise UsageError(f"--log-dir: cannot write logs in {options.log_dir!r}: {problem}") from err
    # Before the command, and before the scanner forks: copying py-spy takes a few milliseconds, which
    # would part the scanner's start from the command's (see _Run.start on their clock tick).
    tools = snapshot.find_tools(hidden=(*options.remove_env, *(name for name, _ in options.extra_env)))
    # The guard's own read-only view of each log: the path is the command's to tamper with, and so is
    # the file it names (a same-user command can truncate or rewrite it in place), so where the file
    # system allows the view is of a private copy the pump writes first; it becomes the log at the end.
    copy_fds = {stream: _private_copy(dir_fd) for stream in log_fds}
    own_views = {stream: _reopen_read_only(copy_fds[stream] if copy_fds[stream] >= 0 else fd)
                 for stream, fd in log_fds.items()}
    if options.on_log_ready is not None:
        for stream, view in own_views.items():
            options.on_log_ready(stream, _reopen_read_only(view))
    spawn.become_subreaper()
    terminal_modes = _terminal_modes()
    stop_token = workflow.stop_token()
    stop_commands = options.echo and workflow.should_stop_commands(
        os.environ, options.allow_workflow_commands
    )
    out_console = Console(1)
    # The runner handles each batch of a step's stderr before its stdout (actions/runner
    # src/Runner.Sdk/ProcessInvoker.cs, ProcessOutput, lines 398-430 at 258d6c8), so a fence on
    # stdout cannot cover stderr: inside the fence the command's stderr is echoed on stdout too.
    err_console = out_console if stop_commands else Console(2)
    consoles = [out_console] if err_console is out_console else [out_console, err_console]
    follower = _follow_the_commands_commands(options, out_console, err_console)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    cancel = _Cancel(wake_write)
    run = _Run(options, cancel)
    run.dir_fd = dir_fd
    run.tools = tools
    if any(fd < 0 for fd in copy_fds.values()):
        no_copy = NO_PRIVATE_COPY.format(log_dir=options.log_dir)
        run.diagnostics.append(Diagnostic(NO_PRIVATE_COPY_TITLE, no_copy))
    restore = _install_handlers(cancel.handle)
    watch = senders.SenderWatch(CANCEL_SIGNALS, run.take_signal)
    watch.start()
    early = early_cancel.taken()
    if early is not None:  # came after the CLI's last look and before these handlers: ends the run at once
        cancel.signum, cancel.at = early
    reason: Optional[TimeoutReason] = None
    fenced = False
    try:
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        if stop_commands:
            out_console.write_own(workflow.stop_line(stop_token))
            fenced = True
        env = spawn.child_environment(os.environ, run.token, options.extra_env, options.remove_env)
        run.start(env)
        try:
            run.pumps = [
                StreamPump("stdout", run.proc.stdout.fileno(), log_fds.pop("stdout"),
                           out_console if options.echo else None, run.activity, options.on_output,
                           copy_fds.pop("stdout")),
                StreamPump("stderr", run.proc.stderr.fileno(), log_fds.pop("stderr"),
                           err_console if options.echo else None, run.activity, options.on_output,
                           copy_fds.pop("stderr")),
            ]
            for pump in run.pumps:
                pump.start()
            reason = run.watch(wake_read)
            if reason is None:
                run.ended = time.monotonic()
                deadline = run.collect_leftovers()
            else:
                deadline = run.diagnose_and_end(reason)
                run.ended = time.monotonic()
            run.close_pumps(deadline, consoles)
            if reason is None:
                run.note_cancel_after_exit()
            run.note_oom_kills(reason)
        except BaseException:
            # Never leave the tree behind, even when the guard itself fails.
            if run.containment.kernel:
                run.containment.kill(escalate.KILL_WAIT_S)
            run.end(run.living_tree(), 0.0, Deadline(escalate.KILL_WAIT_S))
            for pump in run.pumps:
                pump.stop(now=True)
            raise
        finally:
            run.finish_containment()
            run.tools.close()
    finally:
        run.keepalive.close()  # also when the command could not start
        for fd in [*log_fds.values(), *copy_fds.values()]:  # never handed to a pump: it could not start
            if fd >= 0:
                os.close(fd)
        for console in consoles:
            console.cut(CONSOLE_CUT_WAIT_S)
        _restore_terminal_modes(terminal_modes)
        if options.echo:
            # The report follows on the console; it must not start in the middle of the command's line.
            _end_partial_lines(consoles)
            _say_what_the_console_missed(run.pumps)
        if fenced:
            out_console.write_own(workflow.resume_line(stop_token))
        if follower is not None:
            _undo_the_commands_workflow_state(follower, out_console, run.diagnostics)
        # The handlers stay until the logs are back: a cancel during the restore (a compare of up to
        # 256 MiB per log) would otherwise meet the default action, and KeyboardInterrupt or SIGTERM
        # lost the report of a run that had ended.
        try:
            _bring_back_a_moved_log_dir(run, run.dir_fd)
            run.mend_the_log_dir()
            dir_fd = run.dir_fd  # a new one if the command deleted the log dir
            for stream, path in (("stdout", run.stdout_path), ("stderr", run.stderr_path)):
                restored = _restore_log(dir_fd, os.path.basename(path), own_views[stream])
                short = any(pump.name == stream and pump.log_error for pump in run.pumps)
                if restored and not run.log_dir_deleted and not (short and restored == "rewritten"):
                    run.diagnostics.append(Diagnostic(
                        f"{os.path.basename(path)} was {restored} during the run; the guard restored its"
                        " own copy",
                        f"The path {path} no longer held what the command printed; the guard put back its"
                        " own copy, written from the pipe.\n",
                    ))
                os.close(own_views[stream])
            run.keep_the_evidence()
            os.close(dir_fd)
            for pump in run.pumps:
                if pump.log_error:
                    log = STDOUT_LOG if pump.name == "stdout" else STDERR_LOG
                    run.diagnostics.append(Diagnostic(
                        f"{log} is incomplete: {pump.log_error}",
                        f"Writing {log} failed after {pump.logged} of the {pump.bytes} bytes the command"
                        f" wrote to {pump.name} ({pump.log_error}); the rest is not in the log.\n",
                    ))
        finally:
            watch.stop()  # before the handlers go: a signal pending then goes to them
            if run.signals_from_tree:
                more = run.more_signals_from_tree
                run.diagnostics.append(Diagnostic(SIGNALS_FROM_TREE_TITLE, "".join(
                    f"{line}\n" for line in run.signals_from_tree) + (
                    MORE_SIGNALS_FROM_TREE.format(count=more) if more else "")))
            restore()
            os.close(wake_read)
            os.close(wake_write)
    return Supervision(
        command=run.result(reason),
        findings=tuple(run.findings),
        diagnostics=tuple(run.diagnostics),
        stdout_path=run.stdout_path,
        stderr_path=run.stderr_path,
        ended_by_guard_at=run.ended_by_guard_at,
    )


def _undo_inherited_signal_state() -> None:
    """Give SIGCHLD its default action and unblock every signal, in the guard and so in the command.

    Both are inherited from whatever started the guard (an ignored signal and the signal mask survive
    execve, signal(7)), and neither is the guard's to keep:

    - SIGCHLD ignored (some agents and daemons start their children so, to skip reaping them) has the
      kernel reap every child at once: ``waitpid`` fails with ECHILD, which ``subprocess`` reads as
      exit 0, so a command that failed passed, and the command's own ``subprocess`` calls alike;
    - SIGINT or SIGTERM blocked (a child started from a thread that blocks signals for a signal
      thread) kept the runner's cancel from ever reaching the guard, and the guard's SIGTERM from the
      command, which inherited the mask.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _install_handlers(handler: Callable[[int, object], None]) -> Callable[[], None]:
    """Route SIGINT, SIGTERM, SIGHUP and the other ``CANCEL_SIGNALS`` to ``handler`` (main thread only).

    Returns the undo function. SIGHUP (the runner's terminal or an ssh session went away), or a
    SIGUSR1 the command sends its parent, would otherwise kill the guard and orphan the tree.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {signum: signal.signal(signum, handler) for signum in CANCEL_SIGNALS}
    previous.update({signum: signal.signal(signum, _stay_running) for signum in STOP_SIGNALS})

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)

    return restore


def _stay_running(_signum: int, _frame: object) -> None:
    """A ``STOP_SIGNALS`` handler: the guard keeps its clocks running."""


def _pidfd(pid: int) -> Optional[int]:
    """A pidfd that becomes readable when ``pid`` exits (Linux 5.3+, Python 3.9+), else None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _cwd() -> str:
    """The guard's working directory, which the command started in; "" when it was removed."""
    try:
        return os.getcwd()
    except OSError:
        return ""


def _drain(fd: int) -> None:
    try:
        os.read(fd, 4096)
    except OSError:
        pass


def _flush(stream: object) -> None:
    try:
        stream.flush()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        pass


def _follow_the_commands_commands(options: GuardOptions, out_console: Console,
                                  err_console: Console) -> Optional[workflow.CommandFollower]:
    """A follower of the workflow commands the command issues itself, where the guard lets them through
    under GitHub Actions (``--allow-workflow-commands``); None elsewhere."""
    if not (options.echo and options.allow_workflow_commands and os.environ.get("GITHUB_ACTIONS") == "true"):
        return None
    follower = workflow.CommandFollower()
    out_console.follow = functools.partial(follower.feed, "stdout")
    if err_console is not out_console:
        err_console.follow = functools.partial(follower.feed, "stderr")
    return follower


def _undo_the_commands_workflow_state(follower: workflow.CommandFollower, console: Console,
                                      diagnostics: List[Diagnostic]) -> None:
    """Resume the workflow commands the command stopped, and close the group it left open, before the
    guard's own annotations; say so in the report where that cannot be done."""
    lines, restored = follower.closing_lines()
    if lines:
        console.write_own(lines)
    if not restored:
        diagnostics.append(Diagnostic(COMMANDS_LEFT_STOPPED_TITLE, COMMANDS_LEFT_STOPPED))


def _terminal_modes() -> Dict[int, Tuple[list, int]]:
    """The termios settings and file status flags of each standard descriptor that is a terminal."""
    modes = {}
    for fd in (0, 1, 2):
        try:
            modes[fd] = (termios.tcgetattr(fd), fcntl.fcntl(fd, fcntl.F_GETFL))
        except (termios.error, OSError):  # not a terminal, or closed
            pass
    return modes


def _restore_terminal_modes(modes: Dict[int, Tuple[list, int]]) -> None:
    """Put back the terminal settings the command changed and could not restore itself.

    The command inherits the guard's terminal as stdin, and its open file description with it: it may
    set the terminal's modes (``getpass`` turns echo off, a prompt or a pager canonical input) or make
    it non-blocking (as Node.js does with its stdin); killed at a timeout while it waited there, it
    left the user's shell without echo, or its next reader failing with EAGAIN. Only while the guard's
    group is the terminal's foreground one: a background process that sets terminal modes is sent
    SIGTTOU (termios(3)), and the terminal is then not the guard's to set.
    """
    for fd, (saved, flags) in modes.items():
        try:
            if os.tcgetpgrp(fd) != os.getpgrp():
                continue
            if termios.tcgetattr(fd) != saved:
                termios.tcsetattr(fd, termios.TCSANOW, saved)
            now = fcntl.fcntl(fd, fcntl.F_GETFL)
            if (now ^ flags) & os.O_NONBLOCK:
                fcntl.fcntl(fd, fcntl.F_SETFL, (now & ~os.O_NONBLOCK) | (flags & os.O_NONBLOCK))
        except (termios.error, OSError):  # not our controlling terminal, or gone
            pass


def _end_partial_lines(consoles: Sequence[Console]) -> None:
    """End a console's unfinished last line (the command's), on the descriptor that left it open.

    The guard's report (and, under GitHub, its resume line) comes next. The runner sees a command
    only at the start of a line, and a step often merges stderr into stdout (``2>&1``): a partial
    last line on either stream would swallow the resume token. When the streams stay separate, a
    short pause lets the runner take the finished stderr line first. The saved logs stay as written.
    """
    ended_stderr = False
    for console in consoles:
        if console.escaped:
            # The command's last SGR (conceal, black on black) or character set (SO) would still style
            # the guard's report in a terminal: a forged "Passed" above an invisible "Failed". Reset it.
            console.write_own(SGR_RESET)
        if console.wrote and console.last_byte != b"\n":
            console.write_own(b"\n")
            ended_stderr = ended_stderr or console.fd == 2
    if ended_stderr:
        time.sleep(_STREAM_SETTLE_S)


def _bring_back_a_moved_log_dir(run: _Run, dir_fd: int) -> None:
    """If the command moved the log dir away (and put a decoy in its place), move the real one back.

    The guard wrote through ``dir_fd``; what the path names now may be the command's decoy, and the
    action uploads and reports the log dir by its path (action.yml: ``steps.setup.outputs.log-dir``,
    the report in it), so following the real one elsewhere would still show the decoy. The decoy is
    moved aside as ``NAME.put-there-by-the-command-XXXX``, as a replaced log is (``_restore_log``).
    Where the real one cannot be moved back, the run points at where it is.
    """
    try:
        here = os.stat(run.log_dir)
        ours = os.fstat(dir_fd)
        if (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino):
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    actual = _where(dir_fd)
    if actual is None:
        return
    aside = ""
    try:
        if os.path.lexists(run.log_dir):
            aside = _aside_name(run.log_dir.rstrip(os.sep))
            os.rename(run.log_dir, aside)
        actual = _where(dir_fd) or actual  # it moved too if the command hid it inside the decoy
        os.rename(actual, run.log_dir)
    except OSError as err:
        actual = _where(dir_fd) or actual
        run.diagnostics.append(Diagnostic(
            "The log dir was moved during the run; the guard's logs and evidence are where it moved to",
            f"{run.log_dir} no longer names the directory the guard wrote, and the guard could not move it "
            f"back ({err.strerror or err}); its files are in {actual}.\n",
        ))
        run.log_dir = actual
        run.stdout_path = os.path.join(run.log_dir, STDOUT_LOG)
        run.stderr_path = os.path.join(run.log_dir, STDERR_LOG)
        return
    instead = f"; what the command put in its place is now {aside}" if aside else ""
    run.diagnostics.append(Diagnostic(
        "The log dir was moved during the run; the guard moved it back",
        f"The command moved {run.log_dir} to {actual}{instead}. The guard moved its own directory back to "
        f"{run.log_dir}.\n",
    ))


def _move_aside_a_non_directory(path: str) -> str:
    """Move aside what stands at ``path`` unless it is a real directory; its new name, or "".

    A command that deletes the log dir and puts a symlink to a decoy directory (or a file) at its path
    would otherwise get the restored logs written into the decoy, or none at all, while the action
    uploads and reports the log dir by its path (upload-artifact follows the link).
    """
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return ""
    except FileNotFoundError:
        return ""
    aside = _aside_name(path.rstrip(os.sep))
    os.rename(path, aside)
    return aside


def _aside_name(name: str) -> str:
    """A fresh name for what the command put where the guard's own file or directory belongs: kept (it
    may be evidence), and saying whose it is."""
    return f"{name}.put-there-by-the-command-{secrets.token_hex(4)}"


def _where(dir_fd: int) -> Optional[str]:
    """The path of the directory ``dir_fd`` is open on, or None when it was removed or is unknown."""
    try:
        actual = os.readlink(f"/proc/self/fd/{dir_fd}")
    except OSError:
        return None
    if not os.path.isdir(actual) or actual.endswith(" (deleted)"):
        return None
    return actual


def _say_what_the_console_missed(pumps: Sequence[StreamPump]) -> None:
    """One line per stream whose echo was cut behind its log (a console slower than the command)."""
    for pump in pumps:
        console = pump.console
        missed = pump.bytes - pump.echoed
        if console is not None and missed > 0 and not console.broken:
            log = STDOUT_LOG if pump.name == "stdout" else STDERR_LOG
            console.write_own(CONSOLE_CUT_NOTE.format(missed=missed, stream=pump.name, log=log).encode())


def _claim_log_dir(dir_fd: int, log_dir: str) -> None:
    """Hold the log dir for this run (``flock``, released when the guard closes it or dies).

    Two guarded runs given one log dir (runners on one GPU host sharing a fixed ``log-dir``, a guard
    nested in the command with the outer one's) unlinked each other's logs: each report then cited
    the other run's lines and blamed its own command for a "rewritten" log. ``UsageError`` when another
    run holds it; a file system without locks is left unchecked.
    """
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise UsageError(
            f"--log-dir: {log_dir!r} is in use by another guarded run; give each run a log dir of its own"
        ) from None
    except OSError:
        pass


def _unlink_stale(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _create_exclusive(dir_fd: int, name: str) -> int:
    """A new file ``name`` in ``dir_fd`` for writing, never through a symlink nor into a planted file.

    Whatever is at ``path`` is unlinked first (a new file rather than a truncated one also spares
    ext4's flush of a truncated-and-rewritten file on close, auto_da_alloc, seconds after a flood).
    A name re-planted between the unlink and the create fails ``O_EXCL``; a few tries, then OSError.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(_CREATE_TRIES):
        _unlink_stale(dir_fd, name)
        try:
            return os.open(name, flags, 0o644, dir_fd=dir_fd)
        except FileExistsError:
            if attempt == _CREATE_TRIES - 1:
                raise
    raise FileExistsError(name)  # not reached


def _private_copy(dir_fd: int) -> int:
    """An unlinked file in the log dir (``O_TMPFILE``) for the guard's copy of a log, or -1 where unsupported.

    No path names it, and a non-dumpable guard's ``/proc/PID/fd`` is closed to the command, so a
    command that rewrites its log in place cannot reach this one.
    """
    flags = getattr(os, "O_TMPFILE", 0)
    if not flags:
        return -1
    try:
        return os.open(".", flags | os.O_RDWR | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    except OSError:
        return -1  # a file system without O_TMPFILE: the visible log is all there is


def _restore_log(dir_fd: int, name: str, view_fd: int) -> str:
    """Make ``name`` in ``dir_fd`` hold the log the guard wrote (``view_fd``) again.

    Returns what the command had done to it ("replaced", "rewritten"), or "" when nothing was amiss.
    A command can unlink, rename or replace its log with a symlink, or truncate and rewrite the file
    in place, to hide what it printed from the scan and the uploaded artifact; the guard's own copy
    (``_private_copy``) still holds every byte.
    """
    try:
        ours = os.fstat(view_fd)
        here = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        here = None
    except OSError:
        return ""
    done = "replaced"
    if here is not None and (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino):
        return ""  # no private copy: the visible log is the guard's view, and the path still names it
    if here is not None and ours.st_nlink == 0 and stat.S_ISREG(here.st_mode):
        same = _same_bytes(dir_fd, name, view_fd, here.st_size, ours.st_size)
        if same and ours.st_size <= COMPARE_BYTES:
            return ""
        done = "" if same else "rewritten"  # past the compared part the copy goes in unannounced
    if here is not None and stat.S_ISDIR(here.st_mode):
        # A file cannot replace a directory: move the command's aside (kept, it may be evidence too).
        try:
            os.rename(name, _aside_name(name), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            return ""
    if ours.st_nlink == 0 and _link_in(dir_fd, name, view_fd):
        return done
    if not done:
        return ""  # an unread tail that could not be linked in: leave the matching log as it is
    try:
        target = _create_exclusive(dir_fd, name)
    except OSError:
        return ""
    try:
        offset = 0
        while True:
            chunk = os.pread(view_fd, CHUNK_COPY_BYTES, offset)
            if not chunk:
                break
            _write_fully(target, chunk)
            offset += len(chunk)
    finally:
        os.close(target)
    return done


def _same_bytes(dir_fd: int, name: str, view_fd: int, size: int, expected: int) -> bool:
    """True when the visible log ``name`` holds the copy's bytes (compared up to ``COMPARE_BYTES``)."""
    if size != expected:
        return False
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        offset = 0
        while offset < min(size, COMPARE_BYTES):
            theirs = os.pread(fd, CHUNK_COPY_BYTES, offset)
            if not theirs or theirs != os.pread(view_fd, len(theirs), offset):
                return False
            offset += len(theirs)
        return True
    finally:
        os.close(fd)


def _link_in(dir_fd: int, name: str, view_fd: int) -> bool:
    """Give the unlinked copy behind ``view_fd`` the name ``name`` (atomically replacing a regular file).

    The copy and the file at ``name`` swap names (``RENAME_EXCHANGE``), then the old one goes: on ext4
    a rename over an existing file first allocates and starts writing the renamed file's delayed blocks
    (``auto_da_alloc``, ext4(5)), which for a 512 MiB log held the guard 0.2-0.3 s after the command
    ended; an exchange does not. Where the file system cannot exchange, a plain rename.
    """
    temp = f".{name}.{secrets.token_hex(8)}"
    try:
        os.link(f"/proc/self/fd/{view_fd}", temp, dst_dir_fd=dir_fd, follow_symlinks=True)
    except OSError:
        return False
    if _exchange(dir_fd, temp, name):
        try:
            _unlink_stale(dir_fd, temp)  # now the command's file (or link) that was at ``name``
        except OSError:  # a directory it planted there meanwhile: kept aside, as _restore_log keeps one
            try:
                os.rename(temp, _aside_name(name), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except OSError:
                pass
        return True
    try:
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return True
    except OSError:
        _unlink_stale(dir_fd, temp)
        return False


def _exchange(dir_fd: int, one: str, other: str) -> bool:
    """Swap the names ``one`` and ``other`` in ``dir_fd`` atomically (renameat2(2) ``RENAME_EXCHANGE``).

    False, having changed nothing, when either is missing or the kernel, libc or file system cannot.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28; libc is already loaded
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    return renameat2(dir_fd, os.fsencode(one), dir_fd, os.fsencode(other), _RENAME_EXCHANGE) == 0


def _write_fully(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reopen_read_only(fd: int) -> int:
    """A new read-only descriptor on the file ``fd`` is open on (not on whatever its path names now)."""
    return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)


def _read_own(dir_fd: int, name: str) -> Optional[bytes]:
    """The bytes of the regular file ``name`` in ``dir_fd`` (not through a symlink), else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while True:
            chunk = os.read(fd, CHUNK_COPY_BYTES)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_text(dir_fd: int, name: str, text: str) -> None:
    """Write evidence to a file the guard creates itself (see ``_create_exclusive``); best effort."""
    try:
        fd = _create_exclusive(dir_fd, name)
    except OSError:
        return
    with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write(text)

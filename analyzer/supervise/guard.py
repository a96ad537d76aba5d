"""Guard one command: run it, stream and save its output, enforce its clocks, diagnose, end its tree.

``supervise`` is the whole lifecycle with one monotonic clock::

    start (own session, subreaper, env token) -> pump output -> wait for exit / wall / idle / cancel
      exit:    wait ``leak_grace_s`` for descendants and pipes -> end the leftovers -> leaked-process
      timeout: snapshot processes, py-spy every Python process, nvidia-smi -> hang finding
               -> SIGCONT+SIGTERM, wait ``kill_grace_s``, SIGKILL, wait briefly -> unkillable-process
    -> stop the pumps without waiting for EOF beyond a bound -> CommandResult

It returns within timeout + kill grace + a few seconds whatever the tree does, and nothing the command
started is left running unless the kernel refused SIGKILL (then it is reported, never waited on).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import psutil

from ..errors import UsageError
from ..exits import shell_status, signal_name
from ..durations import format_duration
from ..model import (
    GUARD_CANCELLED_RULE,
    GUARD_IDLE_TIMEOUT_RULE,
    GUARD_LEAKED_RULE,
    GUARD_TIMEOUT_RULE,
    GUARD_UNKILLABLE_RULE,
    CommandResult,
    Diagnostic,
    Finding,
    Kind,
    ProcessInfo,
    Severity,
    TimeoutReason,
)
from . import escalate, snapshot, spawn, tree, workflow
from .pump import Activity, Console, StreamPump

try:
    from ..model import GUARD_ABORTED_RULE
except ImportError:  # until the shared model names it
    GUARD_ABORTED_RULE = "guard-aborted"

STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
STACKS_FILE = "stacks.txt"
PROCESSES_FILE = "processes.txt"
GPU_FILE = "gpu.txt"
EVIDENCE_FILES = (STACKS_FILE, PROCESSES_FILE, GPU_FILE)

RULE_FOR_REASON = {
    TimeoutReason.WALL: GUARD_TIMEOUT_RULE,
    TimeoutReason.IDLE: GUARD_IDLE_TIMEOUT_RULE,
    TimeoutReason.CANCELLED: GUARD_CANCELLED_RULE,
    TimeoutReason.ABORTED: GUARD_ABORTED_RULE,
}
ABORT_POLL_S = 0.25

DUMP_TIMEOUT_S = 3.0
NATIVE_DUMP_TIMEOUT_S = 2.0
_PAUSABLE_STATES = ("R", "S")  # py-spy --native attaches with ptrace: not to stopped or D-state ones
GPU_TIMEOUT_S = 3.0
# The runner's cancel sends SIGINT, SIGTERM 7.5 s later and SIGKILL 2.5 s after that: everything from
# the first signal to our return must fit in about 7 s.
CANCEL_DUMP_TIMEOUT_S = 1.5
CANCEL_KILL_GRACE_S = 3.0
PIPE_DRAIN_S = 2.0
CANCEL_PIPE_DRAIN_S = 0.5
DRAIN_AFTER_STOP_S = 0.5  # copying what is left in a pipe into the log: 1 MiB takes milliseconds
CONSOLE_CUT_WAIT_S = 0.5
_CREATE_TRIES = 3
CHUNK_COPY_BYTES = 1 << 20
_STREAM_SETTLE_S = 0.05
_MAX_EXCERPT = 4000
_MAX_OTHERS_NAMED = 3
# Innermost frames of a process that is only waiting for its children (torchrun's agent, a
# multiprocessing parent, subprocess.wait): the hang is in a child, so name the child's frame.
_WAITING_ON_CHILDREN = frozenset(
    {"wait", "_wait", "_try_wait", "poll", "join", "_wait_for_tstate_lock", "communicate", "_invoke_run",
     "_monitor_workers", "wait_procs"}
)
# Innermost frames of a rank that waits for its peers: when one rank hangs elsewhere, the others
# sit in a collective; the rank that never arrived is the root cause, so it is named first.
_WAITING_ON_PEERS = frozenset(
    {"all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
     "broadcast", "barrier", "monitored_barrier", "all_to_all", "all_to_all_single", "gather", "scatter",
     "reduce", "recv", "send", "irecv", "isend"}
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
    - ``extra_env`` is set in the command's environment and ``remove_env`` names are removed from it.
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
    extra_env: Tuple[Tuple[str, str], ...] = ()
    remove_env: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Supervision:
    """The outcome: how the command ended, the guard's own findings and evidence, and the saved logs."""

    command: CommandResult
    findings: Tuple[Finding, ...]
    diagnostics: Tuple[Diagnostic, ...]
    stdout_path: str
    stderr_path: str


class _Cancel:
    """Set by the SIGINT/SIGTERM handler; wakes the watch loop through a self-pipe."""

    def __init__(self, wake_fd: int) -> None:
        self.signum: Optional[int] = None
        self._wake_fd = wake_fd

    def handle(self, signum: int, _frame: object) -> None:
        if self.signum is None:
            self.signum = signum
        try:
            os.write(self._wake_fd, b"x")
        except OSError:
            pass


def _validate(options: GuardOptions) -> None:
    if not options.argv:
        raise UsageError("run: no command given after --")
    for name, value in (("--timeout", options.timeout_s), ("--idle-timeout", options.idle_timeout_s)):
        if value is not None and value <= 0:
            raise UsageError(f"{name}: {value!r} must be more than zero")
    for name, value in (("--kill-grace", options.kill_grace_s), ("leak grace", options.leak_grace_s)):
        if value < 0:
            raise UsageError(f"{name}: {value!r} must not be negative")


class _Run:
    """The state of one guarded run; ``supervise`` drives it step by step."""

    def __init__(self, options: GuardOptions) -> None:
        self.options = options
        self.log_dir = options.log_dir
        self.stdout_path = os.path.join(options.log_dir, STDOUT_LOG)
        self.stderr_path = os.path.join(options.log_dir, STDERR_LOG)
        self.token = spawn.new_tree_token()
        self.protect_pgid = spawn.own_process_group()
        self.helper_pids: List[int] = []
        self.findings: List[Finding] = []
        self.diagnostics: List[Diagnostic] = []
        self.unkillable: Dict[int, ProcessInfo] = {}
        self.leftover_pids: List[int] = []
        self.activity = Activity()
        self.proc = None
        self.pumps: List[StreamPump] = []
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.ended: Optional[float] = None
        self.abort_reason = ""

    # -- tree -----------------------------------------------------------------------------------
    def living_tree(self) -> List[psutil.Process]:
        found = tree.find_tree(
            self.proc.pid, spawn.TOKEN_ENV, self.token, self.started_wall, self.helper_pids
        )
        return [p for p in found if p.pid not in self.unkillable]

    def end(self, procs: Sequence[psutil.Process], grace_s: float) -> None:
        ending = escalate.end_tree(procs, grace_s, self.protect_pgid, self.proc)
        self._record_survivors(ending.survivors)

    def sweep(self) -> None:
        """SIGKILL whatever of the tree appeared or was missed during teardown (bounded rounds)."""
        for _ in range(3):
            extra = self.living_tree()
            if not extra:
                return
            escalate.send(extra, (signal.SIGCONT, signal.SIGKILL), self.protect_pgid)
            self._record_survivors(escalate.wait_gone(extra, escalate.KILL_WAIT_S, self.proc))

    def _record_survivors(self, survivors: Sequence[psutil.Process]) -> None:
        for proc in survivors:
            if proc.pid in self.unkillable:
                continue
            info = tree.describe(proc)
            self.unkillable[proc.pid] = info
            self.findings.append(
                Finding(
                    kind=Kind.UNKILLABLE_PROCESS,
                    rule=GUARD_UNKILLABLE_RULE,
                    severity=Severity.ERROR,
                    path=os.path.join(self.log_dir, PROCESSES_FILE),
                    line=0,
                    message=(
                        f"pid {info.pid} survived SIGKILL (state {info.state}, wchan "
                        f"{info.wchan or '?'}): `{info.cmdline}`; the host may need recycling"
                    ),
                    excerpt=info.kernel_stack,
                )
            )

    # -- clocks ---------------------------------------------------------------------------------
    def watch(self, cancel: _Cancel, wake_fd: int) -> Optional[TimeoutReason]:
        """Block until the command exits (None) or a clock runs out, a cancel or an abort comes."""
        options = self.options
        pidfd = _pidfd(self.proc.pid)
        try:
            while True:
                if self.proc.poll() is not None:
                    return None
                if cancel.signum is not None:
                    return TimeoutReason.CANCELLED
                if options.abort_requested is not None:
                    why = options.abort_requested()
                    if why:
                        self.abort_reason = why
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
                fds = [wake_fd] + ([pidfd] if pidfd is not None else [])
                ready, _, _ = select.select(fds, [], [], max(0.0, min(waits)))
                if wake_fd in ready:
                    _drain(wake_fd)
        finally:
            if pidfd is not None:
                os.close(pidfd)

    # -- after a clock ran out ------------------------------------------------------------------
    def diagnose_and_end(self, reason: TimeoutReason, cancel_signum: Optional[int]) -> None:
        hit = time.monotonic()
        cancelled = reason == TimeoutReason.CANCELLED
        procs = self.living_tree()
        infos = [tree.describe(p) for p in procs]
        python_pids = [p.pid for p in procs if tree.is_python(p)]
        gpu_box: List[Optional[snapshot.GpuSnapshot]] = [None]
        gpu_thread = threading.Thread(
            target=lambda: gpu_box.__setitem__(0, snapshot.gpu_snapshot(GPU_TIMEOUT_S, self.helper_pids)),
            daemon=True,
        )
        gpu_thread.start()
        dumps = snapshot.dump_stacks(
            python_pids, CANCEL_DUMP_TIMEOUT_S if cancelled else DUMP_TIMEOUT_S, self.helper_pids
        )
        native: List[snapshot.StackDump] = []
        if not cancelled:
            pausable = [i.pid for i in infos if i.pid in python_pids and i.state in _PAUSABLE_STATES]
            native = snapshot.dump_stacks(pausable, NATIVE_DUMP_TIMEOUT_S, self.helper_pids, native=True)
        gpu_thread.join(CANCEL_DUMP_TIMEOUT_S if cancelled else GPU_TIMEOUT_S + 0.5)
        self._write_evidence(infos, dumps, native, gpu_box[0])
        self.findings.append(self._hang_finding(reason, cancel_signum, hit - self.started, infos, dumps))
        grace = self.options.kill_grace_s
        if cancelled:
            grace = min(grace, CANCEL_KILL_GRACE_S)
        self.end(procs, grace)
        self.sweep()

    def _write_evidence(
        self,
        infos: Sequence[ProcessInfo],
        dumps: Sequence[snapshot.StackDump],
        native: Sequence[snapshot.StackDump],
        gpu: Optional[snapshot.GpuSnapshot],
    ) -> None:
        cmdlines = {info.pid: info.cmdline for info in infos}
        blocks = []
        for dump, label in [(d, "") for d in dumps] + [(d, " (native frames)") for d in native]:
            head = f"=== pid {dump.pid}{label}: {cmdlines.get(dump.pid, '?')}"
            body = dump.text.rstrip() if dump.text.strip() else ""
            if dump.error:
                body = (body + "\n" if body else "") + f"(py-spy: {dump.error})"
            blocks.append(f"{head}\n{body}\n")
        stacks = "\n".join(blocks) if blocks else "No Python process was found in the tree.\n"
        table = tree.format_table(infos)
        _write_text(os.path.join(self.log_dir, STACKS_FILE), stacks)
        _write_text(os.path.join(self.log_dir, PROCESSES_FILE), table)
        self.diagnostics.append(Diagnostic("Python stacks before any signal (py-spy dump)", stacks))
        self.diagnostics.append(Diagnostic("Processes of the guarded tree before any signal", table))
        if gpu is not None:
            text = gpu.render([info.pid for info in infos])
            _write_text(os.path.join(self.log_dir, GPU_FILE), text)
            self.diagnostics.append(Diagnostic("GPU snapshot (nvidia-smi)", text))

    def _hang_finding(
        self,
        reason: TimeoutReason,
        cancel_signum: Optional[int],
        elapsed: float,
        infos: Sequence[ProcessInfo],
        dumps: Sequence[snapshot.StackDump],
    ) -> Finding:
        chosen, where = _where_it_hung(self.proc.pid, infos, dumps)
        if reason == TimeoutReason.WALL:
            message = f"hung in {where} for {format_duration(self.options.timeout_s or elapsed)}"
        elif reason == TimeoutReason.IDLE:
            message = f"hung in {where}: no output for {format_duration(self.options.idle_timeout_s or 0)}"
        elif reason == TimeoutReason.ABORTED:
            message = f"aborted after {format_duration(elapsed)} on {self.abort_reason}, while in {where}"
        else:
            by = signal_name(cancel_signum) if cancel_signum else "a signal"
            message = f"cancelled ({by}) after {format_duration(elapsed)} while in {where}"
        others = [
            f"pid {dump.pid} in {snapshot.Frame.where(dump.main_thread_frames())}"
            for dump in dumps
            if dump is not chosen and dump.main_thread_frames()
        ]
        if others:
            message += "; also " + ", ".join(others[:_MAX_OTHERS_NAMED])
            if len(others) > _MAX_OTHERS_NAMED:
                message += f" and {len(others) - _MAX_OTHERS_NAMED} more (see {STACKS_FILE})"
        excerpt = chosen.text.strip() if chosen is not None else tree.format_table(infos[:1]).strip()
        return Finding(
            kind=Kind.HANG,
            rule=RULE_FOR_REASON[reason],
            severity=Severity.ERROR,
            path=os.path.join(self.log_dir, STACKS_FILE),
            line=0,
            message=message,
            excerpt=excerpt[:_MAX_EXCERPT],
        )

    # -- after the command exited ---------------------------------------------------------------
    def collect_leftovers(self) -> None:
        exited = time.monotonic()
        deadline = exited + self.options.leak_grace_s
        # A process holding the pipes is in the tree, so an empty tree also means the pipes will close.
        procs = self.living_tree()
        while procs:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            escalate.wait_gone(procs, min(0.1, remaining))
            procs = self.living_tree()
        if not procs:
            return
        now = time.time()
        infos = [tree.describe(p, now) for p in procs]
        table = tree.format_table(infos)
        _write_text(os.path.join(self.log_dir, PROCESSES_FILE), table)
        self.diagnostics.append(Diagnostic("Processes still running after the command exited", table))
        self.end(procs, self.options.kill_grace_s)
        self.sweep()
        ran_on = time.monotonic() - exited
        for info in infos:
            self.leftover_pids.append(info.pid)
            self.findings.append(
                Finding(
                    kind=Kind.LEAKED_PROCESS,
                    rule=GUARD_LEAKED_RULE,
                    severity=Severity.WARNING,
                    path=os.path.join(self.log_dir, PROCESSES_FILE),
                    line=0,
                    message=(
                        f"pid {info.pid} `{info.cmdline}` was still running {format_duration(ran_on)} "
                        f"after the command exited; the guard ended it"
                    ),
                )
            )

    def close_pumps(self, bound_s: float, consoles: Sequence[Console]) -> None:
        """Wait for EOF up to ``bound_s``, then stop the pumps: drain the pipes into the logs, cut the echo.

        After this returns no byte of the command reaches a console any more.
        """
        deadline = time.monotonic() + bound_s
        for pump in self.pumps:
            pump.join(deadline - time.monotonic())
        for pump in self.pumps:
            pump.stop(drain_s=DRAIN_AFTER_STOP_S)
        for console in consoles:
            console.cut(CONSOLE_CUT_WAIT_S)
        for pump in self.pumps:
            if not pump.join(DRAIN_AFTER_STOP_S + 0.5):
                pump.stop(now=True)
                pump.join(0.5)
        if all(pump.finished for pump in self.pumps):
            for stream in (self.proc.stdout, self.proc.stderr):
                stream.close()

    def result(self, reason: Optional[TimeoutReason]) -> CommandResult:
        returncode = self.proc.poll()
        return CommandResult(
            argv=tuple(self.options.argv),
            exit_code=shell_status(returncode) if returncode is not None else None,
            signal=signal_name(-returncode) if returncode is not None and returncode < 0 else None,
            timed_out=reason is not None,
            timeout_reason=reason,
            duration_s=(self.ended or time.monotonic()) - self.started,
            leftover_pids=tuple(self.leftover_pids),
            unkillable_pids=tuple(sorted(self.unkillable)),
            log_dir=os.path.abspath(self.log_dir),
        )


def supervise(options: GuardOptions) -> Supervision:
    """Run ``options.argv`` under the guard and return how it went; raises ``UsageError`` for bad options.

    Saves ``stdout.log`` and ``stderr.log`` byte-exact in ``options.log_dir`` (plus ``stacks.txt``,
    ``processes.txt`` and ``gpu.txt`` when it diagnoses). Installs SIGINT/SIGTERM handlers for the
    duration when called from the main thread: either signal cancels the run (``timeout_reason ==
    "cancelled"``) with the same diagnosis, inside the runner's 10 s window.
    """
    _validate(options)
    log_fds: Dict[str, int] = {}
    try:
        os.makedirs(options.log_dir, exist_ok=True)
        for name in EVIDENCE_FILES:
            _unlink_stale(os.path.join(options.log_dir, name))  # a reused log dir's old evidence
        for stream, name in (("stdout", STDOUT_LOG), ("stderr", STDERR_LOG)):
            log_fds[stream] = _create_exclusive(os.path.join(options.log_dir, name))
    except OSError as err:
        for fd in log_fds.values():
            os.close(fd)
        problem = err.strerror or err
        raise UsageError(f"--log-dir: cannot write logs in {options.log_dir!r}: {problem}") from err
    # The guard's own read-only view of each log: the path is the command's to tamper with.
    own_views = {stream: _reopen_read_only(fd) for stream, fd in log_fds.items()}
    if options.on_log_ready is not None:
        for stream, fd in log_fds.items():
            options.on_log_ready(stream, _reopen_read_only(fd))
    run = _Run(options)
    spawn.become_subreaper()
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
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    cancel = _Cancel(wake_write)
    restore = _install_handlers(cancel.handle)
    reason: Optional[TimeoutReason] = None
    fenced = False
    try:
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        if stop_commands:
            out_console.write_own(workflow.stop_line(stop_token))
            fenced = True
        run.started, run.started_wall = time.monotonic(), time.time()
        env = spawn.child_environment(os.environ, run.token, options.extra_env, options.remove_env)
        run.proc = spawn.start(options.argv, env)
        try:
            run.pumps = [
                StreamPump("stdout", run.proc.stdout.fileno(), log_fds.pop("stdout"),
                           out_console if options.echo else None, run.activity, options.on_output),
                StreamPump("stderr", run.proc.stderr.fileno(), log_fds.pop("stderr"),
                           err_console if options.echo else None, run.activity, options.on_output),
            ]
            for pump in run.pumps:
                pump.start()
            reason = run.watch(cancel, wake_read)
            if reason is None:
                run.ended = time.monotonic()
                run.collect_leftovers()
            else:
                run.diagnose_and_end(reason, cancel.signum)
                run.ended = time.monotonic()
            quick = reason == TimeoutReason.CANCELLED or bool(run.unkillable)  # a survivor may hold pipes
            run.close_pumps(CANCEL_PIPE_DRAIN_S if quick else PIPE_DRAIN_S, consoles)
        except BaseException:
            # Never leave the tree behind, even when the guard itself fails.
            run.end(run.living_tree(), 0.0)
            for pump in run.pumps:
                pump.stop(now=True)
            for console in consoles:
                console.cut(CONSOLE_CUT_WAIT_S)
            raise
    finally:
        for fd in log_fds.values():  # never handed to a pump: the command could not start
            os.close(fd)
        for console in consoles:
            console.cut(CONSOLE_CUT_WAIT_S)
        if options.echo:
            # The report follows on the console; it must not start in the middle of the command's line.
            _end_partial_lines(consoles)
        if fenced:
            out_console.write_own(workflow.resume_line(stop_token))
        restore()
        os.close(wake_read)
        os.close(wake_write)
        for stream, path in (("stdout", run.stdout_path), ("stderr", run.stderr_path)):
            if _restore_log(path, own_views[stream]):
                run.diagnostics.append(Diagnostic(
                    f"{os.path.basename(path)} was replaced during the run; the guard restored its own copy",
                    f"The path {path} no longer named the file the guard wrote; what the command printed "
                    "was copied back from the guard's descriptor.\n",
                ))
            os.close(own_views[stream])
    return Supervision(
        command=run.result(reason),
        findings=tuple(run.findings),
        diagnostics=tuple(run.diagnostics),
        stdout_path=run.stdout_path,
        stderr_path=run.stderr_path,
    )


def _innermost(dump: snapshot.StackDump) -> str:
    # py-spy names methods with their class on 3.11+ ("Popen.poll"), so compare the last part.
    return dump.main_thread_frames()[0].function.rsplit(".", 1)[-1]


def _only_waits(dump: snapshot.StackDump) -> bool:
    return _innermost(dump) in _WAITING_ON_CHILDREN


def _where_it_hung(
    root_pid: int, infos: Sequence[ProcessInfo], dumps: Sequence[snapshot.StackDump]
) -> Tuple[Optional[snapshot.StackDump], str]:
    """The dump to quote and where its main thread is: the command's own, unless it only waits for a child.

    Then the first descendant that is neither waiting for children nor for its peers in a collective.
    """
    with_frames = [dump for dump in dumps if dump.main_thread_frames()]
    root = next((dump for dump in with_frames if dump.pid == root_pid), None)
    chosen = root
    if root is None or _only_waits(root):
        busy = [d for d in with_frames if d.pid != root_pid and not _only_waits(d)]
        busy.sort(key=lambda d: _innermost(d) in _WAITING_ON_PEERS)  # stable: tree order otherwise
        chosen = busy[0] if busy else (root or (with_frames[0] if with_frames else None))
    if chosen is not None:
        where = snapshot.Frame.where(chosen.main_thread_frames())
        return chosen, (where if chosen.pid == root_pid else f"{where} (pid {chosen.pid})")
    info = next((i for i in infos if i.pid == root_pid), infos[0] if infos else None)
    if info is None:
        return None, "an unknown place (the command was gone before it could be inspected)"
    return None, f"`{info.cmdline}` (pid {info.pid}, state {info.state}, wchan {info.wchan or '?'})"


def _install_handlers(handler: Callable[[int, object], None]) -> Callable[[], None]:
    """Route SIGINT and SIGTERM to ``handler`` (main thread only); returns the function that undoes it."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)

    return restore


def _pidfd(pid: int) -> Optional[int]:
    """A pidfd that becomes readable when ``pid`` exits (Linux 5.3+, Python 3.9+), else None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


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


def _end_partial_lines(consoles: Sequence[Console]) -> None:
    """End a console's unfinished last line (the command's), on the descriptor that left it open.

    The guard's report (and, under GitHub, its resume line) comes next. The runner sees a command
    only at the start of a line, and a step often merges stderr into stdout (``2>&1``): a partial
    last line on either stream would swallow the resume token. When the streams stay separate, a
    short pause lets the runner take the finished stderr line first. The saved logs stay as written.
    """
    ended_stderr = False
    for console in consoles:
        if console.wrote and console.last_byte != b"\n":
            console.write_own(b"\n")
            ended_stderr = ended_stderr or console.fd == 2
    if ended_stderr:
        time.sleep(_STREAM_SETTLE_S)


def _unlink_stale(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _create_exclusive(path: str) -> int:
    """A new file at ``path`` for writing, never through a symlink nor into a file someone planted.

    Whatever is at ``path`` is unlinked first (a new file rather than a truncated one also spares
    ext4's flush of a truncated-and-rewritten file on close, auto_da_alloc, seconds after a flood).
    A name re-planted between the unlink and the create fails ``O_EXCL``; a few tries, then OSError.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(_CREATE_TRIES):
        _unlink_stale(path)
        try:
            return os.open(path, flags, 0o644)
        except FileExistsError:
            if attempt == _CREATE_TRIES - 1:
                raise
    raise FileExistsError(path)  # not reached


def _restore_log(path: str, view_fd: int) -> bool:
    """Make ``path`` name the log the guard wrote (``view_fd``) again; True when it had to.

    A command can unlink, rename or replace its log with a symlink to hide what it printed from the
    scan that reads the path afterwards; the guard's descriptor still holds every byte.
    """
    try:
        here = os.lstat(path)
        ours = os.fstat(view_fd)
        if (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino):
            return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        target = _create_exclusive(path)
    except OSError:
        return False
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
    return True


def _write_fully(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reopen_read_only(fd: int) -> int:
    """A new read-only descriptor on the file ``fd`` is open on (not on whatever its path names now)."""
    return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)


def _write_text(path: str, text: str) -> None:
    """Write evidence to a file the guard creates itself (see ``_create_exclusive``); best effort."""
    try:
        fd = _create_exclusive(path)
    except OSError:
        return
    with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write(text)

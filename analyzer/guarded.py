"""The guarded run: supervise the command while its output is scanned live, then the verdict and the report.

    set up (rules compiled, renderers imported, private workflow files) -> supervise
      each log: the pump writes it, a scanner thread follows it (``LogScan`` over ``_Follow``)
      a live finding of an ``--abort-on`` kind: after ``--abort-grace`` the guard ends the tree
    -> the scanners finish the last bytes -> combine -> verdict -> Report

The pump never waits for the scan: it only reports how far the log has grown (``on_output``), and the
scanner reads the bytes back from the file, so the scan may lag by any amount at a bounded memory cost.
When the command ends, the scanners have usually read everything already, so the report is ready at
once instead of after re-reading gigabytes: that is what makes a cancel safe (GitHub gives the step
7.5 s after SIGINT, then 2.5 s after SIGTERM). A scan still behind when time is up is cut short, and a
``scan-incomplete`` finding says how much of which log was left unscanned.

Everything the guard needs after the command ran is imported or built here before it starts: code the
command writes into the guard's own virtualenv while it runs can never run inside the guard.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import hashlib
import hmac
import io
import mmap
import os
import pickle
import secrets
import select
import signal
import struct
import threading
import time
from typing import Any, Callable, Deque, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from . import file_commands
from .durations import format_duration
from .errors import AnalyzerError, CommandNotStarted, UsageError
from .exits import describe_command_exit, signal_name
from .model import (
    GUARD_CANCELLED_RULE,
    GUARD_COMMAND_FAILED_RULE,
    GUARD_COMMAND_NOT_STARTED_RULE,
    SCAN_INCOMPLETE_RULE,
    CommandResult,
    Diagnostic,
    Finding,
    Kind,
    Report,
    Severity,
    TimeoutReason,
)
from .report import github as github_report
from .rules.model import Catalogue, Rule
from .scan import attribution, pipeline, rank  # noqa: F401 - rank: imported now, used by the scan after the run
from .scan.clean import strip_controls
from .scan.match import Match
from .scan.state import MAX_CLOSED_RUNS, AcrossPlace
from .scan.sources import Source
from .supervise.spawn import NOT_FOUND_EXIT_STATUS
from .supervise.guard import STDERR_LOG, STDOUT_LOG, GuardOptions, Supervision, supervise
from .verdict import decide

STREAMS = (("stdout", STDOUT_LOG), ("stderr", STDERR_LOG))
DEFAULT_ABORT_GRACE_S = 60.0
# After a cancel the runner kills the guard 10 s after its SIGINT and supervise may use 6 s of that
# (guard.CANCEL_WINDOW_S); a scan still behind gets this long, then is cut, and the scanner process has
# CUT_SCAN_WAIT_S + _CHILD_ANSWER_S to hand in what it read: at most 2 s in all before the report.
CANCEL_SCAN_WAIT_S = 0.5
# After the guard's own --timeout, --idle-timeout or --abort-on ended the tree, the job's timeout-minutes
# backstop leaves about a minute for the diagnosis and the report (README, "In GitHub Actions"): a scan
# still behind (a command that spammed errors, read at a few MB/s, then hung) gets this long, then is cut
# and says how far it read, instead of holding the report past the backstop and losing it.
TIMED_OUT_SCAN_WAIT_S = 30.0
# After a cut (a signal while waiting for the scan), how long a scanner may take to notice it.
CUT_SCAN_WAIT_S = 0.3
# The follower hands the scanner at least this much, or what came within _BATCH_WAIT_S: fewer, bigger
# windows for the engine while the output trickles.
_BATCH_BYTES = 256 * 1024
_BATCH_WAIT_S = 0.02
# Arrival times of lines: one point per _CLOCK_STEP_S of output at first; past _CLOCK_POINTS points a
# log keeps every other one and its step doubles, so a log of any length keeps a bounded list.
_CLOCK_STEP_S = 0.05
_CLOCK_POINTS = 10_000
_PENDING_POINTS = 4_096
_JOIN_SLICE_S = 0.1
_READS_KEPT = 4
CHUNK_LOOK_BYTES = 1 << 20
_FIRST_LOOK_BYTES = 4096
# The scanner process: per log (bytes in it, arrival time) in shared memory, then the state (run,
# finish, cut), the scanner's pid and its done flag; length-prefixed signed pickles come back.
_SLOT = struct.Struct("<qd")
_FIELD = struct.Struct("<q")
_TIME = struct.Struct("<d")
_STATE_AT, _PID_AT, _DONE_AT = 2 * _SLOT.size, 2 * _SLOT.size + 8, 2 * _SLOT.size + 16
_SHARED = struct.Struct("<" + "qd" * 2 + "qqq")
_FINISH, _CUT = 1, 2
_FRAME_HEAD = struct.Struct(">I")
_MAC_BYTES = 32  # HMAC-SHA256
_POLL_S = 0.01
_GUARD_CHECK_POLLS = 50
_CHILD_ANSWER_S = 1.2  # for the scanner process to get the CPU, pickle and send what it has after a cut
# The variables the action (action.yml) sets for its own steps: the venv path among them. The command
# never needs them, and the venv's path is where it could plant code for the guard.
ACTION_VARIABLES = (
    "GHG_VENV",
    "GHG_PYTHON",
    "GHG_LOG_DIR",
    "GHG_REPORT",
    "GHG_RUN",
    "GHG_SHELL",
    "GHG_WORKING_DIRECTORY",
    "GHG_TIMEOUT",
    "GHG_IDLE_TIMEOUT",
    "GHG_KILL_GRACE",
    "GHG_CONFIG",
    "GHG_FAIL_ON",
    "GHG_ALLOW_WORKFLOW_COMMANDS",
    "GHG_ABORT_ON",
    "GHG_ABORT_GRACE",
    "GHG_ANNOTATION_SLOTS",
    "GHG_NAME",
)
# How long a live --abort-on event may wait for the other log's scan to catch up with it before it is sent
# without a place in that log (the scan of a flooded log may lag for long).
EVENT_PLACE_WAIT_S = 0.5
IN_FORCE_LOOK_BYTES = 64 << 10
# How much later than a stdout chunk a stderr chunk printed before it may be timed (each pump thread
# times its chunk once it has the GIL back): the tests that ended that close before are judged too.
ACROSS_SLACK_S = _CLOCK_STEP_S
# All the reading after stderr's events for their tests' outcomes, per report.
ACROSS_READ_BUDGET = 256 << 20
# The events of a log whose scan was cut inside a window that still go in the report (each is a distinct
# event: the scan reports an event the first time it sees it).
MAX_SEEN_EVENTS = 256
MAX_TIMELINE_RUNS = 4096  # passing test runs of stdout kept for stderr's events (_RunTimeline)
# The most events that may each trigger --abort-on (one per test; outside a test, each distinct one the
# scan reports: a handled one on stderr, where no test line is, must not hide a later one), and how far
# after an event the log is read for its test's outcome when its grace ends.
MAX_ABORT_EVENTS = 1024
ABORT_LOOK_BYTES = 8 << 20
ABORT_DESCRIPTION = "{message} ({kind} at {where}; still running {grace} later)"
SCAN_CUT_SHORT = (
    "the live scan of {name} was cut short to write the report in time: it read {read:,} of {total:,} "
    "bytes ({lines:,} lines); findings after that point are missing"
)
SCAN_FAILED = "the live scan of {name} stopped after {read:,} of {total:,} bytes: {error}"
SCAN_NO_ANSWER = "the live scan of {name} gave no findings in time: its {total:,} bytes are unscanned"
# The hang's test as its stack showed it, when no line of the log named it (pytest -s, -q, xdist).
HANG_TEST_ON_STACK = "; in test {test} (on its stack)"
HANG_TEST_IN_LOG = "; in test {test} (the test the log shows running)"
EARLY_REPORT_TITLE = "Early report: the guard was still ending the command's tree"
EARLY_REPORT = (
    "The guard wrote this report when the clock ran out or the cancel came, before it had ended the"
    " command's tree and scanned the logs, and replaces it with the full report when it is done. If this"
    " is what you read, the guard itself was killed meanwhile (a runner's cancel window closed): the"
    " findings are the guard's own, the logs in {log_dir} were not scanned, and the tree may still have"
    " been running.\n"
)
SCAN_SHRANK = "{name} shrank while the command ran (something truncated it); the scan stopped at {read:,}"


def _cut_by_the_clock(finding: Finding) -> bool:
    """Whether a scan-incomplete finding says the scan was cut (or gave nothing) for lack of time."""
    return any(template.split("{name}")[1].split("{")[0] in finding.message
               for template in (SCAN_CUT_SHORT, SCAN_NO_ANSWER))


def parse_abort_kinds(text: Optional[str]) -> FrozenSet[Kind]:
    """``--abort-on`` as kinds: comma-separated ``Kind`` values; raises ``UsageError`` naming a bad one."""
    if text is None or not text.strip():
        return frozenset()
    known = {kind.value: kind for kind in Kind}
    kinds = set()
    for part in text.split(","):
        name = part.strip()
        if name not in known:
            raise UsageError(f"--abort-on {name!r}: expected finding kinds from: {', '.join(known)}")
        kinds.add(known[name])
    return frozenset(kinds)


_Point = Tuple[int, float]  # (bytes in the log, time.monotonic() when they had arrived)


class _LineClock:
    """When each line of one log arrived: ``(complete lines, monotonic time)`` points, bounded."""

    def __init__(self) -> None:
        self.lines: List[int] = []
        self.times: List[float] = []
        self._step = _CLOCK_STEP_S

    def add(self, lines: int, arrived: float) -> None:
        if self.times and arrived - self.times[-1] < self._step:
            self.lines[-1] = lines  # the same step: its lines arrived by the step's first time
            return
        self.lines.append(lines)
        self.times.append(arrived)
        if len(self.times) > _CLOCK_POINTS:
            del self.lines[::2], self.times[::2]
            self._step *= 2

    def lines_before(self, when: float) -> int:
        """How many lines had surely arrived before ``when`` (a point's lines came within a step of it)."""
        index = bisect.bisect_right(self.times, when - self._step)
        return self.lines[index - 1] if index else 0

    def __call__(self, line: int) -> float:
        """``time.monotonic()`` by which line ``line`` (1-based) had arrived; 0.0 when nothing did."""
        if not self.times:
            return 0.0
        index = bisect.bisect_left(self.lines, line)
        return self.times[min(index, len(self.times) - 1)]


class _ByteClock:
    """When each byte of one log arrived: ``(bytes in the log, monotonic time)`` at every offer, exact
    (the pump's own times, not a step's), so that an event on stderr is set among stdout's lines to the
    chunk; past ``_CLOCK_POINTS`` points every other one is dropped, so a log of any length keeps a
    bounded list and only loses precision."""

    def __init__(self) -> None:
        # Nothing had arrived when the log was opened: the first chunk's bytes arrived after that.
        self.totals: List[int] = [0]
        self.times: List[float] = [time.monotonic()]
        self.thinned = False  # points were dropped: a byte is known to have arrived between two points

    def add(self, total: int, arrived: float) -> None:
        self.totals.append(total)
        self.times.append(arrived)
        if len(self.times) > _CLOCK_POINTS:
            del self.totals[1::2], self.times[1::2]  # an odd count: the first and the newest stay
            self.thinned = True

    def arrival(self, offset: int) -> Optional[Tuple[int, float]]:
        """When the byte at ``offset`` had arrived, with the end of the bytes that came with it (by that
        time); None when it has not been offered."""
        index = bisect.bisect_right(self.totals, offset)
        return (self.totals[index], self.times[index]) if index < len(self.times) else None

    def bytes_by(self, when: float) -> int:
        """How many bytes had arrived by ``when``."""
        index = bisect.bisect_right(self.times, when)
        return self.totals[index - 1] if index else 0

    def arrival_bounds(self, offset: int) -> Optional[Tuple[float, float]]:
        """The byte at ``offset`` arrived after the first time and by the second: its chunk's time while
        every point is kept, else the points around it; None when it has not been offered."""
        index = bisect.bisect_right(self.totals, offset)
        if index >= len(self.times):
            return None
        return (self.times[index - 1] if self.thinned else self.times[index], self.times[index])


class _Follow:
    """A binary file over the guard's log that follows it: ``read`` blocks until the pump wrote more.

    The pump calls ``offer(total, arrived)`` after each chunk (cheap: a lock, a store, maybe a
    notify); ``read`` returns bytes up to the offered total with ``os.pread`` on the guard's own read
    descriptor, and EOF once ``finish`` or ``cut`` was called and it has read up to the final total
    (``cut``: at once). Only the reader's position and a few clock points are held, whatever the lag.
    """

    def __init__(self, fd: int) -> None:
        self._fd: Optional[int] = fd
        self._cond = threading.Condition(threading.Lock())
        self.written = 0
        self.read_bytes = 0
        self.lines = 0
        self.shrank = False
        self._final = False
        self._cut = False
        self._want: Optional[int] = None
        self._points: Deque[Tuple[int, float]] = collections.deque()
        self.clock = _LineClock()
        self._arrivals = _ByteClock()
        # (offset, complete lines before it) of the last reads: where a line the engine just matched is.
        self._reads: Deque[Tuple[int, int]] = collections.deque(maxlen=_READS_KEPT)

    # -- the pump's side ------------------------------------------------------------------------
    def offer(self, total: int, arrived: float) -> None:
        with self._cond:
            if total <= self.written:
                return
            points = self._points
            if points and (arrived - points[-1][1] < _CLOCK_STEP_S or len(points) >= _PENDING_POINTS):
                points[-1] = (total, points[-1][1])
            else:
                points.append((total, arrived))
            self._arrivals.add(total, arrived)
            self.written = total
            if self._want is not None and total >= self._want:
                self._cond.notify()

    @property
    def fd(self) -> Optional[int]:
        return self._fd

    def arrival(self, offset: int) -> Optional[Tuple[int, float]]:
        """When the byte at ``offset`` arrived, and the end of what came with it (``_ByteClock.arrival``);
        any thread."""
        with self._cond:
            return self._arrivals.arrival(offset)

    def bytes_by(self, when: float) -> int:
        """How many bytes had arrived by ``when`` (``_ByteClock.bytes_by``); any thread."""
        with self._cond:
            return self._arrivals.bytes_by(when)

    def arrival_bounds(self, offset: int) -> Optional[Tuple[float, float]]:
        """``_ByteClock.arrival_bounds``; any thread."""
        with self._cond:
            return self._arrivals.arrival_bounds(offset)

    def unread_since(self) -> Optional[float]:
        """When the oldest byte offered but not yet read arrived (None when the reader is caught up)."""
        with self._cond:
            if self.written <= self.read_bytes or not self._points:
                return None
            return self._points[0][1]

    def finish(self) -> None:
        """No more output will come: read to the last offered total, then EOF."""
        with self._cond:
            self._final = True
            self._cond.notify()

    def cut(self) -> None:
        """Time is up: the next ``read`` returns EOF whatever is left."""
        with self._cond:
            self._cut = self._final = True
            self._cond.notify()

    @property
    def was_cut(self) -> bool:
        return self._cut and self.read_bytes < self.written

    # -- the scanner's side ---------------------------------------------------------------------
    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts = []
            while True:
                part = self.read(1 << 20)
                if not part:
                    return b"".join(parts)
                parts.append(part)
        with self._cond:
            self._wait_for_data()
            if self._cut or self._fd is None:
                return b""
            start = self.read_bytes
            end = min(self.written, start + size)
            passed = []
            while self._points and self._points[0][0] <= end:
                passed.append(self._points.popleft())
            partial = self._points[0] if self._points else None
        if end <= start:
            return b""
        try:
            data = os.pread(self._fd, end - start, start)
        except OSError:
            data = b""
        if len(data) < end - start:
            self.shrank = True  # only the pump writes this file, and never shortens it
            with self._cond:
                self._cut = self._final = True
            return b""
        self._reads.append((start, self.lines))
        self._clock_points(data, start, passed, partial)
        self.read_bytes = end
        return data

    def read_within(self, size: int, wait_s: float) -> Optional[bytes]:
        """``read``, or None when no byte came within ``wait_s`` (the scan's early look at a line that
        a progress display keeps rewriting with ``\\r``: ``scan.engine.EARLY_WAIT_S``)."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while not self._final and self.written <= self.read_bytes:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._want = self.read_bytes + 1
                self._cond.wait(left)
            self._want = None
        return self.read(size)

    def line_offset(self, line: int, hint: Optional[Tuple[int, int]] = None) -> int:
        """Where line ``line`` (1-based) of the log starts, for a line of the last few reads (the scan
        thread's, where the engine matched it); the start of the oldest read kept for an older line.
        ``hint``: (a line, where it starts) from an earlier call, to count on from, not from the read's
        start (a flood of matches in one read would count its lines again for each)."""
        reads = list(self._reads)
        for start, before in reversed(reads):
            if before > line - 1:
                continue
            offset, skip = start, line - 1 - before
            if hint is not None and before < hint[0] <= line and hint[1] >= start:
                offset, skip = hint[1], line - hint[0]
            size = _FIRST_LOOK_BYTES  # most often the next line or so: read little first
            while skip > 0 and offset < self.read_bytes:
                chunk = os.pread(self._fd, min(size, self.read_bytes - offset), offset) \
                    if self._fd is not None else b""
                if not chunk:
                    break
                count = chunk.count(b"\n")
                if count < skip:
                    skip -= count
                    offset += len(chunk)
                    size = min(2 * size, CHUNK_LOOK_BYTES)
                    continue
                at = -1
                for _ in range(skip):
                    at = chunk.index(b"\n", at + 1)
                return offset + at + 1
            return offset
        return reads[0][0] if reads else 0

    def _wait_for_data(self) -> None:
        """Block (lock held) until there is a batch to read, the end came, or the scan is cut."""
        if self.written > self.read_bytes or self._final:
            return
        self._want = self.read_bytes + 1
        while not self._final and self.written < self._want:
            self._cond.wait()
        self._want = self.read_bytes + _BATCH_BYTES
        deadline = time.monotonic() + _BATCH_WAIT_S
        while not self._final and self.written < self._want:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._cond.wait(left)
        self._want = None

    def _clock_points(
        self, data: bytes, start: int, passed: Sequence[_Point], partial: Optional[_Point],
    ) -> None:
        offset = 0
        for total, arrived in passed:
            self.lines += data.count(b"\n", offset, total - start)
            offset = total - start
            self.clock.add(self.lines, arrived)
        self.lines += data.count(b"\n", offset)
        if partial is not None and offset < len(data):
            self.clock.add(self.lines, partial[1])

    def close(self) -> None:
        with self._cond:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> "_Follow":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _LiveLog:
    """One stream's live scan: a follower over its log and the thread that runs ``LogScan`` on it."""

    def __init__(
        self,
        display_path: str,
        fd: int,
        catalogue: Catalogue,
        prepared: pipeline.Prepared,
        on_event: Callable[[Finding], None],
        tests_from: Optional[_Follow] = None,
        timeline: bool = False,
    ) -> None:
        """``tests_from``: the follower of the log whose test lines this log's events are set among;
        ``timeline``: keep this log's runs for another log's events (``_RunTimeline``)."""
        self.display_path = display_path
        self.follow = _Follow(fd)
        self.timeline = _RunTimeline(self.follow) if timeline else None
        self.error: Optional[str] = None
        self.seen: List[Finding] = []  # appended by the scan thread only; read once it is cut
        self._on_event = on_event
        self._across = None if tests_from is None else _Across(self.follow, tests_from)
        self.scan = pipeline.LogScan(
            # The command's output came through a pipe: no terminal wrapped it, and the live scan must
            # not wait for 64 KiB of it before matching the first line.
            Source(display_path, lambda: self.follow, may_be_wrapped=False), catalogue, engine=prepared,
            on_event=self._event, across=self._across, on_run=self.timeline,
        )
        self.thread = threading.Thread(target=self._run, name=f"guard-scan-{os.path.basename(display_path)}",
                                       daemon=True)
        self.thread.start()

    def _event(self, finding: Finding) -> None:
        if len(self.seen) < MAX_SEEN_EVENTS:
            self.seen.append(finding)
        self._on_event(finding)

    def _run(self) -> None:
        try:
            self.scan.run()
        except AnalyzerError as err:
            self.error = str(err)
        except Exception as err:  # a scanner bug must cost this log's findings, never the report
            self.error = f"{type(err).__name__}: {err}"
        finally:
            self.follow.cut()
            self.follow.close()
            if self._across is not None:
                self._across.close()

    def incomplete(self, severity: Severity) -> Optional[Finding]:
        """The finding that says this log was not scanned to its end, or None when it was."""
        follow, name = self.follow, os.path.basename(self.display_path)
        counts = {"name": name, "read": follow.read_bytes, "total": follow.written, "lines": follow.lines}
        if self.error is not None:
            message = SCAN_FAILED.format(error=self.error, **counts)
        elif follow.shrank:
            message = SCAN_SHRANK.format(**counts)
        elif self.thread.is_alive() or follow.was_cut:
            message = SCAN_CUT_SHORT.format(**counts)
        else:
            return None
        return Finding(
            kind=Kind.SCAN_INCOMPLETE,
            rule=SCAN_INCOMPLETE_RULE,
            severity=severity,
            path=self.display_path,
            line=0,
            message=message,
        )


class _Across:
    """``state.Across`` for the guard's stderr: the test stdout showed running when an event's line
    arrived (pytest ``-v -s`` prints its test lines on stdout, the code's warnings and tracebacks go to
    stderr). The line's arrival comes from stderr's byte clock, stdout's bytes by then from stdout's,
    and the test in force from at most ``IN_FORCE_LOOK_BYTES`` of stdout before that point, read on a
    descriptor of its own (stdout's scan closes its own when it ends, maybe before stderr's)."""

    def __init__(self, own: _Follow, other: _Follow) -> None:
        self._own = own
        self._other = other
        self._fd: Optional[int] = None if other.fd is None else os.dup(other.fd)
        # A flood of matches costs what their distinct places cost: the last line found (counted on
        # from), and the last places in the other log with what they gave.
        self._hint: Optional[Tuple[int, int]] = None
        self._last: Optional[Tuple[Tuple[int, int], Optional[AcrossPlace]]] = None
        self._span: Tuple[int, int] = (0, 0)  # the lines that start in the chunk of the last place

    def __call__(self, match: Match) -> Optional[AcrossPlace]:
        """The test in force when the line arrived, and where the other log stood ``ACROSS_SLACK_S``
        before with the test in force there: each pump times its own pipe once its thread has the GIL
        back, so a stderr line printed at a test's end may be timed after the next test's start (measured:
        up to 6.5 ms after, with torch's store timeout logged just before its test PASSED). It is named
        after the later test, and handled only if every test from the earlier point on passed. With no
        test in force (pytest -s or -q name none on stdout), when the line arrived: ``_RunTimeline``."""
        if self._last is not None and self._span[0] <= match.line < self._span[1]:
            return self._last[1]  # a line of the same chunk: it arrived at the same time
        try:
            offset = self._own.line_offset(match.line, self._hint)
            self._hint = (match.line, offset)
            arrived = self._own.arrival(offset)
            if arrived is None:
                return None
            end, when = arrived
            self._span = (match.line, match.line + self._lines_starting(offset, end))
            places = (self._other.bytes_by(when), self._other.bytes_by(when - ACROSS_SLACK_S))
            if self._last is not None and self._last[0] == places and self._last[1] is not None \
                    and self._last[1].test is not None:
                return self._last[1]
            test = self._test_at(places[0])
            if test is None:
                bounds = self._own.arrival_bounds(offset)
                found = None if bounds is None else AcrossPlace(None, (places[1], None), bounds)
            else:
                found = AcrossPlace(test, (places[1], self._test_at(places[1])), None)
            self._last = (places, found)
            return found
        except (OSError, ValueError):
            return None

    def _lines_starting(self, offset: int, end: int) -> int:
        """How many lines start in this log from ``offset`` (a line start) to ``end``."""
        fd = self._own.fd
        if fd is None or end <= offset:
            return 0
        return 1 + os.pread(fd, end - offset - 1, offset).count(b"\n")

    def _test_at(self, at: int) -> Optional[str]:
        fd = self._fd
        if fd is None:
            return None
        lo = max(0, at - IN_FORCE_LOOK_BYTES)
        return attribution.running_test(os.pread(fd, at - lo, lo), from_start=lo == 0)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class _RunTimeline:
    """``state.OnRun`` for the guard's stdout: when each of its test runs started and printed a passing
    verdict, by the pump's clock. An event on stderr in no test stdout named (pytest ``-s`` and ``-q`` name
    no running test there) is then judged as its own log's run would judge it: handled if it arrived
    inside a run that passed, more than ``ACROSS_SLACK_S`` after the run's start and before its verdict.
    A run that shows no start (pytest ``-q``) counts from the log's start only when it is the log's first:
    what follows a verdict is that run's exit path (an atexit error) until another run starts. Only the
    newest ``MAX_TIMELINE_RUNS`` passing runs are kept; an event before them is not judged."""

    def __init__(self, follow: _Follow) -> None:
        self._follow = follow
        self._hint: Optional[Tuple[int, int]] = None
        self._started: Optional[float] = 0.0  # by when the run in progress started (None: not known)
        # (started by, verdict arrived after, the verdict) of passing runs
        self.runs: Deque[Tuple[float, float, Match]] = collections.deque(maxlen=MAX_TIMELINE_RUNS)
        # (started by, kept in runs) of the newest verdicts: the state tells "inner" once for each verdict it
        # finds an inner run's, newest first (those since its own run last started, or, after sessions
        # rooted in pytester's sandbox, across their starts too), so the newest are the ones to take back.
        self._closed: Deque[Tuple[Optional[float], bool]] = collections.deque(maxlen=MAX_CLOSED_RUNS)

    def __call__(self, what: str, match: Optional[Match], passed: bool) -> None:
        if what == "inner":
            if self._closed:
                self._started, kept = self._closed.pop()
                if kept and self.runs:
                    self.runs.pop()
            return
        bounds = None if match is None else self._bounds(match)
        if what == "start":
            self._started = None if bounds is None else bounds[1]
            return
        started, self._started = self._started, None
        kept = passed and started is not None and bounds is not None
        if kept:
            self.runs.append((started, bounds[0], match))
        self._closed.append((started, kept))

    def _bounds(self, match: Match) -> Optional[Tuple[float, float]]:
        try:
            offset = self._follow.line_offset(match.line, self._hint)
        except (OSError, ValueError):
            return None
        self._hint = (match.line, offset)
        return self._follow.arrival_bounds(offset)

    def verdict_over(self, arrived: Tuple[float, float]) -> Optional[Match]:
        """The passing verdict of the run an event whose lines arrived within ``arrived`` came in."""
        for started, verdict_after, verdict in self.runs:
            if started + ACROSS_SLACK_S <= arrived[0] and arrived[1] + ACROSS_SLACK_S < verdict_after:
                return verdict
        return None


def _settle_runs(result: pipeline.LogFindings, timeline: _RunTimeline) -> pipeline.LogFindings:
    """``result`` with each event on no test's lines that arrived inside a passing run of the other log
    (``_RunTimeline``) handled by that run's verdict."""
    if not timeline.runs or all(event.arrived is None for event in result.events):
        return result
    events = []
    for event in result.events:
        if event.arrived is not None and event.test is None and event.run_passed is None:
            verdict = timeline.verdict_over(event.arrived)
            if verdict is not None:
                event = dataclasses.replace(event, run_passed=verdict)
        events.append(event)
    return dataclasses.replace(result, events=tuple(events))


def _live_logs(
    paths: Mapping[str, str],
    fds: Mapping[str, int],
    catalogue: Catalogue,
    prepared: Mapping[str, pipeline.Prepared],
    on_event: Callable[[Finding], None],
) -> Dict[str, _LiveLog]:
    """A live scan per log (each takes its descriptor); stderr's events are set among stdout's tests."""
    logs: Dict[str, _LiveLog] = {}
    for stream, _ in STREAMS:
        if stream in fds:
            tests_from = logs["stdout"].follow if stream == "stderr" and "stdout" in logs else None
            logs[stream] = _LiveLog(
                paths[stream], fds[stream], catalogue, prepared[stream], on_event, tests_from,
                timeline=stream == "stdout" and "stderr" in fds,
            )
    return logs


class _EventGate:
    """Which live findings may trigger ``--abort-on``: errors of the named kinds, the first of each test
    (outside a test, each one), at most ``MAX_ABORT_EVENTS``. The scanner process filters with it before
    it sends an event, and ``_AbortOn`` with it for the scans in this process."""

    def __init__(self, kinds: FrozenSet[Kind]) -> None:
        self.kinds = kinds
        self._lock = threading.Lock()
        self._tests: Set[str] = set()
        self._taken = 0

    def admit(self, finding: Finding) -> bool:
        if finding.kind not in self.kinds or finding.severity is not Severity.ERROR:
            return False
        with self._lock:
            if finding.test in self._tests or self._taken >= MAX_ABORT_EVENTS:
                return False
            self._taken += 1
            if finding.test is not None:
                self._tests.add(finding.test)
            return True


class _AbortOn:
    """``--abort-on``: the live error findings of the named kinds, and when the grace of the first ends.

    A test suite that tests failure handling prints these events inside a test that then passes (torch's
    store tests: "Timed out after 1 seconds waiting for clients"): the test handled it. A trigger whose
    test passed before its grace ran out (``attribution.event_handled``: in the event's log from its line
    when the scan put it in a test, else in the other log from the line in force when it arrived) is
    withdrawn, and a later event may trigger. A failed test, or a verdict the command does not exit
    after, still ends the run. ``log_fd(path)`` gives a read-only descriptor on the log at ``path``.
    """

    def __init__(
        self, kinds: FrozenSet[Kind], grace_s: float, log_fd: Callable[[str], Optional[int]] = lambda _: None
    ) -> None:
        self.kinds = kinds
        self.grace_s = grace_s
        self._log_fd = log_fd
        self._gate = _EventGate(kinds)
        self._lock = threading.Lock()
        self._triggers: Deque[Tuple[Finding, Mapping[str, int], float]] = collections.deque()

    def on_event(self, finding: Finding, offsets: Optional[Mapping[str, int]] = None) -> None:
        """A live finding; ``offsets``: per log path, where to look for the run going on after it (its
        own log: where its line starts), or None when unknown (the trigger is never withdrawn)."""
        if not self._gate.admit(finding):
            return
        with self._lock:
            self._triggers.append((finding, dict(offsets or {}), time.monotonic()))

    def abort_requested(self) -> Optional[str]:
        while True:
            with self._lock:
                if not self._triggers:
                    return None
                finding, offsets, seen = self._triggers[0]
            if time.monotonic() - seen < self.grace_s:
                return None
            if finding.kind is Kind.TEST_FAILURE or not self._handled(finding, offsets):
                break
            with self._lock:
                self._triggers.popleft()
        return ABORT_DESCRIPTION.format(
            message=finding.message,
            kind=finding.kind.value,
            where=f"{os.path.basename(finding.path)}:{finding.line}",
            grace=format_duration(self.grace_s),
        )

    def _handled(self, finding: Finding, offsets: Mapping[str, int]) -> bool:
        for path, offset in offsets.items():
            fd = self._log_fd(path)
            if fd is None:
                continue
            try:
                after = os.pread(fd, ABORT_LOOK_BYTES, offset)
            except OSError:
                continue
            lines = after.split(b"\n")
            if path == finding.path and finding.test is not None:
                if attribution.event_handled(lines[1:], finding.test):
                    return True
            elif path != finding.path and finding.test is None and attribution.event_handled(lines, None):
                return True
        return False


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What one log's live scan handed in: its state for ``combine`` (None if it could not finish)."""

    result: Optional[pipeline.LogFindings]
    incomplete: Optional[Finding]
    clock_lines: Tuple[int, ...] = ()
    clock_times: Tuple[float, ...] = ()
    # A scan cut inside a window has no state to rank; the events it had seen by then, as first seen
    # (unfolded across tests, never demoted as handled), still say what went wrong in what it read.
    seen: Tuple[Finding, ...] = ()

    def clock(self) -> _LineClock:
        clock = _LineClock()
        clock.lines, clock.times = list(self.clock_lines), list(self.clock_times)
        return clock


def _collect(
    logs: Mapping[str, _LiveLog], bound_s: Optional[float], is_cut: Callable[[], bool], severity: Severity
) -> Dict[str, _Outcome]:
    """Join the scanners until they are done, ``bound_s`` passed or ``is_cut()``; then cut them.

    A cut scanner stops at its next read, so it gets ``CUT_SCAN_WAIT_S`` to hand in what it has.
    """
    deadline = None if bound_s is None else time.monotonic() + bound_s
    alive = [log for log in logs.values() if log.thread.is_alive()]
    while alive and not is_cut():
        left = _JOIN_SLICE_S if deadline is None else min(_JOIN_SLICE_S, deadline - time.monotonic())
        if left <= 0:
            break
        alive[0].thread.join(left)
        alive = [log for log in alive if log.thread.is_alive()]
    if alive:
        for log in alive:
            log.follow.cut()
        grace = time.monotonic() + CUT_SCAN_WAIT_S
        for log in alive:
            log.thread.join(max(0.0, grace - time.monotonic()))
    outcomes = {}
    stdout = logs.get("stdout")
    # stdout's runs judge stderr's events once stdout's scan is over (its timeline whole)
    timeline = None if stdout is None or stdout.thread.is_alive() else stdout.timeline
    for stream, log in logs.items():
        done = not log.thread.is_alive()  # a scanner still inside a window: its state is not ours to read
        result = log.scan.result() if done else None
        if result is not None and stream == "stderr" and timeline is not None:
            result = _settle_runs(result, timeline)
        outcomes[stream] = _Outcome(
            result,
            log.incomplete(severity),
            tuple(log.follow.clock.lines) if done else (),
            tuple(log.follow.clock.times) if done else (),
            () if done else tuple(log.seen[:MAX_SEEN_EVENTS]),
        )
    return outcomes


class _RulePickler(pickle.Pickler):
    """Pickles rules by their place in the catalogue: the parent has the very same objects."""

    def __init__(self, file: Any, rules: Sequence[Rule]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._index = {id(rule): index for index, rule in enumerate(rules)}

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Rule):
            index = self._index.get(id(obj))
            return None if index is None else index
        return None


class _RuleUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, rules: Sequence[Rule]) -> None:
        super().__init__(file)
        self._rules = rules

    def persistent_load(self, pid: Any) -> Any:
        return self._rules[pid]


def _frame(message: Any, rules: Sequence[Rule], key: bytes) -> bytes:
    """A length-prefixed, HMAC-signed pickle: the guard unpickles only what its own scanner signed."""
    body = io.BytesIO()
    _RulePickler(body, rules).dump(message)
    data = body.getvalue()
    return _FRAME_HEAD.pack(len(data)) + hmac.new(key, data, hashlib.sha256).digest() + data


def _write_all(fd: int, data: bytes, timeout_s: Optional[float] = None) -> bool:
    """Write ``data`` to a pipe (blocking or not) within ``timeout_s``; False when it could not."""
    view = memoryview(data)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([], [fd], [], left)
        except InterruptedError:
            continue
        except OSError:
            return False
    return True


class _ScanChild:
    """The live scan in a child process forked before the command starts, so its GIL is not the pump's.

    In one process the scanner's Python work holds the GIL the pump needs after every read and write:
    measured, that made the pump of a 268 MB flood 3x slower. Here the pump's ``offer`` only stores
    two numbers in memory shared with the child (no system call, no lock); the child polls them, runs
    a follower and a scanner thread per log (``_LiveLog``, on its own descriptors), sends the first
    ``--abort-on`` event as soon as it is seen, and its results when the guard sets the shared state
    to finish (or cut): pickled, rules sent as their place in the catalogue both processes share.

    The command runs as the same user and can open a pipe of ours through ``/proc/PID/fd``, but not
    anonymous shared memory: so the totals and the finish or cut come through memory, and the pipe
    back carries frames signed with a key that only the two processes hold; a frame that fails the
    check ends the listening, and the guard then scans the logs itself. The child ignores the
    runner's signals and ends when the guard is gone.
    """

    def __init__(
        self,
        fds: Mapping[str, int],
        paths: Mapping[str, str],
        catalogue: Catalogue,
        prepared: Mapping[str, pipeline.Prepared],
        abort_kinds: FrozenSet[Kind],
    ) -> None:
        self.rules = tuple(catalogue.rules)
        self._key = secrets.token_bytes(32)
        self._shm = mmap.mmap(-1, _SHARED.size)  # anonymous and shared with the child across fork
        res_read, res_write = os.pipe()
        guard = (os.getpid(), _start_tick(os.getpid()))
        # Forked twice: the scanner is not the guard's child, so the guard's walk of the command's tree
        # (which takes the guard's children for the command's when the command was gone before it
        # could be inspected) never counts it.
        pid = os.fork()
        if pid == 0:  # the intermediate: forks the scanner and exits at once
            status = 1
            try:
                if os.fork() == 0:
                    os.close(res_read)
                    _child_main(self._shm, res_write, fds, paths, catalogue, prepared, abort_kinds,
                                self._key, guard)
                status = 0
            finally:
                os._exit(status)
        os.close(res_write)
        try:
            os.waitpid(pid, 0)  # the intermediate, gone at once
        except ChildProcessError:
            pass  # a reaper of the guard's collected it first
        os.set_blocking(res_read, False)
        self._res = res_read
        self._buffer = bytearray()  # appended in place: a big result arrives in many reads
        self._eof = False  # the pipe from the child has ended
        self._over = False  # nothing more will be taken from it: the result came, a frame failed, or EOF
        self._closed = False
        self._result: Optional[Dict[str, _Outcome]] = None
        self.events: List[Tuple[Finding, Dict[str, int]]] = []

    def offer(self, index: int, total: int, arrived: float) -> None:
        """From a pump thread: how far a log has grown. Two stores into shared memory.

        The time goes first and the total second, and the child reads them the other way round, so on
        x86 (stores and loads kept in order) a total is never paired with an older time; the child
        skips a total whose time is not written yet. Where the CPU reorders, a pair may be one chunk
        apart, which moves a line's time by about one pump read.
        """
        offset = index * _SLOT.size
        _TIME.pack_into(self._shm, offset + 8, arrived)
        _FIELD.pack_into(self._shm, offset, total)

    def _field(self, offset: int) -> int:
        return _FIELD.unpack_from(self._shm, offset)[0]

    def poll(self) -> None:
        """Take in whatever the child sent (events, the result) without waiting."""
        while not self._eof:
            try:
                data = os.read(self._res, 1 << 20)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self._eof = True
                break
            self._buffer += data
        # Frames are read after the pipe's end too: the child writes its result and exits, so the result
        # and the end of the pipe often come in one poll.
        head = _FRAME_HEAD.size + _MAC_BYTES
        while len(self._buffer) >= head and not self._over:
            (size,) = _FRAME_HEAD.unpack_from(self._buffer)
            if len(self._buffer) < head + size:
                break
            mac = bytes(self._buffer[_FRAME_HEAD.size: head])
            body = bytes(self._buffer[head: head + size])
            del self._buffer[: head + size]
            if not hmac.compare_digest(mac, hmac.new(self._key, body, hashlib.sha256).digest()):
                self._over = True  # not from our scanner: stop listening, the end scans here instead
                break
            try:
                kind, payload = _RuleUnpickler(io.BytesIO(body), self.rules).load()
            except Exception:
                self._over = True
                break
            if kind == "event":
                self.events.append(payload)  # (finding, offsets: see _event_offsets)
            elif kind == "result":
                self._result = payload
                self._over = True
        if self._eof:
            self._over = True  # what is left in the buffer is a frame cut short: it will never be whole

    def collect(self, bound_s: Optional[float], is_cut: Callable[[], bool]) -> Optional[Dict[str, _Outcome]]:
        """Tell the child the run is over and wait for its results; None if it could not hand them in."""
        _FIELD.pack_into(self._shm, _STATE_AT, _FINISH)
        deadline = None if bound_s is None else time.monotonic() + bound_s
        cut = False
        while True:
            self.poll()
            if self._over:
                break
            if self._field(_DONE_AT):  # it sent all it will send: whatever did not arrive never will
                self.poll()
                break
            now = time.monotonic()
            if not cut and (is_cut() or (deadline is not None and now >= deadline)):
                cut = True
                _FIELD.pack_into(self._shm, _STATE_AT, _CUT)
                deadline = now + CUT_SCAN_WAIT_S + _CHILD_ANSWER_S
            elif cut and deadline is not None and now >= deadline:
                break
            self._continue_if_stopped()
            select.select([self._res], [], [], _JOIN_SLICE_S)
        result = self._result
        self.close()
        return result

    def _continue_if_stopped(self) -> None:
        """SIGCONT the scanner if something stopped it: a same-user command can signal it (no /proc
        access needed), and the wait for its results has no bound unless a deadline presses."""
        pid = self._field(_PID_AT)
        if not pid:
            return
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in (b"T", b"t"):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass

    def close(self) -> None:
        """End the scanner (a cut; SIGKILL if it never finished) and let go of the pipe."""
        if self._closed:
            return
        self._closed = True
        _FIELD.pack_into(self._shm, _STATE_AT, _CUT)
        try:
            os.close(self._res)
        except OSError:
            pass
        pid = self._field(_PID_AT)
        if pid and self._result is None and not self._field(_DONE_AT):  # it may be stuck in a window
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # already gone


def _event_place(logs: Mapping[str, _LiveLog], finding: Finding) -> Tuple[float, Dict[str, int]]:
    """From the scan thread that just saw ``finding``: when its line arrived, where it starts in its log."""
    own = next((log for log in logs.values() if log.display_path == finding.path), None)
    if own is None:
        return 0.0, {}
    try:
        return own.follow.clock(finding.line), {own.display_path: own.follow.line_offset(finding.line)}
    except (OSError, IndexError, RuntimeError):
        return 0.0, {}  # the follower was closed meanwhile: this event is never withdrawn


def _other_places(
    logs: Mapping[str, _LiveLog], finding: Finding, arrived: float, waited_enough: bool
) -> Optional[Dict[str, int]]:
    """Where to read the other logs after an event that arrived at ``arrived``: the first line not surely
    complete before it (the line clock's points are a step apart: a line that came just before is read
    again, never one missed). None while another log's scan is still behind the event (bytes from before
    it unread: its line count would start the reading too early, at a test that passed before the event),
    unless ``waited_enough``; then such a log is left out."""
    offsets: Dict[str, int] = {}
    try:
        for log in logs.values():
            if log.display_path == finding.path or not arrived:
                continue
            behind = log.follow.unread_since()
            if behind is not None and behind <= arrived:
                if not waited_enough:
                    return None
                continue
            start = log.follow.line_offset(log.follow.clock.lines_before(arrived) + 1)
            offsets[log.display_path] = _in_force(log.follow, start)
    except (OSError, IndexError, RuntimeError):
        # Another log's scan thread moved its follower meanwhile: that log is not read for this event.
        return offsets if waited_enough else None
    return offsets


def _in_force(follow: _Follow, start: int) -> int:
    """Where the test running at ``start`` (a line start) printed its progress line, if its outcome did
    not come before ``start`` (``pytest -v -s``: "t.py::test_x output" ended before the event, its bare
    PASSED comes after); else ``start``. Looks back at most ``IN_FORCE_LOOK_BYTES``."""
    lo = max(0, start - IN_FORCE_LOOK_BYTES)
    fd = follow.fd
    if fd is None or start <= 0:
        return start
    before = os.pread(fd, start - lo, lo)
    lines = before.split(b"\n")
    offset = start - len(lines[-1])  # lines[-1] is b"" when start is a line start
    for raw in reversed(lines[:-1] if lo == 0 else lines[1:-1]):  # the first may be cut
        offset -= len(raw) + 1
        if not attribution.may_report_progress(raw):
            continue
        stripped = strip_controls(raw)
        parsed = attribution.parse_progress(stripped)
        if parsed is not None and not parsed[2]:
            return start if parsed[1] else offset
        if attribution.outcome_alone(stripped):
            return start  # the test before it had ended
    return start


def _event_offsets(logs: Mapping[str, _LiveLog], finding: Finding) -> Dict[str, int]:
    """Per log path, where to read what came after ``finding`` at once (``_event_place`` and
    ``_other_places``, a log whose scan is behind left out)."""
    arrived, offsets = _event_place(logs, finding)
    offsets.update(_other_places(logs, finding, arrived, waited_enough=True) or {})
    return offsets


def _start_tick(pid: int) -> int:
    """The start time of ``pid`` in clock ticks (``/proc/PID/stat`` field 22), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _keep_only_fds(keep: Set[int]) -> None:
    """Close every inherited descriptor but ``keep``; 0-2 become /dev/null (the console is the guard's)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = []
    for fd in open_fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _own_session() -> None:
    """Put the scanner in a session of its own, so it has a CPU share of its own on a busy host.

    With autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on in most distributions'
    kernels; sched(7), "The autogroup feature") the CPU is shared fairly between sessions first, then
    between the threads of a session. The command already runs in its own session; a scanner left in the
    guard's shared the guard's one share with the pump. Measured on 2 CPUs shared with six other jobs (load
    11-12), a guarded ``cat`` of 512 MiB of the test-heavy log took 13.0-14.2 s in the guard's session and
    12.1-12.5 s in its own (the scan alone 10.7 s). The scanner reads no terminal and ignores the runner's
    signals, so leaving the guard's session and process group changes nothing else.
    """
    try:
        os.setsid()
    except OSError:
        pass  # a group leader already (not after the double fork): it keeps the guard's session


def _child_main(
    shm: mmap.mmap,
    res: int,
    fds: Mapping[str, int],
    paths: Mapping[str, str],
    catalogue: Catalogue,
    prepared: Mapping[str, pipeline.Prepared],
    abort_kinds: FrozenSet[Kind],
    key: bytes,
    guard: Tuple[int, int],
) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the guard decides when the scan ends
    _own_session()
    _keep_only_fds({res, *fds.values()})
    _FIELD.pack_into(shm, _PID_AT, os.getpid())
    rules = tuple(catalogue.rules)
    send_lock = threading.Lock()
    gate = _EventGate(abort_kinds)
    # (finding, when its line arrived, offsets, when it was seen): sent by the poll loop once the other
    # logs' scans have caught up with it, or EVENT_PLACE_WAIT_S after it was seen.
    pending: List[Tuple[Finding, float, Dict[str, int], float]] = []

    def on_event(finding: Finding) -> None:
        if not gate.admit(finding):
            return
        with send_lock:
            pending.append((finding, *_event_place(logs, finding), time.monotonic()))

    def send_placed() -> None:
        with send_lock:
            ready = []
            for item in list(pending):
                finding, arrived, offsets, seen = item
                waited = time.monotonic() - seen >= EVENT_PLACE_WAIT_S
                others = _other_places(logs, finding, arrived, waited)
                if others is not None:
                    pending.remove(item)
                    ready.append((finding, {**offsets, **others}))
        for event in ready:
            _write_all(res, _frame(("event", event), rules, key))

    logs = _live_logs(paths, fds, catalogue, prepared, on_event)
    by_index = [(index, logs[stream]) for index, (stream, _) in enumerate(STREAMS) if stream in logs]
    finished = cut = False
    polls = 0
    while not cut:
        state = _FIELD.unpack_from(shm, _STATE_AT)[0]  # read before the totals: a finish follows them
        for index, log in by_index:
            total = _FIELD.unpack_from(shm, index * _SLOT.size)[0]  # the total first: see offer
            arrived = _TIME.unpack_from(shm, index * _SLOT.size + 8)[0]
            if total and not arrived:
                continue  # its time is not stored yet: the next poll takes both
            log.follow.offer(total, arrived)
        if state == _CUT:
            cut = True
            break
        if pending:
            send_placed()
        if state == _FINISH and not finished:
            finished = True
            for _, log in by_index:
                log.follow.finish()
        if finished and not any(log.thread.is_alive() for log in logs.values()):
            break
        polls += 1
        if polls % _GUARD_CHECK_POLLS == 0 and _start_tick(guard[0]) != guard[1]:
            cut = True  # the guard is gone
            break
        time.sleep(_POLL_S)
    severity = _rule_severity(catalogue, SCAN_INCOMPLETE_RULE, Severity.WARNING)
    outcomes = _collect(logs, 0.0 if cut else None, lambda: cut, severity)
    try:
        message = _frame(("result", outcomes), rules, key)
    except Exception as err:  # something in the results cannot be pickled: the guard scans itself
        message = _frame(("error", f"{type(err).__name__}: {err}"), rules, key)
    _write_all(res, message)
    _FIELD.pack_into(shm, _DONE_AT, 1)


class GuardedRun:
    """One guarded run, fully set up before the command starts; ``close`` when done (also on error).

    ``options`` says what to run (its hooks and environment are filled in here); ``environ`` is the
    guard's own environment, from which the workflow files and the action's variables are read.
    ``on_early_report`` gets the guard's own findings as a report when a clock runs out or a cancel
    comes, and again once the stacks are read, both before the tree is ended (``GuardOptions.on_findings``).
    Raises ``UsageError`` for a bad engine, before anything runs.
    """

    def __init__(
        self,
        options: GuardOptions,
        catalogue: Catalogue,
        engine: str = "auto",
        fail_on: Severity = Severity.ERROR,
        abort_on: FrozenSet[Kind] = frozenset(),
        abort_grace_s: float = DEFAULT_ABORT_GRACE_S,
        environ: Mapping[str, str] = os.environ,
        scan_process: bool = True,
        on_early_report: Optional[Callable[[Report], None]] = None,
    ) -> None:
        if abort_grace_s < 0:
            raise UsageError(f"--abort-grace: {abort_grace_s!r} must not be negative")
        self.catalogue = catalogue
        self.fail_on = fail_on
        # One compiled engine per stream: a Hyperscan database's scratch space serves one scan at a time.
        self._prepared = {stream: pipeline.engine_for(catalogue, engine) for stream, _ in STREAMS}
        self._abort = _AbortOn(abort_on, abort_grace_s, self._log_fd)
        self._scan_process = scan_process
        self._fds: Dict[str, int] = {}
        self._totals: Dict[str, Tuple[int, float]] = {}
        self._child: Optional[_ScanChild] = None
        self._logs: Dict[str, _LiveLog] = {}  # in this process, when no child could be started
        self._cut_requested = False
        self._names = dict(STREAMS)
        self._on_early_report = on_early_report
        self._index = {stream: index for index, (stream, _) in enumerate(STREAMS)}
        self.files = file_commands.PrivateFiles(environ, temp_root=_temp_root(environ))
        self.options = dataclasses.replace(
            options,
            on_log_ready=self._on_log_ready,
            on_output=self._on_output,
            abort_requested=self._abort_requested if abort_on else None,
            on_findings=self._early_report if on_early_report is not None else None,
            extra_env=tuple(options.extra_env) + self.files.extra_env,
            remove_env=tuple(options.remove_env) + tuple(n for n in ACTION_VARIABLES if n in environ),
        )

    def _path(self, stream: str) -> str:
        return os.path.join(self.options.log_dir, self._names.get(stream, f"{stream}.log"))

    def _log_fd(self, path: str) -> Optional[int]:
        """The guard's own read-only descriptor on the log whose display path is ``path``."""
        return next((fd for stream, fd in self._fds.items() if self._path(stream) == path), None)

    # -- hooks, called by the guard -------------------------------------------------------------
    def _on_log_ready(self, stream: str, fd: int) -> None:
        self._fds[stream] = fd
        if len(self._fds) < len(STREAMS):
            return
        # Both logs exist and nothing runs yet (no pump, no command): the moment to fork the scanner.
        if self._scan_process:
            try:
                fds = {name: os.dup(own) for name, own in self._fds.items()}
                try:
                    paths = {name: self._path(name) for name in fds}
                    self._child = _ScanChild(fds, paths, self.catalogue, self._prepared, self._abort.kinds)
                finally:
                    for dup in fds.values():
                        os.close(dup)
                return
            except OSError:
                self._child = None
        self._logs = self._scan_here(self._on_live_event)

    def _scan_here(self, on_event: Callable[[Finding], None]) -> Dict[str, _LiveLog]:
        """Live scans in this process, on descriptors of their own (no scanner process)."""
        fds = {name: os.dup(own) for name, own in self._fds.items()}
        paths = {name: self._path(name) for name in fds}
        return _live_logs(paths, fds, self.catalogue, self._prepared, on_event)

    def _on_live_event(self, finding: Finding) -> None:
        """A live finding of a scan in this process (no scanner process could be started)."""
        self._abort.on_event(finding, _event_offsets(self._logs, finding))

    def _on_output(self, stream: str, total: int, arrived: float) -> None:
        self._totals[stream] = (total, arrived)
        child = self._child
        if child is not None:
            child.offer(self._index.get(stream, 0), total, arrived)
            return
        log = self._logs.get(stream)
        if log is not None:
            log.follow.offer(total, arrived)

    def _early_report(self, command: CommandResult, findings: Tuple[Finding, ...]) -> None:
        """The guard's own findings as a report, for ``on_early_report``, before the tree is ended."""
        if self._on_early_report is None:
            return
        named = tuple(self._name_the_running_test(finding) for finding in findings)
        verdict, status = decide(named, command, self.fail_on)
        note = Diagnostic(EARLY_REPORT_TITLE, EARLY_REPORT.format(log_dir=self.options.log_dir))
        try:
            self._on_early_report(Report(verdict, status, named, command, (note,)))
        except Exception:  # noqa: BLE001 - an early copy; the full report is written when the guard is done
            pass

    def _name_the_running_test(self, finding: Finding) -> Finding:
        """An early report's hang with its test: from the stack, or else from the end of stdout.log
        (``pytest -v`` names a test when it starts), which the stacks may not be read in time to tell."""
        if finding.kind is not Kind.HANG or finding.test is not None:
            return _name_the_hangs_test(finding)
        fd, total = self._fds.get("stdout"), self._totals.get("stdout", (0, 0.0))[0]
        if fd is None or total <= 0:
            return finding
        lo = max(0, total - IN_FORCE_LOOK_BYTES)
        try:
            test = attribution.running_test(os.pread(fd, total - lo, lo), from_start=lo == 0)
        except OSError:
            return finding
        if test is None:
            return finding
        note = HANG_TEST_IN_LOG.format(test=test)
        return dataclasses.replace(finding, test=test, message=finding.message + note)

    def _abort_requested(self) -> Optional[str]:
        child = self._child
        if child is not None:
            child.poll()
            while child.events:
                self._abort.on_event(*child.events.pop(0))
        return self._abort.abort_requested()

    # -- the run --------------------------------------------------------------------------------
    def supervise(self) -> Supervision:
        """Run the command under the guard (see ``supervise.guard.supervise``)."""
        return supervise(self.options)

    def cut_short(self) -> None:
        """Stop waiting for the scan (a signal came while the report is due): report what was read.

        Safe in a signal handler: it only sets a flag, which the waiting loops read between short
        waits (taking a follower's lock here could deadlock against the very code it interrupted).
        """
        self._cut_requested = True

    def _outcomes(self, bound_s: Optional[float], cancelled: bool) -> Dict[str, _Outcome]:
        is_cut = lambda: self._cut_requested  # noqa: E731
        severity = _rule_severity(self.catalogue, SCAN_INCOMPLETE_RULE, Severity.WARNING)
        if self._child is not None:
            outcomes = self._child.collect(bound_s, is_cut)
            if outcomes is not None:
                return outcomes
            if cancelled or is_cut():
                return {stream: _Outcome(None, self._unscanned(stream, severity)) for stream in self._fds}
            # The child failed without the runner's window pressing: scan the logs here, as after the run.
            self._logs = self._scan_here(lambda f: None)
            for name, log in self._logs.items():
                log.follow.offer(*self._totals.get(name, (0, 0.0)))
        for log in self._logs.values():
            log.follow.finish()
        return _collect(self._logs, bound_s, is_cut, severity)

    def _unscanned(self, stream: str, severity: Severity) -> Finding:
        total = self._totals.get(stream, (0, 0.0))[0]
        name = self._names.get(stream, stream)
        return Finding(
            kind=Kind.SCAN_INCOMPLETE,
            rule=SCAN_INCOMPLETE_RULE,
            severity=severity,
            path=self._path(stream),
            line=0,
            message=SCAN_NO_ANSWER.format(name=name, total=total),
        )

    def report(self, supervision: Supervision, **report_fields: Any) -> Report:
        """Let the scan read the rest of the logs (bounded after a cancel or a timeout, and by what
        ``--timeout`` had left when the command ended by itself), then the ranked report.

        ``report_fields`` are further ``Report`` fields (the job's facts).
        """
        reason = supervision.command.timeout_reason
        cancelled = reason == "cancelled"
        if reason is not None:
            bound: Optional[float] = CANCEL_SCAN_WAIT_S if cancelled else TIMED_OUT_SCAN_WAIT_S
        elif self.options.timeout_s is not None:
            # The command ended by itself, but the wall clock still runs: a scan behind a flood of
            # matching lines (read at a few MB/s) gets what the clock had left and then what a timed-out
            # run's scan gets, so the guard never returns later than the run would have timed out.
            bound = max(0.0, self.options.timeout_s - supervision.command.duration_s) + TIMED_OUT_SCAN_WAIT_S
        else:
            bound = None  # no clock is running out
        outcomes = self._outcomes(bound, cancelled)
        # A command that ended by itself has no timeout or cancel to fail it: a scan its clock cut could
        # hide the failure in the unread part, so the cut itself fails the run rather than let it pass
        # (unless the user's config set the rule's severity).
        unread_fails = reason is None and bound is not None
        results, incomplete, clocks = [], [], {}
        for stream, _ in STREAMS:
            outcome = outcomes.get(stream)
            if outcome is None:
                continue
            if outcome.incomplete is not None:
                incomplete.append(outcome.incomplete)
            if outcome.result is None:
                incomplete.extend(outcome.seen)
            if outcome.result is not None:
                results.append(_settle_across(outcome.result, self._fds.get("stdout")))
                clocks[self._path(stream)] = outcome.clock()
        failed = _failed_exit(supervision.command)
        findings = pipeline.combine(
            results,
            self.catalogue,
            guard_findings=tuple(supervision.findings) + tuple(incomplete) + failed,
            line_clocks=clocks,
            guard_ended_at=supervision.ended_by_guard_at,
        )
        findings = [_name_the_hangs_test(finding) for finding in findings]
        if unread_fails and SCAN_INCOMPLETE_RULE not in dict(self.catalogue.severity_overrides):
            findings = [
                dataclasses.replace(f, severity=Severity.ERROR)
                if f.kind is Kind.SCAN_INCOMPLETE and _cut_by_the_clock(f) else f
                for f in findings
            ]
        verdict, status = decide(findings, supervision.command, self.fail_on)
        return Report(
            verdict=verdict,
            exit_status=status,
            findings=tuple(findings),
            command=supervision.command,
            diagnostics=supervision.diagnostics,
            **report_fields,
        )

    def report_not_started(self, err: CommandNotStarted, **report_fields: Any) -> Report:
        """The report of a command that could not be started: one error finding, its shell status.

        Nothing ran, so nothing is scanned; ``report_fields`` are further ``Report`` fields.
        """
        what = "not found" if err.exit_status == NOT_FOUND_EXIT_STATUS else "not executable"
        message = (f"the command could not be started: {err.reason}"
                   f" (exit {err.exit_status}: {what}, as in a shell)")
        finding = Finding(Kind.CRASH, GUARD_COMMAND_NOT_STARTED_RULE, Severity.ERROR, "", 0, message)
        findings = pipeline.combine([], self.catalogue, guard_findings=(finding,))
        command = CommandResult(argv=tuple(self.options.argv), exit_code=err.exit_status,
                                log_dir=self.options.log_dir)
        verdict, status = decide(findings, command, self.fail_on)
        return Report(verdict=verdict, exit_status=status, findings=tuple(findings), command=command,
                      **report_fields)

    def report_cancelled_before_start(self, signum: int, after_s: float, **report_fields: Any) -> Report:
        """The report of a run the runner cancelled before the command started: nothing ran.

        As every cancel: exit 124, ``timeout_reason`` "cancelled", a ``guard-cancelled`` error; no logs
        (nothing was printed), so nothing is scanned and there is no tree to end.
        """
        name = signal_name(signum) or f"signal {signum}"
        message = (f"cancelled ({name}) {format_duration(max(0.0, after_s))} after the guard started,"
                   " before the command started: nothing ran")
        finding = Finding(Kind.HANG, GUARD_CANCELLED_RULE, Severity.ERROR, "", 0, message)
        findings = pipeline.combine([], self.catalogue, guard_findings=(finding,))
        command = CommandResult(argv=tuple(self.options.argv), exit_code=None, timed_out=True,
                                timeout_reason=TimeoutReason.CANCELLED, log_dir=self.options.log_dir,
                                started=False)
        verdict, status = decide(findings, command, self.fail_on)
        return Report(verdict=verdict, exit_status=status, findings=tuple(findings), command=command,
                      **report_fields)

    # -- workflow files -------------------------------------------------------------------------
    def pass_through_files(self) -> List[str]:
        """Undo direct writes to the real workflow files, then pass the command's valid entries on.

        Call before the guard writes its own outputs; returns warnings (the guard's words only).
        """
        return self.files.restore() + self.files.pass_through(github_report.OUTPUT_NAMES)

    def pass_through_summary(self) -> List[str]:
        """Append the command's job summary after the guard's; returns warnings."""
        return self.files.pass_summary()

    def close(self) -> None:
        """Stop the scan (its threads are daemons, its process is ended) and remove the private files."""
        if self._child is not None:
            self._child.close()
        for log in self._logs.values():
            log.follow.cut()
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}
        self.files.close()


def _settle_across(result: pipeline.LogFindings, fd: Optional[int]) -> pipeline.LogFindings:
    """Whether each test that ``result``'s events were set in from another log (``_Across``) then passed,
    and the one running a little before if another: read in that log (``fd``) from where it stood then,
    at most ``ABORT_LOOK_BYTES`` (``attribution.passed_through``). A test that passed handled its event;
    one that failed, or never said, did not. Once per place and test."""
    if fd is None or all(event.across is None for event in result.events):
        return result
    passed: Dict[Tuple[int, Optional[str], str], bool] = {}
    budget = [ACROSS_READ_BUDGET]
    events = []
    for event in result.events:
        if event.across is not None and event.test is not None:
            key = (*event.across, event.test)
            if key not in passed:
                passed[key] = _passed_after(fd, *key, budget)
            event = dataclasses.replace(event, test_finished=passed[key])
        events.append(event)
    return dataclasses.replace(result, events=tuple(events))


def _passed_after(fd: int, offset: int, running: Optional[str], test: str, budget: List[int]) -> bool:
    """``attribution.passed_through`` of the log at ``fd`` from ``offset``: read ``IN_FORCE_LOOK_BYTES``
    first (the outcome is most often near), then more, up to ``ABORT_LOOK_BYTES``, while ``budget[0]``
    (bytes, shared by all events of the report: a cancel leaves seconds) lasts; False when unread."""
    start = max(0, offset - 1)
    size = IN_FORCE_LOOK_BYTES
    while budget[0] > 0:
        want = min(size, budget[0]) + offset - start
        try:
            after = os.pread(fd, want, start)
        except OSError:
            return False
        budget[0] -= len(after)
        lines = after.split(b"\n")
        whole = len(after) < want
        if whole:
            lines.append(b"")  # the log ends here, after the run: its last line is whole
        if offset > 0 and not attribution.outcome_alone(strip_controls(lines[0][1:])):
            # Read from the byte before ``offset``: a line's end (lines[0] is empty), or a line cut
            # there, whose rest is no line of its own, unless it is an outcome alone: pytest -v -s
            # ends a test's line with it, after whatever the test printed there ("t.py::test_a PASSED"
            # when the test printed nothing on stdout and its event went to stderr).
            lines[0] = b""
        said = attribution.passed_through(lines, running, test)
        if said is not None or whole or size >= ABORT_LOOK_BYTES:
            return bool(said)
        size = min(size * 8, ABORT_LOOK_BYTES)
    return False


def _name_the_hangs_test(finding: Finding) -> Finding:
    """Say in the guard's hang finding which test its stack showed, if the log's lines did not say it."""
    if finding.kind is not Kind.HANG or finding.test is None or finding.test in finding.message:
        return finding
    note = HANG_TEST_ON_STACK.format(test=finding.test)
    return dataclasses.replace(finding, message=finding.message + note)


def _failed_exit(command: CommandResult) -> Tuple[Finding, ...]:
    """The guard's finding for a command that failed on its own (ranking keeps it only when nothing else
    explains the failure, and points it at the last traceback the command printed)."""
    if command.timed_out or command.exit_code in (None, 0):
        return ()
    message = f"the command failed with {describe_command_exit(command.exit_code, command.timed_out)}"
    return (Finding(Kind.CRASH, GUARD_COMMAND_FAILED_RULE, Severity.ERROR, "", 0, message),)


def _rule_severity(catalogue: Catalogue, rule_id: str, default: Severity) -> Severity:
    for rule in catalogue.rules:
        if rule.id == rule_id:
            return rule.severity or default
    return default


def _temp_root(environ: Mapping[str, str]) -> Optional[str]:
    root = environ.get("RUNNER_TEMP")
    return root if root and os.path.isdir(root) else None


__all__ = ["ACTION_VARIABLES", "DEFAULT_ABORT_GRACE_S", "GuardedRun", "parse_abort_kinds"]

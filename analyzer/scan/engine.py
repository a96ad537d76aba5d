"""The matching engine: stream logs in bounded windows, find candidate lines fast, confirm with ``regex``.

For each source the engine reads windows of about ``READ_SIZE`` bytes cut at a ``\\n``, strips NULs
and ANSI escapes from the whole window (``clean.strip_controls``), and asks a finder for the lines
holding one of the rules' literals (``_engine_literals``): Hyperscan in one pass when it is installed,
``bytes.find`` otherwise. Only those lines are cleaned and matched with the rules' compiled patterns,
each ``\\r`` segment on its own. Lines after the start of a multi-line block rule are fed to that block
one by one until its ``end`` pattern matches; a block whose end does not come within ``max_lines``
lines (start included) or before the end of the log matches nothing, and a new start of the same rule
while a block is open restarts it: the same semantics as ``rules.loader.example_matches``, so a rule's
examples predict the scan. Both engines use the same literals, so they find the same matches.

A log copied from a terminal's screen has its long lines cut into rows (``_engine_wrap``): there the
rows of a cut line are also matched joined again, for the matches no row holds alone.

Memory stays bounded whatever the input: a window is at most two reads plus the unfinished line, and a
line longer than ``LINE_CAP`` bytes (a progress bar redrawn for hours without a ``\\n``) is matched on
its first and last ``LINE_CAP // 2`` bytes; the middle is read, counted and dropped, except, in a log no
terminal wrapped (the guard's own), its ``\\r``-ended states, each matched as it comes. What the cut drops
unread is said in a ``scan-incomplete`` notice on that line (an error printed in the middle of such a line
would otherwise be lost without a word).
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from typing import IO, Any, Dict, Generator, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..errors import InputError, UsageError
from ..durations import format_duration
from ..model import SCAN_INCOMPLETE_RULE
from ..rules.budget import MatchBudget
from ..rules.model import CUT_SHORT_GROUP, DEFAULT_MATCH_BUDGET_S, Catalogue, Rule
from ._engine_approx import LoosePatterns, starts_unblank
from ._engine_indent import dedented
from ._engine_literals import Plan, build_plan
from .attribution import RERUN_WORD, TestLine, TestTracker
from ._engine_prefilter import (
    Candidates, Finder, hyperscan_available, hyperscan_finder, hyperscan_markers, python_finder,
)
from ._engine_wrap import Piece, WrapReader, advisory_rows, attribution_view, logical_lines
from .letters import HYPERSCAN_HINTS
from .clean import (
    READ_BACK_LINES,
    RICH_CORNERS,
    RICH_WRAP_ROWS,
    CTEST_VERBOSE,
    RARE_MARKERS,
    MarkersIn,
    RUNNER_STAMP,
    clean_speaking,
    torchrun_behind_launcher,
    blank_led_run,
    speaker_led_run,
    headless_traceback,
    last_content_line,
    rich_wrapped_message,
    split_segments,
    strip_controls,
    visible_excerpt,
)
from .match import Match, engine_match
from .state import ECHO_MARKER, TRACEBACK_MARKER, is_line_echo
from .went_on import RankWatch
from .sources import Source, Unscannable, zip_errors

ENGINES = ("auto", "hyperscan", "python")
READ_SIZE = 1 << 20
LINE_CAP = 1 << 20  # longer lines are matched on their first and last LINE_CAP // 2 bytes
# A live log's line that a progress display keeps rewriting with ``\r`` may end with ``\n`` only when the
# command exits: its ``\r``-ended states are matched once the first of them not yet matched has waited
# this long for the line's end, or once this many bytes of them wait (--abort-on must see an NCCL
# timeout a training loop printed between two progress states). Only for streams that can say nothing
# came (``read_within``): a file read after the fact has its line ends.
EARLY_WAIT_S = 0.5
EARLY_BYTES = 64 * 1024
EXCERPT_MAX_LINES = 200
EXCERPT_MAX_CHARS = 64 * 1024
EXCERPT_LINE_CHARS = 4096
# How many lines ``_fed_span`` reads past a block of a speaker's start (other processes' lines among its own)
# before it leaves the block to be opened and fed as usual.
FED_SPAN_LINES = 256
# User patterns: each search runs under ``match_timeout_s`` and all searches of one pattern, over the
# whole scan, under ``match_budget_s`` (``rules.budget.MatchBudget``, shared through ``Prepared``); a
# pattern that spends it is switched off with a scan-incomplete finding and the scan goes on.
BUDGET_SPENT = "rule {rule} used up its match_budget ({budget}) and was switched off from here on"
# Built-in patterns on long lines: a pattern linear on real lines can be quadratic on a line a command
# made up ("CUDA error: x", 300,000 blanks, "y": ``.+?\s*$`` tries every split), and one such line would
# hold the scan for hours, and hide what follows it. Past LONG_LINE_CHARS a search runs under
# LONG_SEARCH_S, all of a rule's such searches under LONG_BUDGET_S; a rule that spends it is no longer
# tried on long lines, and a scan-incomplete finding says so.
LONG_LINE_CHARS = 4096
LONG_SEARCH_S = 0.2
LONG_BUDGET_S = 2.0
LONG_LINES_SPENT = (
    "rule {rule} used up its time on lines over {chars:,} characters ({budget}) and is no longer tried on"
    " such lines"
)
_UNKNOWN = object()  # the progress line of a line not yet looked up
# The memo of lines matched (``_SourceScan._line``): a line's bytes seen again (a flood of one message,
# a launcher's same line from every step) skip the cleaning and the rules' searches. Lines up to
# MEMO_LINE_BYTES, at most MEMO_LINES of them (then it starts over): a few MiB at most.
MEMO_LINE_BYTES = 2048
MEMO_LINES = 512
# What a corrupt .gz or zip member raises mid-stream (gzip.BadGzipFile is an OSError).
_READ_ERRORS = (OSError, EOFError, ValueError, RuntimeError, zlib.error)


def _read_errors() -> Tuple[type, ...]:
    """What reading a source may raise (``zip_errors``: zipfile is imported for the first zip only)."""
    return _READ_ERRORS + zip_errors()


RuleLookup = Tuple[bool, Any, bool]  # (is_block, the pattern that finds it, user_defined)


def rule_lookups(rules: Sequence[Rule]) -> List[RuleLookup]:
    """Per rule, what matching a line looks up in it, read once."""
    return [
        (rule.is_block, rule.start_re if rule.is_block else rule.pattern_re, rule.user_defined)
        for rule in rules
    ]


class Prepared:
    """A catalogue's rules compiled for one engine, shared by every source scanned with them.

    A plain class, not a dataclass: one is made per scan and never compared, and a frozen dataclass's
    generated methods cost every run's start-up about half a millisecond (perf22)."""

    __slots__ = ("rules", "plan", "finder", "timeout_s", "budget", "incomplete", "loose", "long_lines",
                 "first", "hyperscan", "markers_in")

    def __init__(
        self,
        rules: Tuple[Rule, ...],
        plan: Plan,
        finder: Finder,
        timeout_s: float,
        budget: Optional[MatchBudget] = None,  # mutable: the user patterns' time over the whole scan
        incomplete: Optional[Rule] = None,  # the scan-incomplete rule in force
        loose: Optional[LoosePatterns] = None,  # mutable: compiled as lines need them, shared by sources
        long_lines: Optional[MatchBudget] = None,  # mutable: the built-in patterns' time on long lines
        first: Sequence[RuleLookup] = (),  # rule_lookups(rules)
        hyperscan: bool = False,  # whether the engine is Hyperscan: the letters' hints then use it too
        markers_in: Optional[MarkersIn] = None,  # clean.strip_controls' rare markers in one pass
    ) -> None:
        self.rules = rules
        self.plan = plan
        self.finder = finder
        self.timeout_s = timeout_s
        self.budget = budget
        self.incomplete = incomplete
        self.loose = loose
        self.long_lines = long_lines
        self.first = first
        self.hyperscan = hyperscan
        self.markers_in = markers_in


def prepare(catalogue: Catalogue, engine: str = "auto") -> Prepared:
    """Compile ``catalogue`` for ``engine``; raises ``UsageError`` for an unknown or unavailable one."""
    # A guard: true rule has no pattern (the program makes its findings); a loaded catalogue keeps them
    # in guard_rules, but a hand-built one may not.
    rules = tuple(rule for rule in catalogue.rules if not rule.guard)
    plan = build_plan(rules, probes=(CTEST_VERBOSE, RERUN_WORD))
    budget = MatchBudget(catalogue.match_timeout_s, catalogue.match_budget_s)
    incomplete = catalogue.guard_rule(SCAN_INCOMPLETE_RULE)
    loose = LoosePatterns(rules)
    return Prepared(
        rules, plan, make_finder(plan, engine, loose), catalogue.match_timeout_s, budget, incomplete, loose,
        MatchBudget(LONG_SEARCH_S, LONG_BUDGET_S), rule_lookups(rules), resolve_engine(engine) == "hyperscan",
        _markers_in(engine),
    )


def _markers_in(engine: str) -> Optional[MarkersIn]:
    """One Hyperscan pass for ``strip_controls``' rare markers where the engine is Hyperscan, else None."""
    if resolve_engine(engine) != "hyperscan":
        return None
    try:
        return hyperscan_markers(RARE_MARKERS)
    except Exception:  # hyperscan.error on a CPU it does not support: each is looked for on its own
        return None


def source_scanner(source: Source, prepared: Prepared, seq: int = 0) -> "_SourceScan":
    """The scanner of one source: ``.run(source)`` yields its matches in line order (``seq`` counting
    up from ``seq``); ``.tracker`` holds its test attribution state (``analyzer.scan.attribution``)."""
    return _SourceScan(
        source.display_path, prepared.rules, prepared.plan, prepared.finder, prepared.timeout_s, seq,
        prepared.budget, prepared.incomplete, prepared.loose, prepared.long_lines, prepared.first or None,
        prepared.hyperscan, prepared.markers_in,
    )


def iter_matches(sources: Iterable[Source], catalogue: Catalogue, engine: str = "auto") -> Iterator[Match]:
    """Yield every rule match (marker rules included) in file order, with increasing ``seq``.

    ``engine`` is ``"auto"`` (Hyperscan when importable), ``"hyperscan"`` or ``"python"``; both give
    identical matches. Raises ``UsageError`` for an unknown or unavailable engine and ``InputError``
    when a source cannot be read.
    """
    prepared = prepare(catalogue, engine)
    seq = 0
    for source in sources:
        scanner = source_scanner(source, prepared, seq)
        yield from scanner.run(source)
        seq = scanner.seq


def resolve_engine(engine: str) -> str:
    """The engine that ``engine`` names here: ``"hyperscan"`` or ``"python"``."""
    if engine not in ENGINES:
        raise UsageError(f"--engine {engine}: expected one of {', '.join(ENGINES)}")
    if engine == "auto":
        return "hyperscan" if hyperscan_available() else "python"
    if engine == "hyperscan" and not hyperscan_available():
        raise UsageError("--engine hyperscan: the hyperscan module is not installed")
    return engine


def make_finder(plan: Plan, engine: str, loose: Optional[LoosePatterns] = None) -> Finder:
    """The candidate-line finder for ``engine``; ``"auto"`` falls back to Python if Hyperscan fails.
    Given the engine's ``loose`` patterns, either engine takes over the rules they find noisy."""
    resolved = resolve_engine(engine)
    if resolved == "hyperscan":
        try:
            # the progress letters' hints ride in the same pass (``_SourceScan.run`` hands them over)
            return hyperscan_finder(plan, loose, HYPERSCAN_HINTS)
        except Exception:  # hyperscan.error on a CPU it does not support: fall back when allowed
            if engine == "hyperscan":
                raise UsageError("--engine hyperscan: Hyperscan cannot run on this machine") from None
    return python_finder(plan, loose)


class _Early(bytes):
    """``\\r``-ended states of the line a window will start with, matched before its ``\\n`` came."""


class _Dropped(bytes):
    """An empty window saying that the cut of the giant line the next window starts with dropped
    ``unread`` of its ``length`` bytes without matching them (``_giant_line``)."""

    unread = 0
    length = 0


GIANT_LINE_CUT = (
    "{unread:,} of this line's {length:,} bytes (a line over {cap} is matched on its first and last {half}"
    "{states})"
)
GIANT_LINE_STATES = ", and on the first {half} of each \\r-ended state"


def _windows(stream: IO[bytes], path: str, early: bool = False, states: bool = False) -> Iterator[bytes]:
    """Cut a stream into windows that end with ``\\n`` (except the last), one giant line cut short; with
    ``early`` (a stream with ``read_within``), also ``_Early`` windows of a line's ``\\r``-ended states
    that waited ``EARLY_WAIT_S`` or ``EARLY_BYTES`` for its end, each state once; with ``states`` (a log
    no terminal wrapped), ``_Early`` windows of the states a giant line's cut drops (``_giant_line``)."""
    carry = b""
    done = 0  # how much of ``carry`` went out in ``_Early`` windows
    since: Optional[float] = None  # when ``carry`` first held a state not yet sent
    while True:
        data: Optional[bytes]
        if early and carry.find(b"\r", done) != -1:
            since = time.monotonic() if since is None else since
            left = EARLY_WAIT_S - (time.monotonic() - since)
            waiting = len(carry) - done < EARLY_BYTES and left > 0
            data = _read_within(stream, path, left) if waiting else None
            if data is None:
                cut = carry.rfind(b"\r") + 1
                yield _Early(carry[done:cut])
                done, since = cut, None
                continue
        else:
            data = _read(stream, path)
        if not data:
            break
        cut = data.rfind(b"\n")
        if cut != -1:  # the window is the carried line's start and the read up to its last "\n": one copy
            yield b"".join((carry, memoryview(data)[:cut + 1])) if carry else data[:cut + 1]
            carry = data[cut + 1:]
            done, since = 0, None
            continue
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n")
        if cut != -1:
            yield buf[: cut + 1]
            carry = buf[cut + 1:]
            done, since = 0, None
            continue
        if len(buf) <= LINE_CAP:
            carry = buf
            continue
        line, carry, unread, length = yield from _giant_line(stream, path, buf, done if states else None)
        done, since = 0, None
        if unread:
            dropped = _Dropped()
            dropped.unread, dropped.length = unread, length
            yield dropped
        yield line
    if carry:
        yield carry


def _giant_line(stream: IO[bytes], path: str, buf: bytes,
                sent: Optional[int] = None) -> Generator[bytes, None, Tuple[bytes, bytes, int, int]]:
    """Read the rest of a line longer than LINE_CAP; return its head and tail joined by a ``\\r``, what
    follows its ``\\n``, how many of its bytes no window holds, and its length. With ``sent`` (how much
    of ``buf`` already went out as states), first yield the ``\\r``-ended states of the rest as
    ``_Early`` windows, a read at a time: a progress bar redrawn for an hour passes 1 MiB, and the NCCL
    timeout printed between two of its states is in the part the cut drops. A state longer than LINE_CAP
    goes out as its first LINE_CAP // 2 bytes."""
    half = LINE_CAP // 2
    head = buf[:half]
    tail = buf[-half:]
    rest = buf[sent:] if sent is not None else b""  # states not yet sent
    rest_at = sent or 0  # where ``rest`` starts in the line
    length = len(buf)
    skipping = False  # inside a state too long to keep: its start went out, drop up to its ``\\r``
    # The dropped parts of states too long to keep: only the last one can reach into the tail (a kept
    # state start of LINE_CAP // 2 bytes lies between any two).
    unread, last_gap = 0, (0, 0)
    while True:
        if sent is not None:
            cut = rest.rfind(b"\r") + 1
            if cut:
                yield _Early(rest[:cut])
                rest, rest_at = rest[cut:], rest_at + cut
            if len(rest) > LINE_CAP:
                yield _Early(rest[:half] + b"\r")
                unread += last_gap[1] - last_gap[0]
                last_gap = (rest_at + half, rest_at + half)
                rest, skipping = b"", True
        data = _read(stream, path)
        nl = data.find(b"\n") if data else -1
        part = data if nl == -1 else data[:nl]
        length += len(part)
        tail = (tail + part)[-half:]
        if sent is not None:
            if skipping:
                cr = part.find(b"\r")
                skipping, part = cr == -1, (part[cr + 1:] if cr != -1 else b"")
                last_gap = (last_gap[0], length - len(part) - (cr != -1))
                rest_at = length - len(part)
            rest += part
        if data and nl == -1:
            continue
        cut = rest.rfind(b"\r") + 1
        if cut:  # the states before the tail's last one: the tail may not reach back to them
            yield _Early(rest[:cut])
            rest_at += cut
        if sent is None:
            unread = length - 2 * half
        else:
            # What only the tail holds of the line's last state, and the last dropped part, less the tail.
            tail_at = length - half
            unread += max(0, min(last_gap[1], tail_at) - last_gap[0])
            unread += max(0, tail_at - max(rest_at, half))
        if not data:
            return head + b"\r" + tail, b"", unread, length
        return head + b"\r" + tail + b"\n", data[nl + 1:], unread, length


def _size(n: int) -> str:
    """``1 MiB``, ``512 KiB``: a power-of-two size as the README writes it."""
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def _read(stream: IO[bytes], path: str) -> bytes:
    try:
        return stream.read(READ_SIZE)
    except _read_errors() as err:
        raise InputError(f"{path}: cannot read: {_reason(err)}") from None


def _read_within(stream: IO[bytes], path: str, wait_s: float) -> Optional[bytes]:
    """``stream.read_within``: what came within ``wait_s`` (None: nothing did; b"": the end)."""
    try:
        return stream.read_within(READ_SIZE, wait_s)  # type: ignore[attr-defined]
    except _read_errors() as err:
        raise InputError(f"{path}: cannot read: {_reason(err)}") from None


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror.lower()
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


# The most of the last lines of the windows read kept for the readings at the next window's end
# (``_tail_after``): ``READ_BACK_LINES`` lines of 140 bytes.
_TAIL_BYTES = 64 * 1024
# Lines kept: their first line's number (-1: not counted yet, most windows never ask), the number of the
# line after them, their bytes.
Tail = Tuple[int, int, bytes]


def _joined(tail: Tail, data: bytes, first_line: int, at_end: bool = False) -> Tuple[bytes, int]:
    """``data`` (its first line is ``first_line``) after the lines ``tail`` kept when they are the lines
    right before it, and its first line's number. A tail whose last line has no end yet is the log's end
    (``at_end``): a window after it starts within that line (``_giant_line``)."""
    first, after, kept = tail
    if kept and after == first_line and (at_end or kept.endswith(b"\n")):
        return kept + data, first if first >= 0 else after - kept.count(b"\n")
    return data, first_line


def _tail_after(tail: Tail, data: bytes, first_line: int, next_line: int) -> Tail:
    """The last whole lines, at most ``_TAIL_BYTES`` of them, of the lines ``tail`` kept and the window
    ``data`` after them (lines ``first_line`` to ``next_line - 1``)."""
    if len(data) < _TAIL_BYTES:
        data, first_line = _joined(tail, data, first_line)
    whole = data
    if len(data) > _TAIL_BYTES:
        cut = data.find(b"\n", len(data) - _TAIL_BYTES - 1)
        data = data[cut + 1:] if cut >= 0 else b""
    if data.endswith(b"\n") or not data:
        return -1, next_line, data
    # A last line without its end (the log's, or a giant line's head): ``next_line`` may be its number or
    # the next (``_window`` counts it only when it read it), so its lines are counted from the first.
    return first_line + whole.count(b"\n", 0, len(whole) - len(data)), next_line, data


class _Block:
    """A block rule's match in progress (internal, mutable while lines are fed to it)."""

    __slots__ = (
        "index", "line", "last_row", "fed_to", "text", "rank", "speaker", "groups", "lines", "chars", "count",
        "progress", "cut_ok",
    )

    def __init__(
        self, index: int, line: int, text: str, rank: Optional[int], groups: Dict[str, str], progress: Any,
        last_row: int, speaker: Optional[str],
    ) -> None:
        self.progress = progress
        self.index = index
        self.line = line
        self.last_row = last_row  # the start's last row: a terminal-wrapped start spans several
        self.fed_to = last_row  # the last line fed to it
        self.text = text
        self.rank = rank
        self.speaker = speaker  # the process prefix of its start (clean_speaking): it reads only its lines
        self.groups = groups
        self.lines: List[str] = []  # excerpt lines, and chunks of lines (``add_lines``)
        self.chars = 0
        self.count = 0
        self.cut_ok = False  # a line matched the rule's cut_short: the block counts even if EOF cuts it

    def add(self, excerpt_line: str) -> None:
        self.count += 1
        if len(self.lines) < EXCERPT_MAX_LINES and self.chars < EXCERPT_MAX_CHARS:
            self.lines.append(excerpt_line)
            self.chars += len(excerpt_line) + 1

    def add_lines(self, chunk: bytes, count: int) -> None:
        """Add the ``count`` whole lines of ``chunk`` (stripped bytes, each ending in ``\n``), made excerpt
        lines only by ``excerpt_lines``. ``lines`` counts the chunk as one line and no characters: it may
        hold more than the excerpt keeps, never less."""
        self.count += count
        if len(self.lines) < EXCERPT_MAX_LINES and self.chars < EXCERPT_MAX_CHARS:
            self.lines.append(chunk)  # type: ignore[arg-type]

    def excerpt_lines(self) -> List[str]:
        """The excerpt's lines, as ``add`` would have kept them one by one."""
        kept: List[str] = []
        chars = 0
        for entry in self.lines:
            if isinstance(entry, str):
                entries: Iterable[str] = (entry,)
            else:
                # ASCII lines without "\r" (``blank_led_run``): ``visible_excerpt`` of each is its text
                text = entry.decode("ascii")
                whole = text.split("\n")
                whole.pop()
                # Every line kept whole, as ``add`` keeps it: none reaches the caps, none is cut.
                if (len(kept) + len(whole) <= EXCERPT_MAX_LINES and chars + len(text) <= EXCERPT_MAX_CHARS
                        and (len(text) <= EXCERPT_LINE_CHARS or max(map(len, whole)) <= EXCERPT_LINE_CHARS)):
                    kept.extend(whole)
                    chars += len(text)
                    continue
                entries = (line if len(line) <= EXCERPT_LINE_CHARS else _excerpt_line(line) for line in whole)
            for text in entries:
                if len(kept) >= EXCERPT_MAX_LINES or chars >= EXCERPT_MAX_CHARS:
                    return kept
                kept.append(text)
                chars += len(text) + 1
        return kept


class _Seen:
    """What one line's bytes gave when matched, none of it depending on where the line is: how it reads
    (cleaned, its rank and speaker, its segments) and the rules it matched (``hits``: rule index,
    whether a block rule, the segment and the match, and for a line rule its excerpt and groups).
    ``lits``, ``task_labels`` and ``launcher_ranks`` are what it was matched under; the line's cleaning is
    done on first need.
    """

    __slots__ = ("raw", "lits", "task_labels", "launcher_ranks", "hits", "rank", "speaker", "segments",
                 "excerpt", "ends")

    def __init__(self, raw: bytes, lits: Optional[set], task_labels: bool, launcher_ranks: bool) -> None:
        self.raw = raw
        self.lits = lits
        self.task_labels = task_labels
        self.launcher_ranks = launcher_ranks
        self.hits: List[tuple] = []
        self.rank: Optional[int] = None
        self.speaker: Optional[str] = None
        self.segments: Optional[List[str]] = None  # None until cleaned
        self.excerpt: Optional[str] = None  # the line as an excerpt shows it, until needed
        # What each built-in block rule's end found in the segments (rule index -> segment and match, or
        # None), shared with the lines ``moved`` makes: a logged traceback's lines repeat under new stamps.
        self.ends: Optional[Dict[int, Any]] = None

    def clean(self) -> List[str]:
        """The line's segments, cleaned the first time."""
        if self.segments is None:
            text, self.rank, self.speaker = clean_speaking(
                self.raw, task_labels=self.task_labels, launcher_ranks=self.launcher_ranks)
            self.segments = split_segments(text)
        return self.segments

    def moved(self, raw: bytes) -> "_Seen":
        """What the line ``raw`` gave, which cleans as this one (another runner stamp before the same
        bytes): the same reading and rules; the excerpts, cut from the original text, are its own."""
        seen = _Seen(raw, self.lits, self.task_labels, self.launcher_ranks)
        seen.segments, seen.rank, seen.speaker = self.segments, self.rank, self.speaker
        if self.ends is None:
            self.ends = {}
        seen.ends = self.ends
        seen.hits = [hit if hit[1] else (*hit[:4], _single_excerpt(raw, hit[2], hit[3].start()), hit[5])
                     for hit in self.hits]
        return seen

    def excerpt_line(self) -> str:
        if self.excerpt is None:
            self.excerpt = _excerpt_line(visible_excerpt(self.raw))
        return self.excerpt


class _SourceScan:
    """Matching state for one source: open blocks, matches held back until earlier blocks close."""

    def __init__(
        self, path: str, rules: Sequence[Rule], plan: Plan, finder: Finder, timeout_s: float, seq: int,
        budget: Optional[MatchBudget] = None, incomplete: Optional[Rule] = None,
        loose: Optional[LoosePatterns] = None, long_lines: Optional[MatchBudget] = None,
        first: Optional[Sequence[RuleLookup]] = None, hyperscan: bool = False,
        markers_in: Optional[MarkersIn] = None,
    ) -> None:
        """``first``: ``rule_lookups(rules)``, made once per catalogue (an archive has hundreds of logs);
        ``hyperscan``: whether the engine is Hyperscan (``TestTracker``'s progress letters use it then)."""
        self.path = path
        self.markers_in = markers_in
        self.rules = rules
        self.finder = finder
        # Hyperscan's finder also says where the progress letters' hints matched, in the same pass.
        self.with_hints = getattr(finder, "with_hints", None)
        self.timeout_s = timeout_s
        self.seq = seq
        # The riders (``_engine_literals.Plan``: a line echo, candidate of no literal) only drop the
        # other matches of their line, so ``_line`` searches them once another rule matched it.
        self.riders = plan.riders
        self.literal_rules = [lit.rules for lit in plan.literals]
        self.always = plan.always
        self.first = first if first is not None else rule_lookups(rules)
        self.open: List[_Block] = []
        self.open_rules: set = set()  # (rule index, speaker) of the open blocks
        # (line, rule index, end_line, text, excerpt, groups, rank, progress) until earlier blocks close
        self.pending: List[tuple] = []
        self.budget = budget if budget is not None else MatchBudget(timeout_s, DEFAULT_MATCH_BUDGET_S)
        self.long_lines = long_lines if long_lines is not None else MatchBudget(LONG_SEARCH_S, LONG_BUDGET_S)
        self.incomplete = incomplete or Catalogue(()).guard_rule(SCAN_INCOMPLETE_RULE)
        self.notices: List[Match] = []  # scan-incomplete matches not yet yielded
        self.line_now = 0  # the line being matched, for a notice
        self.tracker = TestTracker(hyperscan)
        self.loose = loose if loose is not None else LoosePatterns(rules)
        self.window_ascii = True  # whether the window being matched is ASCII
        self.task_labels = True  # whether "N: " is srun's task label, until the log shows ctest -V's
        # whether a launcher's label (mpirun --tag-output's, srun --label's) is the rank, until the log shows
        # torch's own rank or torchrun's log behind one (clean.torchrun_behind_launcher: srun -l torchrun
        # labels the node)
        self.launcher_ranks = True
        self.ctest_probe = plan.probe(CTEST_VERBOSE)  # the literal that finds ctest -V's header
        # The literal that finds pytest-rerunfailures' RERUN lines (None: a plan without it, searched for
        # by the tracker), and whether the window being matched holds it on a candidate line.
        self.rerun_probe = plan.probe(RERUN_WORD)
        self.rerun_seen = False
        self.joined_to: Dict[int, int] = {}  # rule index -> last row a joined line matched it into
        # rule index -> (first, last) continued rows whose own match a join that tells more replaced
        self.told_by_join: Dict[int, Tuple[int, int]] = {}
        # A wrapped window as attribution reads it: (text, where each line starts, its first line number).
        self.view: Optional[Tuple[bytes, List[int], int]] = None
        self.continued_rows: Set[int] = set()  # rows of the window that continue a cut line
        self.cut_lines: Dict[int, bytes] = {}  # first row -> the joined line, for each cut line of the window
        self.advisory_rest: Dict[int, bytes] = {}  # continued row -> its line joined (``advisory_rows``)
        self.next_line = 1  # the number of the next window's first line
        self.reader: Optional[WrapReader] = None  # a pasted copy's, which may hold windows back
        self.last_content = 0  # the log's last line that says something (``last_content_line``)
        # the traceback without its head the log ends in, if any (``headless_traceback``)
        self.headless: Optional[Tuple[int, int, str, str]] = None
        # The last lines of the windows read (``_tail_after``), raw and as ``last_content_line`` reads them (a
        # wrapped window's view), and the first line of a held traceback whose rich-wrapped rows may go on in
        # the next window (``_rich_messages``).
        self.raw_tail: Tail = (0, 0, b"")
        self.read_tail: Tail = (0, 0, b"")
        self.rich_hold: Optional[int] = None
        # The line whose ``\r``-ended states were matched before it ended, and the rules they matched.
        self.early_line = 0
        self.early_rules: Set[int] = set()
        self.memo: Dict[bytes, _Seen] = {}  # a line's bytes -> what matching them gave (``_line``)
        self.memo_stamped: Dict[bytes, _Seen] = {}  # the same behind the runner's stamp, by what follows it
        self.ranks = RankWatch()  # whether a rank printed on after its traceback (``went_on``)
        self.line_echoes = {index for index, rule in enumerate(rules) if is_line_echo(rule)}
        self.blank_ends: Dict[int, bool] = {}  # rule index -> whether ``_blank_run`` may feed its blocks

    def run(self, source: Source) -> Iterator[Match]:
        try:
            stream = source.open()
        except Unscannable as err:  # skipped by sources.py (a device, an unreadable file in a folder)
            self._notice(str(err), 0)
            yield from self._notices()
            return
        try:
            first_line = 1
            # A terminal never wrapped a stream that can say nothing came: the guard's pipe.
            early = not source.may_be_wrapped and hasattr(stream, "read_within")
            states = not source.may_be_wrapped
            windows: Iterable[bytes] = self._stripped(
                _windows(stream, self.path, early, states), first_line, held=source.may_be_wrapped
            )
            if source.may_be_wrapped:  # a pasted copy: maybe indented as code, maybe cut by a terminal
                windows = dedented(windows)
            reader = self.reader = WrapReader(windows, self._join_tells) if source.may_be_wrapped else None
            for buf in reader if reader is not None else windows:
                if not buf:  # after an early pass (``_stripped``): its matches go out now
                    yield from self._flush()
                    continue
                self.window_ascii = buf.isascii()
                joined: Dict[int, tuple] = {}
                self.view = None
                self.continued_rows = set()
                self.cut_lines = {}
                self.advisory_rest = {}
                if reader is not None and reader.width:
                    lines = logical_lines(buf, reader.width)
                    joined = self._joined_lines(lines)
                    # Rows that continue a line the terminal cut end no echo block: their text is that line's.
                    self.continued_rows = {start for _pos, rows, _text in lines for start, _ in rows[1:]}
                    self.cut_lines = {pos: text for pos, _rows, text in lines}
                    self.advisory_rest = advisory_rows(buf, lines)
                    if lines:
                        self.view = (*attribution_view(buf, lines), first_line)
                if self.with_hints is not None:
                    cands, hint_ends = self.with_hints(buf, self.window_ascii)
                else:
                    cands, hint_ends = self.finder(buf), None
                next_line = self._window(buf, first_line, cands, joined)
                if self.ranks.open:
                    self.ranks.window(buf, first_line)
                # A window that ends its last line has ``next_line - 1`` lines: no need to count them again.
                # A wrapped window is read as its view (``attribution_view``): a frame the terminal cut is
                # one indented line again, not a row of words after a cut traceback's head.
                text = buf if self.view is None else self.view[0]
                counted = next_line - 1 if buf.endswith(b"\n") else None
                # Read after the lines before the window as far as the reading may go up, so that any window
                # size reads the same lines (a small live window, a rich message's rows cut from its panel).
                read, read_first = text, first_line
                if next_line - first_line < READ_BACK_LINES and len(text) < _TAIL_BYTES:
                    read, read_first = _joined(self.read_tail, text, first_line)
                last = last_content_line(read, read_first, counted)
                if last:
                    self.headless = headless_traceback(read, read_first, last, self.view is not None, counted)
                if last >= first_line and self.continued_rows:
                    last = _first_row(buf, first_line, next_line, last, self.continued_rows)
                self.last_content = last or self.last_content
                if self.view is not None:
                    # A wrapped view may join a RERUN the terminal cut: the tracker searches it itself.
                    self.tracker.end_window(self.view[0], first_line, next_line, self.view[1], raw=buf,
                                            hint_ends=hint_ends)
                else:
                    rerun = self.rerun_seen if self.rerun_probe is not None else None
                    self.tracker.end_window(buf, first_line, next_line, hint_ends=hint_ends, rerun=rerun)
                self._rich_messages(buf, first_line, next_line)
                self.raw_tail = _tail_after(self.raw_tail, buf, first_line, next_line)
                # a window read raw and longer than the lines kept leaves the same lines either way: one copy
                self.read_tail = self.raw_tail if reader is None or text is buf and len(buf) >= _TAIL_BYTES \
                    else _tail_after(self.read_tail, text, first_line, next_line)
                first_line = self.next_line = next_line
                if self.pending:
                    yield from self._flush()
                if self.notices:
                    yield from self._notices()
        finally:
            stream.close()
        self.tracker.end_log()
        self._close_cut_short_blocks()
        self.open = []  # other blocks still waiting for their end at EOF match nothing
        self.open_rules.clear()
        self._rich_messages(b"", self.next_line, self.next_line, at_end=True)
        yield from self._flush()
        yield from self._notices()

    def _stripped(self, windows: Iterator[bytes], first_line: int, held: bool = False) -> Iterator[bytes]:
        """``windows`` without their controls; ``_Early`` ones are matched here and become an empty
        window, on which ``run`` hands their matches on; a ``_Dropped`` one becomes a notice. ``held``:
        a reader between here and ``run`` may hold windows back (``self.reader``), so ``next_line`` is
        not yet the next window's first line: the lines it holds come after it. (The indent remover
        between them holds nothing when it asks for a window.)"""
        self.next_line = first_line
        for window in windows:
            kind = type(window)
            if kind is _Dropped:
                reader = self.reader
                at = self.next_line + (reader.held_lines() if held and reader is not None else 0)
                half = LINE_CAP // 2
                states = GIANT_LINE_STATES.format(half=_size(half)) if not held else ""
                self._notice(GIANT_LINE_CUT.format(unread=window.unread, length=window.length,
                                                   cap=_size(LINE_CAP), half=_size(half), states=states), at)
                yield b""
            elif kind is _Early:
                self._early(strip_controls(bytes(window), self.markers_in), self.next_line)
                yield b""
            else:
                yield strip_controls(window, self.markers_in)

    def _early(self, buf: bytes, line: int) -> None:
        """Match ``\\r``-ended states of line ``line`` before its end came (``_windows``): each rule they
        match is not tried on that line again, so the whole line, once it ends, adds no repeat."""
        if self.early_line != line:
            self.early_line, self.early_rules = line, set()
        self.window_ascii = buf.isascii()
        self._line(buf, 0, len(buf), line, self.finder(buf).get(0), early=True)

    def _window(self, buf: bytes, line: int, cands: Candidates, joined: Dict[int, tuple]) -> int:
        """Match the candidate lines of ``buf`` (its first line is ``line``) and the candidate
        ``joined`` lines starting there; return the next line number."""
        keys = sorted(cands.keys() | joined.keys()) if joined else sorted(cands)
        every = bool(self.always)
        rerun_probe = self.rerun_probe
        self.rerun_seen = False
        count = buf.count
        find = buf.find
        n = len(buf)
        pos = 0
        ki = 0
        nkeys = len(keys)
        while pos < n:
            while ki < nkeys and keys[ki] < pos:
                ki += 1
            if not self.open and not every:
                if ki >= nkeys:
                    break
                target = keys[ki]
                line += count(b"\n", pos, target)
                pos = target
            end = find(b"\n", pos)
            stop = n if end == -1 else end + 1
            lits = None
            if ki < nkeys and keys[ki] == pos:
                lits = cands.get(pos)
                ki += 1
                if lits:
                    if self.task_labels and self.ctest_probe in lits:
                        self.task_labels = False
                    if rerun_probe in lits:
                        self.rerun_seen = True
            if joined and pos in joined:
                # The joined line's match is at this row: an echo on the row must be tried to drop it.
                self._line(buf, pos, stop, line, lits, riders_too=True)
                self._joined_line(buf, pos, line, *joined[pos])
            elif self.open and self.window_ascii and (
                lits is None or not self._kept(self._candidate_rules(lits), buf, pos, stop)
            ):
                # A line no rule may match (no literal, or none its loosened patterns keep) is only fed.
                run = self._blank_run(buf, pos, keys[ki] if ki < nkeys else n, line)
                if run is not None:
                    pos, line = run
                    continue
                self._line(buf, pos, stop, line, lits)
            else:
                self._line(buf, pos, stop, line, lits)
            if self.open and pos in self.cut_lines:
                self._whole_line_blocks(self.cut_lines[pos], line)
            pos = stop
            line += 1
        return line + count(b"\n", pos) if pos < n else line

    def _line(self, buf: bytes, pos: int, stop: int, line: int, lits: Optional[set],
              riders_too: bool = False, early: bool = False) -> None:
        """Match one line holding the literals ``lits``; ``riders_too``: try the riders even when no
        other rule is a candidate; ``early``: states of a line not ended yet (``_early``), which open
        blocks are not fed and whose test is the one in force before it.

        A line whose bytes were matched before under the same literals (``self.memo``) is not cleaned or
        searched again: only what depends on where it is (open blocks, its test, its number) is done. Behind
        the runner's stamp, which cleaning removes, its bytes after the stamp are the key
        (``self.memo_stamped``): a logged traceback's lines repeat under a new stamp each time."""
        self.line_now = line
        key = raw = None
        memo = self.memo
        if stop - pos <= MEMO_LINE_BYTES and not (early or riders_too) and line != self.early_line:
            raw = key = buf[pos:stop]
            stamp = RUNNER_STAMP.match(raw) if raw[:1].isdigit() else None
            if stamp is not None:
                memo, key = self.memo_stamped, raw[stamp.end():]
            seen = memo.get(key)
            if (seen is not None and seen.lits == lits and seen.task_labels == self.task_labels
                    and seen.launcher_ranks == self.launcher_ranks):
                if seen.raw != raw:
                    seen = seen.moved(raw)
                if self.open:
                    self._feed_open(seen, pos, line)
                if seen.hits:
                    self._matched(buf, pos, line, seen, early)
                return
        indices = self._kept(self._candidate_rules(lits), buf, pos, stop)
        riders: Sequence[int] = self.riders
        if riders_too and riders:
            indices, riders = sorted({*indices, *riders}), ()
        if line == self.early_line and not early:
            indices = [index for index in indices if index not in self.early_rules]
            riders = [index for index in riders if index not in self.early_rules]
        seen = _Seen(buf[pos:stop] if raw is None else raw, lits, self.task_labels, self.launcher_ranks)
        if not indices and (early or not self.open):
            if key is not None:
                self._remember(memo, key, seen)
            return
        segments = seen.clean()
        if self.launcher_ranks and torchrun_behind_launcher(seen.speaker, seen.raw):
            self.launcher_ranks = self.ranks.launcher_ranks = False
            seen = _Seen(seen.raw, lits, self.task_labels, False)  # torchrun's agent's own line names no rank
            segments = seen.clean()
        if self.open and not early:
            self._feed_open(seen, pos, line)
        pure = self._search_line(indices, seen, segments)
        # A rider only drops the other matches of its line: searched once one of them matched (a
        # traceback's every frame line is a candidate of doctest's header, which none of them is).
        if riders and seen.hits:
            pure = self._search_line(riders, seen, segments) and pure
            seen.hits.sort(key=lambda hit: hit[0])
        if key is not None and pure:
            self._remember(memo, key, seen)
        if seen.hits:
            self._matched(buf, pos, line, seen, early)

    def _search_line(self, indices: Sequence[int], seen: _Seen, segments: List[str]) -> bool:
        """Search the cleaned ``segments`` of a line for the rules ``indices``, adding their matches to
        ``seen.hits``; whether the searches depended on the line's bytes alone (no budget was charged)."""
        first = self.first
        pure = True
        for index in indices:
            is_block, compiled, user = first[index]
            if user:
                pure = False
                found = self._search_user(index, compiled, segments)
            else:
                found = None
                for seg in segments:
                    # inline, not _search_builtin: this runs for every candidate rule of every candidate line
                    if len(seg) <= LONG_LINE_CHARS:
                        m = compiled.search(seg)
                    else:
                        pure = False
                        m = self._search_long(index, compiled, seg)
                    if m is not None:
                        found = seg, m
                        break
            if found is None:
                continue
            seg, m = found
            if is_block:
                seen.hits.append((index, True, seg, m, None, None))
            else:
                excerpt = _single_excerpt(seen.raw, seg, m.start())
                seen.hits.append((index, False, seg, m, excerpt, _groups(m)))
        return pure

    @staticmethod
    def _remember(memo: Dict[bytes, _Seen], key: bytes, seen: _Seen) -> None:
        if len(memo) >= MEMO_LINES:
            memo.clear()  # bounded; a log whose lines repeat fills it again at once
        memo[key] = seen

    def _feed_open(self, seen: _Seen, pos: int, line: int) -> None:
        """Give the open blocks line ``line`` (starting at ``pos``), unless it is not theirs."""
        segments = seen.clean()
        speaker = seen.speaker
        excerpt_line = seen.excerpt_line()
        continued = pos in self.continued_rows
        if seen.ends is None:
            seen.ends = {}
        for block in list(self.open):
            if line > block.last_row and (speaker is None or block.speaker in (None, speaker)):
                self._feed(block, segments, excerpt_line, line, continued, seen.rank, seen.ends)

    def _matched(self, buf: bytes, pos: int, line: int, seen: _Seen, early: bool) -> None:
        """Open the blocks and hold the matches of ``seen.hits`` at line ``line``."""
        progress: Any = self.tracker.carry if early else _UNKNOWN
        # Whether the tracker is idle here, asked once: while ``progress`` is unknown nothing else moves it
        # (a logged traceback's ``store.set(...)`` line is a c10d start and a line echo).
        idle: Optional[bool] = None
        for index, is_block, seg, m, excerpt, groups in seen.hits:
            rows = self.told_by_join.get(index)
            if rows is not None and rows[0] <= line <= rows[1] and not is_block:
                continue  # the join of the cut line holding this row told it, with more (``_joined_line``)
            if not is_block and pos in self.advisory_rest and self._refused(index, self.advisory_rest[pos]):
                continue  # an INFO or warning line's rest, cut by a terminal: the whole line does not say it
            if early:
                self.early_rules.add(index)
            if is_block and not early and self._never_ends(index, buf, pos, seen.speaker):
                # No finding, so no test to name; the tracker still reads up to here unless it is idle.
                if progress is _UNKNOWN:
                    if idle is None:
                        idle = self._tracker_idle(buf, pos)
                    if not idle:
                        progress = self._progress(buf, pos, line)
                # What opening it would leave once its lines are fed: the earlier start it replaces gone.
                if (index, seen.speaker) in self.open_rules:
                    self._drop(index, seen.speaker)
                continue
            if progress is _UNKNOWN:
                if not is_block and index in self.line_echoes:
                    if idle is None:
                        idle = self._tracker_idle(buf, pos)
                    if idle:
                        # Nothing reads a line echo's test (``LogState._take`` reads its groups and lines):
                        # a logged traceback's every source line is one (python-source-line).
                        self.pending.append((line, index, line, seg, excerpt, dict(groups), seen.rank, None))
                        continue
                progress = self._progress(buf, pos, line)
            if is_block:
                self._open(index, line, seg, seen.rank, seen.speaker, m, progress, seen.excerpt_line(), line)
            else:
                self.pending.append((line, index, line, seg, excerpt, dict(groups), seen.rank, progress))

    def _tracker_idle(self, buf: bytes, pos: int) -> bool:
        """Whether the test tracker needs no lookup for the line at ``buf[pos]``
        (``TestTracker.idle_through``, outside a wrapped window's view). ``at`` was a fifth of a scan of
        logged tracebacks, where a start opens at every ``store.set(...)`` frame (c10d-store-call-reset)
        for ``_never_ends`` to drop, and each source line is a line echo."""
        if self.view is not None:
            return False
        end = buf.find(b"\n", pos)
        return self.tracker.idle_through(buf, len(buf) if end == -1 else end)

    def _blank_run(self, buf: bytes, pos: int, limit: int, line: int) -> Optional[Tuple[int, int]]:
        """Feed the open blocks the run of lines from ``buf[pos]`` (line ``line``), before ``limit`` (the
        next candidate line), that clean to blank-led text (``clean.blank_led_run``: a traceback's frames
        and source lines; ``clean.speaker_led_run``: the same behind one process's prefix, which only the
        blocks of no speaker or that one read), when none of the blocks that read them can take more from
        them than their excerpt: no end of theirs matches such a line (``starts_unblank``), they read
        no capture, and a cut_short of theirs already matched (``cut_ok``). What ``_line`` and ``_feed``
        would do with each line, without cleaning it (the excerpt lines are made when the block closes);
        the run stops before a block's ``max_lines``. Returns where the run ends and the next line's
        number; None when it fed nothing."""
        if self.always or self.continued_rows or self.cut_lines or self.early_line >= line:
            return None
        speakers = False
        for block in self.open:
            if block.speaker is not None:
                speakers = True
            elif not self._blank_ends(block.index):
                return None  # a block of no speaker reads every line
        speaker = None
        end = blank_led_run(buf, pos, limit)
        if end == pos and speakers:
            end, speaker = speaker_led_run(buf, pos, limit)
        if end == pos:
            return None
        rules = self.rules
        room = None
        fed = []
        for block in self.open:
            if speaker is not None and block.speaker not in (None, speaker):
                continue  # not its process's line: ``_feed_open`` passes it by
            if block.last_row >= line or not self._blank_ends(block.index):
                return None
            if not block.cut_ok and rules[block.index].cut_short_re is not None:
                return None  # the line that says it was cut (a traceback's first frame) is read as usual
            fed.append(block)
            left = rules[block.index].max_lines - 1 - block.count
            room = left if room is None else min(room, left)
        if not fed:
            return None
        if room < 1:
            return None
        count = buf.count(b"\n", pos, end)
        if count > room:
            end = pos
            for _ in range(room):
                end = buf.find(b"\n", end) + 1
            count = room
        chunk = buf[pos:end]
        last = line + count - 1
        for block in fed:
            block.add_lines(chunk, count)
            block.fed_to = last
        self.line_now = last
        return end, line + count

    def _blank_ends(self, index: int) -> bool:
        """Whether ``_blank_run`` may feed the blocks of rule ``index``: a built-in rule with an end that
        matches no blank-led line, and no capture (a cut_short is read line by line until it matched)."""
        ok = self.blank_ends.get(index)
        if ok is None:
            rule = self.rules[index]
            ok = self.blank_ends[index] = (
                not rule.user_defined and rule.capture_re is None
                and rule.end is not None and starts_unblank(rule.end, rule.ignore_case)
            )
        return ok

    def _never_ends(self, index: int, buf: bytes, pos: int, speaker: Optional[str]) -> bool:
        """Whether a block of rule ``index`` starting at the line at ``buf[pos]`` would be dropped unended:
        none of the ``max_lines - 1`` lines it would be fed (all ended in this window) holds its end, by
        the end's loosened pattern (``LoosePatterns.end_search``). Such a block is not opened, so the lines
        after it stay with the finder (c10d-store-call-reset starts at every ``store.set(...)`` frame of a
        logged traceback). Only for a plain block in an unwrapped window: it is dropped exactly then, and
        nothing but its end could have changed what it gives. A block of no speaker is fed every line; one
        of a speaker only the lines of no speaker or its own (``_fed_span``), and none of the lines up to
        its last may hold the end."""
        if self.cut_lines or self.continued_rows:
            return False
        rule = self.rules[index]
        if rule.marker is not None or rule.capture_re is not None or rule.cut_short_re is not None:
            return False
        search = self.loose.end_search(index)
        if search is None:
            return False
        find = buf.find
        start = stop = find(b"\n", pos) + 1
        if speaker is not None:
            stop = self._fed_span(buf, start, rule.max_lines - 1, speaker) if start else 0
        else:
            for _ in range(rule.max_lines - 1):
                if stop == 0:
                    return False  # its lines go on in the next window
                stop = find(b"\n", stop) + 1
        if stop == 0 or not (self.window_ascii or buf[start:stop].isascii()):
            return False
        return search(buf, start, stop) is None

    def _fed_span(self, buf: bytes, start: int, lines: int, speaker: str) -> int:
        """Where the line ends after which a block of ``speaker`` was fed ``lines`` lines from ``buf[start]``
        (``_feed_open``: a line of no speaker or of ``speaker``); 0 when the window ends first, or when more
        than ``FED_SPAN_LINES`` lines pass first. Runs of frame lines are told by their bytes
        (``blank_led_run``: no speaker; ``speaker_led_run``: its speaker), other lines cleaned."""
        find = buf.find
        at = start
        left = FED_SPAN_LINES
        while lines > 0:
            limit = at
            for _ in range(lines):  # the fed lines are among the next ``lines`` lines
                limit = find(b"\n", limit) + 1
                if limit == 0:
                    return 0
            end = blank_led_run(buf, at, limit)
            said: Optional[str] = None
            if end == at:
                end, said = speaker_led_run(buf, at, limit)
            if end == at:
                end = find(b"\n", at) + 1
                said = clean_speaking(buf[at:end], task_labels=self.task_labels)[2]
            passed = buf.count(b"\n", at, end)
            if said is None or said == speaker:
                lines -= passed
            left -= passed
            if left < 0:
                return 0
            at = end
        return at

    def _open(self, index: int, line: int, seg: str, rank: Optional[int], speaker: Optional[str], m,
              progress: Any, excerpt_line: str, last_row: int) -> None:
        """Start a block of rule ``index`` at ``line``; its lines are fed from the one after ``last_row``."""
        if (index, speaker) in self.open_rules:
            # The latest start wins: the earlier one has had no end so far.
            self._drop(index, speaker)
        block = _Block(index, line, seg, rank, _groups(m), progress, last_row, speaker)
        block.add(excerpt_line)
        self.open.append(block)
        self.open_rules.add((index, speaker))

    def _progress(self, buf: bytes, pos: int, line: int) -> Optional[TestLine]:
        """The progress line in force at ``line`` (starting at ``buf[pos]``); in a wrapped window, read
        from its attribution view, where a progress line the terminal cut is whole."""
        if self.view is None:
            return self.tracker.at(buf, pos, line)
        text, starts, first = self.view
        return self.tracker.at(text, starts[line - first], line)

    def _joined_lines(self, lines: List[Tuple[int, List[Piece], bytes]]) -> Dict[int, tuple]:
        """The lines of a wrapped window that a terminal cut into rows (``logical_lines``), run through
        the finder: row start -> (joined text, its rows, literals found in it)."""
        if not lines:
            return {}
        found = self.finder(b"\n".join(text for _pos, _rows, text in lines) + b"\n")
        joined: Dict[int, tuple] = {}
        offset = 0
        for pos, rows, text in lines:
            lits = found.get(offset)
            if lits is not None or self.always:
                joined[pos] = (text, rows, lits)
            offset += len(text) + 1
        return joined

    def _join_tells(self, lines: Sequence[Tuple[bytes, Sequence[bytes]]]) -> bool:
        """Whether one of ``lines`` (text joined across a terminal's cuts, and its rows) matches a built-in
        rule that none of its rows matches alone: the catalogue's word that a cut hid a message
        (``_engine_wrap``). One pass of the finder over them all, as for a window's joined lines."""
        found = self.finder(b"\n".join(joined for joined, _rows in lines) + b"\n")
        offset = 0
        for joined, rows in lines:
            lits = found.get(offset)
            offset += len(joined) + 1
            indices = [i for i in self._candidate_rules(lits) if not self.first[i][2]]
            # The loosened patterns read ASCII lines (``_kept``); the windows' own state is not known yet.
            if indices and len(joined) <= LONG_LINE_CHARS and joined.isascii():
                indices = self.loose.matching(indices, joined, 0, len(joined))
            if indices and self._tells_more(indices, joined, rows):
                return True
        return False

    def _tells_more(self, indices: Sequence[int], joined: bytes, rows: Sequence[bytes]) -> bool:
        """Whether a built-in rule of ``indices`` matches ``joined`` and none of its ``rows`` alone."""
        cleaned = clean_speaking(joined, task_labels=self.task_labels)[0]
        pieces = [clean_speaking(row, task_labels=self.task_labels)[0] for row in rows]
        for index in indices:
            compiled = self.first[index][1]
            if self._search_builtin(index, compiled, cleaned) is not None and not any(
                self._search_builtin(index, compiled, piece) is not None for piece in pieces
            ):
                return True
        return False

    def _refused(self, index: int, text: bytes) -> bool:
        """Whether the built-in rule ``index`` does not match the line ``text`` (a cut line joined again)."""
        if self.first[index][2]:
            return False  # a user's rule is matched on the rows as the user wrote it
        cleaned = clean_speaking(text, task_labels=self.task_labels)[0]
        return self._search_builtin(index, self.first[index][1], cleaned) is None

    def _joined_line(self, buf: bytes, pos: int, line: int, text: bytes, rows: List[Piece],
                     lits: Optional[set]) -> None:
        """Match a joined line (``_engine_wrap``) with the rules that none of its rows matches alone:
        a join only adds what the terminal's cut hid. The match is at the first row; a block that
        starts there is fed from the row after the last one. A rule that a continued row matches alone
        but with fewer of its groups than the join (DeepSpeed's "exits with return code = -9" on the
        last row, the rank's "--local_rank=7" on the first) is the join's too: its match replaces the
        row's, at the line's first row."""
        kept = self._kept(self._candidate_rules(lits), text, 0, len(text))
        if kept and self.riders:  # a join tries its riders beside the rules it may match
            kept = sorted({*kept, *self.riders})
        indices = [i for i in kept if not self.first[i][2]]
        if not indices:
            return
        cleaned, rank, speaker = self._clean_as_read(text)
        pieces = [self._clean_as_read(buf[start:end])[0] for start, end in rows]
        last_row = line + len(rows) - 1
        progress: Any = _UNKNOWN
        for index in indices:
            if self.joined_to.get(index, 0) >= line:
                continue  # a join from a row above already matched this rule into this row
            is_block, compiled, _user = self.first[index]
            m = self._search_builtin(index, compiled, cleaned)
            if m is None:
                continue
            alone = [self._search_builtin(index, compiled, piece) for piece in pieces]
            if any(alone):
                if is_block:
                    continue
                if alone[0]:
                    if not _bracket_cut_open(alone[0], pieces[0], m):
                        continue
                    self._drop_pending(line, index)
                elif not all(_groups(m).keys() > _groups(a).keys() for a in alone if a):
                    continue
                self.told_by_join[index] = (line + 1, last_row)
            self.joined_to[index] = last_row
            if progress is _UNKNOWN:
                progress = self._progress(buf, pos, line)
            excerpt = _single_excerpt(text, cleaned, m.start())
            if is_block:
                self._open(index, line, cleaned, rank, speaker, m, progress, excerpt, last_row)
            else:
                self.pending.append((line, index, last_row, cleaned, excerpt, _groups(m), rank, progress))

    def _clean_as_read(self, raw: bytes) -> Tuple[str, Optional[int], Optional[str]]:
        """``clean_speaking`` under this log's reading so far (``task_labels``, ``launcher_ranks``): a joined
        line and each of its rows are cleaned alike, so a rule that a row matches alone is judged on what
        the join would give it."""
        return clean_speaking(raw, task_labels=self.task_labels, launcher_ranks=self.launcher_ranks)

    def _drop_pending(self, line: int, index: int) -> None:
        """Take back the match of rule ``index`` that row ``line`` made alone (``_line`` ran just before):
        the join of the line the row starts tells it whole (``_bracket_cut_open``)."""
        for at in range(len(self.pending) - 1, -1, -1):
            if self.pending[at][0] == line and self.pending[at][1] == index:
                del self.pending[at]
                return

    def _whole_line_blocks(self, text: bytes, line: int) -> None:
        """Give the open blocks read on whole lines (``_feed``) the line a terminal cut into rows, ``text``
        joined again: its rows are fed one by one, a continued row only to the excerpt, and no row may
        hold the capture's or the end's wording (an echo of a retried failure that never read the
        failure, or never ended, would leave that failure an error)."""
        whole = [b for b in self.open
                 if line > b.last_row and self.rules[b.index].marker in _WHOLE_LINE_END_MARKERS]
        if not whole:
            return
        cleaned, _rank, speaker = clean_speaking(text, task_labels=self.task_labels)
        for block in whole:
            if speaker is not None and block.speaker not in (None, speaker):
                continue
            rule = self.rules[block.index]
            if rule.capture_re is not None and not rule.capture_re.groupindex.keys() <= block.groups.keys():
                captured = self._search(block.index, rule.capture_re, [cleaned], rule.user_defined)
                for name, value in _groups(captured[1]).items() if captured is not None else ():
                    block.groups.setdefault(name, value)
            found = self._search(block.index, rule.end_re, [cleaned], rule.user_defined)
            if found is not None:
                block.groups.update(_groups(found[1]))
                self._close(block, line)

    def _kept(self, indices: Sequence[int], buf: bytes, pos: int, stop: int) -> Sequence[int]:
        """The candidate rules ``indices`` (never a rider) that the line ``buf[pos:stop]`` may match:
        those its loosened patterns keep."""
        # A loosened pattern runs in ``re`` with no time limit, and on a long line even a linear-looking
        # one can be quadratic (``[\w.-]+\s+exited `` over 32 KiB of word bytes: 20 s); such lines go
        # straight to the budgeted search (``_search_long``).
        if indices and stop - pos <= LONG_LINE_CHARS and (self.window_ascii or buf[pos:stop].isascii()):
            indices = self.loose.matching(indices, buf, pos, stop)
        return indices

    def _candidate_rules(self, lits: Optional[set]) -> Sequence[int]:
        """The rules to try on a line holding the literals ``lits`` (None: no literal)."""
        if lits is None:
            return self.always
        if len(lits) == 1 and not self.always:
            (only,) = lits
            return self.literal_rules[only]
        chosen = set(self.always)
        for lit in lits:
            chosen.update(self.literal_rules[lit])
        return sorted(chosen)

    def _feed(self, block: _Block, segments: List[str], excerpt_line: str, line: int,
              continued: bool = False, rank: Optional[int] = None,
              ends: Optional[Dict[int, Any]] = None) -> None:
        """Give ``block`` its next line; ``continued``: the row continues a line a terminal cut. An echo
        marker's block (which drops every match on its lines) only keeps such a row in its excerpt: its end is
        read on whole lines, so a cut traceback frame does not end it before the line it must cover. So
        does a Python traceback's: a cut frame's tail ("llel", "e") reads as a bare exception name, and
        the traceback would end there instead of at its exception line. An echo's ``capture`` holds only
        on a line of its start's ``[rankN]:`` prefix (``rank``: this line's): a program's WARNING record
        and the traceback it logged are one write, prefixed alike; a "[rank0]: Traceback" under an
        unprefixed record is the rank's own uncaught exception, printed by another writer. ``ends``: the
        line's ``_Seen.ends``, where a built-in rule's end search of the same segments is remembered."""
        rule = self.rules[block.index]
        block.add(excerpt_line)
        block.fed_to = line
        if continued and rule.marker in _WHOLE_LINE_END_MARKERS:
            if block.count >= rule.max_lines:
                self._drop(block.index, block.speaker)
            return
        if rule.capture_re is not None and not rule.capture_re.groupindex.keys() <= block.groups.keys() \
                and (rule.marker != ECHO_MARKER or rank == block.rank):
            captured = self._search(block.index, rule.capture_re, segments, rule.user_defined)
            if captured is not None:
                for name, value in _groups(captured[1]).items():
                    block.groups.setdefault(name, value)  # the first inner line that says it wins
        if rule.cut_short_re is not None and not block.cut_ok:
            cut_line = self._search(block.index, rule.cut_short_re, segments, rule.user_defined)
            block.cut_ok = cut_line is not None
        if ends is None or rule.user_defined:
            found = self._search(block.index, rule.end_re, segments, rule.user_defined)
        else:
            found = ends.get(block.index, _UNKNOWN)
            if found is _UNKNOWN:
                found = self._search(block.index, rule.end_re, segments, False)
                # A long segment's search is charged to the rule's budget (``_search_long``): each is its own.
                if all(len(seg) <= LONG_LINE_CHARS for seg in segments):
                    ends[block.index] = found
        if found is not None:
            block.groups.update(_groups(found[1]))
            if block.cut_ok:  # an end without its groups (the next process's header): they were cut
                self._groups_cut(block)
            self._close(block, line)
        elif block.count >= rule.max_lines:
            self._drop(block.index, block.speaker)

    def _close_cut_short_blocks(self) -> None:
        """End the log's open blocks that its ``cut_short`` says happened, their end groups unknown."""
        for block in [b for b in self.open if b.cut_ok]:
            self._groups_cut(block)
            self._close(block, block.fed_to)

    def _groups_cut(self, block: _Block) -> None:
        """Give the end groups a block never saw the reading ``CUT_SHORT_GROUP``."""
        end_re = self.rules[block.index].end_re
        for name in end_re.groupindex if end_re is not None else ():
            block.groups.setdefault(name, CUT_SHORT_GROUP)

    def _drop(self, index: int, speaker: Optional[str]) -> None:
        """Forget the open block of rule ``index`` and ``speaker``: no end within ``max_lines`` means no
        match."""
        self.open = [block for block in self.open if (block.index, block.speaker) != (index, speaker)]
        self.open_rules.discard((index, speaker))

    def _close(self, block: _Block, end_line: int) -> None:
        self.open.remove(block)
        self.open_rules.discard((block.index, block.speaker))
        lines = block.excerpt_lines()
        excerpt = "\n".join(lines)
        if block.count > len(lines):
            excerpt += f"\n[... {block.count - len(lines)} more lines not shown]"
        end_line = max(end_line, block.line)
        if block.rank is not None and self.rules[block.index].marker == TRACEBACK_MARKER:
            self.ranks.watch(block.rank, end_line)
        pending = (
            block.line, block.index, end_line, block.text, excerpt, block.groups, block.rank, block.progress
        )
        self.pending.append(pending)

    def _rich_messages(self, buf: bytes, first_line: int, next_line: int, at_end: bool = False) -> None:
        """Give each held traceback that ends in an exception line under a rich panel its whole line, when
        rich wrapped it onto the rows below (``rich_wrapped_message``): "KeyError:" alone on its row, its
        key folded under it. Read in the window ``buf`` (lines ``first_line`` to ``next_line - 1``) after
        the last lines of the windows before it (``raw_tail``), so that any window size reads the same
        rows; a traceback whose rows may go on in the next window is held (``rich_hold``) until they are
        read, or the log ends (``at_end``). The raw rows: a wrapped view joins a row as wide as the terminal
        to the next without a blank."""
        self.rich_hold = None
        held = [p for p in self.pending if self.rules[p[1]].marker == TRACEBACK_MARKER and p[5].get("exc")]
        # A panel's corners are not ASCII: a window known to be ASCII (``run``) after ASCII lines kept is not
        # joined to them nor searched (a fiftieth of a scan of logged tracebacks, every window of which holds
        # some).
        if not held or (self.window_ascii or not buf) and self.raw_tail[2].isascii():
            return
        text, base = _joined(self.raw_tail, buf, first_line, at_end)
        if text.endswith(b"\n") or not text:
            last = next_line - 1
        else:  # a last line without its end
            last = base + text.count(b"\n")
        if not any(corner in text for corner in RICH_CORNERS):
            return
        for line, _index, end_line, _text, _excerpt, groups, _rank, _progress in held:
            if end_line <= base:
                continue  # its panel's bottom is in no line kept
            rows_end = end_line + RICH_WRAP_ROWS + 1  # the last row ``rich_wrapped_message`` may read
            if not at_end and rows_end > last:
                self.rich_hold = line if self.rich_hold is None else min(self.rich_hold, line)
                continue
            rows_end = min(rows_end, last)
            whole = rich_wrapped_message(_through(text, base, last, rows_end), base, end_line, rows_end)
            if whole is not None:
                groups["exc"] = whole

    def _flush(self) -> Iterator[Match]:
        """Yield held matches that no open block can precede any more, in (line, rule) order."""
        if not self.pending:
            return
        limit = min(block.line for block in self.open) if self.open else None
        if self.rich_hold is not None:
            limit = self.rich_hold if limit is None else min(limit, self.rich_hold)
        if limit is None:
            ready, self.pending = self.pending, []
        else:
            ready = [p for p in self.pending if p[0] < limit]
            if not ready:
                return
            self.pending = [p for p in self.pending if p[0] >= limit]
        ready.sort(key=lambda p: (p[0], p[1]))
        rules = self.rules
        path = self.path
        for line, index, end_line, text, excerpt, groups, rank, progress in ready:
            match = engine_match(rules[index], path, line, end_line, text, excerpt, self.seq, groups, rank,
                                 progress)
            self.seq += 1
            yield match

    def _search(self, index: int, compiled, segments: Sequence[str], user: bool):
        """First segment ``compiled`` matches, with its match object (None when none does)."""
        if compiled is None:
            return None
        if user:
            return self._search_user(index, compiled, segments)
        for seg in segments:
            m = self._search_builtin(index, compiled, seg)
            if m is not None:
                return seg, m
        return None

    def _search_builtin(self, index: int, compiled, text: str):
        """``compiled.search(text)`` for a built-in pattern; on a long line under ``_search_long``."""
        if len(text) <= LONG_LINE_CHARS:
            return compiled.search(text)
        return self._search_long(index, compiled, text)

    def _search_long(self, index: int, compiled, text: str):
        """A built-in pattern's search of a line over ``LONG_LINE_CHARS``, charged to the rule's time on such
        lines; None when it found nothing in time, or the rule spent that time (said once, as a notice)."""
        long_lines = self.long_lines
        key = self.rules[index].id
        if long_lines.is_off(key):
            return None
        m = long_lines.search(key, compiled, text)
        if m is None and long_lines.is_off(key):
            reason = LONG_LINES_SPENT.format(
                rule=key, chars=LONG_LINE_CHARS, budget=format_duration(long_lines.total_s)
            )
            self._notice(reason, self.line_now, {"rule": key})
        return m

    def _search_user(self, index: int, compiled, segments: Sequence[str]):
        """``_search`` for a user's pattern, charged to its budget; switched off once it is spent."""
        budget = self.budget
        key = self.rules[index].id
        if budget.is_off(key):
            return None
        for seg in segments:
            m = budget.search(key, compiled, seg)
            if m is not None:
                return seg, m
            if budget.is_off(key):
                self._switched_off(key)
                return None
        return None

    def _switched_off(self, rule_id: str) -> None:
        """Record the scan-incomplete match saying that user rule ``rule_id`` is off from this line on."""
        reason = BUDGET_SPENT.format(rule=rule_id, budget=format_duration(self.budget.total_s))
        self._notice(reason, self.line_now, {"rule": rule_id})

    def _notice(self, reason: str, line: int, groups: Optional[Dict[str, str]] = None) -> None:
        """Record a scan-incomplete match: part of this source was not scanned, ``reason`` says which."""
        self.notices.append(
            Match(rule=self.incomplete, path=self.path, line=line, end_line=line, text=reason, excerpt="",
                  seq=0, groups={"reason": reason, **(groups or {})})
        )

    def _notices(self) -> Iterator[Match]:
        notices, self.notices = self.notices, []
        for notice in notices:
            yield dataclasses.replace(notice, seq=self.seq)
            self.seq += 1


def _bracket_cut_open(first, row: str, joined) -> bool:
    """Whether the match ``first`` on a cut line's first row ``row`` holds a value the terminal cut inside
    its brackets, which the match ``joined`` on the whole line closes: pytest's short summary "FAILED
    t.py::test_x[tenso" / "r_parallel_size_2_bf16] - AssertionError: ..." names a test no run has (a node
    id's parameters are always closed) and loses the reason. A first row's match is otherwise the row's:
    read on the whole line, it swallowed the next line of a log misread as wrapped (wrap17)."""
    end = len(row.rstrip())
    whole = _groups(joined)
    for name, value in _groups(first).items():
        if first.end(name) == end and value.count("[") > value.count("]"):
            longer = whole.get(name, "")
            closed = longer.count("[") == longer.count("]")
            if closed and longer.startswith(value) and len(longer) > len(value):
                return True
    return False


def _groups(m) -> Dict[str, str]:
    found = m.groupdict()
    if not found:
        return found
    return {name: value for name, value in found.items() if value is not None}


def _excerpt_line(line: str) -> str:
    """A line fit for an excerpt: the last visible state of a redrawn line, cut to a sane length."""
    if "\r" in line:
        states = [s for s in line.split("\r") if s]
        line = states[-1] if states else ""
    if len(line) > EXCERPT_LINE_CHARS:
        line = line[:EXCERPT_LINE_CHARS] + f" [... {len(line) - EXCERPT_LINE_CHARS} more characters]"
    return line


def _single_excerpt(raw: bytes, segment: str, at: int) -> str:
    """The original line, or for a redrawn or huge line the matched segment around the match."""
    line = visible_excerpt(raw)
    if "\r" not in line and len(line) <= EXCERPT_LINE_CHARS:
        return line
    if len(segment) <= EXCERPT_LINE_CHARS:
        return segment
    start = max(0, at - EXCERPT_LINE_CHARS // 4)
    piece = segment[start:start + EXCERPT_LINE_CHARS]
    return ("[...] " if start else "") + piece + " [...]"


# Block markers whose end is read on whole lines only (``_feed``): a row that continues a cut line ends none.
_WHOLE_LINE_END_MARKERS = frozenset({"echo", "traceback"})


def _through(text: bytes, first_line: int, last: int, line: int) -> bytes:
    """``text`` (lines ``first_line`` to ``last``) up to the end of its line ``line``, walked to from the
    nearer end: the rows under a rich panel are read the same wherever in a window they are."""
    if line >= last:
        return text
    if last - line <= line - first_line:
        end = len(text) - 1 if text.endswith(b"\n") else len(text)
        for _ in range(last - line):
            end = text.rfind(b"\n", 0, end)
        return text[:end + 1]
    end = -1
    for _ in range(line - first_line + 1):
        end = text.find(b"\n", end + 1)
    return text[:end + 1]


def _first_row(buf: bytes, first_line: int, next_line: int, line: int, continued: Set[int]) -> int:
    """The number of the row that opens the logical line row ``line`` of ``buf`` belongs to: a row a
    terminal cut off a long line (its start in ``continued``) is that line's, whose matches carry the
    number of its first row."""
    end = len(buf)
    number = next_line - 1 if buf.endswith(b"\n") else next_line
    if buf.endswith(b"\n"):
        end -= 1
    start = buf.rfind(b"\n", 0, end) + 1
    while number > line and start > 0:  # walk up to ``line``'s row from the window's last
        end = start - 1
        start = buf.rfind(b"\n", 0, end) + 1
        number -= 1
    while start in continued and start > 0 and number > first_line:
        end = start - 1
        start = buf.rfind(b"\n", 0, end) + 1
        number -= 1
    return number


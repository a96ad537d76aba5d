"""Progress letters: how a test ended under pytest or unittest without ``-v``, read after an event.

Without ``-v`` pytest names no test: it writes one letter per test report (``.`` passed, ``F`` failed,
``E`` error, ``s`` skipped, ``x`` xfailed, ``X`` xpassed, ``R`` rerun) with no newline, and under ``-s``
(no capture; pytest then also leaves out the ``[ NN%]`` column) a test's own output lands between the
letters: the letter of the test that printed an event is the first one written after the test's
output, at the start of a line or glued before the next test's output (``.FTraceback (most recent
call last):``). ``python -m unittest`` without ``-v`` does the same on stderr (``u``: unexpected success).

A test's output may itself look like letters (``....`` printed without a newline before the test
failed reads ``....F``), and a genuine letter glued to the end of a test's output is not at a line's
start. So letters are believed only when they account for the run's verdict exactly (a letter glued to the
start of a word, ``.srank 1 starting``, is a word's start unless only counting it makes them): as many of each
letter, from the run's first letter to the next separator line (pytest's ``=== FAILURES ===`` and
verdict lines, unittest's ``=====`` and ``-----`` rules), as the verdict counts of each outcome. A run
where they do not tell nothing, and its events keep the conservative reading (an error with no test).

pytest's short summary (``-rA``, ``-rp``) lists a "PASSED id" line for each passed report in the order it
was made (``_pytest/terminal.py`` 9.2.0 ``short_test_summary``: ``show_simple`` over ``stats["passed"]``),
the order its ``.`` letters were written in: so the k-th ``.`` of a run whose letters account for its
verdict is the k-th PASSED line after its summary's separator, when there are as many as it wrote dots.
Under pytest-xdist the controller writes letters as reports come from any worker and the summary keeps
that order, but whose output comes before a letter the log does not say (``outcome_after`` tells nothing
there); a run with reruns (``R``) is not named either.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any, Dict, Iterator, List, Match, Optional, Tuple

from ..lazy_re import lazy
from ._hyperscan import database, match_ends
from .clean import strip_controls

_ANSI = rb"(?:\x1b\[[0-9;]*m)*"
# The prefix a launcher writes before each line of the process it ran (``clean.py`` removes the same):
# docker compose's "service-1  | " (coloured), torchrun --tee's "[default0]:" (role and local rank) and
# the "[rank0]:" or "[0]:" of its log line prefix template. Its letters are that process's own run.
_WHO = rb"(?:[\w.-]+ +\| |\[[A-Za-z_]*\d+\]: ?)"
# A line that starts with letters (after GitHub's timestamp, colour codes, a launcher's prefix, and pytest's
# file name without -v), or a separator line. Letters followed by a lower-case one start a word ("Fatal",
# "subprocess", "Exception", "RuntimeError"): ``next`` holds it, and the word's start is not counted. A
# first letter followed by a lower-case one that is no letter ("step 3", "Error:") starts a word for sure.
# torchrun's tee writes its prefix before each piece of a line it read ("[default0]:..[default0]:F": the
# letter came after it had read the dots: torch/distributed/elastic/multiprocessing/tail_log.py).
# (A line that starts like a timestamp and is none, or not GitHub's, is no row: without that the prefix's
# name would be tried over each timestamp's digits again, doubling the cost of a line the hints found.)
_ROW_TEXT = (
    rb"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z |(?!\d{4}-))" + _ANSI
    + rb"(?:(?P<who>" + _WHO + rb")" + _ANSI + rb")?"
    + rb"(?:(?P<sep>={5}|-{5})|(?P<xdist>created: \d+/\d+ workers?|\d+ workers? \[\d+ items?\])"
    + rb"|(?:[\w./-]+\.py )?(?P<run>" + _ANSI + rb"(?:\.|[FEsxXRu](?![a-rtvwyz]))(?:" + _ANSI
    + rb"(?:(?P=who)" + _ANSI + rb")?[.FEsxXRu])*)" + _ANSI + rb"(?P<next>[a-z]?))"
)
# What can start a row or a separator, after a newline, GitHub's timestamp, a launcher's prefix or pytest's
# file name (any timestamp the row allows ends in "Z ", any prefix in "| " or "]:"; xdist's header lines
# hold "worker"): each is a literal that sre skims for, so lines are read only where one of them is, not at
# every line as "^" would be.
_FIRST = rb"(?:[.=\-\x1b]|[FEsxXRu](?![a-rtvwyz]))"
# Each with the byte its matches start with: sre's skim for a literal's first byte is no memchr and costs
# about 0.5 ms a MiB even where nothing matches, but ``bytes.find`` of one byte is, so a pass starts at its
# byte's first place and is skipped where the window has none ("Z", "|" and "]" where no timestamp or
# launcher prefix is: 5.2 -> 3.1 ms a MiB on bench short-lines, the same on tests-unique and gpu-job, CPU
# time, 2026-12-06; a two-byte ``find`` such as b"Z " costs more than sre, its last byte being a blank).
_ROW_HINTS = (
    (b"Z", lazy(rb"Z " + _FIRST)),
    (b".", lazy(rb"\.py (?:[.\x1b]|[FEsxXRu])")),
    # (one each: in an alternation sre no longer skims for a literal, and costs ten times as much)
    (b"|", lazy(rb"\| " + _FIRST)), (b"]", lazy(rb"\]: ?" + _FIRST)),
)
# A line that starts with a byte ``_FIRST`` allows: sre stops its skim for "\n" at every line and enters its
# matcher there, about 13 ns a line (3.6 ms a MiB of 4-byte lines, 0.5 of 128-byte ones, ``re`` alone
# 0.45). Where lines are short, ``bytes.translate`` first maps each such byte to one class (0.42 ms a MiB)
# and a two-byte literal is skimmed for in C with no matcher entry: 0.8-1.0 ms a MiB whatever the lines'
# length (perf25: 4-byte lines 3.62 -> 0.92, 16-byte 1.16 -> 0.86, 32-byte 0.72 -> 0.98, CPU time,
# 2026-12-07). A letter followed by one ``_FIRST`` refuses is dropped here, as its lookahead does.
_LINE_FIRST = lazy(rb"\n" + _FIRST)
_CLASSED = bytes(10 if b == 10 else 1 if b in b".=-\x1bFEsxXRu" else 0 for b in range(256))
_LINE_CLASSED = lazy(rb"\n\x01")
_LETTER = frozenset(b"FEsxXRu")
_WORD_NEXT = frozenset(b"abcdefghijklmnopqrtvwyz")
# Lines shorter than this on average (in the window's first 64 KiB) are skimmed the second way.
_SHORT_LINE = 20
# xdist's header lines ("created: 2/2 workers", "2 workers [7 items]"): sre's skim for "w" costs about 0.6
# ms a MiB where ``bytes.find`` of the word costs 0.75-0.8, its last byte "r" sharing a bloom bit with "2"
# (bench short-lines, tests-unique, gpu-job, CPU time, 2026-12-06). (The word never overlaps itself.)
_WORKER = lazy(rb"worker")
_ROW = lazy(_ROW_TEXT)
# The start of a word glued after letters: its lower-case letters, and a capital before them. A letter that
# was a test's ("....Fsleeping") may go with it: the counts then disagree, and nothing is believed.
_WORD_START = lazy(rb"[FEXR]?[sxu]*$")
# Letters kept per log: a run with more rows than this tells nothing (its events stay conservative).
MAX_ROWS = 20000
_PASSING = frozenset(".sxu")
_PYTEST_COUNTS = lazy(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|rerun|subtests?)\b")
_PYTEST_LETTER = {"passed": ".", "failed": "F", "error": "E", "errors": "E", "skipped": "s",
                  "xfailed": "x", "xpassed": "X", "rerun": "R"}
# The separator that starts pytest's short summary, and one of its lines for a passed test.
_SUMMARY_SEP = b"short test summary info"
# (GitHub's timestamp and colour codes around the word; read only where "PASSED " is on the line)
_SUMMARY_PASSED = lazy(rb"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?" + _ANSI + rb"PASSED" + _ANSI
                       + rb" (\S[^\r\n\x1b]*?)" + _ANSI + rb" *\r?$", re.M)
_UNITTEST_RAN = lazy(r"^Ran (\d+) tests?\b", re.M)
_UNITTEST_COUNTS = lazy(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)")
_UNITTEST_LETTER = {"failures": "F", "errors": "E", "skipped": "s", "expected failures": "x",
                    "unexpected successes": "u"}


class _Region:
    """The letters from a run's first letter row to the separator line after it. A plain class: regions
    are never compared, and a dataclass's generated methods cost every run's start-up (perf22)."""

    restored = False  # its letters added up only with those glued ones (``outcome_after``)

    def __init__(self, start: int, after: int = 0, who: str = "") -> None:
        self.start = start
        self.after = after  # the separator line before it (pytest's session start; 0: none, as under -q)
        self.who = who  # the launcher's prefix before its lines (``speaker``)
        self.end = 0  # the separator's line (0: none seen yet)
        self.rows: List[tuple] = []  # (line, letters)
        # (row index, the letters ``_WORD_START`` took off the end of that row as a word's start)
        self.glued: List[Tuple[int, str]] = []

    @functools.cached_property
    def counts(self) -> Dict[str, int]:
        """How many of each letter its rows hold (read once the log is over, when no row comes after)."""
        counts: Dict[str, int] = {}
        for _, letters in self.rows:
            for letter in letters:
                counts[letter] = counts.get(letter, 0) + 1
        return counts

    @functools.cached_property
    def restored_counts(self) -> Dict[str, int]:
        """``counts`` with the glued letters taken for letters."""
        counts = dict(self.counts)
        for _, letters in self.glued:
            for letter in letters:
                counts[letter] = counts.get(letter, 0) + 1
        return counts

    def restored_rows(self) -> List[tuple]:
        """``rows`` with each one's glued letters after its own (where it wrote them)."""
        rows = list(self.rows)
        for index, letters in self.glued:
            line, own = rows[index]
            rows[index] = (line, own + letters)
        return rows


def is_unittest_verdict(verdict_text: str) -> bool:
    """Whether a verdict's text is unittest's ("Ran N tests", then OK or FAILED)."""
    return _UNITTEST_RAN.search(verdict_text) is not None


def verdict_letters(verdict_text: str, fixture_errors: int = 0) -> Optional[Dict[str, int]]:
    """How many of each letter a pytest or unittest verdict's counts say were written, or None when it
    counts something letters do not show one for one (pytest 9's subtests) or is neither runner's.

    ``fixture_errors``: how many of unittest's errors its report names a class or module fixture
    (``ERROR: setUpClass (mod.Class)``): each wrote an ``E`` and counts in ``errors=``, but not in "Ran N
    tests" (CPython Lib/unittest/suite.py adds it as an error of no test run)."""
    ran_line = _UNITTEST_RAN.search(verdict_text)
    if ran_line is not None:
        ran = int(ran_line.group(1))
        counts = {_UNITTEST_LETTER[k]: int(n) for k, n in _UNITTEST_COUNTS.findall(verdict_text)}
        if not 0 <= fixture_errors <= counts.get("E", 0):
            return None
        counts["."] = ran - sum(counts.values()) + fixture_errors
        return counts if counts["."] >= 0 else None
    found = _PYTEST_COUNTS.findall(verdict_text)
    if not found or any(word.startswith("subtest") for _, word in found):
        return None
    counts: Dict[str, int] = {}
    for n, word in found:
        letter = _PYTEST_LETTER[word]
        counts[letter] = counts.get(letter, 0) + int(n)
    return counts


class ProgressLetters:
    """The letter rows of a log, fed window by window; asked once the log is over."""

    def __init__(self, hyperscan: bool = False) -> None:
        """``hyperscan``: find the rows' lines with one Hyperscan pass where it is installed (the engine
        the scan runs on); otherwise with ``re`` and ``bytes.find``, as the pure-Python engine does."""
        self.hyperscan = hyperscan
        self.regions: List[_Region] = []
        self.rows = 0
        # Per launcher's prefix (each process's own run, "": none): its last separator line, its last region.
        self._sep: Dict[str, int] = {}
        self._last: Dict[str, _Region] = {}
        # The last line of pytest-xdist's header: its controller writes the letters of reports as they
        # come from any worker while the workers' children write to the terminal, so whose letter follows
        # an event the log does not say.
        self.xdist = 0
        # The lines of pytest's short-summary separators (no launcher's prefix), and the ids of the "PASSED
        # id" lines after each (up to the next separator), up to MAX_ROWS in all: more tell nothing.
        self.summaries: List[int] = []
        self.passed_ids: List[List[str]] = []
        self.passed_count = 0
        self._in_summary = False

    def feed(self, buf: bytes, first_line: int, hint_ends: Optional[List[int]] = None) -> None:
        """Read a window of the log as it is (its first line is ``first_line``); ``hint_ends``: the end of
        each match of ``HYPERSCAN_HINTS`` in it, where the engine's own pass found them (None: look here)."""
        if self.rows > MAX_ROWS:
            return
        at, line = 0, first_line
        summary_from = 0 if self._in_summary else -1
        for start, m in _rows(buf, self.hyperscan, hint_ends):
            line += buf.count(b"\n", at, start)
            at = start
            who = _speaker_key(m.group("who"))
            region = self._last.get(who)
            if m.group("sep") is not None:
                if summary_from >= 0:
                    self._passed_lines(buf, summary_from, start)
                    summary_from = -1
                if region is not None and not region.end:
                    region.end = line
                self._sep[who] = line
                end = buf.find(b"\n", start)
                if not who and len(self.summaries) < MAX_ROWS \
                        and buf.find(_SUMMARY_SEP, start, len(buf) if end == -1 else end) != -1:
                    self.summaries.append(line)
                    self.passed_ids.append([])
                    summary_from = len(buf) if end == -1 else end + 1
                continue
            if m.group("xdist") is not None:
                self.xdist = line
                continue
            letters = strip_controls(m.group("run"))
            if m.group("who"):
                letters = letters.replace(m.group("who"), b"")
            glued = b""
            if m.group("next"):
                kept = _WORD_START.sub(b"", letters)
                letters, glued = kept, letters[len(kept):]
            if not letters and not (glued and region is not None and not region.end):
                continue  # (a word's start before a run's first letter starts no run)
            if region is None or region.end:
                region = _Region(line, self._sep.get(who, 0), who)
                self.regions.append(region)
                self._last[who] = region
            if glued:
                region.glued.append((len(region.rows), glued.decode("ascii")))
            region.rows.append((line, letters.decode("ascii")))
            self.rows += 1
        self._in_summary = summary_from >= 0
        if self._in_summary:
            self._passed_lines(buf, summary_from, len(buf))

    def _passed_lines(self, buf: bytes, start: int, end: int) -> None:
        """Keep the short summary's "PASSED id" lines in ``buf[start:end]`` (its last summary's)."""
        at = buf.find(b"PASSED ", start, end)
        if at == -1 or self.passed_count > MAX_ROWS:
            return
        found = _SUMMARY_PASSED.findall(buf, buf.rfind(b"\n", start, at) + 1 or start, end)
        self.passed_count += len(found)
        self.passed_ids[-1].extend(test.decode("utf-8", "backslashreplace") for test in found)

    def passed_after(
        self, line: int, verdict_line: int, verdict_text: str, since: int = 0, next_event: int = 0,
        who: str = "",
    ) -> Optional[int]:
        """The line of the letter that says the test which printed ``line`` passed (``outcome_after``),
        None when there is none or it is not a passing one."""
        outcome = self.outcome_after(line, verdict_line, verdict_text, since, next_event, who)
        return outcome[0] if outcome is not None and outcome[1] in _PASSING else None

    def outcome_after(
        self, line: int, verdict_line: int, verdict_text: str, since: int = 0, next_event: int = 0,
        who: str = "", fixture_errors: int = 0,
    ) -> Optional[Tuple[int, str, int, Dict[str, int]]]:
        """The letter that says how the test which printed ``line`` ended, when the letters of its run
        (the first rows after line ``since``, the verdict before it) account for the verdict at
        ``verdict_line`` exactly: (its line, the letter, how many of that letter its run wrote up to it,
        the run's counts of each letter); None when they do not, or when no letter follows it in its run
        (the first after the R of the reruns of its test). (Rows after the
        run's separator are its reports' lines: pytest's ``E   assert``, unittest's ``FAIL: test_x``.)
        ``next_event``: the line of the log's next event after ``line`` (0: none); ``who``: the launcher's
        prefix on its line (``speaker``): the letters are those behind the same prefix, or where none are,
        those behind none (a test's child's prefix); ``fixture_errors``: as ``verdict_letters`` takes it."""
        if self.rows > MAX_ROWS:
            return None
        region = self._region(since, who)
        # (pytest -q --tb=no -rN prints no separator: its verdict ends the letters)
        end = region.end or verdict_line if region is not None else 0
        if region is None or not end <= verdict_line or since < self.xdist < end:
            return None
        # An event before the first letter is the first test's (its output comes before its letter) when
        # it is in the run: after the session's start, or with no start (-q, unittest) since the log's
        # start or the last run's verdict (the span such a run's verdict judges: ``unframed_run``), where
        # only the last event before the letter is believed: the ones before it may be a command the job
        # ran before the tests (a crash, then the shell's report of it).
        low = region.after if region.after > since else since + 1
        if not low <= line < end or (low != region.after and line < next_event < region.start):
            return None
        expected = verdict_letters(verdict_text, fixture_errors)
        if expected is None:
            return None
        wanted = {k: v for k, v in expected.items() if v}
        counts, rows = region.counts, region.rows
        if {k: v for k, v in counts.items() if v} != wanted:
            # A test's output glued to a letter (".srank 1 starting": a skip's s, then what the next test
            # printed) reads as a word's start. Those letters count only if, all taken for letters, the
            # letters add up to the verdict exactly: had any of them been a word's start, that reading
            # would count one letter more than the verdict does.
            counts = region.restored_counts
            if not region.glued or {k: v for k, v in counts.items() if v} != wanted:
                return None
            region.restored = True
            rows = region.restored_rows()
        # pytest-rerunfailures runs a failed test again at once: its R letters come before that test's
        # own outcome, the first other letter after them.
        seen: Dict[str, int] = {}
        for at, letters in rows:
            outcome = letters.lstrip("R") if at > line else ""
            if outcome:
                return at, outcome[0], seen.get(outcome[0], 0) + 1, dict(counts)
            for letter in letters:
                seen[letter] = seen.get(letter, 0) + 1
        return None

    def _region(self, since: int, who: str) -> Optional[_Region]:
        """The first letters after line ``since`` behind launcher's prefix ``who`` (or none, where no letters
        are behind it)."""
        if not any(r.who == who for r in self.regions):
            who = ""
        return next((r for r in self.regions if r.start > since and r.who == who), None)

    def passed_test(self, verdict_line: int, since: int, who: str, k: int) -> Optional[str]:
        """The id of the test of its run's k-th ``.`` (an ``outcome_after`` that said so), read from the
        run's short summary before ``verdict_line``: None when the run printed none, or not one PASSED line
        for each dot, or reran a test (``R``), or its letters are a launcher's process's."""
        region = self._region(since, who)
        if region is None or region.who or not region.end or region.counts.get("R") \
                or region.restored and region.restored_counts.get("R") \
                or self.passed_count > MAX_ROWS:
            return None
        summary = max((i for i, s in enumerate(self.summaries) if region.end <= s < verdict_line), default=-1)
        if summary < 0:
            return None
        ids = self.passed_ids[summary]
        if len(ids) != region.counts.get(".", 0) or not 0 < k <= len(ids):
            return None
        return ids[k - 1]


_WHO_AT_START = lazy(
    (rb"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?" + _ANSI + rb"(" + _WHO + rb")").decode()
)


def speaker(line: str) -> str:
    """The launcher's prefix that starts a line of the log (as its excerpt shows it), "" when none does:
    the key its letters are kept under."""
    m = _WHO_AT_START.match(line)
    return _speaker_key(m.group(1).encode()) if m is not None else ""


def _speaker_key(who: Optional[bytes]) -> str:
    # compose pads every service's name to the longest one's: the padding is not the name
    return "" if who is None else who.replace(b" ", b"").decode("ascii", "replace")


def _rows(
    buf: bytes, hyperscan: bool, hint_ends: Optional[List[int]] = None,
) -> Iterator[Tuple[int, Match[bytes]]]:
    """The letter rows and separators of ``buf`` in line order: where each one's line starts, its match
    (``hyperscan``: found with Hyperscan's pass where it is installed; ``hint_ends``: that pass's match
    ends, made by the engine's literal pass)."""
    # The window's last line is always tried: the Hyperscan here (python-hyperscan 0.9.1, an AVX-512 EPYC)
    # now and then drops a match that ends at the very end of the data (a hypothesis run found them, every
    # one there and none inside, against the same patterns in ``re``).
    starts = {0, buf.rfind(b"\n", 0, len(buf) - 1) + 1}
    hints = _hint_database() if hyperscan and hint_ends is None else None
    if hints is not None:
        hint_ends = [end for end, _ in match_ends(hints, _SCRATCH, buf)]
    if hint_ends is not None:
        for end in hint_ends:
            starts.add(buf.rfind(b"\n", 0, end - 1) + 1)
    else:
        starts.update(_line_starts(buf))
        for literal, hint in _ROW_HINTS:
            first = buf.find(literal)
            if first == -1:
                continue
            for m in hint.finditer(buf, first):
                starts.add(buf.rfind(b"\n", 0, m.start() + 1) + 1)
        for m in _WORKER.finditer(buf):
            starts.add(buf.rfind(b"\n", 0, m.start()) + 1)
    for start in sorted(starts):
        m = _ROW.match(buf, start)
        if m is not None:
            yield start, m


def _line_starts(buf: bytes) -> Iterator[int]:
    """Where each line after a newline of ``buf`` starts that begins with a byte ``_FIRST`` allows."""
    sample = min(len(buf), 1 << 16)
    if buf.count(b"\n", 0, sample) * _SHORT_LINE <= sample:
        for m in _LINE_FIRST.finditer(buf):
            yield m.start() + 1
        return
    end = len(buf) - 1
    for m in _LINE_CLASSED.finditer(buf.translate(_CLASSED)):
        start = m.start() + 1
        if start < end and buf[start] in _LETTER and buf[start + 1] in _WORD_NEXT:
            continue
        yield start


# The same hints in one Hyperscan pass where it is installed: four passes of ``re`` and ``bytes.find`` cost
# about 2 ms per MB of log, as much as the rest of the scan of an NCCL-heavy job. It finds the start of
# every line that may be a row (a superset of them), each confirmed by ``_ROW`` as the hints' are.
# A row's start is looked for after a "\n" and after the end of GitHub's timestamp ("...7Z "), not at "^":
# tried at every line's start, the hints cost Hyperscan about 1.05 ms a MiB of a test-heavy log, led by
# bytes it finds as literals about 0.45 (``bench/logshapes.py``, CPU time, 2026-12-06). They match on every
# line where "^" did (the timestamp ends in a digit and "Z ", and ``_rows`` always tries the window's first
# line), and a few more that ``_ROW`` rejects. (The prefix's pattern below, led the same way, cost more.)
_ROW_START = rb"(?:\x1b\[[0-9;]*m)*(?:[.=\-]|[FEsxXRu](?:[^a-rtvwyz]|$))"
HYPERSCAN_HINTS = (
    rb"\n" + _ROW_START,
    rb"\dZ " + _ROW_START,
    # (a prefix's own pattern: inside the ones above, it costs them twice as much)
    rb"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?" + _ANSI + _WHO + _ANSI + rb"[.=\-FEsxXRu]",
    rb"\.py (?:\x1b\[[0-9;]*m)*[.FEsxXRu]",
    rb"worker",
)
_SCRATCH = threading.local()  # one scratch space per thread (the guard scans stdout and stderr at once)


# (Two threads asking first at once may each compile it: either database serves.)
@functools.lru_cache(maxsize=None)
def _hint_database() -> Any:
    """The compiled hints, or None where Hyperscan is missing or cannot run."""
    try:
        import hyperscan

        return database("hints", HYPERSCAN_HINTS, range(len(HYPERSCAN_HINTS)),
                        [hyperscan.HS_FLAG_MULTILINE] * len(HYPERSCAN_HINTS))
    except Exception:  # ImportError, or hyperscan.error on a CPU it does not support
        return None

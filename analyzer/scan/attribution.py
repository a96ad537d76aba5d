"""Which test a log line belongs to, worked out lazily from the engine's window, never line by line.

A test-heavy log is mostly test runners' progress lines: pytest ``-v`` prints a node id when a test
starts and its outcome on the same line when it ends (``tests/x.py::t[p] PASSED [ 45%]``), xdist prints
``[gw3] [ 45%] PASSED tests/x.py::t`` when a worker reports, unittest ``-v`` prints ``test_m
(mod.Class) ... ok``, CPython's regrtest (``python -m test``) prints ``0:00:01 load avg: 0.50 [1/2]
test_x`` when a test file starts and, in its parallel mode (``-jN``), ``[1/2] test_x passed`` when the
file's worker is done, followed by the output that worker printed. None of these lines is a match:
the engine never looks at them one by one. Only when a rule matches (rare) does the ``TestTracker``
search the window the engine already holds, backwards from the match, for the last progress line
(``bytes.rfind`` for ``.py::``, ``) ...`` and ``] test``); once per
window it remembers the window's last progress line for the windows after it. The cost per innocent
line is the engine's; the Python work is per window and per match.

A progress line that already carries its outcome (``PASSED`` on the same line, or a bare outcome line
after it as ``pytest -s`` prints) is a *finished* test: what follows it is its teardown, or the time
between tests. xdist's lines are printed after the test ran on another worker, so they say nothing about
the lines after them and attribute nothing. regrtest's parallel lines are printed after the file ran too,
but the worker's output comes right after them: what follows belongs to that file, finished.

Unittest ids are normalised to ``test_m (mod.Class)``: Python 3.11+ prints ``test_m (mod.Class.test_m)``.
A test with a docstring takes two lines in unittest ``-v``: ``test_m (mod.Class)`` alone, then the
docstring's first line ending in `` ... `` and, once the test is done, its outcome (``Check that workers
exit ... ok``, torch's DataLoader tests among many). The first line is the progress line when the
second follows it, in the same window or (remembered across the cut) at the start of the next one;
missing it gave the test's output to the test before it, so a failing test's crash became a passed
test's notice.

A runner may print a test's progress line again while that test runs (pytest's ``--setup-show`` after
the fixtures' SETUP lines, pytest 9 for each subtest report and once more with the outcome,
pytest-rerunfailures for the rerun): that is the same test going on, so the outcome of the test a
finding waits on is the one such a later line carries, not "never reported".

pytest heads a test's report (``-rA``'s PASSES, FAILURES) with the test's name without its file
(``____ TestC.test_y[p] ____``). ``TestTracker.want`` takes such a name when an event happens under it; the
log from that event on is searched for the node id it spells the name with (the short summary's ``PASSED
x.py::TestC::test_y[p]``, which comes after every report), so the finding names ``x.py::TestC::test_y[p]``;
only what follows, so the answer does not depend on where windows end. A name two files share stays as it
is: which one it was, the log does not say.
A ``pytest --collect-only -q`` list printed before the run (``_collected_list``) spells them too: CI
scripts print it to log what will run, and a run cut before its summary has no other place that does. It
is looked for only when a header wants its node id, in the header's window and the one before.

``event_handled`` reads the same lines for the guard's ``--abort-on``: whether the test a live event
happened in went on to pass within the grace, so the event was handled and the run must not be ended.
"""

from __future__ import annotations

import bisect
import re
import dataclasses
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..lazy_re import lazy
from ..model import WORKFLOW_COMMANDS
from .clean import clean_stripped, strip_controls
from .letters import ProgressLetters

PYTEST_NEEDLE = b".py::"
UNITTEST_NEEDLE = b") ..."
REGRTEST_NEEDLE = b"] test"  # regrtest only runs modules named test*
# A unittest id alone on its line, its docstring on the next (with or without a CR before the LF).
UNITTEST_DOC_NEEDLES = (b")\n", b")\r\n")
# pytest names a test of a module outside its rootdir with an empty path ("::PosixTests::test_sigint PASSED":
# ``pytest --pyargs pkg.mod``, or a file given outside --rootdir): _pytest/nodes.py's
# _check_initialpaths_for_relpath returns "" for an initial path (pytest 7.4.4 nodes.py:574-578, 8.4.2
# nodes.py:547-551, 9.2.0 nodes.py:568-572) and the parent's id is joined to the name with "::" (7.4.4
# nodes.py:240, 8.4.2 nodes.py:209, 9.2.0 nodeid.py:62). Such an id starts its -v line (b"\n::"; behind
# GitHub's timestamp or an -r outcome word, b" ::").
NO_PATH_NEEDLES = (b"\n::", b" ::")
NEEDLES = (PYTEST_NEEDLE, UNITTEST_NEEDLE, REGRTEST_NEEDLE) + UNITTEST_DOC_NEEDLES + NO_PATH_NEEDLES
# Where a needle's line starts, from where the needle is: b"\n::" one byte after.
_NEEDLE_SHIFT = {needle: 1 if needle[:1] == b"\n" else 0 for needle in NEEDLES}
# A byte of each needle that memchr looks for first: a window without it cannot hold the needle, and
# rfind of a needle that is not there reads the whole window, at a tenth of memchr's speed.
_NEEDLE_BYTES = {needle: needle[-1:] if needle.endswith(b":") else needle[:1] for needle in NEEDLES}
# The no-path needles' ":" is in most windows (a clock, a traceback's "last):"); b"::", searched once for
# both, is in few but a C++ log's (two reverse searches cost 1.3 ms a MiB of tracebacks, this 0.8 ms).
_NEEDLE_BYTES.update((needle, b"::") for needle in NO_PATH_NEEDLES)
# A window full of lines that mention a node id without being progress lines (a long short test
# summary) is searched this many candidates deep, then counts as showing no test.
MAX_CANDIDATES = 64
# A progress line holds one of these (``_PYTEST_LINE``'s node id, ``_XDIST_LINE``, ``_REGRTEST_LINE``,
# ``_UNITTEST_LINE``) or starts a node id with no path (``_NO_PATH_MAY_START``); a line without any cannot be
# one (``_may_be_progress``).
_PROGRESS_WORDS = (b".py::", b"[gw", b"] test", b" ...")
# Where a node id with no path may start in a raw line: "::" then a name's first letter, with no letter
# or digit before it (a line's start, a blank, or the end of a prefix that cleaning cuts: "[rank0]:").
# C++'s qualified names ("c10d::ProcessGroupNCCL::watchdogHandler()", "std::", the IPv6 "::1") are not:
# "::" alone as a word let each such line be cleaned and parsed. The "::" comes first, so that the search
# skips to each one (a leading lookbehind is tried at every byte: 7 times slower on C++ frames).
_NO_PATH_MAY_START = lazy(rb"::(?<![A-Za-z0-9_]::)[A-Za-z_]")
# A line ``_parse_at`` may read as a progress line holds one of those words or a docstring head's " (",
# with Markdown's ``*``/``_`` maybe between their bytes (``_unmarked``): one C search rejects a traceback's
# code line that ends in ")" (the docstring needle), where cleaning and parsing it cost microseconds.
# Not the no-path form's "::": tried at each ":" of a traceback's candidate lines it cost 7% of a scan of
# tracebacks, and a line its needles find holds it where it starts a node id (``_last_progress``).
_MAY_PARSE = lazy(b"|".join(b"[*_]*".join(re.escape(word[i:i + 1]) for i in range(len(word)))
                            for word in _PROGRESS_WORDS + (b" (",)))


def _may_parse_within(buf: bytes, start: int, end: int) -> bool:
    """Whether ``_MAY_PARSE`` matches within ``buf[start:end]``, for a span of many lines: the words hold
    no ``*`` or ``_``, so the span without those bytes holds a word exactly where the pattern matches.
    Its alternation tries each branch at every blank and dot, where a deletion and five substring
    searches read each byte once (on 33 MB of logged tracebacks' frames: 0.23 s, this 0.15 s); on one
    line the pattern is cheaper. "[gw" and "] test" are searched for only where memchr finds their
    bracket, rare in a traceback's frames (each search of a word that is not there reads every byte at
    a tenth of memchr's speed); spelled out, ``_PROGRESS_WORDS`` and " (" in that order, as a loop costs
    more. A no-path needle's line ("::" at its start or after a blank) may parse too."""
    text = buf[start:end].translate(None, b"*_")
    return (b".py::" in text or (b"[" in text and b"[gw" in text) or (b"]" in text and b"] test" in text)
            or b" ..." in text or b" (" in text
            or (b"::" in text and (text.startswith(b"::") or b"\n::" in text or b" ::" in text)))

# unittest's class and module fixtures: when one fails, unittest reports it as a test of that name
# ("setUpClass (mod.Class) ... ERROR", "ERROR: setUpModule (mod)") that "Ran N tests" does not count.
UNITTEST_FIXTURES = frozenset({"setUpClass", "tearDownClass", "setUpModule", "tearDownModule"})
# How far after an event between tests a fixture's line is looked for (its output comes before it).
FIXTURE_AHEAD = 64 * 1024

# Report headers whose node id is looked for; past this many, a header keeps its bare name.
MAX_WANTED = 64
# Bytes a node id's file part is made of ("tests/unit-x/test_a.py").
_PATH_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")
# What may not follow a node id's last byte: more of a name ("::test_y" is not the end of "::test_y_slow").
# A terminal's cut may glue the next line right after it, in a wrapped window's view.
_ID_GOES_ON = _PATH_BYTES | frozenset(b":[")

# A node id; a parametrize id may hold spaces ("t.py::test_store[two words]"), so it runs to its "]".
# The no-path form (NO_PATH_NEEDLES) only where a node id starts, its names identifiers up to a blank or the
# line's end, and never a GitHub workflow command's name, in any case ("::group::x", "::error file=a::m",
# "::ENDGROUP::": ``WORKFLOW_COMMANDS``), nor C++'s global operator ("::operator new(unsigned long)" a
# wrapped frame starts with: the one C++ name a blank follows, an operator-function-id).
_NO_PATH = (r"(?<!\S)(?=::(?!(?i:" + "|".join(map(re.escape, sorted(WORKFLOW_COMMANDS))) + r")(?![\w-]))"
            r"(?!operator\s)"
            r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*(?:\[[^\]\n]*\])?(?:\s|$))")
_NODE_ID = r"(?:[\w./-]+\.py|" + _NO_PATH + r")::[^\s\[]*(?:\[[^\]\n]*\])?\S*"
_PYTEST_LINE = lazy(r"(?P<test>" + _NODE_ID + r")(?P<rest>.*)")
# The progress column is left out under ``-o console_output_style=classic`` (and by pytest before 3.3) and
# is a count under ``count``: ``[gw2] PASSED t``, ``[gw2] [ 3/40] PASSED t``.
_XDIST_LINE = lazy(
    r"\[gw\d+\] (?:\[\s*\d+(?:%|/\d+)\] )?[A-Z]+ (?P<test>" + _NODE_ID + r"|\S+)"
)
# The elapsed time first, then the load average where the OS has one; "[3/11/1]": the third number
# counts the failures so far. Sequential runs print nothing after the name, or " -- test_w failed"
# about the file before it; parallel runs print the file's result ("passed", "failed (1 failure)").
# pytest-rerunfailures's "rerun test summary info" (-rR, --rerun-show-tracebacks) heads each failed attempt's
# traceback with "RERUN x.py::t" and ends the test's attempts with its outcome ("PASSED x.py::t"): what
# follows the head is that test's, judged by that outcome.
_RERUN_REPORT = lazy(r"RERUN (?P<test>" + _NODE_ID + r")\s*$")
# Any of pytest-rerunfailures's lines that say a test is run again: -v's, xdist's and its summary's.
_RERUN_LINE = lazy(
    r"^\s*(?:(?P<head>" + _NODE_ID + r") RERUN\b|(?:\[gw\d+\] (?:\[\s*\d+(?:%|/\d+)\] )?)?RERUN (?P<test>"
    + _NODE_ID + r")\s*$)"
)
RERUN_WORD = b"RERUN"
MAX_RERUN_TESTS = 1024
_REGRTEST_LINE = lazy(
    r"^\d+:\d\d:\d\d (?:load avg: \d+\.\d+ )?\[ *\d+/\d+(?:/\d+)?\] (?P<test>test\w*(?:\.\w+)*)(?P<rest>.*)$"
)
_UNITTEST_LINE = lazy(r"(?P<name>\w+) \((?P<cls>[\w.]+)\)(?: .*?)? \.\.\.(?: (?P<rest>.*))?$")
# After a space, or (pytest 8's --setup-show) right after "(fixtures used: tmp_path)".
_PYTEST_OUTCOME = lazy(r"[\s)](?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_UNITTEST_OUTCOME = lazy(r"^(?:ok|FAIL|ERROR|skipped\b|expected failure|unexpected success)")
# The outcome word alone at the start of a line: pytest -s after a test's own output, or unittest
# after a test that printed. The timestamp GitHub puts first may precede it. pytest-rerunfailures's
# RERUN ends an attempt so: the test went on with its next attempt, whose own line follows.
_BARE_OUTCOME = lazy(
    rb"(?m)^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?[ \t]*"
    rb"(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN|ok|FAIL|skipped|expected failure"
    rb"|unexpected success)\b"
)
# Of those, the words of a test that did not pass.
_BARE_FAILURE = lazy(rb"\b(?:FAILED|ERROR|FAIL|unexpected success)\b")
# How a test that reported and did not fail ended, as ``TestTracker.outcomes`` keeps it (one shared string
# per test, where a bool was kept before) for ranking to word an event inside it; "" there: it failed, or
# it reported nothing.
ENDED_PASSED = "passed"
ENDED_XFAIL = "xfailed"  # pytest's XFAIL, unittest's "expected failure"
ENDED_SKIPPED = "skipped"  # pytest's SKIPPED, unittest's "skipped 'reason'" (a skip after its output)
_ENDED_BY_WORD = {b"XFAIL": ENDED_XFAIL, b"expected failure": ENDED_XFAIL, b"SKIPPED": ENDED_SKIPPED,
                  b"skipped": ENDED_SKIPPED}
_ENDING_WORD = lazy(rb"\b(?:XFAIL|expected failure|SKIPPED|skipped)\b")
# A pytest session's start (glued to the outer run's progress line under -s) and its framed verdict
# ("=== 3 failed, 1 passed in 4.24s ===", "=== 1 error in 62.10s (0:01:02) ==="; GitHub's timestamp
# first, --color=yes's escapes around): an inner session's edges.
_STARTS = b" test session starts "
_SESSION_START = lazy(rb"=+" + _STARTS + rb"=+")
_SESSION_EDGE = lazy(
    rb"(?m)(=+ test session starts =+)|^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?(?:\x1b\[[\d;]*m)*"
    rb"=+ [^=\n]* in \d+(?:\.\d+)?s\b[^=\n]*=+[^=\n]*$"
)
_UNITTEST_ID = lazy(r"^(?P<name>\w+) \((?P<cls>[\w.]+)\)")
_UNITTEST_DOC_HEAD = lazy(r"(?P<name>\w+) \((?P<cls>[\w.]+)\)$")
# The docstring line: greedy, so the outcome is what follows its last " ...".
_UNITTEST_DOC_LINE = lazy(r"^.* \.\.\.(?: (?P<rest>.*))?$")


@dataclass(frozen=True)
class TestLine:
    """A progress line: the test it names, its line number, and whether it already reported.

    ``quiet``: its runner reports a test's outcome only when the test fails (regrtest's sequential
    "[1/3] test_x"), so the run's verdict, not a line of its own, says whether it passed."""

    test: str
    line: int
    finished: bool
    xdist: bool = False
    quiet: bool = False


# What a progress line says: (test, finished, xdist, quiet), as ``TestLine`` names them.
Parsed = Tuple[str, bool, bool, bool]


def unittest_id(name: str, cls: str) -> str:
    """``test_m (mod.Class)`` for both spellings unittest uses (3.11+ appends ``.test_m``)."""
    suffix = "." + name
    if cls.endswith(suffix):
        cls = cls[: -len(suffix)]
    return f"{name} ({cls})"


def is_unittest_id(test: str) -> bool:
    """Whether ``test`` is a unittest id as ``normal_test_id`` spells it (``test_m (mod.Class)``)."""
    m = _UNITTEST_ID.match(test)
    return m is not None and m.end() == len(test)


def normal_test_id(test: str) -> str:
    """A test id as attribution spells it (unittest ids normalised, whitespace trimmed)."""
    test = test.strip()
    m = _UNITTEST_ID.match(test)
    if m is not None and m.end() == len(test):
        return unittest_id(m.group("name"), m.group("cls"))
    return test


def parse_progress(raw: bytes) -> Optional[Parsed]:
    """``(test, finished, xdist, quiet)`` when ``raw`` (one line, controls stripped) is a progress line."""
    if not _may_be_progress(raw):
        return None
    text, _ = clean_stripped(raw, keep_progress=True)
    text = text.lstrip()
    m = _PYTEST_LINE.match(text)
    if m is not None:
        return m.group("test"), bool(_PYTEST_OUTCOME.search(m.group("rest"))), False, False
    m = _XDIST_LINE.match(text)
    if m is not None:
        return m.group("test"), True, True, False
    m = _RERUN_REPORT.match(text)
    if m is not None:
        return m.group("test"), False, False, False
    m = _REGRTEST_LINE.match(text)
    if m is not None:
        rest = m.group("rest").strip()
        finished = bool(rest) and not rest.startswith("--")
        return m.group("test"), finished, False, not finished
    m = _UNITTEST_LINE.match(text)
    if m is not None:
        rest = m.group("rest") or ""
        return unittest_id(m.group("name"), m.group("cls")), bool(_UNITTEST_OUTCOME.match(rest)), False, False
    return None


def _may_be_progress(raw: bytes) -> bool:
    """False when ``raw`` holds none of the words each progress line's pattern needs (``_PROGRESS_WORDS``)
    and no "::" where a node id with no path may start (``_NO_PATH_MAY_START``), and so cannot be one. A
    traceback's code lines that end in ")" are candidates of the docstring needle, a C++ frame's the no-path
    needle's: cleaning each one and trying four patterns cost about 50 us a line."""
    raw = _unmarked(raw)
    if any(word in raw for word in _PROGRESS_WORDS):
        return True
    return b"::" in raw and _NO_PATH_MAY_START.search(raw) is not None


def _unmarked(raw: bytes) -> bytes:
    """``raw`` without its Markdown emphasis markers' bytes when it holds any: cleaning cuts only a line's
    ends and such markers (``clean_speaking``), so a word of the cleaned line (none holds ``*`` or ``_``)
    is in what this returns."""
    return raw.translate(None, b"*_") if b"**" in raw or b"__" in raw else raw


def _parse_at(buf: bytes, start: int, end: int) -> Optional[Parsed]:
    """``parse_progress`` of the line ``buf[start:end]``, or the first line of a unittest test with a
    docstring (``test_m (mod.Class)`` alone, the docstring line after it in ``buf``)."""
    parsed = parse_progress(buf[start:end])
    if parsed is not None or end >= len(buf) or buf[end - 1:end] not in (b")", b"\r"):
        return parsed
    if b" (" not in _unmarked(buf[start:end]):
        return None  # what _UNITTEST_DOC_HEAD needs: "name (cls)"
    text, _ = clean_stripped(buf[start:end], keep_progress=True)
    head = _UNITTEST_DOC_HEAD.match(text.strip())
    if head is None:
        return None
    nxt = buf.find(b"\n", end + 1)
    doc, _ = clean_stripped(buf[end + 1: len(buf) if nxt == -1 else nxt], keep_progress=True)
    m = _UNITTEST_DOC_LINE.match(doc.rstrip("\r"))
    if m is None:
        return None
    rest = m.group("rest") or ""
    finished = bool(_UNITTEST_OUTCOME.match(rest))
    return unittest_id(head.group("name"), head.group("cls")), finished, False, False


def is_unittest_fixture(test: str) -> bool:
    """Whether ``test`` is a unittest class or module fixture reported as a test (``setUpClass (mod.C)``)."""
    return is_unittest_id(test) and test.split(" ", 1)[0] in UNITTEST_FIXTURES


def _fixture_after(buf: bytes, lo: int, needle_at: int) -> Optional[Tuple[str, int]]:
    """The class or module fixture whose unittest ``-v`` line is the first progress line after ``buf[lo]``
    (within ``FIXTURE_AHEAD`` bytes), and where that line starts; None when another test's line (or none)
    comes first. unittest writes a fixture's line (``setUpClass (mod.Class) ... ERROR``) only once the
    fixture has failed or skipped, after everything it printed: what came before it since the last test
    ended is that fixture's (CPython Lib/unittest/suite.py, ``_createClassOrModuleLevelException``).
    ``needle_at``: where the first ``UNITTEST_NEEDLE`` at or after ``lo`` is (-1: none), which such a line
    holds."""
    hi = min(len(buf), lo + FIXTURE_AHEAD)
    if needle_at == -1 or needle_at + len(UNITTEST_NEEDLE) > hi:
        return None
    nxt = _next_progress(buf, lo, hi)
    if nxt >= hi:
        return None
    parsed = _parse_at(buf, *_line_around(buf, nxt))
    if parsed is None or not parsed[1] or not is_unittest_fixture(parsed[0]):
        return None
    return parsed[0], nxt


# pytest --tb=line's FAILURES section: no report header per test; each failed test's report ends with its
# crash line ("/abs/tests/test_x.py:26: AssertionError: msg"), after what the test printed ("Captured
# stderr call" and its lines): _pytest/terminal.py, summary_failures with tbstyle "line" writes
# ``_getcrashline(rep)`` after ``_outrep_summary``. Its k-th crash line is the k-th FAILED line of the short
# summary (both in report order).
FAILURES_NEEDLE = b" FAILURES ="
_TS = rb"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?"
# A collector's prefix before each line of the section (torchrun --tee's "[default0]:", its
# TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE's "[rank0]:", kubectl logs --prefix's "[pod/NAME/CONTAINER] ",
# journald's "Dec 07 01:01:16 host python3[42]: "): read off the FAILURES line, each line of the section then
# starts with the same, its date and time excepted (they go on).
_PREFIX_STAMP = lazy(rb"\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?")
MAX_PREFIX = 200


@dataclass(frozen=True)
class _Section:
    """The patterns ``_tb_line_owner`` reads a ``--tb=line`` FAILURES section with, each line's start
    (``lead``: an optional GitHub timestamp, or a collector's prefix) before their words."""

    failures_sep: "re.Pattern[bytes]"
    report_header: "re.Pattern[bytes]"
    crash_line: "re.Pattern[bytes]"
    summary_sep: "re.Pattern[bytes]"
    summary_failed: "re.Pattern[bytes]"
    section_edge: "re.Pattern[bytes]"


def _section(lead: bytes) -> _Section:
    """The section's patterns with ``lead`` (a regex) at each line's start; ``re``'s cache keeps them. A
    line's trailing blanks (a terminal's padding, a copy from a web page) are no words."""
    head = rb"(?m)^" + lead
    return _Section(*(re.compile(head + tail) for tail in (
        rb"=+ FAILURES =+[ \t]*\r?$", rb"_{3,} .+ _{3,}[ \t]*\r?$", rb"[^\s:]*\.py:\d+: \S",
        rb"=+ short test summary info =+[ \t]*\r?$", rb"FAILED (" + _NODE_ID.encode() + rb")",
        rb"=+ [^=\n]+ =+[ \t]*\r?$")))


def _prefix_lead(buf: bytes, start: int, at: int) -> Optional[bytes]:
    """The regex for the prefix before ``buf[start:]``'s FAILURES line (whose ``FAILURES_NEEDLE`` is at
    ``at``), its stamps read as any stamp; None when the line is not such a line behind a prefix."""
    eq = at
    while eq > start and buf[eq - 1] == 0x3D:  # "="
        eq -= 1
    if eq == at or not 0 < eq - start <= MAX_PREFIX:
        return None
    prefix = buf[start:eq]
    parts, last = [], 0
    for m in _PREFIX_STAMP.finditer(prefix):
        parts += [re.escape(prefix[last:m.start()]), rb"\d[\d:.,TZ+-]*"]
        last = m.end()
    return b"".join(parts) + re.escape(prefix[last:])


def _tb_line_owner(buf: bytes, lo: int, hi: int, at: Optional[int] = None) -> Optional[Tuple[str, int]]:
    """The failed test whose report holds ``buf[lo:hi]`` (a line) in a ``--tb=line`` FAILURES section, and
    where its crash line starts: the k-th test of the short summary when ``k - 1`` crash lines come before
    it in the section; None when the line is not in such a section (a report header came), the section's
    end and the summary are not within ``FIXTURE_AHEAD`` bytes, or the counts of crash lines in the section
    and FAILED lines in the summary differ. Behind a collector's prefix (``_prefix_lead``) every line the
    section is read by must start with it. ``at``: where the last ``FAILURES_NEEDLE`` that ends by ``lo``
    starts (-1: none), when the caller knows (``TestTracker._failures_before``)."""
    if at is None:
        at = buf.rfind(FAILURES_NEEDLE, 0, lo)
    if at == -1 or at < lo - FIXTURE_AHEAD:
        return None
    start = _line_around(buf, at)[0]
    pats = _section(_TS)
    sep = pats.failures_sep.match(buf, start)
    if sep is None:
        lead = _prefix_lead(buf, start, at)
        if lead is None:
            return None
        pats = _section(lead)
        sep = pats.failures_sep.match(buf, start)
        if sep is None:
            return None
    start = sep.end()
    if pats.report_header.search(buf, start, lo) or pats.section_edge.search(buf, start, lo):
        return None
    ahead = min(len(buf), hi + FIXTURE_AHEAD)
    end = pats.section_edge.search(buf, hi, ahead)  # the next section (PASSES under -rA, or the summary)
    summary = pats.summary_sep.search(buf, end.start(), ahead) if end is not None else None
    if summary is None:
        return None
    before = len(list(pats.crash_line.finditer(buf, start, lo)))
    after = list(pats.crash_line.finditer(buf, hi, end.start()))
    edge = pats.section_edge.search(buf, summary.end(), ahead)
    failed = [m.group(1).decode("utf-8", "replace")
              for m in pats.summary_failed.finditer(buf, summary.end(), edge.start() if edge else ahead)]
    if not after or before + len(after) != len(failed):
        return None
    return normal_test_id(failed[before]), after[0].start()


def _line_around(buf: bytes, at: int) -> Tuple[int, int]:
    """Start and end (exclusive, without its ``\\n``) of the line of ``buf`` that holds offset ``at``."""
    end = buf.find(b"\n", at)
    return buf.rfind(b"\n", 0, at) + 1, len(buf) if end == -1 else end


RUN_SCRIPT_BACK = 64 * 1024
AT_SPAN_CHECKED = 64 * 1024  # bytes: ``TestTracker.at`` reads a shorter span for progress words first


def _last_progress(buf: bytes, hi: int, floor: int = 0) -> Optional[Tuple[int, int, Parsed]]:
    """The last progress line in ``buf[floor:hi]`` (``floor`` is a line start or a ``\\n``):
    ``(start, end, parsed)``, or None."""
    best: Optional[Tuple[int, int, Parsed]] = None
    absent = []  # pre-checks that failed: absent from the spans of the needles after them too
    for needle in NEEDLES:
        lo = best[0] if best is not None else floor
        first = _NEEDLE_BYTES[needle]
        if first in absent or buf.rfind(first, lo, hi) == -1:
            absent.append(first)
            continue
        at = _needle_line(buf, needle, lo, hi)
        tries = 0
        while at != -1 and tries < MAX_CANDIDATES:
            tries += 1
            start, end = _line_around(buf, at)
            may = first == b"::" or _MAY_PARSE.search(buf, start, end) is not None  # NO_PATH_NEEDLES
            parsed = _parse_at(buf, start, end) if may else None
            if parsed is not None and not _in_run_script(buf, start):
                if best is None or start > best[0]:
                    best = (start, end, parsed)
                break
            if start <= lo:
                break
            at = _needle_line(buf, needle, lo, start)
    return best


def _needle_line(buf: bytes, needle: bytes, lo: int, hi: int, forward: bool = False) -> int:
    """Where to read the line of the last ``needle`` in ``buf[lo:hi]`` (``lo`` a line's start), or of the
    first one (``forward``), from: the needle's own place, but b"\\n::" is the next line's start; -1 when
    there is none. b"\\n::" cannot find a line at ``lo`` with no b"\\n" before it: the buffer's first line
    (forward: it comes first) or the span's first line (backward: it comes last)."""
    shift = _NEEDLE_SHIFT[needle]
    if not shift:
        return buf.find(needle, lo, hi) if forward else buf.rfind(needle, lo, hi)
    if forward:
        if lo == 0 and buf.startswith(needle[shift:]):
            return 0
        at = buf.find(needle, max(0, lo - shift), hi)
    else:
        at = buf.rfind(needle, lo, hi)
    if at != -1:
        return at + shift
    return lo if not forward and buf.startswith(needle[shift:], lo) else -1


def _in_run_script(buf: bytes, start: int) -> bool:
    """Whether ``buf[start]`` is inside the runner's echo of a step's script (``##[group]Run ...`` up to
    ``##[endgroup]``, looked for within ``RUN_SCRIPT_BACK`` bytes): a node id there is the command's
    argument, never a test starting (a terminal copy cuts ``pytest path::test`` into a row of its own)."""
    group = buf.rfind(b"##[group]Run ", max(0, start - RUN_SCRIPT_BACK), start)
    return group != -1 and buf.find(b"##[endgroup]", group, start) == -1


def _sessions(buf: bytes, lo: int, hi: int, depth: int, stop: bool = True) -> Tuple[int, int]:
    """The inner sessions still open at ``hi`` when ``depth`` were open at ``buf[lo]``: each session start
    in ``buf[lo:hi]`` opens one, each framed verdict closes one. ``stop``: return as soon as none is open,
    with where the line that closed the last one ends; else ``(depth, hi)``, a verdict with none open
    changing nothing (the outer run's own)."""
    if buf.find(b"==", lo, hi) == -1:  # most of a test's output: no regex pass over it
        return depth, hi
    for m in _SESSION_EDGE.finditer(buf, lo, hi):
        if m.group(1):
            depth += 1
        elif depth:
            depth -= 1
            if not depth and stop:
                return 0, _line_around(buf, m.start())[1]
    return depth, hi


def _outcome_after(buf: bytes, lo: int, hi: int, test: str, depth: int = 0) -> Tuple[Optional[str], int]:
    """Whether ``test``, in force from ``buf[lo]``, reported an outcome before another test's progress line
    started (searched up to ``hi``): how it ended (``ENDED_PASSED`` and its kin), "" (it failed, or
    another test began first), or None when ``buf[lo:hi]`` shows neither yet; and how
    many of its inner sessions are still open at ``hi`` then (``depth`` were open at ``lo``).

    The same test's progress line again (pytest prints ``t`` again for each subtest report and once more
    with the test's outcome; pytest-rerunfailures prints ``t RERUN`` and then ``t`` for the rerun) is
    still that test: its outcome is the one such a line carries. Under xdist that line is the worker's
    report (``[gw0] [ 14%] RERUN t`` after a worker it crashed went down): the test reported.

    A session that starts inside the test (pytester's inner run under ``-s``, ``-v``) prints its own
    progress lines and bare outcomes up to its own verdict: they neither end nor judge the test, whose
    outcome comes after that verdict (pytest-xdist 3.8.0's test_dist_tests_with_crash: its inner
    ``-v -n1`` run's "test_dist_tests_with_crash.py::test_fail0" ended it, so its "PASSED" was never read).
    """
    while True:
        if depth:
            depth, lo = _sessions(buf, lo, hi, depth)
            if depth:
                return None, depth
        nxt = min(_next_progress(buf, lo), hi)
        opened = _SESSION_START.search(buf, lo, nxt) if buf.find(_STARTS, lo, nxt) != -1 else None
        bare = _BARE_OUTCOME.search(buf, lo, nxt if opened is None else opened.start())
        if bare is not None:
            # A failure said alone (pytest -s: "FAILED" after the test's own output) handled nothing: read
            # as no outcome, with or without the summary that would name the test after it.
            return ("" if _BARE_FAILURE.search(bare.group()) else _ended(buf, bare.start(), bare.end())), 0
        if opened is not None:
            depth, lo = 1, opened.end()
            continue
        if nxt >= hi:
            return None, 0
        start, end = _line_around(buf, nxt)
        parsed = _parse_at(buf, start, end)
        if parsed is None or parsed[0] != test:
            # Under xdist the next test's line may be another worker's, printed while this one still ran
            # (a worker that crashed in it: pytest-rerunfailures re-ran it on a new worker, which passed).
            return (ENDED_PASSED if _worker_report(buf, lo, test) else ""), 0
        if parsed[1]:  # an xdist line of the test is its worker's report: an outcome (RERUN included)
            return _ended(buf, start, end), 0
        lo = end


def _ended(buf: bytes, lo: int, hi: int) -> str:
    """How a test whose outcome ``buf[lo:hi]`` reports ended when it did not fail: ``ENDED_XFAIL`` or
    ``ENDED_SKIPPED`` for the last such word there, else ``ENDED_PASSED``."""
    words = _ENDING_WORD.findall(buf, lo, hi)
    return _ENDED_BY_WORD[words[-1]] if words else ENDED_PASSED


def _ended_since(buf: bytes, start: int, hi: int) -> str:
    """How the test whose progress line starts at ``buf[start]`` ended: its outcome on that line, else the
    first bare outcome after it up to ``hi`` (``pytest -s``, unittest: after the test's own output, whose
    words are not read)."""
    line_end = buf.find(b"\n", start, hi)
    if line_end == -1:
        return _ended(buf, start, hi)
    ended = _ended(buf, start, line_end)
    bare = _BARE_OUTCOME.search(buf, line_end, hi) if ended == ENDED_PASSED else None
    return ended if bare is None else _ended(buf, bare.start(), bare.end())


# An xdist worker's report of a test's outcome, as the controller prints it under -v.
_WORKER_REPORT = lazy(
    r"\[gw\d+\] (?:\[\s*\d+(?:%|/\d+)\] )?(?P<outcome>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN) "
)
# How many reports of one test are read before giving up (each RERUN is one; the final outcome follows),
# and how far after the test's time they are looked for: a run without xdist reads no more than that
# once per watched test that printed an event.
_MAX_WORKER_REPORTS = 8
_WORKER_REPORT_AHEAD = 256 * 1024


def _worker_report(buf: bytes, lo: int, test: str) -> bool:
    """Whether an xdist worker's report of ``test`` after ``buf[lo]`` says it ended well: its last report
    there (after any ``RERUN``s) is not FAILED or ERROR. False when no worker reported it in ``buf``
    (a run without xdist, or a worker lost before it reported). The reports of a run under xdist are
    printed in the order workers finish, so the next test's line says nothing of this one's outcome."""
    hi = min(len(buf), lo + _WORKER_REPORT_AHEAD)
    if buf.find(b"[gw", lo, hi) == -1:
        return False
    needle = test.encode("utf-8", "surrogateescape")
    outcome: Optional[bool] = None
    at, reports = buf.find(needle, lo, hi), 0
    while at != -1 and reports < _MAX_WORKER_REPORTS:
        start, end = _line_around(buf, at)
        after = at + len(needle)
        if buf.find(b"[gw", start, at) != -1 and (after >= len(buf) or buf[after] not in _ID_GOES_ON):
            text, _ = clean_stripped(buf[start:end], keep_progress=True)
            m = _WORKER_REPORT.search(text)
            if m is not None:
                reports += 1
                if m.group("outcome") != "RERUN":
                    outcome = m.group("outcome") not in ("FAILED", "ERROR")
                    break
        at = buf.find(needle, end, hi)
    return bool(outcome)


# The controller's line when a worker dies (xdist dsession.py worker_errordown: "[gw0] node down: Not properly
# terminated"); pytest-rerunfailures then reports the test the worker was running as that worker's RERUN on
# the next line ("[gw0] [ 66%] RERUN x.py::t", its xdist hook for a crashed item).
_NODE_DOWN = lazy(r"^\s*\[(?P<worker>gw\d+)\] node down\b")
NODE_DOWN_WORD = b"] node down"


def _rerun_after_lost_worker(buf: bytes, start: int, end: int) -> Optional[Tuple[str, bool]]:
    """The test whose rerun the line after ``buf[start:end]`` (a worker's "node down") reports for that
    worker, and whether its last report (after its reruns) says it passed; None when that line is no such
    report. A worker that crashes on every try is never named by xdist's "crashed while running" until
    its last try: its earlier crashes would otherwise belong to no test."""
    text, _ = clean_stripped(buf[start:end], keep_progress=True)
    m = _NODE_DOWN.match(text)
    if m is None or end >= len(buf):
        return None
    nxt = buf.find(b"\n", end + 1)
    nxt = len(buf) if nxt == -1 else nxt
    after, _ = clean_stripped(buf[end + 1:nxt], keep_progress=True)
    after = after.strip()
    rerun = _RERUN_LINE.match(after)
    if rerun is None or not rerun.group("test") or not after.startswith("[" + m.group("worker") + "] "):
        return None
    test = rerun.group("test")
    return test, _worker_report(buf, nxt, test)


def _trailing_head(buf: bytes, next_line: int) -> Optional[Tuple[str, int]]:
    """The unittest id and line number of ``buf``'s last line when it is an id alone (``test_m
    (mod.Class)``), which a docstring line in the next window would make a test's start; ``next_line``
    is the number of the line after ``buf``."""
    if not buf.endswith(b"\n"):
        return None  # the log's last line: no window follows
    start = buf.rfind(b"\n", 0, len(buf) - 1) + 1
    text, _ = clean_stripped(buf[start: len(buf) - 1])
    head = _UNITTEST_DOC_HEAD.match(text.strip())
    if head is None:
        return None
    return unittest_id(head.group("name"), head.group("cls")), next_line - 1


def _last_percent_bracket(buf: bytes) -> int:
    """``buf.rfind(b"%]")``: memrchr for "%" first, because a window without "%]" (most logs' windows)
    costs bytes.rfind of two bytes a full backwards pass, about 1 ms a MiB (half of grep's whole time on
    short lines); a few "%" without "]" (tqdm's bars) fall back to it."""
    at = len(buf)
    for _ in range(8):
        at = buf.rfind(b"%", 0, at)
        if at == -1 or buf[at + 1 : at + 2] == b"]":
            return at
    return buf.rfind(b"%]", 0, at)  # one at ``at`` is not "%]", and none can start before it and cover it


def _line_number(buf: bytes, start: int, first_line: int, next_line: int) -> int:
    # The last progress line sits near the window's end: count the few lines after it, not the
    # thousands before (the engine has counted those once already).
    if buf.endswith(b"\n"):
        return next_line - buf.count(b"\n", start)
    return first_line + buf.count(b"\n", 0, start)


def _next_progress(buf: bytes, lo: int, hi: Optional[int] = None) -> int:
    """Where the first progress line starting at or after ``lo`` (and before ``hi``) starts (``len(buf)``,
    or ``hi``, if none)."""
    best = len(buf) if hi is None else hi
    for needle in NEEDLES:
        at = _needle_line(buf, needle, lo, best, forward=True)
        tries = 0
        while at != -1 and tries < MAX_CANDIDATES:
            tries += 1
            start, end = _line_around(buf, at)
            if start >= lo and _parse_at(buf, start, end) is not None:
                best = min(best, start)
                break
            at = _needle_line(buf, needle, end, best, forward=True)
    return best


def is_node_id(test: str) -> bool:
    """Whether ``test`` is a pytest node id (``x.py::test_y[tp::0]``), not a report header's name: a "::"
    before its parametrize id, which may hold "::" itself (``test_y[tp::0]`` is a header's name)."""
    return "::" in test.partition("[")[0]


def header_tail(name: str) -> bytes:
    """How a node id ends for pytest's report header ``name``: ``TestC.test_y[p.q]`` ->
    ``::TestC::test_y[p.q]`` (the parametrize id keeps its dots)."""
    head, bracket, rest = name.partition("[")
    return ("::" + head.replace(".", "::") + bracket + rest).encode("utf-8", "surrogateescape")


def node_ids_ending(buf: bytes, tail: bytes, limit: int = 2, start: int = 0) -> Set[str]:
    """The distinct node ids in ``buf[start:]`` (up to ``limit``; ``start`` is a line's start) that are a
    ``.py`` file's path followed by ``tail`` (``header_tail``): ``x.py::TestC::test_y`` ends
    ``::TestC::test_y``, ``x.py::TestD::test_y`` does not end ``::test_y``."""
    found: Set[str] = set()
    at = buf.find(tail, start)
    while at != -1 and len(found) < limit:
        end = at + len(tail)
        if end == len(buf) or buf[end] not in _ID_GOES_ON:
            start = at
            begin = _id_start(buf, at, _PATH_BYTES)
            if buf.endswith(b".py", begin, at) and at - begin > 3:
                found.add(buf[begin:end].decode("utf-8", "surrogateescape"))
            elif begin == at and _NO_PATH_BEFORE.fullmatch(buf, buf.rfind(b"\n", 0, at) + 1, at):
                found.add(buf[at:end].decode("utf-8", "surrogateescape"))
        at = buf.find(tail, end)
    return found


def node_ids_of_item(buf: bytes, item: bytes, limit: int = 2, end: Optional[int] = None) -> Set[str]:
    """The distinct node ids in ``buf[:end]`` (up to ``limit``) whose last part is the pytest item name
    ``item`` (``test_y[p]``, as a retry plugin's report prints ``item.name``): ``x.py::test_y[p]`` and
    ``x.py::TestC::test_y[p]``, not ``x.py::test_y[p]_slow``."""
    found: Set[str] = set()
    tail = b"::" + item
    stop = len(buf) if end is None else end
    at = buf.find(tail, 0, stop)
    while at != -1 and len(found) < limit:
        after = at + len(tail)
        if after == len(buf) or buf[after] not in _ID_GOES_ON:
            begin = _id_start(buf, at, _ID_GOES_ON)
            path, colons, classes = buf[begin:at].partition(b"::")
            if path.endswith(b".py") and len(path) > 3 and b"[" not in classes \
                    and all(part.decode("ascii", "replace").isidentifier()
                            for part in classes.split(b"::") if colons):
                found.add(buf[begin:after].decode("utf-8", "surrogateescape"))
        at = buf.find(tail, after, stop)
    return found


def _id_start(buf: bytes, at: int, id_bytes: FrozenSet[int]) -> int:
    """Where a node id whose "::tail" is at ``at`` starts: back over ``id_bytes``, a path's
    (``_PATH_BYTES``: up to the file's path) or a whole id's (``_ID_GOES_ON``: its classes too)."""
    begin = at
    while begin > 0 and buf[begin - 1] in id_bytes:
        begin -= 1
    return begin


# What comes before a node id with no path (``_NO_PATH``) on its line: nothing (a -v line, a --collect-only
# -q list) or an -r line's outcome word ("PASSED ::TestC::test_y"), behind GitHub's timestamp.
_NO_PATH_BEFORE = lazy(_TS + rb"(?:(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN) )?")


# pytest --collect-only -q prints each node id on its own line, then (after a blank line) how many
# (_pytest/terminal.py, _build_collect_only_summary_stats_line: "9 tests collected in 1.62s", "4/9 tests
# collected (5 deselected) in 0.01s"). CI scripts print it before the run to log what will run: a report
# header's name under -q ("TestC.test_y[p]") is then found there when the run was cut before its summary.
COLLECTED_NEEDLE = b" collected "
_COLLECTED_LINE = lazy(rb"\b\d+(?:/\d+)? tests? collected (?:\(\d+ deselected\) )?in \d+(?:\.\d+)?s\b")
# A longer list (or one that began before the window before its count) is not kept: a list seen in part
# could make a name two files share look like one file's.
MAX_COLLECTED = 1024 * 1024


def _collected_list(buf: bytes, hi: int, before: Optional[bytes]) -> Optional[Tuple[bytes, int]]:
    """The node id lines of the last ``--collect-only -q`` list whose count line ends by ``buf[hi]``, with
    ``before`` (the window before, or None) when the list began in it, and where that count line starts;
    None when there is no such list, or it is longer than ``MAX_COLLECTED`` bytes or began before
    ``before``."""
    at = buf.rfind(COLLECTED_NEEDLE, 0, hi)
    found = None
    while at != -1 and found is None:
        start, end = _line_around(buf, at)
        found = _COLLECTED_LINE.search(buf, start, end) and (start, end)
        at = buf.rfind(COLLECTED_NEEDLE, 0, start)
    if not found or found[1] > hi:
        return None
    count_at = found[0]
    end = count_at - 1  # the "\n" before the count line
    start, stop = _line_around(buf, end - 1) if end > 0 else (0, 0)
    if PYTEST_NEEDLE not in buf[start:stop]:  # the blank line between
        end = start - 1
    block = end
    while block > 0:
        start, stop = _line_around(buf, block - 1)
        if buf.find(PYTEST_NEEDLE, start, stop) == -1:
            break
        block = start
    if block >= end or end - block > MAX_COLLECTED:
        return None
    if block > 0:
        return buf[block:end], count_at
    if before is None:
        return buf[:end], count_at
    head = len(before)
    while head > 0:
        start, stop = _line_around(before, head - 1)
        if before.find(PYTEST_NEEDLE, start, stop) == -1:
            break
        head = start
    if head == 0 or len(before) - head + end > MAX_COLLECTED:
        return None
    return before[head:] + b"\n" + buf[:end], count_at


class TestTracker:
    """Per source: the last progress line of the windows already scanned, and the outcome of the one
    test a finding waits on (mutable, engine-internal).

    ``outcomes`` maps the line number of a watched progress line to how that test ended (``ENDED_PASSED``
    and its kin) when it reported an outcome before the next test started (or the log ended), else "".
    Only tests a finding happened in are watched, one at a time, so this costs nothing on innocent lines.
    """

    __slots__ = (
        "carry", "outcomes", "reruns", "_watch", "_watch_from", "_watch_depth", "_buf", "_to", "_here",
        "_here_start",
        "_here_old", "_bare_to", "_head", "ids", "_wanted", "_last", "row", "letters", "_needle_from",
        "_needle_at", "_failures_last", "_failures_next", "_failures_lo", "_collected", "_before",
        "ids_before",
    )

    def __init__(self, hyperscan: bool = False) -> None:
        """``hyperscan``: whether the scan's engine is Hyperscan (``ProgressLetters``)."""
        self.carry: Optional[TestLine] = None
        # pytest's last progress row without -v, as (line, percent), when it is the log's last line that
        # ends in a percentage or its unended last line (percent 0); None otherwise (a -v line came after).
        self.row: Optional[Tuple[int, int]] = None
        self.outcomes: Dict[int, str] = {}
        # tests a rerun plugin ran again after a failed attempt (``_take_reruns``), at most MAX_RERUN_TESTS
        self.reruns: Set[str] = set()
        self._watch: Optional[TestLine] = None
        self._watch_from = 0  # offset in the current window from which the watched test is read
        self._watch_depth = 0  # its inner sessions open there (their lines are not the outer run's)
        # Matches come in line order, so each window is searched once, front to back, however many
        # matches it holds: ``_to`` is how far it has been searched for progress lines, ``_here`` the
        # one in force there (starting at ``_here_start``), ``_bare_to`` how far a bare outcome for it.
        self._buf: Optional[bytes] = None
        self._to = 0
        self._here: Optional[TestLine] = None
        self._here_start = 0
        self._here_old = False  # ``_here`` is an earlier window's (``carry``)
        self._bare_to = 0
        # The first ``UNITTEST_NEEDLE`` in ``_buf`` at or after ``_needle_from`` (-1: none): a block opens
        # every few lines of a log of logged tracebacks, and each looked ``FIXTURE_AHEAD`` bytes ahead.
        self._needle_from = 0
        self._needle_at = -1
        # The ``FAILURES_NEEDLE``s of ``_buf`` met so far, read forward once per window
        # (``_failures_before``): each match rfound it ``FIXTURE_AHEAD`` bytes back, at a tenth of memchr's
        # speed where it is not (a log of logged tracebacks).
        self._failures_last = -1  # the last one that ends by ``_failures_lo``
        self._failures_next = -1  # the first one after it (-1: none)
        self._failures_lo = 0
        # A unittest id alone on the last line of the previous window, and its line number: the start of a
        # test with a docstring if the next window begins with the docstring's line.
        self._head: Optional[Tuple[str, int]] = None
        # Report headers' names -> the node id the log spells them with (None: two files have one),
        # the names still looked for (with the tail their id ends in), and the last window ended.
        self.ids: Dict[str, Optional[str]] = {}
        # A retry plugin's item names -> the node id the log spelled them with before its report (pytest -v
        # prints the id only before; None: two), used where nothing after the report names it (``found_ids``).
        self.ids_before: Dict[str, Optional[str]] = {}
        self._wanted: Dict[str, bytes] = {}
        # The node ids of the last --collect-only -q list (``_collected_list``), its count line's number and
        # the first line of the window it was looked for from; the window before ``_last`` (None: none).
        self._collected: Optional[Tuple[bytes, int, int]] = None
        self._before: Optional[Tuple[bytes, int, Optional[List[int]]]] = None
        # (its text, its first line's number, where each of its lines starts in a wrapped window's view)
        self._last: Optional[Tuple[bytes, int, Optional[List[int]]]] = None
        # pytest's and unittest's progress letters without -v (``analyzer.scan.letters``)
        self.letters = ProgressLetters(hyperscan)

    def want(self, name: str, line: int, item: bool = False) -> None:
        """Find the node id of pytest's report header ``name`` in the log from ``line`` on (an event under
        that header; only what follows it, so the answer is the same however the log is cut in windows).
        ``item``: ``name`` is a retry plugin's item name (``test_y[p]``, of a test of any class), whose
        node id pytest -v printed before it: looked for also in this window and the one before, up to
        ``line`` (``ids_before``; a log cut in smaller windows may find it in neither: the name stays)."""
        if item and name not in self.ids_before and len(self.ids_before) < MAX_WANTED:
            self.ids_before[name] = self._id_before(name, line)
        if name in self._wanted or name in self.ids or len(self._wanted) >= MAX_WANTED:
            return
        self._wanted[name] = header_tail(name)
        if self._last is None:
            return
        buf, first, starts = self._last
        index = max(0, line - first)
        if starts is not None:
            if index >= len(starts):
                return
            at = starts[index]
        else:
            at = 0
            for _ in range(index):
                at = buf.find(b"\n", at) + 1
                if not at:
                    return
        self._listed(name, line, buf, at)
        self._look(buf, at)

    def _id_before(self, item: str, line: int) -> Optional[str]:
        """The one node id of retry plugin item ``item`` in the window holding ``line`` before it, or else
        in the window before; None: none there, or two (two classes' or files' tests of that name)."""
        if self._last is None:
            return None
        buf, first, starts = self._last
        index = max(0, line - first)
        if starts is not None:
            at = starts[index] if index < len(starts) else len(buf)
        else:
            at = 0
            for _ in range(index):
                at = buf.find(b"\n", at) + 1
                if not at:
                    at = len(buf)
                    break
        name = item.encode("utf-8", "surrogateescape")
        found = node_ids_of_item(buf, name, end=at)
        if not found and self._before is not None:
            found = node_ids_of_item(self._before[0], name)
        return found.pop() if len(found) == 1 else None

    def found_ids(self) -> Dict[str, Optional[str]]:
        """Report headers' and retry plugins' names -> their node ids (``ids``; a retry plugin's item name
        whose id nothing after its report named: the one printed before it, ``ids_before``)."""
        found = {name: known for name, known in self.ids_before.items() if known is not None}
        found.update((name, known) for name, known in self.ids.items()
                     if known is not None or name not in found)
        return found

    def _listed(self, name: str, line: int, buf: bytes, at: int) -> None:
        """Take the node id of report header ``name`` (on line ``line``, at ``buf[at]`` in the window
        ``_last``) from the last ``--collect-only -q`` list before it, when one file's test has that
        name there. The list is looked for (``_collected_list``) only now, in this window up to the
        header and the window before (``_before``): an innocent window costs nothing."""
        first = self._last[1] if self._last is not None else 0
        if self._collected is None or self._collected[2] != first or self._collected[1] > line:
            before = self._before[0] if self._before is not None else None
            window = self._last
            found = _collected_list(buf, at, before)
            if found is None and self._before is not None:
                window = self._before
                found = _collected_list(window[0], len(window[0]), None)
            if found is not None and window is not None:
                listed, count_at = found
                where, starts = window[0], window[2]
                count_line = window[1] + (bisect.bisect_right(starts, count_at) - 1 if starts is not None
                                          else where.count(b"\n", 0, count_at))
                self._collected = (listed, count_line, first)
        if self._collected is not None and self._collected[1] < line:
            ids = node_ids_ending(self._collected[0], self._wanted[name])
            if len(ids) == 1:  # two: two files' tests of that name, which the run may still say
                self.ids[name] = ids.pop()

    def _look(self, buf: bytes, start: int = 0) -> None:
        for name, tail in list(self._wanted.items()):
            found = node_ids_ending(buf, tail, start=start)
            known = self.ids.get(name)
            if known is not None:
                found.add(known)
            if len(found) > 1:
                self.ids[name] = None  # two files' tests of that name: the header does not say which
                del self._wanted[name]
            elif found:
                self.ids[name] = found.pop()

    def idle_through(self, buf: bytes, end: int) -> bool:
        """Whether ``at`` for a line of ``buf`` that ends at ``end`` would change nothing but how far it
        read; if so, moves that on as ``at`` would. It entered this window already, holds no test in force
        and watches none, and no line between where it read to and ``end`` may parse as a progress line
        (``_may_parse_within``: ``_MAY_PARSE``, or a no-path needle's "::", which each candidate line of
        ``_last_progress`` holds): ``at`` would find no
        progress line, leave its test and watch as they are, and read the fixture and ``--tb=line`` owners
        (pure, its caches only remember where needles are)."""
        if self._buf is not buf or self._here is not None or self._watch is not None:
            return False
        if end > self._to:
            if _may_parse_within(buf, self._to, end):
                return False
            self._to = end
        return True

    def at(self, buf: bytes, pos: int, line: int) -> Optional[TestLine]:
        """The progress line in force at the line starting at ``buf[pos]`` (number ``line``)."""
        line_end = buf.find(b"\n", pos)
        if line_end == -1:
            line_end = len(buf)
        if buf is not self._buf:
            if self._head is not None:
                self._take_head(buf)
            self._buf, self._to, self._here, self._here_start, self._bare_to = buf, 0, self.carry, 0, 0
            self._here_old = True
            self._needle_from, self._needle_at = len(buf) + 1, -1  # looked for on first need
            self._failures_last, self._failures_next, self._failures_lo = -1, buf.find(FAILURES_NEEDLE), 0
        # Each line _last_progress would parse is within the span and holds a _MAY_PARSE word, so a span
        # without one has no progress line: one pass over its bytes, where each needle's candidates (")\n"
        # ends every call line of a logged traceback's frames) cost a search each. A longer span than
        # AT_SPAN_CHECKED is left to _last_progress: the check copies it twice (a window's 2 MiB of peak).
        if line_end > self._to:
            if line_end - self._to > AT_SPAN_CHECKED or _may_parse_within(buf, self._to, line_end):
                found = _last_progress(buf, line_end, self._to)
            else:
                found = None
            if found is not None:
                start, end, (test, finished, xdist, quiet) = found
                self._here = TestLine(test, line - buf.count(b"\n", start, pos), finished, xdist, quiet)
                self._here_start, self._bare_to, self._here_old = start, end, False
            self._to = line_end
        result = self._here
        if result is not None and not result.finished and self._bare_to < pos:
            if _BARE_OUTCOME.search(buf, self._bare_to, pos) is not None:
                result = self._here = dataclasses.replace(result, finished=True)
            self._bare_to = pos
        self._rewatch(buf, result, self._here_start, line_end)
        if result is None or (result.finished and not result.xdist):
            holder = _fixture_after(buf, line_end, self._next_needle(buf, line_end))
            if holder is not None:
                return TestLine(holder[0], line + buf.count(b"\n", pos, holder[1]), True)
            owner = _tb_line_owner(buf, pos, line_end, self._failures_before(buf, pos))
            if owner is not None:
                return TestLine(owner[0], line + buf.count(b"\n", pos, owner[1]), True)
        if (result is None or result.xdist) and buf.find(NODE_DOWN_WORD, pos, line_end) != -1:
            rerun = _rerun_after_lost_worker(buf, pos, line_end)
            if rerun is not None:
                return TestLine(rerun[0], line + 1, rerun[1])
        return result

    def _failures_before(self, buf: bytes, lo: int) -> int:
        """Where the last ``FAILURES_NEEDLE`` ending by ``buf[lo]`` starts (-1: none); ``buf`` is ``_buf``."""
        if lo < self._failures_lo:  # not in line order: read back
            return buf.rfind(FAILURES_NEEDLE, 0, lo)
        self._failures_lo = lo
        size = len(FAILURES_NEEDLE)
        while self._failures_next != -1 and self._failures_next + size <= lo:
            self._failures_last = self._failures_next
            self._failures_next = buf.find(FAILURES_NEEDLE, self._failures_next + 1)
        return self._failures_last

    def _next_needle(self, buf: bytes, lo: int) -> int:
        """Where the first ``UNITTEST_NEEDLE`` at or after ``buf[lo]`` is (-1: none); ``buf`` is ``_buf``."""
        if lo < self._needle_from or -1 < self._needle_at < lo:
            self._needle_from, self._needle_at = lo, buf.find(UNITTEST_NEEDLE, lo)
        return self._needle_at

    def _rewatch(self, buf: bytes, result: Optional[TestLine], start: int, pos: int) -> None:
        # ``pos``: the end of the matched line; the watched test's outcome can only come after it.
        watch = self._watch
        if watch is not None and (result is None or result.line != watch.line):
            # The watched test's time ended where another test's progress line starts; a progress line
            # of the same test again (``result`` itself may be one) continues it.
            # A line before where the test is read from (an earlier window's included) is one of its inner
            # sessions', read already.
            stale = result is not None and (start < self._watch_from or self._here_old)
            outcome, depth = _outcome_after(
                buf, self._watch_from, pos if stale else start, watch.test, self._watch_depth
            )
            if outcome is None and (depth or stale):  # ``result`` is its inner session's: the test goes on
                self._watch_depth = _sessions(buf, self._watch_from, pos, self._watch_depth, stop=False)[0]
                self._watch_from = max(self._watch_from, pos)
                return
            if outcome is None and result is not None and result.xdist and result.finished \
                    and result.test == watch.test:
                outcome = ENDED_PASSED  # its own worker's report, as _outcome_after reads one in the window
            if outcome is not None or result is None or result.test != watch.test or result.xdist:
                self._settle(watch, outcome or "")
                watch = None
        if result is not None and result.finished and not result.xdist:
            # Its progress line, or a bare outcome after it up to ``pos``, says how it ended.
            ended = _ended_since(buf, start, pos)
            self.outcomes[result.line] = ended
            if watch is not None:
                self._settle(watch, ended)
            self._watch = None
        elif result is not None and watch is None and not result.xdist:
            self._watch = result
            self._watch_from = pos
            self._watch_depth = _sessions(buf, start, pos, 0, stop=False)[0]  # a start glued to its line
        else:
            self._watch = watch
            if watch is not None and pos > self._watch_from:
                self._watch_depth = _sessions(buf, self._watch_from, pos, self._watch_depth, stop=False)[0]
                self._watch_from = pos

    def _settle(self, watch: TestLine, ended: str) -> None:
        self.outcomes[watch.line] = ended or self.outcomes.get(watch.line, "")
        self._watch = None

    def _take_head(self, buf: bytes) -> None:
        """The previous window ended on a unittest id alone: when ``buf`` begins with its docstring's
        line, that test started there, as ``_parse_at`` reads the two lines inside one window."""
        test, line = self._head or ("", 0)
        self._head = None
        first = buf.find(b"\n")
        doc, _ = clean_stripped(buf[: len(buf) if first == -1 else first])
        m = _UNITTEST_DOC_LINE.match(doc.rstrip("\r"))
        if m is None:
            return
        if self._watch is not None:
            # It had not reported by the end of the window before (``end_window`` looked): a new test began.
            self._settle(self._watch, "")
        self.carry = TestLine(test, line, bool(_UNITTEST_OUTCOME.match(m.group("rest") or "")))

    def end_window(
        self, buf: bytes, first_line: int, next_line: int, starts: Optional[List[int]] = None,
        raw: Optional[bytes] = None, hint_ends: Optional[List[int]] = None, rerun: Optional[bool] = None,
    ) -> None:
        """Remember the last progress line of ``buf`` (its lines are ``first_line`` to ``next_line - 1``;
        ``starts``: where each line starts in ``buf`` when it is a wrapped window's view, ``raw`` the
        window itself then: progress letters start its lines, where a long line before them may look cut;
        ``hint_ends``: where the engine's pass over that window found the letters' hints (None: not looked
        for there); ``rerun``: whether that pass found ``RERUN_WORD`` on a line of ``buf`` (None: not looked
        for, searched here))."""
        self._buf = self._here = None
        self._before = self._last
        self._last = (buf, first_line, starts)
        self.letters.feed(buf if raw is None else raw, first_line, hint_ends)
        if len(self.reruns) < MAX_RERUN_TESTS and (RERUN_WORD in buf if rerun is None else rerun):
            self._take_reruns(buf)
        if self._wanted:
            self._look(buf)
        if self._head is not None:
            self._take_head(buf)
        self._head = _trailing_head(buf, next_line)
        self._take_row(buf, first_line, next_line)
        watch = self._watch
        if watch is not None:
            outcome, self._watch_depth = _outcome_after(
                buf, self._watch_from, len(buf), watch.test, self._watch_depth
            )
            if outcome is not None:
                self._settle(watch, outcome)
            self._watch_from = 0
        found = _last_progress(buf, len(buf))
        if found is None:
            carry = self.carry
            if carry is not None and not carry.finished and _BARE_OUTCOME.search(buf):
                self.carry = dataclasses.replace(carry, finished=True)
            return
        start, end, (test, finished, xdist, quiet) = found
        if not finished:
            finished = _BARE_OUTCOME.search(buf, end) is not None
        self.carry = TestLine(test, _line_number(buf, start, first_line, next_line), finished, xdist, quiet)

    def _take_reruns(self, buf: bytes) -> None:
        """Remember the tests ``buf``'s RERUN lines name: pytest-rerunfailures's ``x.py::t RERUN [ 28%]``
        (-v), ``[gw0] [ 77%] RERUN x.py::t`` (xdist) and ``RERUN x.py::t`` (its rerun summary)."""
        at = buf.find(RERUN_WORD)
        while at != -1 and len(self.reruns) < MAX_RERUN_TESTS:
            start, end = _line_around(buf, at)
            text, _ = clean_stripped(buf[start:end], keep_progress=True)
            m = _RERUN_LINE.search(text)
            if m is not None:
                self.reruns.add(m.group("test") or m.group("head"))
            at = buf.find(RERUN_WORD, end)

    def _take_row(self, buf: bytes, first_line: int, next_line: int) -> None:
        """Remember ``buf``'s last line that ends in a percentage if it is pytest's progress row, or, as a
        row at 0%, its unended last line if that is a row's progress letters alone: pytest ends every row
        with its percentage, so a log that ends there ended inside the run (pytest -q whose test called
        ``os._exit(0)``: "..", no newline, no verdict)."""
        tail = buf.rfind(b"\n") + 1
        if 0 < len(buf) - tail <= _MAX_CUT_ROW_BYTES:
            text, _ = clean_stripped(buf[tail:], keep_progress=True)
            if _CUT_ROW.fullmatch(text.strip()):
                self.row = (_line_number(buf, tail, first_line, next_line), 0)
                return
        at = _last_percent_bracket(buf)
        if at == -1:
            return
        start = buf.rfind(b"\n", 0, at) + 1
        end = buf.find(b"\n", at)
        text, _ = clean_stripped(buf[start : len(buf) if end == -1 else end], keep_progress=True)
        row = _PROGRESS_ROW.fullmatch(text.strip())
        self.row = (_line_number(buf, start, first_line, next_line), int(row.group(1))) if row else None

    def end_log(self) -> None:
        """The log ended: a test still watched never reported an outcome."""
        if self._watch is not None:
            self._settle(self._watch, "")


# pytest's progress row without -v ("..F.s [ 50%]", "tests/test_x.py ..  [ 12%]"), written when a row fills
# or a file's tests end: the share of the run done so far. A run that dies leaves it below 100%.
_PROGRESS_ROW = lazy(r"(?:\S+\.py ?)?[.FEsxXR]+\s+\[\s*(\d+)%\]")
# The same row before its percentage: the progress letters of the tests run so far.
_CUT_ROW = lazy(r"(?:\S+\.py ?)?[.FEsxXR]+")
_MAX_CUT_ROW_BYTES = 4096
# A test's outcome alone on its line: pytest -s prints it after the test's own output, unittest after a
# test that printed; those of a test that passed (an event inside it was handled).
# Only the word (and pytest's percentage): "ERROR: ..." and "ok, retrying" are the test's own output.
_OUTCOME_ALONE = lazy(
    r"\s*(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|ok|FAIL|skipped|expected failure|unexpected success)"
    r"(?:\s+\[\s*\d+%\])?\s*$"
)
_OUTCOME_WORDS = lazy(
    r"\b(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|ok|FAIL|skipped|expected failure|unexpected success)\b"
)
_PASSING = frozenset({"PASSED", "SKIPPED", "XFAIL", "ok", "skipped", "expected failure"})
# Bytes without which a line is neither a progress line (NEEDLES) nor an outcome.
_MAY_GO_ON = lazy(
    b"|".join(re.escape(needle) for needle in NEEDLES)
    + rb"|PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|ok|FAIL|skipped|expected failure|unexpected success"
)


def may_report_progress(raw: bytes) -> bool:
    """Whether ``raw`` holds a progress line's needle or an outcome word: a line without one needs no
    Python cleaning to be read."""
    return _MAY_GO_ON.search(raw) is not None


def outcome_alone(stripped: bytes) -> bool:
    """Whether ``stripped`` (``strip_controls``-ed) is a test's outcome alone on its line."""
    return _OUTCOME_ALONE.match(clean_stripped(stripped)[0]) is not None


def event_handled(lines: Sequence[bytes], test: Optional[str]) -> bool:
    """Whether ``lines`` show that the test an event happened in passed (as issue 7 has it, an event in a
    test that then passed was handled by the test): its progress line with a passing outcome (``PASSED``,
    ``XFAIL``, ``SKIPPED``, unittest's ``ok``), or a bare one as ``pytest -s`` and unittest print it
    after a test's own output, before another test's progress line.

    ``test`` None: ``lines`` are another log's from a little before the event (stderr's event, stdout's
    test lines), and the first progress line names the test that was running. A failed test, a verdict
    (the command still runs after it: stuck at exit), the last line (maybe still being written) and
    xdist's reports of other workers' tests never count."""
    for raw in lines[:-1]:
        if not may_report_progress(raw):
            continue  # an ordinary line: no Python cleaning for the megabytes a run may print in a grace
        stripped = strip_controls(raw)  # pytest --color=yes, PY_COLORS=1: "\x1b[32mPASSED\x1b[0m"
        parsed = parse_progress(stripped)
        if parsed is not None:
            name, finished, xdist, _ = parsed
            if xdist:
                continue
            if test is None:
                test = name
            if name != test:
                return False  # another test began and no passing outcome of this one came first
            if finished:
                return _passed(stripped)
            continue
        if test is not None and outcome_alone(stripped):
            return _passed(stripped)
    return False


def _passed(stripped: bytes) -> bool:
    """Whether the last outcome word on a line that reports one is a pass."""
    words = _OUTCOME_WORDS.findall(clean_stripped(stripped, keep_progress=True)[0])
    return bool(words) and words[-1] in _PASSING


def running_test(before: bytes, from_start: bool) -> Optional[str]:
    """The test still running at the end of ``before`` (another log's bytes up to a moment; from its
    start, or else its first line may be cut and is skipped): the last progress line's test when no
    outcome of it came after it, else None (between tests, after a verdict, or no progress line:
    ``pytest -q`` names no running test).

    The guard reads stdout this way for an event on stderr, whose log shows no test lines (``pytest -v
    -s``: the runner's lines go to stdout, the code's warnings and tracebacks to stderr)."""
    floor = 0 if from_start else before.find(b"\n") + 1
    if not from_start and floor == 0:
        return None  # one cut line: no progress line can be read in it
    found = _last_progress(before, len(before), floor)
    if found is None:
        return None
    start, end, (test, finished, xdist, quiet) = found
    if finished or xdist or quiet or _BARE_OUTCOME.search(before, end) is not None:
        return None
    return test


def passed_through(lines: Sequence[bytes], running: Optional[str], test: str) -> Optional[bool]:
    """Whether ``test`` passed and so did every test that reported before it in ``lines`` (another log
    from a moment ``running`` was in force, None when none was): an event that came while stdout went
    from one test to the next was handled only if both passed. None when ``lines`` end before it says.
    As ``event_handled``, the last line (maybe still being written), verdicts and xdist's reports never
    count."""
    current = running
    for raw in lines[:-1]:
        if not may_report_progress(raw):
            continue
        stripped = strip_controls(raw)
        parsed = parse_progress(stripped)
        if parsed is not None:
            name, finished, xdist, _ = parsed
            if xdist:
                continue
            if current == test and name != test:
                return False  # another test began and no outcome of this one came first
            current = name
            if not finished:
                continue
        elif current is None or not outcome_alone(stripped):
            continue
        if not _passed(stripped):
            return False
        if current == test:
            return True
        current = None
    return None

"""One log's matches folded into bounded state as they arrive: what ranking needs, nothing more.

``LogState.feed`` takes the engine's matches of one log in line order. Marker matches update compact
context and are dropped:
- ``test-header`` (pytest's ``____ test_y ____``) and unittest's ``FAIL: test_m (mod.Class)`` (a
  test-failure rule with a ``header`` group): the lines after it show that test's captured output;
- ``test-section`` (pytest's ``=== short test summary info ===`` and friends): no test is running;
  ``test session starts`` inside a test is an inner (pytester, subprocess) run, whose sections,
  verdict and failures belong to the outer test and are not the log's own;
- ``verdict-printed``: the run is over; what follows before the next test is its exit path. An event
  of a pytest run whose start the log shows, on no test's lines (``pytest`` without ``-v`` names no
  running test), was handled when that run's verdict reports no failure and no error; so was one
  since the log's start or the last verdict when the verdict is of a runner that never prints its
  start (``pytest -q``, unittest: the rule's ``unframed_run``); unittest's verdict comes after a report
  ("FAIL: test_m (mod.Class)") of every test that failed, so a test only an outcome line said failed ("FAIL"
  alone, which the test may have printed itself before unittest's "ok") did not fail without one;
- ``traceback``: kept per rank or process only while a failure can still ask for it, and the last
  one of the log for a failed exit status that nothing else explains (a ``fallback`` rule's);
- ``run-started`` / ``attempt-restarted`` / ``run-succeeded`` (torch elastic's "starting workers for
  entrypoint", "will restart worker group", "worker group successfully finished"): an event outside
  any test in an attempt the supervisor then restarted, followed by that run's success, was handled
  by the restart;
- ``rerun-passed`` (PyTorch's test/run_test.py: "The following tests failed and then succeeded when run in
  a new process['x.py::T::t']"): the tests it names failed or crashed, then passed when run_test.py ran
  each again in a new process; their events and failures were handled by that re-run;
- ``inner-run`` (pytester's ``running: PYTHON -mpytest ...``): the next ``test session starts`` is a test's
  inner run (a quiet one's, ``-q``, which prints none: what follows up to its verdict), even under an outer
  ``-q``, where neither the outer run's start nor the test's id was printed; an event
  in it on no test's lines is judged by the outer run's verdict (``voids_verdict`` voids only its own);
  it also ends any inner run still open (one that died without its verdict); a session start glued to the
  outer run's progress after a verdict makes every verdict since the log's own run last showed itself an
  inner run's (pytester's quiet runs print no start, several back to back), and the events read as their
  exit path the outer run's;
- ``inner-root`` (a session header's ``rootdir:`` in pytester's sandbox, ``pytest-of-USER/pytest-N/``): the
  session is a test's inner run if the log's run then shows it was not over (a start glued to its progress,
  or a verdict of a runner that prints no start: ``-q -s`` prints a test's inner sessions, start and all,
  back to back before anything of the outer run); until then, and in a log whose own run is rooted there
  (a harness in a temporary directory), its verdict stands. A session rooted inside the rootdir of the inner
  session open when its start came glued (to that run's file name: its test runs pytest again) is nested in
  that session, not the outer run's next one;
- any marker a rule's ``collateral_after`` names: the last one per name;
- ``echo`` with its ``echo`` group set (GitHub's runner echoing a run step's script, its shell: and env:
  lines; git naming a commit by its subject): the lines quote a command or a commit, not what ran, so
  every match on them is dropped (such a marker comes first in its line's order, being first in the
  catalogue).
Other matches fold by (rule, cleaned text, groups, test), or by the rule's ``fold_groups``, the rank
prefix and the test, into at most ``MAX_PER_RULE`` distinct events per rule; past that they are
counted, not kept. Test failures fold by test id. Memory is bounded by
those caps, whatever the size of the log.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
from typing import (
    TYPE_CHECKING, Callable, Deque, Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Set,
    Tuple,
)

from ..lazy_re import lazy_regex
from ..model import UNITTEST_FAILURES_UNNAMED_RULE, Finding, Kind
from ..rules.model import CUT_SHORT_GROUP, Catalogue, LineIgnore, Rule
from .attribution import TestLine, is_node_id, is_unittest_fixture, is_unittest_id, normal_test_id
from .clean import clean_line, kernel_clock
from .letters import ProgressLetters, is_unittest_verdict
from .letters import speaker as letters_speaker
from .match import Match

if TYPE_CHECKING:
    import regex

TRACEBACK_MARKER = "traceback"
CRASH_STACK_MARKER = "crash-stack"
# A crash stack starts this few lines after the crash line it belongs to ("Fatal Python error: X",
# a blank line, "Current thread 0x... (most recent call first):").
CRASH_STACK_GAP = 3
# faulthandler dumps every thread, one block each; this one's is the thread that crashed.
CURRENT_THREAD = "Current thread 0x"
LIBRARY_PATHS = ("/lib/python", "site-packages", "dist-packages", "<frozen")
# A faulthandler stack of a spawned process ends in multiprocessing's `python -c` bootstrap, "<string>".
BOOTSTRAP_PATHS = ("<string>",)
VERDICT_MARKER = "verdict-printed"
HEADER_MARKER = "test-header"
# An "E   " line of a pytest report that starts an exception's text: the full reason a summary line cut.
REPORT_REASON_MARKER = "report-reason"
MAX_REPORT_REASONS = 64  # such lines kept per report (each report's first ones)
# pytest's short summary cuts a reason to the terminal's width with this (_pytest/terminal.py).
CUT_REASON = "..."
SECTION_MARKER = "test-section"
SESSION_STARTS = "test session starts"
# Sections whose test reports are of tests that did not fail: an event shown there was handled.
PASSING_SECTIONS = ("passes", "xpasses", "xfailures")
FAILING_SECTIONS = ("failures", "errors")
# pytest prints its own report sections in this order (errors, failures, xfailures, then passes), so one
# of these inside a passing test's report is an inner run's, printed without "test session starts"
# (``-q``): it changes nothing. A "short test summary info" there may be the log's own, after its last
# report, or an inner run's: failures under it wait for the next report header or short summary, either
# of which says it was inner.
INNER_IN_PASSING = ("errors", "failures", "xfailures")
SHORT_SUMMARY = "short test summary info"
# pytest lists each warning under the node id of the test that raised it ("test_x.py::test_y" alone on its
# line), after every test ran: those lines are not tests starting.
WARNINGS_SUMMARY = "warnings summary"
RUN_STARTED = "run-started"
ECHO_MARKER = "echo"
# pytester's "running: PYTHON -mpytest ..." (_pytest/pytester.py runpytest_subprocess): the next session is
# a test's inner run even when the outer run, under -q, printed neither its start nor the test's id.
INNER_RUN_MARKER = "inner-run"
# pytester's announced command line asks for a quiet run, which prints no session start.
_QUIET_RUN = lazy_regex(r" (?:-q+|--quiet)(?= |$)")
# A session header's rootdir in pytester's sandbox (``LogState.run_sandboxed``).
INNER_ROOT_MARKER = "inner-root"
# torchrun's report row names its rank on the line before its exit code ("  rank      : 2 (local_rank: 2)",
# then "  exitcode  : -9 (pid: 11103)"): a block that starts right after it is that rank's row.
REPORT_RANK_MARKER = "report-rank"
# The row's "exitcode" line (any status) gives that rank's pid: the one place a rank that raised is
# tied to its process (``LogFindings.rank_pids``).
REPORT_EXIT_MARKER = "report-exit"
# pytest prints the rootdir this few lines after "test session starts" (platform, cachedir, plugins' headers).
INNER_ROOT_GAP = 12
# Inner sessions nested deeper than this keep no rootdir (memory stays bounded).
MAX_INNER_DEPTH = 16
# A session header's rootdir, without what pytest prints after it (", configfile: tox.ini").
_ROOTDIR = lazy_regex(r"^rootdir: (?P<root>.+?)(?:, \w+: .*)?\s*$")
ATTEMPT_RESTARTED = "attempt-restarted"
RUN_SUCCEEDED = "run-succeeded"
RERUN_PASSED_MARKER = "rerun-passed"
# A retry plugin's report line about one attempt of a test (pytest-retry's "\tt failed on attempt 1!
# Retrying!", flaky's "t failed (2 runs remaining out of 3)."): its ``fate`` group says how the attempt ended.
RETRY_ATTEMPT_MARKER = "retry-attempt"
# Events of one retried test's failed attempts held until its report says whether a later attempt passed.
MAX_RETRY_HELD = 1000
# A test id in the Python list a runner prints (``['x.py::T::t', "y.py::t[it's]"]``).
_LISTED_TEST = lazy_regex(r"'([^']+)'|\"([^\"]+)\"")
MAX_TENTATIVE = 1000
MAX_CLOSED_RUNS = 1000
# A ``void_at_end`` echo holds this many of the matches it dropped, and counts them after all when an
# event comes within ECHO_VOID_GAP lines of its end (or the log ends with it).
MAX_ECHO_HELD = 64
ECHO_VOID_GAP = 2
RANK_GROUPS = ("rank", "proc")  # torch.multiprocessing.spawn's process index is the rank
PROCESS_GROUPS = ("process", "name", "worker")  # "worker": pytest-xdist's gw2
EXCEPTION_GROUPS = ("exception", "exc")
MAX_PER_RULE = 100
# Later tellings of a folded event on no test's lines kept each, to be told apart once the log is over where
# the progress letters say they came from different tests (``LogState._apart``); later ones count in the last.
MAX_APART = 8
MAX_FAILED_TESTS = 10_000
# The test-failure rule a run cut before its summary makes its report headers' failures of
# (``LogState._headers_failed``).
PYTEST_OUTCOME_RULE = "pytest-test-outcome"
# The key a verdict's failures of no named test are kept under (``LogState._failures_unnamed``), and the
# verdicts read so: pytest's, whose run names each failure it counts. CTest's "1 tests failed out of 90" is
# told by its list's own rules (a "(Timeout)" row is ctest-test-timeout's, no test-failure).
UNNAMED_FAILURES = "unnamed failures"
PYTEST_VERDICT_RULES = ("pytest-verdict", "pytest-verdict-quiet")
MAX_SUBTESTS = 10_000
MAX_REASON_CHARS = 1000  # distinct failed subtests counted per test
MAX_IDENTITIES = 1024
MAX_LOST_WORKERS = 64  # xdist workers whose loss waits for the test xdist then fails on them
# pytest-xdist's outcome line for one worker's test: "[gw5] [ 95%] FAILED tests/x.py::t".
_XDIST_OUTCOME = lazy_regex(r"^\[(?P<worker>gw\d+)\] ")
# A user line pattern that times out this often is skipped for the rest of the log.
MAX_IGNORE_TIMEOUTS = 3

_ADDRESS = lazy_regex(r"0x[0-9a-fA-F]+")
# torchrun's ChildFailedError report names the failed rank on a line of its own inside the block:
# "  rank      : 1 (local_rank: 1)".
REPORT_RANK = lazy_regex(r"\brank\s*:\s*(\d+) \(local_rank:")
REPORT_RANK_WORD = " (local_rank:"  # what every match of REPORT_RANK holds
# A frame of a Python stack: faulthandler's '  File "/work/tests/test_x.py", line 7 in test_segv', a
# traceback's '  File "/work/x.py", line 7, in main'.
FRAME = lazy_regex(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:,? in (?P<function>\w+))?')
_FAILING_VERDICT = lazy_regex(r"\b(?:failed|errors?)\b")
# unittest's verdict ("Ran N tests in Xs", then OK or FAILED): its run printed a "FAIL: test_m (mod.Class)"
# or "ERROR: ..." report for every test that failed before it (unittest's TextTestResult.printErrors).
UNITTEST_VERDICT_OUTCOMES = ("OK", "FAILED")
UNITTEST_VERDICT_RULE = "unittest-verdict"
# What a verdict counts: pytest's "4 failed" (not pytest 9's "2 subtests failed"), unittest's
# "FAILED (failures=1, unexpected successes=1)" (runner.py ``TextTestRunner.run``).
_PYTEST_FAILED_COUNT = lazy_regex(r"(?:^|, )(\d+) failed\b")
_UNITTEST_VERDICT_COUNTS = lazy_regex(r"(failures|errors|unexpected successes)=(\d+)")

Identity = Tuple[str, str]


class AcrossPlace(NamedTuple):
    """For a match on no test's lines: where another log of the same command stood when the match's line
    arrived (the guard's stderr, read against its stdout: the two pipes' order is known only to a few
    milliseconds)."""

    test: Optional[str]  # the test that log showed running then (None: none)
    before: Tuple[int, Optional[str]]  # where it stood a little before, and the test running there
    # With no test: the line arrived after the first time and by the second (None when a test is named)
    arrived: Optional[Tuple[float, float]]


Across = Callable[[Match], Optional[AcrossPlace]]
# A top-level test run of a log starting ("start", its first marker), printing its verdict ("verdict",
# the verdict, whether it passed), or the last verdict told turning out an inner run's ("inner", None).
OnRun = Callable[[str, Optional[Match], bool], None]
# The context of a failure header, as if it were a progress line (line 0: no line of its own).
_HEADER_PASSED = TestLine("", 0, True)
_HEADER_FAILED = TestLine("", 0, False)


@dataclasses.dataclass(frozen=True)
class LogEvent:
    """One folded event of one log with the context ranking reads.

    ``test`` is the test it happened in as the log spelled it there (a node id, a failure header's
    name, a unittest id); ``LogFindings.test_of`` resolves a header name to its node id. ``exit_path``:
    it came after the run's verdict, before any test started again. ``test_finished``: the test it
    happened in reported an outcome afterwards (``None`` when it happened in no test).
    """

    match: Match
    repeats: int = 1
    test: Optional[str] = None
    exit_path: bool = False
    test_finished: Optional[bool] = None
    # How ``test`` ended when it reported after the event (``attribution.ENDED_PASSED`` and its kin, from
    # ``TestTracker.outcomes``); "" where unknown: ranking words a handled event as in a test that passed.
    test_ended: str = ""
    progress_line: int = 0  # the progress line ``test`` came from (0: a header, or none)
    verdict_before: Optional[Match] = None
    shutdown: Optional[Match] = None
    traceback: Optional[Tuple[str, Match]] = None
    reason: Optional[str] = None  # a test failure's one-line reason
    test_rerun: bool = False  # a rerun plugin ran ``test`` again after a failed attempt
    stack: Optional[Match] = None  # the crash stack faulthandler printed right after it
    # (restart, success): its attempt was restarted by the supervisor, and the run then succeeded.
    recovered: Optional[Tuple[Match, Match]] = None
    last_traceback: Optional[Match] = None  # a fallback rule's: the last traceback printed before it
    run_passed: Optional[Match] = None  # the passing verdict of its test run (it was on no test's lines)
    inner: bool = False  # in a test's inner run (pytester, a subprocess), on none of its tests' lines
    # Its ``test`` is the one another log showed running when its line arrived (``Across``): where that
    # log stood a little before, and the test running there (None: none), from which the outcomes are
    # read once the run is over.
    across: Optional[Tuple[int, Optional[str]]] = None
    # On no test's lines of either log: when its lines arrived (after the first time, by the last), to
    # be set in the other log's runs once they are over (their verdicts judge it, as this log's would).
    arrived: Optional[Tuple[float, float]] = None
    # On no test's lines of a run whose verdict failed: the line of the progress letter (pytest or unittest
    # without -v) that says the test which printed it passed (``analyzer.scan.letters``); 0: none does.
    passed_letter: int = 0
    subtests: int = 0  # a test failure's failed subtests its reports named (unittest's subTest, pytest 9's)
    # For an event told more than once, the ranks whose prefixed lines told it ("[rank3]:", a launcher's
    # label), one bit per rank below MAX_TOLD_RANK (``told_by_rank``); 0 for one telling. Identical lines
    # of many ranks fold into one event before anything else reads their ranks, and a 64-rank job's
    # reader wants "ranks 3, 17, 40", not "seen 3 times".
    told_by_ranks: int = 0


@dataclasses.dataclass(frozen=True)
class LogFindings:
    """What one log left for ranking (see ``analyzer.scan.combine``); small whatever the log's size."""

    path: str
    events: Tuple[LogEvent, ...] = ()
    failed: Tuple[str, ...] = ()  # ids of failed or errored tests, first failure first
    failed_overflow: bool = False  # more failed tests than MAX_FAILED_TESTS: "did t fail" is unsure
    dropped: Tuple[Tuple[str, int], ...] = ()  # (rule id, distinct findings dropped past the cap)
    final_verdict: Optional[Match] = None  # the verdict in force when the log ended
    unfinished: Optional[TestLine] = None  # the test running when the log ended, if it never reported
    # Where the log shows its own test run got to (its last progress row below 100%, else its start) when
    # the log ends inside it (no verdict after it) and names no test running (pytest without -v): else 0.
    open_run: int = 0
    # The test a final verdict cut short: the last progress line, with no outcome, before that verdict (a
    # run interrupted mid-test prints its verdict anyway: pytest on KeyboardInterrupt).
    cut_short_by_verdict: Optional[TestLine] = None
    last_traceback: Optional[Match] = None  # the log's last Python traceback
    # each rank's last Python traceback (a "[rankN]:" prefix, or a rank group), in line order
    rank_tracebacks: Tuple[Match, ...] = ()
    last_content: int = 0  # the log's last line that says something (clean.last_content_line)
    # the traceback without its head the log ends in (clean.headless_traceback): first frame's line,
    # exception's line, exception, excerpt
    headless_traceback: Optional[Tuple[int, int, str, str]] = None
    # (rank, a traceback's last line) of the ranks that printed on after it (went_on.RankWatch)
    ranks_gone_on: FrozenSet[Tuple[int, int]] = frozenset()
    # (rank, pid) of each row of a launcher's report: torchrun's "rank : N" line, then "exitcode : S (pid: P)"
    rank_pids: Tuple[Tuple[str, str], ...] = ()
    # (rank, local rank) of each row of that report ("rank : 3 (local_rank: 3)"): a torchrun line that
    # names a local rank only ("failed (exitcode: 1) local_rank: 3 (pid: 1524)") is told of that rank
    rank_locals: Tuple[Tuple[str, str], ...] = ()
    ignored: bool = False  # the whole log matched an ignore.paths glob
    # (report header's name, the node id the log spells it with elsewhere) of the headers events were under
    header_ids: Tuple[Tuple[str, str], ...] = ()
    # tests a runner re-ran in a new process after they failed or crashed, and which then passed
    rerun_passed_tests: FrozenSet[str] = frozenset()

    @property
    def rerun_passed(self) -> bool:
        """Whether the final verdict says every failed test passed when the runner re-ran it (regrtest's
        "FAILURE then SUCCESS", exit 0): the failures were handled by that re-run."""
        return self.final_verdict is not None and bool(self.final_verdict.groups.get("rerun"))

    def test_of(self, raw: Optional[str]) -> Optional[str]:
        """The node id for a report header's name (``TestC.test_y[p]`` -> ``x.py::TestC::test_y[p]``): the
        one the log spelled elsewhere (``header_ids``; a run cut before its summary counts the header's
        name as failed, and a --collect-only list before it may spell it), else the failed test's."""
        if raw is None or is_node_id(raw):
            return raw
        for name, node_id in self.header_ids:
            if name == raw:
                return node_id
        if raw in self.failed:
            return raw
        if raw.endswith(".py"):  # xdist's report of a crashed worker is headed by the test's file
            return next((t for t in self.failed if t.startswith(raw + "::")), raw)
        head, bracket, rest = raw.partition("[")
        tail = "::" + head.replace(".", "::") + bracket + rest
        return next((t for t in self.failed if t.endswith(tail)), raw)

    def test_of_event(self, event: "LogEvent") -> Optional[str]:
        """The test ``event`` happened in. A crash whose stack's innermost test function is not the
        running test's happened in the failed test of that name: pytest-xdist runs a test on each
        worker at once, and its -v log shows only when each one started."""
        test = self.test_of(event.test)
        function = _stack_test_function(event.stack) if event.stack is not None else None
        if function is None or test is not None and _function_of(test) == function:
            return test
        named = [t for t in self.failed if _function_of(t) == function]
        return named[0] if len(named) == 1 else test


def is_line_echo(rule: Rule) -> bool:
    """Whether ``rule`` is a single-line echo marker: it only drops the other matches of its own line."""
    return rule.marker == ECHO_MARKER and not rule.is_block


def stack_frames(lines: Iterable[str]) -> Iterator["regex.Match[str]"]:
    """The frames (``FRAME`` matches) among excerpt lines, each read as cleaned."""
    for line in lines:
        frame = FRAME.match(clean_line(line.encode("utf-8", "surrogatepass"))[0])
        if frame is not None:
            yield frame


def _stuck_frame(block: Match, held: Match) -> bool:
    """Whether a thread's block of a dump the event announced shows where it is stuck and the block held
    does not: the thread that dumps a timed-out process's stack (its "Current thread", torch's event
    listener) waits in library code, and the thread that hangs runs the user's."""
    return own_frame(held.excerpt.split("\n"), BOOTSTRAP_PATHS) is None \
        and own_frame(block.excerpt.split("\n"), BOOTSTRAP_PATHS) is not None


def own_frame(lines: Iterable[str], not_own: Tuple[str, ...] = ()) -> Optional[str]:
    """``file.py:N`` of the first frame among excerpt lines outside the stdlib and packages (and the paths
    ``not_own``), if any."""
    for frame in stack_frames(lines):
        if not any(part in frame.group("path") for part in LIBRARY_PATHS + not_own):
            return f"{frame.group('path').rsplit('/', 1)[-1]}:{frame.group('line')}"
    return None


def _stack_test_function(stack: Match) -> Optional[str]:
    """The innermost ``test*`` function of a faulthandler stack (innermost frame first)."""
    functions = (frame.group("function") or "" for frame in stack_frames(stack.excerpt.split("\n")))
    return next((name for name in functions if name.startswith("test")), None)


# pytest 9's failed subtest: "SUBFAILED(i=1) x.py::t - reason" in its summary, "x.py::t SUBFAILED(i=1) [ 50%]"
# under -v (pytest-subtests wrote SUBFAIL): what follows the word, less the test and the reason, is which.
_PYTEST_SUBTEST = lazy_regex(r"\bSUBFAIL(?:ED)?(?P<which>.*?)(?: +[\w./-]+\.py::\S+.*| +\[ *\d+%\])?\s*$")


def _subtest_of(match: Match) -> Optional[str]:
    """Which subtest a test's failure line reports, None when it reports the whole test: unittest's header
    names a subtest after its id ("FAIL: test_m (mod.C.test_m) (i=1)": ``_SubTest.__str__``, its message in
    brackets before the parameters), pytest 9 after its SUBFAILED."""
    if match.groups.get("header"):
        test = match.groups.get("test") or ""
        at = match.text.find(test) if test else -1
        which = match.text[at + len(test):].strip() if at >= 0 else ""
        return which or None
    outcome = match.groups.get("outcome") or ""
    if not outcome.startswith("SUBFAIL"):
        return None
    m = _PYTEST_SUBTEST.search(match.text)
    return m.group("which").strip() or "?" if m is not None else None


def _named_test(match: Match) -> Optional[str]:
    """The node id an event's own line names as the test it ended (a ``test`` group holding ``::``, as
    xdist's "crashed while running 'x.py::t'"), None when it names none."""
    if match.rule.kind is Kind.TEST_FAILURE:
        return None
    named = normal_test_id(match.groups.get("test") or "")
    return named if is_node_id(named) else None


def _function_of(test: str) -> str:
    """A node id's function name: ``x.py::TestC::test_y[p]`` -> ``test_y``."""
    return test.partition("[")[0].rpartition("::")[2]


def _names_of(test: str) -> Set[str]:
    """The names a test's events may carry: its node id, and its report header's (``TestC.test_y[p]``,
    ``test_y[p]``; pytest's header drops the file; a doctest's, ``x.py::x.scale``, is "[doctest] x.scale":
    _pytest/doctest.py DoctestItem.reportinfo)."""
    if not is_node_id(test):
        return {test}
    in_file = test.partition("::")[2]
    head, bracket, params = in_file.partition("[")  # a parametrize id may hold "::" ("test_y[tp::0]")
    return {test, head.replace("::", ".") + bracket + params, head.rpartition("::")[2] + bracket + params,
            "[doctest] " + in_file}


class _Open:
    """A folded event while its log is still being read (mutable, internal)."""

    __slots__ = ("event", "repeats", "identity", "reason", "verdict_after", "outcome_by_verdict", "attempt",
                 "recovered", "run_passed", "inner", "arrived", "subtests", "told_by_ranks", "apart")

    def __init__(self, event: LogEvent, identity: Optional[Identity]) -> None:
        self.event = event
        self.repeats = 1
        self.identity = identity
        self.reason = event.reason
        self.verdict_after = False  # the run printed its verdict after this event
        self.outcome_by_verdict = False  # in a report whose section the log does not show
        self.attempt = -1  # the supervisor's attempt it last happened in, outside any test (-1: never)
        self.recovered: Optional[Tuple[Match, Match]] = None
        self.run_passed: Optional[Match] = None
        self.inner = False  # happened in an inner run: the outer run's verdict judges it
        self.arrived = event.arrived  # LogEvent.arrived, over every telling
        self.subtests: Optional[set] = None  # a test failure's failed subtests, by their parameters
        self.told_by_ranks = told_by_rank(event.match.rank)  # LogEvent.told_by_ranks, over every telling
        # Its later tellings on no test's lines (at most MAX_APART), each with how many came before it.
        self.apart: Optional[List[Tuple[Match, int]]] = None


class LogState:
    """Bounded state of one log, fed its matches in order (mutable; one per ``LogScan``)."""

    def __init__(
        self,
        path: str,
        catalogue: Catalogue,
        on_event: Optional[Callable[[Finding], None]] = None,
        preliminary: Optional[Callable[[Match], Finding]] = None,
        want_id: Optional[Callable[..., None]] = None,
        across: Optional[Across] = None,
        on_run: Optional[OnRun] = None,
    ) -> None:
        """``want_id(name, line)`` is told each report header's name an event happened under, and the
        event's line (``TestTracker.want``; ``want_id(name, line, True)``: a retry plugin's item name);
        ``across`` names the test of an event on no test's lines;
        ``on_run`` is told when each of the log's own test runs starts and ends (``OnRun``)."""
        self.path = path
        self.across = across
        self.on_run = on_run
        self.want_id = want_id
        self.catalogue = catalogue
        self.on_event = on_event
        self.preliminary = preliminary
        self.collateral_names: Set[str] = {n for r in catalogue.rules for n in r.collateral_after}
        self.events: Dict[tuple, _Open] = {}
        self.per_rule: Dict[str, int] = {}
        self.dropped: Dict[str, int] = {}
        self.ignored_keys: Set[tuple] = set()
        self.ignore_timeouts = [0] * len(catalogue.ignore_lines)
        self.failed: Dict[str, None] = {}
        self.failed_overflow = False
        # The report headers of the log's own run under FAILURES or ERRORS since its last verdict (name ->
        # header match; a crashed xdist worker's report, headed by the file, under the test it names): pytest
        # writes a report only for a test that failed, so a run cut before its summary and verdict (a job
        # killed, a log cut) names its failures by them (``_headers_failed``).
        self.reported: Dict[str, Match] = {}
        self.outcome_rule = catalogue.scan_rule(PYTEST_OUTCOME_RULE)
        self.unittest_unnamed_rule = _guard_rule_or_none(catalogue, UNITTEST_FAILURES_UNNAMED_RULE)
        # Context from markers: the latest one's kind ("header", "uheader", "reset", "verdict"), line
        # and test (a header's); the verdict in force; inner runs' depth and the outer test's context.
        self.ctx_kind = "reset"
        self.ctx_line = 0
        self.ctx_test: Optional[str] = None
        self.ctx_passed = False  # the header's section shows tests that did not fail
        # The header came under no report section of its own (a window of a log that starts inside an
        # inner run's short summary): how its test ended is told by the log's verdict.
        self.ctx_unsure = False
        self.reason_header = -1  # the unittest report header whose traceback gave its test's reason
        # A failing test's pytest report (its header's name) -> its "E   " lines that start an exception.
        self.report_reasons: Dict[str, List[str]] = {}
        self.report_rank: Tuple[int, str] = (-1, "")  # (line, rank) of the last report row's rank line
        self.rank_pids: Dict[str, str] = {}
        self.rank_locals: Dict[str, str] = {}
        self.session_seen = False  # the log shows a test session start of its own
        self.section = ""
        self.verdict: Optional[Match] = None
        self.last_verdict: Optional[Match] = None  # the last one of any run, inner ones included
        self.depth = 0
        self.inner_ctx: Tuple[str, Optional[str], Optional[TestLine]] = ("reset", None, None)
        # The context of the last inner session to close at the outer level, and its verdict's line: a
        # session that starts right after that verdict, no progress line between, runs in the same test.
        self.closed_inner: Optional[Tuple[Tuple[str, Optional[str], Optional[TestLine]], int]] = None
        # The rootdirs of the open inner sessions, outermost first (None: not shown yet), valid up to
        # ``depth``; and a glued start's reset of ``depth`` its own rootdir may still undo: (its line, the
        # depth and rootdirs before it). A session rooted inside the open inner session's rootdir is nested
        # in it (a pytester test whose inner run runs pytest again, its start glued to that run's file name).
        self.inner_roots: Tuple[Optional[str], ...] = ()
        self.glued_reset: Optional[Tuple[int, int, Tuple[Optional[str], ...]]] = None
        self.inner_start = 0  # the line of the latest inner session's start
        # Per collateral marker name: the last one, and the last one per pid it names.
        self.shutdowns: Dict[str, Match] = {}
        self.shutdowns_by_pid: Dict[Tuple[str, str], Match] = {}
        self.last_crash: Optional[Tuple[_Open, int]] = None
        self.tracebacks: Dict[Identity, Match] = {}
        # torchrun's lines that an attempt's worker failed ("failed (exitcode: -11) local_rank: 2 (pid:
        # 1263)"): (line, pid), the last few; a restart's report row names another pid than those before
        self.attempt_ends: Deque[Tuple[int, str]] = collections.deque(maxlen=MAX_IDENTITIES)
        self.last_traceback: Optional[Match] = None
        self.wanting: Dict[Identity, List[_Open]] = {}
        # Events after their test had already reported (its teardown, or the time between tests):
        # handled only if the run then lived to print its verdict.
        self.awaiting_verdict: List[_Open] = []
        # Events on no test's lines of the current run: since its "test session starts" when the log shows
        # it (``run_framed``), else since the log's start or the last verdict. Handled if the run's verdict
        # then reports no failure; without a start shown, only a verdict of a runner that never prints one
        # (``pytest -q``, unittest) says they were its run's.
        self.run_events: Dict[int, _Open] = {}
        self.run_framed = False
        self.run_started = 0  # the line of the log's own run's "test session starts" until its verdict
        # The tests that failed in the current run (since its start or the last verdict), and, once a verdict
        # closed it, that run's failures and events with the verdict before it, for each run closed since the
        # log's own run was last seen starting: a verdict the outer run's progress then follows was an inner
        # run's, and so was every one before it back to there (``_verdict_was_inner``: pytester's quiet runs
        # print no start, and a test may run several back to back).
        self.run_failed: List[str] = []
        # unittest tests of the current run failed only by an outcome line ("test_m (mod.Class) ... FAIL", or
        # "FAIL" alone after what it printed), with no "FAIL: test_m" report yet: the run's verdict says
        # whether that word was unittest's (the report came) or the test's own output (it did not).
        self.unreported: Dict[str, None] = {}
        self.closed_runs: List[Tuple[List[str], List[_Open], Optional[Match]]] = []
        # Events on no test's lines after a verdict of those closed runs (their exit path, as taken): once
        # the verdict turns out an inner run's, they happened inside the outer run, whose verdict judges them.
        self.closed_exits: List[_Open] = []
        # The log's own run (as taken) is rooted in pytester's sandbox; so was one of the closed runs: a run
        # started right after them does not end their chain, which the outer run's progress or quiet verdict
        # then shows were a test's inner sessions (``_verdict_was_inner``).
        self.run_sandboxed = False
        self.closed_sandboxed = False
        # The events opened on the latest line that opened one: a short summary's "FAILED t.py::t - REASON"
        # may retell as its reason an event the test's report already showed (``_summary_retold``).
        self.line_events: Tuple[int, List[tuple]] = (0, [])
        # (repeat key, event) of each xdist worker whose loss ("[gw5] node down: ...") names no test yet:
        # xdist fails the test that worker ran on the next line it reports for it
        self.lost_workers: Dict[str, Tuple[tuple, _Open]] = {}
        # The repeat key of the one rank whose "[rankN]:" line first told a ``fold_groups`` event, by that
        # key without its rank (None once two ranks told the same values): C++'s "what():" after
        # "terminate called after throwing ..." repeats the rank's own line with no prefix (``_spoken``).
        self.spoken: Dict[tuple, Optional[tuple]] = {}
        # The repeat key of the latest event of a rule that tells itself again, by its first key, once a
        # repeat came apart in the kernel's time (``kernel_apart``): the next repeat is that one's
        self.latest: Dict[tuple, tuple] = {}
        # A supervisor's attempts (torch elastic): the current one's number, the events that happened in
        # it outside any test, and the events of restarted attempts with the restart that ended each.
        self.attempt = 0
        self.attempt_events: Dict[int, _Open] = {}
        self.restarted: Dict[int, Tuple[_Open, int, Match]] = {}
        # Tests a runner says passed when it re-ran them in a new process (``RERUN_PASSED_MARKER``).
        self.rerun_passed_tests: Set[str] = set()
        # The test a retry plugin's report is telling the failed attempts of (``RETRY_ATTEMPT_MARKER``), and
        # the events under them: its line that says a later attempt passed makes them a passed test's.
        self.retry_test: Optional[str] = None
        # An event's key with its test as a report header names it (``_header_name``) -> the event's key.
        self.header_keys: Dict[tuple, tuple] = {}
        self.retry_held: List[_Open] = []
        # Failures under a short test summary printed inside a passing test's report: the log's own only
        # if no report header follows (``None``: no such summary open).
        self.tentative: Optional[List[Match]] = None
        # The number of closed runs when such a summary opened: verdicts taken for the log's own after it
        # were the inner run's if a report header follows (pytest -q prints no start: only that tells).
        self.tentative_closed = 0
        # The passing test whose report such a summary came in, and the events opened on no test's lines
        # under it: that test's inner run's if a report header follows (they happened in a passing test).
        self.tentative_test: Optional[str] = None
        self.tentative_events: List[Tuple[tuple, _Open]] = []
        self.echo_lines = (0, -1)  # the first and last line of the latest echo (its matches are dropped)
        # A void_at_end echo's last line and the matches it dropped, until the log shows it went on past it.
        self.echo_held: Optional[Tuple[int, List[Match]]] = None
        self.inner_run_next = False  # pytester announced a subprocess run: its session is an inner one
        # A session started glued to the outer run's progress line: the outer run is running in-process
        # inner runs, until its own verdict.
        self.outer_open = False

    # -- context ----------------------------------------------------------------------------------

    def _context(self, match: Match) -> Tuple[str, Optional[str], Optional[TestLine]]:
        """(kind, test, progress line) in force at ``match``: kind is "test", "xdist", "verdict" or ""."""
        if self.depth:
            return self.inner_ctx
        progress = match.progress
        if self.ctx_kind == "header":
            # Progress lines after a pytest failure header are the captured output of an inner run.
            return ("test", self.ctx_test, _HEADER_PASSED if self.ctx_passed else _HEADER_FAILED)
        if progress is not None and progress.line > self.ctx_line and not (
                self.ctx_kind == "reset" and self.section == WARNINGS_SUMMARY):
            if progress.xdist:
                return ("xdist", None, progress)
            return ("test", progress.test, progress)
        if self.ctx_kind == "uheader":
            return ("test", self.ctx_test, _HEADER_FAILED)
        if self.ctx_kind == "verdict":
            return ("verdict", None, None)
        return ("", None, None)

    def _set_context(self, kind: str, line: int, test: Optional[str] = None) -> None:
        self.ctx_kind, self.ctx_line, self.ctx_test = kind, line, test

    # -- feeding ------------------------------------------------------------------------------------

    def feed(self, match: Match) -> None:
        """Take the next match of this log (line order)."""
        if self.echo_lines[0] <= match.line <= self.echo_lines[1]:
            if self.echo_held is not None and len(self.echo_held[1]) < MAX_ECHO_HELD:
                self.echo_held[1].append(match)
            return
        if self.echo_held is not None:
            self._went_on(match)
        self._take(match)

    def _went_on(self, match: Match) -> None:
        """The log goes on after a ``void_at_end`` echo: the first match after it says whether the program
        went on past what the echo dropped (anything else) or died of it (an event right after it)."""
        end, held = self.echo_held
        self.echo_held = None
        if not match.rule.marker and match.line <= end + ECHO_VOID_GAP:
            for dropped in held:
                self._take(dropped)

    def _take(self, match: Match) -> None:
        rule = match.rule
        marker = rule.marker
        if marker == ECHO_MARKER:
            if match.groups.get("echo"):
                self.echo_lines = (match.line, match.end_line)
                self.echo_held = (match.end_line, []) if rule.void_at_end else None
        elif marker:
            self._marker(match, marker)
        elif rule.kind is Kind.TEST_FAILURE:
            self._test_failure(match)
        else:
            self._event(match)

    def _marker(self, match: Match, marker: str) -> None:
        if marker == REPORT_RANK_MARKER:
            self.report_rank = (match.end_line, (match.groups.get("rank") or "").strip())
            local = (match.groups.get("local_rank") or "").strip()
            if self.report_rank[1] and local and len(self.rank_locals) < MAX_IDENTITIES:
                self.rank_locals[self.report_rank[1]] = local
        elif marker == REPORT_EXIT_MARKER:
            line, rank = self.report_rank
            pid = (match.groups.get("pid") or "").strip()
            if rank and pid and match.line == line + 1 and len(self.rank_pids) < MAX_IDENTITIES:
                self.rank_pids[rank] = pid
        elif marker == HEADER_MARKER:
            if not self.depth:
                self._tentative_was_inner()
                self.tentative = None  # a report follows: that short summary was an inner run's
                name = (match.groups.get("test") or "").strip()
                self._set_context("header", match.line, normal_test_id(name) if name else None)
                self.ctx_passed = self.section in PASSING_SECTIONS
                # pytest prints reports under FAILURES, ERRORS or a passing section only; a header
                # under no section or another one (an inner run's summary) is in a section this log
                # lost (it starts inside the run): the run's verdict says how the test ended.
                self.ctx_unsure = not self.ctx_passed and self.section not in FAILING_SECTIONS
                if self.ctx_test and self.section in FAILING_SECTIONS \
                        and len(self.reported) < MAX_FAILED_TESTS:
                    self.reported[self.ctx_test] = match
                    if self.want_id is not None and not is_node_id(self.ctx_test):
                        # Its node id is looked for from here on, not only once the log ended in its
                        # report (``_headers_failed``): by then the lines after it may be windows gone.
                        self.want_id(self.ctx_test, match.line)
        elif marker == REPORT_REASON_MARKER:
            self._report_line(match)
        elif marker == SECTION_MARKER:
            section = (match.groups.get("section") or "").strip().lower()
            if section == SESSION_STARTS:
                # Printed after the outer run's file name or progress characters on the same line: a test
                # that runs pytest in its own process (pytester's runpytest) under -s, the outer run at its
                # outer level again (an inner run killed before its verdict is over); the sessions that
                # start before the outer run's verdict are inner too, glued or not.
                glued = bool((match.groups.get("glued") or "").strip())
                if glued:
                    self.glued_reset = (match.line, self.depth, self.inner_roots[:self.depth]) \
                        if self.depth else None
                    self.depth = 0
                    self.outer_open = True
                    if self.ctx_kind == "verdict":
                        # The outer run prints its progress after that verdict: it was an inner run's whose
                        # glued start a terminal's cut hid ("=== test session starts ===" alone on a row), or
                        # a quiet inner run's that printed no start at all (pytester's in-process runs).
                        self._verdict_was_inner()
                        self._set_context("reset", match.line)
                        self.run_framed = self.run_framed or self.session_seen
                announced, self.inner_run_next = self.inner_run_next, False
                if announced and self.depth == 1:
                    # The start of the subprocess run pytester announced: the announcement opened its depth.
                    self.session_seen = self.session_seen or not (glued or self.outer_open)
                    self.inner_start = match.line
                    return
                self.session_seen = self.session_seen or not (self.depth or glued or self.outer_open)
                kind, test, progress = self._context(match)
                if self.depth or announced or self.outer_open or self._follows_inner(progress) or (
                        kind == "test" and (progress is None or progress.line == 0 or not progress.finished)):
                    self._open_inner(match)
                    return
                self._headers_failed()  # a run before it that ended without its verdict (killed)
                self.run_events = {}  # the log's own run starts: what came before is not in it
                self.run_failed = []
                self.run_sandboxed = False
                if not self.closed_sandboxed:
                    self.closed_runs = []
                    self.closed_exits = []
                self.run_framed = True
                self.run_started = match.line
                if self.on_run is not None:
                    self.on_run("start", match, False)
            running = match.progress
            if not self.depth and self.outer_open and section in FAILING_SECTIONS and running is not None \
                    and not running.finished and not running.quiet and running.test \
                    and running.line > self.ctx_line:
                # The outer run prints its tests' inner sessions glued to their -v lines (-s), and this
                # test's line has not ended: a section printed here is the test's quiet inner run's
                # (pytester's runpytest("-q") prints no start), open until its verdict.
                self._open_inner(match)
                return
            if not self.depth:
                # In a passing test's report, or one whose section this log lost (it starts inside the
                # run), such a section is an inner run's; the verdict and summary judge the test.
                in_passing = self.ctx_kind == "header" and (self.ctx_passed or self.ctx_unsure)
                if in_passing and section in INNER_IN_PASSING:
                    return
                # A log that starts inside a run (a window of it) may start in an inner run's summary:
                # its failures are the log's own only if no report header follows.
                unsure = in_passing or self.tentative is not None or not self.session_seen
                if section == SHORT_SUMMARY and unsure:
                    # A log prints one short summary, after its last report: one still to come makes
                    # the failures held under the one before an inner run's.
                    self._tentative_was_inner()
                    self.tentative_closed = len(self.closed_runs)
                    self.tentative_test = self.ctx_test if self.ctx_kind == "header" and self.ctx_passed \
                        else None
                    self.tentative_events = []
                    self.tentative = []
                else:
                    self._commit_tentative()
                self.section = section
                self._set_context("reset", match.line)
        elif marker == VERDICT_MARKER:
            self.last_verdict = match
            if self.depth:
                if self.depth == 1:
                    self.closed_inner = (self.inner_ctx, match.line)
                self.depth -= 1
                self.inner_run_next = False  # an announced run that printed no start (-q) is over too
                return
            kind, _, progress = self._context(match)
            # pytest prints no short summary when no -r letter has anything to list (-rs with no skip): its
            # framed verdict then follows the last failure report of a run whose start the log showed.
            after_reports = not match.rule.unframed_run and self.run_framed and not self.ctx_unsure \
                and self.section in FAILING_SECTIONS
            if (self.ctx_kind == "header" and not after_reports) or (
                    kind == "test" and progress is not None and not progress.finished
                    and not progress.quiet and progress.line > 0):
                # Printed while a test was still running: an inner run's verdict (a quiet runner's test
                # prints nothing when it ends, so the verdict after it is the run's own).
                return
            if match.rule.unframed_run and self.closed_sandboxed:
                # The verdict of a run that prints no start (-q) after sessions rooted in pytester's sandbox:
                # they were its tests' inner runs, printed before its first progress character.
                self._verdict_was_inner()
            if _reports_every_failure(match):
                self._unreported_passed()
            if match.groups.get("expected") and not verdict_failed(match):
                self._failed_as_expected(match)
            if verdict_failed(match):
                # The run's reports are in: a test its FAILURES or ERRORS section headed failed, also when no
                # line names it (pytest -rs prints no "FAILED x.py::t" summary line, and without -v no
                # "x.py::t FAILED" line); one a line named stays that line's.
                self._headers_failed()
                if not self.tentative:
                    self._failures_unnamed(match)
            if len(self.closed_runs) >= MAX_CLOSED_RUNS:
                self.closed_runs.pop(0)  # a run that old stays judged by its own verdict
            self.closed_runs.append((self.run_failed, list(self.run_events.values()), self.verdict))
            self.closed_sandboxed = self.closed_sandboxed or self.run_sandboxed
            self.run_sandboxed = False
            self.run_failed = []
            self.reported = {}  # the run's summary and verdict came: they say how its tests ended
            self.verdict = match
            self.outer_open = False
            self._set_context("verdict", match.line)
            for opened in self.awaiting_verdict:
                opened.verdict_after = True
            self.awaiting_verdict.clear()
            passed = (self.run_framed or match.rule.unframed_run) and not verdict_failed(match)
            if passed:
                self._run_passed(match)
            if self.on_run is not None:
                self.on_run("verdict", match, passed)
            judged = self.run_framed or match.rule.unframed_run
            # A verdict of no start shown, framed: an inner run's whose start was not printed; the events
            # waiting for the outer run's verdict go on waiting.
            self.run_events = {} if judged else {k: o for k, o in self.run_events.items() if o.inner}
            self.run_framed = False
            self.run_started = 0
        elif marker == INNER_ROOT_MARKER:
            self._inner_root(match)
            if not self.depth and self.run_framed and 0 < match.line - self.run_started <= INNER_ROOT_GAP:
                self.run_sandboxed = True
        elif marker == INNER_RUN_MARKER:
            # pytester waits for each subprocess run: one that died without its verdict (pytest-timeout's
            # thread method ends it with os._exit) is over when the next one starts. A quiet run (-q) prints
            # no start: it is inner from here to its verdict. (A run that prints its start opens there: one
            # that prints no verdict, a usage error or --help, then leaves the outer run's verdict its own.)
            self.depth = 0
            if _QUIET_RUN.search(match.text):
                self._open_inner(match)
            self.inner_run_next = True
        elif marker in (RUN_STARTED, ATTEMPT_RESTARTED, RUN_SUCCEEDED):
            self._attempt_marker(match, marker)
        elif marker == RETRY_ATTEMPT_MARKER:
            if not self.depth:
                self._retry_attempt(match)
        elif marker == RERUN_PASSED_MARKER:
            for quoted in _LISTED_TEST.finditer(match.groups.get("tests") or ""):
                if len(self.rerun_passed_tests) >= MAX_FAILED_TESTS:
                    break
                self.rerun_passed_tests.add(normal_test_id(quoted.group(1) or quoted.group(2)))
        elif marker == TRACEBACK_MARKER:
            if CUT_SHORT_GROUP in match.groups.values():
                # the log ends inside it: the last traceback only when the log shows no whole one
                if self.last_traceback is None:
                    self.last_traceback = match
            else:
                self.last_traceback = match
                self._traceback(match)
                self._report_reason(match)
        elif marker == CRASH_STACK_MARKER:
            last = self.last_crash
            self.last_crash = None
            if last is not None and 0 < match.line - last[1] <= CRASH_STACK_GAP:
                held = last[0].event.stack
                if held is None or (match.text.startswith(CURRENT_THREAD)
                                    and not last[0].event.match.rule.stack_follows) \
                        or (last[0].event.match.rule.stack_follows and _stuck_frame(match, held)):
                    last[0].event = dataclasses.replace(last[0].event, stack=match)
                # The next thread's block of the same dump starts right after this one's end.
                self.last_crash = (last[0], match.end_line)
        if marker in self.collateral_names:
            self.shutdowns[marker] = match
            pid = _pid(match)
            if pid is not None:
                if len(self.shutdowns_by_pid) >= MAX_IDENTITIES:
                    self.shutdowns_by_pid.pop(next(iter(self.shutdowns_by_pid)))
                self.shutdowns_by_pid[(marker, pid)] = match

    def _retry_attempt(self, match: Match) -> None:
        """A retry plugin's report line about an attempt of the test it names (pytest-retry's and flaky's
        reports come after the last test ran, each attempt's traceback after its line): the lines after it
        are that test's. A failed attempt's events wait for the test's last line: "passed on attempt 2!"
        (flaky: "passed 1 out of the required 1 times. Success!") makes them a passed test's that was re-run;
        "failed after 3 attempts!" leaves them failures."""
        name = normal_test_id(match.groups.get("test") or "")
        fate = match.groups.get("fate") or ""
        if name != self.retry_test:
            self.retry_test, self.retry_held = None, []
        if fate.startswith("passed"):
            for opened in self.retry_held:
                opened.event = dataclasses.replace(opened.event, test_finished=True, test_rerun=True)
            self.retry_held = []
            # "Running test again" (flaky's min_passes) is a pass too: a later failed attempt of the same
            # test is held anew. No test runs after the line (a passing attempt's traceback is not
            # printed): a header of a passed test would make the run's verdict an inner run's.
            self.retry_test = name
            self._set_context("reset", match.line)
            return
        self.retry_test = name if "Retrying" in fate or "remaining" in fate else None
        if self.want_id is not None and name and not is_node_id(name):
            # The plugin names the item (``item.name``); pytest -v printed its node id before the report.
            self.want_id(name, match.line, True)
        self._set_context("header", match.line, name)
        self.ctx_passed, self.ctx_unsure = False, False

    def _tentative_was_inner(self) -> None:
        """A report header or another short summary follows the short summary held as maybe the log's own
        (``tentative``): that summary was an inner run's, and so was a verdict taken for the log's own
        after it (pytest -q prints no session start). The events on no test's lines under it happened in
        the passing test whose report held it (``tentative_test``); with none known, they wait for the
        outer run's verdict."""
        held, self.tentative_events = self.tentative_events, []
        if self.tentative is None:
            return
        if len(self.closed_runs) > self.tentative_closed:
            self._verdict_was_inner(self.tentative_closed)
            self.run_framed = self.run_framed or self.session_seen
        test = self.tentative_test
        for key, opened in held if test is not None else ():
            # It happened in the passing test whose report held that run: as if its header were in force.
            self.run_events.pop(id(opened), None)
            if opened in self.closed_exits:
                self.closed_exits.remove(opened)
            if self.events.get(key) is not opened:
                continue
            del self.events[key]
            opened.event = dataclasses.replace(opened.event, test=test, exit_path=False, verdict_before=None,
                                               test_finished=True, progress_line=0)
            opened.inner, opened.run_passed = False, None
            found = self.events.setdefault(_repeat_key(opened.event.match, test), opened)
            if found is not opened:
                found.repeats += opened.repeats
                found.told_by_ranks |= opened.told_by_ranks
            if self.want_id is not None and not is_node_id(test):
                self.want_id(test, opened.event.match.line)

    def _failed_as_expected(self, verdict: Match) -> None:
        """A passing ``verdict`` counts the failures its run printed as expected (Catch2's "2 failed as
        expected" of [!shouldfail] tests): they were handled, each a notice, and no test of the run failed.
        Failures held under an earlier run's short summary that this run printed (after that run's
        verdict) are this run's: they are taken out of the held ones and judged here."""
        if self.tentative:
            after = self.verdict.line if self.verdict is not None else 0
            held = [m for m in self.tentative if m.line > after]
            self.tentative = [m for m in self.tentative if m.line <= after]
            for match in held:
                self._failed(match, normal_test_id(match.groups.get("test") or ""))
        for test in self.run_failed:
            self.failed.pop(test, None)
            found = self.events.get(("test-failure", test))
            if found is not None:
                found.run_passed = verdict
    def _open_inner(self, match: Match) -> None:
        """An inner session opens at ``match`` (its start, or pytester's announcement of it)."""
        if not self.depth:
            kind, test, progress = self._context(match)
            # (an xdist line, an earlier inner run's, says nothing of the lines after it; nor does an
            # outcome reported before the last verdict: an earlier inner run's summary)
            stale = kind == "xdist" or self._reported_before_verdict(progress)
            self.inner_ctx = ("", None, None) if stale else (kind, test, progress)
            if stale and self.closed_inner is not None and self._follows_inner(progress):
                # pytester's next in-process run (no "running:" line) in the test that ran the last one
                self.inner_ctx = self.closed_inner[0]
        if self.depth < MAX_INNER_DEPTH:
            self.inner_roots = self.inner_roots[:self.depth] + (None,)
        self.depth += 1
        self.inner_start = match.line

    def _inner_root(self, match: Match) -> None:
        """An open inner session's rootdir: one inside the rootdir of the session a glued start took for
        over (its depth reset) is that session's nested run, and the depth comes back."""
        root = _rootdir(match.text)
        reset, self.glued_reset = self.glued_reset, None
        if not self.depth or not 0 < match.line - self.inner_start <= INNER_ROOT_GAP:
            return
        if reset is not None and self.depth == 1 and reset[0] == self.inner_start:
            _line, depth, roots = reset
            if roots and _nested(root, roots[-1]):
                self.depth = depth + 1
                self.inner_roots = roots + (None,) if len(roots) < MAX_INNER_DEPTH else roots
        if self.depth <= len(self.inner_roots):
            self.inner_roots = self.inner_roots[:self.depth - 1] + (root,)

    def _follows_inner(self, progress: Optional[TestLine]) -> bool:
        """Whether the last verdict closed an inner session at the outer level and no progress line came
        after it: a session that starts here runs in the test that ran that one (pytester's runpytest in
        process prints no "running:" line, and its start is not glued to the test's line)."""
        closed, last = self.closed_inner, self.last_verdict
        return closed is not None and last is not None and closed[1] == last.line \
            and (progress is None or progress.line < last.line)

    def _reported_before_verdict(self, progress: Optional[TestLine]) -> bool:
        """Whether ``progress`` is a test's outcome line printed before the last verdict of any run."""
        last = self.last_verdict
        return progress is not None and 0 < progress.line and progress.finished and last is not None \
            and progress.line < last.line

    def _run_passed(self, verdict: Match) -> None:
        """The current run's passing ``verdict`` handled its events on no test's lines."""
        for opened in self.run_events.values():
            # A session cut short still ends in "3 passed": that verdict is the lie, not a handler.
            if not opened.event.match.rule.voids_verdict or opened.inner:
                opened.run_passed = verdict

    def _verdict_was_inner(self, kept: int = 0) -> None:
        """The verdicts taken for the log's own since its run was last seen starting (all but the first
        ``kept`` of them) were inner runs': the failures reported under them were those runs' (the outer
        test that ran them is judged by the outer run), and their events on no test's lines wait for the
        outer run's verdict."""
        closed, self.closed_runs = self.closed_runs[kept:], self.closed_runs[:kept]
        after = closed[0][2].line if kept and closed[0][2] is not None else 0
        exits = [o for o in self.closed_exits if o.event.match.line > after]
        self.closed_exits = [o for o in self.closed_exits if o.event.match.line <= after]
        self.closed_sandboxed = self.closed_sandboxed and bool(kept)
        for opened in exits:
            opened.event = dataclasses.replace(opened.event, exit_path=False, verdict_before=None)
            opened.inner, opened.run_passed = True, None
            self.run_events[id(opened)] = opened
        self.tentative = None  # failures held under its short summary were its own
        for failed, events, before in reversed(closed):
            if self.on_run is not None:
                self.on_run("inner", None, False)
            for test in failed:
                self.failed.pop(test, None)
                self.events.pop(("test-failure", test), None)
            for opened in events:
                opened.inner, opened.run_passed = True, None
                self.run_events[id(opened)] = opened
            self.verdict = before

    def _attempt_marker(self, match: Match, marker: str) -> None:
        """A supervised run started, restarted an attempt, or succeeded: a restarted attempt's events were
        handled only once the same run's success says a restart worked (restarts can run out, and the
        next run's success says nothing of this one)."""
        if marker == ATTEMPT_RESTARTED:
            for key, opened in self.attempt_events.items():
                self.restarted[key] = (opened, self.attempt, match)
        else:
            if marker == RUN_SUCCEEDED:
                for opened, attempt, restart in self.restarted.values():
                    if opened.attempt == attempt:  # not told again in a later attempt that was not restarted
                        opened.recovered = (restart, match)
            self.restarted.clear()
        self.attempt_events.clear()
        self.attempt += 1

    def _in_attempt(self, opened: _Open, test: Optional[str], kind: str) -> None:
        if test is None and kind != "verdict" and opened.event.match.rule.kind is not Kind.TEST_FAILURE:
            opened.attempt = self.attempt
            self.attempt_events[id(opened)] = opened

    def _of_an_earlier_attempt(self, traceback: Match, match: Match) -> bool:
        """Whether a rank's traceback came before torchrun's line that another worker pid of an attempt
        failed, and ``match`` (the report's row, the last attempt's) names its own pid: torchrun restarted
        the group in between (its restart line is INFO, unprinted by default), so the traceback is an
        earlier attempt's worker's, not the row's (a restart whose gloo init then failed)."""
        pid = (match.groups.get("pid") or "").strip()
        if not pid.isdigit():
            return False
        return any(traceback.end_line < line < match.line and ended != pid
                   for line, ended in self.attempt_ends)

    def _traceback(self, match: Match) -> None:
        identity = identity_of(match, use_rank_prefix=True)
        if identity is None:
            return
        for waiting in self.wanting.pop(identity, ()):
            failure = waiting.event.match
            if waiting.event.traceback is None and not failure.line <= match.line <= failure.end_line:
                waiting.event = dataclasses.replace(waiting.event, traceback=(_who(identity), match))
        if identity not in self.tracebacks and len(self.tracebacks) >= MAX_IDENTITIES:
            self.tracebacks.pop(next(iter(self.tracebacks)))
        self.tracebacks[identity] = match

    def _report_reason(self, traceback: Match) -> None:
        """A unittest failure's report ("FAIL: test_m (mod.Class)", then its traceback) gives the test its
        one-line reason: the exception the last traceback under the header ends in (a chained one's
        "During handling of the above exception" traceback comes last). A reason from elsewhere stays."""
        if self.ctx_kind != "uheader" or self.depth or traceback.line <= self.ctx_line:
            return
        found = self.events.get(("test-failure", self.ctx_test))
        exception = (traceback.groups.get("exc") or "").strip()
        if found is None or not exception:
            return
        if found.reason is None or self.reason_header == self.ctx_line:
            found.reason = exception
            self.reason_header = self.ctx_line

    def _report_line(self, match: Match) -> None:
        """Keep an "E   " line of a failing test's pytest report that starts an exception's text."""
        if self.depth or self.ctx_kind != "header" or not self.ctx_test \
                or self.section not in FAILING_SECTIONS:
            return
        reasons = self.report_reasons.get(self.ctx_test)
        if reasons is None and len(self.report_reasons) < MAX_FAILED_TESTS:
            reasons = self.report_reasons[self.ctx_test] = []
        if reasons is not None and len(reasons) < MAX_REPORT_REASONS:
            reasons.append((match.groups.get("reason") or "").strip()[:MAX_REASON_CHARS])

    def _full_reason(self, test: str, reason: str, subtest: Optional[str]) -> str:
        """The reason a summary line cut to the terminal's width ("RuntimeError: worker ex..."), told in full
        by the last line of the test's report that it starts (a subtest's report: "T.test_m [msg] (i=1)",
        when the line names ``subtest``); as it is when none does."""
        prefix = reason[:-len(CUT_REASON)]
        names = _names_of(test)
        for header, lines in self.report_reasons.items():
            name, _, which = header.partition(" ")
            if header in names or (name in names and (subtest is None or which == subtest)):
                full = next((line for line in reversed(lines) if line.startswith(prefix)
                             and len(line) > len(prefix)), None)
                if full is not None:
                    return full
        return reason

    def _test_failure(self, match: Match) -> None:
        header = bool(match.groups.get("header"))
        test = normal_test_id(match.groups.get("test") or "")
        if not test:
            test = self._bare_outcome_test(match)
            if not test:
                return
            match = dataclasses.replace(match, groups={**match.groups, "test": test})  # as if it named it
        kind, _, _ = self._context(match)
        if not header and (self.depth or (kind == "test" and self.ctx_kind == "header")):
            # Printed inside a test's captured output: an inner run's failure, unless it names a test
            # this log already saw fail (an inner run that never printed its verdict hides where the
            # outer short test summary starts).
            known = self.events.get(("test-failure", test))
            reason = (match.groups.get("reason") or "").strip()
            if known is not None and known.reason is None and reason:
                known.reason = reason
            return
        if header:
            self._set_context("uheader", match.line, test)
        elif match.groups.get("reason"):
            self._summary_retold(match, test)
        if not header and self.tentative is not None and not self.depth:
            if len(self.tentative) < MAX_TENTATIVE:
                self.tentative.append(match)
                return
            self._commit_tentative()  # too long for an inner run's summary: the log's own
        self._failed(match, test)

    def _lost_worker_test(self, match: Match, test: str) -> None:
        """A failure xdist reports on a worker whose loss was told before ("[gw5] node down: Not properly
        terminated", then "[gw5] [ 95%] FAILED tests/x.py::t"): the worker died in that test, so the loss is
        that test's event (xdist's ``worker_errordown`` fails the item the worker was running)."""
        head = _XDIST_OUTCOME.match(match.text.lstrip())
        lost = self.lost_workers.pop(head.group("worker"), None) if head is not None else None
        if lost is None:
            return
        key, opened = lost
        if self.events.get(key) is not opened or opened.event.test is not None:
            return
        self._retest(key, opened, test)

    def _retest(self, key: tuple, opened: _Open, test: str) -> None:
        """Give an event the log first showed on no test's lines to ``test``, which a later line names."""
        new_key = key[:-1] + (test,)
        del self.events[key]
        self.run_events.pop(id(opened), None)
        if new_key in self.events:  # the same event already told in that test
            self.events[new_key].repeats += opened.repeats
            self.events[new_key].told_by_ranks |= opened.told_by_ranks
            return
        opened.event = dataclasses.replace(opened.event, test=test)
        self.events[new_key] = opened

    def _bare_outcome_test(self, match: Match) -> str:
        """The test a failing outcome alone on its line reports (unittest's "FAIL" after what the test
        printed): the unittest test whose progress line is in force and has not reported yet; "" when
        none is (another runner's test printing the word is its own output)."""
        if not match.groups.get("outcome") or self.depth:
            return ""
        kind, test, progress = self._context(match)
        if kind != "test" or test is None or progress is None or progress.line == 0 or progress.finished:
            return ""
        return test if is_unittest_id(test) else ""

    def _summary_retold(self, match: Match, test: str) -> None:
        """Fold the events on a failure line that names its reason ("FAILED t.py::test_y - RuntimeError: CUDA
        error: ...") into the same rule's event of that test's report: one event, told again as the test's
        failure reason (which the test failure's finding names). With no such event (``--tb=no``) it stays."""
        line, opened_here = self.line_events
        if line != match.line:
            return
        names = _names_of(test)
        for key, opened in opened_here:
            if self.events.get(key) is not opened:
                continue
            told = next((other for other in self.events.values() if other is not opened
                         and other.event.match.rule.id == opened.event.match.rule.id
                         and other.event.test in names), None)
            if told is not None:  # the same occurrence, not a repeat: ``told`` keeps its count
                del self.events[key]
                self.run_events.pop(id(opened), None)
            elif opened.event.test is None and not self.depth and (
                    self.tentative is None or self.tentative_test is None):
                # No report told it (``--tb=no``, a paste of the summary alone): the line says which test
                # it failed (unless the summary may be an inner run's in a passing test's report: then the
                # event is that test's, ``_tentative_was_inner``).
                self._retest(key, opened, test)

    def _commit_tentative(self) -> None:
        """The short summary the held failures came under was the log's own: they failed."""
        held, self.tentative = self.tentative, None
        self.tentative_events = []
        for match in held or ():
            self._failed(match, normal_test_id(match.groups.get("test") or ""))

    def _headers_failed(self) -> None:
        """The log ended after report headers of its own run and before that run's verdict, or that verdict
        counts failures: each test a header names failed (pytest reports only failures under FAILURES and
        ERRORS), unless a line that names it (its -v or summary line, held ones too) already said so. Its
        reason is the last exception its report shows ("E   RuntimeError: ..."), as its summary line would,
        or the crash line of xdist's report; a report headed by a file alone names no test."""
        reported, self.reported = self.reported, {}
        if self.outcome_rule is None:
            return
        for name, header in reported.items():
            if not is_node_id(name) and name.endswith(".py"):
                continue
            # (a failed subtest's report is headed "T.test_m [msg] (i=1)": its test's failure)
            if any(name in names or name.partition(" ")[0] in names
                   for names in map(_names_of, [*self.failed, *self._held_failures()])):
                continue
            reason = header.groups.get("reason")
            if reason is None:
                # (the summary's reason is the exception's first line, not a plain assert's restatement)
                reasons = self.report_reasons.get(name) or [""]
                reason = next((r for r in reversed(reasons) if not r.startswith("assert ")), reasons[-1])
            outcome = "ERROR" if header.text.lstrip("_ ").startswith("ERROR at ") else "FAILED"
            if self.want_id is not None and not is_node_id(name):
                self.want_id(name, header.line)
            self._failed(dataclasses.replace(
                header, rule=self.outcome_rule, groups={"test": name, "outcome": outcome, "reason": reason},
            ), name)

    def _failures_unnamed(self, verdict: Match) -> None:
        """The log's own run printed a ``verdict`` that counts failures its log does not name: the run still
        failed, one test failure of no named test says so. Kept as that run's failure, so a verdict later
        found to be an inner run's takes it back (``_verdict_was_inner``).

        pytest's ("=== 1 failed, 1 passed in 0.69s ==="): when the log names none of its failures (their
        reports and summary cut away, or never printed), or names fewer of them than it counts "failed"
        (``--tb=line`` without an f in -r prints no header for a failed test, only "path:line: Exception").
        "failed" counts call-phase failures and "error" setup/teardown ones apart (_pytest/terminal.py
        ``pytest_report_teststatus``, :351 in 9.2.0: a failed setup/teardown report's outcome is "error"), so
        only the tests named FAILED count against "N failed". unittest's ("FAILED (unexpected successes=1)"):
        before 3.11 its runner.py printed no report for an unexpected success, and a run cut before its
        reports names none of its failures; a run that named its failures under "FAIL:" headers is told by
        them (CTest's and Catch2's verdicts are told by their own lists' rules). pytest's finding is its
        ``pytest-test-outcome``'s, unittest's its own ``unittest-failures-unnamed``'s: no outcome line of
        unittest's told it."""
        found = [self.events[("test-failure", t)] for t in self.run_failed
                 if isinstance(t, str) and ("test-failure", t) in self.events]
        named = [f.event.match for f in found]
        if verdict.rule.id in PYTEST_VERDICT_RULES and self.outcome_rule is not None:
            rule = self.outcome_rule
            summary = (verdict.groups.get("summary") or "").strip()
            if not _FAILING_VERDICT.search(summary):
                return
            counted = sum(int(n) for n in _PYTEST_FAILED_COUNT.findall(summary))
            # (pytest-subtests before pytest 9 counted each failed subtest in "failed")
            named_failed = sum(max(1, len(f.subtests or ())) for f in found
                               if f.event.match.groups.get("outcome") != "ERROR"
                               and not f.event.match.text.lstrip("_ ").startswith("ERROR at "))
            if self.run_failed and named_failed >= counted:
                return
            groups = {"summary": summary}
            if self.run_failed:
                groups.update(failed=str(counted), named=str(named_failed))
        elif verdict.rule.id == UNITTEST_VERDICT_RULE and _reports_every_failure(verdict) \
                and self.unittest_unnamed_rule is not None:
            rule = self.unittest_unnamed_rule
            summary = f"FAILED ({verdict.groups.get('counts') or ''})"
            counts = {k: int(n) for k, n in _UNITTEST_VERDICT_COUNTS.findall(summary)}
            unexpected = counts.get("unexpected successes", 0)
            named_unexpected = sum(1 for m in named if _is_unexpected_success(m))
            if not (unexpected > named_unexpected or not self.run_failed and (
                    counts.get("failures") or counts.get("errors"))):
                return
            groups = {"summary": summary, "runner": "unittest"}
        else:
            return
        key = ("test-failure", (UNNAMED_FAILURES, verdict.line))
        match = dataclasses.replace(verdict, rule=rule, groups=groups)
        if self._add(key, match, LogEvent(match, reason=summary), None) is not None:
            self.run_failed.append(key[1])

    def _held_failures(self) -> List[str]:
        """The tests the failure lines held under a short summary that may be an inner run's name
        (``tentative``): pytest -q prints no session start, so its own summary is held too."""
        return [normal_test_id(m.groups.get("test") or "") for m in self.tentative or ()]

    def _unreported_passed(self) -> None:
        """A unittest verdict came: a test whose failure only an outcome line told, with no "FAIL:" or
        "ERROR:" report in its run, did not fail (it printed the word itself, then passed: "FAIL", then
        "ok")."""
        for test in self.unreported:
            self.failed.pop(test, None)
            self.events.pop(("test-failure", test), None)
            if test in self.run_failed:
                self.run_failed.remove(test)
        self.unreported = {}

    def _failed(self, match: Match, test: str) -> None:
        self._lost_worker_test(match, test)
        if match.groups.get("header"):
            self.unreported.pop(test, None)
        elif match.groups.get("outcome") and is_unittest_id(test) and test not in self.failed \
                and not _reported_nowhere_else(match) and len(self.unreported) < MAX_FAILED_TESTS:
            self.unreported[test] = None
        if test not in self.failed:
            if len(self.failed) < MAX_FAILED_TESTS:
                self.failed[test] = None
                self.run_failed.append(test)
            else:
                self.failed_overflow = True
        reason = (match.groups.get("reason") or "").strip() or None
        if reason is not None and reason.endswith(CUT_REASON) and self.report_reasons:
            reason = self._full_reason(test, reason, _subtest_of(match))
        key = ("test-failure", test)
        found = self.events.get(key)
        if found is None:
            found = self._add(key, match, LogEvent(match, test=test, reason=reason), None)
        else:
            if found.reason is None and reason is not None:
                found.reason = reason
            if match.groups.get("header") and not found.event.match.groups.get("header"):
                # The test's report ("FAIL: test_m (mod.Class)", its traceback after it) is where the
                # finding points, not the progress line that said FAIL first.
                found.event = dataclasses.replace(found.event, match=match)
        subtest = _subtest_of(match)
        if found is not None and subtest is not None:
            if found.subtests is None:
                found.subtests = set()
            if len(found.subtests) < MAX_SUBTESTS:
                found.subtests.add(subtest)

    def _event(self, match: Match) -> None:
        line, rank = self.report_rank
        if rank and match.rule.is_block and match.line == line + 1 and identity_of(match, False) is None:
            match = dataclasses.replace(match, groups={**match.groups, "rank": rank})  # the row's own rank
        kind, test, progress = self._context(match)
        named = _named_test(match) if not self.depth else None
        if named is not None and test is None:
            # The event names the test it ended on no test's lines: pytest --tb=line prints xdist's crash
            # report with no header at all (terminal.py summary_failures_combined, :1244 in 9.2.0).
            test = named
        elif named is not None and test is not None and test.endswith(".py") \
                and named.startswith(test + "::"):
            # The event names the test it ended ("worker 'gw1' crashed while running 'x.py::t'") under a
            # report xdist heads with that test's file: the log may show no other line of the test.
            header = self.reported.pop(self.ctx_test or "", None) if self.ctx_kind == "header" else None
            if header is not None and len(self.reported) < MAX_FAILED_TESTS:
                # xdist's crash report is that test's failure (dsession.py handle_crashitem: outcome "failed",
                # the line its longrepr): its reason
                self.reported[named] = dataclasses.replace(header, groups={"reason": match.text.strip()})
            test = named
        across = None
        arrived = None
        if kind == "" and test is None and self.across is not None and not self.depth:
            place = self.across(match)
            if place is not None and place.test is not None:
                # folded per test, as if the log showed it: each test's event is its own
                test, across = place.test, place.before
            elif place is not None:
                arrived = place.arrived
        if test is not None and progress is not None and not progress.line and self.want_id is not None \
                and not is_node_id(test):
            self.want_id(test, match.line)  # a report header's name (a header's context has no progress line)
        key = _repeat_key(match, test)
        found = self.events.get(key)
        if found is None and match.rank is None and match.rule.fold_groups:
            spoken = self.spoken.get(_unspoken(key))
            if spoken is not None and spoken in self.events:
                key, found = spoken, self.events[spoken]
        if found is None and test is not None:
            # The same failure told under the test's report header ("____ test_y ____", its name only) and
            # under a line that spells its node id (pytest-rerunfailures's "RERUN x.py::test_y" report of
            # an earlier attempt): one test, one event.
            told = self.header_keys.get(key[:-1] + (_header_name(test),))
            if told is not None and told in self.events:
                key, found = told, self.events[told]
        if found is not None and match.rule.id in match.rule.same_event_as:
            first, key = key, self.latest.get(key, key)
            found = self.events.get(key)
            if found is not None and kernel_apart(found.event.match, match) \
                    and len(self.latest) < MAX_PER_RULE * 10:
                key = first + (match.line,)
                self.latest[first] = key
                found = None
        if found is not None:
            if test is None and match.line != found.event.match.line \
                    and (found.apart is None or len(found.apart) < MAX_APART):
                # Without -v no line names the test: the letters, once read, may say it was another one.
                found.apart = (found.apart or []) + [(match, found.repeats)]
            found.repeats += 1
            found.told_by_ranks |= told_by_rank(match.rank)
            # Told again after its run succeeded or printed its verdict: whether it was handled is open again.
            found.recovered = None
            found.run_passed = None
            found.arrived = _spanned(found.arrived, arrived)
            self._in_attempt(found, test, kind)
            self._in_run(found, test, kind)
            if match.rule.kind is Kind.CRASH or match.rule.stack_follows:
                self.last_crash = (found, match.end_line)
            return
        if key in self.ignored_keys:
            return
        if self.catalogue.ignore_lines and self._line_ignored(match):
            if len(self.ignored_keys) < MAX_PER_RULE * 10:
                self.ignored_keys.add(key)
            return
        if self.per_rule.get(match.rule.id, 0) >= MAX_PER_RULE:  # a flood: count it, build nothing
            self.dropped[match.rule.id] = self.dropped.get(match.rule.id, 0) + 1
            return
        in_test = progress is not None and test is not None
        event = LogEvent(
            match,
            test=test,
            exit_path=kind == "verdict",
            # A quiet runner's test reports only a failure: like a finished one, the verdict judges it.
            test_finished=(progress.finished or progress.quiet) if in_test else None,
            progress_line=progress.line if in_test else 0,
            verdict_before=self.verdict if kind == "verdict" else None,
            shutdown=self._shutdown_before(match),
            last_traceback=self.last_traceback if match.rule.fallback else None,
            across=across,
            arrived=arrived,
        )
        identity = identity_of(match, use_rank_prefix=False)
        if identity is not None:
            earlier = self.tracebacks.get(identity)
            if earlier is not None and not match.line <= earlier.line <= match.end_line \
                    and not self._of_an_earlier_attempt(earlier, match):
                event = dataclasses.replace(event, traceback=(_who(identity), earlier))
        pid = (match.groups.get("pid") or "").strip()
        if match.groups.get("local_rank") is not None and pid.isdigit() and not match.rule.root_cause:
            self.attempt_ends.append((match.line, pid))
        opened = self._add(key, match, event, identity)
        if opened is not None and test is not None and len(self.header_keys) < MAX_PER_RULE * 10:
            self.header_keys.setdefault(key[:-1] + (_header_name(test),), key)
        if opened is not None and match.rank is not None and match.rule.fold_groups \
                and len(self.spoken) < MAX_PER_RULE * 10:
            unspoken = _unspoken(key)
            self.spoken[unspoken] = key if self.spoken.get(unspoken, key) == key else None
        if opened is not None:
            if self.line_events[0] != match.line:
                self.line_events = (match.line, [])
            self.line_events[1].append((key, opened))
        if opened is not None and kind in ("", "verdict") and test is None and not self.depth \
                and self.tentative is not None and self.tentative_test is not None \
                and len(self.tentative_events) < MAX_TENTATIVE:
            self.tentative_events.append((key, opened))
        if opened is not None and kind == "test" and self.ctx_kind == "header" and self.ctx_unsure:
            opened.outcome_by_verdict = True
        if opened is not None and kind == "test" and self.ctx_kind == "header" \
                and self.retry_test is not None and test == self.retry_test \
                and not opened.event.test_finished and len(self.retry_held) < MAX_RETRY_HELD \
                and opened not in self.retry_held:
            self.retry_held.append(opened)
        if opened is not None and (match.rule.kind is Kind.CRASH or match.rule.stack_follows):
            self.last_crash = (opened, match.end_line)
        worker = match.groups.get("worker")
        if opened is not None and test is None and worker and not self.depth \
                and len(self.lost_workers) < MAX_LOST_WORKERS:
            self.lost_workers[worker] = (key, opened)
        if opened is not None and event.test_finished and event.progress_line:
            self.awaiting_verdict.append(opened)
        if opened is not None:
            self._in_attempt(opened, test, kind)
            self._in_run(opened, test, kind)

    def _in_run(self, opened: _Open, test: Optional[str], kind: str) -> None:
        """An event on no test's lines (first told, or told again) waits for the current run's verdict. One
        after an xdist worker's report is on no test's lines too: that report says nothing of what follows
        it ("[gw0] node down" of a worker whose test then passed on its rerun on another worker)."""
        if kind in ("", "xdist") and test is None:
            # (in an inner run the outer run's context is in force: an announced one under -q has none)
            opened.inner = opened.inner or bool(self.depth)
            self.run_events[id(opened)] = opened
        elif kind == "verdict" and self.closed_runs and len(self.closed_exits) < MAX_CLOSED_RUNS:
            self.closed_exits.append(opened)

    def _add(
        self, key: tuple, match: Match, event: LogEvent, identity: Optional[Identity]
    ) -> Optional[_Open]:
        rule_id = match.rule.id
        count = self.per_rule.get(rule_id, 0)
        if count >= MAX_PER_RULE:
            self.dropped[rule_id] = self.dropped.get(rule_id, 0) + 1
            return None
        self.per_rule[rule_id] = count + 1
        opened = _Open(event, identity)
        self.events[key] = opened
        if identity is not None and event.traceback is None:
            self.wanting.setdefault(identity, []).append(opened)
        if self.on_event is not None and self.preliminary is not None:
            # A test from another log is not the live event's: --abort-on reads that log itself.
            test = None if event.across is not None else event.test
            self.on_event(dataclasses.replace(self.preliminary(match), test=test))
        return opened

    def _shutdown_before(self, match: Match) -> Optional[Match]:
        """The shutdown marker ``match`` came after, if any: for a match that names a pid, only one
        that names the same pid or none (torchrun's closing signal to 11161 does not make the failed
        worker 11162's exit collateral)."""
        pid = _pid(match)
        best: Optional[Match] = None
        for name in match.rule.collateral_after:
            found = self.shutdowns.get(name)
            if found is not None and pid is not None and _pid(found) not in (None, pid):
                found = self.shutdowns_by_pid.get((name, pid))
            if found is not None and (best is None or found.seq > best.seq):
                best = found
        return best

    def _line_ignored(self, match: Match) -> bool:
        texts: Optional[List[str]] = None
        catalogue = self.catalogue
        for index, ignore in enumerate(catalogue.ignore_lines):
            if ignore.rules and match.rule.id not in ignore.rules:
                continue
            if self.ignore_timeouts[index] >= MAX_IGNORE_TIMEOUTS:
                continue
            if texts is None:
                texts = _cleaned_lines(match)
            try:
                if any(_search(ignore, text, catalogue.match_timeout_s) for text in texts):
                    return True
            except TimeoutError:
                self.ignore_timeouts[index] += 1
        return False

    def progress_lines(self) -> Set[int]:
        """Line numbers of the progress lines the kept events happened after."""
        return {o.event.progress_line for o in self.events.values() if o.event.progress_line}

    # -- the end ------------------------------------------------------------------------------------

    def finish(
        self,
        final: Optional[TestLine],
        outcomes: Dict[int, str],
        ids: Optional[Dict[str, Optional[str]]] = None,
        last_line: int = 0,
        progress_row: Optional[Tuple[int, int]] = None,
        letters: Optional[ProgressLetters] = None,
    ) -> LogFindings:
        """The log ended: ``final`` is the last progress line, ``outcomes`` the watched tests' outcomes,
        ``ids`` the node ids found for report headers' names (``TestTracker.ids``), ``last_line`` the
        log's last line (0: unknown), ``progress_row`` pytest's last row without -v (``TestTracker.row``),
        ``letters`` its progress letters without -v (``TestTracker.letters``)."""
        if self.echo_held is not None:
            end, held = self.echo_held
            self.echo_held = None
            if last_line and end >= last_line:  # the log ends with the echo: nothing went on past it
                for dropped in held:
                    self._take(dropped)
        self._commit_tentative()
        self._headers_failed()
        final_verdict = None
        unfinished = None
        last = self.last_verdict
        # The log's last verdict was taken for an inner run's, but nothing ran after it: an inner run
        # that never printed its own verdict (killed by its timeout) left the count off by one. It was
        # the run's verdict, and what came after it is the run's exit path.
        off_by_one = False
        if self.ctx_kind == "verdict" and (final is None or final.line < self.ctx_line):
            final_verdict = self.verdict
        elif last is not None and last is not self.verdict and (final is None or final.line < last.line):
            final_verdict, off_by_one = last, True
            if (self.run_framed or last.rule.unframed_run) and not verdict_failed(last):
                self._run_passed(last)
        elif final is not None and final.line > self.ctx_line and not final.finished and not final.xdist:
            unfinished = final
        # After a verdict with failures, a test the log's summary does not name as failed did not fail;
        # with no summary at all, how the test ended is unknown.
        closing = final_verdict if final_verdict is not None and (
            not verdict_failed(final_verdict) or self.failed
        ) else None
        events = []
        opens = [part for opened in self.events.values() for part in self._apart(opened, letters)]
        starts = sorted(opened.event.match.line for opened in opens)
        verdict_text: Optional[str] = None  # the run's verdict as rules read it (``_cleaned``), once asked
        for opened in opens:
            event = opened.event
            if opened.outcome_by_verdict:
                ended_well = closing is not None and closing.line > event.match.line
                event = dataclasses.replace(event, test_finished=ended_well)
            elif event.test_finished is False and event.progress_line and outcomes.get(event.progress_line):
                event = dataclasses.replace(
                    event, test_finished=True, test_ended=outcomes[event.progress_line])
            elif event.test_finished and opened in self.awaiting_verdict:
                # The test had reported before this event and the run never printed a verdict after
                # it: a crash in teardown or between tests took the run down.
                event = dataclasses.replace(event, test_finished=False)
            if opened.subtests is not None and len(opened.subtests) > 1:
                event = dataclasses.replace(event, subtests=len(opened.subtests))
            if (opened.repeats != 1 or opened.reason != event.reason or opened.recovered is not None
                    or opened.run_passed is not None or opened.arrived != event.arrived or opened.inner):
                event = dataclasses.replace(
                    event, repeats=opened.repeats, reason=opened.reason, recovered=opened.recovered,
                    run_passed=opened.run_passed, arrived=opened.arrived, inner=opened.inner,
                    told_by_ranks=opened.told_by_ranks,
                )
            if letters is not None and event.test is None and not event.exit_path and event.across is None \
                    and opened.run_passed is not None and opened.recovered is None \
                    and event.match.rule.kind is not Kind.TEST_FAILURE:
                # A passing run's: its short summary may name the test whose letter follows it.
                event = self._passed_by_summary(event, opened.run_passed, letters, starts)
            elif letters is not None and event.test is None and not event.exit_path and event.across is None \
                    and opened.run_passed is None and opened.recovered is None and self.verdict is not None \
                    and verdict_failed(self.verdict) and event.match.rule.kind is not Kind.TEST_FAILURE:
                # Which test printed it the log does not say, but the letters may say that test passed.
                verdict = self.verdict
                if verdict_text is None:
                    verdict_text = _cleaned(verdict.groups.get("summary") or verdict.excerpt)
                before = self.closed_runs[-1][2] if self.closed_runs else None
                since = before.line if before is not None else 0
                who = letters_speaker(event.match.excerpt)
                later = bisect.bisect_right(starts, event.match.line)
                failed = tuple(self.failed)
                unittest_run = is_unittest_verdict(verdict_text)
                outcome = letters.outcome_after(
                    event.match.line, verdict.line, verdict_text,
                    since=since, next_event=starts[later] if later < len(starts) else 0, who=who,
                    fixture_errors=sum(map(is_unittest_fixture, failed)) if unittest_run else 0,
                )
                errors = outcome[3].get("E", 0) if outcome is not None else 0
                named = letters.passed_test(verdict.line, since, who, outcome[2]) \
                    if outcome is not None and outcome[1] == "." and not unittest_run else None
                if named is not None and named not in self.failed:
                    event = dataclasses.replace(event, test=named, test_finished=True)
                elif outcome is not None and outcome[1] in ".sxu":
                    event = dataclasses.replace(event, passed_letter=outcome[0])
                elif outcome is not None and outcome[1] in "FE" and (unittest_run or not errors) \
                        and outcome[3].get("F", 0) + errors == len(failed) and not self.failed_overflow:
                    # The k-th F is the k-th failure reported: both runners report failures in the
                    # order they ran; unittest reports its errors first, in the order they ran too
                    # (CPython Lib/unittest/runner.py, printErrors).
                    k = outcome[2] + (errors if outcome[1] == "F" else 0)
                    event = dataclasses.replace(event, test=failed[k - 1], test_finished=True)
            if off_by_one and event.match.line > last.line and event.match.rule.kind is not Kind.TEST_FAILURE:
                event = dataclasses.replace(
                    event, test=None, exit_path=True, test_finished=None, verdict_before=last
                )
            events.append(event)
        return LogFindings(
            path=self.path,
            events=tuple(events),
            failed=tuple(self.failed),
            failed_overflow=self.failed_overflow,
            dropped=tuple(sorted(self.dropped.items())),
            final_verdict=final_verdict,
            unfinished=unfinished,
            open_run=0 if unfinished else self._open_run(final_verdict, progress_row),
            cut_short_by_verdict=final if final_verdict is not None and final is not None
            and not final.finished and not final.xdist and final.line < final_verdict.line else None,
            last_traceback=self.last_traceback,
            rank_tracebacks=tuple(sorted(
                (tb for who, tb in self.tracebacks.items() if who[0] == "rank"), key=lambda tb: tb.line
            )),
            header_ids=tuple((name, node_id) for name, node_id in (ids or {}).items() if node_id),
            rank_pids=tuple(self.rank_pids.items()),
            rank_locals=tuple(self.rank_locals.items()),
            rerun_passed_tests=frozenset(self.rerun_passed_tests),
        )

    def _apart(self, opened: _Open, letters: Optional[ProgressLetters]) -> List[_Open]:
        """``opened`` as one event per test its tellings came from, where it was told on no test's lines
        and its run's progress letters, believed (``ProgressLetters.outcome_after``), say another test's
        letter came between two tellings: two tests' child crashes under ``pytest -q`` are two events,
        one test's line told twice stays one. As it was where any telling's letter is unknown."""
        event, verdict = opened.event, opened.run_passed or self.verdict
        if opened.apart is None or letters is None or verdict is None or event.test is not None \
                or event.exit_path or event.across is not None or verdict.line < event.match.line:
            return [opened]
        before = max((v.line for _, _, v in self.closed_runs if v is not None and v.line < verdict.line),
                     default=0)
        verdict_text = _cleaned(verdict.groups.get("summary") or verdict.excerpt)
        tellings = [(event.match, 0)] + opened.apart
        letter_of = []
        for match, _ in tellings:
            outcome = letters.outcome_after(match.line, verdict.line, verdict_text, since=before,
                                            who=letters_speaker(match.excerpt))
            if outcome is None:
                return [opened]
            letter_of.append(outcome[1:3])  # the letter and how many of it came up to it: one test's
        starts = [i for i in range(len(tellings)) if i == 0 or letter_of[i] != letter_of[i - 1]]
        if len(starts) == 1:
            return [opened]
        parts = []
        for n, i in enumerate(starts):
            match, told_before = tellings[i]
            after = tellings[starts[n + 1]][1] if n + 1 < len(starts) else opened.repeats
            part = _Open(event if i == 0 else dataclasses.replace(event, match=match), opened.identity)
            for name in _Open.__slots__:
                if name not in ("event", "repeats", "apart"):
                    setattr(part, name, getattr(opened, name))
            part.repeats = after - told_before
            parts.append(part)
        return parts

    def _passed_by_summary(
        self, event: LogEvent, verdict: Match, letters: ProgressLetters, starts: List[int],
    ) -> LogEvent:
        """``event`` of no test in the run that passed with ``verdict``, named after the test whose ``.``
        follows it where the run's short summary names that test for certain
        (``ProgressLetters.passed_test``); else as it was."""
        before = max((v.line for _, _, v in self.closed_runs if v is not None and v.line < verdict.line),
                     default=0)
        later = bisect.bisect_right(starts, event.match.line)
        who = letters_speaker(event.match.excerpt)
        verdict_text = _cleaned(verdict.groups.get("summary") or verdict.excerpt)
        if is_unittest_verdict(verdict_text):
            return event
        outcome = letters.outcome_after(
            event.match.line, verdict.line, verdict_text, since=before,
            next_event=starts[later] if later < len(starts) else 0, who=who,
        )
        if outcome is None or outcome[1] != ".":
            return event
        named = letters.passed_test(verdict.line, before, who, outcome[2])
        if named is None:
            return event
        return dataclasses.replace(event, test=named, test_finished=True, run_passed=None)

    def _open_run(self, final_verdict: Optional[Match], row: Optional[Tuple[int, int]]) -> int:
        """Where the log shows its own test run got to when it ended without a verdict (0: it did not): its
        last progress row when that says the run was not done (pytest -q prints no start), else the start
        of a run the log shows."""
        if row is not None and row[1] < 100 and (final_verdict is None or final_verdict.line < row[0]):
            return row[0]
        return self.run_started if self.run_framed and final_verdict is None else 0


def _cleaned(excerpt: str) -> str:
    """An excerpt's lines as rules read them: GitHub's timestamps and other prefixes gone, so that a
    verdict's "Ran 4 tests" starts its line."""
    return "\n".join(clean_line(line.encode("utf-8", "surrogateescape"))[0] for line in excerpt.split("\n"))


def _rootdir(text: str) -> Optional[str]:
    """The directory a session header's ``rootdir:`` line names (``None`` when it is not one)."""
    m = _ROOTDIR.match(text.strip())
    return m.group("root").rstrip("/\\") if m else None


def _nested(root: Optional[str], outer: Optional[str]) -> bool:
    """Whether rootdir ``root`` lies inside rootdir ``outer`` (pytester makes a test's base temp there)."""
    return bool(root and outer) and root[len(outer):len(outer) + 1] in ("/", "\\") and root.startswith(outer)


def identity_of(match: Match, use_rank_prefix: bool) -> Optional[Identity]:
    """Who a match belongs to: ``("rank", "1")`` or ``("process", "SpawnProcess-2")``, if it says."""
    for name in PROCESS_GROUPS:
        process = match.groups.get(name)
        if process and process.strip():
            return ("process", process.strip())
    rank = next((match.groups[n] for n in RANK_GROUPS if match.groups.get(n)), None)
    if rank is None and use_rank_prefix and match.rank is not None:
        rank = str(match.rank)
    if rank is None and match.rule.is_block and REPORT_RANK_WORD in match.excerpt:
        # The word first: a traceback's whole excerpt is read, where ``regex`` tries the pattern's "\b"
        # at each character (about 7 us on a logged traceback's 3.7 kB, the word's search 1).
        found = REPORT_RANK.search(match.excerpt)
        rank = found.group(1) if found else None
    if rank is not None:
        try:
            return ("rank", str(int(rank.strip())))
        except ValueError:
            return None
    return None


def verdict_failed(verdict: Match) -> bool:
    """Whether a verdict marker reports failures or errors (pytest's summary, unittest's FAILED)."""
    if verdict.groups.get("rerun"):
        return False
    outcome = verdict.groups.get("outcome")
    if outcome:
        return outcome.strip().upper() not in ("OK", "SUCCESS")
    return bool(_FAILING_VERDICT.search(verdict.groups.get("summary") or verdict.text))


def _reported_nowhere_else(match: Match) -> bool:
    """Whether ``match`` is unittest -v's "test_m (mod.Class) ... unexpected success": its runner.py before
    3.11 prints no report for an unexpected success (3.11 added "UNEXPECTED SUCCESS: test_m" to
    ``printErrors``), so no header is to come to confirm it, and the line names its test (a bare
    "unexpected success" is left to be confirmed, as a bare "FAIL" is)."""
    return match.groups.get("outcome") == "unexpected success" and bool(match.groups.get("test"))


def _is_unexpected_success(match: Match) -> bool:
    """Whether ``match`` names an unexpected success: 3.11's "UNEXPECTED SUCCESS: test_m (mod.C)" report,
    or -v's "test_m (mod.C) ... unexpected success"."""
    return "UNEXPECTED SUCCESS" in (match.groups.get("header"), (match.groups.get("outcome") or "").upper())


def _guard_rule_or_none(catalogue: Catalogue, rule_id: str) -> Optional[Rule]:
    """The ``guard: true`` rule ``rule_id`` in force, or ``None`` when the user ignores it (or a catalogue
    built by hand lacks it): then its finding is not made."""
    try:
        return catalogue.guard_rule(rule_id)
    except KeyError:
        return None


def _reports_every_failure(verdict: Match) -> bool:
    """Whether ``verdict`` is unittest's, whose run reported each failed test under a header before it."""
    outcome = (verdict.groups.get("outcome") or "").strip()
    return outcome in UNITTEST_VERDICT_OUTCOMES and bool(verdict.groups.get("count"))


def _pid(match: Match) -> Optional[str]:
    pid = match.groups.get("pid")
    return pid.strip() if pid and pid.strip().isdigit() else None


def _who(identity: Identity) -> str:
    return f"rank {identity[1]}" if identity[0] == "rank" else f"process {identity[1]}"


def _spanned(
    arrived: Optional[Tuple[float, float]], more: Optional[Tuple[float, float]]
) -> Optional[Tuple[float, float]]:
    """The times over which an event's tellings arrived; None once one of them cannot say."""
    if arrived is None or more is None:
        return None
    return (min(arrived[0], more[0]), max(arrived[1], more[1]))


def _header_name(test: str) -> str:
    """``test`` as pytest's report header names it: a node id without its file, its classes joined by "."
    (``x.py::TestC::test_y[p]`` -> ``TestC.test_y[p]``); any other id as it is."""
    head, bracket, params = test.partition("[")  # a parametrize id may hold "::" ("test_x[tp::0]")
    parts = head.split("::")
    return ".".join(parts[1:]) + bracket + params if len(parts) > 1 and parts[0].endswith(".py") else test


def _repeat_key(match: Match, test: Optional[str]) -> tuple:
    fold = match.rule.fold_groups
    if fold:
        return (match.rule.id, tuple(match.groups.get(name) for name in fold), match.rank, test)
    groups = tuple(sorted((k, _ADDRESS.sub("0x?", v)) for k, v in match.groups.items() if v is not None))
    return (match.rule.id, _ADDRESS.sub("0x?", match.text.strip()), groups, test)


# The kernel logs the lines of one fault in one burst: an Xid per SM within 0.3 ms (3dem/relion#436),
# three Xid 13 lines in one second (leptonai/gpud#46). Ten seconds leave a stamp of whole seconds room.
KERNEL_BURST_S = 10.0


def kernel_apart(one: Match, other: Match) -> bool:
    """Whether two matches' kernel stamps (``clean.kernel_clock``, of one kind) are more than a burst
    apart: the same Xid line of one GPU hours later is another fault. False when either has none."""
    clock, other_clock = kernel_clock(one.excerpt), kernel_clock(other.excerpt)
    if clock is None or other_clock is None or clock[0] != other_clock[0]:
        return False
    return abs(clock[1] - other_clock[1]) > KERNEL_BURST_S


# The ranks ``LogEvent.told_by_ranks`` keeps, as bits of one int: 512 bytes at most per event however many
# ranks tell it. A rank past it (jobs of more than 4096 processes) is counted in ``repeats`` only.
MAX_TOLD_RANK = 4096


def told_by_rank(rank: Optional[int]) -> int:
    """The bit of ``LogEvent.told_by_ranks`` for a line of ``rank`` (0: no rank, or one past the cap)."""
    return 1 << rank if rank is not None and 0 <= rank < MAX_TOLD_RANK else 0


def _unspoken(key: tuple) -> tuple:
    """A ``fold_groups`` repeat key without the rank whose prefix spoke it: one rank's line, and the same
    words with no prefix ("  what():  [Rank 1] ... Watchdog caught collective operation timeout: ..."
    after "terminate called after throwing an instance of 'c10::DistBackendError'": the C++ runtime
    writes the exception's text to stderr itself, past torch's "[rankN]:" logging prefix), are one event
    when the fold groups (the rank of its process group, the work, the milliseconds) are the same."""
    return key[:2] + key[3:]


def _search(ignore: LineIgnore, text: str, timeout_s: float) -> bool:
    if ignore.pattern_re is not None:
        compiled = ignore.pattern_re
    else:
        import regex

        compiled = regex.compile(ignore.pattern)
    return compiled.search(text, timeout=timeout_s) is not None


def _cleaned_lines(match: Match) -> List[str]:
    """The matched line, or for a block every line of it, as rules see them (cleaned)."""
    if not match.rule.is_block:
        return [match.text]
    lines = [match.text]
    for raw in match.excerpt.split("\n"):
        lines.append(clean_line(raw.encode("utf-8", "surrogatepass"))[0])
    return lines

"""What a rule is once loaded: the catalogue's YAML keys as frozen dataclasses.

A rule either matches one line (``pattern``) or a block of lines (``start`` ... ``end``, at most
``max_lines``), always against the *cleaned* line (no timestamp, ANSI escapes or ``[rankN]:`` prefix).
Named groups of ``pattern``/``start``/``end`` fill the ``{name}`` fields of ``message``; a block rule's
optional ``capture`` is searched in the lines after ``start``, and the first line it matches fills its
groups (Python 3.6-3.9 name the atexit callback only in the traceback's first frame). A block still
open when its log ends matches nothing, unless the rule has ``cut_short`` and one of the block's lines
matched it: a traceback whose last line never made it into the log (the process was killed, the
output cut) still happened; its missing end groups read as ``CUT_SHORT_GROUP``.

Keys that steer ranking (see ``analyzer/scan/rank.py``):
- ``marker``: the rule records context (the test runner printed its verdict, a test started, a parent
  sent its workers SIGTERM) instead of producing a finding.
- ``unframed_run``: a verdict marker of a runner that prints no line when its run starts (``pytest -q``,
  unittest without ``-v``): events on no test's lines before it, since the log's start or the last
  verdict, were the run's, and a passing verdict says they were handled.
- ``void_at_end``: an ``echo`` marker whose lines are what a program printed and went on past (a
  traceback it logged): the matches it drops count after all when its block ends the log, or when
  another event comes right after it (an exit status): the program did not go on.
- ``collateral_after``: marker names; a match that comes after one of them in the same file is
  collateral damage (a warning pointing at the root cause), not a second root cause.
- ``root_cause``: a match of this rule outranks every other error (torchrun's "Root Cause" block).
- ``inner_message``: the message of an event that happened inside a test (in its inner run: pytester's,
  a subprocess's), where ``message`` speaks of the log's own run ("pytest stopped before running any test").
- ``at_end``: a block's finding points at its last line, the exception that says why, not at the
  header that only announces it (torch.multiprocessing.spawn's "-- Process 1 terminated with ...").
- ``voids_verdict``: the event says the run was cut short (pytest-timeout's session timeout), so the
  passing verdict printed after it does not mean the run handled it.
- ``error_at_end``: a finding below error (a logged exception the program may have gone on from) is an
  error in a plain scan when it is its log's last word (``clean.last_content_line``) and no error of the
  log tells a failure: nothing came after it, so the program died there (like traceback-ends-log).
- ``fallback``: the rule tells a failed exit status (a CI step's, the guarded command's) and nothing
  more: its finding is kept only when no other error of its log (the guard's: of any log) explains
  the failure, and it names the last Python traceback printed before it.
- ``fold_groups``: named groups that identify the event; repeats fold when these groups (and the
  line's rank prefix) agree instead of when the whole cleaned line does, so one event a program
  prints in two wordings (NCCL's watchdog line, and C++'s ``what():`` that repeats it) is one event.
- ``same_event_in_test``: with ``same_event_as``, a match of those rules in the same named test tells this
  event again however many lines lie between them (a test's report may come a whole dump or traceback
  after what the test printed live); on lines of no test ``same_event_lines`` holds.
- ``across_ranks``: named groups that identify one event on every rank that reports it (the watchdog's
  process group, collective sequence number and op): matches of other ranks with all of them set and
  equal, in the same log and test, are that event told again by each rank, told by the first one. A
  name ending in ``?`` may be unset, then on both (torch 1.x's watchdog line names no process group).

- ``stack_follows``: the event's line announces a faulthandler stack dump that follows it (a test
  harness's "Process 1 timed out with traceback:"): the dump is attached to it as a crash's is, and the
  finding names the stuck frame of the user's code.

``guard: true`` marks a rule that gpu-hang-guard applies itself instead of a pattern: the supervisor's
findings (timeout, idle, cancelled, abort-on, unkillable, leaked) and the scanner's ``scan-incomplete``.
Such a rule has no pattern; its ``message`` says what the finding reads like. It is documented,
re-graded and ignored like every other rule, but it lives in ``Catalogue.guard_rules``, never in
``Catalogue.rules``, so the matching engine (which needs a pattern) never sees it.

``Catalogue`` fields added for the user's config (``analyzer/rules/config.py``), all defaulted:
- ``ignore_rules``: rule ids whose findings are dropped. The loader already removes those rules from
  ``rules``; ranking also drops the guard's findings with these ids.
- ``severity_overrides``: ``(rule id, severity)`` pairs from the config. The loader already applied
  them to ``rules`` and ``guard_rules``; ranking applies them to the guard's findings too.
- ``match_budget_s``: seconds each user pattern may spend over the whole scan (see ``budget.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

from ..model import SCAN_INCOMPLETE_RULE, Kind, Severity

DEFAULT_MATCH_TIMEOUT_S = 1.0
DEFAULT_MATCH_BUDGET_S = 10.0


# What a block's end groups read when its log ended before the end line (see ``cut_short``).
CUT_SHORT_GROUP = "an exception whose line was cut from the log"


@dataclass(frozen=True)
class Rule:
    """One entry of the catalogue, with its patterns compiled by the loader (``regex`` module)."""

    id: str
    kind: Optional[Kind]  # None only for a marker rule, which makes no finding
    severity: Optional[Severity]
    message: str
    doc: str
    pattern: Optional[str] = None
    start: Optional[str] = None
    end: Optional[str] = None
    capture: Optional[str] = None
    cut_short: Optional[str] = None
    max_lines: int = 200
    ignore_case: bool = False
    literals: Tuple[str, ...] = ()
    examples_match: Tuple[str, ...] = ()
    examples_no_match: Tuple[str, ...] = ()
    marker: Optional[str] = None
    unframed_run: bool = False  # a verdict of a run whose start its runner never prints
    void_at_end: bool = False  # an echo that does not hold when the log ends with it or an event follows
    collateral_after: Tuple[str, ...] = ()
    root_cause: bool = False
    inner_message: str = ""  # the message of an event inside a test, in its inner run (else ``message``)
    at_end: bool = False  # a block's finding points at its last line (the exception), not its header
    voids_verdict: bool = False  # the run's passing verdict after this event does not handle it
    same_event_as: Tuple[str, ...] = ()  # ids of rules whose nearby match tells this rule's event again
    same_event_lines: int = 0  # how many lines may lie between the two matches
    same_event_in_test: bool = False  # in one named test, any number of lines may lie between them
    fold_groups: Tuple[str, ...] = ()  # groups whose values identify the event (else the whole line)
    across_ranks: Tuple[str, ...] = ()  # groups whose values identify one event on every rank
    fallback: bool = False  # a failed exit status: kept only when no other error explains it
    error_at_end: bool = False  # a lesser finding that is an error when it is the log's last word
    dies_of: Optional[str] = None  # the signal a process dies of after this event (glibc aborts: SIGABRT)
    peer_lost: bool = False  # a rank's view of another's death (gloo's "Connection closed by peer")
    stack_follows: bool = False  # the line announces a faulthandler dump of the process it names
    user_defined: bool = False
    guard: bool = False
    pattern_re: Any = field(default=None, compare=False, repr=False)
    start_re: Any = field(default=None, compare=False, repr=False)
    end_re: Any = field(default=None, compare=False, repr=False)
    capture_re: Any = field(default=None, compare=False, repr=False)
    cut_short_re: Any = field(default=None, compare=False, repr=False)

    @property
    def is_block(self) -> bool:
        return self.start is not None


@dataclass(frozen=True)
class LineIgnore:
    """A user's "this line is known to be benign" regex, optionally limited to some rule ids."""

    pattern: str
    rules: Tuple[str, ...] = ()
    pattern_re: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Catalogue:
    """The ordered rules in force (built-in plus the user's config) and what the user ignores."""

    rules: Tuple[Rule, ...]
    ignore_paths: Tuple[str, ...] = ()
    ignore_lines: Tuple[LineIgnore, ...] = ()
    match_timeout_s: float = DEFAULT_MATCH_TIMEOUT_S
    ignore_rules: Tuple[str, ...] = ()
    severity_overrides: Tuple[Tuple[str, Severity], ...] = ()
    guard_rules: Tuple[Rule, ...] = ()
    match_budget_s: float = DEFAULT_MATCH_BUDGET_S

    def scan_rule(self, rule_id: str) -> Optional[Rule]:
        """The scanning rule ``rule_id`` in force, or ``None`` when the user ignores it or a catalogue
        built by hand lacks it."""
        return next((rule for rule in self.rules if rule.id == rule_id), None)

    def guard_rule(self, rule_id: str) -> Rule:
        """The ``guard: true`` rule ``rule_id`` as configured; ``KeyError`` when the catalogue lacks it.

        ``scan-incomplete`` is always there: a catalogue built by hand gets the default below.
        """
        for rule in self.guard_rules:
            if rule.id == rule_id:
                return rule
        if rule_id == SCAN_INCOMPLETE_RULE:
            return DEFAULT_SCAN_INCOMPLETE
        raise KeyError(rule_id)


# What the scanner reports when part of the input was not scanned as asked; the catalogue's own
# ``scan-incomplete`` entry (re-graded by the user's config) takes its place in a loaded catalogue.
DEFAULT_SCAN_INCOMPLETE = Rule(
    id=SCAN_INCOMPLETE_RULE,
    kind=Kind.SCAN_INCOMPLETE,
    severity=Severity.WARNING,
    message="part of the input was not scanned: {reason}",
    doc="Part of the input was not scanned as asked.",
    guard=True,
)

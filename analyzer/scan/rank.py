"""Turn per-log state into findings that explain: one per event, root cause first (policy and order).

``analyzer.scan.state`` has already, per log, folded repeats (the same rule on the same cleaned text
with the same groups in the same test is one event, "(seen N times)"), dropped ignored lines, capped
distinct events per rule, attributed each event to the test it happened in, and tied it to the markers
before it. What ranking decides, in order:
1. Drops what the user ignores: logs whose path matches an ``ignore.paths`` glob (the guard's own
   findings point at its diagnosis files, not at logs, so only their rule ids can ignore them) and rules
   in ``ignore.rules``. The guard's findings are re-graded through the catalogue's rule of the same id
   (``guard: true`` rules) when the catalogue has one, else through the config's severities.
2. Handled events: an event inside a test that then reported an outcome other than failed or error
   (``PASSED``, ``XFAIL``, unittest ``ok``) was handled by the test: a ``notice`` naming the test,
   never an error. Exit-path events (after a verdict, before the next test) are never handled. So is
   an event outside any test in an attempt a supervisor restarted (torch elastic's restart of its
   worker group) when the run then succeeded: the restart handled it. A test failure its run's passing
   verdict counted as expected (Catch2's "2 failed as expected") was handled too.
3. Test failures (``test-failure`` rules): one finding per failed test, its one-line reason when the
   log shows it; an event inside a failed test names the test, and the test failure ranks after it.
4. Collateral: a match after a marker its rule's ``collateral_after`` names (someone sent SIGTERM on
   purpose) is a warning pointing at the root cause; with no other error it keeps its severity.
5. Tracebacks attached to the failure of the same rank or process (excerpt appended, exception named).
   One event told several times is one finding: a match that a nearby match of a rule naming it in
   ``same_event_as`` tells again (or near one it tells: a chain of retries; not of another rank, pid
   or device), and a match on the lines of the traceback attached to a worker's failure; crash lines
   of one signal (``dies_of`` when the wording has none), told by the one that says why, with
   faulthandler's stack; a worker's exit of that signal names it; torchrun's ChildFailedError line
   is the worker failure its report or the agent's log line just before names. Which events tell one
   another is ``analyzer.scan.same_event``'s to find; how the one finding reads is decided here.
6. A ``fallback`` finding (a failed exit status: a CI step's, the guarded command's) is kept only when
   no other error of its log (the guard's: of any log) explains the failure, and it names the last
   Python traceback printed before it: "exit 1; the last Python traceback ... ends in RuntimeError".
7. Timeouts after the verdict are hangs at interpreter exit; the guard's hang finding says whether the
   run hung after its verdict or which test was running, and carries that test.
8. Orders: errors before warnings before notices; within a severity, ``root_cause`` rules first, then
   findings by time (``line_clocks`` across logs when given, else log by log in line order), then the
   guard's findings, then signal exits that echo the guard's kill, then test failures, then a log's
   "findings dropped past the cap" note. A death of the guard's kill signals after every other error
   of its log is the guard's kill told again: the guard's finding tells it.

Messages are the rule's ``message`` with ``{group}`` fields filled from the match; ``{group_exit}``
describes a number as an exit ("exit 143 (SIGTERM)"); a group that did not take part reads ``?``, or what
its template says (``{reason:: {}}`` is left out, ``{test:test {}|a test}`` reads "a test").
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import string
import sys
from typing import Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..exits import describe_exit, describe_exit_byte, describe_wait_status
from ..model import (
    GUARD_COMMAND_FAILED_RULE,
    GUARD_OOM_KILL_RULE,
    RANK_RAISED_RULE,
    SCAN_INCOMPLETE_RULE,
    TEST_NEVER_FINISHED_RULE,
    TRACEBACK_ENDS_LOG_RULE,
    Finding,
    Kind,
    Severity,
)
from ..rules.loader import (
    EXIT_BYTE_FIELD_SUFFIX,
    EXIT_FIELD_SUFFIX,
    WAIT_STATUS_FIELD_SUFFIX,
    fill_template,
    message_fields,
)
from ..rules.model import CUT_SHORT_GROUP, Catalogue, Rule
from .attribution import ENDED_SKIPPED, ENDED_XFAIL
from .match import Match
from .same_event import (
    EXCEPTION_GROUPS,
    ChainReader,
    Item,
    MERGE_KINDS,
    WORKER_KINDS,
    across_rank_of,
    across_ranks_key,
    crash_site,
    events_across_ranks,
    events_chained,
    events_told_again,
    exit_signal,
    one_event_one_finding,
    peers_lost,
    pid_of,
    raise_site,
    same_raise,
    signal_of,
    told_with_a_stack,
)
from .state import REPORT_RANK, LogEvent, LogFindings, LogState, identity_of, stack_frames


MISSING_FIELD = "?"
MAX_FIELD_CHARS = 200
MAX_QUOTE_CHARS = 120

HANG_AFTER_VERDICT = (
    "after the test run printed its verdict ({verdict}): a hang at interpreter exit "
    "(atexit handlers, non-daemon threads or child processes), not a test timeout"
)
RUNNING_TEST = "; while test {test} was running (started at {where}; it never reported an outcome)"
COLLATERAL = "; collateral: it followed the shutdown at {where} ({quote}); root cause at {root_where}: {root}"
COLLATERAL_NO_ROOT = "; it followed the shutdown at {where} ({quote}), but no other failure was found"
PEER_VIEW_ROOT = (
    "; collateral: {who} died of its broken connection to a peer that died, not of a cause of its own "
    "(the launcher saw it first among deaths at once); a failure of its own at {root_where}: {root}"
)
PEER_VIEW = (
    "; collateral: {who} lost its connection to a peer that died of its own failure at {root_where}: {root}"
)
BESIDE_THE_ROOT = "a failure of its own, beside the root cause its launcher reports"
REPEATED = " (seen {count} times)"
REPEATED_BY_RANKS = " (seen {count} times: {ranks})"  # identical lines of several ranks folded
MORE_RANKS = " and {count} more"
# The ranks a folded event names, the lowest first; the rest are counted (a 512-rank job's one NCCL error).
MAX_RANKS_NAMED = 8
DURING = " during {test}"
HANDLED = " during {test}, which passed"
# ... in a test that reported another outcome than a pass or a failure (``LogEvent.test_ended``).
HANDLED_XFAIL = " during {test}, which failed as expected"
HANDLED_SKIPPED = " during {test}, which was skipped"
HANDLED_RERUN = " during {test}, which passed on rerun"
LETTER_PASSED = " during a test that passed (its progress letter at line {line})"
RECOVERED = "; handled: {restart} ({restart_where}), and the run then succeeded ({where})"
RUN_PASSED = " during the test run, which passed ({verdict})"
TEST_FAILED = "{test} failed"
TEST_RERUN_PASSED = "{test} failed, then passed when re-run"
TEST_FAILED_AS_EXPECTED = "{test} failed, as its run expected ({verdict})"
TEST_FAILED_REASON = "{test} failed: {reason}"
# A verdict that counts failures the log names no test of (``LogState._failures_unnamed``).
FAILURES_UNNAMED = "pytest's verdict counts {summary}, but the log names none of its failed tests"
# ... one that counts more "failed" than the log names (pytest --tb=line without an f in -r).
FAILURES_PART_NAMED = (
    "pytest's verdict counts {failed} failed ({summary}), but the log names only {named} of them")
UNITTEST_FAILURES_UNNAMED = "unittest's verdict says {summary}, but the log names none of those tests"
SUBTESTS_COUNT = "{count} subtests failed"
SUBTESTS_FAILED = SUBTESTS_COUNT + ", first: {reason}"
CAPPED = "{count} more distinct findings of {rules} were not kept (at most {cap} per rule and log)"
ATTACHED = "; {who} raised {exception}"
KILLED = "{who} (pid {pid}) was killed by {signal}"
ROOT_RANK = " ({who})"  # a launcher's root cause row that exited with a plain code: the rank of its row
KILLED_OOM = "; likely the OOM killer: {message} ({where})"
KILLED_BY_CRASH = "{who} (pid {pid}) was killed by {signal}: {crash}"
CRASH_AT = " at {site}"
WHOSE_CRASH = " ({who})"
ALSO_DIED = "; {whom} died of it too ({where})"
ALSO_EXITED = "; {whom} exited with that code too ({where})"
ALSO_RAISED = "; {whom} raised it too ({where})"
RAISED_AT = " (raised at {site})"
CRASH_HEADER = "--- the crash ({where}) ---"
TOLD_AGAIN = "; {message} ({where})"
MORE_OF_IT = "; {count} more lines of it ({where})"
OTHER_RANKS_TOLD = "; {ranks} reported it too ({where})"
# Lines of a rule that tells itself (one fault per SM of a GPU, each an Xid line) quoted in a finding's
# message and excerpt; the rest are counted.
MAX_OWN_TOLD = 2
TOLD_AGAIN_HEADER = "--- the same event, told again ({where}) ---"
CHAINED = "; {how} {message} ({where})"
CHAINED_HEADER = "--- {how} ({where}) ---"
ATTACHED_HEADER = "--- traceback of {who} ({where}) ---"
LAST_TRACEBACK = "; the last Python traceback before it ({where}) ends in {exception}"
RAISED_AT = " (raised at {site})"
LAST_TRACEBACK_HEADER = "--- the last Python traceback ({where}) ---"

_KILL_ECHO_KINDS = (Kind.SIGNAL_EXIT,)
# The rules whose event says memory ran out and the kernel killed a process (the kernel's own log, SLURM's
# step, Kubernetes' container): only a log that shows one says a SIGKILL was likely the OOM killer's.
_OOM_KILL_RULES = frozenset({"kernel-oom-kill", "kernel-oom-kill-chosen", "slurm-oom-kill", "k8s-oom-killed"})
_KERNEL_OOM_RULES = frozenset({"kernel-oom-kill", "kernel-oom-kill-chosen"})
# The victims the guard's OOM finding names, as analyzer/supervise/diagnosis.py oom_kills writes them:
# "(python, pid 4242, pt_main_thread, pid 4250)".
_GUARD_OOM_VICTIM = re.compile(r"\bpid (\d+)\b")
_GUARD_KILL_KINDS = (Kind.HANG, Kind.TIMEOUT)
# What the guard sends the command's tree first when it ends it (analyzer/supervise/escalate.py: SIGCONT
# and SIGTERM, then SIGKILL for what is left). SIGKILL is left out: the kernel's OOM killer sends it too,
# and a worker it killed before the hang is the root cause, not the guard's doing.
_GUARD_KILL_SIGNALS = ("SIGTERM",)
GUARD_KILL_TOLD = "; the log tells the guard's kill: {message} ({where})"
GUARD_KILL_HEADER = "--- the guard's kill, as the log tells it ({where}) ---"
GUARD_OOM_TOLD = "; the log tells it: {message} ({where})"
GUARD_OOM_HEADER = "--- the OOM kill, as the log tells it ({where}) ---"
LineClocks = Mapping[str, Callable[[int], float]]


def rank_findings(
    matches: Iterable[Match], catalogue: Catalogue, guard_findings: Sequence[Finding] = ()
) -> List[Finding]:
    """Ranked findings from matches of any logs (grouped by path, each in ``seq`` order).

    The pipeline feeds ``LogState`` as it scans; this entry point is for matches built elsewhere.
    """
    states: Dict[str, LogState] = {}
    chains: Dict[str, ChainReader] = {}
    for match in sorted(matches, key=lambda m: m.seq):
        state = states.get(match.path)
        if state is None:
            state = states[match.path] = LogState(match.path, catalogue)
            chains[match.path] = ChainReader()
        state.feed(match)
        chains[match.path].feed(match)
    results = [chains[path].findings(state.finish(None, {})) for path, state in states.items()]
    return rank(results, catalogue, guard_findings)


def rank(
    results: Sequence[LogFindings],
    catalogue: Catalogue,
    guard_findings: Sequence[Finding] = (),
    line_clocks: Optional[LineClocks] = None,
    guard_ended_at: Optional[float] = None,
) -> List[Finding]:
    """Ranked findings (root cause first) of per-log results and the guard's own findings.

    ``guard_findings`` (path ``""`` or the log dir, line 0) keep their order among findings of their
    severity; ``guard_ended_at``: ``time.monotonic()`` when the guard's clock ran out (or a cancel came),
    to be read with ``line_clocks``. Never raises.
    """
    kept = [r for r in results if path_kept(r.path, catalogue)]
    guard = _guard_findings(guard_findings, catalogue)
    as_the_guard_found = [_before_the_guard_ended_it(log, line_clocks, guard_ended_at) for log in kept]
    # Each event with what decides its place: (log index, event, handled?, its finding's test).
    events: List[Tuple[int, LogFindings, LogEvent, bool, Optional[str]]] = []
    for index, log in enumerate(kept):
        for event in log.events:
            if event.match.rule.id in catalogue.ignore_rules:
                continue
            test = log.test_of_event(event)
            events.append((index, log, event, _handled(event, log, test), test))
    told_again = events_told_again(events)
    events = [item for item in events if id(item[2]) not in told_again.absorbed]
    across = events_across_ranks(events, told_again.told)
    events = [item for item in events if id(item[2]) not in across.absorbed]
    for teller, ranks in across.told.items():
        told_again.told.setdefault(teller, []).extend(ranks)
    chained = events_chained(events)
    events = [item for item in events if id(item[2]) not in chained.absorbed]
    severity_of = _chain_severities(events, chained.causes)
    crashes = one_event_one_finding(events, told_again.told)
    events = [item for item in events if id(item[2]) not in crashes.absorbed]
    peers = peers_lost(events)
    events = [item for item in events if id(item[2]) not in peers.absorbed]
    fallbacks = {rule.id for rule in catalogue.guard_rules if rule.fallback}
    events, guard = _without_explained_fallbacks(events, guard, fallbacks, severity_of)
    events, kill_told = _guard_kill_told(events, guard, severity_of)
    events, oom_told = _guard_oom_told(events, guard)

    has_root = any(
        e.shutdown is None and not handled and _event_severity(e, severity_of) is Severity.ERROR
        for _, _, e, handled, _ in events
    ) or any(f.severity is Severity.ERROR for f in guard)
    guard_killed = any(f.kind in _GUARD_KILL_KINDS and f.severity is Severity.ERROR for f in guard)

    oom_kills: Dict[int, LogEvent] = {}
    for item in events:
        if item[2].match.rule.id in _OOM_KILL_RULES:
            oom_kills.setdefault(item[0], item[2])
    ranked: List[Tuple[tuple, Optional[Finding], Optional[Match]]] = []
    told_tracebacks: Set[Tuple[int, int]] = set()  # (log index, line) of tracebacks an error's failure tells
    roots: Dict[int, Set[Optional[Tuple[str, str]]]] = {}  # log index -> whom its root-cause errors name
    root_pids: Dict[int, Dict[Tuple[str, str], str]] = {}  # log index -> a root cause's rank -> its pid
    # log index -> (ranked index, the rank's traceback) of each root cause that names its rank's exception
    root_raises: Dict[int, List[Tuple[int, Match]]] = {}
    # a launcher's root-cause row whose rank died of a peer's death, or a rank's own view of that death
    # (gloo's "Connection closed by peer", no launcher's report); the deaths of their own, per log
    peer_views: List[Tuple[int, int, Optional[Tuple[str, str]], str]] = []
    lost_peer: Dict[int, Set[Optional[Tuple[str, str]]]] = {}  # log index -> ranks whose peer died
    own_deaths: Dict[int, List[Tuple[Tuple[str, str], Finding]]] = {}
    placed: Dict[int, Tuple[int, int, LogEvent]] = {}  # id(event) -> (its ranked index, log index, event)
    for index, _log, event, handled, test in events:
        placed[id(event)] = (len(ranked), index, event)
        again = told_again.told.get(id(event), ())
        row_traceback = crashes.row_traceback.get(id(event))
        if row_traceback is not None and event.traceback is None:
            event = dataclasses.replace(event, traceback=row_traceback)
        finding = _finding(
            event,
            test,
            handled,
            demote=has_root,
            crash=crashes.crash_of.get(id(event)),
            again=again,
            stack=crashes.stack_of.get(id(event)) or told_with_a_stack(event, again),
            oom_kill=oom_kills.get(index),
            causes=chained.causes.get(id(event), ()),
            severity=severity_of.get(id(event)),
            crash_lines=[*crashes.told.get(id(event), ()), *peers.told.get(id(event), ())],
            rows=crashes.rows.get(id(event), ()),
            local_of=_local_rank(_log, event),
        )
        rule = event.match.rule
        if finding.kind is Kind.TEST_FAILURE:
            order = 4
        elif guard_killed and finding.kind in _KILL_ECHO_KINDS:
            order = 3
        else:
            order = 0
        key = (
            finding.severity.rank,
            0 if rule.root_cause and order == 0 else 1,
            order,
            _when(event.match, index, line_clocks),
        )
        collateral = event.shutdown if has_root and not handled else None
        ranked.append((key, finding, collateral))
        if finding.severity is Severity.ERROR and collateral is None:
            who = identity_of(event.match, use_rank_prefix=True)
            if rule.root_cause and _died_of_a_lost_peer(event, who, again):
                peer_views.append((len(ranked) - 1, index, who, PEER_VIEW_ROOT))
            elif rule.peer_lost and who is not None and who[0] == "rank":
                peer_views.append((len(ranked) - 1, index, who, PEER_VIEW))
                lost_peer.setdefault(index, set()).add(who)
            elif finding.kind in MERGE_KINDS and not rule.peer_lost:
                # a crash no line names (faulthandler's stack): another process than a rank that lived on
                own_deaths.setdefault(index, []).append((who or ("process", "unnamed"), finding))
        if event.traceback is not None and finding.severity is Severity.ERROR and collateral is None:
            told_tracebacks.add((index, event.traceback[1].line))
        if rule.root_cause and finding.severity is Severity.ERROR and collateral is None \
                and event.traceback is not None:
            root_raises.setdefault(index, []).append((len(ranked) - 1, event.traceback[1]))
        if rule.root_cause and finding.severity is Severity.ERROR:
            root_who = identity_of(event.match, use_rank_prefix=True)
            roots.setdefault(index, set()).add(root_who)
            if root_who is not None and pid_of(event.match) is not None:
                root_pids.setdefault(index, {})[root_who] = pid_of(event.match)
    last = (float("inf"), len(kept), 0)
    for index, finding in enumerate(guard):
        finding = _enrich_guard(finding, as_the_guard_found)
        if finding.rule in fallbacks:
            finding = _with_last_traceback(finding, kept, line_clocks)
        if kill_told is not None and kill_told[0] == index:
            finding = _with_deaths_told(finding, kill_told[1], GUARD_KILL_TOLD, GUARD_KILL_HEADER)
        if oom_told is not None and oom_told[0] == index:
            finding = _with_deaths_told(finding, oom_told[1], GUARD_OOM_TOLD, GUARD_OOM_HEADER)
        ranked.append(((finding.severity.rank, 1, 2, (float("inf"), len(kept), index)), finding, None))
    for index, log in enumerate(kept):
        raised = _ranks_raised(log, catalogue, roots.get(index, set()), lost_peer.get(index, set()),
                               told_tracebacks, index, root_pids.get(index, {}))
        raised = [(_with_attempts_line(f, _attempt_failed(log, tb), placed, ranked), tb) for f, tb in raised]
        for finding, tb in _one_per_raise(raised, root_raises.get(index, ()), ranked):
            ranked.append(((finding.severity.rank, 1, 0, _when(tb, index, line_clocks)), finding, None))
            who = identity_of(tb, use_rank_prefix=True)
            if finding.severity is Severity.ERROR and who is not None:
                own_deaths.setdefault(index, []).append((who, finding))
    _fold_earlier_attempts(kept, placed, ranked)
    _demote_peer_views(ranked, peer_views, own_deaths)
    ranked = [item for item in ranked if item[1] is not None]  # told by another attempt's failure
    if line_clocks is None:  # a plain scan: no exit status says whether the command died
        for index, log in enumerate(kept):
            finding = _died_in_traceback(log, catalogue, [f for _, f, _ in ranked])
            if finding is not None:
                ranked.append(((finding.severity.rank, 1, 4, (last[0], index, finding.line)), finding, None))
        _errors_at_end(ranked, kept, catalogue)
    for index, log in enumerate(as_the_guard_found):
        finding = _never_finished(log, catalogue, [f for _, f, _ in ranked], set(line_clocks or ()))
        if finding is not None:
            # after every match of its log: the log ended there
            when = _when_at(log.path, finding.line, index, sys.maxsize, line_clocks)
            ranked.append(((finding.severity.rank, 1, 4, when), finding, None))
    for index, log in enumerate(kept):
        if log.dropped:
            finding = _capped(log, catalogue)
            if finding is not None:
                ranked.append(((finding.severity.rank, 1, 5, (last[0], index, 0)), finding, None))
    ranked.sort(key=lambda item: item[0])

    root = next((f for _, f, shutdown in ranked if shutdown is None and f.severity is Severity.ERROR), None)
    out = []
    for _, finding, shutdown in ranked:
        if shutdown is not None and root is not None:
            note = COLLATERAL.format(
                where=_where(shutdown, finding.path),
                quote=_quote(shutdown),
                root_where=_finding_where(root, finding.path),
                root=_clip(root.message, MAX_QUOTE_CHARS),
            )
            finding = dataclasses.replace(finding, message=finding.message + note)
        out.append(finding)
    return out


def _died_of_a_lost_peer(event: LogEvent, who: Optional[Tuple[str, str]], again: Sequence[LogEvent]) -> bool:
    """Whether a launcher's root-cause row (torchrun's "Root Cause") is of a rank whose own death the log
    tells as its connection to a peer breaking (gloo's "Connection closed by peer", a ``peer_lost`` rule,
    in that rank's traceback)."""
    return who is not None and any(
        told.match.rule.peer_lost and identity_of(told.match, use_rank_prefix=True) == who for told in again
    )


def _demote_peer_views(
    ranked: List[Tuple[tuple, Optional[Finding], Optional[Match]]],
    peer_views: Sequence[Tuple[int, int, Optional[Tuple[str, str]], str]],
    own_deaths: Mapping[int, Sequence[Tuple[Tuple[str, str], Finding]]],
) -> None:
    """A launcher that sees several ranks die in one monitor interval names one of them its root cause (torch
    elastic's ``_get_first_failure`` takes the earliest error-file timestamp, else the lowest rank); when that
    rank died of losing a peer while another rank of the same log died of a cause of its own (its exception,
    a signal), the row is that death seen from outside: a warning that names the failure of its own. So is
    a rank's own error of a lost peer (gloo's "Connection closed by peer") beside another rank's failure."""
    for at, index, who, template in peer_views:
        own = [(whom, finding) for whom, finding in own_deaths.get(index, ()) if whom != who]
        if not own:
            continue
        key, finding, shutdown = ranked[at]
        if finding is None:
            continue
        cause = min((f for _, f in own), key=lambda f: f.line)
        note = template.format(
            who=f"{who[0]} {who[1]}" if who else "the worker",
            root_where=_finding_where(cause, finding.path),
            root=_clip(cause.message, MAX_QUOTE_CHARS),
        )
        message = _one_line(finding.message + note)
        demoted = dataclasses.replace(finding, severity=Severity.WARNING, message=message)
        ranked[at] = ((Severity.WARNING.rank, 1, *key[2:]), demoted, shutdown)


def preliminary_finding(match: Match) -> Finding:
    """What a live scan reports the moment ``match`` is seen: no folding, context or demotion yet."""
    rule = match.rule
    return Finding(
        kind=finding_kind(match),
        rule=rule.id,
        severity=_severity(rule),
        path=match.path,
        line=match.line,
        message=format_message(rule.message, match.groups),
        excerpt=match.excerpt,
        test=match.test,
    )


def _when(match: Match, index: int, clocks: Optional[LineClocks]) -> Tuple[float, int, int]:
    return _when_at(match.path, match.line, index, match.seq, clocks)


def _when_at(
    path: str, line: int, index: int, seq: int, clocks: Optional[LineClocks]
) -> Tuple[float, int, int]:
    """Where ``line`` of the log at ``path`` (the ``index``-th, ``seq`` its order there) stands in the order
    of events: by its arrival when the logs have clocks, else by log and order."""
    if clocks:
        clock = clocks.get(path)
        if clock is not None:
            try:
                return (float(clock(line)), index, seq)
            except Exception:  # a clock that cannot say keeps the log's own order
                pass
        return (float("inf"), index, seq)
    return (0.0, index, seq)


def finding_kind(match: Match) -> Kind:
    """The kind of ``match``'s finding: its rule's, except that a worker's failure whose exit code says a
    signal killed it ("failed (exitcode: -9)", DeepSpeed's "return code = -9") is a signal exit, as
    torchrun's report rows of one are: the worker did not fail, it was killed."""
    kind = match.rule.kind if match.rule.kind is not None else Kind.CRASH
    if kind is Kind.WORKER_FAILURE and exit_signal(match) is not None:
        return Kind.SIGNAL_EXIT
    return kind


def _handled(event: LogEvent, log: LogFindings, test: Optional[str]) -> bool:
    """An event inside a test that then reported an outcome other than failed/error, or a test's failure
    that a re-run of it then passed, or an event of an attempt a supervisor restarted before it succeeded,
    or an event or failure of a test a runner re-ran in a new process that then passed (PyTorch's
    run_test.py)."""
    if event.recovered is not None or event.run_passed is not None:
        return True
    if event.passed_letter and test is None and not event.exit_path:
        return True
    if test is None or event.exit_path:
        return False
    if _rerun_passed(test, log.rerun_passed_tests):
        return True
    if event.match.rule.kind is Kind.TEST_FAILURE:
        return log.rerun_passed
    if not event.test_finished or event.match.rule.kind is Kind.SCAN_INCOMPLETE:
        return False
    return (test not in log.failed or log.rerun_passed) and not log.failed_overflow


def _handled_words(ended: str) -> str:
    """The words for an event in a test that ended as ``ended`` (``LogEvent.test_ended``), handling it."""
    return {ENDED_XFAIL: HANDLED_XFAIL, ENDED_SKIPPED: HANDLED_SKIPPED}.get(ended, HANDLED)


def _rerun_passed(test: str, rerun_passed: FrozenSet[str]) -> bool:
    """Whether a runner listed ``test`` among those that passed when re-run in a new process. run_test.py
    lists pytest's node ids from the repository's root ("test/test_x.py::T::t") while ``pytest -v``, run in
    test/, prints them from there ("test_x.py::T::t"): a path prefix apart is the same test."""
    if not rerun_passed:
        return False
    if test in rerun_passed:
        return True
    return any(listed.endswith("/" + test) or test.endswith("/" + listed) for listed in rerun_passed)


def format_message(message: str, groups: Mapping[str, Optional[str]]) -> str:
    """``message`` with its ``{name}`` fields filled from ``groups``; never raises, always one line.

    A field with a template, ``{name:text {} text}``, is the template with the value at ``{}`` when the
    group matched, and nothing when it did not: the optional part of a wording ("... on rank 1" with or
    without ": Original reason ..."); ``{name:test {}|a test}`` reads the text after ``|`` when it did
    not. A plain field that did not match reads ``MISSING_FIELD``."""
    out = []
    try:
        parsed = list(string.Formatter().parse(message))
    except ValueError:
        return _one_line(message)
    for literal, field, template, _ in parsed:
        out.append(literal)
        if field is None:
            continue
        value = _field(field, groups)
        if template:
            out.append(fill_template(template, value))
        else:
            out.append(MISSING_FIELD if value is None else value)
    return _one_line("".join(out))


_DESCRIBED_FIELDS = (
    (EXIT_FIELD_SUFFIX, describe_exit),
    (WAIT_STATUS_FIELD_SUFFIX, describe_wait_status),
    (EXIT_BYTE_FIELD_SUFFIX, describe_exit_byte),
)


def _field(name: str, groups: Mapping[str, Optional[str]]) -> Optional[str]:
    value = groups.get(name)
    for suffix, describe in _DESCRIBED_FIELDS:
        if value is not None or not name.endswith(suffix):
            continue
        number = groups.get(name[: -len(suffix)])
        if number is not None:
            try:
                return describe(int(number.strip()))
            except ValueError:
                value = number
    if value is None or value == "":
        return None
    return _clip(value, MAX_FIELD_CHARS)


def _severity(rule: Rule) -> Severity:
    return rule.severity if rule.severity is not None else Severity.ERROR


def _event_severity(event: LogEvent, severity_of: Mapping[int, Severity]) -> Severity:
    """An event's severity: its rule's, or a chained traceback's worst (``severity_of``, by id())."""
    return severity_of.get(id(event)) or _severity(event.match.rule)


def _chain_severities(
    events: Sequence[Item], causes: Mapping[int, Sequence[Tuple[LogEvent, str]]]
) -> Dict[int, Severity]:
    """id() of each event that tells a chained traceback's earlier exceptions -> the worst severity of the
    chain's rules: the process died of the chain either way."""
    worst: Dict[int, Severity] = {}
    for item in events:
        told = causes.get(id(item[2]))
        if told:
            severities = [_severity(event.match.rule) for event in (item[2], *(cause for cause, _ in told))]
            worst[id(item[2])] = min(severities, key=lambda severity: severity.rank)
    return worst


def path_kept(path: str, catalogue: Catalogue) -> bool:
    """Whether a log at ``path`` is scanned at all (no ``ignore.paths`` glob matches it)."""
    if not catalogue.ignore_paths:
        return True
    name = path.replace("!", "/").rsplit("/", 1)[-1]
    for glob in catalogue.ignore_paths:
        if fnmatch.fnmatchcase(path, glob) or ("/" not in glob and fnmatch.fnmatchcase(name, glob)):
            return False
    return True


def _verdict_text(verdict: Match) -> str:
    text = verdict.groups.get("verdict") or verdict.text
    return _clip(text.strip().strip("=").strip() or text.strip(), MAX_QUOTE_CHARS)


def _guard_findings(findings: Sequence[Finding], catalogue: Catalogue) -> List[Finding]:
    """The guard's findings under the one policy: the catalogue's rule of the same id, else the config."""
    guard_rules = {rule.id: rule for rule in catalogue.guard_rules}
    overrides = dict(catalogue.severity_overrides)
    out = []
    for finding in findings:
        if finding.rule in catalogue.ignore_rules:
            continue
        rule = guard_rules.get(finding.rule)
        if finding.rule in overrides:
            finding = dataclasses.replace(finding, severity=overrides[finding.rule])
        elif rule is not None and rule.severity is not None and rule.severity is not finding.severity:
            finding = dataclasses.replace(finding, severity=rule.severity)
        out.append(finding)
    return out


def _without_explained_fallbacks(
    events: List[Item], guard: List[Finding], fallbacks: Set[str], severity_of: Mapping[int, Severity]
) -> Tuple[List[Item], List[Finding]]:
    """Drop fallback findings (a failed exit status) that another error of their log, or for the guard's
    (rule ids ``fallbacks``) of any log (its own fallback's too) or the guard, already explains."""
    explained = {
        index for index, _, event, handled, _ in events
        if not handled and not event.match.rule.fallback
        and _event_severity(event, severity_of) is Severity.ERROR
    }
    events = [item for item in events if not (item[2].match.rule.fallback and item[0] in explained)]
    # A log's own fallback that stays (gunicorn's halt, which names the traceback) says more of the
    # command's failure than the guard's exit status does.
    told_by_log = any(
        not handled and event.match.rule.fallback and _event_severity(event, severity_of) is Severity.ERROR
        for _, _, event, handled, _ in events
    )
    guard_told = any(f.severity is Severity.ERROR and f.rule not in fallbacks for f in guard)
    if explained or told_by_log or guard_told:
        guard = [finding for finding in guard if finding.rule not in fallbacks]
    return events, guard


def _guard_kill_told(
    events: List[Item], guard: Sequence[Finding], severity_of: Mapping[int, Severity]
) -> Tuple[List[Item], Optional[Tuple[int, List[LogEvent]]]]:
    """The deaths the guard's own kill caused, left to the guard's finding of why it killed (a hang, a
    timeout, a cancel): the events without them, and (index in ``guard`` of that finding, the deaths).
    torchrun's agent that "got signal 15" under a guard that timed the command out is the guard's
    SIGTERM, not a second failure. Such a death is a crash, signal exit or worker's exit of SIGTERM, not
    handled and after no shutdown marker, after every other error of its log (the command was still
    running when the guard ended it, so its own failures came first)."""
    killer = next(
        (i for i, f in enumerate(guard) if f.kind in _GUARD_KILL_KINDS and f.severity is Severity.ERROR), None
    )
    if killer is None:
        return events, None
    echo_ids = {id(item[2]) for item in events if _is_kill_echo(item)}
    if not echo_ids:
        return events, None
    last_other: Dict[int, int] = {}
    for index, _, event, handled, _ in events:
        severity = _event_severity(event, severity_of)
        if id(event) not in echo_ids and not handled and severity is Severity.ERROR:
            last_other[index] = max(last_other.get(index, -1), event.match.seq)
    told = [
        item for item in events
        if id(item[2]) in echo_ids and item[2].match.seq > last_other.get(item[0], -1)
    ]
    if not told:
        return events, None
    told_ids = {id(item[2]) for item in told}
    deaths = [item[2] for item in sorted(told, key=lambda it: (it[0], it[2].match.seq))]
    return [item for item in events if id(item[2]) not in told_ids], (killer, deaths)


def _guard_oom_told(
    events: List[Item], guard: Sequence[Finding]
) -> Tuple[List[Item], Optional[Tuple[int, List[LogEvent]]]]:
    """The deaths by SIGKILL the logs show, left to the guard's error that the kernel's OOM killer struck
    during the run: the events without them, and (index in ``guard`` of that finding, the deaths).
    SIGKILL leaves no trace of its own and the guard counted the kill, so DataLoader's "worker (pid N) is
    killed by signal: Killed" is that kill told by the process that saw it, not a second failure. A
    warning (the command passed anyway) tells nothing: an unhandled death in its log stays an error."""
    teller = next(
        (i for i, f in enumerate(guard) if f.rule == GUARD_OOM_KILL_RULE and f.severity is Severity.ERROR),
        None,
    )
    if teller is None:
        return events, None
    victims = set(_GUARD_OOM_VICTIM.findall(guard[teller].message))
    told = [item for item in events if _is_sigkill_death(item) or _is_kernel_oom_kill_of(item, victims)]
    if not told:
        return events, None
    told_ids = {id(item[2]) for item in told}
    deaths = [item[2] for item in sorted(told, key=lambda it: (it[0], it[2].match.seq))]
    return [item for item in events if id(item[2]) not in told_ids], (teller, deaths)


def _is_kernel_oom_kill_of(item: Item, victims: Set[str]) -> bool:
    """Whether ``item`` is the kernel's own line of an OOM kill the guard counted: a step that prints
    dmesg after its command failed shows "Memory cgroup out of memory: Killed process 4242 (python)".
    It is that kill when it names one of the guard's victims, or any kill when the guard could not read
    their names; a kill of another pid is another kill (an older one still in the kernel's log)."""
    event = item[2]
    if item[3] or event.match.rule.id not in _KERNEL_OOM_RULES:
        return False
    pid = event.match.groups.get("pid") or event.match.groups.get("candidate")
    return not victims or (pid or "").strip() in victims


def _is_sigkill_death(item: Item) -> bool:
    event = item[2]
    if item[3] or event.shutdown is not None or event.match.rule.kind not in MERGE_KINDS:
        return False
    return signal_of(event.match) == "SIGKILL"


def _with_deaths_told(finding: Finding, deaths: Sequence[LogEvent], told_as: str, header_as: str) -> Finding:
    """The guard's finding of why processes died (its own kill, the OOM killer's), with those deaths as
    the logs show them: ``told_as`` and ``header_as`` (templates with message and where) say whose."""
    message, excerpt = finding.message, finding.excerpt
    for event in deaths:
        match = event.match
        where = f"{match.path}:{match.line}"
        told = _clip(format_message(match.rule.message, match.groups), MAX_QUOTE_CHARS)
        message += told_as.format(message=told, where=where)
        header = header_as.format(where=where)
        excerpt = f"{excerpt}\n{header}\n{match.excerpt}" if excerpt else f"{header}\n{match.excerpt}"
    return dataclasses.replace(finding, message=_one_line(message), excerpt=excerpt)


def _is_kill_echo(item: Item) -> bool:
    event = item[2]
    # After a shutdown marker the command sent the signal itself (collateral of its own root cause).
    if item[3] or event.shutdown is not None or event.match.rule.kind not in MERGE_KINDS:
        return False
    return signal_of(event.match) in _GUARD_KILL_SIGNALS


def _with_last_traceback(
    finding: Finding, logs: Sequence[LogFindings], clocks: Optional[LineClocks]
) -> Finding:
    """The guard's failed exit, pointed at the last Python traceback the command printed (if any)."""
    tracebacks = [log.last_traceback for log in logs if log.last_traceback is not None]
    if not tracebacks:
        return finding
    last = max(tracebacks, key=lambda tb: _when(tb, 0, clocks)[0]) if clocks else tracebacks[-1]
    note, told = _last_traceback_note(last)
    return dataclasses.replace(
        finding, message=_one_line(finding.message + note), path=last.path, line=last.line, excerpt=told
    )


def _last_traceback_note(last: Match, here: Optional[str] = None) -> Tuple[str, str]:
    """What a failed exit status says of the last traceback before it: a message suffix naming its
    exception and where the user's code raised it, and the traceback for the excerpt."""
    where = _where(last, here)
    exception = _clip(_exception_name(last) or MISSING_FIELD, MAX_FIELD_CHARS)
    site = raise_site(last)
    if site:
        exception += RAISED_AT.format(site=site)
    told = f"{LAST_TRACEBACK_HEADER.format(where=where)}\n{last.excerpt}"
    return LAST_TRACEBACK.format(where=where, exception=exception), told


def _exception_name(traceback: Match) -> Optional[str]:
    """The exception line a traceback ends in (its ``exception`` or ``exc`` group), if it shows one."""
    return next((traceback.groups[n] for n in EXCEPTION_GROUPS if traceback.groups.get(n)), None)


def _before_the_guard_ended_it(
    log: LogFindings, line_clocks: Optional[LineClocks], ended_at: Optional[float]
) -> LogFindings:
    """``log`` as it stood when the guard's clock ran out: a verdict that arrived after that was the run's
    answer to being ended (pytest prints "1 passed" when a SIGTERM handler raises KeyboardInterrupt), not
    the end of the run, and the test it cut short was the one running."""
    clock = None if ended_at is None or not line_clocks else line_clocks.get(log.path)
    if clock is None or log.final_verdict is None or clock(log.final_verdict.line) < ended_at:
        return log
    return dataclasses.replace(log, final_verdict=None, unfinished=log.cut_short_by_verdict)


def _enrich_guard(finding: Finding, logs: Sequence[LogFindings]) -> Finding:
    if finding.kind is Kind.TIMEOUT and finding.test is None:
        running = next((log.unfinished for log in reversed(logs) if log.unfinished is not None), None)
        return dataclasses.replace(finding, test=running.test) if running is not None else finding
    if finding.rule == GUARD_COMMAND_FAILED_RULE and finding.test is None:
        # A test that killed its own runner (SIGKILL, os._exit) leaves only its -v line: name it.
        return _while_unfinished(finding, logs)
    if finding.kind is not Kind.HANG:
        return finding
    verdict = next((log.final_verdict for log in reversed(logs) if log.final_verdict is not None), None)
    if verdict is None:
        return _while_unfinished(finding, logs)
    # "hung in f (x.py:3) for 10m after the test run printed its verdict": one sentence.
    note = " " + HANG_AFTER_VERDICT.format(verdict=_verdict_text(verdict))
    return dataclasses.replace(finding, message=_one_line(finding.message.rstrip("; .") + note))


def _while_unfinished(finding: Finding, logs: Sequence[LogFindings]) -> Finding:
    """``finding`` naming the test a log showed running when it ended, one that never reported an outcome."""
    found = next(((log, log.unfinished) for log in reversed(logs) if log.unfinished is not None), None)
    if found is None:
        return finding
    log, unfinished = found
    where = f"{log.path}:{unfinished.line}"
    note = RUNNING_TEST.format(test=_clip(unfinished.test, MAX_FIELD_CHARS), where=where)
    return dataclasses.replace(
        finding, message=_one_line(finding.message.rstrip("; .") + note), test=finding.test or unfinished.test
    )


def _finding(
    event: LogEvent,
    test: Optional[str],
    handled: bool,
    demote: bool,
    crash: Optional[Tuple[str, LogEvent]] = None,
    again: Sequence[LogEvent] = (),
    stack: Optional[LogEvent] = None,
    oom_kill: Optional[LogEvent] = None,
    causes: Sequence[Tuple[LogEvent, str]] = (),
    severity: Optional[Severity] = None,
    crash_lines: Sequence[LogEvent] = (),
    rows: Sequence[LogEvent] = (),
    local_of: Optional[str] = None,
) -> Finding:
    """``stack``: another line of the same crash (faulthandler's) whose stack tells where it happened;
    ``oom_kill``: the first event of the log that says the OOM killer killed something; ``causes``: the
    earlier exceptions of its chained traceback, each with how it came of them, and ``severity`` the
    chain's (``_chain_severities``); ``local_of``: the rank of a line that names only a local rank, by the
    launcher's report (``_local_rank``)."""
    match = event.match
    rule = match.rule
    severity = severity or _severity(rule)
    kind = finding_kind(match)
    if kind is Kind.WORKER_FAILURE and crash is not None:
        kind = Kind.SIGNAL_EXIT  # a crash line of the log says which signal killed it
    excerpt = _with_stack(match.excerpt, event)
    if stack is not None:
        header = CRASH_HEADER.format(where=_where(stack.match, match.path))
        excerpt = f"{excerpt}\n{header}\n{_with_stack(stack.match.excerpt, stack)}"
    groups = _with_groups_told(match, again)
    told_again, excerpt, told_repeats = _told_again_by(match, again, excerpt, groups)
    chained, excerpt = _chained_from(match, causes, excerpt)
    told_again += chained
    excerpt = _with_crash_lines(match, crash_lines, excerpt)
    if kind is Kind.TEST_FAILURE:
        name = _clip(test or "?", MAX_FIELD_CHARS)
        if test is None and event.reason:
            summary = _clip(event.reason, MAX_FIELD_CHARS)
            if match.groups.get("runner") == "unittest":
                message = UNITTEST_FAILURES_UNNAMED.format(summary=summary)
            elif match.groups.get("named"):
                message = FAILURES_PART_NAMED.format(
                    failed=match.groups["failed"], named=match.groups["named"], summary=summary)
            else:
                message = FAILURES_UNNAMED.format(summary=summary)
        elif handled and event.run_passed is not None:
            severity = Severity.NOTICE
            message = TEST_FAILED_AS_EXPECTED.format(test=name, verdict=_verdict_text(event.run_passed))
        elif handled:
            severity = Severity.NOTICE
            message = TEST_RERUN_PASSED.format(test=name)
        elif event.reason:
            reason = _clip(event.reason, MAX_FIELD_CHARS)
            if event.subtests > 1:
                reason = SUBTESTS_FAILED.format(count=event.subtests, reason=reason)
            message = TEST_FAILED_REASON.format(test=name, reason=reason)
        elif event.subtests > 1:
            message = TEST_FAILED_REASON.format(test=name, reason=SUBTESTS_COUNT.format(count=event.subtests))
        else:
            message = TEST_FAILED.format(test=name)
        message = _one_line(message)
        return Finding(kind, rule.id, severity, match.path, match.line, message, excerpt, test=test)
    said = rule.inner_message if rule.inner_message and _in_a_test(event, test, again) else rule.message
    message = format_message(said, groups)
    attached = event.traceback[0] if event.traceback is not None else ""
    message += _root_rank(match, f"{message}{told_again} {attached}") + told_again
    stack_event = event if event.stack is not None else stack
    site = crash_site(stack_event.stack) if stack_event is not None and stack_event.stack else None
    if site is not None:
        message += CRASH_AT.format(site=site)
    else:
        message += _raised_at(match, kind)
    if crash is not None:
        message, excerpt = _killed(event, crash, excerpt, local_of)
    else:
        message = _killed_by_signal(event) or message
        message += _whose_crash(match, crash_lines)
    message += _also_died(match, rows)
    message += _oom_kill_note(event, oom_kill)
    if test is not None and kind is not Kind.SCAN_INCOMPLETE:
        if handled:
            template = HANDLED_RERUN if event.test_rerun else _handled_words(event.test_ended)
        else:
            template = DURING
        message += template.format(test=_clip(test, MAX_FIELD_CHARS))
    if event.run_passed is not None:
        message += RUN_PASSED.format(verdict=_verdict_text(event.run_passed))
    elif event.passed_letter and test is None and not event.exit_path:
        message += LETTER_PASSED.format(line=event.passed_letter)
    if event.recovered is not None:
        restart, success = event.recovered
        message += RECOVERED.format(
            restart=_quote(restart),
            restart_where=_where(restart, match.path),
            where=_where(success, match.path),
        )
    if handled:
        severity = Severity.NOTICE
    repeats = event.repeats + told_repeats
    if repeats > 1:
        message += _repeated(repeats, event.told_by_ranks)
    if event.shutdown is not None and not handled:
        if demote and severity is Severity.ERROR:
            severity = Severity.WARNING
        if not demote:
            message += COLLATERAL_NO_ROOT.format(
                where=_where(event.shutdown, match.path), quote=_quote(event.shutdown)
            )
    if event.traceback is not None:
        who, tb = event.traceback
        exception = _exception_name(tb)
        if exception:
            message += ATTACHED.format(who=who, exception=_clip(exception, MAX_FIELD_CHARS))
        header = ATTACHED_HEADER.format(who=who, where=_where(tb))
        excerpt = f"{excerpt}\n{header}\n{tb.excerpt}" if excerpt else f"{header}\n{tb.excerpt}"
    if event.last_traceback is not None:
        note, told = _last_traceback_note(event.last_traceback, match.path)
        message += note
        excerpt = f"{excerpt}\n{told}"
    if rule.kind is Kind.TIMEOUT and event.verdict_before is not None:
        message += "; " + HANG_AFTER_VERDICT.format(verdict=_verdict_text(event.verdict_before))
    return Finding(
        kind=kind,
        rule=rule.id,
        severity=severity,
        path=match.path,
        line=_finding_line(match),
        message=_one_line(message),
        excerpt=excerpt,
        test=test,
    )


def _in_a_test(event: LogEvent, test: Optional[str], again: Sequence[LogEvent]) -> bool:
    """Whether ``event`` happened inside a test of the log's own run: in a test's inner run (pytester's,
    a subprocess's), on a test's lines, or told again by a test's failure ("t.py::test_x FAILED"; a module's
    "ERROR tests/t.py" is the log's own run failing to collect it)."""
    if event.inner or test is not None:
        return True
    return any(a.match.rule.kind is Kind.TEST_FAILURE and "::" in (a.match.groups.get("test") or "")
               for a in again)


def _finding_line(match: Match) -> int:
    """Where a finding points: an ``at_end`` block's last line when its end (the exception) is in the
    log; a block cut before it keeps its header, the only line that says what happened."""
    if match.rule.at_end and CUT_SHORT_GROUP not in match.groups.values():
        return match.end_line
    return match.line


def _with_groups_told(match: Match, again: Sequence[LogEvent]) -> Mapping[str, Optional[str]]:
    """``match``'s groups, with those it lacks taken from the lines of its own rule it tells again: a
    sanitizer report's opening line names the bug and the pid, its SUMMARY line where it happened."""
    groups = dict(match.groups)
    for other in again:
        if other.match.rule is match.rule:
            for name, value in other.match.groups.items():
                if value and not groups.get(name):
                    groups[name] = value
    return groups


def _told_again_by(
    match: Match,
    again: Sequence[LogEvent],
    excerpt: str,
    groups: Mapping[str, Optional[str]],
) -> Tuple[str, str, int]:
    """What the events ``match`` absorbed add: to its message, to ``excerpt`` their lines outside it,
    and how many of them said what was already said (a kernel's assertion printed by each of its
    threads), which count as repeats instead. ``groups``: the teller's, with what its own rule's lines
    told added (``_with_groups_told``); a line of its rule that adds nothing more is told in the excerpt."""
    message = ""
    own = format_message(match.rule.message, groups)
    said = {_clip(own, MAX_QUOTE_CHARS)}
    repeats = 0
    own_lines = 0
    more: List[int] = []  # lines of the teller's own rule past MAX_OWN_TOLD
    across = across_ranks_key(match)
    who = across_rank_of(match)
    ranks: Dict[str, int] = {}  # other ranks that told the same event (``across_ranks``) -> first line
    for other in again:
        if across is not None and other.match.rule is match.rule and across_ranks_key(other.match) == across:
            rank = across_rank_of(other.match)
            if rank is not None and rank != who:
                if rank not in ranks and len(ranks) < MAX_OWN_TOLD:
                    header = TOLD_AGAIN_HEADER.format(where=_where(other.match, match.path))
                    excerpt = f"{excerpt}\n{header}\n{other.match.excerpt}"
                ranks.setdefault(rank, other.match.line)
                continue
        told = _clip(format_message(other.match.rule.message, other.match.groups), MAX_QUOTE_CHARS)
        if told in said:
            repeats += other.repeats
            continue
        said.add(told)
        values = [value.strip() for value in other.match.groups.values() if value and value.strip()]
        within = match.line <= other.match.line and other.match.end_line <= match.end_line
        # Of its own rule, or a shorter reading of the teller's own lines (a terminate's first line read
        # as "its what() is not in the log" when the what() follows): nothing the teller does not say.
        restates = other.match.rule is match.rule or within
        # Or a line of the same kind that names nothing the teller does not (an NCCL watchdog timeout
        # and its "Timeout at NCCL work: 2" or blocking-wait line): the work listed once, not twice.
        same_kind = other.match.rule.kind == match.rule.kind
        shown = [other.match.groups.get(name) for name in message_fields(other.match.rule.message)]
        adds_nothing = (restates and all(v in own for v in values)) or (
            same_kind and all(_names_token(own, v.strip()) for v in shown if v and v.strip())
        )
        if not adds_nothing and other.match.rule is match.rule and other.match.path == match.path:
            own_lines += 1
            if own_lines > MAX_OWN_TOLD:  # a driver's fault logged once per SM: counted, not quoted
                more.append(other.match.line)
                continue
        if not adds_nothing:
            message += TOLD_AGAIN.format(message=told, where=_where(other.match, match.path))
        if other.match.line < match.line or other.match.end_line > match.end_line:
            header = TOLD_AGAIN_HEADER.format(where=_where(other.match, match.path))
            excerpt = f"{excerpt}\n{header}\n{other.match.excerpt}"
    if more:
        where = ("line " if len(more) == 1 else "lines ") + ", ".join(str(line) for line in sorted(more))
        message += MORE_OF_IT.format(count=len(more), where=_clip(where, MAX_FIELD_CHARS))
    if ranks:
        lines = sorted(ranks.values())
        where = ("line " if len(lines) == 1 else "lines ") + ", ".join(str(line) for line in lines)
        names = ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(sorted(ranks, key=int))
        message += OTHER_RANKS_TOLD.format(ranks=_clip(names, MAX_FIELD_CHARS),
                                           where=_clip(where, MAX_FIELD_CHARS))
    return message, excerpt, repeats


def _repeated(count: int, told_by_ranks: int) -> str:
    """A folded event's " (seen 3 times)", naming the ranks whose identical lines were folded into it when
    there were several (``LogEvent.told_by_ranks``): " (seen 3 times: ranks 3, 17, 40)", the lowest
    ``MAX_RANKS_NAMED`` and a count of the rest (" and 56 more")."""
    ranks: List[int] = []
    more = 0
    rank = 0
    bits = told_by_ranks
    while bits:
        if bits & 1:
            if len(ranks) < MAX_RANKS_NAMED:
                ranks.append(rank)
            else:
                more += 1
        bits >>= 1
        rank += 1
    if len(ranks) < 2:
        return REPEATED.format(count=count)
    names = "ranks " + ", ".join(str(r) for r in ranks) + (MORE_RANKS.format(count=more) if more else "")
    return REPEATED_BY_RANKS.format(count=count, ranks=names)


def _names_token(text: str, value: str) -> bool:
    """Whether ``value`` stands in ``text`` as a whole token ("2" in "SeqNum=2,", not in "SeqNum=25")."""
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w.])", text) is not None


def _whose_crash(match: Match, crash_lines: Sequence[LogEvent]) -> str:
    """Whose crash it was, when the line that tells it does not say and another line of it does:
    faulthandler's "Fatal Python error" names no process, torch spawn's "process 1 terminated with
    signal SIGABRT" and the shell's "line 3: 4242 Aborted" do (a rank or process first, else a pid)."""
    if identity_of(match, use_rank_prefix=True) is not None or pid_of(match) is not None:
        return ""
    lines = sorted(crash_lines, key=lambda event: event.match.seq)
    for event in lines:
        who = identity_of(event.match, use_rank_prefix=True)
        if who is not None:
            return WHOSE_CRASH.format(who=f"{who[0]} {who[1]}")
    pid = next((pid_of(event.match) for event in lines if pid_of(event.match) is not None), None)
    return WHOSE_CRASH.format(who=f"pid {pid}") if pid is not None else ""


def _raised_at(match: Match, kind: Kind) -> str:
    """Where a worker's own traceback that its failure's block holds says the user's code raised (torch
    spawn's "-- Process 1 terminated with the following error:" and the traceback after it): the worker,
    what it raised, and where, in one finding."""
    if kind is not Kind.WORKER_FAILURE or not match.rule.is_block or not _exception_name(match):
        return ""
    site = raise_site(match)
    return RAISED_AT.format(site=site) if site is not None else ""


def _also_died(match: Match, rows: Sequence[LogEvent]) -> str:
    """The other workers a launcher's report says died of the same signal as this root cause, which
    it tells (``same_event._same_signal_rows``): "pids 3437, 3438 died of it too (lines 1, 8)", or exited
    with its plain exit code (``same_event._same_code_rows``)."""
    rows = sorted(rows, key=lambda event: event.match.seq)
    if not rows:
        return ""
    pids = [pid_of(e.match) or "?" for e in rows]
    whom = ("pid " if len(pids) == 1 else "pids ") + ", ".join(pids)
    if all(e.match.path == match.path for e in rows):
        where = ("line " if len(rows) == 1 else "lines ") + ", ".join(str(e.match.line) for e in rows)
    else:
        where = ", ".join(_where(e.match, match.path) for e in rows)
    said = ALSO_DIED if exit_signal(match) is not None else ALSO_EXITED
    return said.format(whom=_clip(whom, MAX_FIELD_CHARS), where=_clip(where, MAX_FIELD_CHARS))


def _with_crash_lines(match: Match, crash_lines: Sequence[LogEvent], excerpt: str) -> str:
    """``excerpt`` with the other lines that told this crash (the shell's "Aborted" of its pid, the step's
    exit status) that lie outside it: the message says the crash once, the excerpt shows each layer."""
    for other in sorted(crash_lines, key=lambda event: event.match.seq):
        if match.line <= other.match.line and other.match.end_line <= match.end_line:
            continue
        if other.match.excerpt in excerpt:  # faulthandler's stack, already there as the crash's
            continue
        header = TOLD_AGAIN_HEADER.format(where=_where(other.match, match.path))
        excerpt = f"{excerpt}\n{header}\n{other.match.excerpt}"
    return excerpt


def _chained_from(match: Match, causes: Sequence[Tuple[LogEvent, str]], excerpt: str) -> Tuple[str, str]:
    """What the earlier exceptions of ``match``'s chained traceback add: to its message, how it came of each
    ("raised while handling", "raised from") and that exception as the log says it ("_queue.Empty"); to
    ``excerpt``, its lines."""
    message = ""
    for cause, how in causes:
        said = next((cause.match.groups[g] for g in EXCEPTION_GROUPS if cause.match.groups.get(g)), None)
        told = _clip((said or cause.match.text).strip(), MAX_QUOTE_CHARS)
        where = _where(cause.match, match.path)
        message += CHAINED.format(how=how, message=told, where=where)
        excerpt = f"{excerpt}\n{CHAINED_HEADER.format(how=how, where=where)}\n{cause.match.excerpt}"
    return message, excerpt


def _capped(log: LogFindings, catalogue: Catalogue) -> Optional[Finding]:
    """The note that some of a log's findings were dropped past the per-rule cap, as its rule says."""
    from .state import MAX_PER_RULE

    if SCAN_INCOMPLETE_RULE in catalogue.ignore_rules:
        return None
    count = sum(n for _, n in log.dropped)
    rules = ", ".join(rule_id for rule_id, _ in log.dropped)
    reason = CAPPED.format(count=count, rules=rules, cap=MAX_PER_RULE)
    rule = catalogue.guard_rule(SCAN_INCOMPLETE_RULE)  # always there: a default for a hand-built one
    severity = rule.severity or dict(catalogue.severity_overrides).get(SCAN_INCOMPLETE_RULE, Severity.WARNING)
    message = format_message(rule.message, {"reason": reason}) if rule.message else reason
    return Finding(Kind.SCAN_INCOMPLETE, SCAN_INCOMPLETE_RULE, severity, log.path, 0, _clip(message, 2000))


def _never_finished(
    log: LogFindings, catalogue: Catalogue, found: Sequence[Finding], one_run: Set[str]
) -> Optional[Finding]:
    """The test ``log`` shows starting and then nothing more of (or its run, when no test's name shows),
    when no error (or, for a run, no warning) says why it stopped.

    A run that exits 0 in the middle of a test (``os._exit(0)``), or whose crash report went to a stream
    the runner captured, leaves only the test's progress line, and that is no pass. Any error of the
    guard's (its hang or the command's exit status names the running test already), an error naming the
    test, or an error of another kind than a test's failure in the same run (``one_run``: the logs of
    one guarded command; a plain scan's logs are each a run) says why: a shell's "Killed" line can come
    before the test's line, which waited in a buffer."""
    running = log.unfinished
    test, line = (running.test, running.line) if running is not None else (None, log.open_run)
    if not line or TEST_NEVER_FINISHED_RULE in catalogue.ignore_rules:
        return None
    same_run = one_run if log.path in one_run else {log.path}
    # Without a test's name the log shows less of the run, a window of it perhaps: a warning of the run
    # (an xdist worker that went down) is reason enough to say nothing.
    least = Severity.ERROR if test is not None else Severity.WARNING
    for finding in found:
        if not finding.severity.at_least(least):
            continue
        if finding.line == 0 or (test is not None and finding.test == test):
            return None
        if finding.path in same_run and (finding.kind is not Kind.TEST_FAILURE or test is None):
            return None
    try:
        rule = catalogue.guard_rule(TEST_NEVER_FINISHED_RULE)
    except KeyError:  # a catalogue built by hand, without the entry
        return None
    message = format_message(rule.message, {"test": _clip(test, MAX_FIELD_CHARS) if test else None})
    return Finding(rule.kind, rule.id, _severity(rule), log.path, line, _one_line(message), test=test)


def _errors_at_end(
    ranked: List[Tuple[tuple, Finding, Optional[Match]]], kept: Sequence[LogFindings], catalogue: Catalogue
) -> None:
    """A plain scan: an ``error_at_end`` rule's lesser finding on its log's last word (``last_content``),
    in a log no error of which tells a failure, becomes an error: nothing came after the exception record
    the program logged, so it died there (an uncaught exception handed to a JSON log handler)."""
    at_end = {r.id for r in catalogue.rules if r.error_at_end}
    if not at_end:
        return
    ends = {log.path: log.last_content for log in kept if log.last_content}
    erred = {f.path for _, f, _ in ranked if f.severity is Severity.ERROR}
    for i, (key, finding, shutdown) in enumerate(ranked):
        if finding.rule in at_end and finding.path not in erred and finding.line == ends.get(finding.path):
            finding = dataclasses.replace(finding, severity=Severity.ERROR)
            ranked[i] = ((Severity.ERROR.rank,) + tuple(key[1:]), finding, shutdown)


PYTHON_TRACEBACK_RULE = "python-traceback"


def _died_in_traceback(log: LogFindings, catalogue: Catalogue, found: Sequence[Finding]) -> Optional[Finding]:
    """The uncaught exception a log ends in: its last Python traceback, when nothing that says anything
    comes after it (``LogFindings.last_content``), no error of the log already tells a failure, and no
    rule matched the traceback's lines (its grading stands: a DataLoader worker's exit is a warning)."""
    last = log.last_traceback
    headless = log.headless_traceback
    cut_headless = False
    if headless is not None and (last is None or last.end_line < headless[0]):
        # the log ends in frames and an exception line whose head was lost (clean.headless_traceback)
        rule = catalogue.scan_rule(PYTHON_TRACEBACK_RULE)
        if rule is not None:
            first, line, exception, excerpt = headless
            last = Match(rule, log.path, first, line, exception, excerpt, seq=-1, groups={"exc": exception})
            # frames logged at ERROR and cut before their exception line: they are the log's last words
            cut_headless = exception == CUT_SHORT_GROUP
    if last is None:
        return None
    if CUT_SHORT_GROUP in last.groups.values() and not cut_headless:
        # cut before its exception line: the end of the log when nothing after its head says anything
        if log.last_content >= last.line:
            return None
    elif not log.last_content or last.end_line < log.last_content:
        return None
    if TRACEBACK_ENDS_LOG_RULE in catalogue.ignore_rules:
        return None
    for finding in found:
        if finding.path != log.path:
            continue
        # An error already tells the failure; a rule that matched the traceback's own lines graded it.
        if finding.severity is Severity.ERROR or last.line <= finding.line <= last.end_line:
            return None
    try:
        rule = catalogue.guard_rule(TRACEBACK_ENDS_LOG_RULE)
    except KeyError:  # a catalogue built by hand, without the entry
        return None
    exception = _clip(_exception_name(last) or MISSING_FIELD, MAX_FIELD_CHARS)
    site = raise_site(last)
    message = format_message(rule.message, {"exception": exception, "site": site})
    return Finding(rule.kind, rule.id, _severity(rule), log.path, last.end_line, _one_line(message),
                   excerpt=last.excerpt)


def _ranks_raised(
    log: LogFindings,
    catalogue: Catalogue,
    roots: Set[Optional[Tuple[str, str]]],
    lost_peer: Set[Optional[Tuple[str, str]]],
    told: Set[Tuple[int, int]],
    index: int,
    root_pids: Optional[Dict[Tuple[str, str], str]] = None,
) -> List[Tuple[Finding, Match]]:
    """Each rank's own uncaught exception that nothing else tells, in a log whose launcher names another
    rank as the root cause of a failed job (``roots``: whom its root-cause errors name): torchrun names
    one root cause, and stops every other rank with its closing signal, so a rank that raised on its own
    while another crashed shows only as a SIGTERM row of the report, its "[rank0]: ValueError" nowhere.
    A rank's traceback is told when a rule matched its lines (the NCCL error, the peer's lost connection
    it ends in: their grading stands) or the failure of an error attached it; one printed after a
    shutdown marker (the SignalException of the launcher's own SIGTERM) or in a test that did not fail
    is not the rank's own failure, nor one the rank printed on after (``LogFindings.ranks_gone_on``: it
    caught the exception and logged it). With no launcher's report, a rank whose error is its lost peer
    (``lost_peer``, gloo's "Connection closed by peer") says alike that another rank died: that rank's own
    exception is the failure (Lightning's ddp launcher prints no report). The root cause's own rank is
    told by it, unless torchrun's line that the rank's worker failed after this traceback names another
    pid than the root cause (``root_pids``): an earlier attempt's failure, then a restart that failed
    otherwise (its gloo init)."""
    if not log.rank_tracebacks or not (roots or lost_peer) or RANK_RAISED_RULE in catalogue.ignore_rules:
        return []
    try:
        rule = catalogue.guard_rule(RANK_RAISED_RULE)
    except KeyError:  # a catalogue built by hand, without the entry
        return []
    shutdowns = [e.shutdown.line for e in log.events if e.shutdown is not None]
    first_shutdown = min(shutdowns) if shutdowns else None
    # A lost peer's exception is that rank's view of another's death even where its line was folded into
    # another rank's identical one ("Read error [127.0.0.1]:29099: Connection reset by peer" from two ranks).
    peer_views = [r.pattern_re for r in catalogue.rules if r.peer_lost and r.pattern_re is not None]
    out: List[Tuple[Finding, Match]] = []
    for tb in log.rank_tracebacks:
        exception = _exception_name(tb)
        if exception and any(view.search(exception) for view in peer_views):
            continue
        who = identity_of(tb, use_rank_prefix=True)
        if not exception or who is None or who[0] != "rank" or who in lost_peer or (index, tb.line) in told:
            continue
        attempt = _attempt_failed(log, tb)
        if who in roots and not _an_earlier_attempt(attempt, (root_pids or {}).get(who)):
            continue
        if first_shutdown is not None and tb.end_line >= first_shutdown:
            continue
        if tb.test is not None and (tb.test not in log.failed or log.rerun_passed
                                    or _rerun_passed(tb.test, log.rerun_passed_tests)):
            continue
        if (int(who[1]), tb.end_line) in log.ranks_gone_on:  # caught and logged: the rank printed on
            continue
        if any(tb.line <= e.match.line <= tb.end_line or e.match.line <= tb.line <= e.match.end_line
               for e in log.events):
            continue
        site = raise_site(tb)
        message = format_message(rule.message, {
            "rank": who[1], "exception": _clip(exception, MAX_FIELD_CHARS), "site": site,
            "pid": pid_of(attempt.match) if attempt is not None else dict(log.rank_pids).get(who[1]),
            "beside": BESIDE_THE_ROOT if roots else None,
        })
        finding = Finding(rule.kind, rule.id, _severity(rule), log.path, tb.end_line, _one_line(message),
                          excerpt=tb.excerpt, test=tb.test)
        out.append((finding, tb))
    return out


def _one_per_raise(
    raised: Sequence[Tuple[Finding, Match]],
    root_raises: Sequence[Tuple[int, Match]],
    ranked: List[Tuple[tuple, Optional[Finding], Optional[Match]]],
) -> List[Tuple[Finding, Match]]:
    """Ranks that raised the same exception at the same line (``same_event.same_raise``) died of one event:
    every rank of a job runs one program, and a bad batch or a shape bug raises on all of them at once.
    A rank's raise of the root cause's (torchrun's report: "rank 0 raised AssertionError: ...") is told
    by the root cause, and the ranks' raises of another event by the first of them: "; ranks 1, 2, 3
    raised it too (lines 23, 32, 50)". Each rank's own exception of another kind stays its own finding.
    ``ranked`` gets the root causes' new messages; the raises left are returned."""
    joined: Dict[int, List[Match]] = {}  # ranked index of a root cause -> the ranks' tracebacks it tells
    firsts: List[Tuple[Finding, Match, List[Match]]] = []
    for finding, tb in sorted(raised, key=lambda item: item[1].seq):
        if finding.severity is not Severity.ERROR:
            firsts.append((finding, tb, []))
            continue
        root = next((position for position, root_tb in root_raises if same_raise(root_tb, tb)), None)
        if root is not None:
            joined.setdefault(root, []).append(tb)
            continue
        first = next((item for item in firsts
                      if item[0].severity is Severity.ERROR and same_raise(item[1], tb)), None)
        if first is not None:
            first[2].append(tb)
        else:
            firsts.append((finding, tb, []))
    for position, tbs in joined.items():
        key, finding, shutdown = ranked[position]
        if finding is not None:
            message = _one_line(finding.message + _also_raised(tbs, finding.path))
            ranked[position] = (key, dataclasses.replace(finding, message=message), shutdown)
    out = []
    for finding, tb, tbs in firsts:
        if tbs:
            message = _one_line(finding.message + _also_raised(tbs, finding.path))
            finding = dataclasses.replace(finding, message=message)
        out.append((finding, tb))
    return out


def _also_raised(tracebacks: Sequence[Match], path: str) -> str:
    """The other ranks that raised an exception a finding tells, each with its exception's line in the
    same order: "; ranks 1, 2, 3 raised it too (lines 23, 32, 50)"; "" for none."""
    if not tracebacks:
        return ""
    by_rank = sorted(((int(who[1]), tb) for who, tb in ((identity_of(tb, use_rank_prefix=True), tb)
                                                        for tb in tracebacks) if who is not None),
                     key=lambda item: (item[0], item[1].end_line))
    ranks = list(dict.fromkeys(str(rank) for rank, _ in by_rank))
    whom = ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(ranks)
    tracebacks = [tb for _, tb in by_rank]
    if all(tb.path == path for tb in tracebacks):
        where = ("line " if len(tracebacks) == 1 else "lines ") + ", ".join(str(tb.end_line)
                                                                          for tb in tracebacks)
    else:
        where = ", ".join(_where(tb, path) for tb in tracebacks)
    return ALSO_RAISED.format(whom=_clip(whom, MAX_FIELD_CHARS), where=_clip(where, MAX_FIELD_CHARS))


def _an_earlier_attempt(attempt: Optional[LogEvent], root_pid: Optional[str]) -> bool:
    """Whether torchrun's line that a rank's worker failed names another pid than the report's root cause
    of that rank: the report is of a later attempt."""
    pid = pid_of(attempt.match) if attempt is not None else None
    return pid is not None and root_pid is not None and pid != root_pid


def _local_rank(log: LogFindings, event: LogEvent) -> Optional[str]:
    """The rank a torchrun line that names a local rank only ("failed (exitcode: 1) local_rank: 3 (pid:
    1524)") is of, by the rows of the launcher's report ("rank : 3 (local_rank: 3)"); None when no row or
    several (nodes) give that local rank."""
    local = (event.match.groups.get("local_rank") or "").strip()
    ranks = [rank for rank, row_local in log.rank_locals if row_local == local] if local else []
    return ranks[0] if len(ranks) == 1 else None


def _attempt_failed(log: LogFindings, tb: Match) -> Optional[LogEvent]:
    """torchrun's line that the worker of a rank's own traceback failed ("failed (exitcode: 1) local_rank:
    3 (pid: 1524)"), the first after it: the pid of that attempt's worker, where a restart makes the
    report's row (the last attempt's) name another."""
    who = identity_of(tb, use_rank_prefix=True)
    if who is None or who[0] != "rank":
        return None
    for event in log.events:
        if event.match.line > tb.end_line and pid_of(event.match) is not None \
                and event.shutdown is None and _local_rank(log, event) == who[1]:
            return event
    return None


def _with_attempts_line(finding: Finding, attempt: Optional[LogEvent],
                        placed: Dict[int, Tuple[int, int, LogEvent]],
                        ranked: List[Tuple[tuple, Optional[Finding], Optional[Match]]]) -> Finding:
    """A rank's own failure with torchrun's line that its worker failed, which tells it again: that
    line's finding goes, its excerpt is added."""
    where = placed.get(id(attempt)) if attempt is not None else None
    if where is None or ranked[where[0]][1] is None or finding.severity is not Severity.ERROR:
        return finding
    key, told, _ = ranked[where[0]]
    ranked[where[0]] = (key, None, None)
    return dataclasses.replace(finding, excerpt=f"{finding.excerpt}\n{told.excerpt}")


def _fold_earlier_attempts(kept: Sequence[LogFindings], placed: Dict[int, Tuple[int, int, LogEvent]],
                           ranked: List[Tuple[tuple, Optional[Finding], Optional[Match]]]) -> None:
    """torchrun restarted its workers and the last attempt failed the same way: an earlier attempt's
    line that a rank's worker failed ("failed (exitcode: 1) local_rank: 1 (pid: 32339)") names another
    pid than the report's root cause of that rank (the last attempt's), with the same exit code. One
    failure, told again: the root cause takes that line's excerpt, its finding goes."""
    roots = {}
    for position, index, event in placed.values():
        finding = ranked[position][1]
        if finding is not None and event.match.rule.root_cause and finding.severity is Severity.ERROR \
                and ranked[position][2] is None:
            who = identity_of(event.match, use_rank_prefix=True)
            if who is not None and who[0] == "rank":
                roots.setdefault((index, who[1]), (position, event))
    for position, index, event in placed.values():
        finding = ranked[position][1]
        if finding is None or event.match.rule.root_cause or finding.severity is not Severity.ERROR \
                or ranked[position][2] is not None:
            continue
        rank = _local_rank(kept[index], event)
        root = roots.get((index, rank)) if rank is not None else None
        if root is None:
            continue
        root_position, root_event = root
        pid, root_pid = pid_of(event.match), pid_of(root_event.match)
        code = (event.match.groups.get("exitcode") or "").strip()
        if pid is None or pid == root_pid or not code \
                or code != (root_event.match.groups.get("exitcode") or "").strip() \
                or event.match.line > root_event.match.line:
            continue
        key, root_finding, shutdown = ranked[root_position]
        ranked[root_position] = (key, dataclasses.replace(
            root_finding, excerpt=f"{root_finding.excerpt}\n{finding.excerpt}"), shutdown)
        ranked[position] = (ranked[position][0], None, None)


def _finding_where(finding: Finding, here: str) -> str:
    if not finding.line:
        return finding.path or "the guard"
    return f"line {finding.line}" if finding.path == here else f"{finding.path}:{finding.line}"


def _where(match: Match, here: Optional[str] = None) -> str:
    return f"line {match.line}" if match.path == here else f"{match.path}:{match.line}"


def _quote(marker: Match) -> str:
    """What a marker says: its rule's message when it has one, else its own text, quoted."""
    if marker.rule.message:
        return _clip(format_message(marker.rule.message, marker.groups), MAX_QUOTE_CHARS)
    return '"' + _clip(marker.text.strip(), MAX_QUOTE_CHARS) + '"'


def _clip(text: str, limit: int) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _one_line(text: str) -> str:
    return " ".join(text.split()) if ("\n" in text or "\r" in text) else text



# -- one event, one finding ------------------------------------------------------------------------


def _killed(event: LogEvent, crash: Tuple[str, LogEvent], excerpt: str,
            local_of: Optional[str] = None) -> Tuple[str, str]:
    """The one sentence for a worker killed by a crash, and the excerpt with the crash attached. A line
    that names only its local rank ("failed (exitcode: -11) local_rank: 2 (pid: 1263)", an attempt that
    torchrun then restarted) is of ``local_of``, the rank the report's row of that local rank gives."""
    signame, crash_event = crash
    identity = identity_of(event.match, use_rank_prefix=True)
    if identity is not None and identity[0] == "rank":
        who = f"rank {identity[1]}"
    else:
        who = f"rank {local_of}" if local_of is not None else "worker"
    told = format_message(crash_event.match.rule.message, crash_event.match.groups)
    site = crash_site(crash_event.stack) if crash_event.stack is not None else None
    if site is not None:
        told += CRASH_AT.format(site=site)
    message = KILLED_BY_CRASH.format(who=who, pid=pid_of(event.match), signal=signame, crash=told)
    header = CRASH_HEADER.format(where=_where(crash_event.match, event.match.path))
    excerpt = f"{excerpt}\n{header}\n{_with_stack(crash_event.match.excerpt, crash_event)}"
    return message, excerpt


def _killed_by_signal(event: LogEvent) -> Optional[str]:
    """The one sentence for the root cause of a launcher's report (torchrun's "Root Cause") that says its
    worker died of a signal that no crash line of the log explains: the rank, the pid and the signal by
    name. The same for another row of the report that names its rank and followed no shutdown (a rank that
    died of its own signal in the same monitor interval as the root cause). None for any other event."""
    match = event.match
    pid = pid_of(match)
    row = event.shutdown is None and match.groups.get("rank") is not None
    if pid is None or not (match.rule.root_cause or row) or match.rule.kind not in WORKER_KINDS:
        return None
    signame = exit_signal(match)
    if signame is None:
        return None
    return KILLED.format(who=_who_of(match), pid=pid, signal=signame)


def _root_rank(match: Match, told: str) -> str:
    """For the root cause of a launcher's report whose worker exited with a plain code ("exitcode  : 3
    (pid: 16613)"), the rank of its row when nothing told names it: "rank 1" beside the pid. A signal's
    death is told with its rank by _killed_by_signal."""
    if not match.rule.root_cause or match.rule.kind not in WORKER_KINDS or pid_of(match) is None \
            or exit_signal(match) is not None:
        return ""
    who = _who_of(match)
    if who == "worker" or re.search(rf"\b{who}\b", told):
        return ""
    return ROOT_RANK.format(who=who)


def _oom_kill_note(event: LogEvent, oom_kill: Optional[LogEvent]) -> str:
    """For a worker's death by SIGKILL, the OOM killer's event when its log shows one, else nothing:
    SIGKILL leaves no trace of its own (the OOM killer, a scheduler, a user's kill -9), so the log alone
    says whether memory ran out."""
    match = event.match
    if oom_kill is None or match.rule.kind not in WORKER_KINDS or exit_signal(match) != "SIGKILL":
        return ""
    told = format_message(oom_kill.match.rule.message, oom_kill.match.groups)
    return KILLED_OOM.format(message=_clip(told, MAX_QUOTE_CHARS), where=_where(oom_kill.match, match.path))


def _who_of(match: Match) -> str:
    """"rank N" when ``match`` names its rank (a group, a ``[rankN]:`` prefix, the report's ``rank : N``
    row, also in a report flattened onto one line), else "worker"."""
    identity = identity_of(match, use_rank_prefix=True)
    if identity is not None and identity[0] == "rank":
        return f"rank {identity[1]}"
    found = REPORT_RANK.search(match.text)
    return f"rank {found.group(1)}" if found else "worker"


def _with_stack(excerpt: str, event: LogEvent) -> str:
    if event.stack is None:
        return excerpt
    lines = event.stack.excerpt.split("\n")
    if len(lines) > 1 and next(stack_frames(lines[-1:]), None) is None:
        lines.pop()  # the line that ended the stack is the log's next line, not part of the crash
    stack = "\n".join(lines)
    return f"{excerpt}\n{stack}" if excerpt else stack

"""One event, one finding: which of a log's events tell another again, and what a match says of the death
it tells (its signal, pid, device, crash site).

A crash is often told several times: torchrun's Root Cause row, the worker's faulthandler stack, the
shell's "Segmentation fault (core dumped)", GitHub's exit line; a C++ terminate repeats the NCCL error
before it; a thread's report ends in the exception another rule knows. ``events_told_again`` and
``one_event_one_finding`` find, per log, the events another finding tells, so ``rank`` makes one finding
of them (the one that says most, with what the others add); the wording of that finding is ``rank``'s.
A chained traceback is one death too: ``ChainReader`` finds its lines as the log is read, and
``events_chained`` makes the latest finding on them tell the earlier ones.
"""

from __future__ import annotations

import dataclasses
import re
import signal
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..exits import windows_status_name
from ..model import Kind, Severity
from ..rules.model import Rule
from .match import Match
from .state import (
    BOOTSTRAP_PATHS,
    TRACEBACK_MARKER,
    Identity,
    LogEvent,
    LogFindings,
    identity_of,
    kernel_apart,
    own_frame,
)

EXCEPTION_GROUPS = ("exception", "exc")
_DIGITS = re.compile(r"\d+")
# Groups that, named by two matches with different values, make them two events: the GPU channel (context)
# and the process an NVIDIA driver's line names (its pid, kept apart from a worker's ``pid`` group)
_APART_GROUPS = ("channel", "client")
MERGE_KINDS = (Kind.CRASH, Kind.SIGNAL_EXIT, Kind.WORKER_FAILURE)
WORKER_KINDS = (Kind.SIGNAL_EXIT, Kind.WORKER_FAILURE)
_EXIT_GROUPS = ("exitcode", "exit_code", "code", "returncode", "status", "signal", "what")
_SIGNAL_WORDS = {
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "abort trap": "SIGABRT",
    "bus error": "SIGBUS",
    "illegal instruction": "SIGILL",
    "floating point exception": "SIGFPE",
    "trace/breakpoint trap": "SIGTRAP",
    "killed": "SIGKILL",
    "terminated": "SIGTERM",
    # zsh's own words for the signals whose default action ends a process (Src/signames2.awk; it reports
    # every death by signal but SIGINT and SIGPIPE, Src/jobs.c printjob): "zsh: abort  python x.py"
    "abort": "SIGABRT",
    "alarm": "SIGALRM",
    "cpu limit exceeded": "SIGXCPU",
    "emt instruction": "SIGEMT",
    "file size limit exceeded": "SIGXFSZ",
    "hangup": "SIGHUP",
    "illegal hardware instruction": "SIGILL",
    "invalid system call": "SIGSYS",
    "iot instruction": "SIGABRT",  # SIGIOT is SIGABRT on Linux and macOS; zsh on Linux keeps IOT's name
    "pollable event occurred": "SIGPOLL",
    "power fail": "SIGPWR",
    "profile signal": "SIGPROF",
    "quit": "SIGQUIT",
    "resource lost": "SIGLOST",
    "trace trap": "SIGTRAP",
    "user-defined signal 1": "SIGUSR1",
    "user-defined signal 2": "SIGUSR2",
    "virtual time alarm": "SIGVTALRM",
    # bash prints strsignal(), which glibc translates: zh_CN's words (crash-core-dumped reads them)
    "已放弃": "SIGABRT",
    "段错误": "SIGSEGV",
    "已杀死": "SIGKILL",
    "已终止": "SIGTERM",
    "总线错误": "SIGBUS",
    "非法指令": "SIGILL",
    "浮点数例外": "SIGFPE",
    # faulthandler's "Windows fatal exception: access violation", as the exit status names it
    "access violation": "STATUS_ACCESS_VIOLATION",
    "stack overflow": "STATUS_STACK_OVERFLOW",
    "int divide by zero": "STATUS_INTEGER_DIVIDE_BY_ZERO",
    "float divide by zero": "STATUS_FLOAT_DIVIDE_BY_ZERO",
    "float overflow": "STATUS_FLOAT_OVERFLOW",
    "in page error": "STATUS_IN_PAGE_ERROR",
}
# Frames of the interpreter and of installed packages are where a crash surfaces, not where it was
# caused; the crash site is the innermost frame outside them.
Item = Tuple[int, LogFindings, LogEvent, bool, Optional[str]]
_REPORT_LINES = 40  # a ChildFailedError report's header is at most this far above its Root Cause
_CHILD_FAILED = "ChildFailedError"
_REPORT_ROWS_LINES = 512  # a report's Failures rows come before its Root Cause, some 7 lines a rank
_ANY_DISTANCE = 1 << 30  # lines: asks only the test, rank and pid
CHAIN_MARKER = "exception-chained"
# CPython prints a chain's separator one blank line after the exception's message (which may run over
# several lines: CUDA's, NCCL's) and the next "Traceback (most recent call last):" one blank line after it.
_MESSAGE_LINES = 64
_SEPARATOR_GAP = 2
MAX_CHAINS = 4096  # a log keeps its first chains; past these, chained tracebacks are read part by part
# A chain keeps its first separators: a log of one endless chain must not cost the square of its length.
MAX_CHAIN_LINKS = 64
# The separator's words, as the finding says how the later exception came from the earlier one.
CONTEXT_WORDS = "raised while handling"
CAUSE_WORDS = "raised from"
# A logger's line and the traceback it prints (``logger.exception``: the message, then "Traceback" on the
# next line; other processes' lines may come inside the traceback, as vLLM's TP workers' do, not before it).
_LOGGED_GAP = 1
_LOGGED_HEADS = 16  # the latest single-line matches a traceback may be logged after
MAX_LOGGED = 4096  # a log keeps its first logged tracebacks, as its first chains


@dataclasses.dataclass(frozen=True)
class Chain:
    """The lines of one chained traceback, from the first part's "Traceback" line to the last part's
    exception, and each separator's line with the words that say how the next part came of it."""

    first: int
    last: int
    rank: Optional[int]
    links: Tuple[Tuple[int, str], ...]

    def words_for(self, line: int) -> str:
        """How the chain's last exception came of what was raised at ``line``: the first separator after it
        ("The above exception was the direct cause": raise ... from; "During handling": in an except)."""
        how = next((how for at, how in self.links if at > line), self.links[-1][1])
        return CAUSE_WORDS if how.startswith("The above") else CONTEXT_WORDS


@dataclasses.dataclass(frozen=True)
class LogFindingsWithChains(LogFindings):
    """A log's findings and the chained tracebacks it printed (``ChainReader``)."""

    chains: Tuple[Chain, ...] = ()
    # (a logged line's first line, the last line of the traceback logged with it, its rank prefix)
    logged: Tuple[Tuple[int, int, Optional[int]], ...] = ()


class ChainReader:
    """Reads a log's matches in order and keeps its chained tracebacks: a traceback (``python-traceback``),
    the separator right after its exception (``python-exception-chained``), the next traceback right after
    that, for as many parts as the chain has. Two tracebacks without a separator are two deaths."""

    def __init__(self) -> None:
        self.chains: List[Chain] = []
        self._traceback: Optional[Match] = None  # the latest traceback, while a separator may follow it
        self._separator: Optional[Match] = None  # the separator after it, while its next part may come
        self._growing: Optional[Chain] = None  # the chain that the latest traceback ends
        self.logged: List[Tuple[int, int, Optional[int]]] = []
        self._heads: List[Match] = []  # the latest single-line matches, a traceback may be logged after one

    def feed(self, match: Match) -> None:
        """Take the log's next match (any rule; line order)."""
        marker = match.rule.marker
        if marker == TRACEBACK_MARKER:
            self._part(match)
            self._logged(match)
        elif marker == CHAIN_MARKER:
            tb = self._traceback
            near = tb is not None and tb.rank == match.rank and 0 < match.line - tb.end_line <= _MESSAGE_LINES
            self._separator = match if near else None
        if not match.rule.is_block and marker is None:
            self._heads.append(match)
            if len(self._heads) > _LOGGED_HEADS:
                del self._heads[0]

    def _logged(self, traceback: Match) -> None:
        """Keep a traceback that a matched line logged (its line, then "Traceback" on the next): what the
        traceback ends in is that line's event however long the traceback runs."""
        head = next((
            head for head in reversed(self._heads)
            if head.rank == traceback.rank and 0 < traceback.line - head.end_line <= _LOGGED_GAP
        ), None)
        if head is not None and len(self.logged) < MAX_LOGGED:
            self.logged.append((head.line, traceback.end_line, traceback.rank))

    def _part(self, traceback: Match) -> None:
        previous, separator = self._traceback, self._separator
        self._traceback, self._separator = traceback, None
        chained = (
            previous is not None and separator is not None and separator.rank == traceback.rank
            and 0 < traceback.line - separator.line <= _SEPARATOR_GAP
        )
        if not chained:
            self._growing = None
            return
        link = ((separator.line, separator.groups.get("how") or ""),)
        growing = self._growing
        if growing is not None and growing.last == previous.end_line:
            links = growing.links if len(growing.links) >= MAX_CHAIN_LINKS else growing.links + link
            chain = Chain(growing.first, traceback.end_line, traceback.rank, links)
            self.chains[-1] = chain
        elif len(self.chains) < MAX_CHAINS:
            chain = Chain(previous.line, traceback.end_line, traceback.rank, link)
            self.chains.append(chain)
        else:
            chain = None
        self._growing = chain

    def findings(self, result: LogFindings) -> LogFindings:
        """``result`` with the chains read (unchanged when there are none)."""
        if not self.chains and not self.logged:
            return result
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
        return LogFindingsWithChains(**fields, chains=tuple(self.chains), logged=tuple(self.logged))


class Chained:
    """What ``events_chained`` found. This and ``ToldAgain`` and ``Merged`` are plain classes: made once
    per report, never compared or copied, where a dataclass's generated methods cost every run's
    start-up (perf22)."""

    __slots__ = ("absorbed", "causes")

    def __init__(self, absorbed: Set[int], causes: Dict[int, List[Tuple[LogEvent, str]]]) -> None:
        self.absorbed = absorbed  # id() of events on a chain's lines that a later one tells
        self.causes = causes  # id() of the teller -> (event it tells, how it came of it)


def events_chained(items: Sequence[Item]) -> Chained:
    """Per chained traceback of each log: the latest event on its lines (the exception the process died
    of) tells the earlier ones (what it was handling, or raised from). An event on a chain's lines is one
    whose lines meet them (a worker's report that ends in the chain's first exception too), of the chain's
    rank prefix, handled alike."""
    absorbed: Set[int] = set()
    causes: Dict[int, List[Tuple[LogEvent, str]]] = {}
    by_log: Dict[int, List[Item]] = {}
    for item in items:
        by_log.setdefault(item[0], []).append(item)
    for log_items in by_log.values():
        chains = getattr(log_items[0][1], "chains", ())
        for chain in chains:
            on_it = [
                item for item in log_items
                if item[2].match.line <= chain.last and item[2].match.end_line >= chain.first
                and item[2].match.rank == chain.rank
            ]
            if len(on_it) < 2:
                continue
            teller = max(on_it, key=lambda it: (it[2].match.line, it[2].match.seq))
            told = [
                it for it in on_it if it is not teller and it[3] == teller[3] and id(it[2]) not in absorbed
            ]
            for item in sorted(told, key=lambda it: it[2].match.seq):
                absorbed.add(id(item[2]))
                causes.setdefault(id(teller[2]), []).append((item[2], chain.words_for(item[2].match.line)))
    return Chained(absorbed, causes)


class ToldAgain:
    """What ``events_told_again`` found (a plain class, as ``Chained``)."""

    __slots__ = ("absorbed", "told")

    def __init__(self, absorbed: Set[int], told: Dict[int, List[LogEvent]]) -> None:
        self.absorbed = absorbed  # id() of events another rule's finding tells
        self.told = told  # id() of the telling event -> the events it absorbed


def events_told_again(items: Sequence[Item]) -> ToldAgain:
    """Events that a nearby match of a rule naming them in ``same_event_as`` tells again (a C++
    terminate whose what() is the NCCL watchdog's message): that rule's finding absorbs them. A rule
    may name itself (SLURM's JOB and STEP lines of one cancel); then the earlier match tells. A
    traceback's report that another rule's match ends (``_ended_by``) is told by that match alike."""
    absorbed: Set[int] = set()
    told: Dict[int, List[LogEvent]] = {}
    by_log: Dict[int, Dict[str, List[Item]]] = {}
    for item in items:
        by_log.setdefault(item[0], {}).setdefault(item[2].match.rule.id, []).append(item)
    for by_rule in by_log.values():
        in_order = sorted((it for group in by_rule.values() for it in group), key=lambda it: it[2].match.seq)
        ends = _ended_by(in_order)
        mates = _line_mates(in_order)
        for item in in_order:
            rule = item[2].match.rule
            raised = _raised_in_its_traceback(item, in_order)
            if id(item[2]) in absorbed or not (rule.same_event_as or id(item[2]) in ends or raised):
                continue
            named = [
                (other, _lines_apart(rule, item, other))
                for name in rule.same_event_as
                for other in by_rule.get(name, ())
            ]
            ended = ends.get(id(item[2]), [])
            named += ended
            # A report this very line ends is its event whatever each names: the exception a thread died
            # of may name a rank ("NCCL communicator was aborted on rank 1") where the report names a thread.
            # So is the exception the worker's own attached traceback ends in, whatever pid it names
            # ("DataLoader worker (pid 2920) is killed by signal", raised in rank 0, pid 2855).
            for linked, _ in [*ended, *raised, *_chained(item, named, absorbed)]:
                if id(linked[2]) in absorbed:  # a report an earlier link ended, already told
                    continue
                # The matches on its line that are one event with it go with it (``_line_mates``).
                for other in _with_line_mates(linked, mates, rule.id):
                    if other is item or id(other[2]) in absorbed:
                        continue
                    absorbed.add(id(other[2]))
                    # A teller told again tells nothing of its own: what it absorbed moves along (a Ray
                    # death whose line a terminal cut, then the retry that handled it), and so do the
                    # worker reports it ended (rank 0's monitored_barrier error, which mp.spawn's report
                    # of process 0 ends in, told again by rank 0's first log line of it).
                    inherited = told.pop(id(other[2]), [])
                    inherited += [
                        report[2] for report, _ in ends.get(id(other[2]), ())
                        if id(report[2]) not in absorbed and report is not item
                    ]
                    absorbed.update(id(event) for event in inherited)
                    told.setdefault(id(item[2]), []).extend([other[2], *inherited])
    return ToldAgain(absorbed, told)


def _line_mates(items: Sequence[Item]) -> Dict[int, List[Item]]:
    """id() of an event -> the other events on its one line that are one event with it: single-line
    matches, of one test, rank and pid, of rules one of which names the other in ``same_event_as``. Such a
    line tells one event in the words of two rules ("XlaRuntimeError: INTERNAL: CUDA error: Failed to end
    stream capture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: ...": the XLA status, the CUDA error it quotes
    and its enum), so a match that tells one of them tells them all: else the others stay findings of
    their own (google-deepmind/mujoco_warp#350: five errors for one failed capture). Two rules that name
    neither one another (a pytest summary line's test outcome and its exception) stay two findings."""
    by_line: Dict[Tuple[int, int], List[Item]] = {}
    for item in items:
        match = item[2].match
        if not match.rule.is_block and match.line == match.end_line:
            by_line.setdefault((item[0], match.line), []).append(item)
    mates: Dict[int, List[Item]] = {}
    for on_line in by_line.values():
        if len(on_line) < 2:
            continue
        for item in on_line:
            rule = item[2].match.rule
            for other in on_line:
                other_rule = other[2].match.rule
                named = other_rule.id in rule.same_event_as or rule.id in other_rule.same_event_as
                if other is not item and named and _same_event(item, other, 0):
                    mates.setdefault(id(item[2]), []).append(other)
    return mates


def _with_line_mates(item: Item, mates: Mapping[int, Sequence[Item]], teller: str) -> List[Item]:
    """``item`` and, in turn, every match its line's mates reach (``_line_mates``), but for a mate whose
    rule names the teller's (rule id ``teller``) in its own ``same_event_as``: that one tells the teller
    in its turn ("CUDA error: 35 (0x23) cudaErrorInsufficientDriver : ..." is cuda-driver-too-old's, which
    tells the cuda-error and the enum on its line), not the other way round."""
    found = [item]
    for one in found:
        found.extend(
            other for other in mates.get(id(one[2]), ())
            if teller not in other[2].match.rule.same_event_as and all(other is not f for f in found)
        )
    return found


def events_across_ranks(items: Sequence[Item], told: Dict[int, List[LogEvent]]) -> ToldAgain:
    """Per log and test, the events of an ``across_ranks`` rule that another rank's earlier match of it
    tells: each rank waiting on a collective that never finished times out on it ("[Rank 2] ... WorkNCCL(
    SeqNum=48490, OpType=ALLREDUCE, ...)" and rank 7's, https://github.com/huggingface/accelerate/issues/2174),
    one hung collective. The first rank's event tells the others, with what they told again (``told``,
    the C++ terminate each rank's what() repeats): the result's ``told`` holds only what was added.
    Then the collectives of one hang (``_one_sweep``): the first of them tells the rest."""
    absorbed: Set[int] = set()
    added: Dict[int, List[LogEvent]] = {}
    first: Dict[tuple, Item] = {}
    ordered = sorted(
        (it for it in items if it[2].match.rule.across_ranks), key=lambda it: (it[0], it[2].match.seq)
    )
    for item in ordered:
        match = item[2].match
        key = across_ranks_key(match)
        who = across_rank_of(match)
        if key is None or who is None:
            continue
        key = (item[0], item[4], *key)
        teller = first.setdefault(key, item)
        if teller is item or across_rank_of(teller[2].match) == who:
            continue  # the first rank's own line (fold_groups folds its repeats) or another of its works
        absorbed.add(id(item[2]))
        added.setdefault(id(teller[2]), []).extend([item[2], *told.get(id(item[2]), ())])
    _one_sweep(ordered, told, absorbed, added)
    return ToldAgain(absorbed, added)


def _one_sweep(
    ordered: Sequence[Item],
    told: Dict[int, List[LogEvent]],
    absorbed: Set[int],
    added: Dict[int, List[LogEvent]],
) -> None:
    """Fold into ``absorbed`` and ``added`` the collectives that timed out in one hang: the watchdog of each
    rank reports every work of it past the timeout, all in the same seconds, so a job stuck once shows
    several works, of one rank or of several ("[Rank 0] ... SeqNum=96120", "SeqNum=96117", "SeqNum=96125"
    and "[Rank 7] ... SeqNum=64088", all running for 25625 s: https://github.com/pytorch/pytorch/issues/118369;
    rank 7 at a BROADCAST where rank 3 waits in an ALLREDUCE of the same number: NVIDIA/nccl#1409). Lines of
    ``across_ranks`` rules in one log and test, each at most ``SWEEP_LINES`` lines after the one before and,
    where both carry a glog stamp, within ``SWEEP_SECONDS`` of it, are one sweep: its first event that no
    rank's earlier line already tells tells the others. A job that hangs again after a restart printed its
    restart (and a new stamp) in between."""
    teller: Optional[Item] = None
    previous: Optional[Item] = None
    for item in ordered:
        if previous is None or not _same_sweep(previous, item):
            teller = None
        previous = item
        if id(item[2]) in absorbed:
            continue
        if teller is None:
            teller = item
            continue
        absorbed.add(id(item[2]))
        added.setdefault(id(teller[2]), []).extend(
            [item[2], *added.pop(id(item[2]), ()), *told.get(id(item[2]), ())]
        )


SWEEP_LINES = 64  # a rank's watchdog lines and C++ stack between two ranks' timeouts: some 30 lines
SWEEP_SECONDS = 60  # the ranks' watchdogs find their works past the timeout within a few seconds
_GLOG_CLOCK = re.compile(r"\b[EWIF](\d{3,4}) (\d\d):(\d\d):(\d\d)[. ]")
_DAY_S = 86400


def _same_sweep(previous: Item, item: Item) -> bool:
    """Whether ``item`` follows ``previous`` in one watchdog sweep: same log and test, close in lines and,
    when both lines carry the glog-style stamp of torch's C++ log ("[E909 09:55:29.307629539 ...", "E0816"),
    in time."""
    if previous[0] != item[0] or previous[4] != item[4]:
        return False
    one, other = previous[2].match, item[2].match
    if other.line - one.end_line - 1 > SWEEP_LINES:
        return False
    clock, other_clock = _GLOG_CLOCK.search(one.excerpt), _GLOG_CLOCK.search(other.excerpt)
    if clock is None or other_clock is None:
        return True
    (day, *hms), (other_day, *other_hms) = clock.groups(), other_clock.groups()
    seconds, other_seconds = (int(h) * 3600 + int(m) * 60 + int(s) for h, m, s in (hms, other_hms))
    apart = abs(other_seconds - seconds)
    if day != other_day:  # the next day's stamp: close only across midnight
        apart = abs(other_seconds + _DAY_S - seconds)
    return apart <= SWEEP_SECONDS


def _lines_apart(rule: Rule, item: Item, other: Item) -> int:
    """How many lines may lie between ``item`` (of ``rule``) and ``other`` for one to tell the other: the
    rule's ``same_event_lines``, or any number when the rule asks for one test and both are in the same
    named test. pytest shows what a test printed live (-s: pytest-timeout's dump, the raylet's report of a
    dead worker) above the test's report, whose "Failed: Timeout" or WorkerCrashedError may come a whole
    traceback later; the test bounds the event, a line count cannot."""
    if rule.same_event_in_test and item[4] is not None and item[4] == other[4]:
        return _ANY_DISTANCE
    return rule.same_event_lines


def across_rank_of(match: Match) -> Optional[str]:
    """The rank an ``across_ranks`` match is of: its own words' ("[Rank 7] Watchdog caught ...", the rank
    in its process group) or else its line's prefix ("[rank7]:")."""
    rank = (match.groups.get("pg_rank") or "").strip()
    if rank.isdigit():
        return str(int(rank))
    who = identity_of(match, use_rank_prefix=True)
    return who[1] if who is not None and who[0] == "rank" else None


def across_ranks_key(match: Match) -> Optional[Tuple[Optional[str], ...]]:
    """The values of ``match``'s ``across_ranks`` groups, None when one that must be set is not."""
    values: List[Optional[str]] = []
    for name in match.rule.across_ranks:
        value = match.groups.get(name.rstrip("?"))
        value = value.strip() if value and value.strip() else None
        if value is None and not name.endswith("?"):
            return None
        values.append(value)
    return tuple(values) if values else None


def _raised_in_its_traceback(item: Item, items: Sequence[Item]) -> List[Tuple[Item, int]]:
    """The matches on the lines of the traceback attached to ``item`` (a worker's failure: torchrun's
    Root Cause row and the rank's own traceback), each with its distance: the exception that traceback
    ends in (rank 0's "RuntimeError: [...] Timed out waiting 5000ms for recv operation to complete") is
    what the worker died of, one event with its failure."""
    attached = item[2].traceback
    if attached is None:
        return []
    traceback = attached[1]
    here = item[2].match
    return [
        (other, abs(here.line - other[2].match.line))
        for other in items
        if other is not item and traceback.line <= other[2].match.line <= traceback.end_line
    ]


def _chained(
    item: Item, named: Sequence[Tuple[Item, int]], absorbed: Set[int]
) -> List[Tuple[Item, int]]:
    """The matches of ``named`` (each with its ``same_event_lines``) that ``item`` tells: those near it,
    and those near one of them in turn. A client retrying its connect to a dead store logs the broken
    socket at each try, some 16 lines apart, until the last try's timeout: the retries are one chain
    however long it runs, and each link is near the next (``_same_event`` still asks the teller's
    test, rank and pid of every link)."""
    chain: List[Tuple[Item, int]] = []
    anchors = [item]
    waiting = [(other, lines) for other, lines in named if other is not item and id(other[2]) not in absorbed]
    grown = True
    while grown:
        grown = False
        for entry in list(waiting):
            other, lines = entry
            if not any(_same_event(anchor, other, lines) or _logged_with(anchor, other)
                       for anchor in anchors):
                continue
            if not _same_event(item, other, _ANY_DISTANCE):
                continue
            waiting.remove(entry)
            chain.append(entry)
            anchors.append(other)
            grown = True
    return chain  # in the order found: the rule's own names first, as it lists them


def _logged_with(teller: Item, other: Item) -> bool:
    """Whether ``other`` is a logged line and ``teller`` the exception that the traceback logged with it
    ends in (``ChainReader._logged``): "AsyncLLM output_handler failed." and, however many frames below,
    the "EngineDeadError" its traceback ends in. As with a worker's report (``_ended_by``), the exception
    tells the line; a line never tells what a traceback printed after it ends in."""
    line, inner = other[2].match.line, teller[2].match
    return teller[0] == other[0] and any(
        start == line and rank == inner.rank and inner.line == end
        for start, end, rank in getattr(other[1], "logged", ())
    )


def told_with_a_stack(event: LogEvent, again: Sequence[LogEvent]) -> Optional[LogEvent]:
    """A crash line this finding tells again whose stack says where the crash happened (a crashed
    pytest-xdist worker's report tells the worker's own "Fatal Python error"), when it has none."""
    if event.stack is not None:
        return None
    return next((told for told in again if told.stack is not None), None)


def _ended_by(items: Sequence[Item]) -> Dict[int, List[Tuple[Item, int]]]:
    """id() of a match on the last line of a worker's traceback report that names the exception it ends
    in ("Exception in thread worker-1:" ... "_queue.Empty", torch.multiprocessing's "-- Process 0
    terminated with the following error:" ... "RuntimeError: [...] Timed out waiting 2000ms") -> those
    reports, each with the lines between them: that line is the error the worker died of, so its rule
    says what happened and the report who it happened to (one event; the report's message is added to
    the match's). A report may end in a repeat the match's event folded in (the same text further down).
    An atexit report is not a worker's: that the error came at exit, with status 0, is its own finding."""
    blocks: List[Item] = []
    for item in items:
        match = item[2].match
        names_exception = any(match.groups.get(group) for group in EXCEPTION_GROUPS)
        if match.rule.is_block and match.rule.kind is Kind.WORKER_FAILURE and names_exception:
            blocks.append(item)
    ends: Dict[int, List[Tuple[Item, int]]] = {}
    if not blocks:
        return ends
    for item in items:
        match = item[2].match
        if match.rule.is_block:
            continue
        for block in blocks:
            told = block[2].match
            if told.rule is match.rule:
                continue
            if told.end_line == match.line or (
                item[2].repeats > 1 and told.end_line > match.line and _exception_text(told) == match.text
            ):
                ends.setdefault(id(item[2]), []).append((block, max(0, told.line - match.line)))
    return ends


def _exception_text(block: Match) -> Optional[str]:
    return next((block.groups[group] for group in EXCEPTION_GROUPS if block.groups.get(group)), None)


def _same_event(item: Item, other: Item, lines: int) -> bool:
    """Whether ``other`` is at most ``lines`` lines from ``item``, in its test, of its rank, pid, device
    (a ``device`` group), GPU channel or client process (``channel``, ``client``) or kind of bug (a
    ``bug`` group) when both name one. An event on no test's
    lines may tell one in a test or be told by it: the session's "Interrupted: 1 error during
    collection" tells the modules' failures, and a crashed pytest-xdist worker's report tells its
    "[gw2] node down", which xdist prints among other workers' results. Two events that name the same
    process are that process's whatever test the log seemed to be running: with several workers at
    once, the last test started may be another worker's."""
    if item[3] != other[3]:
        return False
    first, second = item[2].match, other[2].match
    gap = max(second.line - first.end_line, first.line - second.end_line) - 1
    if gap > lines:
        return False
    if first.rule is second.rule and kernel_apart(first, second):
        return False  # the same kernel line hours later, next to it in "dmesg | grep Xid": another fault
    who, whom = identity_of(first, use_rank_prefix=True), identity_of(second, use_rank_prefix=True)
    if who is not None and whom is not None and who != whom:
        return False
    same_process = who is not None and who == whom and who[0] == "process"
    if item[4] != other[4] and item[4] is not None and other[4] is not None and not same_process:
        return False
    device, other_device = _device_of(first), _device_of(second)
    if device is not None and other_device is not None and device != other_device:
        return False  # a K80's two GPUs that both fell off the bus: two events
    for name in _APART_GROUPS:  # a GPU's faults on two channels, or of two processes: two events
        one, another = _group_of(first, name), _group_of(second, name)
        if one is not None and another is not None and one != another:
            return False
    bug, other_bug = _bug_of(first), _bug_of(second)
    if bug is not None and other_bug is not None and bug != other_bug:
        return False  # a sanitizer's heap-use-after-free report and its next, heap-buffer-overflow: two
    pid, other_pid = pid_of(first), pid_of(second)
    return pid is None or other_pid is None or pid == other_pid


class Merged:
    """What ``one_event_one_finding`` found (a plain class, as ``Chained``)."""

    __slots__ = ("absorbed", "crash_of", "stack_of", "told", "rows", "row_traceback")

    def __init__(
        self,
        absorbed: Set[int],  # id() of events told by another finding
        crash_of: Dict[int, Tuple[str, LogEvent]],  # id() of a worker's event -> (signal, its crash)
        stack_of: Dict[int, LogEvent],  # id() of a crash line without a stack -> a line of its crash with one
        told: Optional[Dict[int, List[LogEvent]]] = None,  # teller -> crash lines it told
        # a report's root cause -> the other rows of its signal (``_same_signal_rows``), also in ``told``
        rows: Optional[Dict[int, List[LogEvent]]] = None,
        # a report's row kept apart from the root cause, the only one -> the one other rank's own traceback
        row_traceback: Optional[Dict[int, Tuple[str, Match]]] = None,
    ) -> None:
        self.absorbed = absorbed
        self.crash_of = crash_of
        self.stack_of = stack_of
        self.told = {} if told is None else told
        self.rows = {} if rows is None else rows
        self.row_traceback = {} if row_traceback is None else row_traceback


def one_event_one_finding(
    items: Sequence[Item], tells: Optional[Mapping[int, Sequence[LogEvent]]] = None
) -> Merged:
    """Tell each crash once: per log, findings of one pid are one event (the root cause tells it), and a
    crash line (faulthandler, the shell, the step's exit status) of the signal a worker died of is that
    worker's crash; crash lines of one signal without a worker are one crash, the first one tells it.
    ``tells`` maps an event to those it tells again (``events_told_again``): an event that told a line
    the process dies of (a C assert() after a CUDA library's failed status) dies of that signal too."""
    tells = tells or {}

    def dies_of(event: LogEvent) -> Optional[str]:
        told_signals = (other.match.rule.dies_of for other in tells.get(id(event), ()))
        return event.match.rule.dies_of or next((name for name in told_signals if name), None)

    def crash_signal(event: LogEvent) -> Optional[str]:
        return signal_of(event.match) or dies_of(event)

    absorbed: Set[int] = set()
    crash_of: Dict[int, Tuple[str, LogEvent]] = {}
    row_traceback: Dict[int, Tuple[str, Match]] = {}
    stack_of: Dict[int, LogEvent] = {}
    told_by: Dict[int, List[LogEvent]] = {}
    rows: Dict[int, List[LogEvent]] = {}
    by_log: Dict[int, List[Item]] = {}
    for item in items:
        if not item[3] and item[2].match.rule.kind in MERGE_KINDS:
            by_log.setdefault(item[0], []).append(item)
    for log_items in by_log.values():
        workers: Dict[str, Item] = {}
        signals: Dict[str, Optional[str]] = {}
        first = sorted(log_items, key=lambda it: (0 if it[2].match.rule.root_cause else 1, it[2].match.seq))
        for item in first:
            event = item[2]
            pid = pid_of(event.match)
            if pid is None or event.match.rule.kind not in WORKER_KINDS:
                continue
            if pid in workers:
                absorbed.add(id(event))
            else:
                workers[pid] = item
            signals[pid] = signals.get(pid) or signal_of(event.match)
        _same_signal_rows(workers, signals, absorbed, rows, row_traceback)
        _same_code_rows(workers, signals, absorbed, rows)
        # torchrun's "ChildFailedError" line heads the report whose rows (Root Cause, other Failures)
        # name the workers, and ends the agent's traceback that its log line of the first failure
        # ("failed (exitcode: -9) local_rank: 3 (pid: 407727) of binary: ...") comes right before
        # (torch/distributed/elastic/agent/server/api.py logs it, launcher/api.py raises): one event.
        for item in log_items:
            match = item[2].match
            if match.rule.kind is not Kind.WORKER_FAILURE or match.rule.root_cause:
                continue
            if pid_of(match) is not None or _CHILD_FAILED not in match.text:
                continue
            if any(_in_report_of(match, worker[2].match) for worker in workers.values()):
                absorbed.add(id(item[2]))
        crash_primary: Dict[str, List[Tuple[Item, object]]] = {}
        launcher_deaths: Dict[Tuple[str, Optional[str]], Item] = {}  # (rule id, test) -> first rank death
        for item in sorted(log_items, key=lambda it: it[2].match.seq):
            event = item[2]
            kind = event.match.rule.kind
            if id(event) in absorbed or (kind is not Kind.CRASH and pid_of(event.match) is not None):
                continue
            signame = crash_signal(event)
            if signame is None:
                continue
            worker = _worker_for(event, item[4], signame, workers, signals)
            if worker is not None:
                if id(worker[2]) not in crash_of or (
                    crash_of[id(worker[2])][1].stack is None and event.stack is not None
                ):
                    crash_of[id(worker[2])] = (signame, event)
                absorbed.add(id(event))
                continue
            # Crash lines of one signal are one crash unless they name two processes or ranks (two
            # ranks that both aborted), two kinds of bug (a sanitizer that recovers reports each) or
            # happened in two tests. The line that says why the process
            # died (a rule with ``dies_of``: glibc, a failed CHECK) tells it, else the first. A status
            # (the step's exit 139) after a crash line that no test held is that crash, also when the
            # test's progress line came between: the shell reports the death before the dead process's
            # buffered output reaches the log (bluesky/ophyd#937).
            who = pid_of(event.match) or identity_of(event.match, use_rank_prefix=True)
            is_status = kind is Kind.SIGNAL_EXIT
            teardown = _teardown_kill_of(item, signame, who, launcher_deaths, absorbed)
            if teardown is not None:
                absorbed.add(id(event))
                told_by.setdefault(id(teardown[2]), []).append(event)
                continue
            for index, (primary, primary_who) in enumerate(crash_primary.get(signame, [])):
                same_test = item[4] is None or item[4] == primary[4] or (is_status and primary[4] is None)
                bug, primary_bug = _bug_of(event.match), _bug_of(primary[2].match)
                same_bug = bug is None or primary_bug is None or bug == primary_bug
                if same_test and same_bug and (who is None or primary_who in (None, who)):
                    says_why = dies_of(event) and not dies_of(primary[2])
                    teller, told = (item, primary) if says_why else (primary, item)
                    absorbed.add(id(told[2]))
                    told_lines = told_by.pop(id(told[2]), [])
                    told_by.setdefault(id(teller[2]), []).extend([told[2], *told_lines])
                    crash_primary[signame][index] = (teller, primary_who or who)
                    stack = stack_of.pop(id(told[2]), told[2] if told[2].stack is not None else None)
                    if teller[2].stack is None and stack is not None and id(teller[2]) not in stack_of:
                        stack_of[id(teller[2])] = stack
                    break
            else:
                crash_primary.setdefault(signame, []).append((item, who))
    for teller, told in rows.items():
        told_by.setdefault(teller, []).extend(told)
    return Merged(absorbed, crash_of, stack_of, told_by, rows, row_traceback)


def _teardown_kill_of(
    item: Item,
    signame: str,
    who: object,
    launcher_deaths: Dict[Tuple[str, Optional[str]], Item],
    absorbed: Set[int],
) -> Optional[Item]:
    """The earlier death ``item`` is the launcher's teardown of, if any: a launcher's line of a rank's death
    by signal that names no pid (PALS's "rank 4 died from signal 9") after its line of another rank's
    death, in the same test, when the signal is SIGKILL. The launcher ends the job's other ranks once one
    died, and kills those still there (saforem2/ezpz#210: "rank 0 died from signal 11 and dumped core",
    then "rank 4 died from signal 9"); a rank that died of any other signal, or whose death came first,
    is a death of its own. Records the first death of each launcher rule and test in ``launcher_deaths``."""
    match = item[2].match
    if match.rule.kind is not Kind.SIGNAL_EXIT or not isinstance(who, tuple) or who[0] != "rank":
        return None
    first = launcher_deaths.setdefault((match.rule.id, item[4]), item)
    if first is item or signame != "SIGKILL" or id(first[2]) in absorbed:
        return None
    return first if identity_of(first[2].match, use_rank_prefix=True) != who else None


def _same_signal_rows(
    workers: Dict[str, Item],
    signals: Dict[str, Optional[str]],
    absorbed: Set[int],
    rows: Dict[int, List[LogEvent]],
    row_traceback: Dict[int, Tuple[str, Match]],
) -> None:
    """The other rows of a launcher's report (torchrun's "Failures:") whose workers died of the signal its
    root cause died of, on no shutdown's account, in the same test: one event the root cause tells. A
    collective that timed out makes every rank's NCCL watchdog abort at once (each row "-6", SIGABRT,
    the same second); torchrun kills the others with its closing signal only after it saw the first
    die, so a row of the root cause's own signal died of the same thing. A row of another signal, or of
    an exit code, is a death of its own (a rank that raised while another segfaulted). So are rows of
    ranks that each show their own cause: when the root cause's rank and as many other ranks as there are
    such rows ended in exceptions of other types before it (rank 0's RuntimeError, rank 1's KeyError,
    each then aborting), they hit one signal for different reasons. A row names no rank, so only a count
    that matches says whose they are; one stray traceback among eight aborting ranks folds as before."""
    roots = [w for w in workers.values() if w[2].match.rule.root_cause]
    for root in roots:
        signame = signals.get(pid_of(root[2].match) or "")
        if signame is None:
            continue
        same = []
        for pid, worker in workers.items():
            match = worker[2].match
            if worker is root or match.rule.kind is not Kind.SIGNAL_EXIT or worker[2].shutdown is not None:
                continue
            if signals.get(pid) != signame or worker[4] != root[4] or worker[0] != root[0]:
                continue
            if 0 <= root[2].match.line - match.end_line <= _REPORT_ROWS_LINES:
                same.append(pid)
        others = _other_causes(root)
        if same and len(same) == len(others):
            if len(same) == 1:  # one row, one other rank: the row is that rank's death
                row_traceback[id(workers[same[0]][2])] = ("rank " + others[0][0][1], others[0][1])
            continue
        for pid in same:
            absorbed.add(id(workers[pid][2]))
            rows.setdefault(id(root[2]), []).append(workers.pop(pid)[2])


def _same_code_rows(
    workers: Dict[str, Item],
    signals: Dict[str, Optional[str]],
    absorbed: Set[int],
    rows: Dict[int, List[LogEvent]],
) -> None:
    """The other rows of a launcher's report, each naming its rank, whose workers exited with the plain
    exit code its root cause exited with, on no shutdown's account, in the same test: one failure the
    root cause tells (every rank's argparse error, exit 2). A row of another code is a failure of its
    own (rank 1 raised, rank 2 gave up with exit 4: two events)."""
    for root in [w for w in workers.values() if w[2].match.rule.root_cause]:
        code = (root[2].match.groups.get("exitcode") or "").strip()
        if not code or signals.get(pid_of(root[2].match) or "") is not None:
            continue
        for pid, worker in list(workers.items()):
            match = worker[2].match
            if worker is root or match.rule.root_cause or worker[2].shutdown is not None \
                    or match.groups.get("rank") is None or signals.get(pid) is not None:
                continue
            if (match.groups.get("exitcode") or "").strip() != code or worker[4] != root[4] \
                    or worker[0] != root[0]:
                continue
            if 0 <= root[2].match.line - match.end_line <= _REPORT_ROWS_LINES:
                absorbed.add(id(worker[2]))
                rows.setdefault(id(root[2]), []).append(workers.pop(pid)[2])


def _other_causes(root: Item) -> List[Tuple[Identity, Match]]:
    """The ranks other than the root cause's that ended in an exception of a type other than its rank's,
    each with its last ``[rankN]:`` traceback before the report (none when the root cause's rank shows
    none). A traceback its rank printed on after (``LogFindings.ranks_gone_on``) was handled: no cause."""
    log, match = root[1], root[2].match
    causes: Dict[Identity, Tuple[str, Match]] = {}
    for tb in log.rank_tracebacks:
        who = identity_of(tb, use_rank_prefix=True)
        said = next((tb.groups[g] for g in EXCEPTION_GROUPS if tb.groups.get(g)), None)
        if who is None or not said or tb.line > match.line or (int(who[1]), tb.end_line) in log.ranks_gone_on:
            continue
        causes[who] = (said.split(":", 1)[0].strip(), tb)
    mine = causes.pop(identity_of(match, use_rank_prefix=True) or ("", ""), None)
    if mine is None:
        return []
    return [(who, tb) for who, (cause, tb) in causes.items() if cause != mine[0]]


def peers_lost(items: Sequence[Item]) -> ToldAgain:
    """Per log, the events of ``peer_lost`` rules (a rank's gloo or NCCL connection to a peer broke) that a
    worker's death in the same log tells: the peer died, the others saw it go. The death is an error of
    a crash, signal-exit or worker-failure rule that is no peer's view itself, not handled and after no
    shutdown marker, in the same test (or none), of another rank (or pid) than the view's: both must
    name one, a process whose own connection broke and that then failed is one failure of its own.
    The root cause tells first (a ``root_cause`` rule: torchrun's Root Cause row), else the earliest.
    With no such death the view stays its own finding: the only trace of a peer that vanished."""
    absorbed: Set[int] = set()
    told: Dict[int, List[LogEvent]] = {}
    by_log: Dict[int, List[Item]] = {}
    for item in items:
        if not item[3]:
            by_log.setdefault(item[0], []).append(item)
    for log_items in by_log.values():
        deaths = sorted(
            (
                item for item in log_items
                if item[2].match.rule.kind in MERGE_KINDS and not item[2].match.rule.peer_lost
                and item[2].shutdown is None and item[2].match.rule.severity in (None, Severity.ERROR)
            ),
            key=lambda it: (0 if it[2].match.rule.root_cause else 1, it[2].match.seq),
        )
        for item in log_items:
            if not item[2].match.rule.peer_lost:
                continue
            who = _who(item[2].match)
            for death in deaths:
                if item[4] is not None and death[4] is not None and item[4] != death[4]:
                    continue
                other = _who(death[2].match)
                if who is None or other is None or who[0] != other[0] or who == other:
                    continue
                absorbed.add(id(item[2]))
                told.setdefault(id(death[2]), []).append(item[2])
                break
    return ToldAgain(absorbed, told)


def _who(match: Match) -> Optional[Tuple[str, str]]:
    """The rank a match names (its groups, its ``[rankN]:`` prefix, a report's rank row), else its pid."""
    identity = identity_of(match, use_rank_prefix=True)
    if identity is not None:
        return identity
    pid = pid_of(match)
    return ("pid", pid) if pid is not None else None


def _in_report_of(child_failed: Match, worker: Match) -> bool:
    """Whether ``worker`` (a worker's failure naming its pid) is a row of the report that torchrun's
    ChildFailedError line ``child_failed`` heads, or the agent's log line just before its traceback."""
    after = worker.line - child_failed.end_line
    before = child_failed.line - worker.end_line
    return 0 < after <= _REPORT_LINES or 0 < before <= _REPORT_LINES


def _worker_for(
    event: LogEvent,
    test: Optional[str],
    signame: str,
    workers: Dict[str, Item],
    signals: Dict[str, Optional[str]],
) -> Optional[Item]:
    """The worker whose death ``event`` (a crash line) tells, when it can only be that one."""
    candidates = [
        w for pid, w in workers.items() if signals.get(pid) == signame and (test is None or w[4] == test)
    ]
    if len(candidates) > 1 and event.match.rank is not None:
        rank_of = ("rank", str(event.match.rank))
        ranked = [w for w in candidates if identity_of(w[2].match, use_rank_prefix=True) == rank_of]
        candidates = ranked or candidates
    if len(candidates) > 1:
        candidates = [w for w in candidates if w[2].match.rule.root_cause] or candidates
    return candidates[0] if len(candidates) == 1 else None


def exit_signal(match: Match) -> Optional[str]:
    """The signal a negative exit code of ``match`` says its process died of (``-9``: SIGKILL), or that
    it names in its place (Python's "died with <Signals.SIGKILL: 9>"), if any."""
    for name in _EXIT_GROUPS:
        value = (match.groups.get(name) or "").strip()
        if value.startswith("SIG") and value[3:].isalnum() and value[3:].isupper():
            return value
        number = _number(value)
        if number is not None and number < 0:
            try:
                return signal.Signals(-number).name
            except ValueError:
                return None
    return None


def crash_site(stack: Match) -> Optional[str]:
    """``file.py:N`` of the innermost frame of a faulthandler stack outside the stdlib and packages."""
    return own_frame(stack.excerpt.split("\n"), BOOTSTRAP_PATHS)


def raise_site(traceback: Match) -> Optional[str]:
    """``file.py:N`` of the innermost frame of a Python traceback (most recent call last) outside the
    stdlib and packages: where the user's code raised."""
    return own_frame(reversed(traceback.excerpt.split("\n")))


def same_raise(one: Match, other: Match) -> bool:
    """Whether two ranks' tracebacks tell one event: the same exception type raised at the same line of
    the user's code (``raise_site``; the message may differ in what each rank holds: "rank 3: shard 3",
    "got 4"), or, where neither shows a frame of the user's, the same exception line but for its numbers.
    Every rank runs one program, so the same raise at the same line is one bug hit on every rank."""
    said = [next((tb.groups[g] for g in EXCEPTION_GROUPS if tb.groups.get(g)), None) for tb in (one, other)]
    if not said[0] or not said[1]:
        return False
    if said[0].split(":", 1)[0].strip() != said[1].split(":", 1)[0].strip():
        return False
    sites = raise_site(one), raise_site(other)
    if sites[0] is not None or sites[1] is not None:
        return sites[0] == sites[1]
    return _DIGITS.sub("#", said[0].strip()) == _DIGITS.sub("#", said[1].strip())


def signal_of(match: Match) -> Optional[str]:
    """The signal a match says a process died of: ``-11``, ``139`` (128 + N), ``SIGSEGV``,
    ``Segmentation fault``; a Windows crash status (``0xC0000005``, ``access violation``) by its name;
    a ``signum`` group's signal number; else the signal its rule says the process dies of (``dies_of``).
    A name the line spells out wins over a number: signal numbers differ between systems (an IDE on
    macOS: "exit code 138 (interrupted by signal 10: SIGBUS)", where Linux's 10 is SIGUSR1)."""
    named = _signal_named(match)
    if named is not None:
        return named
    for name in _EXIT_GROUPS:
        value = (match.groups.get(name) or "").strip()
        if not value:
            continue
        number = _number(value)
        if number is None:
            continue
        windows = windows_status_name(number) if abs(number) > 0xFFFF else None
        if windows is not None:
            return windows
        signum = -number if number < 0 else number - 128 if 128 < number < 160 else 0
        if signum > 0:
            try:
                return signal.Signals(signum).name
            except ValueError:
                return None
    return _signal_number(match) or match.rule.dies_of


def _signal_named(match: Match) -> Optional[str]:
    """The signal an exit group names in words (``SIGSEGV``, ``Segmentation fault``), if any."""
    for name in _EXIT_GROUPS:
        value = (match.groups.get(name) or "").strip()
        if value.upper().startswith("SIG") and value[3:].isalpha():
            return value.upper()
        word = _SIGNAL_WORDS.get(value.lower())
        if word is not None:
            return word
    return None


def _signal_number(match: Match) -> Optional[str]:
    """The signal a ``signum`` group names by its number ("Received 15 death signal", glog's "***
    Received signal 11 ***") or by its name."""
    value = (match.groups.get("signum") or "").strip()
    if value.upper().startswith("SIG") and value[3:].isalnum():
        return value.upper()
    if not value.isdigit():
        return None
    try:
        return signal.Signals(int(value)).name
    except ValueError:
        return None


def _number(value: str) -> Optional[int]:
    """``-11``, ``139``, ``0xC0000005``, faulthandler's ``code 0xc0000374`` or a Windows status without its
    prefix (``C0000005``: eight hex digits, some of them letters) as a number."""
    value = value[len("code "):] if value.lower().startswith("code ") else value
    hexadecimal = value.lower().startswith("0x") or (len(value) == 8 and not value.isdigit())
    try:
        return int(value, 16) if hexadecimal else int(value)
    except ValueError:
        return None


def _bug_of(match: Match) -> Optional[str]:
    """The kind of bug a match names in a ``bug`` group (a sanitizer's "heap-use-after-free"), if any."""
    bug = (match.groups.get("bug") or "").strip().lower()
    return bug or None


def _group_of(match: Match, name: str) -> Optional[str]:
    """A group of a match, stripped and in lower case; None when it is absent or blank."""
    value = (match.groups.get(name) or "").strip().lower()
    return value or None


def _device_of(match: Match) -> Optional[str]:
    """The device a match names (a GPU's PCI address, an XLA device), in one spelling."""
    device = (match.groups.get("device") or "").strip().lower()
    return device or None


def pid_of(match: Match) -> Optional[str]:
    pid = (match.groups.get("pid") or "").strip()
    return pid if pid.isdigit() else None

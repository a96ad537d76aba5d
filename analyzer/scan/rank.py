"""Turn raw matches into findings that explain: one per event, repeats folded, root cause first.

What ranking does, in order:
1. Drops what the user ignores: logs whose path matches an ``ignore.paths`` glob (the guard's own
   findings point at its diagnosis files, not at logs, so only their rule ids can ignore them), rules in
   ``ignore.rules``, and findings whose cleaned line (any line, for a block) holds an ``ignore.lines``
   regex. User regexes run with the catalogue's ``match_timeout_s``; one that runs out of time ignores
   nothing, so a bad pattern can cost a finding's silence but never hide a failure.
2. Folds repeats: the same rule on the same cleaned text with the same groups (a job log and its
   step log; the same error printed by every rank) is one finding, the first one, noted "(seen N
   times)" when it repeats within its own log.
3. Marker rules make no finding; they are the context the rest of this list reads:
   - ``closing-signal`` and the like (any marker named in a rule's ``collateral_after``): a later match
     of that rule in the same log is collateral damage, a warning that points at the root cause. If
     nothing else failed, it keeps its severity, so a failing log never turns green.
   - ``traceback``: a block holding a traceback, tied to a rank by its ``[rankN]:`` prefix (or a
     ``rank`` group) or to a process by a ``process``/``name`` group. It is attached to the failure
     that names the same rank (a ``rank`` or ``proc`` group, or torchrun's ``rank : N (local_rank:``
     line inside a report block) or process (excerpt appended; the exception named from the marker's
     ``exception``/``exc`` group).
   - ``verdict-printed``, ``test-started`` and ``test-outcome`` (a ``test`` group names the test):
     the guard's ``hang`` finding says whether the run hung after printing its verdict (a hang at
     interpreter exit) or which test was running; a ``timeout`` finding after the verdict in the same
     log is described as a hang at exit too.
4. Orders: errors before warnings before notices; within a severity, ``root_cause`` rules first, then
   the log's findings by time (``seq``), then the guard's findings in the order it made them. When the
   guard killed a hung command, signal exits in the log are usually the echo of that kill, so they
   come after the guard's finding.

Messages are the rule's ``message`` with ``{group}`` fields filled from the match; ``{group_exit}``
describes a number as an exit ("exit 143 (SIGTERM)"); a group that did not take part reads ``?``.
"""

from __future__ import annotations

import bisect
import dataclasses
import fnmatch
import string
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import regex

from ..exits import describe_exit
from ..model import Finding, Kind, Severity
from ..rules.loader import EXIT_FIELD_SUFFIX
from ..rules.model import Catalogue, LineIgnore, Rule
from .clean import clean_line
from .match import Match

TRACEBACK_MARKER = "traceback"
VERDICT_MARKER = "verdict-printed"
TEST_STARTED_MARKER = "test-started"
TEST_OUTCOME_MARKER = "test-outcome"
RANK_GROUPS = ("rank", "proc")  # torch.multiprocessing.spawn's process index is the rank
PROCESS_GROUPS = ("process", "name")
EXCEPTION_GROUPS = ("exception", "exc")
MISSING_FIELD = "?"
MAX_FIELD_CHARS = 200
MAX_QUOTE_CHARS = 120
# A user line pattern that times out this often is skipped for the rest of the scan, so a
# catastrophic pattern costs a few seconds, not match_timeout for every finding.
MAX_IGNORE_TIMEOUTS = 3

HANG_AFTER_VERDICT = (
    "after the test run printed its verdict ({verdict}): a hang at interpreter exit "
    "(atexit handlers, non-daemon threads or child processes), not a test timeout"
)
HANG_IN_TEST = "; while test {test} was running (started at {where}; it never reported an outcome)"
COLLATERAL = "; collateral: it followed the shutdown at {where} ({quote}); root cause at {root_where}: {root}"
COLLATERAL_NO_ROOT = "; it followed the shutdown at {where} ({quote}), but no other failure was found"
REPEATED = " (seen {count} times)"
ATTACHED = "; {who} raised {exception}"
ATTACHED_HEADER = "--- traceback of {who} ({where}) ---"

_ADDRESS = regex.compile(r"0x[0-9a-fA-F]+")
# torchrun's ChildFailedError report names the failed rank on a line of its own inside the block:
# "  rank      : 1 (local_rank: 1)".
_REPORT_RANK = regex.compile(r"\brank\s*:\s*(\d+) \(local_rank:")
_KILL_ECHO_KINDS = (Kind.SIGNAL_EXIT,)
_GUARD_KILL_KINDS = (Kind.HANG, Kind.TIMEOUT)


@dataclasses.dataclass(frozen=True)
class _Timeline:
    """Things in ``seq`` order, looked up by "the last one before seq" in O(log n)."""

    seqs: List[int] = dataclasses.field(default_factory=list)
    items: List[Any] = dataclasses.field(default_factory=list)

    def add(self, seq: int, item: Any) -> None:
        self.seqs.append(seq)
        self.items.append(item)

    def last_before(self, seq: int) -> Any:
        index = bisect.bisect_left(self.seqs, seq)
        return self.items[index - 1] if index else None


@dataclasses.dataclass(frozen=True)
class _Context:
    """The markers of one scan, indexed once so each finding looks its context up by bisection."""

    shutdowns: Dict[Tuple[str, str], _Timeline]  # (path, marker name) -> its matches
    tracebacks: Dict[Tuple[str, str], List[Match]]  # identity -> traceback markers in seq order
    verdicts: Dict[str, _Timeline]  # path -> the verdict in force from each seq on (or None)
    last_verdict: Optional[Match]  # the verdict in force at the end of the scan, any log
    unfinished: Optional[Tuple[str, Match]]  # the last test that started and never reported

    @classmethod
    def build(cls, markers: Sequence[Match]) -> "_Context":
        shutdowns: Dict[Tuple[str, str], _Timeline] = {}
        tracebacks: Dict[Tuple[str, str], List[Match]] = {}
        verdicts: Dict[str, _Timeline] = {}
        in_force: Dict[str, Optional[Match]] = {}
        for m in markers:
            name = m.rule.marker or ""
            shutdowns.setdefault((m.path, name), _Timeline()).add(m.seq, m)
            if name == TRACEBACK_MARKER:
                identity = _identity(m, use_rank_prefix=True)
                if identity is not None:
                    tracebacks.setdefault(identity, []).append(m)
            elif name == VERDICT_MARKER or (name == TEST_STARTED_MARKER and in_force.get(m.path)):
                in_force[m.path] = m if name == VERDICT_MARKER else None
                verdicts.setdefault(m.path, _Timeline()).add(m.seq, in_force[m.path])
        last = max((v for v in in_force.values() if v is not None), key=lambda v: v.seq, default=None)
        return cls(shutdowns, tracebacks, verdicts, last, _unfinished_test(markers))

    def shutdown_before(self, match: Match) -> Optional[Match]:
        """The latest marker named in the rule's ``collateral_after`` before ``match`` in its log."""
        best: Optional[Match] = None
        for name in match.rule.collateral_after:
            timeline = self.shutdowns.get((match.path, name))
            found = timeline.last_before(match.seq) if timeline is not None else None
            if found is not None and (best is None or found.seq > best.seq):
                best = found
        return best

    def verdict_before(self, match: Match) -> Optional[Match]:
        """The verdict printed before ``match`` in its log, unless a test started after it."""
        timeline = self.verdicts.get(match.path)
        return timeline.last_before(match.seq) if timeline is not None else None


@dataclasses.dataclass(frozen=True)
class _Event:
    """A match on its way to becoming a finding."""

    match: Match
    repeats: int = 1
    shutdown: Optional[Match] = None  # the marker this event came after, if it is collateral


def rank_findings(
    matches: Iterable[Match], catalogue: Catalogue, guard_findings: Sequence[Finding] = ()
) -> List[Finding]:
    """Ranked findings (root cause first) from the engine's matches and the guard's own findings.

    ``guard_findings`` (path ``""`` or the log dir, line 0) keep their order among findings of their
    severity. Never raises on any match; user regexes are bounded by ``catalogue.match_timeout_s``.
    """
    kept = [m for m in sorted(matches, key=lambda m: m.seq) if _path_kept(m.path, catalogue)]
    kept = [m for m in kept if m.rule.id not in catalogue.ignore_rules]
    markers = [m for m in kept if m.rule.marker]
    events = _fold_repeats([m for m in kept if not m.rule.marker])
    events = _drop_ignored_lines(events, catalogue)
    context = _Context.build(markers)
    events = [dataclasses.replace(e, shutdown=context.shutdown_before(e.match)) for e in events]
    guard = _guard_findings(guard_findings, catalogue)

    has_root = any(e.shutdown is None and _severity(e.match.rule) is Severity.ERROR for e in events) or any(
        f.severity is Severity.ERROR for f in guard
    )
    guard_killed = any(f.kind in _GUARD_KILL_KINDS and f.severity is Severity.ERROR for f in guard)

    ranked: List[Tuple[tuple, Finding, Optional[Match]]] = []
    for event in events:
        finding = _finding(event, context, demote=has_root)
        echo = guard_killed and finding.kind in _KILL_ECHO_KINDS
        key = (
            finding.severity.rank,
            0 if event.match.rule.root_cause else 1,
            2 if echo else 0,
            event.match.seq,
        )
        ranked.append((key, finding, event.shutdown if has_root else None))
    for index, finding in enumerate(guard):
        finding = _enrich_guard(finding, context)
        ranked.append(((finding.severity.rank, 1, 1, index), finding, None))
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


def format_message(message: str, groups: Mapping[str, Optional[str]]) -> str:
    """``message`` with its ``{name}`` fields filled from ``groups``; never raises, always one line."""
    out = []
    try:
        parsed = list(string.Formatter().parse(message))
    except ValueError:
        return _one_line(message)
    for literal, field, _, _ in parsed:
        out.append(literal)
        if field is not None:
            out.append(_field(field, groups))
    return _one_line("".join(out))


def _field(name: str, groups: Mapping[str, Optional[str]]) -> str:
    value = groups.get(name)
    if value is None and name.endswith(EXIT_FIELD_SUFFIX):
        number = groups.get(name[: -len(EXIT_FIELD_SUFFIX)])
        if number is not None:
            try:
                return describe_exit(int(number.strip()))
            except ValueError:
                value = number
    if value is None or value == "":
        return MISSING_FIELD
    return _clip(value, MAX_FIELD_CHARS)


def _severity(rule: Rule) -> Severity:
    return rule.severity if rule.severity is not None else Severity.ERROR


def _finding(event: _Event, context: _Context, demote: bool) -> Finding:
    match = event.match
    rule = match.rule
    severity = _severity(rule)
    message = format_message(rule.message, match.groups)
    excerpt = match.excerpt
    if event.repeats > 1:
        message += REPEATED.format(count=event.repeats)
    if event.shutdown is not None:
        if demote and severity is Severity.ERROR:
            severity = Severity.WARNING
        if not demote:
            message += COLLATERAL_NO_ROOT.format(
                where=_where(event.shutdown, match.path), quote=_quote(event.shutdown)
            )
    traceback = _attached_traceback(match, context)
    if traceback is not None:
        who, tb = traceback
        exception = next((tb.groups[n] for n in EXCEPTION_GROUPS if tb.groups.get(n)), None)
        if exception:
            message += ATTACHED.format(who=who, exception=_clip(exception, MAX_FIELD_CHARS))
        header = ATTACHED_HEADER.format(who=who, where=_where(tb))
        excerpt = f"{excerpt}\n{header}\n{tb.excerpt}" if excerpt else f"{header}\n{tb.excerpt}"
    if rule.kind is Kind.TIMEOUT:
        verdict = context.verdict_before(match)
        if verdict is not None:
            message += "; " + HANG_AFTER_VERDICT.format(verdict=_verdict_text(verdict))
    return Finding(
        kind=rule.kind if rule.kind is not None else Kind.CRASH,
        rule=rule.id,
        severity=severity,
        path=match.path,
        line=match.line,
        message=_one_line(message),
        excerpt=excerpt,
    )


def _path_kept(path: str, catalogue: Catalogue) -> bool:
    if not catalogue.ignore_paths:
        return True
    name = path.replace("!", "/").rsplit("/", 1)[-1]
    for glob in catalogue.ignore_paths:
        if fnmatch.fnmatchcase(path, glob) or ("/" not in glob and fnmatch.fnmatchcase(name, glob)):
            return False
    return True


def _fold_repeats(matches: Sequence[Match]) -> List[_Event]:
    """One event per (log, rule, cleaned text, groups), counting its repeats.

    Repeats fold only within one log: the same failure in two jobs' logs is two failures (a GitHub
    job log and its step logs are not both read, see ``analyzer.scan.sources``).
    """
    first: Dict[tuple, int] = {}
    events: List[_Event] = []
    for match in matches:
        key = _repeat_key(match)
        index = first.get(key)
        if index is None:
            first[key] = len(events)
            events.append(_Event(match))
        else:
            events[index] = dataclasses.replace(events[index], repeats=events[index].repeats + 1)
    return events


def _repeat_key(match: Match) -> tuple:
    groups = tuple(sorted((k, _ADDRESS.sub("0x?", v)) for k, v in match.groups.items() if v is not None))
    return (match.path, match.rule.id, _ADDRESS.sub("0x?", match.text.strip()), groups)


def _drop_ignored_lines(events: List[_Event], catalogue: Catalogue) -> List[_Event]:
    if not catalogue.ignore_lines:
        return events
    timeouts = [0] * len(catalogue.ignore_lines)
    return [e for e in events if not _line_ignored(e.match, catalogue, timeouts)]


def _line_ignored(match: Match, catalogue: Catalogue, timeouts: List[int]) -> bool:
    texts: Optional[List[str]] = None
    for index, ignore in enumerate(catalogue.ignore_lines):
        if ignore.rules and match.rule.id not in ignore.rules:
            continue
        if timeouts[index] >= MAX_IGNORE_TIMEOUTS:
            continue
        if texts is None:
            texts = _cleaned_lines(match)
        try:
            if any(_search(ignore, text, catalogue.match_timeout_s) for text in texts):
                return True
        except TimeoutError:
            timeouts[index] += 1
    return False


def _search(ignore: LineIgnore, text: str, timeout_s: float) -> bool:
    compiled = ignore.pattern_re if ignore.pattern_re is not None else regex.compile(ignore.pattern)
    return compiled.search(text, timeout=timeout_s) is not None


def _cleaned_lines(match: Match) -> List[str]:
    """The matched line, or for a block every line of it, as rules see them (cleaned)."""
    if not match.rule.is_block:
        return [match.text]
    lines = [match.text]
    for raw in match.excerpt.split("\n"):
        lines.append(clean_line(raw.encode("utf-8", "surrogatepass"))[0])
    return lines


def _identity(match: Match, use_rank_prefix: bool) -> Optional[Tuple[str, str]]:
    """Who a match belongs to: ``("rank", "1")`` or ``("process", "SpawnProcess-2")``, if it says."""
    for name in PROCESS_GROUPS:
        process = match.groups.get(name)
        if process and process.strip():
            return ("process", process.strip())
    rank = next((match.groups[n] for n in RANK_GROUPS if match.groups.get(n)), None)
    if rank is None and use_rank_prefix and match.rank is not None:
        rank = str(match.rank)
    if rank is None and match.rule.is_block:
        found = _REPORT_RANK.search(match.excerpt)
        rank = found.group(1) if found else None
    if rank is not None:
        try:
            return ("rank", str(int(rank.strip())))
        except ValueError:
            return None
    return None


def _attached_traceback(match: Match, context: _Context) -> Optional[Tuple[str, Match]]:
    """The traceback of the rank or process this failure names: the last one before it, else the next."""
    wanted = _identity(match, use_rank_prefix=False)
    if wanted is None:
        return None
    # Only the failure's own log: rank 1 of one job says nothing about rank 1 of another.
    candidates = [
        m
        for m in context.tracebacks.get(wanted, ())
        if m.path == match.path and not match.line <= m.line <= match.end_line
    ]
    if not candidates:
        return None
    before = [m for m in candidates if m.seq < match.seq]
    chosen = before[-1] if before else candidates[0]
    who = f"rank {wanted[1]}" if wanted[0] == "rank" else f"process {wanted[1]}"
    return who, chosen


def _verdict_text(verdict: Match) -> str:
    text = verdict.groups.get("verdict") or verdict.text
    return _clip(text.strip().strip("=").strip() or text.strip(), MAX_QUOTE_CHARS)


def _unfinished_test(markers: Sequence[Match]) -> Optional[Tuple[str, Match]]:
    """The last test that started and reported no outcome at or after its start."""
    outcomes: Dict[str, List[Match]] = {}
    for m in markers:
        if m.rule.marker == TEST_OUTCOME_MARKER:
            outcomes.setdefault(_test_name(m), []).append(m)
    for m in reversed(markers):
        if m.rule.marker != TEST_STARTED_MARKER:
            continue
        name = _test_name(m)
        finished = any(
            o.seq > m.seq or (o.path == m.path and o.line >= m.line) for o in outcomes.get(name, ())
        )
        if not finished:
            return name, m
    return None


def _test_name(match: Match) -> str:
    return (match.groups.get("test") or match.text).strip()


def _guard_findings(findings: Sequence[Finding], catalogue: Catalogue) -> List[Finding]:
    overrides = dict(catalogue.severity_overrides)
    out = []
    for finding in findings:
        if finding.rule in catalogue.ignore_rules:
            continue
        if finding.rule in overrides:
            finding = dataclasses.replace(finding, severity=overrides[finding.rule])
        out.append(finding)
    return out


def _enrich_guard(finding: Finding, context: _Context) -> Finding:
    if finding.kind is not Kind.HANG:
        return finding
    if context.last_verdict is not None:
        # "hung in f (x.py:3) for 10m after the test run printed its verdict": one sentence.
        note = " " + HANG_AFTER_VERDICT.format(verdict=_verdict_text(context.last_verdict))
    else:
        unfinished = context.unfinished
        if unfinished is None:
            return finding
        note = HANG_IN_TEST.format(test=_clip(unfinished[0], MAX_FIELD_CHARS), where=_where(unfinished[1]))
    return dataclasses.replace(finding, message=_one_line(finding.message.rstrip("; .") + note))


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


def preliminary_finding(match: Match) -> Finding:
    """What a live scan reports the moment ``match`` is seen: no folding, context or demotion yet."""
    rule = match.rule
    return Finding(
        kind=rule.kind if rule.kind is not None else Kind.CRASH,
        rule=rule.id,
        severity=_severity(rule),
        path=match.path,
        line=match.line,
        message=format_message(rule.message, match.groups),
        excerpt=match.excerpt,
        test=match.test,
    )

"""The report of many jobs (``gh``, ``merge``) as a step summary that reads like Dr.CI's PR comment.

Order: the verdict; one line of counts (``2 new, 1 flaky, 1 known failure across 12 jobs``); what
needs a human beyond the failures (jobs GitHub called ``success`` whose logs show a failure, runners
with unkillable processes, logs that are gone); one section per status, each failure with its root
cause, test, jobs and runners; the table of jobs.

The same 1 MiB budget as the single-job summary: over budget, excerpts go first (detail), then rows
of the jobs table, then whole failure entries (last status first), and a visible ``Trimmed:`` line
says how many of each. Everything from a log or from GitHub (job and runner names, messages, test
ids) is a code span (``_escape.markdown_code``), so nothing of it renders as a link, an image, a
mention or an issue reference; excerpts are fenced.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ..model import Finding, JobResult, Kind, Report, TriageEntry, Verdict
from ._escape import code_fence, markdown_code, markdown_inline, markdown_text, one_line, safe_report
from .headline import FAILED, PASSED, location, plural

DEFAULT_BUDGET_BYTES = 1_000_000
EXCERPT_MAX_BYTES = 16 * 1024
CELL_MAX_CHARS = 300
JOBS_LISTED = 20  # per entry: jobs named in "Failed in"; the rest are counted
TITLE = "gpu-hang-guard"
TRIMMED_RESERVE_BYTES = 600

STATUS_ORDER = ("new", "flaky", "known", "broken")
SECTION_TITLES = {
    "new": "New failures",
    "flaky": "Flaky: failed and passed on the same commit",
    "known": "Known: also failed in a baseline run",
    "broken": "Broken: failed and never passed on this commit",
}


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _short(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def safe_text(text: str) -> str:
    """Untrusted text for a Markdown paragraph or cell: no structure, no link, no image."""
    # markdown_text breaks autolinks and puts words with "@" or "#" in code spans (mentions, refs).
    return markdown_text(_short(one_line(text), CELL_MAX_CHARS), table=True)


def code(text: str) -> str:
    """Untrusted text as a Markdown code span: literal, never a link, image, mention or #123 reference."""
    return markdown_code(_short(one_line(text), CELL_MAX_CHARS), table=True)


def counts_line(report: Report) -> str:
    """``"2 new, 1 flaky, 1 known failure across 12 jobs"``; ``"no failures across 3 jobs"``."""
    jobs = report.jobs or ()
    triage = report.triage or ()
    counts = [(s, sum(1 for t in triage if t.status == s)) for s in STATUS_ORDER]
    parts = [f"{n:,} {s}" for s, n in counts if n]
    across = f"across {plural(len(jobs), 'job')}"
    if not parts:
        return f"no failures {across}"
    last = [n for _, n in counts if n][-1]
    return ", ".join(parts) + (" failure " if last == 1 else " failures ") + across


def _job_label(index: int, job: JobResult) -> str:
    facts = job.facts
    where = []
    if facts.attempt is not None:
        where.append(f"attempt {facts.attempt}")
    if facts.run_id is not None:
        where.append(f"run {facts.run_id}")
    suffix = f" ({', '.join(where)})" if where else ""
    return f"job {index} {code(facts.name or '(unnamed)')}{suffix}"


def _list_jobs(indexes: Sequence[int], jobs: Sequence[JobResult]) -> str:
    named = [_job_label(i, jobs[i]) for i in indexes[:JOBS_LISTED]]
    more = len(indexes) - len(named)
    return "; ".join(named) + (f"; and {more:,} more" if more > 0 else "")


def lying_jobs(report: Report) -> List[int]:
    """Jobs GitHub concluded ``success`` whose logs show a failure."""
    return [
        i for i, j in enumerate(report.jobs or ()) if j.conclusion == "success" and j.verdict is Verdict.FAIL
    ]


def unkillable_runners(report: Report) -> List[str]:
    """Runners with an ``unkillable-process`` finding: those hosts need recycling."""
    jobs = report.jobs or ()
    names = {
        jobs[f.job].facts.runner
        for f in report.findings
        if f.kind is Kind.UNKILLABLE_PROCESS and f.job is not None and f.job < len(jobs)
    }
    return sorted(n for n in names if n)


def representatives(report: Report) -> Dict[int, Optional[Finding]]:
    """``id(entry)`` -> the best-ranked finding behind each triage entry (findings arrive ranked).

    One pass over the findings, then one lookup per failed job: a summary of thousands of failures
    across hundreds of jobs must not cost entries x findings.
    """
    by_test: Dict[Tuple[int, str], int] = {}
    by_rule: Dict[Tuple[int, str], int] = {}
    for position, finding in enumerate(report.findings):
        if finding.job is None:
            continue
        if finding.test is not None:
            by_test.setdefault((finding.job, finding.test), position)
        else:
            by_rule.setdefault((finding.job, finding.rule), position)
    out: Dict[int, Optional[Finding]] = {}
    for entry in report.triage or ():
        table, key = (
            (by_test, entry.test)
            if entry.test is not None
            else (by_rule, entry.signature.rsplit(": ", 1)[-1])
        )
        positions = [table[(job, key)] for job in entry.failed_jobs if (job, key) in table]
        out[id(entry)] = report.findings[min(positions)] if positions else None
    return out


def _notes(report: Report) -> str:
    jobs = report.jobs or ()
    lines = []
    lying = lying_jobs(report)
    if lying:
        lines.append(
            f"> **GitHub was told otherwise:** {plural(len(lying), 'job')} concluded `success` but "
            f"{'its log shows' if len(lying) == 1 else 'their logs show'} a failure: "
            f"{_list_jobs(lying, jobs)}\n"
        )
    runners = unkillable_runners(report)
    if runners:
        lines.append(
            "> **Recycle these runners:** processes survived SIGKILL on "
            + ", ".join(code(r) for r in runners)
            + "\n"
        )
    gone = [i for i, j in enumerate(jobs) if j.log == "gone"]
    if gone:
        lines.append(
            f"> **Logs gone:** {plural(len(gone), 'job')} could not be scanned (expired on GitHub): "
            f"{_list_jobs(gone, jobs)}\n"
        )
    return ">\n".join(lines)


def _entry(number: int, entry: TriageEntry, finding: Optional[Finding], report: Report, excerpt: bool) -> str:
    jobs = report.jobs or ()
    head = f"**{number}. {code(entry.signature)}** ({safe_text(entry.kind)})"
    lines = [head, ""]
    if finding is not None:
        lines.append(
            f"- Root cause: {markdown_inline(_short(one_line(finding.message), CELL_MAX_CHARS))} "
            f"({code(finding.rule)} at {code(location(finding))})"
        )
    if entry.test:
        lines.append(f"- Test: {code(entry.test)}")
    lines.append(f"- Failed in: {_list_jobs(entry.failed_jobs, jobs)}")
    if entry.passed_jobs:
        lines.append(f"- Passed in: {_list_jobs(entry.passed_jobs, jobs)}")
    if entry.runners:
        lines.append("- Runners: " + ", ".join(code(r) for r in entry.runners))
    text = "\n".join(lines) + "\n"
    if excerpt and finding is not None and finding.excerpt.strip():
        body = finding.excerpt.encode("utf-8")[:EXCERPT_MAX_BYTES].decode("utf-8", "ignore")
        text += f"\n<details><summary>Excerpt</summary>\n\n{code_fence(body)}\n\n</details>\n"
    return text + "\n"


def _jobs_head(count: int) -> str:
    return (
        f"### Jobs ({count:,})\n\n"
        "| # | Job | Attempt | Conclusion (GitHub) | Verdict (log) | Findings | Runner |\n"
        "| --: | --- | --: | --- | --- | --: | --- |\n"
    )


def _job_row(index: int, job: JobResult) -> str:
    facts = job.facts
    verdict = job.verdict.value if job.verdict else ("log gone" if job.log == "gone" else "-")
    return (
        f"| {index} | {code(facts.name or '(unnamed)')} "
        f"| {facts.attempt if facts.attempt is not None else '-'} | {safe_text(job.conclusion or '-')} "
        f"| {verdict} | {job.findings:,} | {code(facts.runner or '-')} |\n"
    )


def _trimmed(excerpts: int, rows: int, entries: int, report_path: Optional[str]) -> str:
    dropped = []
    if entries:
        dropped.append(plural(entries, "failure entry").replace("entrys", "entries"))
    if excerpts:
        dropped.append(plural(excerpts, "excerpt"))
    if rows:
        dropped.append(plural(rows, "job row"))
    where = code(report_path) if report_path else "the JSON report (<code>--json FILE</code>)"
    return (
        f"> **Trimmed:** {', '.join(dropped)} omitted to stay under GitHub's 1 MiB summary limit; "
        f"full report in {where}.\n"
    )


def render_many_markdown(
    report: Report, budget_bytes: int = DEFAULT_BUDGET_BYTES, report_path: Optional[str] = None
) -> str:
    """The step summary of a report of many jobs, never more than ``budget_bytes`` of UTF-8."""
    report = safe_report(report)  # credentials redacted, no lone surrogates, like every renderer
    jobs = report.jobs or ()
    word = PASSED if report.verdict is Verdict.PASS else FAILED
    header = f"## {TITLE}: {word}\n\n**{counts_line(report)}**\n"
    notes = _notes(report)
    left = budget_bytes - TRIMMED_RESERVE_BYTES - _size(report_path or "") - _size(header) - _size(notes)

    grouped: List[Tuple[str, List[TriageEntry]]] = [
        (s, [t for t in (report.triage or ()) if t.status == s]) for s in STATUS_ORDER
    ]
    ordered = [(s, e) for s, entries in grouped for e in entries]
    numbers: Dict[int, int] = {id(e): n for n, (_, e) in enumerate(ordered, 1)}
    causes = representatives(report)

    texts: Dict[Tuple[int, bool], str] = {}

    def entry_text(entry: TriageEntry, excerpt: bool) -> str:
        key = (id(entry), excerpt)
        if key not in texts:
            texts[key] = _entry(numbers[id(entry)], entry, causes[id(entry)], report, excerpt)
        return texts[key]

    # 1. every entry without its excerpt, in section order, while it fits
    kept: List[TriageEntry] = []
    for _status, entry in ordered:
        size = _size(entry_text(entry, False)) + 80  # 80: a section heading
        if size > left:
            break
        kept.append(entry)
        left -= size
    entries_dropped = len(ordered) - len(kept)
    # 2. the rows of the jobs table
    rows: List[str] = []
    left -= _size(_jobs_head(len(jobs))) + 120
    for index, job in enumerate(jobs):
        row = _job_row(index, job)
        if _size(row) > left:
            break
        rows.append(row)
        left -= _size(row)
    rows_dropped = len(jobs) - len(rows)
    # 3. excerpts, best entries first
    with_excerpt = set()
    candidates = 0
    for entry in kept:
        if causes[id(entry)] is None:
            continue
        extra = _size(entry_text(entry, True)) - _size(entry_text(entry, False))
        if extra == 0:
            continue
        candidates += 1
        if extra <= left:
            with_excerpt.add(id(entry))
            left -= extra
    excerpts_dropped = candidates - len(with_excerpt)

    parts = [header]
    if entries_dropped or rows_dropped or excerpts_dropped:
        parts.append(_trimmed(excerpts_dropped, rows_dropped, entries_dropped, report_path))
    if notes:
        parts.append(notes)
    kept_ids = {id(e) for e in kept}
    for status, entries in grouped:
        shown = [e for e in entries if id(e) in kept_ids]
        if not shown:
            continue
        body = "".join(entry_text(e, id(e) in with_excerpt) for e in shown)
        parts.append(f"### {SECTION_TITLES[status]} ({len(entries):,})\n\n" + body.rstrip("\n") + "\n")
    if jobs:
        table = _jobs_head(len(jobs)) + "".join(rows)
        if rows_dropped:
            table += f"\n_{rows_dropped:,} more jobs not listed here; the JSON report has them all._\n"
        parts.append(table)
    text = "\n".join(parts)
    if _size(text) > budget_bytes:
        note = "> **Trimmed:** cut to fit GitHub's 1 MiB summary limit; the JSON report has everything.\n\n"
        text = (note + text).encode("utf-8")[:budget_bytes].decode("utf-8", "ignore")
    return text


def render_many_text(report: Report) -> str:
    """The same story for a terminal: counts, notes, failures by status, one line per job."""
    report = safe_report(report)
    causes = representatives(report)
    jobs = report.jobs or ()
    word = PASSED if report.verdict is Verdict.PASS else FAILED
    out = [f"{word}: {counts_line(report)}"]
    for index in lying_jobs(report):
        out.append(
            f"GitHub was told otherwise: job #{index} {one_line(jobs[index].facts.name)} concluded success"
        )
    runners = unkillable_runners(report)
    if runners:
        out.append("Recycle these runners (processes survived SIGKILL): " + ", ".join(map(one_line, runners)))
    for status in STATUS_ORDER:
        entries = [t for t in (report.triage or ()) if t.status == status]
        if not entries:
            continue
        out.append("")
        out.append(f"{SECTION_TITLES[status]} ({len(entries)}):")
        for entry in entries:
            finding = causes[id(entry)]
            cause = f": {one_line(finding.message)}" if finding is not None else ""
            out.append(f"  {one_line(entry.signature)} ({entry.kind}){cause}")
            out.append(
                "    failed in: "
                + ", ".join(f"#{i} {one_line(jobs[i].facts.name)}" for i in entry.failed_jobs)
            )
            if entry.passed_jobs:
                out.append(
                    "    passed in: "
                    + ", ".join(f"#{i} {one_line(jobs[i].facts.name)}" for i in entry.passed_jobs)
                )
            if entry.runners:
                out.append("    runners: " + ", ".join(map(one_line, entry.runners)))
    out.append("")
    out.append(f"Jobs ({len(jobs)}):")
    for index, job in enumerate(jobs):
        verdict = job.verdict.value if job.verdict else ("none, log gone" if job.log == "gone" else "-")
        out.append(
            f"  #{index} {one_line(job.facts.name)}: GitHub {job.conclusion or '-'}, ours {verdict}, "
            f"{plural(job.findings, 'finding')}"
        )
    for diagnostic in report.diagnostics:
        out.append("")
        out.append(f"{diagnostic.title}: {one_line(diagnostic.text)}")
    return "\n".join(out) + "\n"

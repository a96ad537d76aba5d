"""The summary of many jobs: Dr.CI's shape, GitHub's 1 MiB budget, and no log text that renders live."""

from __future__ import annotations


import pytest

from analyzer.gh.combine import ScannedJob, combine
from analyzer.model import Finding, JobFacts, JobResult, Kind, Report, Severity, TriageEntry, Verdict
from analyzer.report.multi_markdown import counts_line, render_many_markdown, render_many_text

from ..report.gfm import assert_inert, render_html

BAIT = "![ok](https://evil/p.svg) [re-run](https://evil/login) <img src=x> www.evil.com a@b.co @team #12 https://evil/y"
MANY_JOBS_COLUMNS = 7


def job(name: str, attempt: int = 1, runner: str = "gpu-a", conclusion: str = "failure", findings=()):
    facts = JobFacts(run_id=1, attempt=attempt, job_id=None, name=name, runner=runner, head_sha="abc")
    return ScannedJob(facts=facts, conclusion=conclusion, findings=tuple(findings))


def crash(
    message: str = "Segmentation fault",
    excerpt: str = "Fatal Python error: Segmentation fault",
    test=None,
    rule: str = "fatal-python-error",
    kind: Kind = Kind.CRASH,
) -> Finding:
    return Finding(
        kind=kind,
        rule=rule,
        severity=Severity.ERROR,
        path="job-1.log",
        line=20,
        message=message,
        excerpt=excerpt,
        test=test,
    )


def test_counts_line_reads_like_dr_ci():
    jobs = tuple(JobResult(facts=JobFacts(name=f"j{i}"), verdict=Verdict.PASS) for i in range(12))
    triage = tuple(
        TriageEntry(signature=f"s{i}", kind="crash", test=None, status=s)
        for i, s in enumerate(["new", "flaky", "new", "known"])
    )
    report = Report(verdict=Verdict.FAIL, exit_status=1, jobs=jobs, triage=triage)
    assert counts_line(report) == "2 new, 1 flaky, 1 known failure across 12 jobs"
    assert counts_line(Report(verdict=Verdict.PASS, exit_status=0, jobs=jobs[:1], triage=())) == (
        "no failures across 1 job"
    )
    two_broken = triage[:1] + (
        TriageEntry("b1", "crash", None, "broken"),
        TriageEntry("b2", "crash", None, "broken"),
    )
    assert counts_line(Report(verdict=Verdict.FAIL, exit_status=1, jobs=jobs, triage=two_broken)) == (
        "1 new, 2 broken failures across 12 jobs"
    )


def test_sections_lying_success_and_runners_to_recycle():
    stuck = Finding(
        kind=Kind.UNKILLABLE_PROCESS,
        rule="guard-unkillable-process",
        severity=Severity.ERROR,
        path="",
        line=0,
        message="pid 7 in D state survived SIGKILL",
    )
    report = combine(
        [
            job("gpu (1)", findings=[crash()], runner="gpu-a"),
            job("gpu (1)", attempt=2, conclusion="success", runner="gpu-b"),
            job(
                "gpu (2)",
                conclusion="success",
                findings=[crash("atexit", rule="atexit-callback-ignored", kind=Kind.ATEXIT_EXCEPTION)],
                runner="gpu-c",
            ),
            job("gpu (3)", findings=[stuck], runner="gpu-wedged-7"),
        ]
    )
    text = render_many_markdown(report)
    assert text.startswith("## gpu-hang-guard: Failed\n\n**1 flaky, 2 broken failures across 4 jobs**\n")
    assert "### Flaky: failed and passed on the same commit (1)" in text
    assert "### Broken: failed and never passed on this commit (2)" in text
    told = [line for line in text.splitlines() if "GitHub was told otherwise" in line]
    assert len(told) == 1 and "job 2 ` gpu (2) `" in told[0]
    assert "**Recycle these runners:**" in text and "gpu-wedged-7" in text
    assert "Trimmed" not in text
    plain = render_many_text(report)
    assert plain.splitlines()[0] == "Failed: 1 flaky, 2 broken failures across 4 jobs"
    assert "GitHub was told otherwise: job #2 gpu (2) concluded success" in plain


def test_nothing_from_a_log_or_from_github_renders_live():
    report = combine(
        [
            job(
                f"gpu {BAIT} (1)",
                runner=f"runner {BAIT}",
                findings=[
                    crash(f"crash {BAIT}", f"```\n{BAIT}\n</details>\n", test=f"tests/{BAIT}::t"),
                    crash(f"`code {BAIT}` x", BAIT, rule=f"rule-{BAIT}"),
                ],
            ),
            job(f"gpu {BAIT} (1)", attempt=2, conclusion="success", runner="r2"),
        ]
    )
    markdown = render_many_markdown(report, report_path=f"out/{BAIT}.json")
    assert_inert(markdown, MANY_JOBS_COLUMNS)


def test_the_bait_is_live_without_escaping():
    html = render_html(BAIT)
    assert "<a " in html and "<img" in html


def _big_report(entries: int, excerpt_bytes: int) -> Report:
    jobs = []
    for i in range(entries):
        body = (f"line {i} " + "x" * 70 + "\n") * (excerpt_bytes // 80)
        jobs.append(
            job(f"gpu ({i})", findings=[crash(f"crash number {i}", body, test=f"tests/t.py::test_{i}")])
        )
    return combine(jobs)


@pytest.mark.parametrize("budget", [60_000, 250_000, 1_000_000])
def test_budget_is_kept_and_trimming_is_said(budget):
    report = _big_report(400, 8_000)
    text = render_many_markdown(report, budget_bytes=budget, report_path="report.json")
    assert len(text.encode("utf-8")) <= budget
    trimmed = [line for line in text.splitlines() if line.startswith("> **Trimmed:**")]
    assert len(trimmed) == 1 and "excerpt" in trimmed[0]
    assert "**400 broken failures across 400 jobs**" in text
    if budget == 1_000_000:
        # Excerpts go first: every entry and every job row still fits in 1 MB.
        assert "failure entr" not in trimmed[0] and "job row" not in trimmed[0]
        assert text.count("- Failed in: ") == 400


def test_tiny_budget_drops_whole_entries_and_says_how_many():
    report = _big_report(400, 800)
    text = render_many_markdown(report, budget_bytes=20_000)
    assert len(text.encode("utf-8")) <= 20_000
    (trimmed,) = [line for line in text.splitlines() if line.startswith("> **Trimmed:**")]
    shown = text.count("- Failed in: ")
    assert 0 < shown < 400 and f"{400 - shown} failure entries" in trimmed


def test_credentials_in_log_text_are_redacted_like_every_report():
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    report = combine([job("gpu", findings=[crash(f"token {secret} leaked", f"export GH_TOKEN={secret}")])])
    assert secret not in render_many_markdown(report) and secret not in render_many_text(report)

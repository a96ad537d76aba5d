"""The step summary: order, escaping against hostile log text, and the byte budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.model import CommandResult, Diagnostic, Finding, Kind, Report, Severity, Verdict
from analyzer.report.markdown import DEFAULT_BUDGET_BYTES, render_markdown

from . import mdcheck
from .reports import flood, guard_hang

GITHUB_SUMMARY_LIMIT = 1_048_576
HOSTILE = (
    "```` not a fence end\n"
    "</details></summary><script>alert('x')</script>\n"
    "<img src=x onerror=alert(1)>\n"
    "| a | b |\n"
    "\x1b[31mred\x1b[0m \x00 progress 10%\r progress 20%\r\n"
    "````````\n"
    "~~~\n"
    "end"
)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _hostile_report() -> Report:
    findings = (
        Finding(
            Kind.CRASH,
            "segfault",
            Severity.ERROR,
            "logs/a|b.txt",
            3,
            "Fatal Python error: <b>Segmentation</b> | `x|y` & *bold*\nsecond line",
            HOSTILE,
        ),
        Finding(
            Kind.TIMEOUT,
            "pytest-timeout",
            Severity.WARNING,
            "logs/<x>.txt",
            9,
            "</details><script>alert(2)</script>",
            HOSTILE,
        ),
    )
    return Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=findings,
        diagnostics=(Diagnostic("Stack </summary><script>", HOSTILE),),
        command=CommandResult(
            argv=("sh", "-c", "echo '</details>' | cat"), exit_code=139, duration_s=1.0, log_dir="/tmp/<logs>"
        ),
    )


def test_hostile_log_text_stays_in_its_place():
    md = render_markdown(_hostile_report())
    assert mdcheck.problems(md) == []
    parsed = mdcheck.parse(md)
    # Every excerpt and the diagnostic come through verbatim (cleaned of controls) inside fences.
    verbatim = [b for b in parsed.blocks if "</details></summary><script>alert('x')</script>" in b]
    assert len(verbatim) == 3
    assert "progress 10%\n progress 20%" in verbatim[0] and "\x1b" not in md and "\x00" not in md
    assert (
        "&lt;b&gt;Segmentation&lt;/b&gt; &#124; ` x|y ` &amp; &#42;bold&#42; second line" in md
    )
    assert "<summary>Stack &lt;/summary&gt;&lt;script&gt;</summary>" in md


def test_order_headline_root_cause_table_details_diagnostics_command():
    md = render_markdown(guard_hang())
    marks = [
        "## gpu-hang-guard: Failed",
        "**Failed:** hung in ` _prepare_to_exit `",
        "### Root cause",
        "### Findings (2)",
        "### Diagnostics",
        "<details><summary>Stack dumps (py-spy dump --nonblocking)</summary>\n\n```text\n",
        "<details><summary>GPU snapshot (nvidia-smi)</summary>",
        "### Command",
        "- Ended: exit 143 (SIGTERM) after 10m",
        "Full logs: ` /home/runner/work/_temp/gpu-hang-guard/logs `",
    ]
    positions = [md.index(mark) for mark in marks]
    assert positions == sorted(positions)
    assert md.splitlines()[0] == "## gpu-hang-guard: Failed"
    assert "Trimmed" not in md


def test_every_excerpt_is_collapsible_and_the_root_cause_is_open():
    md = render_markdown(flood(errors=3, warnings=2, notices=0))
    assert md.count("<details><summary>") == 4  # findings 2..5; 1 is shown open as the root cause
    assert "<details><summary>1. " not in md
    assert mdcheck.problems(md) == []


def test_budget_with_5000_findings_of_10_kb_excerpts():
    excerpt = ("0123456789" * 10 + "\n") * 100  # ~10 KB
    findings = tuple(
        Finding(
            Kind.WORKER_FAILURE,
            "rank-failed",
            Severity.ERROR if i < 50 else Severity.WARNING,
            "logs/job.txt",
            10 + i,
            f"rank {i} failed <x> | y",
            excerpt,
        )
        for i in range(5000)
    )
    report = Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=findings,
        diagnostics=(Diagnostic("Stack dumps", "frame\n" * 50_000),),
        command=CommandResult(argv=("pytest",), exit_code=1, log_dir="/tmp/logs"),
    )
    md = render_markdown(report, report_path="/tmp/report.json")
    assert _size(md) <= DEFAULT_BUDGET_BYTES < GITHUB_SUMMARY_LIMIT
    trimmed = [line for line in md.splitlines() if line.startswith("> **Trimmed:**")]
    assert len(trimmed) == 1
    assert "excerpts" in trimmed[0] and "1 MiB" in trimmed[0] and "/tmp/report.json" in trimmed[0]
    root = md.index("### Root cause")
    assert "rank 0 failed &lt;x&gt; &#124; y" in md[root : root + 400]
    assert excerpt.rstrip("\n") in md  # the root cause's excerpt survives whole
    assert mdcheck.problems(md) == []


def test_budget_trims_table_rows_when_excerpts_are_not_enough():
    findings = tuple(
        Finding(Kind.CRASH, "crash", Severity.ERROR, f"logs/{i:05}.txt", i + 1, "m" * 300, "")
        for i in range(5000)
    )
    md = render_markdown(Report(verdict=Verdict.FAIL, exit_status=1, findings=findings), budget_bytes=200_000)
    assert _size(md) <= 200_000
    assert "table row" in md and "more findings not listed here" in md
    assert mdcheck.problems(md) == []


def test_root_cause_excerpt_is_cut_last_and_says_so():
    big = Finding(Kind.CRASH, "crash", Severity.ERROR, "log.txt", 1, "the cause", "y" * 60_000)
    md = render_markdown(Report(verdict=Verdict.FAIL, exit_status=1, findings=(big,)), budget_bytes=20_000)
    assert _size(md) <= 20_000
    assert "the root cause's excerpt cut" in md and "the cause" in md
    assert mdcheck.problems(md) == []


def test_pass_report_is_short_and_clear():
    md = render_markdown(Report(verdict=Verdict.PASS, exit_status=0))
    assert md == "## gpu-hang-guard: Passed\n\n**Passed:** no findings\n"


_text = st.text(max_size=300)  # lone surrogates too: a file name's undecodable bytes


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(_text, min_size=1, max_size=30),
    excerpt=_text,
    budget=st.integers(min_value=1_500, max_value=30_000),
)
def test_never_over_budget_and_always_well_formed(messages, excerpt, budget):
    findings = tuple(
        Finding(Kind.CRASH, "rule", Severity.ERROR, "p.txt", i + 1, m, excerpt * 20)
        for i, m in enumerate(messages)
    )
    report = Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=findings,
        diagnostics=(Diagnostic("d", excerpt * 50),),
        command=CommandResult(argv=("pytest",), exit_code=1, log_dir="logs"),
    )
    md = render_markdown(report, budget_bytes=budget)
    assert _size(md) <= budget
    if _size(render_markdown(report, budget_bytes=10**9)) > budget:
        assert "**Trimmed:**" in md
    assert "<script" not in "\n".join(mdcheck.parse(md).outside).lower()


def test_passing_report_lists_warnings_without_a_root_cause():
    warning = Finding(
        Kind.SIGNAL_EXIT, "collateral", Severity.WARNING, "a.log", 3, "worker -15", "exitcode -15"
    )
    md = render_markdown(Report(verdict=Verdict.PASS, exit_status=0, findings=(warning,)))
    assert md.startswith("## gpu-hang-guard: Passed\n\n**Passed:** 1 warning, none at the failure level\n")
    assert "### Root cause" not in md
    assert "<details><summary>1. a.log:3: worker -15</summary>" in md


def test_a_budget_too_small_for_the_essentials_still_holds_and_says_so():
    finding = Finding(Kind.CRASH, "crash", Severity.ERROR, "p" * 2000, 1, "m" * 5000, "x" * 5000)
    md = render_markdown(Report(verdict=Verdict.FAIL, exit_status=1, findings=(finding,)), budget_bytes=300)
    assert _size(md) <= 300
    assert md.startswith("> **Trimmed:**")

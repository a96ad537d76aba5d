"""The summary rendered by cmark-gfm, the renderer GitHub itself uses (``cmarkgfm`` on PyPI).

``mdcheck`` covers the same rules without a dependency; this proves them against the real parser,
with raw HTML let through (as GitHub does before its sanitizer), so any live tag would show. Nothing
from a log, a file name or a command line may become a link, an image, a mention or an HTML element:
the only elements are the ones the renderer writes itself, and every ``@`` and ``#`` of log text sits
inside ``<code>`` or ``<pre>``, where GitHub's mention and issue-reference filters do not look.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import CommandResult, Finding, Kind, Report, Severity, Verdict
from analyzer.report.markdown import render_markdown

from .gfm import assert_inert, render_html
from .reports import GOLDEN_REPORTS
from .test_markdown import _hostile_report

REPO = Path(__file__).resolve().parents[2]
LINK_BAIT = "`![ok](https://evil/p.svg) [re-run](https://evil/login)`"
MORE_BAIT = "![passed](https://evil/x.svg) <img src=x> www.evil.com a@b.co @team #12 https://evil/y"
SUMMARY_COLUMNS = 6


def _assert_inert(markdown: str) -> None:
    assert_inert(markdown, SUMMARY_COLUMNS)


def _baited_report() -> Report:
    """Bait in every place a summary shows text: message, code span, path, rule, argv, log dir."""
    finding = Finding(
        Kind.LEAKED_PROCESS,
        "guard-leaked-process",
        Severity.WARNING,
        "",
        0,
        f"pid 4242 (`exec -a '![passed](https://evil/z.svg)' sleep 9`) was still running {MORE_BAIT}",
        "",
    )
    crash = Finding(
        Kind.CRASH, "segfault", Severity.ERROR, f"logs/{MORE_BAIT}.log", 7, f"{LINK_BAIT} {MORE_BAIT}",
        f"{LINK_BAIT}\n{MORE_BAIT}\n",
    )
    return Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=(crash, finding),
        command=CommandResult(
            argv=("bash", "-c", f"exec -a '![passed](https://evil/q.svg)' sleep 9 {MORE_BAIT}"),
            exit_code=1,
            log_dir=f"/tmp/{MORE_BAIT}",
        ),
    )


@pytest.mark.parametrize("name", sorted(GOLDEN_REPORTS) + ["hostile", "baited"])
def test_rendered_html_has_no_live_log_markup(name):
    if name == "hostile":
        report = _hostile_report()
    elif name == "baited":
        report = _baited_report()
    else:
        report = GOLDEN_REPORTS[name]
    _assert_inert(render_markdown(report, report_path=f"out/{MORE_BAIT}.json"))


def test_the_bait_would_render_without_escaping():
    """The check above can fail: the same text, unescaped, gives links, images and tags."""
    html = render_html(f"{LINK_BAIT.strip('`')} {MORE_BAIT}")
    assert "<a " in html and "<img" in html


def test_a_real_log_and_file_name_make_an_inert_summary(tmp_path: Path):
    program = tmp_path / "prog.py"
    program.write_text(
        "import atexit, sys\n"
        "def _prepare_to_exit():\n"
        "    raise RuntimeError(sys.argv[1])\n"
        "atexit.register(_prepare_to_exit)\n"
        "print('=== 3 passed in 0.01s ===')\n"
    )
    proc = subprocess.run(
        [sys.executable, str(program), f"{LINK_BAIT} {MORE_BAIT}"], capture_output=True, timeout=60
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "![passed](https:evil.svg) @team www.evil.com.log"
    log.write_bytes(proc.stdout + proc.stderr)
    summary = tmp_path / "summary.md"
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "scan", "--summary", str(summary), str(logs)],
        capture_output=True, timeout=120, cwd=str(REPO), env={**os.environ, "GITHUB_ACTIONS": "true"},
    )
    assert done.returncode == 1, done.stderr
    markdown = summary.read_text(encoding="utf-8")
    assert "evil/login" in markdown and "@team" in markdown  # the bait is shown, as text
    _assert_inert(markdown)


def test_a_leaked_process_named_like_markdown_makes_an_inert_summary(tmp_path: Path):
    """A real guard run: the tests leave a child whose argv[0] (``exec -a``) is an image and a link."""
    argv0 = "![passed](https://evil/x.svg) [re-run](https://evil/login) @team"
    summary = tmp_path / "summary.md"
    done = subprocess.run(
        [
            sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"),
            "--summary", str(summary), "--", "bash", "-c", f"(exec -a '{argv0}' sleep 60) & echo started",
        ],
        capture_output=True, timeout=120, cwd=str(REPO),
    )
    assert done.returncode == 0, done.stderr  # a leaked process is a warning: the verdict is pass
    markdown = summary.read_text(encoding="utf-8")
    assert "evil/x.svg" in markdown and "leaked-process" in markdown
    _assert_inert(markdown)


def test_code_spans_back_to_back_stay_two_spans():
    # A hung process's name (exec -a) or a log line can end one span where the next begins: written
    # side by side, the first's closing backtick and the second's opening run would make one fence,
    # and the second span's text would be Markdown again (found by the red-team pass 27).
    from analyzer.report._escape import markdown_inline

    inline = markdown_inline("hung in `a```b<img src=x>` (pid 1)")
    _assert_inert(inline)
    assert render_html(inline).count("<code>") == 2

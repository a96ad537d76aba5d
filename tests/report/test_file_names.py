"""Any file name the file system allows renders in every format (property-based, issue 10.9).

A POSIX name is any bytes but ``/`` and NUL; Python hands it over as ``os.fsdecode`` does, with
undecodable bytes as lone surrogates. Every format must render it, encode it as UTF-8 and in ASCII
with ``backslashreplace`` (what the CLI does for any stdout), and keep every location on one line.
"""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.model import CommandResult, Finding, Kind, Report, Severity, Verdict
from analyzer.report.github import render_annotations, render_outputs
from analyzer.report.json_report import render_json
from analyzer.report.markdown import render_markdown
from analyzer.report.text import render_text

from .runner_view import runner_commands

_name = st.binary(min_size=1, max_size=60).map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_"))


def _report(name: str) -> Report:
    finding = Finding(Kind.CRASH, "segfault", Severity.ERROR, f"logs/{name}", 3, f"crash in {name}", name)
    return Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=(finding,),
        command=CommandResult(argv=("pytest", name), exit_code=139, log_dir=f"/tmp/{name}"),
    )


@settings(max_examples=150, deadline=None)
@given(raw=_name)
def test_every_format_renders_any_name(raw: bytes):
    name = os.fsdecode(raw)
    report = _report(name)
    text = render_text(report)
    outputs = {
        "text": text,
        "json": render_json(report),
        "markdown": render_markdown(report, report_path=f"out/{name}.json"),
        "github": render_annotations(report),
    }
    for rendered in outputs.values():
        rendered.encode("utf-8")
        rendered.encode("ascii", "backslashreplace")
    # The location line of the text report is one line: no character of the name breaks it.
    assert sum(1 for line in text.split("\n") if line.startswith("  1. ")) == 1
    assert [c.name for c in runner_commands(outputs["github"].encode())] == ["error"]
    assert runner_commands(outputs["json"].encode()) == ()
    assert json.loads(outputs["json"])["findings"][0]["path"].startswith("logs/")
    # $GITHUB_OUTPUT gets the name's real bytes (surrogateescape), one value however it looks.
    render_outputs(report, None).encode("utf-8", "surrogateescape")

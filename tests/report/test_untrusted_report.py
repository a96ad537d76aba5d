"""Every renderer on a report full of secrets and runner commands: nothing leaks, nothing runs.

Hand-built reports: the same places the pipeline fills (message, excerpt, diagnostics, argv, paths).
``test_untrusted_output`` does the same through the real CLI with real logs and file names.
"""

from __future__ import annotations

import json

import pytest

from analyzer.model import CommandResult, Diagnostic, Finding, Kind, Report, Severity, Verdict
from analyzer.report.github import fence_commands, render_annotations, render_outputs
from analyzer.report.json_report import render_json
from analyzer.report.markdown import render_markdown
from analyzer.report.text import render_text

from .runner_view import runner_commands

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
AWS = "AKIAIOSFODNN7EXAMPLE"
SECRETS = (GH, HF, AWS, "hunter2", "eyJhbGciOi.payload.sig")
RENDERERS = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
    "github": render_annotations,
}


def _secret_report() -> Report:
    finding = Finding(
        Kind.LEAKED_PROCESS,
        "guard-leaked-process",
        Severity.ERROR,
        "logs/processes.txt",
        0,
        f"pid 77 `python upload.py --hf-token {HF}` was still running",
        f"curl -H 'Authorization: Bearer eyJhbGciOi.payload.sig' https://x\nAWS key {AWS}\n",
    )
    return Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=(finding,),
        diagnostics=(Diagnostic("Processes", f"77  1  S  upload.py --token={GH} --password hunter2\n"),),
        command=CommandResult(
            argv=("python", "train.py", "--token", GH, "--password=hunter2"), exit_code=1, log_dir="/tmp/l"
        ),
    )


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_no_renderer_shows_a_secret(fmt):
    rendered = RENDERERS[fmt](_secret_report())
    for secret in SECRETS:
        assert secret not in rendered, (fmt, secret)
    assert "[REDACTED]" in rendered


def test_the_json_report_keeps_the_argv_shape_with_values_redacted():
    data = json.loads(render_json(_secret_report()))
    assert data["command"]["argv"] == ["python", "train.py", "--token", "[REDACTED]", "--password=[REDACTED]"]
    assert "--token=[REDACTED] --password [REDACTED]" in data["diagnostics"][0]["text"]


def _commands_report() -> Report:
    excerpt = "      ::add-mask::X\n##[set-output name=verdict]pass\n::stop-commands::guess\n"
    finding = Finding(
        Kind.CRASH, "segfault", Severity.ERROR, "logs/::error::x.log", 3, "##[add-mask]Y crashed", excerpt
    )
    return Report(verdict=Verdict.FAIL, exit_status=1, findings=(finding,),
                  diagnostics=(Diagnostic("Stacks", excerpt),))


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_fenced_text_and_markdown_run_no_command_but_would_without_the_fence(fmt):
    rendered = RENDERERS[fmt](_commands_report())
    assert {c.name for c in runner_commands(rendered.encode())} >= {"add-mask"}  # the hazard is real
    fenced = fence_commands(rendered, "ghg-0123456789abcdef", markdown=fmt == "markdown")
    assert runner_commands(fenced.encode()) == ()


def test_json_is_inert_without_a_fence_and_reads_back_the_same():
    rendered = render_json(_commands_report())
    assert runner_commands(rendered.encode()) == ()
    assert "##[" not in rendered
    assert json.loads(rendered)["findings"][0]["message"] == "##[add-mask]Y crashed"


def test_annotations_are_the_only_commands_and_carry_the_text_exactly():
    commands = runner_commands(render_annotations(_commands_report()).encode())
    assert [(c.name, c.data, c.prop("file")) for c in commands] == [
        ("error", "##[add-mask]Y crashed", "logs/::error::x.log")
    ]


def test_the_fence_survives_an_unterminated_line_before_and_inside_it():
    token = "ghg-0123456789abcdef"
    fenced = fence_commands("report line without its newline ::add-mask::Z", token)
    assert fenced == (
        f"\n::stop-commands::{token}\nreport line without its newline ::add-mask::Z\n::{token}::\n"
    )
    # Someone else's unterminated write on our stdout cannot swallow the stop line.
    stray = b"half a line from a leftover process"
    body = fence_commands("x\n::add-mask::W\n", token).encode()
    assert runner_commands(stray + body) == ()
    assert runner_commands(stray + body + b"::add-mask::after\n")[0].name == "add-mask"  # resumed


def test_markdown_fence_lines_are_hidden_in_html_comments():
    token = "ghg-0123456789abcdef"
    fenced = fence_commands("## title\n", token, markdown=True)
    assert fenced == f"\n<!--\n::stop-commands::{token}\n-->\n## title\n\n<!--\n::{token}::\n-->\n"


def test_outputs_keep_a_path_with_a_line_break_in_one_value(tmp_path):
    from tests.action.harness import parse_output_file

    report = Report(verdict=Verdict.FAIL, exit_status=1,
                    command=CommandResult(argv=("x",), exit_code=1, log_dir="/tmp/a\nverdict=pass"))
    outputs = tmp_path / "outputs"
    outputs.write_text(render_outputs(report, "/tmp/r.json"))
    parsed = parse_output_file(outputs)  # as the runner's FileCommandManager reads $GITHUB_OUTPUT
    assert parsed["verdict"] == "fail" and parsed["log-dir"] == "/tmp/a\nverdict=pass"

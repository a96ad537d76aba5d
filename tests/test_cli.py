"""The command line end to end, as users run it: real subprocesses, (exit status, stdout, stderr) together."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Optional, Tuple

import hypothesis
import hypothesis.strategies
import pytest

REPO = Path(__file__).resolve().parents[1]

ATEXIT_PROGRAM = textwrap.dedent(
    """
    import atexit

    def _prepare_to_exit():
        raise RuntimeError("NCCL communicator was aborted")

    atexit.register(_prepare_to_exit)
    print("=== 3 passed in 0.01s ===")
    """
)


def run_cli(*args: str, stdin: Optional[bytes] = None, cwd: Optional[Path] = None) -> Tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=str(cwd or REPO),
        timeout=120,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2, (code, out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("python -m analyzer: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


@pytest.fixture()
def atexit_log(tmp_path: Path) -> Path:
    """A real log: the output of a Python program whose atexit callback raised (and which exited 0)."""
    script = tmp_path / "prog.py"
    script.write_text(ATEXIT_PROGRAM)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60)
    assert proc.returncode == 0  # the very lie this project exists to catch
    log = tmp_path / "job.log"
    log.write_bytes(proc.stdout + proc.stderr)
    return log


def test_no_arguments_is_a_one_line_usage_error():
    assert_one_line_error(*run_cli(), "PATH")


def test_missing_input_names_the_path(tmp_path: Path):
    missing = tmp_path / "nope.log"
    assert_one_line_error(*run_cli(str(missing)), str(missing))


def test_bad_config_names_the_file(tmp_path: Path, atexit_log: Path):
    config = tmp_path / "guard.yaml"
    config.write_text("severity:\n  no-such-rule: warning\n")
    assert_one_line_error(*run_cli("--config", str(config), str(atexit_log)), str(config), "no-such-rule")


def test_unknown_format_is_a_usage_error(atexit_log: Path):
    assert_one_line_error(*run_cli("--format", "xml", str(atexit_log)), "xml")


def test_scan_explains_an_atexit_failure_in_every_output(tmp_path: Path, atexit_log: Path):
    report = tmp_path / "report.json"
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "outputs.txt"
    summary.write_text("earlier step's summary\n")
    code, out, err = run_cli(
        str(atexit_log), "--json", str(report), "--summary", str(summary), "--github-output", str(outputs)
    )
    assert (code, err) == (1, "")
    assert "RuntimeError" in out and "_prepare_to_exit" in out
    data = json.loads(report.read_text())
    assert data["version"] == 1 and data["verdict"] == "fail" and data["command"] is None
    first = data["findings"][0]
    assert set(first) >= {"kind", "rule", "severity", "path", "line", "message", "excerpt"}
    assert (first["kind"], first["severity"], first["path"]) == ("atexit-exception", "error", str(atexit_log))
    assert "_prepare_to_exit" in first["message"] and "RuntimeError" in first["message"]
    assert "Traceback" in first["excerpt"]
    text = summary.read_text()
    assert text.startswith("earlier step's summary\n") and "RuntimeError" in text
    assert "verdict=fail" in outputs.read_text()


def test_outputs_and_summary_start_on_a_line_of_their_own_after_an_earlier_partial_line(
        tmp_path: Path, atexit_log: Path):
    # An earlier command of the step left its last output line unterminated: appended as is, the
    # guard's "verdict=fail" would become part of that line's value and the verdict would be lost.
    from analyzer.file_commands import check_key_values, output_name_check

    outputs, summary = tmp_path / "outputs.txt", tmp_path / "summary.md"
    outputs.write_bytes(b"earlier=value")
    summary.write_bytes(b"earlier summary")
    code, _, err = run_cli(str(atexit_log), "--summary", str(summary), "--github-output", str(outputs))
    assert (code, err) == (1, "")
    data = outputs.read_bytes()
    assert data.startswith(b"earlier=value\n") and b"\nverdict=fail\n" in data
    assert check_key_values(data, output_name_check(())).dropped == ()
    assert summary.read_bytes().startswith(b"earlier summary\n")


def test_scan_reads_standard_input(atexit_log: Path):
    code, out, err = run_cli("--format", "json", "-", stdin=atexit_log.read_bytes())
    assert (code, err) == (1, "")
    assert json.loads(out)["findings"][0]["kind"] == "atexit-exception"


def test_github_format_annotates_the_root_cause(atexit_log: Path):
    code, out, err = run_cli("--format", "github", str(atexit_log))
    assert (code, err) == (1, "")
    assert out.startswith("::error file=")
    assert "RuntimeError" in out.splitlines()[0]


def test_run_without_a_command_is_a_usage_error():
    assert_one_line_error(*run_cli("run", "--timeout", "5s"), "--")
    assert_one_line_error(*run_cli("run", "--"), "no command")


def test_run_help_needs_no_command():
    code, out, err = run_cli("run", "--help")
    assert (code, err) == (0, "")
    assert out.startswith("usage: python -m analyzer run") and "--abort-on" in out


def test_run_rejects_a_bad_duration():
    assert_one_line_error(*run_cli("run", "--timeout", "ten", "--", "true"), "--timeout", "ten")


def test_run_fails_a_command_that_exits_0_after_an_atexit_exception(tmp_path: Path):
    script = tmp_path / "prog.py"
    script.write_text(ATEXIT_PROGRAM)
    report = tmp_path / "report.json"
    code, out, err = run_cli(
        "run", "--log-dir", str(tmp_path / "logs"), "--json", str(report), "--", sys.executable, str(script)
    )
    assert code == 1, (out, err)
    data = json.loads(report.read_text())
    assert data["command"]["exit_code"] == 0 and data["command"]["timed_out"] is False
    assert data["findings"][0]["kind"] == "atexit-exception"
    assert b"RuntimeError" in (tmp_path / "logs" / "stderr.log").read_bytes()


def test_run_passes_through_the_command_status(tmp_path: Path):
    code, out, err = run_cli(
        "run", "--log-dir", str(tmp_path), "--", sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"
    )
    assert code == 3
    assert out.startswith("hi\n")
    assert (tmp_path / "stdout.log").read_bytes() == b"hi\n"


def test_run_times_out_with_124_and_names_where_it_hung(tmp_path: Path):
    script = tmp_path / "hang.py"
    script.write_text("import time\n\ndef wait_for_peer():\n    time.sleep(600)\n\nwait_for_peer()\n")
    report = tmp_path / "report.json"
    started = time.monotonic()
    code, out, err = run_cli(
        "run", "--timeout", "2s", "--kill-grace", "1s", "--log-dir", str(tmp_path / "logs"),
        "--json", str(report), "--", sys.executable, str(script),
    )
    assert time.monotonic() - started < 60
    assert code == 124, (out, err)
    data = json.loads(report.read_text())
    assert data["command"]["timed_out"] is True and data["command"]["timeout_reason"] == "wall"
    hang = [f for f in data["findings"] if f["kind"] == "hang"]
    assert hang and "wait_for_peer" in hang[0]["message"]


def test_a_usage_error_in_github_format_is_also_an_annotation():
    code, out, err = run_cli("run", "--format", "github", "--timeout", "10 minutes", "--", "true")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert out == (
        "::error title=gpu-hang-guard::--timeout: '10 minutes' is not a duration; "
        "write it as 90, 30s, 10m or 1h\n"
    )


def test_after_the_command_ends_the_runners_signals_cannot_stop_the_report(tmp_path: Path):
    import signal

    from analyzer.cli import main

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        status = main(["run", "--log-dir", str(tmp_path), "--", sys.executable, "-c", "print('ok')"])
        assert status == 0
        # The runner's SIGTERM comes 7.5 s after its SIGINT; by then only the report is left to write.
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_outputs_name_the_log_dir_absolutely_even_when_given_relative(tmp_path: Path):
    outputs = tmp_path / "outputs.txt"
    code, out, err = run_cli(
        "run", "--log-dir", "logs", "--github-output", str(outputs), "--", sys.executable, "-c", "pass",
        cwd=tmp_path,
    )
    assert (code, err) == (0, "")
    assert f"log-dir={tmp_path / 'logs'}\n" in outputs.read_text()
    assert (tmp_path / "logs" / "stdout.log").exists()


# --- Hostile output of a guarded command (issue 9): what the runner would do with the step's log ---

HOSTILE_PROGRAM = textwrap.dedent(
    """
    import atexit, sys

    def _prepare_to_exit():
        # A traceback prints the line of the file the code claims to come from: here "::add-mask::X".
        exec(compile("\\n\\nraise RuntimeError(sys.argv[2])", sys.argv[1], "exec"))

    atexit.register(_prepare_to_exit)
    print("=== 3 passed in 0.01s ===")
    """
)
TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def _hostile_command(tmp_path: Path) -> list:
    source = tmp_path / "source.txt"
    source.write_text("a\nb\n      ::add-mask::X\n")
    script = tmp_path / "prog.py"
    script.write_text(HOSTILE_PROGRAM)
    message = f"##[set-output name=verdict]pass --api-key={TOKEN}"
    return [sys.executable, str(script), str(source), message]


def run_cli_on_github(*args: str, cwd: Optional[Path] = None) -> Tuple[int, bytes]:
    """As the action runs the guard: under GITHUB_ACTIONS, stderr merged into stdout (``2>&1``)."""
    import os

    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        input=b"",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=str(cwd or REPO),
        env={**os.environ, "GITHUB_ACTIONS": "true"},
        timeout=120,
    )
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "github"])
def test_a_guarded_commands_output_and_its_report_run_no_command_on_the_runner(tmp_path: Path, fmt: str):
    from tests.report.runner_view import runner_commands

    code, out = run_cli_on_github(
        "run", "--format", fmt, "--log-dir", str(tmp_path / "logs"), "--", *_hostile_command(tmp_path)
    )
    assert code == 1, out
    assert b"::add-mask::X" in out and b"##[set-output name=verdict]pass" in out  # the attack is there
    commands = runner_commands(out)
    assert [c.name for c in commands] == (["error"] if fmt == "github" else [])
    # The log stays byte-exact, secrets and all (README: the artifact holds what the tests printed).
    assert TOKEN.encode() in (tmp_path / "logs" / "stderr.log").read_bytes()


def test_secrets_on_the_command_line_and_in_the_log_are_redacted_in_every_report(tmp_path: Path):
    report, summary = tmp_path / "r.json", tmp_path / "s.md"
    code, out, err = run_cli(
        "run", "--log-dir", str(tmp_path / "logs"), "--json", str(report), "--summary", str(summary),
        "--", *_hostile_command(tmp_path), "--token", "s3cr3t-value",
    )
    assert code == 1, err
    for text in (out, report.read_text(), summary.read_text()):
        assert TOKEN not in text and "s3cr3t-value" not in text
        assert "[REDACTED]" in text
    data = json.loads(report.read_text())
    assert data["command"]["argv"][-2:] == ["--token", "[REDACTED]"]
    code, out, err = run_cli("--format", "github", str(tmp_path / "logs" / "stderr.log"))
    assert TOKEN not in out and "--api-key=[REDACTED]" in out


def test_a_report_file_that_fails_after_the_run_warns_and_keeps_the_verdicts_status(tmp_path: Path):
    code, out, err = run_cli(
        "run", "--log-dir", str(tmp_path / "logs"), "--json", "/dev/full", "--", *_hostile_command(tmp_path)
    )
    assert code == 1, err  # the verdict's status (exit 0 but an atexit exception), not 2
    assert "Findings (root cause first):" in out
    warnings = [line for line in err.splitlines() if line.startswith("python -m analyzer: warning: ")]
    assert warnings == [
        "python -m analyzer: warning: --json /dev/full: cannot write: No space left on device; "
        "the report is on stdout"
    ]


def test_the_summary_counts_what_the_file_already_holds_against_githubs_limit(tmp_path, atexit_log):
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 990_000 + "\n")  # earlier steps' summaries (or the command's) fill it
    code, out, err = run_cli(str(atexit_log), "--summary", str(summary))
    assert (code, err) == (1, "")
    size = summary.stat().st_size
    assert 990_001 < size <= 1_000_000 < 1_048_576  # GitHub drops a step summary over 1 MiB whole
    assert "RuntimeError" in summary.read_text()[990_001:]


def test_a_report_path_that_is_not_utf8_is_written_and_named(tmp_path: Path, atexit_log: Path):
    import os

    report = os.path.join(os.fsencode(tmp_path), b"r\xff.json")
    outputs = tmp_path / "outputs.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", str(atexit_log), "--json", os.fsdecode(report),
         "--github-output", str(outputs)],
        capture_output=True, timeout=120, cwd=str(REPO), env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert (proc.returncode, proc.stderr) == (1, b"")
    assert json.loads(open(report, "rb").read())["verdict"] == "fail"
    assert b"report=" + report + b"\n" in outputs.read_bytes()  # the real bytes, for the next step


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_with_stderr_apart_the_runner_still_runs_only_our_annotations(tmp_path: Path, fmt: str):
    """Direct CLI use in a step: stdout and stderr reach the runner as two streams, read in either order."""
    import os

    from tests.report.runner_view import every_order

    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--format", fmt, "--log-dir", str(tmp_path / "logs"), "--",
         *_hostile_command(tmp_path)],
        input=b"", capture_output=True, cwd=str(REPO), env={**os.environ, "GITHUB_ACTIONS": "true"},
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert b"::add-mask::X" in proc.stdout + proc.stderr
    for commands in every_order(proc.stdout, proc.stderr):
        assert [c.name for c in commands] == (["error"] if fmt == "github" else [])


# -- durations have an upper bound (session 8) ------------------------------------------------------

def test_a_kill_grace_past_the_maximum_is_a_usage_error_not_an_endless_wait():
    # Before the cap the guard waited this long after a SIGTERM the command ignored.
    assert_one_line_error(*run_cli("run", "--kill-grace", "99999999999999999999", "--", "true"),
                          "--kill-grace", "99999999999999999999")


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    number=hypothesis.strategies.decimals(min_value=0, max_value=10 ** 25, places=3, allow_nan=False),
    unit=hypothesis.strategies.sampled_from(["", "ms", "s", "m", "h"]),
)
def test_every_duration_up_to_seven_days_parses_and_every_longer_one_is_a_usage_error(number, unit):
    from analyzer.durations import MAX_DURATION_S, parse_duration
    from analyzer.errors import UsageError

    text = f"{number:f}{unit}"
    seconds = float(f"{number:f}") * {"": 1, "ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    if seconds <= MAX_DURATION_S:
        assert parse_duration(text, "--timeout") == pytest.approx(seconds)
    else:
        with pytest.raises(UsageError) as raised:
            parse_duration(text, "--timeout")
        assert str(raised.value) == f"--timeout: {text!r} is longer than the most allowed, 168h (7 days)"


def test_exactly_seven_days_is_allowed():
    from analyzer.durations import MAX_DURATION_S, parse_duration

    assert parse_duration("168h") == parse_duration("604800") == MAX_DURATION_S
    assert run_cli("run", "--timeout", "604800.001", "--", "true")[0] == 2


@pytest.mark.parametrize("limit", [8, 12, 16])
def test_too_few_file_descriptors_for_the_guard_is_a_one_line_error(tmp_path: Path, limit: int):
    import resource

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--", "true"],
        capture_output=True, text=True, preexec_fn=few_descriptors, timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()  # where it ran out decides the wording, never a traceback
    assert line.startswith("python -m analyzer: error: ") and "Too many open files" in line

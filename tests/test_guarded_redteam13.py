"""A thirteenth red-team pass over the guarded run (session 13): real processes through the real CLI.

The workflow files are read back as GitHub's runner reads them (``runner_pairs`` of test_guarded_files,
after ``runner_text`` below).
"""

from __future__ import annotations

import codecs
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analyzer.file_commands import check_key_values, output_name_check
from analyzer.report.github import OUTPUT_NAMES
from tests.report.runner_view import runner_commands
from tests.test_guarded_files import FILES, GUARD_LINES, guard, runner_pairs

_BOMS = (  # longest first: FF FE 00 00 is UTF-32 LE, not UTF-16 LE
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def runner_text(data: bytes) -> str:
    """``File.ReadAllText`` (FileCommandManager.cs:369 at 258d6c8): a ``StreamReader`` that picks UTF-8,
    UTF-16 or UTF-32 by a byte order mark and otherwise reads UTF-8, each bad byte one U+FFFD."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(encoding, errors="replace")
    return data.decode("utf-8", errors="replace")


@pytest.fixture()
def workflow(tmp_path: Path) -> Dict[str, Path]:
    """Empty per-step files, as the runner creates them (FileCommandManager.InitializeFiles)."""
    (tmp_path / "_runner_file_commands").mkdir()
    files = {name: tmp_path / "_runner_file_commands" / name.lower() for name in FILES}
    for path in files.values():
        path.write_bytes(b"")
    return files


def runner_outputs(path: Path) -> Dict[str, str]:
    return dict(runner_pairs(runner_text(path.read_bytes())))


# -- 1. the guard reads the command's file commands as the runner decodes them ----------------------

# Two different bytes that the runner reads as the same U+FFFD: the guard saw one heredoc ``x`` closed
# by the last line; the runner closes it on the second line, takes verdict=pass, and opens a heredoc
# whose delimiter is the guard's own first line, which swallows the guard's verdict.
FORGED_WITH_BAD_BYTES = b"x<<\xfe\n\xff\nverdict=pass\nfindings<<verdict=fail\n\xfe\n"


def printf_octal(data: bytes) -> str:
    """``data`` as a printf(1) format of octal escapes only (nothing in it is the shell's)."""
    return "".join(f"\\{byte:03o}" for byte in data)


def test_bytes_the_runner_decodes_alike_cannot_smuggle_a_verdict_past_the_check(tmp_path, workflow):
    code, _, err, report = guard(
        tmp_path, workflow, f"printf '{printf_octal(FORGED_WITH_BAD_BYTES)}' >> \"$GITHUB_OUTPUT\"; exit 3",
    )
    assert code == 3 and report["verdict"] == "fail", err
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert outputs["verdict"] == "fail", outputs
    assert outputs["findings"] == str(len(report["findings"]))


byte_pieces = st.sampled_from(
    [b"verdict=pass", b"x<<\xfe", b"x<<\xff", b"\xfe", b"\xff", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff",
     b"\xc3", b"\xed\xa0\x80", b"findings<<verdict=fail", b"a<<E", b"E", b"k=\xfe", b"", b"\r", b"\x00"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(byte_pieces, st.sampled_from([b"\n", b""])), max_size=10))
@example([(line, b"\n") for line in FORGED_WITH_BAD_BYTES.split(b"\n")[:-1]])
def test_whatever_bytes_the_command_writes_the_runner_reads_the_guards_outputs(parts):
    written = b"".join(text + end for text, end in parts)
    kept = check_key_values(written, output_name_check(OUTPUT_NAMES)).kept
    outputs = dict(runner_pairs(runner_text(kept + GUARD_LINES.encode())))
    assert (outputs["verdict"], outputs["exit-code"], outputs["report"], outputs["findings"]) == (
        "fail", "124", "/r.json", "2"
    )


# -- 3. the fence lines start a line of their own, whatever else printed on the step's stdout ---------

def _step(tmp_path: Path, shell: str, *guarded: str) -> subprocess.CompletedProcess:
    """A step's shell running ``shell`` around ``GUARD`` (the guard with an annotation per finding)."""
    guard_argv = " ".join(shlex.quote(part) for part in (
        sys.executable, "-m", "analyzer", "run", "--format", "github", "--log-dir", str(tmp_path / "logs"),
        "--", *guarded))
    env = dict(os.environ, GITHUB_ACTIONS="true", GUARD=guard_argv)
    return subprocess.run(["sh", "-c", shell], capture_output=True, env=env, timeout=60)


def test_a_partial_line_the_step_printed_before_the_guard_cannot_swallow_the_stop_line(tmp_path):
    # ActionCommand.TryParseV2 takes a command only at the start of a line (src/Runner.Common/
    # ActionCommand.cs:61-66 at 258d6c8): "Running: ::stop-commands::TOKEN" stops nothing.
    proc = _step(tmp_path, 'printf "Running: "; eval "$GUARD"',
                 "sh", "-c", "echo '::add-mask::hunter2'; echo '::error::forged by the command'")
    names = [(command.name, command.data) for command in runner_commands(proc.stdout)]
    assert ("add-mask", "hunter2") not in names and ("error", "forged by the command") not in names, names


def test_a_partial_line_a_sibling_printed_meanwhile_cannot_swallow_the_resume_line(tmp_path):
    # Another process of the step writes the same stdout pipe while the guard runs: the guard's own
    # last byte was a line end, so the resume token would be glued to "partial" and every annotation
    # of the guard after it would be read as text inside the fence.
    proc = _step(tmp_path, '(sleep 0.5; printf partial) & eval "$GUARD"; wait',
                 "sh", "-c", "sleep 1.5; exit 3")
    assert proc.stdout.count(b"partial") == 1, proc.stdout
    names = [command.name for command in runner_commands(proc.stdout)]
    assert "error" in names, (names, proc.stdout)


# -- 2. outputs the step set before the guard started stay the step's ---------------------------------

ACTION_LIB = Path(__file__).resolve().parents[1] / "scripts" / "action-lib.sh"


@pytest.mark.parametrize("where", ["its own GITHUB_OUTPUT", "the real GITHUB_OUTPUT"])
def test_the_outputs_the_action_set_before_the_guard_cannot_be_forged_by_the_command(
        tmp_path, workflow, where):
    # action.yml's guard step sets pid, summary-file and output-file (put_output) before it execs the
    # guard; the stop step after a cancel then kills that pid and appends that output-file to its own
    # outputs. The runner keeps the last value of a name (FileCommandManager.cs:335-347 SetOutput), so a
    # command's output-file=/tmp/forged (holding verdict=pass) would win.
    subprocess.run(["bash", "-c", f"source {shlex.quote(str(ACTION_LIB))}; put_output pid 4242; "
                    f"put_output summary-file /s; put_output output-file /o"],
                   env=dict(os.environ, GITHUB_OUTPUT=str(workflow["GITHUB_OUTPUT"])), check=True)
    target = '"$GITHUB_OUTPUT"' if where.startswith("its own") else (
        '"$RUNNER_TEMP"/_runner_file_commands/github_output')
    forged = r"pid=1\noutput-file=/tmp/forged\nSummary-File=/tmp/forged.md\ncoverage=87\n"
    code, _, err, report = guard(tmp_path, workflow, f"printf '{forged}' >> {target}; exit 3")
    assert code == 3 and report["verdict"] == "fail", err
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert (outputs["pid"], outputs["summary-file"], outputs["output-file"]) == ("4242", "/s", "/o"), outputs
    assert "Summary-File" not in outputs
    assert outputs.get("coverage") == ("87" if where.startswith("its own") else None)
    assert "$GITHUB_OUTPUT" in err, err


# -- 6. every signal that would kill the guard silently leaves a report (from outside: a cancel) ------

_RTMIN, _RTMAX = int(signal.SIGRTMIN), int(signal.SIGRTMAX)
SILENT_KILLERS = {  # default action: terminate (SIGABRT, SIGSYS: and dump core), signal(7)
    "SIGABRT": int(signal.SIGABRT), "SIGSYS": int(signal.SIGSYS), "SIGSTKFLT": 16,  # Linux's number
    "SIGRTMIN": _RTMIN, "SIGRTMIN+3": _RTMIN + 3, "SIGRTMAX": _RTMAX,
}


@pytest.mark.parametrize("name", sorted(SILENT_KILLERS))
def test_a_signal_that_kills_by_default_is_a_cancel_with_a_report(tmp_path, name):
    # Sent from outside the command's tree (here by the guard's parent, as the runner's cancel is):
    # sent by the command itself it is noted, not a cancel (guard23, tests/test_guarded_signal_senders.py).
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(logs), "--json", str(tmp_path / "r.json"),
         "--", "sh", "-c", "echo $$; exec sleep 30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    bound, log = time.monotonic() + 30, logs / "stdout.log"
    while not (log.exists() and log.read_text()) and time.monotonic() < bound:  # the command runs
        time.sleep(0.05)
    os.kill(proc.pid, SILENT_KILLERS[name])
    proc.communicate(timeout=60)
    assert proc.returncode == 124, proc
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "fail" and report["command"]["timeout_reason"] == "cancelled"
    assert f"cancelled ({name})" in json.dumps(report), report["findings"]
    pid = int((logs / "stdout.log").read_text().split()[0])
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_the_guards_own_faults_are_never_caught_and_real_time_signals_have_names():
    from analyzer.exits import signal_name, signal_number
    from analyzer.supervise.guard import CANCEL_SIGNALS

    assert not {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL} & set(CANCEL_SIGNALS)
    assert (signal_name(_RTMIN), signal_name(_RTMIN + 1), signal_name(_RTMAX)) == (
        "SIGRTMIN", "SIGRTMIN+1", "SIGRTMAX")
    assert signal_name(_RTMAX + 1) is None
    assert signal_number("SIGRTMIN+5") == _RTMIN + 5 and signal_number("RTMIN+5") == _RTMIN + 5


# -- 4. a directory the command planted at a report path is moved aside, and the report written -----

@pytest.mark.parametrize("option", ["--json", "--summary"])
def test_a_directory_planted_at_a_report_path_is_moved_aside_and_the_report_written(tmp_path, option):
    target = tmp_path / ("report.json" if option == "--json" else "summary.md")
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), option, str(target),
         "--", "sh", "-c", f"mkdir {shlex.quote(str(target))} && echo kept > {shlex.quote(str(target))}/x; "
                           "exit 3"],
        capture_output=True, timeout=60,
    )
    assert proc.returncode == 3, proc
    assert target.is_file() and not target.is_symlink(), proc.stderr
    text = target.read_text()
    assert ('"verdict": "fail"' in text) if option == "--json" else ("exit 3" in text), text
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(target.name + ".put-there-by-the-command-")]
    assert len(aside) == 1 and (aside[0] / "x").read_text() == "kept\n"  # the command's files, untouched
    assert f"{option} {target}: was replaced with a directory during the run; the guard moved it aside as " \
           f"{aside[0]}" in proc.stderr.decode(), proc.stderr


# -- 5. the log dir the command moved away comes back; its decoy is moved aside ----------------------

@pytest.mark.parametrize("hide", ["beside", "inside-the-decoy"])
def test_a_log_dir_moved_away_for_a_decoy_is_moved_back(tmp_path, hide):
    # The action uploads and reports the log dir by its path (action.yml: steps.setup.outputs.log-dir,
    # the report at $GHG_LOG_DIR/report.json), so following the real one elsewhere still showed the decoy.
    logs = tmp_path / "logs"
    logs.mkdir()  # as the action's setup step makes it
    hidden = tmp_path / "hidden" if hide == "beside" else tmp_path / "stash"
    move = (f"mv {logs} {hidden}; mkdir {logs}" if hide == "beside"
            else f"mv {logs} {hidden}; mkdir {logs}; mv {hidden} {logs}/.real")
    script = (f"echo 'Fatal Python error: Segmentation fault'; {move}; "
              f"echo 'all tests passed' > {logs}/stdout.log; exit 0")
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(logs), "--json", str(logs / "report.json"),
         "--", "sh", "-c", script],
        capture_output=True, timeout=60,
    )
    assert proc.returncode == 1, proc
    assert (logs / "stdout.log").read_bytes() == b"Fatal Python error: Segmentation fault\n"
    report = json.loads((logs / "report.json").read_text())
    assert report["verdict"] == "fail"
    assert not hidden.exists() and not (logs / ".real").exists()
    decoys = [p for p in tmp_path.iterdir() if p.name.startswith("logs.put-there-by-the-command-")]
    assert len(decoys) == 1 and (decoys[0] / "stdout.log").read_text() == "all tests passed\n"
    assert "moved it back" in json.dumps(report), report["diagnostics"]

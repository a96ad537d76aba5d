"""A plain scan of a log whose last word is an uncaught Python traceback reports the death.

Real runs, not hand-written logs: CPython processes that die of an exception no rule knows the words of
(their output saved as a run's log is, or pasted with a Markdown fence, a shell prompt, or another
rank's traceback cut before its exception after it), one that prints a handled traceback and goes on,
and one whose traceback a rule already grades. Under the guard the command's exit status decides.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import last_content_line
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
RULE = "traceback-ends-log"

DIES = """
def reshape(shape):
    raise ValueError("(InvalidArgument) The 'shape' in ReshapeOp is invalid: %r" % (shape,))

print("step 0: loss 2.31", flush=True)
reshape([0, 3, 256])
"""

HANDLES = """
import traceback

try:
    raise ValueError("(InvalidArgument) a shape the fallback path handles")
except ValueError:
    traceback.print_exc()
print("falling back to the CPU kernel; step 1: loss 2.29", flush=True)
"""

DATALOADER_WORKER = """
raise RuntimeError("DataLoader 1 workers exit unexpectedly, pids: 4706")
"""


def _run(tmp_path: Path, source: str, name: str = "run.log") -> Path:
    script = tmp_path / "prog.py"
    script.write_text(source)
    log = tmp_path / name
    with open(log, "wb") as out:
        subprocess.run([sys.executable, str(script)], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                       timeout=60)
    return log


def _errors(log: Path, engine: str = "auto"):
    return [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _line_of(log: Path, prefix: str) -> int:
    return next(n for n, text in enumerate(log.read_text().splitlines(), 1) if text.startswith(prefix))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_log_that_ends_in_an_uncaught_exception_reports_it_on_the_exception_line(tmp_path, engine):
    log = _run(tmp_path, DIES)
    errors = _errors(log, engine)
    assert [(f.rule, f.kind, f.line) for f in errors] == [(RULE, Kind.CRASH, _line_of(log, "ValueError: "))]
    assert "ValueError: (InvalidArgument)" in errors[0].message
    assert "raised at prog.py:" in errors[0].message
    assert errors[0].excerpt.startswith("Traceback (most recent call last):")


@pytest.mark.parametrize("tail", [
    "\n```\n",
    "(venv) user@gpu-node-3:~/train$ \n",
    "[user@gpu-node-3 train]$ \n\n",
    'Traceback (most recent call last):\n  File "/work/prog.py", line 5, in <module>\n    reshape([0, 3])\n',
])
def test_a_fence_a_prompt_or_another_ranks_cut_traceback_after_it_still_leaves_it_the_end(tmp_path, tail):
    log = _run(tmp_path, DIES)
    with open(log, "a") as out:
        out.write(tail)
    assert [(f.rule, f.line) for f in _errors(log)] == [(RULE, _line_of(log, "ValueError: "))]


STACKS = """
import faulthandler
import logging
import sys
import traceback
import warnings

def step():
    warnings.warn("TypedStorage is deprecated", UserWarning)
    logging.warning("slow step, where it was:", stack_info=True)
    faulthandler.dump_traceback(sys.stdout)
    traceback.print_stack(file=sys.stdout)

logging.basicConfig(stream=sys.stdout)
step()
"""


def test_a_traceback_cut_before_its_exception_line_that_ends_the_log_is_a_death(tmp_path):
    # a paste (or a log) cut inside the traceback: its head says an exception was being printed
    log = _run(tmp_path, DIES)
    lines = log.read_text().splitlines(keepends=True)
    assert lines[-1].startswith("ValueError: ")
    log.write_text("".join(lines[:-1]))
    errors = _errors(log)
    assert [(f.rule, f.line) for f in errors] == [(RULE, len(lines) - 1)]
    assert "an exception whose line was cut from the log" in errors[0].message
    assert "raised at prog.py:" in errors[0].message
    assert errors[0].excerpt.startswith("Traceback (most recent call last):")


def test_stacks_a_healthy_run_prints_last_are_no_death(tmp_path):
    # warnings' source line, logging's stack_info, faulthandler's dump, traceback.print_stack: no head
    log = _run(tmp_path, STACKS)
    text = log.read_text()
    assert "UserWarning: TypedStorage is deprecated" in text and "Stack (most recent call last):" in text
    assert "(most recent call first):" in text and text.rstrip().splitlines()[-1].startswith("    ")
    assert _errors(log) == []


def test_a_handled_traceback_the_run_goes_on_after_is_no_death(tmp_path):
    log = _run(tmp_path, HANDLES)
    assert "Traceback (most recent call last):" in log.read_text()
    assert _errors(log) == []


def test_words_after_the_exception_are_the_log_going_on(tmp_path):
    log = _run(tmp_path, DIES)
    with open(log, "a") as out:
        out.write("### Environment\npaddlepaddle-gpu 2.6.1, CUDA 12.0\n")
    assert _errors(log) == []


def test_a_traceback_a_rule_already_grades_keeps_that_grading(tmp_path):
    # graded down by the user, so that the traceback's own error would show if it were added
    config = tmp_path / "ghg.yml"
    config.write_text("severity:\n  dataloader-worker-exited: warning\n")
    log = _run(tmp_path, DATALOADER_WORKER)
    findings = scan_paths([str(log)], load_catalogue(str(config)))
    assert [(f.rule, f.severity) for f in findings if f.severity is not Severity.NOTICE] == [
        ("dataloader-worker-exited", Severity.WARNING)]


def test_an_ignored_rule_makes_nothing(tmp_path):
    config = tmp_path / "ghg.yml"
    config.write_text("ignore:\n  rules: [traceback-ends-log]\n")
    log = _run(tmp_path, DIES)
    catalogue = load_catalogue(str(config))
    assert [f.rule for f in scan_paths([str(log)], catalogue)] == []


def test_the_last_line_that_says_something_skips_blanks_fences_prompts_and_cut_tracebacks():
    log = b"x = 1\nValueError: bad\n\n```\n$ \nTraceback (most recent call last):\n  File \"a.py\", line 1\n"
    assert last_content_line(log, 10) == 11
    assert last_content_line(b"a\n    indented, under no traceback's head\n", 1) == 2
    assert last_content_line(b"\n\n```\n", 4) == 0


PRINTS_LAST = """
import traceback

try:
    raise ValueError("(InvalidArgument) reported, then the run exits 0")
except ValueError:
    traceback.print_exc()
"""


def test_under_the_guard_the_exit_status_decides(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PRINTS_LAST)
    guarded = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--format", "json", "--", sys.executable, str(script)],
        cwd=str(Path(__file__).resolve().parents[2]), capture_output=True, text=True, timeout=120,
    )
    assert guarded.returncode == 0, guarded.stdout + guarded.stderr
    assert RULE not in guarded.stdout
    # The same output scanned as a plain log ends in the traceback: nothing there says it was handled.
    log = _run(tmp_path, PRINTS_LAST)
    assert [f.rule for f in _errors(log)] == [RULE]

"""A log that ends in a traceback whose "Traceback (most recent call last):" head was lost (recall32).

Real runs, not hand-written logs: a CPython process dies of an exception, and its output is kept the way
pastes and Ray keep it: without the head line, indented by the page, or with torch's "[rank0]:" prefix
whose "[" was lost on the head line. A run that prints stacks without dying (traceback.print_stack,
logging's stack_info) and ends in one is no death.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_speaking
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
RULE = "traceback-ends-log"

DIES = """
def check_type_and_len(mbs, n):
    if len(mbs) != n:
        raise ValueError("Expecting %d arg_mbs but got %d" % (n, len(mbs)))

print("step 0: loss 2.31", flush=True)
check_type_and_len([1, 2], 4)
"""

PRINTS_STACKS = """
import logging
import sys
import traceback

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s:%(message)s")


def step(n):
    logging.info("step %d", n, stack_info=(n == 1))


for n in range(2):
    step(n)
print("ValueError handled, using the default shard", flush=True)
traceback.print_stack(file=sys.stdout)
"""


def _output(tmp_path: Path, source: str) -> str:
    script = tmp_path / "prog.py"
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=60)
    return done.stdout.decode()


def _errors(log: Path, engine: str = "auto"):
    return [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _write(tmp_path: Path, lines) -> Path:
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("indent", ["", "  "])
def test_frames_and_an_exception_line_without_their_head_that_end_the_log_are_a_death(tmp_path, engine,
                                                                                     indent):
    lines = _output(tmp_path, DIES).splitlines()
    assert lines[1] == "Traceback (most recent call last):"
    paste = [lines[0]] + [indent + line for line in lines[2:]]  # the head lost, the page's indent added
    log = _write(tmp_path, paste)
    errors = _errors(log, engine)
    assert [(f.rule, f.line) for f in errors] == [(RULE, len(paste))]
    assert "ValueError: Expecting 4 arg_mbs but got 2" in errors[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rank_prefix_that_lost_its_bracket_on_the_head_still_opens_the_traceback(tmp_path, engine):
    lines = _output(tmp_path, DIES).splitlines()
    paste = [lines[0]] + ["[rank0]:" + line for line in lines[1:-1]]  # cut before the exception line
    paste[1] = paste[1][1:]  # "rank0]:Traceback (most recent call last):"
    log = _write(tmp_path, paste)
    errors = _errors(log, engine)
    assert [f.rule for f in errors] == [RULE]
    assert "cut from the log" in errors[0].message
    assert clean_speaking(paste[1].encode()) == ("Traceback (most recent call last):", 0, "[rank0]:")


@pytest.mark.parametrize("engine", ENGINES)
def test_printed_stacks_that_end_the_log_are_no_death(tmp_path, engine):
    output = _output(tmp_path, PRINTS_STACKS)
    assert 'File "' in output.splitlines()[-2]
    log = _write(tmp_path, output.splitlines())
    assert _errors(log, engine) == []


def test_the_frames_of_a_whole_traceback_are_told_once(tmp_path):
    log = _write(tmp_path, _output(tmp_path, DIES).splitlines())
    errors = _errors(log)
    assert [(f.rule, f.line) for f in errors] == [(RULE, len(log.read_text().splitlines()))]
    assert errors[0].excerpt.startswith("Traceback (most recent call last):")

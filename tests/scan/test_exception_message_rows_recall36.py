"""A log that ends in an exception whose message spans lines (recall36, issue 7 sections 2 and 3).

CPython prints ``str(exc)`` whole after the exception's name (Lib/traceback.py, format_exception_only), so a
KeyError raised for a tensor key, or an assertion whose message is a pprint'ed dict, ends the log in the
message's rows, not in the exception line: the held-out miss "a KeyError followed by the tensor it prints".
Real runs, not hand-written logs: a CPython process dies of such an exception (whole, and pasted without
its "Traceback" head), and its healthy twins handle the same exception and print on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import last_content_line
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
RULE = "traceback-ends-log"

PFORMAT_DIES = """
import pprint

shapes = {"layer.%d.weight" % n: [4096, 4096 + n] for n in range(8)}
print("checking 8 shapes", flush=True)
assert all(a == b for a, b in shapes.values()), pprint.pformat(shapes)
"""

PFORMAT_HANDLED = """
import pprint
import sys
import traceback

shapes = {"layer.%d.weight" % n: [4096, 4096 + n] for n in range(8)}
try:
    assert all(a == b for a, b in shapes.values()), pprint.pformat(shapes)
except AssertionError:
    traceback.print_exc(file=sys.stdout)  # logged; the shapes are padded instead
print(pprint.pformat(shapes), flush=True)
"""

PFORMAT_HANDLED_GOES_ON = """
import pprint
import sys
import traceback

shapes = {"layer.%d.weight" % n: [4096, 4096 + n] for n in range(8)}
try:
    assert all(a == b for a, b in shapes.values()), pprint.pformat(shapes)
except AssertionError:
    traceback.print_exc(file=sys.stdout)
print("padding the shapes and going on", flush=True)
"""

TENSOR_KEY_DIES = """
import torch

cache = {0: "x0", 1: "x1"}
steps = torch.arange(12).reshape(3, 4)
print(cache[steps])
"""


def _output(tmp_path: Path, source: str) -> List[str]:
    script = tmp_path / "prog.py"
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    return done.stdout.decode().splitlines()


def _errors(lines: List[str], tmp_path: Path, engine: str = "auto"):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n")
    return [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _exception_line(lines: List[str], name: str) -> int:
    return next(n for n, line in enumerate(lines, 1) if line.lstrip().startswith(name + ": "))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("headless", [False, True])
def test_an_assertion_whose_pformat_message_ends_the_log_is_a_death_on_its_line(tmp_path, engine, headless):
    lines = _output(tmp_path, PFORMAT_DIES)
    assert lines[-1].endswith("}") and not lines[-1].startswith("AssertionError")  # the message's last row
    if headless:  # a paste that kept the frames, not the head
        lines = [line for line in lines if line != "Traceback (most recent call last):"]
    errors = _errors(lines, tmp_path, engine)
    assert [(f.rule, f.line) for f in errors] == [(RULE, _exception_line(lines, "AssertionError"))]
    assert "AssertionError: {'layer.0.weight': [4096, 4096]," in errors[0].message


@pytest.mark.parametrize("indent", ["", "  "])
def test_a_tensor_key_error_whose_rows_end_a_paste_without_its_head_is_a_death(tmp_path, indent):
    pytest.importorskip("torch")
    lines = _output(tmp_path, TENSOR_KEY_DIES)
    head = lines.index("Traceback (most recent call last):")
    paste = lines[:head] + [indent + line for line in lines[head + 1:]]  # the head lost, the page's indent
    errors = _errors(paste, tmp_path)
    assert [(f.rule, f.line) for f in errors] == [(RULE, _exception_line(paste, "KeyError"))]
    assert "KeyError: tensor([[ 0,  1,  2,  3]," in errors[0].message


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("source", [PFORMAT_HANDLED, PFORMAT_HANDLED_GOES_ON],
                         ids=["rows-printed", "line-after"])
def test_the_same_exception_handled_and_printed_on_after_is_no_death(tmp_path, engine, source):
    lines = _output(tmp_path, source)
    assert any(line.startswith("AssertionError: {") for line in lines)
    assert _errors(lines, tmp_path, engine) == []


def _last(lines: List[str]) -> int:
    return last_content_line(("\n".join(lines) + "\n").encode(), 1)


def test_the_rows_are_read_back_to_the_exception_line_whose_brackets_they_close():
    rows = ["KeyError: tensor([[0, 1],", "        [2, 3]])"]
    assert _last(["step 1"] + rows) == 2
    assert _last(["step 1"] + rows + ["", "```"]) == 2  # what may follow the end still may
    # closed on the exception's own line: the rows after it are something else the log printed
    assert _last(["KeyError: 'a'", "tensor([[0, 1],", "        [2, 3]])"]) == 3
    # closed before the last row, or never closed: not the exception's message
    assert _last(["ValueError: bad (shape", "  (2, 3))", "  more words"]) == 3
    assert _last(["ValueError: bad (shape", "  (2, 3,", "  4"]) == 3


def test_no_frame_is_an_exception_message_row_and_the_look_back_is_bounded():
    # a frame between the two: a traceback below an open message is not its rows
    assert _last(["ValueError: (", '  File "x.py", line 1, in f', "    f())"]) == 3
    far = ["ValueError: rows ["] + ["  %d," % n for n in range(100)] + ["  ]"]
    assert _last(far) == len(far)  # the exception line is further up than the look-back reads
    near = ["ValueError: rows ["] + ["  %d," % n for n in range(10)] + ["  ]"]
    assert _last(near) == 1

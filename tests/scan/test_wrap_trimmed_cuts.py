"""A terminal copy whose every cut fell on a space: the copy trimmed each (tmux's capture-pane does), so no
row is as wide as the terminal, and its widest rows are one column short of it.

The rows are a real ROCm runtime message (quoted in https://github.com/ROCm/legacy-rocm-build/issues/5051)
and the issue's own prose, cut by a 100-column terminal. Read as 99 columns wide, "Happens" / "for" would be
glued into one word and "Reason:" / "Page" would be no cut at all; only the trimmed space explains both.
"""

from __future__ import annotations

import io

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_sources
from analyzer.scan._engine_wrap import wrap_width
from analyzer.scan.sources import Source
from tests.scan.test_engine_helpers import ENGINES

PROSE = (b"I'm seeing these occur now for some reason, maybe related to new kernel code (in `6.18.3`)?"
         b" Happens for example during VAE encode.")
FAULT = (b"Memory access fault by GPU node-1 (Agent handle: 0x55f8b54eec30) on address 0x7f2a53193000."
         b" Reason: Page not present or supervisor privilege.")


def tmux_copy(lines, width):
    """Rows of ``width`` columns, each with its trailing blanks trimmed (capture-pane without -N)."""
    return b"".join(
        line[k:k + width].rstrip(b" ") + b"\n" for line in lines for k in range(0, max(len(line), 1), width)
    )


def test_the_widest_rows_all_trimmed_are_a_terminal_one_column_wider():
    copy = tmux_copy([PROSE, b"", b"```", FAULT, b"```"], 100)
    assert max(map(len, copy.split(b"\n"))) == 99
    assert wrap_width(copy) == 100


@pytest.mark.parametrize("engine", ENGINES)
def test_the_message_is_found_through_the_trimmed_cut(engine):
    copy = tmux_copy([PROSE, b"", b"```", FAULT, b"```"], 100)
    source = Source("log", lambda: io.BytesIO(copy), may_be_wrapped=True)
    findings = scan_sources([source], load_catalogue(), engine=engine)
    failing = [(f.rule, f.line) for f in findings if f.severity in (Severity.ERROR, Severity.WARNING)]
    assert failing == [("rocm-hsa-error", 5)]


def test_a_row_one_column_short_with_its_own_cut_keeps_the_width():
    # A 99-column terminal: a row that is 98 wide and reads as a cut only with its trimmed space says so.
    rows = [b"x" * 94 + b" and", b"so the worker said: stop", b"y" * 91 + b" Reason:", b"Page not present"]
    assert wrap_width(b"\n".join(rows) + b"\n") == 99

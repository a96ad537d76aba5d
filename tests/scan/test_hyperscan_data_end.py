"""A match that ends at the very end of the scanned data, in each of the engine's own Hyperscan passes.

python-hyperscan 0.9.1 on an AVX-512 CPU drops some matches of a ``^``-anchored class in multi-line
mode that end exactly at the end of the data (``^[.=]`` over ``b"ab\\n" * 6 + b"\\n."`` reports nothing;
with one more byte after it, or other lengths, the match is there). The progress letters' hints are such
patterns and re-try a window's last line (``letters._rows``). These tests put each literal, marker and
rule example at the very end of random data of many lengths and ask whether the rules' literal pass,
the rare markers' pass and the noisy rules' loosened pass still report it.
"""

from __future__ import annotations

import random
import re

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan._engine_approx import rule_line_pattern
from analyzer.scan._engine_prefilter import (
    _hyperscan_loose_matcher, hyperscan_available, hyperscan_finder, hyperscan_markers,
)
from analyzer.scan.clean import RARE_MARKERS
from analyzer.scan.engine import prepare
from analyzer.scan.letters import _rows

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="hyperscan is not installed here")

# Lengths around Hyperscan's block sizes (16, 32, 64 bytes and their multiples), where the drops were seen.
LENGTHS = sorted({*range(0, 80), *range(120, 136), *range(250, 262), 511, 512, 513, 1023, 4096, 65537})
FILLERS = (b"ab\n", b"x", b" step 3 loss 0.1\n", b"\n")


def _data(rng: random.Random, n: int) -> bytes:
    filler = rng.choice(FILLERS)
    return (filler * (n // len(filler) + 1))[:n]


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_catalogue(None), "hyperscan")


def test_the_literal_pass_reports_a_literal_that_ends_the_data(prepared):
    rng = random.Random(8)
    find = hyperscan_finder(prepared.plan)
    literals = prepared.plan.literals
    missed = []
    for n in LENGTHS:
        for _ in range(4):
            index = rng.randrange(len(literals))
            needle = literals[index].needle
            data = _data(rng, n) + needle
            start = data.rfind(b"\n", 0, len(data) - len(needle)) + 1
            if index not in find(data).get(start, ()):
                missed.append((n, needle))
    assert missed == []


def test_the_markers_pass_reports_a_marker_that_ends_the_data():
    rng = random.Random(9)
    markers_in = hyperscan_markers(RARE_MARKERS)
    missed = [(n, marker) for n in LENGTHS for marker in RARE_MARKERS
              if marker not in markers_in(_data(rng, n) + marker)]
    assert missed == []


def test_the_loosened_pass_reports_an_example_that_ends_the_data(prepared):
    rng = random.Random(10)
    line_hits, taken = _hyperscan_loose_matcher(dict(enumerate(prepared.rules)), prepared.loose)
    examples = [(i, text.encode()) for i in taken for text in prepared.rules[i].examples_match
                if text.isascii() and "\n" not in text and "\r" not in text]
    missed = []
    tried = 0
    for n in LENGTHS:
        for _ in range(4):
            index, example = rng.choice(examples)
            data = _data(rng, n).replace(b"\n", b"") + b"\n" + example if n else example
            start = data.rfind(b"\n") + 1
            if re.compile(rule_line_pattern(prepared.rules[index]), re.M).search(data, start) is None:
                continue  # a loosened pattern that needs more than the example (a word before it)
            tried += 1
            if (start, index) not in set(line_hits(data)):
                missed.append((n, prepared.rules[index].id))
    assert tried > len(LENGTHS) and missed == []


def test_a_letter_row_that_ends_the_window_is_read():
    rng = random.Random(11)
    for n in LENGTHS:
        data = _data(rng, n) + b"\n" + rng.choice([b".", b"....F", b"=====", b"\x1b[32m."])
        starts = [start for start, _ in _rows(data, True)]
        assert data.rfind(b"\n") + 1 in starts, n

"""Logged tracebacks left to the engine (perf19): frame lines are no candidates, and open blocks take runs
of them without cleaning them.

Three shortcuts, each checked against what it stands for:
- a loosened pattern that opens with "^" and a fixed character keeps where a cleaned line may start
  (``_engine_approx._cleaned_start``): doctest's header ``^File "`` no longer takes every frame line;
- a run of lines that clean to blank-led text (``clean.blank_led_run``) is fed to open blocks whose end
  cannot match such a line (``starts_unblank``) as one chunk, its excerpt lines made when the block closes;
- a block whose end is in none of the lines it would be fed (``_SourceScan._never_ends``) is not opened.
Each engine's matches, excerpts included, must equal those of the line-by-line path with the shortcuts off.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.rules.loader import load_catalogue
from analyzer.scan import _engine_approx as approx
from analyzer.scan import clean as clean_module
from analyzer.scan import engine as engine_module
from analyzer.scan.clean import blank_led_run, clean_speaking, split_segments
from tests.scan.test_engine_helpers import ENGINES, scan_bytes, summary

CATALOGUE = load_catalogue()
DOCTEST = next(rule for rule in CATALOGUE.rules if rule.id == "doctest-example-failed")
STAMP = "2024-01-09T10:00:00.0000000Z "


def _loose(rule, hyperscan: bool):
    pattern = approx.rule_line_pattern(rule, hyperscan=hyperscan)
    assert pattern is not None
    flags = re.M if hyperscan else 0  # Hyperscan's multi-line mode: "^" at each line's start
    return re.compile(pattern.replace(approx.LINE_END, approx.HYPERSCAN_LINE_END) if hyperscan else pattern,
                      flags)


FRAME = '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1511, in f'
HEADER = 'File "/tmp/launch_utils.py", line 27, in launch_utils.describe_exit'


@pytest.mark.parametrize("hyperscan", [False, True], ids=["re", "hyperscan-form"])
@pytest.mark.parametrize("raw", [
    FRAME, STAMP + FRAME, "[rank0]: " + FRAME, "  |   " + FRAME.lstrip(), STAMP + "  |   " + FRAME.lstrip(),
    "[default0]:" + FRAME, "12:00:00 " + FRAME,
])
def test_a_traceback_frame_is_not_doctests_header(raw, hyperscan):
    assert not any(DOCTEST.start_re.search(seg) for seg in split_segments(clean_speaking(raw.encode())[0]))
    assert _loose(DOCTEST, hyperscan).search(raw.encode()) is None


@pytest.mark.parametrize("hyperscan", [False, True], ids=["re", "hyperscan-form"])
@pytest.mark.parametrize("prefix", [
    "", STAMP, "[rank3]: ", "[rank3]:", "E   ", "E       ", "12:00:00  ", "> ", "`",
    "2024-01-09 18:41:23,123 ERROR    ", "2024-01-09 18:41:23,123 INFO     ", "epoch 1: 100%|##| 3/3\r",
    STAMP + "E     ", "[default0]:", "gpu-node-3:4121:4188 [1] ",
])
def test_a_header_after_any_cut_prefix_stays_a_candidate(prefix, hyperscan):
    raw = (prefix + HEADER).encode()
    assert any(DOCTEST.start_re.search(seg) for seg in split_segments(clean_speaking(raw)[0])), prefix
    assert _loose(DOCTEST, hyperscan).search(raw) is not None, prefix


PREFIXES = ["", STAMP, "[rank1]: ", "[rank1]:", "E   ", "E    ", "E      ", " ", "  ", "   ", "\t", "x",
            "12:00:00  ", "12:00:00 ", "> ", "> > ", "       > ", "`", "**", "[1,0]<stderr>:", "ERROR:x.y:",
            "2024-01-09 18:41:23,123 ERROR    ", "2024-01-09 18:41:23,123 DEBUG    ", "\r", "ok\r  ",
            "[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] ", "tests/t.py::test_x ", "0: ", "[3] ", "| ",
            "web  | ", "100%|#| 3/3 [00:00<00:00]"]
ANCHORED_RULES = [rule for rule in CATALOGUE.rules if not rule.guard and approx.rule_line_pattern(rule)
                  and b"(?<! " in approx.rule_line_pattern(rule)]


def test_rules_anchored_so_include_doctests_header():
    assert DOCTEST in ANCHORED_RULES and len(ANCHORED_RULES) >= 10


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ANCHORED_RULES), st.lists(st.sampled_from(PREFIXES), max_size=4), st.data())
def test_an_anchored_loosened_pattern_keeps_every_line_its_rule_matches(rule, prefixes, data):
    examples = [e.split("\n")[0] for e in rule.examples_match if e.isascii()]
    core = data.draw(st.sampled_from(examples))
    raw = ("".join(prefixes) + core + "\n").encode()
    compiled = rule.start_re if rule.is_block else rule.pattern_re
    if any(compiled.search(seg) for seg in split_segments(clean_speaking(raw)[0])):
        end = len(raw) - 1
        assert _loose(rule, False).search(raw, 0, end) is not None, raw
        assert _loose(rule, True).search(raw, 0, end) is not None, raw


@pytest.mark.parametrize("pattern, expected", [
    (r"^(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::\s.*)?)$", True),
    (r"^Failed example:$", True), (r"^\Sx", True), (r"^(?:a)?b", True),
    (r"^\s*RuntimeError: x", False), (r"^ x", False), (r"^.x", False), (r"^[^a]", False), (r"x", False),
    (r"^(?:a|)", False), (r"^(?: a|b)", False), (r"^$", False),
])
def test_starts_unblank(pattern, expected):
    assert approx.starts_unblank(pattern) is expected


LINE_PARTS = [" ", "  ", "    ", "x", "File", "1", "2024", STAMP, "\r", "%|", "it [", "       > ", "\t", "é",
              ":",
              "100%|##| 3/3 [00:00<00:00]", "3it [00:01, 2.9it/s]", "Error: glued"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from(LINE_PARTS), max_size=6), min_size=1, max_size=6))
def test_every_line_of_a_blank_led_run_cleans_to_blank_led_text(lines):
    buf = "".join("".join(parts) + "\n" for parts in lines).encode()
    end = blank_led_run(buf, 0, len(buf))
    assert end == 0 or buf[end - 1:end] == b"\n"
    for raw in buf[:end].split(b"\n")[:-1]:
        for seg in split_segments(clean_speaking(raw + b"\n")[0]):
            assert seg == "" or seg[0] == " ", (raw, seg)


BYTES_PARTS = [part.encode() for part in LINE_PARTS] + [
    b"\n", b"\xff", b"x" * 3990, b"2024-01-09T10:00:00.1Z stdout F ", b"[rank0]: ", b"      > "]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(BYTES_PARTS), max_size=16), st.integers(0, 20000), st.integers(0, 20000))
def test_a_blank_led_run_read_at_line_starts_is_the_run_the_lines_pattern_reads(parts, pos, limit):
    """``blank_led_run`` reads a run by its lines' heads, "\r" and long lines (perf27); the run is the one
    ``_BLANK_LED_LINES`` matches over every byte, cut before a bar (``_unbarred``), at any start and limit."""
    buf = b"".join(parts)
    limit = min(limit, len(buf))
    pos = min(pos, limit)
    m = clean_module._BLANK_LED_LINES.match(buf, pos, limit)
    expected = pos if m is None else clean_module._unbarred(buf, pos, m.end())
    assert blank_led_run(buf, pos, limit) == expected


@pytest.mark.parametrize("line, run", [
    (b"    x = 1\n  File \"a.py\", line 3, in f\n", 2), (STAMP.encode() + b"   x\n", 1), (b"   \n", 1),
    (b"  Epoch 1: 100%|##| 3/3 [00:00<00:00]Error: glued\n", 0), (b"  a: 3it [00:01, 2.9it/s]Error: b\n", 0),
    (b"  x\rError: y\n", 0), (b"  2024-01-09 12:00:00 Error: y\n", 0), (b"       > FAILED t.py::t\n", 0),
    (b"x\n", 0), (b"\tx\n", 0), (b"  x", 0),
])
def test_blank_led_runs(line, run):
    assert blank_led_run(line, 0, len(line)) == (len(line) if run else 0)
    for raw in line.split(b"\n")[:run]:
        assert all(seg[:1] in ("", " ") for seg in split_segments(clean_speaking(raw)[0]))


def _traceback_log(rng: random.Random, tracebacks: int) -> bytes:
    out = []
    for n in range(tracebacks):
        stamp = STAMP if n % 3 else ""
        out.append(f"{stamp}WARNING:trainer:step {n}: retrying")
        out.append(f"{stamp}Traceback (most recent call last):")
        for _ in range(rng.choice([1, 3, 12, 120, 260])):
            out.append(f'{stamp}  File "/w/m{rng.randrange(9)}.py", line {rng.randrange(3000)}, in f')
            out.append(stamp + rng.choice([
                '    store.set(f"rank_{rank}", b"ready")', "    out = forward_call(*args)",
                "    return TCPStore(", "  Epoch 1: 100%|##| 3/3 [00:00<00:00]ValueError: glued",
                "    x = 1\rRuntimeError: y",
                "           ^^^^^^^^^", "  12 frames hidden", "[rank0]:   File \"x.py\", line 3, in g",
            ]))
        out.append(stamp + rng.choice(["RuntimeError: Connection reset by peer", "ValueError: bad",
                                       "ConnectionResetError: [Errno 104] Connection reset by peer"]))
        if n % 7 == 0:
            out.append('File "/tmp/launch_utils.py", line 27, in launch_utils.describe_exit')
            out.append("Failed example:")
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_equal_the_line_by_line_path(tmp_path, monkeypatch, engine, seed):
    data = _traceback_log(random.Random(seed), 60)
    fast = summary(scan_bytes(tmp_path, data, CATALOGUE, engine))
    assert any(row[0] == "python-traceback" for row in fast)
    monkeypatch.setattr(engine_module._SourceScan, "_blank_run", lambda *args: None)
    monkeypatch.setattr(engine_module._SourceScan, "_never_ends", lambda *args: False)
    slow = summary(scan_bytes(tmp_path, data, CATALOGUE, engine, name="again.log"))
    assert [row[:1] + row[2:] for row in fast] == [row[:1] + row[2:] for row in slow]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("frames", [1, 40, 300])
def test_a_log_cut_inside_its_traceback_gives_what_the_line_by_line_path_gives(tmp_path, monkeypatch, engine,
                                                                               frames):
    # python-traceback's cut_short (its first frame) is read line by line; the frames after it go in runs
    data = _traceback_log(random.Random(frames), 6) + b"Traceback (most recent call last):\n" + b"".join(
        b'  File "/w/m.py", line %d, in f\n    x = %d\n' % (i, i) for i in range(frames))
    fast = summary(scan_bytes(tmp_path, data, CATALOGUE, engine))
    monkeypatch.setattr(engine_module._SourceScan, "_blank_run", lambda *args: None)
    monkeypatch.setattr(engine_module._SourceScan, "_never_ends", lambda *args: False)
    slow = summary(scan_bytes(tmp_path, data, CATALOGUE, engine, name="again.log"))
    assert [row[:1] + row[2:] for row in fast] == [row[:1] + row[2:] for row in slow]


def test_a_long_tracebacks_excerpt_is_cut_as_line_by_line(tmp_path):
    frames = "".join(f'  File "/w/m.py", line {i}, in f\n    x = {i}\n' for i in range(150))
    data = ("Traceback (most recent call last):\n" + frames + "ValueError: bad\n").encode()
    (match,) = [m for m in scan_bytes(tmp_path, data, CATALOGUE) if m.rule.id == "python-traceback"]
    lines = match.excerpt.split("\n")
    assert lines[0] == "Traceback (most recent call last):" and lines[1] == '  File "/w/m.py", line 0, in f'
    assert len(lines) == engine_module.EXCERPT_MAX_LINES + 1
    assert lines[-1] == f"[... {302 - engine_module.EXCERPT_MAX_LINES} more lines not shown]"

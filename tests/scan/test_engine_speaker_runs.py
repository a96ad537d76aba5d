"""Logged tracebacks behind a launcher's prefix (perf21): torchrun --tee's "[default0]:" and torch's
"[rank3]:" before every line.

Three shortcuts, each checked against the line-by-line path it stands for:
- a run of frame lines behind one process's prefix (``clean.speaker_led_run``) goes to the open blocks that
  read that process's lines in one chunk, as an unprefixed run does (``clean.blank_led_run``);
- a block of a speaker whose end is in none of the lines it would be fed (``_SourceScan._fed_span``: its
  own and unprefixed ones, other processes' passed by) is not opened;
- a candidate line that no loosened pattern keeps (a frame of ".../store.py" holds the literal "store.")
  may be part of such a run; and a run's excerpt lines are taken whole when no cap is near.
Each engine's matches, excerpts and test attribution included, must equal those with the shortcuts off.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan.clean import clean_speaking, speaker_led_run, split_segments
from tests.scan.test_engine_helpers import ENGINES, scan_bytes

CATALOGUE = load_catalogue()
STAMP = "2024-01-09T10:00:00.0000000Z "
SOURCES = [
    '    store.set(f"rank_{rank}", b"ready")', "    out = forward_call(*args)", "    return TCPStore(",
    "           ^^^^^^^^^", "    x = 1\rRuntimeError: y",
    "  Epoch 1: 100%|##| 3/3 [00:00<00:00]ValueError: glued", "  12 frames hidden",
    "  2024-01-09 12:00:00 [rank1]: x", "   [rank2]: y",
]
ENDS = ["RuntimeError: Connection reset by peer", "ValueError: bad",
        "ConnectionResetError: [Errno 104] Connection reset by peer"]


def _prefixed_log(rng: random.Random, tracebacks: int) -> bytes:
    """Tracebacks of several processes, each line behind its process's prefix; some interleave by line."""
    speakers = ["[default0]:", "[default1]:", "[rank3]:", "[rank1]:", "[default0]:[rank0]:", "[3]:"]
    out = ["tests/test_train.py::test_fit[nccl] "]
    for n in range(tracebacks):
        stamp = STAMP if n % 3 else ""
        mine, other = rng.sample(speakers, 2)
        lines = [f"WARNING:trainer:step {n}: retrying", "Traceback (most recent call last):"]
        for _ in range(rng.choice([1, 3, 12, 120, 260])):
            path = rng.choice(["/w/m.py", "/w/store.py", "/opt/conda/lib/python3.11/torch/x.py"])
            lines.append(f'  File "{path}", line {rng.randrange(3000)}, in f')
            lines.append(rng.choice(SOURCES))
        lines.append(rng.choice(ENDS))
        mixed = n % 4 == 1  # another process's lines between this one's, as two ranks dying at once print
        for line in lines:
            out.append(stamp + mine + rng.choice(["", " "]) * (line[:1] != " ") + line)
            if mixed and rng.random() < 0.3:
                out.append(stamp + other + rng.choice(SOURCES + ENDS + ['  File "/w/o.py", line 1, in g']))
            if rng.random() < 0.02:
                out.append(rng.choice(["", mine, "    bare indented", mine + " " + line, "[default0]:\tx"]))
        if n % 5 == 0:
            out.append("PASSED")
    return ("\n".join(out) + "\n").encode()


def _rows(matches):
    return [(m.rule.id, m.line, m.end_line, m.text, m.excerpt, dict(m.groups), m.rank, repr(m.progress))
            for m in matches]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_matches_equal_the_line_by_line_path(tmp_path, monkeypatch, engine, seed):
    data = _prefixed_log(random.Random(seed), 40)
    fast = _rows(scan_bytes(tmp_path, data, CATALOGUE, engine))
    assert {"python-traceback", "c10d-store-call-reset"} <= {row[0] for row in fast}
    monkeypatch.setattr(engine_module._SourceScan, "_blank_run", lambda *args: None)
    monkeypatch.setattr(engine_module._SourceScan, "_never_ends", lambda *args: False)
    slow = _rows(scan_bytes(tmp_path, data, CATALOGUE, engine, name="again.log"))
    assert fast == slow


def test_runs_behind_a_prefix_are_taken(tmp_path, monkeypatch):
    """The shortcut is used: a prefixed traceback's frames reach ``_line`` no more."""
    frames = "".join(f'[rank1]:  File "/w/m.py", line {i}, in f\n[rank1]:    x = {i}\n' for i in range(50))
    data = ("[rank1]:Traceback (most recent call last):\n" + frames + "[rank1]:ValueError: bad\n").encode()
    seen = []
    line = engine_module._SourceScan._line
    monkeypatch.setattr(engine_module._SourceScan, "_line", lambda self, *a, **k: seen.append(a[3]) or line(
        self, *a, **k))
    (match,) = [m for m in scan_bytes(tmp_path, data, CATALOGUE) if m.rule.id == "python-traceback"]
    assert (match.line, match.end_line, match.rank) == (1, 102, 1)
    # the first frame is read as usual: it is where python-traceback's cut_short says a cut one happened
    assert seen == [1, 2, 102]


def test_a_long_prefixed_excerpt_is_cut_as_line_by_line(tmp_path, monkeypatch):
    frames = "".join(f'[default0]:  File "/w/m.py", line {i}, in f\n[default0]:    x = {i}\n'
                     for i in range(150))
    data = "[default0]:Traceback (most recent call last):\n" + frames + "[default0]:ValueError: bad\n"
    data = data.encode()
    (fast,) = [m.excerpt for m in scan_bytes(tmp_path, data, CATALOGUE) if m.rule.id == "python-traceback"]
    monkeypatch.setattr(engine_module._SourceScan, "_blank_run", lambda *args: None)
    (slow,) = [m.excerpt for m in scan_bytes(tmp_path, data, CATALOGUE, name="b.log")
               if m.rule.id == "python-traceback"]
    more = 302 - engine_module.EXCERPT_MAX_LINES
    assert fast == slow and fast.endswith(f"[... {more} more lines not shown]")


PREFIX_PARTS = ["[default0]:", "[rank3]:", "[rank]:", "[3]:", "[x_1]:", " ", "  ", "   ", STAMP, "[rank1]: ",
                "\t", "x", "1", "2024-01-09 12:00:00 ", "%|", "it [", "       > ", "\r", "é", ":",
                "[pod/a/b] ", "(pid=3) ", "INFO:x:", "0: ", "File", "> "]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PREFIX_PARTS), max_size=7), min_size=1, max_size=6))
def test_every_line_of_a_speaker_led_run_cleans_blank_led_with_its_speaker(lines):
    buf = "".join("".join(parts) + "\n" for parts in lines).encode()
    end, speaker = speaker_led_run(buf, 0, len(buf))
    assert (end == 0) == (speaker is None)
    assert end == 0 or buf[end - 1:end] == b"\n"
    for raw in buf[:end].split(b"\n")[:-1]:
        text, _rank, said = clean_speaking(raw + b"\n")
        assert said == speaker, (raw, said)
        for seg in split_segments(text):
            assert seg == "" or seg[0] == " ", (raw, seg)


@pytest.mark.parametrize("raw, speaker, run", [
    (b"[default0]:  File \"a.py\", line 3, in f\n[default0]:    x = 1\n", "[default0]:", 2),
    (STAMP.encode() + b"[rank3]:    x\n" + STAMP.encode() + b"[rank3]:  y\n[rank4]:  z\n", "[rank3]:", 2),
    (b"[default0]:[rank0]:  x\n", "[default0]:[rank0]:", 1),
    (b"[default0]: x\n", None, 0), (b"[default0]:  2024-01-09 12:00:00 x\n", None, 0),
    (b"[default0]:  a: 3it [00:01, 2.9it/s]Error: b\n", None, 0), (b"[default0]:  x\rError: y\n", None, 0),
    (b"  x\n", None, 0), (b"[rank]:  x\n", None, 0), (b"[default0]:  x", None, 0),
    # a Nix build's tail behind the prefix: clean_speaking cuts its mark, so the line is no blank-led one
    (b"[default0]:   > FAILED t.py::t\n", None, 0), (b"[rank0]:         > FAILED t.py::t\n", None, 0),
])
def test_speaker_led_runs(raw, speaker, run):
    end, said = speaker_led_run(raw, 0, len(raw))
    assert said == speaker and end == (len(b"".join(raw.split(b"\n")[i] + b"\n" for i in range(run))))

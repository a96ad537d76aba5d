"""What a bulk skip of a logged traceback's lines must not swallow (perf30). The engine feeds runs of
blank-led lines (a traceback's frames) to open blocks without reading them (``_SourceScan._blank_run``),
and a faster skip of a whole handled traceback was designed (perf29) and tried (perf30: a run that goes
on through the candidate lines no rule may match). Whatever skips lines must still stop at every line
a rule may match or the engine reads: a source line the log echoes, a CUDA error quoted inside the
frames, a probe's literal (pytest-rerunfailures' RERUN, which has no rule); and at every line that is
not blank-led: an exception line, a line that cuts the block, a rank's prefix, a bar, a "\\r". A
traceback no logging record handled is read the same way.

Each engine's matches, excerpts included, must equal those of the line-by-line path (no runs at all).
"""

from __future__ import annotations

import random

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from tests.scan.test_engine_helpers import ENGINES, ids_lines, record_rerun_told, scan_bytes, summary

CATALOGUE = load_catalogue()
STAMP = "2024-01-09T10:00:00.0000000Z "
# Lines between a frame's "File" line and the next: most are frames' source lines (blank-led, no rule),
# the others are lines a run must not pass over silently.
_SOURCES = (
    ["    out = forward_call(*args)"] * 6
    + [
        '    store.set(f"rank_{rank}", b"ready")',  # python-source-line and a c10d start: matched
        "    RuntimeError: CUDA error: an illegal memory access was encountered",  # a finding inside
        "    torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "    RERUN tests/test_a.py::test_b",  # a probe's literal (pytest-rerunfailures)
        '[rank0]:  File "x.py", line 3, in g',  # a rank's prefix: no blank-led line
        "step 3 loss 0.25",  # a line that cuts the block
        "  Epoch 1: 100%|##| 3/3 [00:00<00:00]",  # a bar, cut off its segment
        "    x = 1\rRuntimeError: y",
        "           ^^^^^^^^^",
    ]
)
_HEADS = ("WARNING:trainer:step {n}: fetching shard failed, retrying in 1s",
          "ERROR:root:step {n} failed", "")  # "": a traceback no logging record handled


def _log(rng: random.Random, tracebacks: int) -> bytes:
    out = []
    for n in range(tracebacks):
        stamp = STAMP if n % 3 else ""
        head = rng.choice(_HEADS).format(n=n)
        if head:
            out.append(stamp + head)
        out.append(stamp + "Traceback (most recent call last):")
        for _ in range(rng.choice([1, 5, 30, 200])):
            out.append(f'{stamp}  File "/w/m{rng.randrange(9)}.py", line {rng.randrange(3000)}, in f')
            out.append(stamp + rng.choice(_SOURCES))
        out.append(stamp + rng.choice(["ConnectionResetError: [Errno 104] Connection reset by peer",
                                       "ValueError: bad", "RuntimeError: CUDA error: out of memory"]))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("read_size", [4096, 1 << 20])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_equal_the_line_by_line_path(tmp_path, monkeypatch, engine, read_size, seed):
    monkeypatch.setattr(engine_module, "READ_SIZE", read_size)
    data = _log(random.Random(seed), 40)
    fast = summary(scan_bytes(tmp_path, data, CATALOGUE, engine))
    ids = {row[0] for row in fast}
    assert {"python-traceback", "python-source-line", "cuda-error", "cuda-out-of-memory"} <= ids
    with monkeypatch.context() as patched:
        patched.setattr(engine_module._SourceScan, "_blank_run", lambda *args: None)
        patched.setattr(engine_module._SourceScan, "_never_ends", lambda *args: False)
        slow = summary(scan_bytes(tmp_path, data, CATALOGUE, engine, name="line-by-line.log"))
    assert [row[:1] + row[2:] for row in fast] == [row[:1] + row[2:] for row in slow]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_lines_a_run_must_not_pass_inside_a_handled_traceback_are_matched(tmp_path, engine):
    lines = [
        "WARNING:trainer:step 1: fetching shard 7 failed, retrying in 1s",
        "Traceback (most recent call last):",
        '  File "/w/a.py", line 3, in f',
        "    out = forward_call(*args)",
        '  File "/w/b.py", line 4, in g',
        '    store.set(f"rank_{rank}", b"ready")',
        '  File "/w/c.py", line 5, in h',
        "    out = forward_call(*args)",
        '  File "/w/d.py", line 6, in k',
        "    RuntimeError: CUDA error: an illegal memory access was encountered",
        '  File "/w/e.py", line 7, in m',
        "    out = forward_call(*args)",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
    ]
    for stamp in ("", STAMP):
        data = "".join(f"{stamp}{line}\n" for line in lines).encode()
        found = ids_lines(scan_bytes(tmp_path, data, CATALOGUE, engine))
        assert ("python-source-line", 6) in found
        assert ("cuda-error", 10) in found
        (traceback,) = [m for m in scan_bytes(tmp_path, data, CATALOGUE, engine)
                        if m.rule.id == "python-traceback"]
        assert (traceback.line, traceback.end_line) == (2, 13)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("cut, end_line, exc", [
    ("Killed", 14, "Killed"),  # a bare word reads as the exception line: the traceback ends there
    ("step 3 loss 0.25", 27, "ValueError: bad"),  # no exception line: fed, the frames after it too
    ('[rank0]:  File "x.py", line 3, in g', 27, "ValueError: bad"),  # a rank's line: fed by its speaker
])
def test_a_run_stops_at_a_line_that_is_not_blank_led(tmp_path, engine, cut, end_line, exc):
    frames = "".join(f'  File "/w/m.py", line {i}, in f\n    x = {i}\n' for i in range(6))
    data = ("Traceback (most recent call last):\n" + frames + cut + "\n" + frames
            + "ValueError: bad\n").encode()
    tracebacks = [m for m in scan_bytes(tmp_path, data, CATALOGUE, engine) if m.rule.id == "python-traceback"]
    assert [(m.line, m.end_line, m.groups["exc"]) for m in tracebacks] == [(1, end_line, exc)]
    assert cut in tracebacks[0].excerpt


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_stops_at_a_probes_literal(tmp_path, monkeypatch, engine):
    """A probe's literal has no rule (a skip that passes the lines no rule may match would pass it):
    ``_window`` must see it (pytest-rerunfailures' RERUN, told to the tracker for each window)."""
    told = record_rerun_told(monkeypatch)
    monkeypatch.setattr(engine_module, "READ_SIZE", 4096)
    scan_bytes(tmp_path, _log(random.Random(4), 40), CATALOGUE, engine)
    assert any(seen for _, seen in told)
    assert [(rerun, seen) for rerun, seen in told if rerun != seen] == []

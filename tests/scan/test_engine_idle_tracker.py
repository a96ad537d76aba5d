"""Logged tracebacks at less Python per traceback (perf23).

Two shortcuts, each checked against the path it stands for:
- ``_SourceScan._tracker_idle``: a block start that ``_never_ends`` drops (c10d-store-call-reset at every
  ``store.set(...)`` frame) and a line echo (python-source-line at every source line) do not ask the test
  tracker for the test in force while it holds none, watches none and no line since it last read may be a
  progress line; it only moves its reading position on, as ``TestTracker.at`` would;
- the memo of matched lines keys a line behind the runner's stamp by what follows the stamp
  (``memo_stamped``): a traceback's lines repeat under a new stamp each time; excerpts stay the line's own.
Each engine's matches (excerpts, groups and the test in force included; a line echo's test, which nothing
reads, left out) and the findings must equal those with the shortcuts off.
"""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan import scan_paths
from analyzer.scan.attribution import TestTracker as Tracker
from analyzer.scan.state import is_line_echo
from tests.scan.test_engine_helpers import ENGINES, scan_bytes, write

CATALOGUE = load_catalogue()
SOURCES = ['    store.set(f"rank_{rank}", b"ready")', "    out = forward_call(*args, **kwargs)",
           "    worker_count = store.add(store_key, 0)", "    return TCPStore(",
           "    batch = next(self._iter)"]
ENDS = ["ConnectionResetError: [Errno 104] Connection reset by peer",
        "RuntimeError: Connection reset by peer", "RuntimeError: Broken pipe"]
# What the runner's stamp may be followed by before the line (clean.py's _STAMP: CRI and GitLab streams).
STAMPS = ["2024-01-09T10:00:{s:02d}.{f}Z ", "2024-01-09T10:00:{s:02d}.{f}Z stdout F ",
          "2024-01-09T10:00:{s:02d}.{f}Z 00O+ ", "", "2024-01-09T10:00:{s:02d}.{f}Z \ufeff"]
# Lines that make the tracker hold or watch a test, or read one from a later line.
TESTS = ["tests/test_io.py::test_fetch[{n}] ", "tests/test_io.py::test_fetch[{n}] PASSED [ 10%]",
         "[gw1] [ 20%] PASSED tests/test_io.py::test_x{n}", "test_fetch_{n} (pkg.test_io.TestIO) ... ",
         "test_fetch_{n} (pkg.test_io.TestIO)", "Fetch shards with retries. ... ok", "ok", "FAILED",
         "setUpClass (pkg.test_io.TestIO{n}) ... ERROR", "0:00:01 load avg: 0.5 [ 3/9] test_io{n}",
         "==================== FAILURES ====================", "tests/test_io.py:26: AssertionError: x{n}",
         "=========== short test summary info ===========", "FAILED tests/test_io.py::test_fetch[{n}] - x"]


def _log(rng: random.Random, tracebacks: int, tests: bool) -> bytes:
    out = []
    for n in range(tracebacks):
        stamp = rng.choice(STAMPS)
        lines = [f"WARNING:trainer:step {n}: fetching shard {rng.randrange(9)} failed, retrying in 1s",
                 "Traceback (most recent call last):"]
        for _ in range(rng.choice([1, 3, 8, 30])):
            lines.append(f'  File "/w/{rng.choice(["m", "store", "io"])}.py", line {rng.randrange(9)}, in f')
            lines.append(rng.choice(SOURCES))
        lines.append(rng.choice(ENDS))
        if tests and rng.random() < 0.4:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(TESTS).format(n=n % 5))
        for line in lines:
            out.append(stamp.format(s=rng.randrange(60), f="0" * rng.randint(1, 7)) + line)
            if rng.random() < 0.03:
                out.append(rng.choice(["", "Traceback (most recent call last):", out[-1] + "\r"]))
    return ("\n".join(out) + "\n").encode()


def _rows(matches):
    return [(m.rule.id, m.line, m.end_line, m.text, m.excerpt, dict(m.groups), m.rank,
             None if is_line_echo(m.rule) else repr(m.progress)) for m in matches]


def _slow(monkeypatch) -> None:
    monkeypatch.setattr(engine_module._SourceScan, "_tracker_idle", lambda *args: False)
    monkeypatch.setattr(engine_module, "RUNNER_STAMP", re.compile(rb"(?!)"))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed,tests", [(1, False), (2, True), (3, True), (5, True)])
def test_matches_and_findings_equal_the_slow_path(tmp_path, monkeypatch, engine, seed, tests):
    data = _log(random.Random(seed), 80, tests)
    fast = _rows(scan_bytes(tmp_path, data, CATALOGUE, engine))
    (tmp_path / "fast").mkdir()
    (tmp_path / "slow").mkdir()
    fast_findings = scan_paths([write(tmp_path / "fast", "job.log", data)], CATALOGUE, engine=engine)
    assert {"python-traceback", "python-source-line"} <= {row[0] for row in fast}
    _slow(monkeypatch)
    assert _rows(scan_bytes(tmp_path, data, CATALOGUE, engine, name="again.log")) == fast
    slow_findings = scan_paths([write(tmp_path / "slow", "job.log", data)], CATALOGUE, engine=engine)
    assert [dataclasses.replace(f, path="") for f in slow_findings] == [
        dataclasses.replace(f, path="") for f in fast_findings]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_memo_alone_equals_no_memo(tmp_path, monkeypatch, engine):
    data = _log(random.Random(7), 80, True)
    fast = _rows(scan_bytes(tmp_path, data, CATALOGUE, engine))
    monkeypatch.setattr(engine_module, "MEMO_LINE_BYTES", -1)
    assert _rows(scan_bytes(tmp_path, data, CATALOGUE, engine, name="again.log")) == fast


def test_both_shortcuts_are_taken(tmp_path, monkeypatch):
    lines = []
    for n in range(40):
        stamp = f"2024-01-09T10:00:{n:02d}.{n:07d}Z "
        lines += [stamp + "Traceback (most recent call last):", stamp + '  File "/w/m.py", line 3, in f',
                  stamp + SOURCES[0], stamp + '  File "/w/n.py", line 4, in g', stamp + SOURCES[0],
                  stamp + ENDS[0]]
    data = ("\n".join(lines) + "\n").encode()
    asked, cleaned = [], []
    at, clean = Tracker.at, engine_module.clean_speaking
    monkeypatch.setattr(Tracker, "at", lambda self, *a: asked.append(a[2]) or at(self, *a))
    monkeypatch.setattr(engine_module, "clean_speaking",
                        lambda raw, **k: cleaned.append(raw) or clean(raw, **k))
    matches = scan_bytes(tmp_path, data, CATALOGUE, "python")
    assert [m.line for m in matches if m.rule.id == "python-source-line"] == [
        n * 6 + k for n in range(40) for k in (3, 5)]
    # The traceback's start and its exception line (and a window's first line), not its 2 source lines
    assert len(asked) < 3 * 40
    assert len([raw for raw in cleaned if raw.endswith(SOURCES[0].encode() + b"\n")]) == 1
    excerpts = {m.excerpt for m in matches if m.rule.id == "python-source-line"}
    assert len(excerpts) == 40 and all(e.endswith(SOURCES[0]) for e in excerpts)  # each behind its stamp

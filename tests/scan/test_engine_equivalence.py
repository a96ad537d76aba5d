"""Both engines, and any window size, give identical matches: on the fixtures, synthetic logs, random bytes.

Also: the engine agrees with every example of the real catalogue (``load_catalogue()``), so the literal
prefilter can never hide a line a rule documents as matching.
"""

from __future__ import annotations

import glob
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan.state import is_line_echo
from tests.scan.test_engine_helpers import (
    CATALOGUE, ENGINES, scan, scan_bytes, summary, with_every_line_a_candidate,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = load_catalogue()
REAL_EVERY_LINE = with_every_line_a_candidate(REAL)


def fixture_files():
    paths = [
        p for p in glob.glob(os.path.join(ROOT, "fixtures", "**", "*"), recursive=True)
        if os.path.isfile(p) and not p.endswith(".py")
    ]
    return sorted(paths)


def synthetic_log(seed: int) -> bytes:
    """A noisy log holding a real wording of most rules, among confusers, colours and progress bars."""
    rng = random.Random(seed)
    events = [example for rule in REAL.rules for example in rule.examples_match]
    confusers = [example for rule in REAL.rules for example in rule.examples_no_match]
    lines = []
    for i in range(600):
        roll = rng.random()
        ts = "2024-01-09T18:41:%02d.%07dZ " % (i % 60, rng.randrange(10**7))
        if roll < 0.15 and events:
            chunk = rng.choice(events)
        elif roll < 0.3 and confusers:
            chunk = rng.choice(confusers)
        elif roll < 0.35:
            chunk = "\r".join(f"{p:3d}%|{'#' * (p // 10):<10}|" for p in range(0, 101, 20))
        elif roll < 0.4:
            chunk = f"[rank{rng.randrange(8)}]:" + (rng.choice(events) if events else "x")
        else:
            chunk = f"node:1:2 [0] NCCL INFO Channel {i % 32:02d}/32 timeout 1800 \x1b[3{i % 8}mok\x1b[0m"
        for line in chunk.split("\n"):
            lines.append(ts + line)
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def corpus(tmp_path):
    paths = fixture_files()
    for seed in range(3):
        path = os.path.join(str(tmp_path), f"synthetic-{seed}.log")
        with open(path, "wb") as f:
            f.write(synthetic_log(seed))
        paths.append(path)
    return paths


def test_the_corpus_is_not_empty_and_produces_matches(tmp_path):
    paths = corpus(tmp_path)
    assert len(paths) >= 3
    matches = scan(paths, REAL, "python")
    assert len({m.rule.id for m in matches}) >= 10


@pytest.mark.skipif(len(ENGINES) < 2, reason="hyperscan is not installed for this Python")
def test_hyperscan_and_python_engines_agree_on_the_corpus(tmp_path):
    paths = corpus(tmp_path)
    python = summary(scan(paths, REAL, "python"))
    assert python
    assert summary(scan(paths, REAL, "hyperscan")) == python


@pytest.mark.parametrize("engine", ENGINES)
def test_tiny_windows_give_the_same_matches(tmp_path, monkeypatch, engine):
    paths = corpus(tmp_path)
    expected = summary(scan(paths, REAL, engine))
    monkeypatch.setattr(engine_module, "READ_SIZE", 97)
    assert summary(scan(paths, REAL, engine)) == expected


# One test per rule: the whole catalogue's examples take over a minute per engine on a loaded runner.
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rule", REAL.rules, ids=lambda rule: rule.id)
def test_every_catalogue_example_behaves_as_documented(tmp_path, engine, rule):
    """A ``match`` example yields a match of its rule; a ``no_match`` example does not (a single-line
    echo marker's, beside another candidate rule: alone on a line it is not tried)."""
    problems = []
    catalogue = REAL_EVERY_LINE if is_line_echo(rule) else REAL
    for want, examples in ((True, rule.examples_match), (False, rule.examples_no_match)):
        for example in examples:
            data = example.encode("utf-8") + b"\n"
            got = any(m.rule.id == rule.id for m in scan_bytes(tmp_path, data, catalogue, engine))
            if got != want:
                problems.append((want, example))
    assert problems == []


TOKENS = [
    b"\n", b"\r", b"\r\n", b"\x00", b"\x1b[31m", b"\x1b[0m", b"\x1b]8;;x\x07", b"\x1b", b"\xff", b"\xe2\x82",
    b"\xef\xbb\xbf", b"2024-01-09T18:41:23.1234567Z ", b"[rank1]:", b"Segmentation fault", b"Segmen",
    b"tation fault", b"Fatal Python error: ", b"Aborted", b"exitcode: -15",
    b"Exception ignored in atexit callback: <f>",
    b"Traceback (most recent call last):", b"RuntimeError: x", b"TIMED OUT after 5", b"timed out after 9",
    b"===== 3 passed in 1.0s =====", b"Watchdog caught collective operation timeout", b"Killed", b" ", b"a",
]
LOGS = st.lists(st.one_of(st.sampled_from(TOKENS), st.binary(max_size=8)), max_size=60).map(b"".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=LOGS)
def test_random_bytes_never_crash_and_engines_agree(tmp_path, data):
    results = []
    for engine in ENGINES:
        for catalogue in (CATALOGUE, REAL):
            results.append(summary(scan_bytes(tmp_path, data, catalogue, engine)))
    half = len(results) // len(ENGINES)
    for i in range(half, len(results)):
        assert results[i] == results[i % half]
    for m in scan_bytes(tmp_path, data, CATALOGUE, "python"):
        assert 1 <= m.line <= data.count(b"\n") + 1
        assert m.line <= m.end_line


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=LOGS)
def test_random_bytes_give_the_same_matches_in_tiny_windows(tmp_path, monkeypatch, data):
    expected = summary(scan_bytes(tmp_path, data, REAL, ENGINES[-1]))
    with monkeypatch.context() as patch:
        patch.setattr(engine_module, "READ_SIZE", 7)
        assert summary(scan_bytes(tmp_path, data, REAL, ENGINES[-1])) == expected

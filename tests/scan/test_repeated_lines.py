"""A line's bytes matched again reuse what matching them gave (``engine._SourceScan._line``'s memo):
the matches, their excerpts, groups, ranks and tests are exactly those of a scan without the memo."""

from __future__ import annotations

import glob
import os

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan import scan_paths
from analyzer.scan.sources import iter_sources
from tests.scan.test_engine_helpers import ENGINES, scan, summary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = load_catalogue()


def _fixtures():
    return sorted(
        p for p in glob.glob(os.path.join(ROOT, "fixtures", "**", "*"), recursive=True)
        if os.path.isfile(p) and not p.endswith(".py")
    )


def _told_twice(tmp_path):
    """Every fixture, and every fixture twice over: each line of the second copy repeats one of the
    first, in another place (other open blocks, another test running, later line numbers)."""
    paths = _fixtures()
    doubled = []
    for i, path in enumerate(paths):
        with open(path, "rb") as f:
            data = f.read()
        if not data.endswith(b"\n"):
            data += b"\n"
        copy = os.path.join(str(tmp_path), f"{i:04d}-{os.path.basename(path)}")
        with open(copy, "wb") as f:
            f.write(data + data)
        doubled.append(copy)
    return paths + doubled


def _no_memo(monkeypatch):
    monkeypatch.setattr(engine_module, "MEMO_LINE_BYTES", -1)  # no line is short enough to be kept


def _with_progress(matches):
    return [(*row, m.progress) for row, m in zip(summary(matches), matches)]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_memo_changes_no_match_on_the_fixtures_told_twice(tmp_path, monkeypatch, engine):
    paths = _told_twice(tmp_path)
    remembered = _with_progress(scan(paths, REAL, engine))
    assert len(remembered) > 1000
    _no_memo(monkeypatch)
    assert _with_progress(scan(paths, REAL, engine)) == remembered


def test_a_flood_of_one_line_is_matched_once_and_reported_as_without_the_memo(tmp_path, monkeypatch):
    """200 copies of a crash among a running test's lines, a traceback open over some of them: the
    findings (folded repeats, the test each is in) are those of a scan that matches every copy."""
    lines = [b"tests/test_a.py::test_one PASSED [ 10%]\n", b"tests/test_a.py::test_two "]
    for i in range(200):
        lines.append(b"Fatal Python error: Segmentation fault\n")
        if i == 50:
            lines += [b"Traceback (most recent call last):\n", b'  File "x.py", line 1, in <module>\n']
        if i == 60:
            lines.append(b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    lines.append(b"FAILED\n")
    log = tmp_path / "flood.log"
    log.write_bytes(b"".join(lines))
    calls = []
    real_clean = engine_module.clean_speaking

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real_clean(*args, **kwargs)

    monkeypatch.setattr(engine_module, "clean_speaking", counted)
    remembered = [f.to_dict() for f in scan_paths([str(log)], REAL)]
    flood_cleanings = sum(1 for raw in calls if raw.startswith(b"Fatal Python error"))
    # once by the memo's first sight; a pasted log's joined rows (``_joined_line``) clean their own
    assert flood_cleanings <= 2, "the same bytes are cleaned once, not once a copy"
    _no_memo(monkeypatch)
    calls.clear()
    assert [f.to_dict() for f in scan_paths([str(log)], REAL)] == remembered
    assert sum(1 for raw in calls if raw.startswith(b"Fatal Python error")) >= 199
    assert any(f["rule"] == "fatal-python-error" for f in remembered)


def test_the_memo_stays_bounded(tmp_path):
    log = tmp_path / "distinct.log"
    count = engine_module.MEMO_LINES * 3
    crash = b"Fatal Python error: Segmentation fault in worker %d\n"
    log.write_bytes(b"".join(crash % i for i in range(count)))
    prepared = engine_module.prepare(REAL, "python")
    (source,) = list(iter_sources([str(log)]))
    scanner = engine_module.source_scanner(source, prepared)
    assert sum(1 for _ in scanner.run(source)) == count
    assert 0 < len(scanner.memo) <= engine_module.MEMO_LINES

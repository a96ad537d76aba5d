"""Every window size reads a rich traceback's folded rows as one window does (rich25, issues 7 and 8).

The scanner reads a log in windows of ``engine.READ_SIZE`` bytes (1 MiB from a file; the live guard's
windows are whatever the pipe gave, often a few lines). What it reads at a window's end reads lines above
it: the log's last line that says something (``clean.last_content_line``: trailers looked back over, a
message's rows up to the exception line, rich's rows up to its panel) and the rows rich folded under a
panel (``clean.rich_wrapped_message``). Read in the window alone, a window that began among the folded
rows of a KeyError (the panel's bottom in the window before) found the key's last row as the log's last
word, not the exception line: the traceback was no longer the log's end and the death gave no finding, at
775 of the 2,936 sizes from 16 to 2,951 of ``FOLDED_KEY`` (perf31), on both engines. The windows are now
read after the last lines of the ones before (``engine._tail_after``, at most 64 KiB).

Each case compares the findings (rule, line, severity, message, test, excerpt) at a sweep of sizes with a
1 MiB window's: every size whose first, second or third window ends on a line from two lines above the
panel's bottom to the rows below it, or at the log's end (one byte either side too), and a fixed sample
of the rest. A window ends
at the last line end it read, so the sizes between two of those ends cut the log as one of them does.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import List, Tuple

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES
from tests.scan.test_rich_folded_rich24 import FOLDED_KEY, HANDLED, WRAPPED_AT_BLANKS

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BOTTOMS = ("╰".encode(), "└".encode())  # a rich panel's bottom corners (ROUNDED, SQUARE boxes)
SAMPLED = 24  # sizes drawn from the rest of a log's range
ROWS_SWEPT = 14  # line ends from two lines above a panel's bottom: the bottom, the exception line, its rows


# 500 lines after the rows, then a GitHub step's failure: "the last Python traceback before it ... ends in"
STEP_FAILED = "".join("cleanup step %d of the run\n" % n for n in range(500)) + \
    "##[error]Process completed with exit code 1.\n"


def _stamped(text: str) -> str:
    return "".join("2026-12-07T15:50:%02d.1234567Z %s" % (n % 60, line)
                   for n, line in enumerate(text.splitlines(keepends=True), 1))


TEXTS = {
    "folded-key": FOLDED_KEY,
    "folded-key-no-last-newline": FOLDED_KEY.rstrip("\n"),
    "folded-key-github-stamped": _stamped(FOLDED_KEY),
    "wrapped-at-blanks": WRAPPED_AT_BLANKS,
    "handled": HANDLED,
    "folded-key-then-a-step-failed": FOLDED_KEY + STEP_FAILED,
}
RICH_FIXTURES = sorted(
    path.relative_to(FIXTURES).as_posix() for path in FIXTURES.rglob("*.log")
    if any(corner in path.read_bytes() for corner in BOTTOMS)
)


def _sizes(data: bytes) -> List[int]:
    """The window sizes swept over ``data`` (see the module's docstring)."""
    bottom = max(data.rfind(corner) for corner in BOTTOMS)
    start = data.rfind(b"\n", 0, data.rfind(b"\n", 0, max(bottom, 0))) + 1 if bottom >= 0 else len(data)
    ends = [i + 1 for i in range(start, len(data)) if data[i] == 10][:ROWS_SWEPT] + [len(data)]
    sizes = {size for end in ends for windows in (1, 2, 3) for size in
             (end // windows - 1, end // windows, end // windows + 1)}
    sizes |= set(random.Random(len(data)).sample(range(16, len(data) + 2), SAMPLED))
    return sorted(size for size in sizes if size >= 16)


def _read(path: Path, engine: str, size: int) -> List[Tuple]:
    saved = engine_module.READ_SIZE
    engine_module.READ_SIZE = size
    try:
        findings = scan_paths([str(path)], BUILTIN, engine=engine)
    finally:
        engine_module.READ_SIZE = saved
    return sorted((f.rule, f.line, f.severity.value, f.message, f.test, f.excerpt) for f in findings)


def _differ(path: Path, engine: str) -> List[int]:
    """The swept sizes whose findings are not a 1 MiB window's."""
    whole = _read(path, engine, 1 << 20)
    return [size for size in _sizes(path.read_bytes()) if _read(path, engine, size) != whole]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_every_window_size_reads_the_rich24_texts_as_one_window(name, engine, tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(TEXTS[name].encode("utf-8"))
    assert _differ(log, engine) == []


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", RICH_FIXTURES)
def test_every_window_size_reads_the_rich_fixtures_as_one_window(name, engine):
    assert _differ(FIXTURES / name, engine) == []


def test_the_sweep_holds_the_sizes_that_cut_the_folded_rows():
    # perf31's misses: a window ending within the rows (2,769 to 2,951) or among the panel's rows above
    sizes = _sizes(FOLDED_KEY.encode("utf-8"))
    assert {2769, 2770, 2951, 2952, 1385, 1475, 923} <= set(sizes)


def test_the_found_death_is_the_folded_key_at_a_small_window(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(FOLDED_KEY.encode("utf-8"))
    found = [f for f in _read(log, "python", 2800) if f[2] == "error"]
    assert [(f[0], f[1]) for f in found] == [("traceback-ends-log", 31)]
    assert found[0][3].endswith("characters_to_fold_twice'")


def test_the_lines_kept_stay_under_the_cap_whole_and_numbered():
    tail = (0, 0, b"")
    line = b"x" * 99 + b"\n"  # 100 bytes a line
    tail = engine_module._tail_after(tail, line * 3, 1, 4)
    assert tail == (-1, 4, line * 3) and engine_module._joined(tail, b"", 4) == (line * 3, 1)
    window = line * 2000  # 200 kB: more than the cap alone
    tail = engine_module._tail_after(tail, window, 4, 2004)
    kept = tail[2]
    assert len(kept) <= engine_module._TAIL_BYTES and len(kept) % 100 == 0 and kept.endswith(b"\n")
    assert engine_module._joined(tail, b"", 2004) == (kept, 2004 - kept.count(b"\n"))
    tail = engine_module._tail_after(tail, line, 2004, 2005)  # a small window after: joined, cut again
    assert len(tail[2]) <= engine_module._TAIL_BYTES
    assert engine_module._joined(tail, b"", 2005) == (tail[2], 2005 - tail[2].count(b"\n"))


def test_a_line_longer_than_the_cap_leaves_nothing_kept():
    long_line = b"y" * (engine_module._TAIL_BYTES + 10) + b"\n"
    assert engine_module._tail_after((1, 3, b"a\nb\n"), long_line, 3, 4)[1:] == (4, b"")


def test_a_last_line_without_its_end_is_numbered_from_the_first():
    # ``next_line`` of a window ending in a line without "\n" may be that line's number or the next
    for next_line in (3, 4):
        assert engine_module._tail_after((1, 2, b"a\n"), b"b\nc", 2, next_line)[0] == 1


def test_lines_kept_join_only_the_window_right_after_them():
    tail = (5, 8, b"e\nf\ng\n")
    assert engine_module._joined(tail, b"h\n", 8) == (b"e\nf\ng\nh\n", 5)
    assert engine_module._joined(tail, b"h\n", 9) == (b"h\n", 9)
    assert engine_module._joined((5, 8, b"e\nf\ng"), b"h\n", 8) == (b"h\n", 8)  # a giant line's head
    assert engine_module._joined((5, 8, b"e\nf\ng"), b"", 8, at_end=True) == (b"e\nf\ng", 5)


@pytest.mark.parametrize("ended", [True, False])
def test_a_window_is_read_through_a_line_from_either_end(ended):
    text = b"".join(b"line %d\n" % n for n in range(10, 30))
    text = text if ended else text[:-1]
    for line in range(10, 30):
        assert engine_module._through(text, 10, 29, line).endswith(b"line %d\n" % line) or line == 29
    assert engine_module._through(text, 10, 29, 29) == text


@pytest.mark.parametrize("size", [1 << 20, 2800])
def test_rows_read_in_a_window_that_goes_on_for_hundreds_of_lines(size, tmp_path):
    # One window read the rows only within 400 lines of its end (``rich_wrapped_message``'s look-back from
    # the end): "ends in KeyError:" at 1 MiB, the whole key at small windows.
    log = tmp_path / "job.log"
    log.write_bytes((FOLDED_KEY + STEP_FAILED).encode("utf-8"))
    found = [f for f in _read(log, "python", size) if f[2] == "error"]
    assert [(f[0], f[1]) for f in found] == [("ci-step-failed", 535)]
    assert found[0][3].endswith("characters_to_fold_twice'")

"""The matching engine: original line numbers, cleaning before matching, blocks, order, odd input."""

from __future__ import annotations

import os

import pytest
import regex

from analyzer.errors import UsageError
from analyzer.rules.model import CUT_SHORT_GROUP, Catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan.engine import iter_matches, resolve_engine
from analyzer.scan.sources import Source, iter_sources
from tests.scan.test_engine_helpers import (
    ANCHORED,
    CATALOGUE,
    ENGINES,
    SEGV,
    TRACEBACK,
    block_rule,
    ids_lines,
    line_rule,
    scan,
    scan_bytes,
    write,
)

TS = b"2024-01-09T18:41:23.1234567Z "
ATEXIT = (
    b"Exception ignored in atexit callback: <function _prepare_to_exit at 0x7f3a2c1d0e50>\n"
    b"Traceback (most recent call last):\n"
    b'  File "/opt/app/agent.py", line 12, in _prepare_to_exit\n'
    b"RuntimeError: distributed checkpoint workers timed out\n"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_cleaned_text_matched_original_line_numbers_and_excerpt(tmp_path, engine):
    data = (
        b"\xef\xbb\xbf" + TS + b"Run pytest\n"
        + TS + b"\x1b[31mSegmentation\x1b[0m fault (core dumped)\n"
        + TS + b"[rank2]:Fatal Python error: Bus error\n"
    )
    matches = scan_bytes(tmp_path, data, engine=engine)
    assert ids_lines(matches) == [("segv", 2), ("anchored-fatal", 3)]
    segv, fatal = matches
    assert segv.text == "Segmentation fault (core dumped)"
    assert segv.excerpt == "2024-01-09T18:41:23.1234567Z Segmentation fault (core dumped)"
    assert (fatal.text, fatal.rank) == ("Fatal Python error: Bus error", 2)
    assert dict(fatal.groups) == {"what": "Bus error"}
    assert [m.seq for m in matches] == [0, 1]


@pytest.mark.parametrize("engine", ENGINES)
def test_carriage_return_progress_bar_is_one_line_and_each_state_is_matched(tmp_path, engine):
    bar = b"".join(b"\r%3d%%|%-10s|" % (p, b"#" * (p // 10)) for p in range(0, 100, 5))
    data = b"start\n" + TS + bar + b"\rFatal Python error: Aborted\r\nafter\nSegmentation fault\n"
    matches = scan_bytes(tmp_path, data, engine=engine)
    # The anchored rule matches the segment after the last \r; the \r do not start lines.
    assert ids_lines(matches) == [("anchored-fatal", 2), ("segv", 4)]
    assert matches[0].excerpt == "Fatal Python error: Aborted"


@pytest.mark.parametrize("engine", ENGINES)
def test_crlf_invalid_utf8_and_nul_bytes(tmp_path, engine):
    data = (
        b"caf\xe9 \xff\xfe\r\n"
        b"Segmen\x00tation fault\r\n"
        b"\x00\x00\x00\r\n"
        b"Fatal Python error: Segmentation fault \xff\r\n"
    )
    matches = scan_bytes(tmp_path, data, engine=engine)
    # Two rules on one line come out in catalogue order.
    assert ids_lines(matches) == [("segv", 2), ("segv", 4), ("anchored-fatal", 4)]
    assert matches[2].excerpt == "Fatal Python error: Segmentation fault \\xff"


@pytest.mark.parametrize("engine", ENGINES)
def test_multi_megabyte_lines(tmp_path, engine):
    long_ok = b"x" * (engine_module.LINE_CAP - 100)
    giant = b"y" * (5 * engine_module.LINE_CAP)
    data = (
        b"first\n"
        + long_ok[: len(long_ok) // 2] + b" Segmentation fault " + long_ok[len(long_ok) // 2:] + b"\n"
        + giant + b" Segmentation fault\n"
        + b"Fatal Python error: Aborted\n"
    )
    matches = scan_bytes(tmp_path, data, engine=engine)
    # A line under LINE_CAP is matched whole; a giant one on its head and tail (here: the tail), and
    # the middle the cut dropped is said (red41: it was dropped without a word).
    assert ids_lines(matches) == [("segv", 2), ("segv", 3), ("scan-incomplete", 3), ("anchored-fatal", 4)]
    assert matches[2].text.startswith(f"{len(giant) + 19 - engine_module.LINE_CAP:,} of this line's")
    assert all(len(m.excerpt) <= engine_module.EXCERPT_LINE_CHARS + 20 for m in matches)


@pytest.mark.parametrize("engine", ENGINES)
def test_giant_progress_bar_without_newline_at_eof(tmp_path, engine):
    unit = b"".join(b"\r%3d%%|%-20s| %d/100" % (p, b"#" * (p // 5), p) for p in range(100))
    data = b"line one\n" + unit * (3 * engine_module.LINE_CAP // len(unit)) + b"\rSegmentation fault"
    matches = scan_bytes(tmp_path, data, engine=engine)
    # A pasted log (maybe a terminal's copy) has no states matched in the middle: that it was not read
    # is said (red41).
    assert sorted(ids_lines(matches)) == [("scan-incomplete", 2), ("segv", 2)]
    assert [m.text for m in matches if m.rule.id == "segv"] == ["Segmentation fault"]


def _unwrapped_scan(tmp_path, data: bytes, engine: str):
    """Scan ``data`` as a log no terminal wrapped (the guard's own logs, a runner's step log)."""
    path = write(tmp_path, "stdout.log", data)
    source = Source(path, lambda: open(path, "rb"), may_be_wrapped=False)
    return list(iter_matches([source], CATALOGUE, engine))


# red40: a tqdm bar redrawn with \r for half an hour passes LINE_CAP; an error printed between two of its
# states fell in the middle that the head-and-tail cut drops, and the run passed (red40's p76 program).
@pytest.mark.parametrize("engine", ENGINES)
def test_a_state_in_the_middle_of_a_giant_progress_line_is_matched(tmp_path, engine):
    bar = b"".join(b"\rEpoch 1: %7d/9999999 [00:01<00:02, 4.2it/s, loss=0.31]" % i for i in range(40000))
    assert len(bar) > 2 * engine_module.LINE_CAP
    data = b"line one\n" + bar + b"\rSegmentation fault" + bar + b"\nline three\n"
    matches = _unwrapped_scan(tmp_path, data, engine)
    assert [(m.rule.id, m.line, m.text) for m in matches] == [("segv", 2, "Segmentation fault")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_state_longer_than_the_cap_in_a_giant_line_is_matched_on_its_start(tmp_path, engine):
    bar = b"\rstep 1/9" * (engine_module.LINE_CAP // 9 + 1000)
    too_long = b"\rSegmentation fault " + b"z" * (2 * engine_module.LINE_CAP)
    data = bar + too_long + bar + b"\rFatal Python error: Aborted" + bar + b"\n"
    matches = _unwrapped_scan(tmp_path, data, engine)
    assert sorted(ids_lines(matches)) == [("anchored-fatal", 1), ("scan-incomplete", 1), ("segv", 1)]
    # What the guard's scan dropped: the too long state past its first LINE_CAP // 2 bytes (red41).
    unread = len(too_long) - 1 - engine_module.LINE_CAP // 2
    (said,) = [m.text for m in matches if m.rule.id == "scan-incomplete"]
    assert said.startswith(f"{unread:,} of this line's {len(data) - 1:,} bytes"), said


# red41: red40's p75 printed an error in the middle of a 5 MiB line with no \r; the head-and-tail cut
# dropped it and the scan passed without a word, also in the guard's live scan.
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("wrapped", [True, False], ids=["pasted", "guard-log"])
def test_the_unread_middle_of_a_giant_line_is_said(tmp_path, engine, wrapped):
    cap = engine_module.LINE_CAP
    giant = b"x" * (2 * cap) + b" NCCL watchdog thread terminated with exception " + b"y" * (2 * cap)
    data = b"".join(b"step %d\n" % i for i in range(10)) + giant + b"\nline twelve\n"
    if wrapped:
        matches = scan_bytes(tmp_path, data, engine=engine)
    else:
        matches = _unwrapped_scan(tmp_path, data, engine)
    # Line 11 although a pasted log's reader holds its first lines back while the giant line is read.
    assert ids_lines(matches) == [("scan-incomplete", 11)]
    reason = matches[0].text
    assert reason.startswith(f"{len(giant) - cap:,} of this line's {len(giant):,} bytes"), reason


@pytest.mark.parametrize("engine", ENGINES)
def test_a_giant_line_of_short_states_in_the_guards_log_is_read_whole(tmp_path, engine):
    # Every byte of it is in a state, the head or the tail: nothing to say (its last state, longer than
    # the tail, is read in the tail and the states before).
    bar = b"".join(b"\r%7d/9999999 [00:01<00:02]" % i for i in range(100_000))
    data = b"a\n" + bar + b"\rdone " + b"z" * (engine_module.LINE_CAP // 4) + b"\nb\n"
    assert ids_lines(_unwrapped_scan(tmp_path, data, engine)) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_block_rule_groups_excerpt_and_end_line(tmp_path, engine):
    data = b"noise\n" + ATEXIT + b"Segmentation fault\n"
    matches = scan_bytes(tmp_path, data, engine=engine)
    assert ids_lines(matches) == [("atexit-traceback", 2), ("segv", 6)]
    block = matches[0]
    assert (block.line, block.end_line) == (2, 5)
    assert dict(block.groups) == {
        "callback": "<function _prepare_to_exit at 0x7f3a2c1d0e50>", "exc": "RuntimeError",
    }
    assert block.excerpt == ATEXIT.decode().rstrip("\n")
    assert block.text.startswith("Exception ignored in atexit callback")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_blocks_capture_fills_groups_from_its_first_inner_line_that_matches(tmp_path, engine):
    # CPython 3.6-3.9 name the atexit callback only in the traceback's first frame.
    rule = block_rule(
        "old-atexit", r"^Error in atexit\._run_exitfuncs:$", r"^(?P<exc>\w+): ",
        capture=r'^\s+File "[^"]*", line \d+, in (?P<callback>\S+)$',
        capture_re=regex.compile(r'^\s+File "[^"]*", line \d+, in (?P<callback>\S+)$'),
    )
    data = (
        b"Error in atexit._run_exitfuncs:\n"
        b"Traceback (most recent call last):\n"
        b'  File "/w/train.py", line 5, in _prepare_to_exit\n'
        b'  File "/w/dist.py", line 9, in destroy\n'
        b"RuntimeError: boom\n"
    )
    (match,) = scan_bytes(tmp_path, data, catalogue=Catalogue(rules=(rule,)), engine=engine)
    assert dict(match.groups) == {"callback": "_prepare_to_exit", "exc": "RuntimeError"}


@pytest.mark.parametrize("engine", ENGINES)
def test_matches_inside_an_open_block_come_after_it_in_file_order(tmp_path, engine):
    data = (
        b"Segmentation fault\n"
        + ATEXIT.replace(b"Traceback", b"Segmentation fault\nTraceback")
        + b"Segmentation fault\n"
    )
    matches = scan_bytes(tmp_path, data, engine=engine)
    assert ids_lines(matches) == [("segv", 1), ("atexit-traceback", 2), ("segv", 3), ("segv", 7)]
    assert [m.seq for m in matches] == [0, 1, 2, 3]


@pytest.mark.parametrize("engine", ENGINES)
def test_block_without_end_within_max_lines_or_before_eof_matches_nothing(tmp_path, engine):
    start = ATEXIT.splitlines(keepends=True)[0]
    too_long = start + b"  frame\n" * 25 + b"RuntimeError: late\n"  # max_lines is 20
    at_eof = start + b"Traceback (most recent call last):\n  frame\n"
    assert scan_bytes(tmp_path, too_long, engine=engine) == []
    assert scan_bytes(tmp_path, at_eof, engine=engine) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_block_cut_by_the_end_of_the_log_counts_only_when_its_cut_short_line_was_seen(tmp_path, engine):
    rule = block_rule(
        "worker-tb", r"^Process (?P<name>\S+):$", r"^(?P<exc>\w+): ",
        cut_short=r"^Traceback \(most recent call last\):$",
        cut_short_re=regex.compile(r"^Traceback \(most recent call last\):$"),
    )
    catalogue = Catalogue(rules=(rule,))
    killed = b"noise\nProcess SpawnProcess-3:\nTraceback (most recent call last):\n  File \"w.py\", line 4\n"
    (match,) = scan_bytes(tmp_path, killed, catalogue=catalogue, engine=engine)
    assert (match.line, match.end_line) == (2, 4)
    assert dict(match.groups) == {"name": "SpawnProcess-3", "exc": CUT_SHORT_GROUP}
    assert scan_bytes(tmp_path, b"Process Worker-1:\nwarming up\n", catalogue=catalogue, engine=engine) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_start_restarts_an_open_block(tmp_path, engine):
    start = ATEXIT.splitlines(keepends=True)[0]
    data = start + b"  frame\n" * 15 + start + b"  frame\n" * 10 + b"ValueError: x\n"
    matches = scan_bytes(tmp_path, data, engine=engine)
    assert [(m.rule.id, m.line, m.end_line) for m in matches] == [("atexit-traceback", 17, 28)]


@pytest.mark.parametrize("engine", ENGINES)
def test_marker_rules_produce_matches(tmp_path, engine):
    data = b"tests/t.py::test_a PASSED\n========== 3 passed, 1 warning in 2.51s ==========\n"
    matches = scan_bytes(tmp_path, data, engine=engine)
    assert [(m.rule.id, m.rule.marker, m.line, dict(m.groups)) for m in matches] == [
        ("pytest-verdict", "verdict-printed", 2, {"summary": "3 passed, 1 warning"}),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_caseless_rule(tmp_path, engine):
    data = b"job TIMED OUT AFTER 30 minutes\njob timed out after 5\ntimed_out=False\n"
    matches = scan_bytes(tmp_path, data, engine=engine)
    assert [(m.line, m.groups["n"]) for m in matches] == [(1, "30"), (2, "5")]


@pytest.mark.parametrize("engine", ENGINES)
def test_seq_runs_on_across_sources(tmp_path, engine):
    first = write(tmp_path, "a.log", b"Segmentation fault\nSegmentation fault\n")
    second = write(tmp_path, "b.log", b"Segmentation fault\n")
    matches = scan([first, second], engine=engine)
    assert [(m.path, m.line, m.seq) for m in matches] == [(first, 1, 0), (first, 2, 1), (second, 1, 2)]


@pytest.mark.parametrize("engine", ENGINES)
def test_catastrophic_user_pattern_times_out_and_the_scan_goes_on(tmp_path, engine):
    # ``regex`` defuses the textbook (a+)+$ on its own; (a|aa)+$ still backtracks exponentially.
    nested = line_rule("nested", r"(a+)+$", user_defined=True)
    evil = line_rule("evil", r"(a|aa)+$", user_defined=True)
    catalogue = Catalogue(rules=(nested, evil, SEGV), match_timeout_s=0.05, match_budget_s=0.2)
    data = (b"a" * 40 + b"!\n") * 8 + b"Segmentation fault\n" + b"aaaa\n"
    matches = scan_bytes(tmp_path, data, catalogue=catalogue, engine=engine)
    # Every "aaa...!" line makes "evil" time out (no match); once its timeouts spend match_budget it is
    # switched off for the rest of the scan, so its genuine "aaaa" match is lost too, and a
    # scan-incomplete match says so; the scan finished.
    notices = [m for m in matches if m.rule.id == "scan-incomplete"]
    assert [m.groups["rule"] for m in notices] == ["evil"]
    others = [pair for pair in ids_lines(matches) if pair[0] != "scan-incomplete"]
    assert others == [("segv", 9), ("nested", 10)]


@pytest.mark.parametrize("engine", ENGINES)
def test_user_pattern_that_matches_fast_still_matches(tmp_path, engine):
    rule = line_rule("mine", r"DEADLOCK in (?P<where>\w+)", user_defined=True)
    catalogue = Catalogue(rules=(rule,), match_timeout_s=0.5)
    matches = scan_bytes(tmp_path, b"ok\nDEADLOCK in allreduce\n", catalogue=catalogue, engine=engine)
    assert [(m.line, dict(m.groups)) for m in matches] == [(2, {"where": "allreduce"})]


def test_rule_without_any_literal_is_checked_on_every_line(tmp_path):
    anything = line_rule("digits-only", r"^\d+$")
    catalogue = Catalogue(rules=(anything,))
    for engine in ENGINES:
        matches = scan_bytes(tmp_path, b"a\n12\nb\n345\n", catalogue=catalogue, engine=engine)
        assert ids_lines(matches) == [("digits-only", 2), ("digits-only", 4)]


def test_unknown_engine_is_a_usage_error(tmp_path):
    path = write(tmp_path, "a.log", b"x\n")
    with pytest.raises(UsageError, match="--engine turbo"):
        list(iter_matches(iter_sources([path]), CATALOGUE, "turbo"))


def test_auto_prefers_hyperscan_when_importable():
    expected = "hyperscan" if "hyperscan" in ENGINES else "python"
    assert resolve_engine("auto") == expected
    assert resolve_engine("python") == "python"


def test_empty_file_has_no_matches(tmp_path):
    assert scan_bytes(tmp_path, b"") == []


def test_block_rule_has_its_own_literal_from_the_start_pattern():
    from analyzer.scan._engine_literals import rule_requirement

    assert rule_requirement(TRACEBACK).alternatives == ("Exception ignored in atexit callback",)
    assert rule_requirement(ANCHORED).alternatives == ("Fatal Python error: ",)
    assert rule_requirement(block_rule("b", r"(?:foo|bar)x", r"y")).alternatives == ("foo", "bar")


def test_peak_memory_stays_bounded_on_a_huge_single_line(tmp_path):
    """A 160 MiB line of progress bar, scanned in a real subprocess: its peak RSS stays under 100 MiB."""
    import subprocess
    import sys

    path = str(tmp_path / "bar.log")
    unit = b"".join(b"\r%3d%%|%-20s|" % (p, b"#" * (p // 5)) for p in range(100))
    with open(path, "wb") as f:
        for _ in range((160 << 20) // (len(unit) * 64)):
            f.write(unit * 64)
        f.write(b"\rSegmentation fault\nnext\n")
    code = (
        "import sys\n"
        "from analyzer.scan.engine import iter_matches\n"
        "from analyzer.scan.sources import iter_sources\n"
        "from tests.scan.test_engine_helpers import CATALOGUE\n"
        "matches = iter_matches(iter_sources([sys.argv[1]]), CATALOGUE, sys.argv[2])\n"
        "found = [(m.rule.id, m.line) for m in matches]\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        "print(found, int(hwm) // 1024)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for engine in ENGINES:
        proc = subprocess.run(
            [sys.executable, "-c", code, path, engine], capture_output=True, cwd=root, timeout=300
        )
        assert proc.returncode == 0, proc.stderr.decode()
        found, peak_mib = proc.stdout.decode().rsplit(" ", 1)
        # A plain file may be a terminal's copy: the states in the middle were not matched, and it says so.
        assert found == "[('segv', 1), ('scan-incomplete', 1)]"
        assert int(peak_mib) < 100


class _Chunks:
    """A stream whose reads return the given chunks, one a read, then b""."""

    def __init__(self, chunks):
        self.chunks = list(chunks)

    def read(self, _size=-1):
        return self.chunks.pop(0) if self.chunks else b""


@pytest.mark.parametrize("seed", range(40))
def test_each_window_is_what_was_read_up_to_its_last_newline(seed):
    import random

    rng = random.Random(seed)
    data = bytes(rng.choice(b"ab\n\r") for _ in range(rng.randrange(0, 400)))
    chunks, at = [], 0
    while at < len(data):
        size = rng.randrange(1, 40)
        chunks.append(data[at:at + size])
        at += size
    expected, sent, read = [], 0, 0
    for chunk in chunks:
        read += len(chunk)
        cut = data.rfind(b"\n", 0, read) + 1
        if cut > sent:
            expected.append(data[sent:cut])
            sent = cut
    if sent < len(data):
        expected.append(data[sent:])
    windows = list(engine_module._windows(_Chunks(chunks), "log"))
    assert windows == expected and all(type(w) is bytes for w in windows)


# perf29: a pasted log's reader holds windows back (its first 64 KiB while it finds the width, then a run of
# cut rows that may go on), so the notice's line is the scan's next line plus the lines the reader holds.
def _cut_rows(width: int) -> bytes:
    """Three rows of ``width`` columns, cut from a longer line of words that the giant line's start
    seems to go on."""
    words = b" ".join(b"word%d" % i for i in range(width))[:3 * width]
    return b"".join(words[at:at + width] + b"\n" for at in range(0, len(words), width))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", ["in-the-sample", "after-the-sample", "after-held-cut-rows"])
def test_the_notice_of_a_giant_lines_cut_is_at_its_line_in_a_pasted_log(tmp_path, engine, shape):
    cap = engine_module.LINE_CAP
    giant = b"x" * (2 * cap) + b" NCCL watchdog thread terminated with exception " + b"y" * (2 * cap)
    if shape == "in-the-sample":
        head = b"".join(b"step %d\n" % i for i in range(10))
    elif shape == "after-the-sample":
        head = b"".join(b"step %d\n" % i for i in range(20_000))
    else:  # a terminal copy 100 columns wide, then rows cut at 100 columns just before the giant line
        fixtures = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
        with open(os.path.join(fixtures, "quoted", "nccl-watchdog-tmux100.log"), "rb") as f:
            copy = b"".join(line for line in f.read().splitlines(True) if not line.startswith(b"#!"))
        head = copy * (1 + (1 << 17) // len(copy)) + _cut_rows(100)
    data = head + giant + b"\nline after\n"
    said = [m.line for m in scan_bytes(tmp_path, data, engine=engine) if m.rule.id == "scan-incomplete"]
    assert said == [head.count(b"\n") + 1]

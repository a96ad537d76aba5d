"""Terminal cuts the wrap reader missed (wrap18), each from a real log's line folded as a terminal folds it.

HIP's device assertion (quoted/hip-device-assert-rocm-vllm, ROCm/vllm#527) cut right before its GNU-style
quote "`false'": the rest was read as a Markdown code span, a line of its own. NCCL's WARN
(quoted/nccl-warn-socketstartconnect-abort) cut inside an IPv4 address after a dot, and a Rust panic on
Windows (quoted/rust-panic-polars-worker-windows) cut before a backslash of its path: neither break read
as a cut, so the log was no terminal copy and the message's rows were never joined.
"""

from __future__ import annotations

import io
import os

import pytest

from analyzer.scan._engine_wrap import _cut_in_a_word, _goes_on, _starts_a_record, logical_lines, wrap_width
from tests.scan.test_engine_helpers import ENGINES
from tests.scan.test_engine_wrap import ROOT, body, failing, fold

HIP = (
    b"/app/vllm/build/temp.linux-x86_64-cpython-312/csrc/rocm/skinny_gemms.hip:497: void wvSplitK_hf_sml_("
    b"const int, const int, const scalar_t *, const scalar_t *__restrict, scalar_t *, const int, const int) "
    b"[scalar_t = __hip_bfloat16, THRDS = 64, YTILE = 2, WvPrGrp = 16, A_CHUNK = 8, UNRL = 2, N = 2]: "
    b"Device-side assertion `false' failed."
)
NCCL = (
    b"h100-15:139:1092 [7] socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.82<38455> failed :"
    b" Software caused connection abort"
)
RUST = (
    b"thread 'polars-6' panicked at C:\\a\\polars\\polars\\crates\\polars-parquet\\src\\arrow\\read"
    b"\\deserialize\\mod.rs:144:31:"
)


def test_a_gnu_quote_a_terminal_put_at_a_rows_start_is_the_rest_of_the_line():
    rows = fold(HIP, 80).split(b"\n")
    assert rows[3].endswith(b"Device-side assertion ") and rows[4] == b"`false' failed."
    assert not _starts_a_record(rows[4])
    # A Markdown code span a paste opens and closes on its line is still a line of its own.
    assert _starts_a_record(b"`Killed`")
    assert _starts_a_record(b"```Traceback (most recent call last):")
    buf = b"\n".join(rows) + b"\n"
    assert [text for _start, _rows, text in logical_lines(buf, 80)][0] == HIP


@pytest.mark.parametrize("line, at, rule", [
    (NCCL, b"0.82<", "nccl-socket-connect-failed"),
    (RUST, b"\\read\\", "rust-panic"),
])
def test_an_address_or_a_windows_path_cut_where_no_line_ends_is_a_terminals_cut(line, at, rule):
    row, after = line[:line.index(at)], line[line.index(at):]
    assert _cut_in_a_word(row, after) and _goes_on(row, after, False)
    data = b"the job failed:\n" + line + b"\nthen it stopped\n"
    cut = fold(data, len(row))
    assert wrap_width(cut) == len(row)
    assert rule in failing(cut)


def test_a_sentence_or_a_path_that_ended_is_no_cut():
    # A number and its full stop end a sentence; a number with no inner dot before it is no address.
    assert not _cut_in_a_word(b"the run stopped at step 10.", b"0 of 3 ranks reported back")
    # A path that is not the row's last word: the backslash after it starts something else.
    assert not _cut_in_a_word(b"wrote C:\\out\\log.txt and stopped", b"\\\\server\\share is gone")


@pytest.mark.parametrize("name, rule", [
    ("hip-device-assert-rocm-vllm", "hip-device-assert"),
    ("nccl-warn-socketstartconnect-abort", "nccl-socket-connect-failed"),
    ("rust-panic-polars-worker-windows", "rust-panic"),
])
@pytest.mark.parametrize("engine", ENGINES)
def test_the_real_log_cut_at_80_columns_keeps_its_finding(name, rule, engine):
    cut = fold(body(os.path.join(ROOT, "fixtures", "quoted", name + ".log")), 80)
    assert wrap_width(cut) == 80
    assert rule in failing(cut, engine)


# Real runs in an 80-column tmux, copied (fixtures/regenerate.py, wrap18). rich draws its panel to the
# console's width: its last row "╰───╯" was read as cut and joined with the exception line under it.
@pytest.mark.parametrize("engine", ENGINES)
def test_a_rich_panels_border_is_a_whole_row_above_the_exception_line(engine):
    from analyzer.scan import scan_sources
    from analyzer.scan._engine_wrap import _drawn_to_width
    from analyzer.scan.sources import Source
    from tests.scan.test_engine_wrap import REAL

    data = body(os.path.join(ROOT, "fixtures", "crash", "wrap18-rich-path-broken-mid-word-tmux80.log"))
    rows = data.split(b"\n")
    assert wrap_width(data) == 80
    for row in rows[1:10]:  # the panel: its top, its "│ ... │" rows, its bottom
        assert _drawn_to_width(row), row
    assert not _drawn_to_width(rows[-3])  # rich's own fold of the path: "...global_step_1200/mp_rank_"
    assert rows[-3].endswith(b"/mp_rank_")
    source = Source("log", lambda: io.BytesIO(data), may_be_wrapped=True)
    found = [(f.rule, f.line) for f in scan_sources([source], REAL, engine=engine)]
    exception = next(n for n, row in enumerate(rows, 1) if row.startswith(b"FileNotFoundError"))
    assert found == [("traceback-ends-log", exception)]


# pytest -rA's "FAILED id - reason" folded inside the id's parameters ("...[tenso" / "r_parallel_size_...]
# - AssertionError: ..."): the finding names the whole id, with the reason, at the first row.
@pytest.mark.parametrize("engine", ENGINES)
def test_a_summary_line_folded_in_its_node_id_names_the_whole_id(engine):
    from analyzer.scan import scan_sources
    from analyzer.scan.sources import Source
    from tests.scan.test_engine_wrap import REAL

    data = body(os.path.join(ROOT, "fixtures", "pytest", "wrap18-summary-id-folded-tmux80.log"))
    rows = data.split(b"\n")
    first = next(n for n, row in enumerate(rows, 1) if row.startswith(b"FAILED "))
    source = Source("log", lambda: io.BytesIO(data), may_be_wrapped=True)
    found = [(f.rule, f.line, f.test, f.message) for f in scan_sources([source], REAL, engine=engine)]
    test_id = ("test_wrapped_ids.py::test_all_reduce_matches_reference_across_ranks"
               "[tensor_parallel_size_4_pipeline_parallel_size_2_bf16]")
    assert found == [("pytest-test-outcome", first, test_id,
                      test_id + " failed: AssertionError: rank 3 disagreed with rank 0 after all_reduce")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_summary_line_whose_id_is_whole_keeps_its_row(engine):
    # The id closed on the first row: its match is the row's, the row after is not read into it (wrap17:
    # reading every first row's match on the whole line swallowed the next line of a log misread as wrapped).
    from analyzer.scan import scan_sources
    from analyzer.scan.sources import Source
    from tests.scan.test_engine_wrap import REAL

    row = b"FAILED test_wrapped_ids.py::test_all_reduce[tp4] - AssertionError: rank 3 disagreed with rank 0 a"
    data = (b"the run ended so, tp4 went on for a while and then\n" + row + b"\n"
            b"fter all_reduce\n" + b"=" * 20 + b" 1 failed in 2.31s " + b"=" * 20 + b"\n")
    source = Source("log", lambda: io.BytesIO(data), may_be_wrapped=True)
    found = [(f.rule, f.line, f.test) for f in scan_sources([source], REAL, engine=engine)]
    assert found == [("pytest-test-outcome", 2, "test_wrapped_ids.py::test_all_reduce[tp4]")]


def test_a_node_id_cut_before_its_files_extension_is_a_terminals_cut():
    # run_test.py's closing list (fixtures/negative/run-test-failure-then-passes, a GitHub-stamped step log)
    # folded at 120 columns right after "test_flaky_assert.": read as two lines, the list named no test and
    # the test's first failure, which passed in a new process, stayed an error.
    line = (b"2024-01-09T18:41:23.2001760Z The following tests failed and then succeeded when run in a new "
            b"process['test_flaky_assert.py::test_fails_once']")
    row, after = line[:120], line[120:]
    assert row.endswith(b"test_flaky_assert.") and after.startswith(b"py::")
    assert _cut_in_a_word(row, after)
    # A sentence's full stop before a line that starts otherwise is still a line's end.
    assert not _cut_in_a_word(b"the test passed.", b"pytest then stopped")
    path = os.path.join(ROOT, "fixtures", "negative", "run-test-failure-then-passes.log")
    assert not failing(fold(body(path), 120))

"""Terminal-wrap detection asks for real evidence of a cut width (issue 7: findings on the right line).

A log written through a pipe or to a file has one longest line, and that line ends in a word before a
line that starts with one: a unittest test that timed out ("... timed out after 0.2999 seconds") before
"setUpClass (mod.C) ... ERROR", a pytest header before "Traceback". Read as a terminal's cut, the two
rows were joined and an event went to the wrong line or test. A cut counts once the rest goes on where
no program starts a line (a word in lower case, a number, a space), or the rows before it repeat no
record of their own. A cut before a capital or a label ("capab" / "ilities: [[gpu]]") also counts where
the rows joined match a rule of the catalogue that no row matches alone (wrap15): the engine vouches.
"""

from __future__ import annotations

import io
import os

import pytest

from analyzer.scan._engine_wrap import SAMPLE_BYTES, wrap_width
from analyzer.scan.engine import prepare, source_scanner
from analyzer.scan.sources import Source
from tests.scan.test_engine_helpers import ENGINES
from tests.scan.test_engine_wrap import REAL, ROOT, body, failing, fold

# Real logs regenerate.py captured through a pipe (unittest / pytest -q -s runs, no terminal), each read
# as a terminal copy before: its longest row (a test's "timed out after ... seconds") sat before
# unittest's "setUpClass (...) ... ERROR" or a row of progress dots ".FFatal Python error".
PIPED_UNITTEST = [
    "pytest/attrib13-unittest-setupclass-v-file.log",
    "without-v/unittest-plain-dots-twin.log",
    "without-v/pytest-q-s-dots-twin.log",
    "attrib11/unittest-first-test-handled.log",
]
# Real logs whose records repeat at one width (dask's nanny, MIOpen's warnings, CUDA's device
# assertions, submitit's logger): the same prefix starts the row and the row after, a record each.
REPEATED_RECORDS = [
    "quoted/dask-nanny-worker-killed-by-signal-15.log",
    "quoted/miopen-error-forward-convolution-twice-dcu.log",
    "quoted/cuda-device-assert-reid-thcunn.log",
    "quoted/slurm-job-requeue-submitit-preempted.log",
]


def _width(relpath: str):
    return wrap_width(body(os.path.join(ROOT, "fixtures", relpath))[:SAMPLE_BYTES])


@pytest.mark.parametrize("relpath", PIPED_UNITTEST + REPEATED_RECORDS)
def test_a_log_no_terminal_cut_is_not_read_as_a_terminal_copy(relpath):
    assert _width(relpath) is None


def test_pytests_summary_rows_cut_to_the_width_with_dots_are_whole_lines():
    # pytest -n 2 --dist loadfile (xdist 3.8, pytest 9.2) through a pipe: the short test summary cuts each
    # long FAILED row to 120 columns and ends it with "..." (_pytest/terminal.py), the run's widest rows.
    row = (b"FAILED tests/test_crash.py::test_native_crash - worker 'gw%d' crashed while running "
           b"'tests/test_crash.py::test_native_...")
    rows = [b"=" * 47 + b" short test summary info " + b"=" * 48]
    rows += [row % n for n in (0, 2)] + [
        b"FAILED tests/test_dist.py::test_allreduce_mismatch - AssertionError: allreduce result differs on"
        b" rank 1",
        b"FAILED tests/test_dist.py::test_child_segv_fails - AssertionError: worker exited with -11",
    ] + [row % n for n in range(3, 10)]
    rows.append(b"=" * 45 + b" 11 failed, 5 passed in 2.30s " + b"=" * 45)
    assert {len(r) for r in rows[1:3]} == {120}
    assert wrap_width(b"\n".join(rows) + b"\n") is None


def test_a_terminal_copy_from_an_issue_is_still_recognised():
    # om-ai-lab/VLM-R1#257: ProcessGroupNCCL's heartbeat message pasted from a 116-column terminal (rows
    # padded with spaces), cut inside words ("indi" / "cates", "oth" / "erwise").
    rows = [
        b"[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6] "
        b"ProcessGroupNCCL'",
        b"s watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. "
        b"This typically indi",
        b"cates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered"
        b" by another thread ",
        b"holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone"
        b" behaviors.If you suspect ",
        b" of aforementioned helps, feel free to file an issue to PyTorch about the short timeout or false "
        b"positive abort; oth",
        b"erwise, please attempt to debug the hang.".ljust(116),
    ]
    assert {len(r) for r in rows} == {116}
    assert wrap_width(b"\n".join(rows) + b"\n") == 116


@pytest.mark.parametrize("rest, wrapped", [
    (b"Traceback (most recent call last):", False),  # a line of its own: the WARNING line ended
    (b"setUpClass (test_ut.BrokenSetup) ... ERROR", False),  # unittest's fixture line
    (b"..F", False),  # unittest's progress dots
    (b"the cache directory instead", True),  # the sentence goes on: a cut
    (b"000 ms", True),  # "... cache 2" / "000 ms": a number cut in two
])
def test_one_cut_counts_only_where_the_rest_goes_on(rest, wrapped):
    log = b"WARNING harness: HF_HOME is not set, using the default cache 2\n" + rest + b"\nExit 1\n"
    assert (wrap_width(log) is not None) is wrapped


def _vouch(engine: str = "python"):
    """The engine's word on joined lines (``_SourceScan._join_tells``), as a scan passes it to the reader."""
    scan = source_scanner(Source("log", lambda: io.BytesIO(b""), may_be_wrapped=True), prepare(REAL, engine))
    return scan._join_tells


# Real failure logs whose rows a terminal of 80 columns cuts only before a capital or a `word:` (wrap14
# read them row by row and lost the finding): "driver with capab" / "ilities: [[gpu]]", "Resource
# exhaus" / "ted: Out of memory", "Work WorkNC" / "CL(SeqNum=..." over three rows, "110592" /
# "Hardware limit".
CUT_BEFORE_A_CAPITAL = [
    ("quoted/docker-could-not-select-device-driver-gpus-all.log", "container-start-failed"),
    ("quoted/jax-resource-exhausted-mixed-case-arm.log", "xla-runtime-status-error"),
    ("quoted/nccl-blocking-wait-alone-diffusers.log", "nccl-blocking-wait-timeout"),
    ("quoted/triton-code-gen-out-of-resources.log", "triton-out-of-resources"),
]


@pytest.mark.parametrize("relpath, rule", CUT_BEFORE_A_CAPITAL)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_before_a_capital_counts_where_the_join_matches_what_no_row_matches(relpath, rule, engine):
    cut = fold(body(os.path.join(ROOT, "fixtures", relpath)), 80)
    assert wrap_width(cut[:SAMPLE_BYTES]) is None  # no row goes on in lower case
    assert wrap_width(cut[:SAMPLE_BYTES], _vouch(engine)) == 80
    assert rule in failing(cut, engine)


@pytest.mark.parametrize("relpath", PIPED_UNITTEST + REPEATED_RECORDS)
def test_a_piped_logs_longest_line_joins_into_nothing_a_rule_knows(relpath):
    assert wrap_width(body(os.path.join(ROOT, "fixtures", relpath))[:SAMPLE_BYTES], _vouch()) is None


def test_a_join_a_row_already_tells_vouches_for_nothing():
    # "... default cache" / "Traceback (most recent call last):": the traceback rule matches the second
    # row alone, so the join is no evidence that a terminal cut there.
    log = (b"WARNING harness: HF_HOME is not set, using the default cache\n"
           b"Traceback (most recent call last):\n  File q.py, line 179, in get\n_queue.Empty\n")
    assert wrap_width(log, _vouch()) is None

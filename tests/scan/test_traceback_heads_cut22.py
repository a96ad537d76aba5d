"""Tracebacks whose exception line never made it into the log (cut22, issue 7 section 2).

IPython's header names the exception before "Traceback (most recent call last)", rich's panel is a traceback's
head, and Ray's deduplicator prints other workers' copies of a traceback's lines after the exception that ends
the log. The IPython and rich texts are the real output of IPython 9.19.1 (``ipython -c "%run x.py"``) and
rich 15.0.0 (``rich.traceback.install``, ``Console.print_exception``) on CPython 3.11; the Ray lines are a real
paste's (a compiled DAG actor's NcclError), with copies in the deduplicator's wording after it.
"""

# ruff: noqa: E501 (the Ray lines are a real paste's, whole)
from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import last_content_line
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
RULE = "traceback-ends-log"

IPYTHON_UNCAUGHT = """\
---------------------------------------------------------------------------
OutOfMemoryError                          Traceback (most recent call last)
File /tmp/cut22/cap/oom_cell.py:5
      3 def train():
      4     raise OutOfMemoryError("shard 3 does not fit")
----> 5 train()

File /tmp/cut22/cap/oom_cell.py:4, in train()
      3 def train():
----> 4     raise OutOfMemoryError("shard 3 does not fit")

OutOfMemoryError: shard 3 does not fit
"""

# the same cell's exception caught and printed with traceback.print_exc, then the cell goes on
IPYTHON_CAUGHT = """\
Traceback (most recent call last):
  File "/tmp/cut22/cap/caught_cell.py", line 10, in <module>
    print("trained with batch", train(batch))
                                ^^^^^^^^^^^^
  File "/tmp/cut22/cap/caught_cell.py", line 6, in train
    raise OutOfMemoryError("shard 3 does not fit")
OutOfMemoryError: shard 3 does not fit
halving the batch
trained with batch 4
cell done
"""

RICH_UNCAUGHT = """\
epoch 0 step 12 loss 0.412
╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮
│ /tmp/cut22/cap/rich_dl.py:6 in next_batch                                                        │
│                                                                                                  │
│   3 def _try_get_data(pids_str):                                                                 │
│   4 │   raise RuntimeError('shard {} is corrupt'.format(pids_str))                               │
│   5 def next_batch():                                                                            │
│ ❱ 6 │   return _try_get_data("4743")                                                             │
│                                                                                                  │
│ /tmp/cut22/cap/rich_dl.py:4 in _try_get_data                                                     │
│                                                                                                  │
│   3 def _try_get_data(pids_str):                                                                 │
│ ❱ 4 │   raise RuntimeError('shard {} is corrupt'.format(pids_str))                               │
│   5 def next_batch():                                                                            │
╰──────────────────────────────────────────────────────────────────────────────────────────────────╯
RuntimeError: shard 4743 is corrupt
"""

# Console.print_exception in an except block, and the program goes on
RICH_HANDLED = """\
parsed 7
╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮
│ /tmp/cut22/cap/rich_handled.py:4 in parse                                                        │
│                                                                                                  │
│    3 def parse(value):                                                                           │
│ ❱  4 │   return int(value)                                                                       │
╰──────────────────────────────────────────────────────────────────────────────────────────────────╯
ValueError: invalid literal for int() with base 10: 'seven'
bad value skipped: seven
3 values parsed, 1 skipped
"""

RAY_DIES = """\
(Actor pid=4180678) ERROR:root:Compiled DAG task exited with exception
(Actor pid=4180678) Traceback (most recent call last):
(Actor pid=4180678)   File "/home/wxdeng/miniconda3/envs/sea-to-bel-torch/lib/python3.13/site-packages/ray/dag/compiled_dag_node.py", line 786, in exec_operation
(Actor pid=4180678)   File "cupy_backends/cuda/libs/nccl.pyx", line 129, in cupy_backends.cuda.libs.nccl.check_status
(Actor pid=4180678) cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INTERNAL_ERROR: internal error - please report this issue to the NCCL developers
"""
RAY_COPIES = """\
(Actor pid=4180679) Traceback (most recent call last): [repeated 2x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)
(Actor pid=4180679)   File "cupy_backends/cuda/libs/nccl.pyx", line 129, in cupy_backends.cuda.libs.nccl.check_status [repeated 2x across cluster]
(Actor pid=4180679) cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INTERNAL_ERROR: internal error - please report this issue to the NCCL developers [repeated 2x across cluster]
"""
# INFO chatter the deduplicator folded, after a traceback the program logged and went on from
RAY_CHATTER_AFTER = """\
(RayWorkerWrapper pid=553, ip=7.242.100.10) INFO 05-16 09:49:32 [parallel_state.py:1004] rank 15 in world size 16 is assigned as DP rank 0, PP rank 1, TP rank 7 [repeated 14x across cluster]
(RayWorkerWrapper pid=1068) INFO 05-16 09:49:32 [model_runner.py:943] Starting to load model /share/model/deepseek-ai/DeepSeek-V3-0324-w8a8... [repeated 14x across cluster]
"""


def _errors(tmp_path: Path, text: str, engine: str = "python") -> List:
    log = tmp_path / "job.log"
    log.write_text(text, encoding="utf-8")
    return [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _cut(text: str, keep: int) -> str:
    return "".join(text.splitlines(keepends=True)[:keep])


@pytest.mark.parametrize("engine", ENGINES)
def test_an_ipython_traceback_cut_before_its_exception_names_it_from_the_header(tmp_path, engine):
    whole = _errors(tmp_path, IPYTHON_UNCAUGHT, engine)
    assert [(f.rule, f.line) for f in whole] == [(RULE, 12)] and "OutOfMemoryError: shard 3" in whole[0].message
    cut = _errors(tmp_path, _cut(IPYTHON_UNCAUGHT, 10), engine)  # to its last frame's arrow
    assert [f.rule for f in cut] == [RULE] and "died of OutOfMemoryError" in cut[0].message


def test_an_ipython_cell_that_catches_and_prints_goes_on(tmp_path):
    assert _errors(tmp_path, IPYTHON_CAUGHT) == []


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("keep", [16, 15, 9])  # whole; cut after the panel; cut inside it
def test_a_rich_panel_ends_the_log_with_or_without_its_exception_line(tmp_path, engine, keep):
    found = _errors(tmp_path, _cut(RICH_UNCAUGHT, keep), engine)
    assert [f.rule for f in found] == [RULE]
    assert ("shard 4743 is corrupt" in found[0].message) == (keep == 16)


def test_a_rich_panel_printed_for_a_handled_exception_is_no_death(tmp_path):
    assert _errors(tmp_path, RICH_HANDLED) == []


def test_ray_copies_of_the_traceback_after_its_exception_leave_the_exception_the_end(tmp_path):
    found = _errors(tmp_path, RAY_DIES + RAY_COPIES)
    assert [(f.rule, f.line) for f in found] == [(RULE, 5)]
    data = (RAY_DIES + RAY_COPIES).encode()
    assert last_content_line(data, 1) == 5


def test_ray_chatter_after_a_traceback_is_what_the_log_ends_in(tmp_path):
    data = (RAY_DIES + RAY_CHATTER_AFTER).encode()
    assert last_content_line(data, 1) == 7
    assert _errors(tmp_path, RAY_DIES + RAY_CHATTER_AFTER) == []


def test_ray_copies_with_no_exception_above_them_stay_the_end():
    data = ("epoch 3 done\n" + RAY_COPIES).encode()
    assert last_content_line(data, 1) == 4


def test_ray_copies_keep_their_colours_in_a_raw_log():
    # Ray 2.60.0 colours the prefix and the suffix when its output is not a terminal's (a real run's bytes)
    copies = (
        b"\x1b[36m(shard_loss pid=16837)\x1b[0m Traceback (most recent call last):\x1b[32m [repeated 3x across"
        b" cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or"
        b" see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-dedupli"
        b"cation for more options.)\x1b[0m\n"
        b"\x1b[36m(shard_loss pid=16837)\x1b[0m ValueError: shard 0: loss is NaN at step 3\x1b[32m [repeated 3x"
        b" across cluster]\x1b[0m\n"
    )
    assert last_content_line(RAY_DIES.encode() + copies, 1) == 5


# rich 15.0.0, install(width=80): the exception line is wrapped at the panel's width
RICH_WRAPPED = """\
loading shard 3
╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /tmp/cut22/cap/rich_wrap.py:5 in <module>                                    │
│                                                                              │
│   2                                                                          │
│   3 install(width=80)                                                        │
│   4 print("loading shard 3")                                                 │
│ ❱ 5 open("/nonexistent/ckpt/global_step_1200/shard-00003.pt")                │
│   6                                                                          │
╰──────────────────────────────────────────────────────────────────────────────╯
FileNotFoundError: [Errno 2] No such file or directory:\x20
'/nonexistent/ckpt/global_step_1200/shard-00003.pt'
"""


def test_an_exception_line_rich_wrapped_ends_the_log_at_its_first_row(tmp_path):
    found = _errors(tmp_path, RICH_WRAPPED)
    assert [(f.rule, f.line) for f in found] == [(RULE, 11)]
    assert last_content_line(RICH_WRAPPED.encode(), 1) == 11


def test_a_line_that_would_have_fitted_after_the_exception_line_is_the_program_going_on(tmp_path):
    went_on = RICH_WRAPPED.replace("'/nonexistent/ckpt/global_step_1200/shard-00003.pt'", "retrying")
    assert last_content_line(went_on.encode(), 1) == 12
    assert _errors(tmp_path, went_on) == []

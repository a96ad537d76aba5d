"""A chained traceback is one death: one finding, the last exception's, naming what it came of.

CPython prints the parts of a chain with "During handling of the above exception, another exception
occurred:" (raised inside an except block) or "The above exception was the direct cause of the following
exception:" (raise ... from) between them, a blank line on each side (Lib/traceback.py _context_message,
_cause_message). Two tracebacks without that line are two deaths and keep two findings. The logs below
are written as CPython 3.11 prints them; fixtures/multiprocessing/chained-timeout-* and
fixtures/torch/dataloader-worker-exit-chained are real captures on 3.9, 3.11 and 3.13.
"""

from __future__ import annotations

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.engine import ENGINES

CONTEXT = "During handling of the above exception, another exception occurred:"
CAUSE = "The above exception was the direct cause of the following exception:"
EMPTY_PART = [
    "Traceback (most recent call last):",
    '  File "/w/harness.py", line 12, in result_of',
    "    return results.get(timeout=1)",
    "           ^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/usr/lib/python3.11/multiprocessing/queues.py", line 114, in get',
    "    raise Empty",
    "_queue.Empty",
]
TIMEOUT_PART = [
    "Traceback (most recent call last):",
    '  File "/w/harness.py", line 24, in <module>',
    "    print(result_of(results))",
    '  File "/w/harness.py", line 15, in result_of',
    '    raise mp.TimeoutError("no result within 1 s") from err',
    "multiprocessing.context.TimeoutError: no result within 1 s",
]
WORKER_EXITED_PART = [
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 17, in <module>',
    "    for batch in loader:",
    '  File "/venv/torch/utils/data/dataloader.py", line 1304, in _try_get_data',
    "    raise RuntimeError(",
    "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly",
]
PLAIN_PART = [
    "Traceback (most recent call last):",
    '  File "/w/harness.py", line 15, in result_of',
    '    raise RuntimeError("the evaluator gave no result")',
    "RuntimeError: the evaluator gave no result",
]


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def _findings(tmp_path, catalogue, lines, engine="auto"):
    path = tmp_path / "chain.log"
    path.write_text("\n".join(["waiting for the result (timeout=1)", *lines]) + "\n")
    return [f for f in scan_paths([str(path)], catalogue, engine=engine) if f.severity is not Severity.NOTICE]


def _chained(*parts, separator=CONTEXT):
    lines = list(parts[0])
    for part in parts[1:]:
        lines += ["", separator, ""] + list(part)
    return lines


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "auto"])
@pytest.mark.parametrize("separator, how", [(CONTEXT, "raised while handling"), (CAUSE, "raised from")])
def test_a_chain_is_one_finding_of_its_last_exception(tmp_path, catalogue, engine, separator, how):
    try:
        lines = _chained(EMPTY_PART, TIMEOUT_PART, separator=separator)
        found = _findings(tmp_path, catalogue, lines, engine)
    except Exception as err:  # hyperscan missing: the python engine is the one that must run
        pytest.skip(str(err))
    assert [(f.rule, f.line) for f in found] == [("result-wait-timeout-uncaught", 17)]
    assert found[0].message.endswith(f"; {how} _queue.Empty (line 8)")
    assert "_queue.Empty" in found[0].excerpt


def test_the_chain_is_as_severe_as_its_worst_part(tmp_path, catalogue):
    # torch's DataLoader: "exited unexpectedly" alone is a warning; raised from an Empty, it ended the run
    found = _findings(tmp_path, catalogue, _chained(EMPTY_PART, WORKER_EXITED_PART, separator=CAUSE))
    assert [(f.rule, f.severity) for f in found] == [("dataloader-worker-exited", Severity.ERROR)]


def test_every_part_of_a_longer_chain_folds_into_the_last(tmp_path, catalogue):
    found = _findings(tmp_path, catalogue, _chained(EMPTY_PART, PLAIN_PART, TIMEOUT_PART))
    assert [(f.rule, f.line) for f in found] == [("result-wait-timeout-uncaught", 24)]


def test_a_chain_whose_last_exception_no_rule_knows_keeps_the_earlier_finding(tmp_path, catalogue):
    found = _findings(tmp_path, catalogue, _chained(EMPTY_PART, PLAIN_PART))
    assert [(f.rule, f.line) for f in found] == [("queue-empty-uncaught", 8)]


def test_a_traceback_that_merely_follows_another_is_a_second_death(tmp_path, catalogue):
    found = _findings(tmp_path, catalogue, EMPTY_PART + [""] + TIMEOUT_PART)
    assert sorted((f.rule, f.line) for f in found) == [
        ("queue-empty-uncaught", 8), ("result-wait-timeout-uncaught", 15)]


def test_a_separator_far_from_any_traceback_chains_nothing(tmp_path, catalogue):
    # a program that prints the words (a doc, a quoted log) long after the first death
    lines = EMPTY_PART + ["step %d" % n for n in range(80)] + ["", CONTEXT, ""] + TIMEOUT_PART
    found = _findings(tmp_path, catalogue, lines)
    assert len(found) == 2


def test_another_ranks_chain_is_its_own(tmp_path, catalogue):
    # rank 1's chain; rank 0's own timeout printed in between is rank 0's death
    lines = ["[rank1]:" + line for line in EMPTY_PART]
    lines += ["[rank0]:multiprocessing.context.TimeoutError: rank 0"]
    lines += ["[rank1]:", "[rank1]:" + CAUSE, "[rank1]:"] + ["[rank1]:" + line for line in TIMEOUT_PART]
    found = _findings(tmp_path, catalogue, lines)
    assert sorted((f.rule, f.line) for f in found) == [
        ("result-wait-timeout-uncaught", 9), ("result-wait-timeout-uncaught", 18)]


def test_an_endless_chain_keeps_a_bounded_record_and_still_folds_into_its_last_part(tmp_path, catalogue):
    from analyzer.scan.pipeline import LogScan
    from analyzer.scan.same_event import MAX_CHAIN_LINKS
    from analyzer.scan.sources import iter_sources

    parts = [EMPTY_PART] * (3 * MAX_CHAIN_LINKS) + [TIMEOUT_PART]
    found = _findings(tmp_path, catalogue, _chained(*parts))
    assert [f.rule for f in found] == ["result-wait-timeout-uncaught"]  # the whole chain is one death
    scan = LogScan(next(iter_sources([str(tmp_path / "chain.log")])), catalogue, engine="python")
    scan.run()
    [chain] = scan.result().chains
    assert len(chain.links) == MAX_CHAIN_LINKS and chain.last == found[0].line

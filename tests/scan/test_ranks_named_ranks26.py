"""The ranks that printed one line, named; Intel PSM's label read as the rank it names.

Identical lines of several ranks ("[rank3]:", a launcher's label, PSM's "rank5: ") fold into one event
before anything reads their ranks: the folded finding names them, "(seen 3 times: ranks 0, 3, 5)", the
lowest few and a count of the rest, so a 64-rank job's one NCCL error does not read "seen 64 times" alone,
and what the scan keeps does not grow with the ranks. PSM3 prints its errors after its process label,
"rank5: " or "host:rank5: " (psm_error.c; the label from libfabric's prov/psm3 utils_debug.c), which is
that rank's line as torch's "[rank5]:" is; pdsh's "host: " stays a host.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_speaking, torch_rank_behind_launcher, torchrun_behind_launcher
from analyzer.scan.rank import MAX_RANKS_NAMED
from analyzer.scan.state import MAX_TOLD_RANK, told_by_rank
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# CUDA's runtime error text, as torch raises it on every rank that touched the faulting context
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _scan(tmp_path, text: str, engine: str = "auto"):
    log = tmp_path / "ranks.log"
    log.write_text(text)
    return scan_paths([str(log)], BUILTIN, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_open_mpi_tagged_ranks_of_one_nccl_cuda_failure_are_named(engine):
    # NVIDIA/nccl#957: ranks 0 and 3 under mpirun --timestamp-output --tag-output, the same NCCL WARN line
    found = scan_paths([str(FIXTURES / "quoted" / "nccl-warn-mpi-timestamp-tag.log")], BUILTIN, engine=engine)
    assert [(f.rule, f.line, f.message) for f in found] == [
        ("cuda-failure-code", 4, "CUDA failure: invalid argument (seen 2 times: ranks 0, 3)")]


@pytest.mark.parametrize("engine", ENGINES)
def test_psm3_labels_name_the_ranks_of_one_assertion(engine):
    # yao-matrix/mblog: "rank5: Assertion failure at ..." then rank 2's; PSM's bare label, not a pdsh host
    found = scan_paths([str(FIXTURES / "quoted" / "psm3-assertion-failure-cma-fsdp-xpu.log")], BUILTIN,
                       engine=engine)
    assert [(f.rule, f.line) for f in found] == [("psm-assertion-failure", 10)]
    assert found[0].message.endswith("(seen 2 times: ranks 2, 5)")


def test_64_ranks_name_the_lowest_and_count_the_rest(tmp_path):
    ranks = list(range(64))
    random.Random(26).shuffle(ranks)
    found = _scan(tmp_path, "".join(f"[rank{rank}]: {ILLEGAL}" for rank in ranks))
    assert len(found) == 1
    named = ", ".join(str(rank) for rank in range(MAX_RANKS_NAMED))
    assert found[0].message.endswith(f"(seen 64 times: ranks {named} and {64 - MAX_RANKS_NAMED} more)")


def test_one_ranks_repeats_name_no_ranks(tmp_path):
    found = _scan(tmp_path, f"[rank3]: {ILLEGAL}" * 3)
    assert len(found) == 1 and found[0].message.endswith("(seen 3 times)")


def test_a_line_without_a_rank_among_ranked_ones_is_counted_not_named(tmp_path):
    found = _scan(tmp_path, f"[rank1]: {ILLEGAL}{ILLEGAL}[rank6]: {ILLEGAL}")
    assert len(found) == 1 and found[0].message.endswith("(seen 3 times: ranks 1, 6)")


def test_what_an_event_keeps_of_its_ranks_is_bounded():
    # one bit per rank, none past the cap: a rank's number cannot make an event's state grow without end
    assert told_by_rank(None) == 0 and told_by_rank(MAX_TOLD_RANK) == 0 and told_by_rank(10 ** 9) == 0
    assert told_by_rank(MAX_TOLD_RANK - 1).bit_length() == MAX_TOLD_RANK


def test_ranks_past_the_cap_are_counted_in_the_repeats(tmp_path):
    found = _scan(tmp_path, f"[rank{MAX_TOLD_RANK + 5}]: {ILLEGAL}[rank2]: {ILLEGAL}[rank9]: {ILLEGAL}")
    assert len(found) == 1 and found[0].message.endswith("(seen 3 times: ranks 2, 9)")


@pytest.mark.parametrize("line, rank, text", [
    (b"rank5: Assertion failure at psm3/ptl_am/ptl.c:196: x", 5,
     "Assertion failure at psm3/ptl_am/ptl.c:196: x"),
    # PSM3's debug macros: time, label, program ("%s.%s: "), also with libfabric's "host:rankN" label
    (b"[1711969312.876608051] rank2.python: Reading from remote process' memory failed", 2,
     "Reading from remote process' memory failed"),
    (b"[1748048660.727622923] hedp017:rank7.python: Failed to modify UD QP to INIT on mlx5_2", 7,
     "Failed to modify UD QP to INIT on mlx5_2"),
    (b"DUT7113ATSM:rank1: Assertion failure at a.c:1: y", 1, "Assertion failure at a.c:1: y"),
    (b"gpu003: rank3: Assertion failure at a.c:1: y", 3, "Assertion failure at a.c:1: y"),  # pdsh, then PSM
])
def test_psm_labels_are_ranks(line, rank, text):
    assert clean_speaking(line)[:2] == (text, rank)


@pytest.mark.parametrize("line, text", [
    # pdsh's "host: " (DeepSpeed's multi-node launcher) names a host, not a rank
    (b"gpu003: RuntimeError: CUDA error: out of memory", "RuntimeError: CUDA error: out of memory"),
    (b"worker-1: Traceback (most recent call last):", "Traceback (most recent call last):"),
    (b"10.0.0.12: NCCL WARN Cuda failure 'invalid argument'", "NCCL WARN Cuda failure 'invalid argument'"),
    # torchrun's report row and NCCL's own words name a rank without labelling the line
    (b"  rank      : 3 (local_rank: 3)", "  rank      : 3 (local_rank: 3)"),
    (b"rank: 3 failed", "rank: 3 failed"),
    (b"ranks: 0 1", "ranks: 0 1"),
    (b"rank0:", "rank0:"),  # a label with nothing after it
])
def test_hosts_and_rank_words_are_no_psm_label(line, text):
    assert clean_speaking(line)[:2] == (text, None)


def test_a_psm_label_behind_a_launchers_is_no_torchrun_behind_it():
    # srun -l python: "3: rank3: ..." is task 3's PSM line; torchrun's "[rank3]:" behind it: the node's label
    speaker = clean_speaking(b"3: rank3: Assertion failure at a.c:1: y")[2]
    assert not torch_rank_behind_launcher(speaker)
    assert torch_rank_behind_launcher(clean_speaking(b"3: [rank3]: RuntimeError: x")[2])


def _rewrapped(fixture: Path, prefix: bytes, width: int) -> bytes:
    """The fixture's lines, cut by a ``width``-column terminal, joined again, their "[rankN]:" written
    as ``prefix`` (``%d``: the rank) and cut again at ``width``."""
    rows = [row for row in fixture.read_bytes().split(b"\n") if not row.startswith(b"#!")]
    lines, line = [], b""
    for row in rows:
        line += row
        if len(row) != width:
            lines.append(line)
            line = b""
    out = []
    for line in lines:
        line = re.sub(rb"^\[rank(\d+)\]:", lambda m: prefix % int(m.group(1)), line)
        out.extend(line[at:at + width] for at in range(0, max(len(line), 1), width))
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_launcher_labelled_wrapped_lines_rows_are_cleaned_as_its_join(tmp_path, monkeypatch, engine):
    # A terminal's 100 columns cut `srun -l torchrun`'s watchdog lines (LlamaFactory#6269's log as tmux
    # showed it, each line behind node 0's label): a join is matched only with the rules none of its rows
    # matches alone, so its rows and the join must be cleaned alike, the launcher's label read the same way
    # in both, also once torch's "[rankN]:" behind it made the log's labels nodes (``launcher_ranks``).
    fixture = FIXTURES / "quoted" / "nccl-watchdog-tmux100.log"
    log = tmp_path / "tagged.log"
    log.write_bytes(_rewrapped(fixture, b"0: [rank%d]:", 100))
    calls = []
    joins = []
    real_clean = engine_module.clean_speaking
    real_join = engine_module._SourceScan._joined_line

    def clean(raw, keep_progress=False, task_labels=True, launcher_ranks=True):
        calls.append((raw, task_labels, launcher_ranks))
        return real_clean(raw, keep_progress, task_labels, launcher_ranks)

    def join(self, buf, pos, line, text, rows, lits):
        start = len(calls)
        real_join(self, buf, pos, line, text, rows, lits)
        joins.append((text, rows, calls[start:]))

    monkeypatch.setattr(engine_module, "clean_speaking", clean)
    monkeypatch.setattr(engine_module._SourceScan, "_joined_line", join)
    found = scan_paths([str(log)], BUILTIN, engine=engine)
    labelled = [(text, made) for text, rows, made in joins if text.startswith(b"0: [rank") and len(made) > 1]
    assert labelled, "no launcher-labelled join was cleaned"
    for text, made in labelled:
        assert made[0][0] == text
        assert {(task_labels, launcher_ranks) for _raw, task_labels, launcher_ranks in made} \
            == {made[0][1:]}, text
    original = scan_paths([str(fixture)], BUILTIN, engine=engine)
    # the rows move (the labels are longer, the header is gone): what is found, and what it says, is the same
    def said(findings):
        return [(f.rule, re.sub(r"\(lines? [\d, ]+\)", "(line)", f.message)) for f in findings]

    assert said(found) == said(original)


def _behind_node_label(fixture: Path) -> bytes:
    """The fixture as `srun -l torchrun` on one node prints it: every line behind task 0's "0: " label (after
    GitHub's stamp; the runner's own "##[group]" lines stay the runner's)."""
    out = []
    for row in fixture.read_bytes().split(b"\n"):
        if row.startswith(b"#!"):
            continue
        stamp = re.match(rb"(?:\d{4}-\d\d-\d\dT\S+Z )?", row).group()
        rest = row[len(stamp):]
        out.append(row if rest.startswith(b"##[") else stamp + b"0: " + rest)
    return b"\n".join(out)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["torchrun-sigkill", "torchrun-restart-segv-then-raise"])
def test_torchruns_agent_behind_a_node_label_names_no_rank(tmp_path, engine, name):
    # Real torchrun captures whose workers print nothing under "[rankN]:" (one SIGKILLed as the OOM killer
    # would, one segfaulting, then a restart): under `srun -l torchrun` the agent's "failed (exitcode: -9)
    # local_rank: 1" line is node 0's, and its rank is the report's, as without the label.
    fixture = FIXTURES / "torch" / f"{name}.log"
    log = tmp_path / "nested.log"
    log.write_bytes(_behind_node_label(fixture))
    plain = tmp_path / "plain.log"
    rows = fixture.read_bytes().split(b"\n")
    plain.write_bytes(b"\n".join(row for row in rows if not row.startswith(b"#!")))
    found = scan_paths([str(log)], BUILTIN, engine=engine)
    original = scan_paths([str(plain)], BUILTIN, engine=engine)
    assert [(f.rule, f.line, f.message) for f in found] == [(f.rule, f.line, f.message) for f in original]


@pytest.mark.parametrize("raw, behind", [
    # torchrun's own records behind srun's and Open MPI's labels (torch 2.x glog-like, and logging's default)
    (b"0: W1205 08:24:19.341000 6753 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process"
     b" 6773 closing signal SIGTERM", True),
    (b"[1,0]<stderr>:WARNING:torch.distributed.run:", True),
    (b"1: I0625 07:23:25.739000 1280 torch/distributed/elastic/agent/server/api.py:525] [default] Starting "
     b"worker group", True),
    # the same record with no launcher's label, and a worker's own lines behind one, say nothing of it
    (b"W1205 08:24:19.341000 6753 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process",
     False),
    (b"3: RuntimeError: CUDA error: an illegal memory access was encountered", False),
    # a worker's traceback through torch's @record wrapper is the worker's (errors/__init__.py, not the agent)
    (b'3:   File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/'
     b'__init__.py", line 355, in wrapper', False),
])
def test_torchruns_own_records_behind_a_launchers_label(raw, behind):
    assert torchrun_behind_launcher(clean_speaking(raw)[2], raw) is behind

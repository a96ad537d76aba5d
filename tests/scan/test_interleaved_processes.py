"""Tracebacks of several processes that die at once interleave line by line; each is read on its own.

vLLM v1 starts its workers with every line of their stdout and stderr prefixed by the process,
``(VllmWorker rank=2 pid=808339) `` (vllm-project/vllm#14452 and #18577 show such logs: eight workers'
"Process SpawnProcess-1:N:" lines, then their tracebacks, mixed), and pdsh, DeepSpeed's multi-node
launcher, labels each node's lines ``worker-1: `` (hiyouga/LlamaFactory#2470). The program below is
real: spawned workers prefix their own lines one of these ways and raise at the same moment; each line
is written apart with a pause so that the four tracebacks mix, as they do when eight GPUs fail together.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

import pytest

BUILTIN = load_catalogue()
WORKERS = 4

PROGRAM = r'''
import multiprocessing as mp, os, sys, time

class Prefixed:
    """Write each line with this process's prefix, one line a write, as vLLM's workers do."""
    def __init__(self, stream, prefix):
        self.stream, self.prefix, self.partial = stream, prefix, ""
    def write(self, text):
        self.partial += text
        while "\n" in self.partial:
            line, self.partial = self.partial.split("\n", 1)
            self.stream.write(self.prefix + line + "\n")
            self.stream.flush()
            time.sleep(0.05)  # let the other workers' lines in between
        return len(text)
    def flush(self):
        self.stream.flush()

def load_shard(rank):
    raise ValueError(f"shard {rank} is corrupt")

def worker(rank, barrier, prefix):
    sys.stderr = Prefixed(sys.__stderr__, prefix.format(rank=rank, pid=os.getpid()))
    barrier.wait()
    load_shard(rank)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(%d)
    procs = [ctx.Process(target=worker, args=(rank, barrier, sys.argv[1])) for rank in range(%d)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("worker exit codes:", [p.exitcode for p in procs], flush=True)
''' % (WORKERS, WORKERS)


PREFIXES = {"vllm": "(VllmWorker rank={rank} pid={pid}) ", "pdsh": "worker-{rank}: "}


@pytest.fixture(scope="module", params=sorted(PREFIXES))
def interleaved_log(request, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("interleaved")
    (work / "workers.py").write_text(PROGRAM)
    log = work / "workers.log"
    with open(log, "wb") as out:
        subprocess.run([sys.executable, "workers.py", PREFIXES[request.param]], cwd=work, stdout=out,
                       stderr=subprocess.STDOUT, timeout=120, check=False)
    return log


def _prefix(line: str) -> str:
    return line.split(")", 1)[0] if line.startswith("(") else line.split(": ", 1)[0]


def _rank(line: str) -> int:
    return int(line.split("rank=", 1)[1].split()[0] if line.startswith("(") else line.split(":")[0][7:])


def _runs_of_one_process(lines):
    """How many times the process prefix changes from one line to the next."""
    prefixes = [_prefix(line) for line in lines if not line.startswith("worker exit codes")]
    return sum(1 for a, b in zip(prefixes, prefixes[1:]) if a != b)


@pytest.mark.parametrize("engine", ENGINES)
def test_each_of_several_processes_dying_at_once_is_read_from_its_own_lines(interleaved_log, engine):
    lines = interleaved_log.read_text().splitlines()
    # What this test is about: the tracebacks really did mix (else it tests nothing).
    assert _runs_of_one_process(lines) > 2 * WORKERS, "\n".join(lines)
    findings = [f for f in scan_paths([str(interleaved_log)], BUILTIN, engine=engine)
                if f.rule == "mp-process-traceback"]
    died = sorted(f.message for f in findings)
    # the finding names where the worker's own code raised (the line of load_shard's raise in PROGRAM)
    raise_line = PROGRAM.split("\n").index('    raise ValueError(f"shard {rank} is corrupt")') + 1
    site = "workers.py:%d" % raise_line
    assert died == sorted(
        f"worker process SpawnProcess-{n} died with ValueError: shard {rank} is corrupt (raised at {site})"
        for n, rank in _names_and_ranks(lines)
    ), died
    for finding in findings:
        rank = int(finding.message.rsplit("shard ", 1)[1].split()[0])
        own = [row for row in finding.excerpt.splitlines() if row.strip()]
        assert all(_rank(row) == rank for row in own), finding.excerpt


def _names_and_ranks(lines):
    """(process name, rank) of each worker, from its own "Process NAME:" line."""
    return [(line.rsplit("Process SpawnProcess-", 1)[1][:-1], _rank(line))
            for line in lines if line.endswith(":") and " Process SpawnProcess-" in line]

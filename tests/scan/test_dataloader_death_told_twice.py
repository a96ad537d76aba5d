"""A DataLoader worker's death told twice in one chained traceback is one finding.

torch's loader raises "DataLoader worker (pid(s) N) exited unexpectedly" from the "DataLoader worker (pid
N) is killed by signal: Killed." error (torch/utils/data/dataloader.py, _try_get_data); pytest's report of
the failed test shows both, 58 lines apart. fixtures/crash/trainer-failures-unexpected.log is the real
run (torch 2.13, a worker SIGKILLed as the OOM killer would).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
LOG = Path(__file__).resolve().parents[2] / "fixtures" / "crash" / "trainer-failures-unexpected.log"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_killed_worker_and_the_loaders_exited_error_are_one_finding(engine):
    findings = scan_paths([str(LOG)], BUILTIN, engine=engine)
    told = [f for f in findings if f.rule.startswith("dataloader-worker-")]
    (killed,) = told
    lines = LOG.read_text().split("\n")
    again = next(n for n, line in enumerate(lines, 1) if "exited unexpectedly" in line and "E  " in line)
    assert again - killed.line == 58
    assert (killed.rule, killed.severity) == ("dataloader-worker-killed", Severity.ERROR)
    assert killed.message.startswith("DataLoader worker (pid 15920) was killed by signal: Killed; DataLoader"
                                     " worker(s) 15920 exited unexpectedly (line %d)" % again)


def test_a_loaders_exited_error_pasted_alone_is_an_error(tmp_path):
    # The main process raised it, so the run died of it, as in the full chained traceback
    # (fixtures/torch/dataloader-worker-exit-chained.log); people paste only its last line.
    log = tmp_path / "loader.log"
    log.write_text("RuntimeError: DataLoader worker (pid(s) 14386) exited unexpectedly\n")
    (finding,) = scan_paths([str(log)], BUILTIN, engine="python")
    assert (finding.rule, finding.severity) == ("dataloader-worker-exited", Severity.ERROR)

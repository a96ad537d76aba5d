"""The per-log API the live guard builds on: LogScan in threads sharing one compiled engine, combine."""

from __future__ import annotations

import io
import threading

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import LogScan, combine, scan_sources
from analyzer.scan.pipeline import engine_for
from analyzer.scan.sources import Source
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
# Big enough for each thread to spend a while inside the engine's scan of a window.
LOG = (
    "gpu-node-3:4121:4188 [1] NCCL INFO Channel 01/32 : 1[1] -> 2[2] via P2P/IPC/read timeout=1800\n" * 40000
    + "Fatal Python error: Segmentation fault\n"
) * 4


def _source(name: str) -> Source:
    return Source(name, lambda: io.BytesIO(LOG.encode()))


@pytest.mark.parametrize("engine", ENGINES)
def test_two_threads_sharing_one_engine_scan_as_one_thread_does(engine):
    prepared = engine_for(BUILTIN, engine)
    scans = [LogScan(_source(name), BUILTIN, engine=prepared) for name in ("stdout.log", "stderr.log")]
    errors = []

    def run(scan):
        try:
            scan.run()
        except Exception as err:  # the assertion below shows it
            errors.append(repr(err))

    threads = [threading.Thread(target=run, args=(scan,)) for scan in scans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert errors == []
    together = combine([scan.result() for scan in scans], BUILTIN)
    alone = scan_sources([_source("stdout.log"), _source("stderr.log")], BUILTIN, engine=engine)
    assert together == alone and len(alone) == 2


def test_result_before_run_is_an_error_not_a_silent_empty_log():
    scan = LogScan(_source("x.log"), BUILTIN, engine="python")
    with pytest.raises(RuntimeError, match="before run"):
        scan.result()

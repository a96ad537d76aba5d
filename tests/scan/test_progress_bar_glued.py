"""A message glued to a progress bar that was never closed is still read as the start of a line.

tqdm redraws its bar with ``\\r`` and ends the line only when the bar is closed. A training script that
never closes it, and whose atexit callback raises, prints the callback's report right after the bar's
last redraw, on the same line: ``100%|####| 3/3 [00:00<00:00, 29.11it/s]Exception ignored in atexit
callback: <function ...>``. Python still exits 0, the product's first failure. Real tqdm, real Python.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Kind
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()

TRAINER = """
    import atexit
    import time
    from tqdm import tqdm

    def _destroy_process_group():
        raise RuntimeError("process group was destroyed twice")

    atexit.register(_destroy_process_group)
    bar = tqdm(total=3, desc="epoch 1")
    for _ in range(3):
        bar.update(1)
        time.sleep(0.02)
"""


@pytest.fixture(scope="module")
def trainer(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("tqdm")
    (work / "train.py").write_text(textwrap.dedent(TRAINER))
    return work


def test_the_program_really_glues_the_report_to_the_bar_and_exits_0(trainer):
    proc = subprocess.run([sys.executable, "train.py"], cwd=str(trainer), capture_output=True, timeout=60)
    assert proc.returncode == 0
    first_line = proc.stderr.split(b"\n", 1)[0]
    assert b"it/s]" in first_line and b"atexit" in first_line  # what this test is about


@pytest.mark.parametrize("engine", ENGINES)
def test_an_atexit_report_glued_to_a_bar_is_found(trainer, engine, tmp_path):
    proc = subprocess.run([sys.executable, "train.py"], cwd=str(trainer), capture_output=True, timeout=60)
    log = tmp_path / "stderr.log"
    log.write_bytes(proc.stderr)
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert (finding.kind, finding.line) == (Kind.ATEXIT_EXCEPTION, 1)
    assert finding.message.startswith("RuntimeError: process group was destroyed twice raised in atexit")


def test_the_guard_fails_the_run_whose_atexit_report_is_glued_to_a_bar(trainer):
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", "logs", "--", sys.executable, "train.py"],
        cwd=str(trainer), capture_output=True, timeout=120,
    )
    assert proc.returncode == 1, proc.stdout.decode()
    assert b"raised in atexit callback" in proc.stdout

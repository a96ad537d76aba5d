"""A ``pytest --collect-only -q`` list printed before a ``-q`` run (as CI scripts do, to log what will run)
spells each test's node id, so a report header's name ("____ TestK.test_m[2] ____") in that run names its
node id even when the run was cut before its short summary (a job killed, a log cut).

Real runs: pytest 9 --co -q, then -q over the same suite, the second's log cut before its summary. The list
is looked for only when a header wants its node id, in that window and the one before (a window is about
``READ_SIZE``, 1 MiB): an innocent window costs nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import pytest

from tests.scan.test_attribution import pytest_log, scan
from tests.scan.test_engine_helpers import ENGINES

SUITE = """
    import pytest


    def test_a_pass():
        pass


    def test_d_fails():
        assert 1 + 1 == 3, "reduced sum wrong"


    class TestK:
        @pytest.mark.parametrize("p", [1, 2])
        def test_m(self, p):
            assert p == 1, "bad world size"
"""
FAILED = {"unit/test_k.py::test_d_fails", "unit/test_k.py::TestK::test_m[2]"}


def failures(log: str, engine: str) -> Dict[Optional[str], str]:
    return {f.test: f.message for f in scan({"job.log": log}, engine=engine)
            if f.kind.value == "test-failure"}


def cut_before_summary(log: str) -> str:
    lines = log.splitlines()
    cut = next(n for n, line in enumerate(lines) if "short test summary info" in line)
    return "\n".join(lines[:cut]) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    where: Path = tmp_path_factory.mktemp("collect_only")
    (where / "unit").mkdir()
    (where / "other").mkdir()
    listed = pytest_log(where, "unit/test_k.py", SUITE, ("--co", "-q"))
    ran = pytest_log(where, "unit/test_k.py", SUITE, ("-q",))
    both = pytest_log(where, "other/test_k2.py", SUITE, ("--co", "-q", "unit/test_k.py"))
    return {"listed": listed, "ran": ran, "both": both}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_collect_only_list_before_a_cut_run_names_its_headers_node_ids(runs, engine: str) -> None:
    assert "tests collected in" in runs["listed"] and "FAILURES" in runs["ran"]
    assert set(failures(runs["listed"] + cut_before_summary(runs["ran"]), engine)) == FAILED


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_list_the_cut_runs_headers_keep_their_names(runs, engine: str) -> None:
    assert set(failures(cut_before_summary(runs["ran"]), engine)) == {"test_d_fails", "TestK.test_m[2]"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_name_two_listed_files_share_keeps_its_name(runs, engine: str) -> None:
    # other/test_k2.py has the same tests: which file a header "TestK.test_m[2]" was, the list does not say
    found = set(failures(runs["both"] + cut_before_summary(runs["ran"]), engine))
    assert found == {"test_d_fails", "TestK.test_m[2]"}, found


@pytest.mark.parametrize("engine", ENGINES)
def test_the_list_is_found_in_the_window_before_the_headers(runs, engine: str) -> None:
    # over a megabyte (a window, READ_SIZE) of the job's own output between the list and the run
    filler = "".join("step %d loss 0.%04d\n" % (i, i % 9973) for i in range(50_000))
    assert 1 << 20 < len(filler) < 3 << 19
    assert set(failures(runs["listed"] + filler + cut_before_summary(runs["ran"]), engine)) == FAILED

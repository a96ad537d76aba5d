"""One event, one finding: the leftovers of issue 7, section 3 that dedup18 took.

- C++'s "  what():  [Rank 1] ..." after "terminate called after throwing ..." repeats rank 1's own watchdog
  line with no "[rank1]:" prefix (fixtures/quoted/hccl-watchdog-workhccl-what-repeats.log, vllm-ascend#382).
- Ray's log deduplication writes " [repeated Nx across cluster]" after a line other workers repeated; each
  worker of one actor class failing its constructor is one event
  (fixtures/crash/ray-group-creation-failed-repeated.log, ray 2.60.0).
- A test's outcome line is the event that a crashed xdist worker's report, or an uncaught timeout's
  exception line in that test, tells (healthy17's twins).
- The same Xid line 30 s later by its dmesg stamp is another fault, adjacent or not
  (fixtures/quoted/nvrm-xid-13-same-line-30s-apart-dmesg.log).
The runs these stand for are measured in /tmp/dedup18 (README.txt).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_line, kernel_clock
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HCCL = FIXTURES / "quoted" / "hccl-watchdog-workhccl-what-repeats.log"
RAY = FIXTURES / "crash" / "ray-group-creation-failed-repeated.log"
XDIST = FIXTURES / "pytest" / "healthy17-xdist-crash-broken.log"
JOBLIB = FIXTURES / "timeout" / "healthy17-joblib-timeout-broken.log"
XID = FIXTURES / "quoted" / "nvrm-xid-13-same-line-30s-apart-dmesg.log"


def _errors(path: Path, engine: str):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if text in line)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_unprefixed_what_line_is_the_ranks_own_watchdog_timeout_told_again(engine):
    errors = _errors(HCCL, engine)
    assert [(f.rule, f.line) for f in errors] == [
        ("nccl-watchdog-timeout", _line_of(HCCL, "compiler_depend.ts:574] [Rank 1] Watchdog caught"))]
    assert "seen 3 times" in errors[0].message


def test_an_unprefixed_line_of_another_rank_or_work_stays_its_own(tmp_path):
    # rank 1's line, then a what() whose work is another: two timeouts, not one told again. In the same
    # watchdog sweep they are one hang (dedup21): the finding names the other work, never folds it as a
    # repeat; with a restart's lines between them the other work is its own finding.
    lines = HCCL.read_text(encoding="utf-8").split("\n")
    what = _line_of(HCCL, "  what():  [Rank 1] HCCL watchdog thread")
    lines[what - 1] = lines[what - 1].replace("SeqNum=196", "SeqNum=197")
    log = tmp_path / "other-work.log"
    log.write_text("\n".join(lines), encoding="utf-8")
    errors = [f for f in scan_paths([str(log)], BUILTIN) if f.severity is Severity.ERROR]
    watchdog = [f for f in errors if f.rule == "nccl-watchdog-timeout"]
    assert len(watchdog) == 1 and "SeqNum=197, OpType=ALLREDUCE, Timeout(ms)=3600000" in watchdog[0].message
    assert f"(line {what})" in watchdog[0].message
    restart = ["step %d: loss 0.5" % n for n in range(65)]
    log.write_text("\n".join(lines[:what - 1] + restart + lines[what - 1:]), encoding="utf-8")
    errors = [f for f in scan_paths([str(log)], BUILTIN) if f.severity is Severity.ERROR]
    assert sorted(f.line for f in errors if f.rule == "nccl-watchdog-timeout")[-1] == what + len(restart)


def test_rays_dedup_suffix_is_cut_from_the_line_rules_read():
    # ray python/ray/_private/ray_logging/__init__.py: line + " [repeated {count}x across cluster]" + note
    line = (b"\x1b[36m(PolicyWorker pid=16494)\x1b[0m AssertionError: found no DeviceMesh from dtensor args"
            b" for c10d.broadcast_.default!\x1b[32m [repeated 3x across cluster]\x1b[0m\n")
    from analyzer.scan.clean import strip_controls
    assert clean_line(strip_controls(line))[0] == (
        "AssertionError: found no DeviceMesh from dtensor args for c10d.broadcast_.default!")
    noted = (b"(Actor pid=7) loss is nan [repeated 2x across cluster] (Ray deduplicates logs by default."
             b" Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/"
             b"ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)")
    assert clean_line(noted)[0] == "loss is nan"
    assert clean_line(b"print('[repeated 2x across cluster] is what ray writes')")[0].endswith("writes')")


@pytest.mark.parametrize("engine", ENGINES)
def test_each_workers_failed_constructor_of_one_class_is_one_event(engine):
    errors = _errors(RAY, engine)
    assert [f.rule for f in errors] == ["ray-actor-creation-failed"]
    assert "seen 2 times" in errors[0].message or "ActorDiedError" in errors[0].message


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path, teller", [(XDIST, "xdist-worker-crashed"),
                                          (JOBLIB, "result-wait-timeout-uncaught")])
def test_a_tests_outcome_stays_its_test_failure_ranked_after_the_crash_or_timeout(engine, path, teller):
    # issue 7: one test-failure per test id, ranked after the finding that explains it, which names the test
    errors = _errors(path, engine)
    assert [f.rule for f in errors] == [teller, "pytest-test-outcome"]
    assert errors[0].test is not None and errors[0].test == errors[1].test


def test_an_outcome_whose_reason_is_another_exception_stays_its_own():
    # pytest -q: the timeout outside any named test does not tell "FAILED t.py::x - assert (1 + 1) == 3"
    path = FIXTURES / "without-v" / "pytest-q-s-dots-twin.log"
    errors = [f for f in scan_paths([str(path)], BUILTIN) if f.severity is Severity.ERROR]
    assert sum(f.rule == "pytest-test-outcome" for f in errors) == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_xid_line_30_seconds_later_is_another_fault(engine):
    errors = _errors(XID, engine)
    assert [(f.rule, f.line) for f in errors] == [
        ("gpu-xid-error", _line_of(XID, "[  249.813442]")),
        ("gpu-xid-error", _line_of(XID, "[  280.246315]")),
        ("gpu-xid-error", _line_of(XID, "[  280.260177]")),
    ]


def test_the_same_xid_line_in_one_second_of_the_journal_is_one_fault(tmp_path):
    # the window's lines as journalctl shows them (stamp cut by the cleaner, the same words): the 11 ms
    # pair folds, the line 30 s later does not
    log = tmp_path / "journal.log"
    log.write_text(
        "Feb 14 10:04:09 host kernel: NVRM: Xid (0000:01:00): 31, Ch 00000004, engmask 00000101, intr 1\n"
        "Feb 14 10:04:09 host kernel: NVRM: Xid (0000:01:00): 31, Ch 00000004, engmask 00000101, intr 1\n"
        "Feb 14 10:04:40 host kernel: NVRM: Xid (0000:01:00): 31, Ch 00000004, engmask 00000101, intr 1\n",
        encoding="utf-8")
    errors = [f for f in scan_paths([str(log)], BUILTIN) if f.severity is Severity.ERROR]
    assert [f.line for f in errors] == [1, 3]


@pytest.mark.parametrize("line, kind, seconds", [
    ("[  249.813442] NVRM: Xid", "boot", 249.813442),
    ("Jan 16 14:04:39 pyrite kernel: [44643.002804] NVRM: Xid", "boot", 44643.002804),
    ("2024-01-09T18:41:23.1248260Z [   12.5] NVRM: Xid", "boot", 12.5),
])
def test_kernel_clock_reads_dmesgs_seconds(line, kind, seconds):
    assert kernel_clock(line) == (kind, seconds)


def test_kernel_clock_compares_calendar_stamps_by_their_distance():
    ctime = [kernel_clock("[Fri Aug 30 11:43:%s 2024] NVRM: Xid" % s) for s in ("09", "14")]
    assert ctime[0][0] == "ctime" and ctime[1][1] - ctime[0][1] == 5
    iso = [kernel_clock("2025-01-25T%s,859532+00:00 NVRM" % t) for t in ("10:34:54", "13:34:54")]
    assert iso[0][0] == "iso" and iso[1][1] - iso[0][1] == 3 * 3600
    journal = [kernel_clock("Apr 19 %s Kyrios kernel: NVRM: Xid" % t) for t in ("13:16:41", "13:17:41")]
    assert journal[0][0] == "journal" and journal[1][1] - journal[0][1] == 60
    assert kernel_clock("NVRM: Xid (PCI:0000:01:00): 79") is None

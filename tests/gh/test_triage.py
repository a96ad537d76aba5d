"""Flaky / known / new / broken on crafted run pairs and attempts, through ``combine`` (pure)."""

from __future__ import annotations

from typing import Optional, Sequence

from analyzer.gh.combine import LOG_GONE, ScannedJob, combine
from analyzer.gh.triage import base_name
from analyzer.model import Finding, JobFacts, Kind, Severity, Verdict


def finding(
    rule: str = "atexit-callback-ignored",
    test: Optional[str] = None,
    kind: Kind = Kind.ATEXIT_EXCEPTION,
    severity: Severity = Severity.ERROR,
) -> Finding:
    return Finding(kind=kind, rule=rule, severity=severity, path="job.log", line=3, message="m", test=test)


def job(
    name: str,
    run_id: int = 1,
    attempt: int = 1,
    sha: Optional[str] = "aaa",
    runner: str = "r1",
    findings: Sequence[Finding] = (),
    conclusion: Optional[str] = None,
    log: str = "scanned",
) -> ScannedJob:
    facts = JobFacts(
        run_id=run_id,
        attempt=attempt,
        job_id=run_id * 100 + attempt * 10 + len(name),
        name=name,
        runner=runner,
        head_sha=sha,
    )
    if conclusion is None:
        conclusion = "failure" if findings else "success"
    return ScannedJob(facts=facts, conclusion=conclusion, findings=tuple(findings), log=log)


def by_signature(report):
    return {t.signature: t for t in report.triage}


def test_base_name_drops_matrix_values():
    assert base_name("gpu-tests (3, cuda12)") == "gpu-tests"
    assert base_name("linux / test (default, 1, 4, linux.g5.4xlarge.nvidia.gpu)") == "linux / test"
    assert base_name("gpu-tests [shard 2]") == "gpu-tests"
    assert base_name("lint") == "lint"
    assert base_name("(odd)") == "(odd)"


def test_failed_then_passed_on_a_later_attempt_is_flaky():
    report = combine(
        [
            job("gpu (1)", attempt=1, findings=[finding()]),
            job("gpu (1)", attempt=2),
            job("gpu (2)", attempt=1),
        ]
    )
    entry = by_signature(report)["gpu: atexit-callback-ignored"]
    assert entry.status == "flaky"
    assert entry.failed_jobs == (0,) and entry.passed_jobs == (1,)
    assert report.verdict is Verdict.FAIL and report.exit_status == 1


def test_a_pass_in_another_shard_does_not_make_it_flaky():
    # gpu (2) passing says nothing about gpu (1): same base name, different job.
    report = combine([job("gpu (1)", findings=[finding()]), job("gpu (2)")])
    entry = report.triage[0]
    assert entry.status == "broken" and entry.passed_jobs == ()


def test_another_run_of_the_same_commit_counts_as_the_same_commit():
    report = combine(
        [
            job(
                "gpu (1)",
                run_id=1,
                findings=[
                    finding(
                        test="tests/test_a.py::test_x", kind=Kind.TEST_FAILURE, rule="pytest-test-outcome"
                    )
                ],
            ),
            job("gpu (1)", run_id=2, sha="aaa"),
            job("gpu (1)", run_id=3, sha="bbb", findings=[]),
        ]
    )
    entry = by_signature(report)["tests/test_a.py::test_x"]
    assert entry.status == "flaky" and entry.test == "tests/test_a.py::test_x"
    assert entry.kind == "test-failure"
    assert entry.passed_jobs == (1,)  # run 3 is another commit


def test_without_head_sha_the_same_run_is_the_same_commit():
    report = combine(
        [
            job("gpu", run_id=5, attempt=1, sha=None, findings=[finding()]),
            job("gpu", run_id=5, attempt=2, sha=None),
            job("gpu", run_id=6, attempt=1, sha=None),
        ]
    )
    assert report.triage[0].status == "flaky" and report.triage[0].passed_jobs == (1,)


def test_baseline_tells_known_from_new():
    jobs = [
        job("gpu (1)", findings=[finding()]),
        job("gpu (2)", findings=[finding(test="tests/test_b.py::test_y", kind=Kind.TEST_FAILURE, rule="r")]),
    ]
    baseline = [
        job("gpu (3)", run_id=9, attempt=2, sha="base", findings=[finding()]),  # another shard, attempt 2
        job("gpu (2)", run_id=9, attempt=1, sha="base"),
    ]
    report = combine(jobs, baseline=baseline)
    entries = by_signature(report)
    assert entries["gpu: atexit-callback-ignored"].status == "known"
    assert entries["tests/test_b.py::test_y"].status == "new"
    # Baseline jobs are not jobs of the report.
    assert len(report.jobs) == 2 and all(f.job in (0, 1) for f in report.findings)


def test_flaky_wins_over_known():
    report = combine(
        [job("gpu", attempt=1, findings=[finding()]), job("gpu", attempt=2)],
        baseline=[job("gpu", run_id=9, sha="base", findings=[finding()])],
    )
    assert report.triage[0].status == "flaky"


def test_one_signature_across_shards_lists_its_runners():
    report = combine(
        [
            job("gpu (1)", runner="gpu-a", findings=[finding("pytest-timeout", kind=Kind.TIMEOUT)]),
            job("gpu (2)", runner="gpu-b"),
            job("gpu (3)", runner="gpu-c", findings=[finding("pytest-timeout", kind=Kind.TIMEOUT)]),
        ]
    )
    (entry,) = report.triage
    assert entry.signature == "gpu: pytest-timeout" and entry.kind == "timeout"
    assert entry.failed_jobs == (0, 2) and entry.runners == ("gpu-a", "gpu-c")


def test_lying_success_is_a_failed_job():
    report = combine([job("gpu", findings=[finding()], conclusion="success")])
    assert report.jobs[0].conclusion == "success" and report.jobs[0].verdict is Verdict.FAIL
    assert report.verdict is Verdict.FAIL and report.exit_status == 1


def test_github_failure_without_a_finding_still_fails_and_is_triaged():
    report = combine([job("gpu", conclusion="failure"), job("gpu", attempt=2, conclusion="success")])
    assert report.jobs[0].verdict is Verdict.FAIL
    (entry,) = report.triage
    assert entry.signature == "gpu: job failed" and entry.kind == "job-failure" and entry.status == "flaky"


def test_gone_log_has_no_verdict_and_does_not_fail():
    report = combine([job("gpu", log=LOG_GONE, conclusion="failure"), job("lint")])
    assert report.jobs[0].verdict is None and report.jobs[0].findings == 0
    assert report.verdict is Verdict.PASS and report.exit_status == 0 and report.triage == ()


def test_warnings_below_fail_on_are_no_signature():
    low = finding("nccl-info", kind=Kind.HANG, severity=Severity.WARNING)
    assert combine([job("gpu", findings=[low], conclusion="success")]).triage == ()
    strict = combine([job("gpu", findings=[low], conclusion="success")], fail_on=Severity.WARNING)
    assert strict.triage[0].signature == "gpu: nccl-info"


def test_json_contract_of_jobs_and_triage():
    data = combine([job("gpu", findings=[finding()]), job("gpu", attempt=2)]).to_dict()
    assert list(data)[:5] == ["version", "verdict", "findings", "command", "diagnostics"]
    assert set(data["jobs"][0]) >= {
        "run_id",
        "attempt",
        "job_id",
        "name",
        "runner",
        "conclusion",
        "verdict",
        "findings",
    }
    assert data["jobs"][0]["verdict"] == "fail" and data["jobs"][0]["findings"] == 1
    assert data["findings"][0]["job"] == 0
    assert data["triage"] == [
        {
            "signature": "gpu: atexit-callback-ignored",
            "kind": "atexit-exception",
            "test": None,
            "status": "flaky",
            "failed_jobs": [0],
            "passed_jobs": [1],
            "runners": ["r1"],
        }
    ]

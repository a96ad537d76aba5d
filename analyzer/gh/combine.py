"""Many scanned jobs -> one report: each job's verdict, findings tagged with their job, the triage.

``gh`` and ``merge`` both end here, so a job means the same in both: our verdict from its log (or, for
``merge``, the verdict its own report gave), ``fail`` also when GitHub concluded ``failure`` or
``timed_out``, and ``None`` when the log is gone. The report fails when any job fails.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Optional, Sequence, Set, Tuple

from ..model import Finding, JobFacts, JobResult, Report, Severity, Verdict
from ..verdict import FINDING_EXIT_STATUS, decide
from .triage import classify, job_signatures

FAILED_CONCLUSIONS = ("failure", "timed_out")
LOG_SCANNED = "scanned"
LOG_GONE = "gone"


@dataclass(frozen=True)
class ScannedJob:
    """One job before indexing: its facts, GitHub's conclusion, the findings of its log."""

    facts: JobFacts
    conclusion: Optional[str] = None
    findings: Tuple[Finding, ...] = ()
    log: str = LOG_SCANNED
    verdict: Optional[Verdict] = None  # given by merge (the job's own report); computed otherwise


def _job_verdict(job: ScannedJob, fail_on: Severity) -> Optional[Verdict]:
    if job.log == LOG_GONE:
        return None
    if job.verdict is not None:
        return job.verdict
    verdict, _ = decide(job.findings, None, fail_on)
    if job.conclusion in FAILED_CONCLUSIONS:
        return Verdict.FAIL
    return verdict


def job_results(jobs: Sequence[ScannedJob], fail_on: Severity) -> List[JobResult]:
    return [
        JobResult(
            facts=job.facts,
            conclusion=job.conclusion,
            verdict=_job_verdict(job, fail_on),
            findings=len(job.findings),
            log=job.log,
        )
        for job in jobs
    ]


def baseline_signatures(jobs: Sequence[ScannedJob], fail_on: Severity) -> Set[str]:
    """Every signature that failed in any job (any attempt) of the baseline runs."""
    out: Set[str] = set()
    for result, job in zip(job_results(jobs, fail_on), jobs):
        if job.log != LOG_GONE:
            out.update(job_signatures(result, job.findings, fail_on))
    return out


def combine(
    jobs: Sequence[ScannedJob],
    fail_on: Severity = Severity.ERROR,
    baseline: Optional[Sequence[ScannedJob]] = None,
) -> Report:
    """The report of many jobs; ``baseline`` jobs only inform the triage."""
    results = job_results(jobs, fail_on)
    findings: List[Finding] = []
    for index, job in enumerate(jobs):
        findings.extend(dataclasses.replace(f, job=index) for f in job.findings)
    # Errors first across all jobs, each job's ranked order and the job order kept within a severity.
    findings.sort(key=lambda f: f.severity.rank)
    failed = any(r.verdict is Verdict.FAIL for r in results)
    known = baseline_signatures(baseline, fail_on) if baseline is not None else None
    return Report(
        verdict=Verdict.FAIL if failed else Verdict.PASS,
        exit_status=FINDING_EXIT_STATUS if failed else 0,
        findings=tuple(findings),
        jobs=tuple(results),
        triage=classify(results, findings, fail_on, known),
    )

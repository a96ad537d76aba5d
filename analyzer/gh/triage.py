"""Flaky, broken, new or known: each failing signature of a report of many jobs, from the logs alone.

A job's failures are its *signatures*: the test id when a finding names a test, else the rule id
within the job's name with its matrix parts removed (``"gpu-tests (3, cuda12)"`` and
``"gpu-tests [shard 3]"`` are both ``"gpu-tests"``), so one rule failing in several shards is one
entry. A job that failed with no finding at the failure level has the signature ``"<name>: job
failed"``.

Classification, first match wins:

- ``flaky``: it failed, and an execution of the same job (same full name) on the same commit (same
  ``head_sha``, else the same run) does not show it: another attempt, or another run of that commit;
- ``known``: ``--baseline`` runs were given and it failed in some attempt of one of them;
- ``new``: baseline runs were given and it failed in none;
- ``broken``: no baseline to compare with, and it never passed on the commit.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..model import Finding, JobResult, Severity, TriageEntry, Verdict

FLAKY, KNOWN, NEW, BROKEN = "flaky", "known", "new", "broken"
STATUSES = (NEW, FLAKY, KNOWN, BROKEN)
JOB_FAILED_KIND = "job-failure"

_MATRIX_PART = re.compile(r"\s*(\([^()]*\)|\[[^\[\]]*\])")


def base_name(name: str) -> str:
    """A job's name without its matrix values: parenthesised or bracketed groups removed."""
    stripped = " ".join(_MATRIX_PART.sub("", name).split())
    return stripped or name


def commit_of(job: JobResult) -> str:
    """What "the same commit" means: the same ``head_sha``, else the same run."""
    facts = job.facts
    return f"sha:{facts.head_sha}" if facts.head_sha else f"run:{facts.run_id}"


def finding_signature(finding: Finding, job_name: str) -> str:
    if finding.test:
        return finding.test
    return f"{base_name(job_name)}: {finding.rule}"


def job_signatures(
    job: JobResult, findings: Sequence[Finding], fail_on: Severity
) -> Dict[str, Tuple[str, Optional[str]]]:
    """Signature -> (kind, test) of one job's failures, in the findings' ranked order."""
    out: Dict[str, Tuple[str, Optional[str]]] = {}
    for finding in findings:
        if finding.severity.at_least(fail_on):
            out.setdefault(finding_signature(finding, job.facts.name), (finding.kind.value, finding.test))
    if not out and job.verdict is Verdict.FAIL:
        out[f"{base_name(job.facts.name)}: job failed"] = (JOB_FAILED_KIND, None)
    return out


def classify(
    jobs: Sequence[JobResult],
    findings: Sequence[Finding],
    fail_on: Severity,
    baseline: Optional[Set[str]] = None,
) -> Tuple[TriageEntry, ...]:
    """One entry per failing signature of ``jobs`` (findings carry their job's index in ``job``).

    ``baseline`` is the set of signatures that failed in the baseline runs, ``None`` without any.
    """
    own: Dict[int, List[Finding]] = {}
    for finding in findings:
        if finding.job is not None:
            own.setdefault(finding.job, []).append(finding)
    per_job: List[Dict[str, Tuple[str, Optional[str]]]] = [
        job_signatures(job, own.get(index, []), fail_on) if job.log != "gone" else {}
        for index, job in enumerate(jobs)
    ]

    order: List[str] = []
    failed: Dict[str, List[int]] = {}
    first: Dict[str, Tuple[str, Optional[str]]] = {}
    for index, signatures in enumerate(per_job):
        for signature, kind_test in signatures.items():
            if signature not in failed:
                order.append(signature)
                failed[signature] = []
                first[signature] = kind_test
            failed[signature].append(index)

    # Executions of the same job on the same commit: where a failure may also have passed.
    same: Dict[Tuple[str, str], List[int]] = {}
    for index, job in enumerate(jobs):
        if job.log != "gone" and job.verdict is not None:
            same.setdefault((commit_of(job), job.facts.name), []).append(index)

    entries = []
    for signature in order:
        failed_jobs = failed[signature]
        places = sorted({(commit_of(jobs[i]), jobs[i].facts.name) for i in failed_jobs})
        passed_jobs = sorted(
            i for place in places for i in same.get(place, []) if signature not in per_job[i]
        )
        if passed_jobs:
            status = FLAKY
        elif baseline is not None:
            status = KNOWN if signature in baseline else NEW
        else:
            status = BROKEN
        runners = sorted({jobs[i].facts.runner for i in failed_jobs if jobs[i].facts.runner})
        kind, test = first[signature]
        entries.append(
            TriageEntry(
                signature=signature,
                kind=kind,
                test=test,
                status=status,
                failed_jobs=tuple(failed_jobs),
                passed_jobs=tuple(passed_jobs),
                runners=tuple(runners),
            )
        )
    return tuple(entries)

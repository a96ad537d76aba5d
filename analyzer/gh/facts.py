"""The job facts a guarded run records in its report, read from the runner's environment.

The runner sets ``GITHUB_RUN_ID``, ``GITHUB_RUN_ATTEMPT``, ``GITHUB_JOB`` (the job's key in the
workflow, not the matrix's display name), ``RUNNER_NAME`` and ``GITHUB_SHA``; it exports no numeric job
id (that is ``job.check_run_id`` in expressions only, actions/runner#324), so ``job_id`` stays null.
A composite action cannot see the matrix, so ``--job-name`` lets a matrix job label itself.
"""

from __future__ import annotations

from typing import Mapping, Optional

from ..model import JobFacts


def _int(text: Optional[str]) -> Optional[int]:
    return int(text) if text and text.strip().isdigit() else None


def facts_from_env(environ: Mapping[str, str], name: Optional[str] = None) -> Optional[JobFacts]:
    """The facts of the current job; None outside GitHub Actions when no ``name`` was given."""
    if environ.get("GITHUB_ACTIONS") != "true" and not name:
        return None
    return JobFacts(
        run_id=_int(environ.get("GITHUB_RUN_ID")),
        attempt=_int(environ.get("GITHUB_RUN_ATTEMPT")),
        job_id=None,
        name=name or environ.get("GITHUB_JOB", ""),
        runner=environ.get("RUNNER_NAME") or None,
        head_sha=environ.get("GITHUB_SHA") or None,
    )

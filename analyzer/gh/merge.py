"""``merge PATH...``: the report.json of each job of a matrix (or of several runs) read back as jobs.

actions/download-artifact lays artifacts out as ``DIR/<artifact>/report.json``; a directory is
searched recursively for files named ``report.json``, a file is read whatever its name. A report's
``"job"`` object (written by ``run`` under GitHub Actions) says who ran it; a report without one is
named after its artifact directory. Two reports of the same job (same ``job_id``, else the same
``(run_id, attempt, name)``) count once: the first in path order is kept and a warning names it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import InputError
from ..model import REPORT_VERSION, Finding, JobFacts, Kind, Severity, Verdict
from .combine import ScannedJob

REPORT_NAME = "report.json"


def find_reports(paths: Sequence[str]) -> List[str]:
    """Report files under ``paths`` in a stable order; raises ``InputError`` when one has none."""
    found: List[str] = []
    for path in paths:
        if os.path.isdir(path):
            inside = list(_walk(path))
            if not inside:
                raise InputError(f"{path}: no {REPORT_NAME} below this directory")
            found.extend(inside)
        elif os.path.isfile(path):
            found.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return found


def _walk(root: str) -> Iterator[str]:
    def fail(err: OSError) -> None:
        raise InputError(f"{err.filename}: cannot read: {err.strerror}")

    for folder, dirs, files in os.walk(root, onerror=fail):
        dirs.sort()
        for name in sorted(files):
            if name == REPORT_NAME:
                yield os.path.join(folder, name)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _facts(data: Dict[str, Any], path: str) -> JobFacts:
    job = data.get("job")
    if not isinstance(job, dict):
        # No job facts (run outside Actions, or an older report): the artifact directory names it.
        return JobFacts(name=os.path.basename(os.path.dirname(os.path.abspath(path))))
    return JobFacts(
        run_id=_int(job.get("run_id")),
        attempt=_int(job.get("attempt")),
        job_id=_int(job.get("job_id")),
        name=_str(job.get("name")) or os.path.basename(os.path.dirname(os.path.abspath(path))),
        runner=_str(job.get("runner")),
        head_sha=_str(job.get("head_sha")),
    )


def _finding(item: Any, path: str, number: int) -> Finding:
    where = f"{path}: findings[{number}]"
    if not isinstance(item, dict):
        raise InputError(f"{where}: not an object")
    try:
        return Finding(
            kind=Kind(item["kind"]),
            rule=str(item["rule"]),
            severity=Severity(item["severity"]),
            path=str(item.get("path", "")),
            line=int(item.get("line", 0)),
            message=str(item.get("message", "")),
            excerpt=str(item.get("excerpt", "")),
            test=_str(item.get("test")),
        )
    except KeyError as err:
        raise InputError(f"{where}: no {err.args[0]!r}") from None
    except (ValueError, TypeError) as err:
        raise InputError(f"{where}: {err}") from None


def read_report(path: str) -> ScannedJob:
    """One job from one report file; raises ``InputError`` naming the file for anything unusable."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    except ValueError as err:
        raise InputError(f"{path}: not a JSON report ({err})") from None
    if not isinstance(data, dict) or data.get("version") != REPORT_VERSION:
        raise InputError(f"{path}: not a version {REPORT_VERSION} gpu-hang-guard report")
    if "jobs" in data:
        raise InputError(f"{path}: already a report of many jobs; merge the single jobs' reports")
    try:
        verdict = Verdict(data.get("verdict"))
    except ValueError:
        raise InputError(f"{path}: verdict {data.get('verdict')!r} is neither pass nor fail") from None
    findings = data.get("findings")
    if not isinstance(findings, list):
        raise InputError(f"{path}: findings is not a list")
    return ScannedJob(
        facts=_facts(data, path),
        conclusion=None,
        findings=tuple(_finding(item, path, i) for i, item in enumerate(findings)),
        verdict=verdict,
    )


def identity(facts: JobFacts) -> Tuple[Any, ...]:
    """Who a job is: its ``job_id``, else ``(run_id, attempt, name)``."""
    if facts.job_id is not None:
        return ("id", facts.job_id)
    return ("run", facts.run_id, facts.attempt, facts.name)


def read_reports(paths: Sequence[str], warn: Callable[[str], None]) -> List[ScannedJob]:
    """Each distinct job of the reports under ``paths``, ordered by name, run and attempt."""
    jobs: List[ScannedJob] = []
    first: Dict[Tuple[Any, ...], str] = {}
    for path in find_reports(paths):
        job = read_report(path)
        key = identity(job.facts)
        if key in first:
            warn(
                f"warning: {path} is the same job as {first[key]} ({job.facts.name}); kept the first "
                "(give each matrix job its own name input)"
            )
            continue
        first[key] = path
        jobs.append(job)
    # Read like gh's jobs: by name, then run and attempt, whatever the artifacts were called.
    jobs.sort(key=lambda j: (j.facts.name, j.facts.run_id or 0, j.facts.attempt or 0))
    return jobs

"""``gh OWNER/REPO --run ID ...``: every selected job of the runs fetched, scanned, combined, triaged."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..model import Diagnostic, Report, Severity
from .cache import Cache
from .client import Client
from .combine import ScannedJob, combine
from .fetch import DEFAULT_WORKERS, Fetcher, Notify, ScanFn, Selection

_OWNER_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
TIMES_TITLE = "Fetch and scan"


@dataclass(frozen=True)
class GhOptions:
    owner_repo: str
    runs: Tuple[int, ...]
    selection: Selection = Selection()
    baselines: Tuple[int, ...] = ()
    cache_dir: Optional[str] = None
    workers: int = DEFAULT_WORKERS
    fail_on: Severity = Severity.ERROR


def check_owner_repo(text: str) -> str:
    if not _OWNER_REPO.match(text) or text.endswith((".", "/")):
        raise UsageError(f"gh: {text!r} is not OWNER/REPO, e.g. pytorch/pytorch")
    return text


def _jobs_of(
    fetcher: Fetcher, run_ids: Sequence[int], selection: Selection, scan: ScanFn
) -> List[ScannedJob]:
    out: List[ScannedJob] = []
    seen = set()
    for run_id in dict.fromkeys(run_ids):  # a run named twice is read once
        run = fetcher.run(run_id)
        jobs = [j for j in fetcher.job_list(run, selection) if j["id"] not in seen]
        seen.update(j["id"] for j in jobs)
        out.extend(fetcher.scan_jobs(run, jobs, scan))
    return out


def gh_report(
    options: GhOptions,
    client: Client,
    scan: ScanFn,
    warn: Notify,
    progress: Optional[Notify] = None,
) -> Report:
    """The report of many jobs for ``options.runs``; baseline runs (every attempt) inform triage only."""
    check_owner_repo(options.owner_repo)
    cache = Cache(options.cache_dir, client.api_url, options.owner_repo)
    fetcher = Fetcher(client, cache, options.owner_repo, options.workers, warn=warn, progress=progress)
    jobs = _jobs_of(fetcher, options.runs, options.selection, scan)
    baseline = None
    if options.baselines:
        every_attempt = Selection(all_attempts=True, job_glob=options.selection.job_glob)
        baseline = _jobs_of(fetcher, options.baselines, every_attempt, scan)
    report = combine(jobs, options.fail_on, baseline)
    return replace(report, diagnostics=(Diagnostic(TIMES_TITLE, fetcher.totals.describe()),))

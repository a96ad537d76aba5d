"""``python -m analyzer gh`` as a real process against the loopback GitHub: a run with many jobs,
attempts and a baseline, triaged from its logs alone; the token goes nowhere it should not."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli
from .fakegh import PASSING_LOG, REPO, TOKEN, FakeGitHub, Job, Run, _json, fixture_log

TIMEOUT_LOG = fixture_log("timeout/subprocess-uncaught.log")
ATEXIT_LOG = fixture_log("atexit/py312.log")
CRASH_LOG = fixture_log("crash/segfault-pytest.log")


def real_looking_run(github: FakeGitHub) -> None:
    """Run 100 (two attempts) of commit c0ffee, and run 90 of the base branch."""
    github.add(
        Run(
            100,
            "c0ffee",
            attempts=2,
            jobs=[
                Job(1001, "gpu-tests (1)", 100, 1, "failure", runner="gpu-a", log=TIMEOUT_LOG),
                Job(1002, "gpu-tests (2)", 100, 1, "success", runner="gpu-b", log=ATEXIT_LOG),
                Job(1003, "gpu-tests (3)", 100, 1, "success", runner="gpu-c", log=PASSING_LOG),
                Job(1004, "gpu-tests (4)", 100, 1, "failure", runner="gpu-d", log=None, log_status=410),
                Job(1005, "gpu-tests (5)", 100, 1, "failure", runner="gpu-e", log=CRASH_LOG),
                Job(1006, "lint", 100, 1, "success", runner="cpu-1", log=None, log_status=404),
                # "Re-run failed jobs": shard 1 again, and it passed.
                Job(1011, "gpu-tests (1)", 100, 2, "success", runner="gpu-f", log=PASSING_LOG),
            ],
        )
    )
    github.add(
        Run(90, "base", jobs=[Job(901, "gpu-tests (3)", 90, 1, "success", runner="gpu-a", log=ATEXIT_LOG)])
    )


def gh(github: FakeGitHub, tmp_path: Path, *extra: str, env=None):
    out = tmp_path / "report.json"
    summary = tmp_path / "summary.md"
    args = ["gh", REPO, "--api-url", github.api_url, "--json", str(out), "--summary", str(summary), *extra]
    result = run_cli(args, env=env)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return result, report, text


def test_a_run_with_attempts_and_a_baseline_is_triaged(github, tmp_path):
    real_looking_run(github)
    cache = tmp_path / "cache"
    result, report, summary = gh(
        github, tmp_path, "--run", "100", "--all-attempts", "--baseline", "90", "--cache-dir", str(cache)
    )
    assert result.returncode == 1, result.stderr

    jobs = report["jobs"]
    assert [(j["job_id"], j["name"], j["attempt"]) for j in jobs] == [
        (1001, "gpu-tests (1)", 1),
        (1011, "gpu-tests (1)", 2),
        (1002, "gpu-tests (2)", 1),
        (1003, "gpu-tests (3)", 1),
        (1004, "gpu-tests (4)", 1),
        (1005, "gpu-tests (5)", 1),
        (1006, "lint", 1),
    ]
    assert all(j["run_id"] == 100 and j["head_sha"] == "c0ffee" for j in jobs)
    verdicts = {j["job_id"]: (j["conclusion"], j["verdict"], j["log"]) for j in jobs}
    assert verdicts[1002] == ("success", "fail", "scanned")  # GitHub was told otherwise
    assert verdicts[1004] == ("failure", None, "gone")
    assert verdicts[1006] == ("success", None, "gone")
    assert verdicts[1011] == ("success", "pass", "scanned")
    for index, job in enumerate(jobs):
        assert job["findings"] == sum(1 for f in report["findings"] if f["job"] == index)
    assert jobs[4]["findings"] == 0

    # Signatures depend on the catalogue and on test attribution: find the entries by their jobs.
    def entries(job_index):
        return [t for t in report["triage"] if t["failed_jobs"] == [job_index]]

    flaky, known, new = entries(0), entries(2), entries(5)
    assert flaky and all(t["status"] == "flaky" and t["passed_jobs"] == [1] for t in flaky)
    assert all(t["runners"] == ["gpu-a"] for t in flaky)
    assert known and all(t["status"] == "known" for t in known)  # the same failure in base run 90
    assert new and all(t["status"] == "new" for t in new)
    assert len(report["triage"]) == len(flaky) + len(known) + len(new)

    # One warning line per gone log, on stderr; the exit status is the failures', not theirs.
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and all("is gone" in w for w in warnings)
    assert "1004" in warnings[0] + warnings[1] and "1006" in warnings[0] + warnings[1]

    assert summary.startswith("## gpu-hang-guard: Failed\n")
    counts = f"{len(new)} new, {len(flaky)} flaky, {len(known)} known failure"
    assert f"**{counts}{'' if len(known) == 1 else 's'} across 7 jobs**" in summary
    told = [line for line in summary.splitlines() if "GitHub was told otherwise" in line]
    assert len(told) == 1 and "job 2 ` gpu-tests (2) `" in told[0]
    assert "Logs gone" in summary

    # Logs came through the redirect, never with the token; the token is nowhere.
    assert github.blob_requests and github.authorized_blob_requests == 0
    assert_no_token(result, tmp_path)


def assert_no_token(result, tmp_path: Path) -> None:
    assert TOKEN not in result.stdout and TOKEN not in result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert TOKEN.encode() not in data, path
            assert b"SIGNEDsecret" not in data, path


def test_latest_is_the_default_and_attempt_picks_one(github, tmp_path):
    real_looking_run(github)
    result, report, _ = gh(github, tmp_path, "--run", "100", "--job", "gpu-tests (1)")
    assert [j["job_id"] for j in report["jobs"]] == [1011]
    assert result.returncode == 0, result.stderr
    result, report, _ = gh(github, tmp_path, "--run", "100", "--attempt", "1", "--job", "gpu-tests (1)")
    assert [j["job_id"] for j in report["jobs"]] == [1001]
    # Attempt 2's list holds the jobs carried over from attempt 1, each once.
    result, report, _ = gh(github, tmp_path, "--run", "100", "--attempt", "2", "--job", "gpu-tests*")
    assert sorted(j["job_id"] for j in report["jobs"]) == [1002, 1003, 1004, 1005, 1011]


def test_job_glob_is_case_sensitive_and_unmatched_jobs_are_not_downloaded(github, tmp_path):
    real_looking_run(github)
    result, report, _ = gh(github, tmp_path, "--run", "100", "--job", "gpu-tests ([23])")
    assert [j["name"] for j in report["jobs"]] == ["gpu-tests (2)", "gpu-tests (3)"]
    logs = sorted(p for p in github.paths() if p.endswith("/logs"))
    assert logs == [f"/repos/{REPO}/actions/jobs/1002/logs", f"/repos/{REPO}/actions/jobs/1003/logs"]
    _, report, _ = gh(github, tmp_path, "--run", "100", "--job", "GPU-*")
    assert report["jobs"] == [] and report["verdict"] == "pass"


def test_offline_rerun_answers_from_the_cache(github, tmp_path):
    real_looking_run(github)
    cache = tmp_path / "cache"
    first, online, _ = gh(github, tmp_path, "--run", "100", "--all-attempts", "--cache-dir", str(cache))
    blob_reads = len(github.blob_requests)
    # Online again: run and job lists are asked again, but no log is downloaded twice.
    again, _, _ = gh(github, tmp_path, "--run", "100", "--all-attempts", "--cache-dir", str(cache))
    assert len(github.blob_requests) == blob_reads
    assert again.returncode == first.returncode == 1

    dead = github.api_url
    github.api.stop()  # the same API URL, now refusing connections
    github.blobs.stop()
    offline_args = [
        "gh",
        REPO,
        "--api-url",
        dead,
        "--run",
        "100",
        "--all-attempts",
        "--cache-dir",
        str(cache),
    ]
    offline = run_cli([*offline_args, "--format", "json"])
    assert offline.returncode == 1, offline.stderr
    data = json.loads(offline.stdout)
    assert data["jobs"] == online["jobs"] and data["triage"] == online["triage"]
    # Gone logs are not in the cache: offline they are asked for and that fails, naming the job.
    missing = run_cli(["gh", REPO, "--api-url", dead, "--run", "555", "--cache-dir", str(cache)])
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "run 555 of acme/gpu" in missing.stderr
    assert "cannot reach" in missing.stderr and "Traceback" not in missing.stderr
    assert_no_token(offline, tmp_path)


def test_offline_names_the_log_that_was_never_fetched(github, tmp_path):
    real_looking_run(github)
    cache = tmp_path / "cache"
    gh(github, tmp_path, "--run", "100", "--cache-dir", str(cache), "--job", "gpu-tests (2)")
    dead = github.api_url
    github.api.stop()
    result = run_cli(["gh", REPO, "--api-url", dead, "--run", "100", "--cache-dir", str(cache)])
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "cannot reach" in result.stderr and "is not in the cache" in result.stderr
    missing = re.search(r"the log of job (\d+) is not in the cache", result.stderr)
    assert missing and missing.group(1) != "1002"


@pytest.mark.parametrize(
    "env, needle",
    [
        ({"GH_TOKEN": None, "GITHUB_TOKEN": None}, "no token: set GH_TOKEN or GITHUB_TOKEN"),
        ({"GH_TOKEN": "ghs_wrong"}, "401 UNAUTHORIZED"),
        ({"GH_TOKEN": None, "GITHUB_TOKEN": "ghs_wrong"}, "401 UNAUTHORIZED"),
    ],
)
def test_token_problems_are_one_line_errors(github, tmp_path, env, needle):
    real_looking_run(github)
    result, report, _ = gh(github, tmp_path, "--run", "100", env=env)
    assert result.returncode == 2 and report is None and result.stdout == ""
    assert result.stderr.count("\n") == 1 and needle in result.stderr, result.stderr
    assert "ghs_wrong" not in result.stderr


def test_unknown_run_is_not_found_or_not_visible(github, tmp_path):
    real_looking_run(github)
    result, _, _ = gh(github, tmp_path, "--run", "404404")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "run 404404 of acme/gpu: 404 NOT FOUND: not found, or not visible to this token"
    )


def test_a_long_rate_limit_is_one_line_error(github, tmp_path):
    real_looking_run(github)
    github.before = lambda request: _json(
        {"message": "API rate limit exceeded"},
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "9999999999"},
    )
    result, _, _ = gh(github, tmp_path, "--run", "100")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "rate limited by GitHub" in result.stderr and "try again later" in result.stderr


def test_a_short_rate_limit_and_a_dropped_body_still_give_the_whole_report(github, tmp_path):
    real_looking_run(github)
    answers = [_json({"message": "secondary rate limit"}, 429, {"retry-after": "1"})]
    github.before = lambda request: answers.pop() if answers else None
    github.cut_next[1002] = 1
    result, report, _ = gh(github, tmp_path, "--run", "100", "--job", "gpu-tests (2)")
    assert result.returncode == 1, result.stderr
    assert report["jobs"][0]["verdict"] == "fail"
    assert [f["rule"] for f in report["findings"]] == ["atexit-callback-ignored"]
    assert report["findings"][0]["line"] == 8 - 4  # the fixture's 4 header lines are not served
    assert github.paths().count(f"/repos/{REPO}/actions/jobs/1002/logs") == 2


def test_bad_arguments(github, tmp_path):
    for args, needle in [
        (["gh", "acme", "--run", "1"], "is not OWNER/REPO"),
        (["gh", REPO], "--run"),
        (["gh", REPO, "--run", "1", "--attempt", "1", "--all-attempts"], "not allowed with"),
        (["gh", REPO, "--run", "100", "--api-url", github.api_url, "--attempt", "3"], "has attempts 1 to 2"),
    ]:
        real_looking_run(github)
        result = run_cli(args)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert needle in result.stderr, (args, result.stderr)


def test_progress_shows_on_a_terminal_only(github, tmp_path):
    real_looking_run(github)
    leader, follower = pty.openpty()
    env = dict(os.environ, GH_TOKEN=TOKEN)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "analyzer",
            "gh",
            REPO,
            "--run",
            "100",
            "--api-url",
            github.api_url,
            "--job",
            "gpu-tests (3)",
        ],
        cwd=str(ROOT),
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    out, _ = proc.communicate(timeout=120)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.returncode == 0
    assert b"1/1 jobs fetched and scanned" in seen
    assert b"jobs fetched" not in out


def test_github_format_and_outputs_work_for_many_jobs(github, tmp_path):
    real_looking_run(github)
    outputs = tmp_path / "outputs.txt"
    result, report, _ = gh(
        github, tmp_path, "--run", "100", "--format", "github", "--github-output", str(outputs)
    )
    assert result.returncode == 1
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert annotations and all("job-10" in line for line in annotations)
    assert "verdict=fail" in outputs.read_text(encoding="utf-8")
    assert_no_token(result, tmp_path)


def test_a_wide_matrix_through_a_small_pool(github, tmp_path):
    # 24 shards, every third one failed in attempt 1 and passed on the re-run: 16 pages of 2 jobs.
    jobs = []
    for shard in range(24):
        failed = shard % 3 == 0
        jobs.append(
            Job(
                5000 + shard,
                f"gpu ({shard})",
                300,
                1,
                "failure" if failed else "success",
                runner=f"gpu-{shard % 5}",
                log=ATEXIT_LOG if failed else PASSING_LOG,
            )
        )
        if failed:
            jobs.append(
                Job(6000 + shard, f"gpu ({shard})", 300, 2, "success", runner="gpu-9", log=PASSING_LOG)
            )
    github.add(Run(300, "feed", attempts=2, jobs=jobs))
    result, report, summary = gh(github, tmp_path, "--run", "300", "--all-attempts", "--workers", "3")
    assert result.returncode == 1, result.stderr
    assert len(report["jobs"]) == 32 and len({j["job_id"] for j in report["jobs"]}) == 32
    assert len([p for p in github.paths() if p.endswith("/jobs")]) == 16
    flaky = [t for t in report["triage"] if t["status"] == "flaky"]
    assert flaky and len(flaky) == len(report["triage"])
    failed = sorted(i for t in flaky for i in t["failed_jobs"])
    assert [report["jobs"][i]["attempt"] for i in failed] == [1] * 8
    assert all(report["jobs"][i]["attempt"] == 2 for t in flaky for i in t["passed_jobs"])
    assert "across 32 jobs" in summary

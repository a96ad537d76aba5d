"""``merge``: the reports real guarded runs wrote, laid out as download-artifact lays them out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .conftest import run_cli

ATEXIT_RAISES = (
    "import atexit\n"
    "def _prepare_to_exit():\n"
    "    raise RuntimeError('process group was destroyed twice')\n"
    "atexit.register(_prepare_to_exit)\n"
    "print('all 12 tests passed')\n"
)
PASSES = "print('all 12 tests passed')"
FAILS = "import sys; print('FAILED tests/test_x.py::test_y'); sys.exit(3)"


def guarded(
    artifacts: Path,
    artifact: str,
    code: str,
    name: str,
    attempt: int = 1,
    run_id: int = 7001,
    sha: str = "c0ffee",
    runner: str = "gpu-a",
) -> dict:
    """``run`` as the action runs it in one matrix job, its report saved as the artifact's report.json."""
    folder = artifacts / artifact
    folder.mkdir(parents=True)
    env = {
        "GITHUB_ACTIONS": None,  # not under a runner, so no workflow commands; the facts come anyway
        "GITHUB_RUN_ID": str(run_id),
        "GITHUB_RUN_ATTEMPT": str(attempt),
        "GITHUB_JOB": "gpu-tests",
        "GITHUB_SHA": sha,
        "RUNNER_NAME": runner,
    }
    result = run_cli(
        [
            "run",
            "--log-dir",
            str(folder / "logs"),
            "--json",
            str(folder / "report.json"),
            "--job-name",
            name,
            "--",
            sys.executable,
            "-c",
            code,
        ],
        env=env,
    )
    assert result.returncode in (0, 1, 3), result.stderr
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def test_run_records_its_job_facts(tmp_path):
    report = guarded(tmp_path, "shard-1", PASSES, "gpu-tests (1)")
    assert report["job"] == {
        "run_id": 7001,
        "attempt": 1,
        "job_id": None,
        "name": "gpu-tests (1)",
        "runner": "gpu-a",
        "head_sha": "c0ffee",
    }
    assert "jobs" not in report and "triage" not in report


def test_a_scan_report_keeps_its_keys(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    result = run_cli(
        ["scan", str(log), "--format", "json"], env={"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "5"}
    )
    assert list(json.loads(result.stdout)) == ["version", "verdict", "findings", "command", "diagnostics"]


def test_merge_a_matrix_with_a_rerun(tmp_path):
    artifacts = tmp_path / "artifacts"
    guarded(artifacts, "report-1", ATEXIT_RAISES, "gpu-tests (1)", runner="gpu-a")
    guarded(artifacts, "report-2", PASSES, "gpu-tests (2)", runner="gpu-b")
    guarded(artifacts, "report-3", FAILS, "gpu-tests (3)", runner="gpu-c")
    guarded(artifacts, "report-1-attempt-2", PASSES, "gpu-tests (1)", attempt=2, runner="gpu-d")
    out = tmp_path / "merged.json"
    summary = tmp_path / "summary.md"
    result = run_cli(["merge", str(artifacts), "--json", str(out), "--summary", str(summary)])
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    merged = json.loads(out.read_text(encoding="utf-8"))
    names = [(j["name"], j["attempt"]) for j in merged["jobs"]]
    assert names == [("gpu-tests (1)", 1), ("gpu-tests (1)", 2), ("gpu-tests (2)", 1), ("gpu-tests (3)", 1)]
    assert all(j["conclusion"] is None for j in merged["jobs"])
    assert [j["verdict"] for j in merged["jobs"]] == ["fail", "pass", "pass", "fail"]
    for index, job in enumerate(merged["jobs"]):
        assert job["findings"] == sum(1 for f in merged["findings"] if f["job"] == index)

    by_jobs = {tuple(t["failed_jobs"]): t for t in merged["triage"]}
    flaky = [t for t in merged["triage"] if t["failed_jobs"] == [0]]
    assert flaky and all(t["status"] == "flaky" and t["passed_jobs"] == [1] for t in flaky)
    assert by_jobs[(3,)]["status"] == "broken" and by_jobs[(3,)]["runners"] == ["gpu-c"]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## gpu-hang-guard: Failed\n") and "across 4 jobs" in text
    assert "### Flaky" in text and "### Broken" in text


def test_the_same_job_twice_counts_once_with_a_warning(tmp_path):
    artifacts = tmp_path / "artifacts"
    guarded(artifacts, "a", PASSES, "gpu-tests (1)")
    guarded(artifacts, "b", PASSES, "gpu-tests (1)")
    result = run_cli(["merge", str(artifacts), "--format", "json"])
    assert result.returncode == 0
    assert len(json.loads(result.stdout)["jobs"]) == 1
    assert result.stderr.count("\n") == 1 and "is the same job as" in result.stderr


def test_reports_without_job_facts_are_named_by_their_artifact(tmp_path):
    folder = tmp_path / "artifacts" / "shard-9"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(
        json.dumps({"version": 1, "verdict": "pass", "findings": [], "command": None, "diagnostics": []})
    )
    result = run_cli(["merge", str(tmp_path / "artifacts"), "--format", "json"])
    assert json.loads(result.stdout)["jobs"][0]["name"] == "shard-9"


def test_unusable_inputs_are_one_line_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    bad = tmp_path / "bad" / "report.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"version": 2, "verdict": "pass", "findings": []}))
    for path, needle in [
        (tmp_path / "empty", "no report.json below this directory"),
        (tmp_path / "bad", "not a JSON report"),
        (old, "not a version 1 gpu-hang-guard report"),
        (tmp_path / "missing", "no such file or directory"),
    ]:
        result = run_cli(["merge", str(path)])
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert needle in result.stderr and "Traceback" not in result.stderr


def test_config_is_refused_since_the_reports_are_already_graded(tmp_path):
    guarded(tmp_path / "artifacts", "a", PASSES, "gpu-tests (1)")
    config = tmp_path / "c.yaml"
    config.write_text("ignore: []\n")
    result = run_cli(["merge", str(tmp_path / "artifacts"), "--config", str(config)])
    assert result.returncode == 2 and "--config does not apply" in result.stderr

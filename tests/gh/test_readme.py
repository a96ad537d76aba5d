"""The README's fan-in job is a workflow that merges the matrix: needs it, runs always, merges."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

README = Path(__file__).resolve().parents[2] / "README.md"


def test_fan_in_job_merges_the_matrix_artifacts():
    section = (
        README.read_text(encoding="utf-8").split("## Many jobs: `gh` and `merge`", 1)[1].split("\n## ", 1)[0]
    )
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    workflow = yaml.safe_load(blocks[-1])
    matrix_job, fan_in = workflow["jobs"]["gpu-tests"], workflow["jobs"]["gpu-summary"]
    guard = next(s for s in matrix_job["steps"] if str(s.get("uses", "")).startswith("org/gpu-hang-guard"))
    assert "name" in guard["with"] and "upload-logs" in guard["with"]
    assert fan_in["needs"] == "gpu-tests" and fan_in["if"] == "always()"
    download = next(
        s for s in fan_in["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact")
    )
    assert download["with"]["pattern"] == "gpu-logs-*"
    runs = [s["run"] for s in fan_in["steps"] if "run" in s]
    merge = next(r for r in runs if "analyzer merge" in r)
    assert download["with"]["path"] in merge and '--summary "$GITHUB_STEP_SUMMARY"' in merge

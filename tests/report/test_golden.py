"""Rendered outputs of realistic reports, committed so any format change shows in review.

``UPDATE_GOLDEN=1 python -m pytest tests/report`` re-blesses them. The reports come from
``reports.py`` (the GPU snapshot there is mocked: this machine has no GPU).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analyzer.report.github import render_annotations, render_outputs
from analyzer.report.json_report import render_json
from analyzer.report.markdown import render_markdown
from analyzer.report.text import render_text

from . import mdcheck
from .reports import GOLDEN_REPORTS

GOLDEN = Path(__file__).parent / "golden"
RENDERERS = {
    "md": lambda r: render_markdown(r, report_path="gpu-hang-guard-report.json"),
    "txt": render_text,
    "json": render_json,
    "github": lambda r: (
        render_annotations(r)
        + "# --- $GITHUB_OUTPUT ---\n"
        + render_outputs(r, "gpu-hang-guard-report.json")
    ),
}


@pytest.mark.parametrize("suffix", sorted(RENDERERS))
@pytest.mark.parametrize("name", sorted(GOLDEN_REPORTS))
def test_golden(name, suffix):
    rendered = RENDERERS[suffix](GOLDEN_REPORTS[name])
    path = GOLDEN / f"{name}.{suffix}"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"{path} missing: run UPDATE_GOLDEN=1 python -m pytest tests/report"
    assert rendered == path.read_text(encoding="utf-8"), f"{path.name} changed; re-bless if intended"
    if suffix == "md":
        assert mdcheck.problems(rendered) == []

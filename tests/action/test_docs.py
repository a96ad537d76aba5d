"""The action's documentation stays in step with action.yml: every input and output is in the tables."""

from __future__ import annotations

import re
import struct

import yaml

from .harness import ACTION_FILE, REPO_ROOT

ACTION = yaml.safe_load(ACTION_FILE.read_text(encoding="utf-8"))
README = REPO_ROOT / "README.md"
IMAGE = REPO_ROOT / "docs" / "images" / "summary.png"


def _table_names(text: str, heading: str) -> set:
    """The backticked names in the first column of the table under ``### heading``."""
    section = text.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([\w-]+)` \|", section, flags=re.M))


def test_inputs_and_outputs_tables_match_action_yml():
    text = README.read_text(encoding="utf-8")
    assert _table_names(text, "Inputs") == set(ACTION["inputs"])
    assert _table_names(text, "Outputs") == set(ACTION["outputs"])


def test_documented_defaults_are_the_real_ones():
    text = README.read_text(encoding="utf-8")
    for name, spec in ACTION["inputs"].items():
        default = str(spec.get("default", ""))
        if default:
            row = re.search(rf"^\| `{re.escape(name)}` \| `([^`]*)` \|", text, flags=re.M)
            assert row and row.group(1) == default, f"{name}: documented default differs from {default!r}"


def test_summary_image_is_a_small_png():
    data = IMAGE.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert 800 <= width <= 2600 and height >= 400
    assert len(data) < 300 * 1024


def test_changelog_and_release_process():
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    releasing = (REPO_ROOT / "docs" / "RELEASING.md").read_text(encoding="utf-8")
    assert "git push --force origin v1" in releasing and "git tag -a v1.x.y" in releasing

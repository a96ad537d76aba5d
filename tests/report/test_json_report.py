"""The JSON report is the public contract: exact keys and types, version 1."""

from __future__ import annotations

import json

from analyzer.report.json_report import render_json

from .reports import guard_hang, scan_atexit

FINDING_KEYS = {
    "kind": str,
    "rule": str,
    "severity": str,
    "path": str,
    "line": int,
    "message": str,
    "excerpt": str,
    "test": (str, type(None)),
}
COMMAND_KEYS = {
    "argv": list,
    "exit_code": (int, type(None)),
    "signal": (str, type(None)),
    "timed_out": bool,
    "timeout_reason": (str, type(None)),
    "duration_s": float,
    "leftover_pids": list,
    "unkillable_pids": list,
    "containment": (str, type(None)),
}


def test_scan_report_keys_and_types():
    text = render_json(scan_atexit())
    assert text.endswith("}\n")
    data = json.loads(text)
    assert list(data) == ["version", "verdict", "findings", "command", "diagnostics"]
    assert data["version"] == 1 and data["verdict"] == "fail" and data["command"] is None
    for finding in data["findings"]:
        assert list(finding) == list(FINDING_KEYS)
        for key, kind in FINDING_KEYS.items():
            assert isinstance(finding[key], kind), key
    assert data["findings"][0]["kind"] == "atexit-exception"
    assert data["findings"][0]["severity"] == "error"
    assert data["findings"][0]["excerpt"].endswith("RuntimeError: boom")


def test_guard_report_command_object():
    data = json.loads(render_json(guard_hang()))
    command = data["command"]
    assert list(command) == list(COMMAND_KEYS)
    for key, kind in COMMAND_KEYS.items():
        assert isinstance(command[key], kind), key
    assert command == {
        "argv": ["python3", "-m", "pytest", "-x", "tests/"],
        "exit_code": 143,
        "signal": "SIGTERM",
        "timed_out": True,
        "timeout_reason": "wall",
        "duration_s": 600.41,
        "leftover_pids": [12701],
        "unkillable_pids": [],
        "containment": None,
    }
    assert [d["title"] for d in data["diagnostics"]] == [
        "Stack dumps (py-spy dump --nonblocking)",
        "Process table",
        "GPU snapshot (nvidia-smi)",
    ]
    assert {f["kind"] for f in data["findings"]} == {"hang", "leaked-process"}

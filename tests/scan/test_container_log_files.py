"""Container log files stored as data are read as the lines they hold, each at its own line of the file.

Docker's json-file driver (moby daemon/logger/jsonfilelog, commit b985e2313a86): one JSON object a line,
``{"log":"text\\n","stream":"stderr","time":"..."}`` (jsonlog/jsonlogbytes.go, MarshalJSONBuf), the text
escaped by ffjsonWriteJSONBytesAsString (``\\"``, ``\\\\``, ``\\n``, ``\\r``, every other control byte and
``<``, ``>``, ``&`` as ``\\u00XX``), a line longer than the copier's 16 KiB buffer (daemon/logger/copier.go,
defaultBufSize) cut into objects whose "log" has no final ``\\n`` but the last's (jsonfilelog.go,
marshalMessage). The kubelet's CRI format as containerd writes it (internal/cri/io/logger.go, redirectLogs:
RFC3339Nano stamp, stream, ``P`` for a piece and ``F`` for a whole line or the last piece; the tags from
k8s.io/cri-api pkg/apis/runtime/v1/constants.go). Each piece stays a line of its own: the engine matches
windows cut at any line end alike whatever their size (tests/scan/test_engine_equivalence.py).
"""

from __future__ import annotations

import json

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_line, container_lines_decoded, strip_controls
from tests.test_fixtures import _regenerate_module

STAMP = '"2024-01-09T18:41:23.25265021Z"'


# The wrapper the fixtures' container-framed captures are written with (fixtures/regenerate.py).
_go_json_string = _regenerate_module()._go_json_string


def docker_line(text: str, stream: str = "stderr", last: bool = True) -> bytes:
    log = _go_json_string(text + ("\n" if last else ""))
    return ('{"log":%s,"stream":"%s","time":%s}' % (log, stream, STAMP)).encode()


def test_a_json_file_line_is_its_text_unescaped():
    raw = docker_line('  File "<stdin>", line 1, in <module> & \t\x1b[31mred\x1b[0m \u00e9\u2028')
    assert clean_line(raw + b"\n")[0] == '  File "<stdin>", line 1, in <module> & \tred \u00e9\u2028'


def test_the_escapes_are_what_json_reads():
    # json.loads reads what ffjsonWriteJSONBytesAsString wrote: the helper above writes the driver's format
    text = 'a "b" \\ <c> & \x00\x1f\r'
    assert json.loads(_go_json_string(text)) == text


def test_lines_stay_where_they_are_in_the_file():
    raw = b"\n".join([docker_line("Traceback (most recent call last):"), docker_line(""),
                      docker_line("_queue.Empty"), b""])
    assert strip_controls(raw) == b"Traceback (most recent call last):\n\n_queue.Empty\n"


def test_pieces_of_a_long_line_stay_at_their_own_lines():
    raw = b"\n".join([
        docker_line("RuntimeError: CUDA err", last=False),
        docker_line("step 3", stream="stdout"),  # the other stream's line between the pieces
        docker_line("or: an illegal memory access was encountered"),
    ])
    assert container_lines_decoded(raw).split(b"\n") == [
        b"RuntimeError: CUDA err", b"step 3", b"or: an illegal memory access was encountered"]


def test_a_cri_file_loses_its_prefix():
    raw = (b"2024-01-09T18:41:23.1Z stderr P RuntimeError: CUDA err\n"
           b"2024-01-09T18:41:23.12Z stdout F step 3\n"
           b"2024-01-09T18:41:23.123+01:00 stderr F or: an illegal memory access was encountered\n"
           b"2024-01-09T18:41:24Z stderr F \n")
    assert strip_controls(raw) == (
        b"RuntimeError: CUDA err\nstep 3\nor: an illegal memory access was encountered\n\n")


def test_what_is_no_container_line_is_kept():
    kept = [
        b'{"log":"cut \\u00',  # an object cut inside an escape: a copy that stopped mid-line
        b'{"log":"no end',
        b'{"level":"error","msg":"CUDA error"}',  # another program's JSON
        b"x P y",
        b"2024-01-09T18:41:23.1Z stderr X text",
        b"2024-01-09 18:41:23 stderr P text",  # no T: not RFC 3339
    ]
    for raw in kept:
        assert container_lines_decoded(raw) == raw, raw
        assert strip_controls(raw) == raw, raw


def test_bad_input_never_raises():
    for raw in (b'{"log":"\\ud800\\n"}', b'{"log":"\xff\xfe\\n"}', b'{"log":"' + b"\\" * 9 + b'"}', b"\n" * 3,
                b'{"log":"a\\nb\\n"}'):
        strip_controls(raw)
    # another writer's inner line break stays inside its line, as a segment
    assert strip_controls(b'{"log":"a\\nb\\n","stream":"stdout","time":"2024-01-09T18:41Z"}\n') == b"a\rb\n"


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def test_a_failure_in_a_json_file_log_is_found_at_its_file_line(tmp_path, catalogue):
    path = tmp_path / "c-json.log"
    lines = [docker_line("config: " + "x" * 20000, stream="stdout", last=False),
             docker_line("", stream="stdout"),
             docker_line("Traceback (most recent call last):"),
             docker_line('  File "/w/eval.py", line 13, in <module>'),
             docker_line("    print(results.get(timeout=2))"),
             docker_line("_queue.Empty")]
    path.write_bytes(b"\n".join(lines) + b"\n")
    found = [(f.rule, f.line) for f in scan_paths([str(path)], catalogue)
             if f.severity is not Severity.NOTICE]
    assert found == [("queue-empty-uncaught", 6)]


# Healthy runs full of failure words: stored by either writer they must stay clean. (A GitHub step log's
# stamps are the runner's, outside any container: the program's own lines are stored.)
HEALTHY = ("negative/torch-timeout-tests.log", "negative/nccl-info-chatter.log",
           "negative/pytest-innocent.log")
RUNNER_STAMP = b"^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{7}Z "


def _program_lines(name):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "fixtures" / name).read_bytes()
    return [re.sub(RUNNER_STAMP, b"", line) for line in text.split(b"\n")[:-1] if not line.startswith(b"#! ")]


@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_run_stays_clean_in_either_file(name, tmp_path, catalogue):
    lines = _program_lines(name)
    docker = b"\n".join(docker_line(line.decode("utf-8", "replace"), stream="stdout") for line in lines)
    cri = b"\n".join(b"2024-01-09T18:41:23.%dZ stdout F %s" % (100 + n, line) for n, line in enumerate(lines))
    for stored, body in (("json.log", docker), ("cri.log", cri)):
        path = tmp_path / stored
        path.write_bytes(body + b"\n")
        found = [f for f in scan_paths([str(path)], catalogue) if f.severity is not Severity.NOTICE]
        assert found == [], stored

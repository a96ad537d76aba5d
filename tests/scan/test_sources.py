"""Every input form: file, directory (recursed, stable order), stdin, .gz, GitHub's run-log .zip."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zipfile

import pytest

from analyzer.errors import InputError
from analyzer.scan.sources import iter_sources
from tests.scan.test_engine_helpers import ids_lines, scan, write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TS = "2024-01-09T18:41:23.1234567Z "


def read_all(source) -> bytes:
    with source.open() as stream:
        return stream.read()


def test_plain_file(tmp_path):
    path = write(tmp_path, "job.log", b"one\nSegmentation fault\n")
    [source] = list(iter_sources([path]))
    assert source.display_path == path
    assert read_all(source) == b"one\nSegmentation fault\n"
    assert ids_lines(scan([path])) == [("segv", 2)]


def test_directory_is_recursed_in_a_stable_natural_order(tmp_path):
    for rel in ("b/10_late.txt", "b/2_early.txt", "a.log", "c/sub/x.log", "b/1_first.txt"):
        os.makedirs(os.path.dirname(os.path.join(str(tmp_path), rel)) or str(tmp_path), exist_ok=True)
        write(tmp_path, rel, b"Segmentation fault\n")
    root = str(tmp_path)
    paths = [s.display_path for s in iter_sources([root])]
    assert paths == [os.path.join(root, rel) for rel in (
        "a.log", "b/1_first.txt", "b/2_early.txt", "b/10_late.txt", "c/sub/x.log",
    )]
    matches = scan([root])
    assert [m.path for m in matches] == paths
    assert [m.seq for m in matches] == list(range(5))


def test_arguments_keep_their_order(tmp_path):
    first = write(tmp_path, "z.log", b"Segmentation fault\n")
    second = write(tmp_path, "a.log", b"Segmentation fault\n")
    assert [m.path for m in scan([first, second])] == [first, second]


def test_gz_is_streamed(tmp_path):
    path = os.path.join(str(tmp_path), "job.log.gz")
    with gzip.open(path, "wb") as f:
        f.write(b"noise\n" * 50000 + b"Segmentation fault (core dumped)\n")
    matches = scan([path])
    assert [(m.path, m.line) for m in matches] == [(path, 50001)]


def _github_zip(path: str, with_steps: bool) -> None:
    job_log = (
        f"{TS}##[group]Run pytest\n{TS}collected 3 items\n{TS}Segmentation fault (core dumped)\n"
        f"{TS}##[error]Process completed with exit code 139.\n"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("1_test (3.11, gpu).txt", job_log)
        archive.writestr("2_lint.txt", f"{TS}ok\n")
        if with_steps:
            archive.writestr("test (3.11, gpu)/1_Set up job.txt", f"{TS}Current runner version: '2.311.0'\n")
            archive.writestr("test (3.11, gpu)/2_Run tests.txt", job_log)
            archive.writestr("test (3.11, gpu)/10_Complete job.txt", f"{TS}Cleaning up orphan processes\n")
            archive.writestr("test (3.11, gpu)/system.txt", "runner: gpu-1\n")


def test_github_zip_with_step_files_reports_each_event_once_from_the_step(tmp_path):
    path = os.path.join(str(tmp_path), "logs_123.zip")
    _github_zip(path, with_steps=True)
    names = [s.display_path for s in iter_sources([path])]
    assert names == [
        f"{path}!2_lint.txt",
        f"{path}!test (3.11, gpu)/1_Set up job.txt",
        f"{path}!test (3.11, gpu)/2_Run tests.txt",
        f"{path}!test (3.11, gpu)/10_Complete job.txt",
        f"{path}!test (3.11, gpu)/system.txt",
    ]
    matches = scan([path])
    assert [(m.path, m.line) for m in matches] == [(f"{path}!test (3.11, gpu)/2_Run tests.txt", 3)]


def test_github_zip_without_step_files_uses_the_job_file(tmp_path):
    path = os.path.join(str(tmp_path), "logs_124.zip")
    _github_zip(path, with_steps=False)
    matches = scan([path])
    assert [(m.path, m.line, m.excerpt) for m in matches] == [
        (f"{path}!1_test (3.11, gpu).txt", 3, f"{TS}Segmentation fault (core dumped)"),
    ]


def test_stdin_through_a_real_pipe():
    code = (
        "from analyzer.scan.engine import iter_matches\n"
        "from analyzer.scan.sources import iter_sources\n"
        "from tests.scan.test_engine_helpers import CATALOGUE\n"
        "for m in iter_matches(iter_sources(['-']), CATALOGUE, 'python'):\n"
        "    print(m.path, m.line, m.rule.id)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input=b"\xef\xbb\xbfhello\n\x1b[31mSegmentation fault\x1b[0m\n",
        capture_output=True, cwd=ROOT, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().splitlines() == ["- 2 segv"]


def test_missing_path_is_an_input_error_naming_it(tmp_path):
    missing = os.path.join(str(tmp_path), "nope.log")
    with pytest.raises(InputError) as err:
        list(iter_sources([missing]))
    assert str(err.value) == f"{missing}: no such file or directory"


def test_empty_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="directory holds no log files"):
        list(iter_sources([str(tmp_path)]))


def test_corrupt_zip_is_an_input_error(tmp_path):
    path = write(tmp_path, "logs.zip", b"PK\x03\x04 this is not really a zip")
    with pytest.raises(InputError) as err:
        list(iter_sources([path]))
    assert str(err.value).startswith(f"{path}: not a readable zip archive")
    assert "\n" not in str(err.value)


def test_corrupt_gz_is_an_input_error_when_read(tmp_path):
    path = write(tmp_path, "job.log.gz", b"\x1f\x8b\x08\x00garbage that is not deflate")
    with pytest.raises(InputError) as err:
        scan([path])
    assert str(err.value).startswith(f"{path}: cannot read:")


def test_truncated_gz_is_an_input_error(tmp_path):
    data = gzip.compress(b"Segmentation fault\n" * 1000)
    path = write(tmp_path, "cut.log.gz", data[: len(data) // 2])
    with pytest.raises(InputError, match="cut.log.gz: cannot read"):
        scan([path])


def test_zip_member_with_a_bad_crc_is_an_input_error(tmp_path):
    path = os.path.join(str(tmp_path), "logs.zip")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("1_job.txt", b"Segmentation fault\n" * 10)
    data = bytearray(open(path, "rb").read())
    at = data.index(b"Segmentation")
    data[at] = ord("Z")  # the stored bytes no longer match the CRC in the header
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(InputError, match="1_job.txt: cannot read"):
        scan([path])


def test_directory_dispatches_gz_and_zip_inside_it(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), "logs"))
    with gzip.open(os.path.join(str(tmp_path), "logs", "a.log.gz"), "wb") as f:
        f.write(b"Segmentation fault\n")
    with zipfile.ZipFile(os.path.join(str(tmp_path), "logs", "b.zip"), "w") as archive:
        archive.writestr("1_job.txt", "ok\nSegmentation fault\n")
    root = os.path.join(str(tmp_path), "logs")
    assert [(m.path, m.line) for m in scan([root])] == [
        (os.path.join(root, "a.log.gz"), 1), (os.path.join(root, "b.zip") + "!1_job.txt", 2),
    ]

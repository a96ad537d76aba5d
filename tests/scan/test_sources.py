"""Every input form: file, directory (recursed, stable order), stdin, .gz, GitHub's run-log .zip; and what
cannot be scanned (issue 10.10): duplicate zip members, unreadable files inside a directory, devices and
FIFOs, file names that are not UTF-8."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import warnings
import zipfile

import pytest

from analyzer.errors import InputError
from analyzer.scan.sources import Unscannable, iter_sources
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


def test_only_a_run_archives_job_and_step_logs_are_known_not_to_be_terminal_copies(tmp_path):
    # The runner wrote them (no terminal cut or indented them): the engine skips its copy reading there.
    path = os.path.join(str(tmp_path), "logs_125.zip")
    _github_zip(path, with_steps=True)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("pasted/train.log", "Segmentation fault (core dumped)\n")
    wrapped = {s.display_path.split("!", 1)[1]: s.may_be_wrapped for s in iter_sources([path])}
    assert wrapped == {
        "2_lint.txt": False,
        "test (3.11, gpu)/1_Set up job.txt": False,
        "test (3.11, gpu)/2_Run tests.txt": False,
        "test (3.11, gpu)/10_Complete job.txt": False,
        "test (3.11, gpu)/system.txt": True,
        "pasted/train.log": True,
    }


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
    with pytest.raises(InputError, match="directory holds no readable log files"):
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


# ---- issue 10.10: archives, directories, devices ---------------------------------------------------


def _cli(args, **kwargs):
    """``python -m analyzer --format json ARGS`` as a subprocess; (exit, parsed stdout or text, stderr)."""
    prefix = kwargs.pop("prefix", [])
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "analyzer", "--format", "json", *args],
        cwd=ROOT, capture_output=True, timeout=120, **kwargs,
    )
    out = done.stdout.decode("utf-8", "backslashreplace")
    return done.returncode, (json.loads(out) if out.startswith("{") else out), done.stderr.decode()


def _without_dac_override():
    """A command prefix under which even root gets "permission denied" on a mode-000 file."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv: cannot make a file unreadable for real")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def _incomplete(report):
    return [
        (f["path"], f["line"], f["message"]) for f in report["findings"] if f["kind"] == "scan-incomplete"
    ]


def test_a_zip_with_two_members_of_the_same_name_scans_both(tmp_path):
    path = os.path.join(str(tmp_path), "logs.zip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name"; a re-uploaded log does this
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("1_job.txt", "first attempt\nSegmentation fault\n")
            archive.writestr("2_other.txt", "ok\n")
            archive.writestr("1_job.txt", "second attempt\nok\nFatal Python error: Aborted\n")
    names = [s.display_path for s in iter_sources([path])]
    assert names == [f"{path}!1_job.txt", f"{path}!1_job.txt#2", f"{path}!2_other.txt"]
    assert [read_all(s) for s in iter_sources([path])][:2] == [
        b"first attempt\nSegmentation fault\n", b"second attempt\nok\nFatal Python error: Aborted\n",
    ]
    found = [(m.path, m.line) for m in scan([path])]
    assert found == [(f"{path}!1_job.txt", 2), (f"{path}!1_job.txt#2", 3)]


def test_odd_zip_member_names_are_carried_through(tmp_path):
    path = os.path.join(str(tmp_path), "logs.zip")
    odd = ["../../etc/passwd.txt", "a\nb.txt", "caf\u00e9/\u65e5\u672c.txt", " .txt", "x" * 300]
    with zipfile.ZipFile(path, "w") as archive:
        for name in odd:
            archive.writestr(name, "Segmentation fault\n")
    assert sorted(m.path for m in scan([path])) == sorted(f"{path}!{name}" for name in odd)


def _tree_with_an_unreadable_file(tmp_path):
    root = os.path.join(str(tmp_path), "logs")
    os.makedirs(os.path.join(root, "deep", "er"))
    write(tmp_path, "logs/a.log", b"Segmentation fault\n")
    secret = write(tmp_path, "logs/deep/er/secret.log", b"Fatal Python error: Aborted\n")
    os.chmod(secret, 0)
    write(tmp_path, "logs/z.log", b"Fatal Python error: Aborted\n")
    return root, secret


def test_an_unreadable_file_deep_in_a_directory_is_a_warning_and_the_rest_is_scanned(tmp_path):
    root, secret = _tree_with_an_unreadable_file(tmp_path)
    code, report, err = _cli([root], prefix=_without_dac_override())
    assert (code, err) == (1, "")
    assert _incomplete(report) == [
        (secret, 0, f"part of the input was not scanned: {secret}: cannot read: permission denied; skipped")
    ]
    assert {f["path"] for f in report["findings"] if f["severity"] == "error"} == {
        os.path.join(root, "a.log"), os.path.join(root, "z.log"),
    }


def test_an_unreadable_file_named_on_the_command_line_is_still_exit_2(tmp_path):
    _, secret = _tree_with_an_unreadable_file(tmp_path)
    assert _cli([secret], prefix=_without_dac_override()) == (
        2, "", f"python -m analyzer: error: {secret}: cannot read: permission denied\n",
    )


def test_an_unreadable_folder_and_broken_links_inside_a_directory_are_warnings(tmp_path):
    root = os.path.join(str(tmp_path), "logs")
    os.makedirs(os.path.join(root, "locked"))
    write(tmp_path, "logs/locked/hidden.log", b"Segmentation fault\n")
    os.chmod(os.path.join(root, "locked"), 0)
    os.symlink("nowhere.log", os.path.join(root, "broken.log"))
    os.symlink("loop.log", os.path.join(root, "loop.log"))
    write(tmp_path, "logs/ok.log", b"Segmentation fault\n")
    code, report, err = _cli([root], prefix=_without_dac_override())
    assert (code, err) == (1, "")
    reasons = {path: message.split(": ", 1)[1] for path, _, message in _incomplete(report)}
    assert reasons == {
        f"{root}/broken.log": f"{root}/broken.log: cannot read: no such file or directory; skipped",
        f"{root}/loop.log": f"{root}/loop.log: cannot read: too many levels of symbolic links; skipped",
        f"{root}/locked": f"{root}/locked: cannot read: permission denied; skipped",
    }
    assert [f["path"] for f in report["findings"] if f["kind"] == "crash"] == [os.path.join(root, "ok.log")]


def test_dev_zero_named_on_the_command_line_is_skipped_with_a_warning(tmp_path):
    log = write(tmp_path, "job.log", b"Segmentation fault\n")
    code, report, err = _cli(["/dev/zero", log])
    assert (code, err) == (1, "")
    assert _incomplete(report) == [(
        "/dev/zero", 0,
        "part of the input was not scanned: /dev/zero is a character device, not a log file; skipped "
        "(standard input is read as -)",
    )]
    assert [f["path"] for f in report["findings"] if f["kind"] == "crash"] == [log]


def test_a_fifo_in_a_directory_or_on_the_command_line_is_skipped_not_waited_on(tmp_path):
    root = os.path.join(str(tmp_path), "logs")
    os.makedirs(root)
    fifo = os.path.join(root, "pipe.log")
    os.mkfifo(fifo)  # nobody ever writes to it: opening it for reading would block forever
    write(tmp_path, "logs/real.log", b"ok\n")
    sources = list(iter_sources([root, fifo]))
    assert [(s.display_path, s.skipped) for s in sources] == [
        (fifo, f"{fifo} is a FIFO (named pipe), not a log file; skipped (standard input is read as -)"),
        (os.path.join(root, "real.log"), None),
        (fifo, f"{fifo} is a FIFO (named pipe), not a log file; skipped (standard input is read as -)"),
    ]
    with pytest.raises(Unscannable):
        sources[0].open()
    code, report, err = _cli([root])
    assert (code, err) == (0, "")
    assert [path for path, _, _ in _incomplete(report)] == [fifo]


def test_a_directory_of_nothing_but_devices_is_an_input_error_after_its_warnings(tmp_path):
    root = os.path.join(str(tmp_path), "logs")
    os.makedirs(root)
    os.mkfifo(os.path.join(root, "pipe"))
    with pytest.raises(InputError) as err:
        list(iter_sources([root]))
    assert str(err.value) == f"{root}: directory holds no readable log files (1 skipped, see above)"


NON_UTF8_NAMES = [b"caf\xe9.log", b"\xff\xfe.log", b"tab\tand\x1b[31mred.log", b"ok-\xe2\x82\xac.log"]


def test_file_names_that_are_not_utf8_survive_as_display_paths(tmp_path):
    root = os.fsencode(os.path.join(str(tmp_path), "logs"))
    os.makedirs(root)
    for name in NON_UTF8_NAMES:
        with open(os.path.join(root, name), "wb") as handle:
            handle.write(b"Segmentation fault\n")
    sources = list(iter_sources([os.fsdecode(root)]))
    assert sorted(os.fsencode(s.display_path) for s in sources) == sorted(
        os.path.join(root, name) for name in NON_UTF8_NAMES
    )
    assert all(read_all(s) == b"Segmentation fault\n" for s in sources)
    assert len(scan([os.fsdecode(root)])) == len(NON_UTF8_NAMES)
    # Named on the command line as bytes, too.
    (source,) = iter_sources([os.path.join(root, NON_UTF8_NAMES[1])])
    assert os.fsencode(source.display_path) == os.path.join(root, NON_UTF8_NAMES[1])

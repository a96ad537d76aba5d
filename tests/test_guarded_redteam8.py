"""A second red-team pass over the guarded run through the real CLI (session 8): a command that stops
the reader of the guard's console, plants links at the report's paths, or swaps the workflow files
for links, FIFOs and bombs. Real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_guarded_redteam import FILES
from tests.test_guarded_redteam import PLANTS as GUARD_PLANTS

BIN = Path(__file__).resolve().parent / "bin"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "gone"


def _report(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# -- a stopped reader of the guard's console cannot keep the report off the disk ----------------------

def test_a_command_that_stops_the_guards_reader_cannot_keep_the_report_off_the_disk(tmp_path):
    # The command SIGSTOPs the guard's parent (the runner, a tee) and floods: the console pipe fills.
    # The report files must be written all the same, and the guard must end, while the reader is stopped.
    report, summary = tmp_path / "report.json", tmp_path / "summary.md"
    reader = subprocess.Popen([
        sys.executable, str(BIN / "console_reader.py"),
        sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json", str(report),
        "--summary", str(summary), "--timeout", "2s", "--kill-grace", "1s",
        "--", sys.executable, str(BIN / "stop_the_reader.py"), "4",
    ])
    try:
        deadline, guard_state = time.monotonic() + 40, "not started"
        while time.monotonic() < deadline:
            guards = Path(f"/proc/{reader.pid}/task/{reader.pid}/children").read_text().split()
            guard_state = _state(int(guards[0])) if guards else guard_state
            if guard_state == "Z":
                break
            time.sleep(0.1)
        reader_state = _state(reader.pid)
        on_disk = _report(report)
        summary_text = summary.read_text() if summary.exists() else ""
    finally:
        os.kill(reader.pid, 18)  # SIGCONT
        status = reader.wait(60)
    assert reader_state == "T"  # the attack held the reader stopped all along
    assert guard_state == "Z"  # the guard ended (its parent, stopped, has not reaped it yet)
    assert on_disk is not None, "no report.json while the reader was stopped"
    assert on_disk["verdict"] == "fail" and on_disk["command"]["timed_out"], on_disk
    assert "Timed out" in summary_text or "timed out" in summary_text, summary_text
    assert status == 124


# -- the workflow files: file_commands itself never follows, blocks on or swallows what is planted -----

# The plants the guard-level tests use, and a link to a file of the user's that must stay untouched.
PLANTS = {**GUARD_PLANTS, "symlink-to-a-users-file": 'rm -f "$1"; ln -s "$VICTIM" "$1"',
          "hard-link-to-a-users-file": 'rm -f "$1"; ln "$VICTIM" "$1"'}
# PrivateFiles on its own, with no guard around it: the command's tree is a real shell that plants the
# thing once it has written its entries, then the guard's steps run in this order.
_PASS_FILES = """
import json, os, subprocess, sys
from analyzer.file_commands import PrivateFiles
files = PrivateFiles(os.environ, temp_root=sys.argv[1])
env = dict(os.environ, **dict(files.extra_env))
subprocess.run(["sh", "-c", sys.argv[2], "sh", env[sys.argv[3]] if sys.argv[3] in env
                else os.environ[sys.argv[3][5:]]], env=env, check=True)
warnings = files.restore() + files.pass_through(("verdict",))
with open(os.environ["GITHUB_STEP_SUMMARY"], "ab") as handle:
    handle.write(b"the guard's summary\\n")
warnings += files.pass_summary()
files.close()
print(json.dumps(warnings))
"""


@pytest.mark.parametrize("plant", sorted(PLANTS))
@pytest.mark.parametrize("which", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "real:GITHUB_OUTPUT",
                                   "real:GITHUB_STEP_SUMMARY"])
def test_the_workflow_files_are_read_and_written_only_as_the_plain_files_they_were(tmp_path, which, plant):
    # Read through a link the command would pass a file of the user's on to the job's outputs (or the
    # runner's reads of /dev/zero); a FIFO blocks the open for good; an 8 GiB sparse file is read into
    # memory; and a restore through a link truncates the user's file to what the real file held.
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret=42\n")
    real = {name: tmp_path / "runner" / name.lower() for name in FILES}
    real["GITHUB_OUTPUT"].parent.mkdir()
    for path in real.values():
        path.write_bytes(b"")
    script = 'echo coverage=87 >> "$GITHUB_OUTPUT"; echo "# mine" >> "$GITHUB_STEP_SUMMARY"; ' + PLANTS[plant]
    env = dict(os.environ, VICTIM=str(victim), **{name: str(path) for name, path in real.items()})
    proc = subprocess.run([sys.executable, "-c", _PASS_FILES, str(tmp_path), script, which],
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)
    assert victim.read_bytes() == b"secret=42\n"
    name = which.split(":")[-1]
    for path in real.values():
        assert path.is_file() and not path.is_symlink(), path
        assert b"secret" not in path.read_bytes() and path.stat().st_size < 1 << 20
    if which.startswith("real:") and plant == "sparse-8-gib":
        assert any(f"the real ${name} file directly" in w for w in warnings), warnings
    elif which.startswith("real:"):
        assert any(w.startswith(f"the real ${name} file was replaced with a") for w in warnings), warnings
    else:
        assert any(w.startswith(f"the command's ${name} file was") and w.endswith("its entries are ignored")
                   for w in warnings), warnings
    if which == "GITHUB_STEP_SUMMARY":
        assert real["GITHUB_OUTPUT"].read_bytes() == b"coverage=87\n"


# -- a link the command plants at a report path is not followed ---------------------------------------

@pytest.mark.parametrize("option", ["--json", "--summary", "--github-output"])
@pytest.mark.parametrize("target", ["a-users-file", "/dev/null", "hard:a-users-file"])
def test_a_link_planted_at_a_report_path_is_replaced_not_followed(tmp_path, option, target):
    # Followed, the link makes the guard overwrite (or append to) a file of the user's, or lose the
    # report for the later steps (/dev/null). The runner never reuses what is at a file command's path
    # (FileCommandManager.InitializeFiles deletes it, then creates the file): the guard neither.
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me\n")
    report = tmp_path / "out" / "report"
    report.parent.mkdir()
    report.write_text("")
    # A hard link is a second name of the user's file: written through, the report truncates it.
    link_to = str(victim) if target.endswith("a-users-file") else target
    ln = "ln" if target.startswith("hard:") else "ln -s"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), option, str(report),
         "--", "sh", "-c", f'rm -f "{report}"; {ln} "{link_to}" "{report}"'],
        capture_output=True, timeout=60,
    )
    assert proc.returncode == 0, proc
    assert victim.read_bytes() == b"keep me\n"
    assert report.is_file() and not report.is_symlink()
    written = report.read_text()
    assert ('"verdict": "pass"' if option == "--json" else "pass") in written.lower(), written
    [warning] = proc.stderr.decode().splitlines()
    kind = "hard link" if target.startswith("hard:") else "symlink"
    assert warning == (f"python -m analyzer: warning: {option} {report}: was replaced with a {kind} during "
                       "the run; the guard removed the link and wrote a new file"), warning


@pytest.mark.parametrize("kind", ["symlink", "hard link"])
def test_a_link_the_user_gave_as_a_report_path_is_still_followed(tmp_path, kind):
    # `--json /dev/stdout`, or a link the user made before the run: theirs to choose.
    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    if kind == "symlink":
        link.symlink_to(real)
    else:
        real.write_text("")
        os.link(real, link)
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json", str(link),
         "--", "true"], capture_output=True, timeout=60,
    )
    assert (proc.returncode, proc.stderr) == (0, b""), proc
    assert link.is_symlink() == (kind == "symlink") and json.loads(real.read_text())["verdict"] == "pass"


# -- a log dir where the kernel refuses O_TMPFILE: the report says the logs are not kept privately -----

_SECCOMP_SET_MODE_FILTER, _SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 1, 0x7FFF0000, 0x00050000
_AUDIT_ARCH_X86_64, _NR_OPENAT, _O_TMPFILE_BIT, _EOPNOTSUPP = 0xC000003E, 257, 0o20000000, 95


def _no_o_tmpfile() -> None:
    """In the child before exec: openat(2) with O_TMPFILE fails EOPNOTSUPP, as the kernel answers for a
    file system without ``tmpfile`` (overlayfs before 6.6, NFS). A seccomp filter, not the real
    file system: none without O_TMPFILE can be mounted here (no libfuse; tmpfs, ramfs, ext4 have it)."""
    import ctypes

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
    code = [
        (ld, 0, 0, 4), (jeq, 0, 4, _AUDIT_ARCH_X86_64),  # seccomp_data.arch
        (ld, 0, 0, 0), (jeq, 0, 2, _NR_OPENAT),  # .nr
        (ld, 0, 0, 32), (jset, 1, 0, _O_TMPFILE_BIT),  # low word of .args[2], the flags
        (ret, 0, 0, _SECCOMP_RET_ALLOW), (ret, 0, 0, _SECCOMP_RET_ERRNO | _EOPNOTSUPP),
    ]
    filters = (Filter * len(code))(*[Filter(*c) for c in code])
    program = Program(len(code), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.syscall(317, _SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(program)) != 0:  # seccomp(2)
        raise OSError(ctypes.get_errno(), "seccomp")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is written for x86_64")
@pytest.mark.parametrize("tmpfile", ["refused", "supported"])
def test_a_log_dir_without_o_tmpfile_is_said_in_the_report(tmp_path, tmpfile):
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"),
         "--json", str(tmp_path / "report.json"), "--", "sh", "-c", "echo hello"],
        capture_output=True, timeout=60, preexec_fn=_no_o_tmpfile if tmpfile == "refused" else None,
    )
    assert proc.returncode == 0, proc
    report = json.loads((tmp_path / "report.json").read_text())
    titles = [d["title"] for d in report["diagnostics"]]
    said = "The logs could not be kept privately: a log rewritten in place goes unnoticed" in titles
    assert said == (tmpfile == "refused"), titles
    assert (tmp_path / "logs" / "stdout.log").read_bytes() == b"hello\n"


# -- on a terminal, the command's escape sequences cannot hide the guard's report ---------------------

def test_a_command_that_conceals_the_terminal_cannot_hide_the_guards_report(tmp_path):
    # SGR 8 (conceal) and black on black left set by the command's last output: in a terminal the
    # guard's "Failed" would print invisibly under a forged "Passed". A real pty, the guard on it.
    from tests.test_guarded_redteam10 import on_a_pty

    code, out = on_a_pty([sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--",
                          sys.executable, str(BIN / "forge_a_pass.py")])
    assert code == 1
    concealed, _, report = out.rpartition(b"\x1b[8m\x1b[30;40m")
    assert concealed, out
    assert b"\x1b[0m" in report and report.index(b"\x1b[0m") < report.index(b"Failed"), report


# -- a command that takes the last of the processes it shares with the guard ---------------------------

_PIDS_V1 = Path("/sys/fs/cgroup/pids")


@pytest.mark.skipif(os.geteuid() != 0 or not (_PIDS_V1 / "cgroup.procs").exists(),
                    reason="needs root and a cgroup-v1 pids hierarchy to limit the guard's processes")
def test_a_command_that_forks_to_the_limit_still_gets_a_report(tmp_path):
    # A runner user's RLIMIT_NPROC (or the job container's pids.max) counts the guard's threads too:
    # the guard could not start the thread of its GPU snapshot and died with a traceback, no report.
    limited = _PIDS_V1 / f"ghg-test-{os.getpid()}-{tmp_path.name}"
    limited.mkdir()
    try:
        (limited / "pids.max").write_text("64")
        proc = subprocess.run(
            [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"),
             "--json", str(tmp_path / "report.json"), "--timeout", "2s", "--kill-grace", "1s",
             "--", sys.executable, str(BIN / "fork_to_the_limit.py")],
            capture_output=True, timeout=90,
            preexec_fn=lambda: (limited / "cgroup.procs").write_text(str(os.getpid())),
        )
    finally:
        deadline = time.monotonic() + 30
        while (limited / "cgroup.procs").read_text().split() and time.monotonic() < deadline:
            time.sleep(0.1)
        limited.rmdir()
    assert "fork refused" in (tmp_path / "logs" / "stdout.log").read_text()
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    assert proc.returncode == 124, proc
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["command"]["timed_out"] and report["command"]["leftover_pids"] == []

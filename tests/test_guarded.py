"""The guarded run end to end: the live scan, --abort-on, checks before the command starts, and what the
command can no longer reach (the guard's imports, the action's variables). Real processes throughout."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import pytest

from analyzer.guarded import ACTION_VARIABLES, _Follow, _LiveLog, parse_abort_kinds
from analyzer.model import Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import pipeline

REPO = Path(__file__).resolve().parents[1]
CATALOGUE = REPO / "analyzer" / "rules" / "catalogue.yaml"


def _catalogue_example(rule_id: str) -> str:
    """The first ``match`` example of a catalogue rule: a real wording the rule was written for."""
    rule = next(r for r in load_catalogue().rules if r.id == rule_id)
    return rule.examples_match[0]


WATCHDOG_LINE = _catalogue_example("nccl-watchdog-timeout")


def run_guard(
    *args: str, cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = 120
) -> Tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", *args],
        capture_output=True,
        cwd=str(cwd),
        env=env,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def write_program(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    return path


# -- --abort-on -----------------------------------------------------------------------------------------

def test_abort_on_ends_a_command_that_hangs_after_an_nccl_watchdog_timeout(tmp_path: Path):
    prog = write_program(
        tmp_path,
        f"""
        import sys, time
        print("step 1 ok", flush=True)
        print({WATCHDOG_LINE!r}, file=sys.stderr, flush=True)
        time.sleep(300)  # the rank hangs on, as ranks do after their watchdog fired
        """,
    )
    started = time.monotonic()
    code, out, err = run_guard(
        "--abort-on", "timeout,crash", "--abort-grace", "1s", "--timeout", "200s", "--kill-grace", "2s",
        "--json", "r.json", "--", sys.executable, str(prog), cwd=tmp_path,
    )
    took = time.monotonic() - started
    assert code == 124, (out, err)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "fail"
    assert report["command"]["timed_out"] is True
    assert report["command"]["timeout_reason"] == "aborted"
    hang = next(f for f in report["findings"] if f["kind"] == "hang")
    assert hang["rule"] == "guard-aborted"
    assert "NCCL watchdog" in hang["message"] and "stderr.log:1" in hang["message"]
    watchdog = next(f for f in report["findings"] if f["rule"] == "nccl-watchdog-timeout")
    assert watchdog["path"].endswith("stderr.log") and watchdog["line"] == 1
    assert took < 150, took  # not the 200 s wall timeout: the abort ended it (generous bound)


def test_abort_grace_lets_a_command_that_ends_by_itself_end(tmp_path: Path):
    prog = write_program(
        tmp_path,
        f"""
        import sys, time
        print({WATCHDOG_LINE!r}, flush=True)
        time.sleep(0.5)
        sys.exit(3)
        """,
    )
    code, out, err = run_guard(
        "--abort-on", "timeout", "--abort-grace", "60s", "--json", "r.json", "--", sys.executable, str(prog),
        cwd=tmp_path,
    )
    assert code == 3, (out, err)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["command"]["timed_out"] is False and report["command"]["timeout_reason"] is None
    assert [f["rule"] for f in report["findings"]][:1] == ["nccl-watchdog-timeout"]
    assert not [f for f in report["findings"] if f["rule"] == "guard-aborted"]


def test_abort_on_waits_only_for_the_kinds_it_names(tmp_path: Path):
    prog = write_program(
        tmp_path,
        f"""
        import time
        print({WATCHDOG_LINE!r}, flush=True)
        time.sleep(300)
        """,
    )
    code, out, err = run_guard(
        "--abort-on", "crash", "--abort-grace", "0s", "--timeout", "2s", "--kill-grace", "1s",
        "--json", "r.json", "--", sys.executable, str(prog), cwd=tmp_path,
    )
    assert code == 124, (out, err)
    assert json.loads((tmp_path / "r.json").read_text())["command"]["timeout_reason"] == "wall"


@pytest.mark.parametrize(
    "option, value, needle",
    [
        ("--abort-on", "timeout,hang-ish", "hang-ish"),
        ("--abort-on", "Timeout", "Timeout"),
        ("--abort-grace", "soon", "--abort-grace"),
    ],
)
def test_a_bad_abort_option_is_a_one_line_error_before_the_command_runs(tmp_path, option, value, needle):
    marker = tmp_path / "ran"
    code, out, err = run_guard(option, value, "--", "touch", str(marker), cwd=tmp_path)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith("python -m analyzer: error: ") and needle in err
    assert not marker.exists()


def test_abort_kinds_parse_to_the_contract_kinds():
    assert parse_abort_kinds(None) == frozenset()
    kinds = parse_abort_kinds(" timeout , worker-failure,crash")
    assert kinds == {Kind.TIMEOUT, Kind.WORKER_FAILURE, Kind.CRASH}


# -- report paths are checked before anything runs -----------------------------------------------------

@pytest.mark.parametrize("option", ["--json", "--summary", "--github-output"])
@pytest.mark.parametrize("where", ["missing-dir", "a-directory"])
def test_a_report_path_that_cannot_be_written_fails_before_the_command_runs(tmp_path, option, where):
    target = tmp_path / "no" / "such" / "r.out" if where == "missing-dir" else tmp_path
    marker = tmp_path / "ran"
    code, out, err = run_guard(option, str(target), "--", "touch", str(marker), cwd=tmp_path)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and f"{option} {target}" in err and "Traceback" not in err
    assert not marker.exists()
    assert not (tmp_path / "guard-logs").exists()


def test_new_report_files_in_an_existing_directory_are_fine(tmp_path):
    code, out, err = run_guard(
        "--json", "new.json", "--summary", "new.md", "--github-output", "new.out", "--", "true", cwd=tmp_path
    )
    assert code == 0, (out, err)
    assert json.loads((tmp_path / "new.json").read_text())["verdict"] == "pass"


# -- the live scan ---------------------------------------------------------------------------------------

def test_findings_of_both_streams_are_in_the_report_when_the_command_ends(tmp_path: Path):
    prog = write_program(
        tmp_path,
        f"""
        import sys
        for i in range(20000):
            print(f"tests/test_ddp.py::test_all_reduce[{{i}}] PASSED", flush=i % 1000 == 0)
        print({WATCHDOG_LINE!r}, file=sys.stderr, flush=True)
        print("RuntimeError: CUDA error: an illegal memory access was encountered", flush=True)
        """,
    )
    code, out, err = run_guard("--json", "r.json", "--", sys.executable, str(prog), cwd=tmp_path)
    assert code == 1, (out, err)
    findings = json.loads((tmp_path / "r.json").read_text())["findings"]
    where = {(Path(f["path"]).name, f["line"]) for f in findings}
    assert ("stderr.log", 1) in where
    assert ("stdout.log", 20001) in where
    assert not [f for f in findings if f["kind"] == "scan-incomplete"]


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def _log(tmp_path: Path, lines: Sequence[bytes]) -> Tuple[Path, int]:
    path = tmp_path / "stdout.log"
    path.write_bytes(b"".join(lines))
    return path, os.open(str(path), os.O_RDONLY)


def test_the_follower_reads_only_what_the_pump_reported_and_ends_after_the_final_total(tmp_path: Path):
    lines = [f"line {i}\n".encode() for i in range(1, 101)]
    path, fd = _log(tmp_path, lines)
    follow = _Follow(fd)
    got = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: follow.read(1 << 20), b"")))
    reader.start()
    first = sum(len(line) for line in lines[:40])
    follow.offer(first, 100.0)
    _wait(lambda: follow.read_bytes == first)
    assert reader.is_alive()  # caught up: it waits for more instead of reading past the reported total
    follow.offer(path.stat().st_size, 200.0)
    follow.finish()
    reader.join(30)
    assert not reader.is_alive()
    assert b"".join(got) == path.read_bytes()
    assert follow.lines == 100
    assert [follow.clock(line) for line in (1, 40, 41, 100)] == [100.0, 100.0, 200.0, 200.0]
    follow.close()


def test_line_clocks_stay_bounded_on_a_long_run(tmp_path: Path):
    path, fd = _log(tmp_path, [b"x\n"] * 100_000)
    follow = _Follow(fd)
    for i in range(1, 100_001):  # one line per pump chunk, one chunk every 0.1 s: 10,000 s of output
        follow.offer(2 * i, i * 0.1)
        if i % 1000 == 0:
            follow.read(1 << 20)
    follow.finish()
    while follow.read(1 << 20):
        pass
    assert len(follow.clock.times) <= 10_001
    assert follow.clock(1) <= follow.clock(50_000) <= follow.clock(100_000)
    assert abs(follow.clock(50_000) - 5000.0) < 10.0
    follow.close()


def test_a_scan_cut_short_says_how_far_it_got(tmp_path: Path):
    lines = [b"RuntimeError: CUDA error: an illegal memory access was encountered\n"] + [b"ok\n"] * 999
    path, fd = _log(tmp_path, lines)
    catalogue = load_catalogue()
    events = []
    live = _LiveLog(str(path), fd, catalogue, pipeline.engine_for(catalogue, "python"), events.append)
    half = sum(len(line) for line in lines[:500])
    live.follow.offer(half, 1.0)
    _wait(lambda: live.follow.read_bytes == half)
    live.follow.cut()  # time is up, and then the rest of the output is reported
    live.follow.offer(path.stat().st_size, 2.0)
    live.thread.join(30)
    finding = live.incomplete(Severity.WARNING)
    assert finding is not None and finding.kind is Kind.SCAN_INCOMPLETE
    assert finding.severity is Severity.WARNING
    assert f"read {half:,} of {path.stat().st_size:,} bytes (500 lines)" in finding.message
    assert [(e.kind, e.line) for e in events] == [(Kind.CRASH, 1)]  # what it read was scanned
    assert live.scan.result().path == str(path)


def test_a_log_read_to_its_end_is_not_incomplete(tmp_path: Path):
    path, fd = _log(tmp_path, [b"ok\n"] * 10)
    catalogue = load_catalogue()
    live = _LiveLog(str(path), fd, catalogue, pipeline.engine_for(catalogue, "python"), lambda f: None)
    live.follow.offer(path.stat().st_size, 1.0)
    live.follow.finish()
    live.thread.join(30)
    assert live.incomplete(Severity.WARNING) is None


# -- what the command can no longer reach ---------------------------------------------------------------

def test_the_action_variables_never_reach_the_command(tmp_path: Path):
    env = dict(os.environ, GHG_VENV=str(tmp_path / "venv"), GHG_REPORT="r.json", KEEP_ME="yes")
    code, out, err = run_guard(
        "--", sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))",
        cwd=tmp_path, env=env,
    )
    assert code == 0, err
    seen = json.loads((tmp_path / "guard-logs" / "stdout.log").read_text())
    assert "GHG_VENV" not in seen and "GHG_REPORT" not in seen
    assert seen["KEEP_ME"] == "yes"


def test_every_variable_the_action_gives_the_guard_is_kept_from_the_command():
    action = (REPO / "action.yml").read_text()
    guard_step = action.split("id: guard\n", 1)[1].split("run: |", 1)[0]  # its env: block
    named = set(re.findall(r"^\s+(GHG_[A-Z_]+):", guard_step, flags=re.MULTILINE))
    assert named and named <= set(ACTION_VARIABLES), sorted(named - set(ACTION_VARIABLES))


PLANT = """
import pathlib, sys
root = pathlib.Path(sys.argv[1])
for module in root.rglob("*.py"):
    with open(module, "a") as handle:
        handle.write("\\nopen(%r, 'a').write(__name__ + '\\\\n')\\n" % sys.argv[2])
print("planted", flush=True)
print(sys.argv[3], flush=True)  # a finding after the plant: the scan and ranking code paths all run
"""


def test_code_the_command_plants_in_the_guards_package_never_runs_inside_the_guard(tmp_path: Path):
    site = tmp_path / "site"
    shutil.copytree(REPO / "analyzer", site / "analyzer", ignore=shutil.ignore_patterns("__pycache__"))
    planted = tmp_path / "planted.txt"
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), GITHUB_ACTIONS="true")
    code, out, err = run_guard(
        "--format", "github", "--json", "r.json", "--summary", "s.md", "--github-output", "o.txt",
        "--abort-on", "crash", "--abort-grace", "60s",
        "--", sys.executable, "-c", PLANT, str(site / "analyzer"), str(planted), WATCHDOG_LINE,
        cwd=work, env=env,
    )
    assert code == 1, (out, err)
    assert "planted" in (work / "guard-logs" / "stdout.log").read_text()
    report = json.loads((work / "r.json").read_text())
    assert [f["rule"] for f in report["findings"]] == ["nccl-watchdog-timeout"]
    assert not planted.exists(), planted.read_text()
    # The control: the planted code does run in the next process that imports the package.
    importer = [sys.executable, "-c", "import analyzer.report.github"]
    subprocess.run(importer, env=env, cwd=str(work), check=True)
    assert "analyzer.report.github" in planted.read_text()


KILL_THE_WATCHER = """
import os, pathlib, signal, sys, time
keepalive = pathlib.Path(sys.argv[1]) / "supervise" / "keepalive.py"
future = "from __future__ import annotations\\n"
plant = "open(%r, 'a').write('watcher ran the planted file\\\\n')\\n" % sys.argv[2]
keepalive.write_text(keepalive.read_text().replace(future, future + plant, 1))
guard = os.getppid()
for entry in pathlib.Path("/proc").iterdir():
    if not entry.name.isdigit() or int(entry.name) == os.getpid():  # its own argv names the file too
        continue
    try:
        stat = (entry / "stat").read_bytes()
        cmdline = (entry / "cmdline").read_bytes()
    except OSError:
        continue
    if int(stat.rsplit(b")", 1)[1].split()[1]) == guard and b"keepalive.py" in cmdline:
        os.kill(int(entry.name), signal.SIGKILL)
        print("killed the watcher", flush=True)
time.sleep(3)  # the guard starts a new watcher at its next look, within a second
"""


def test_a_watcher_started_again_runs_the_code_read_before_the_command(tmp_path: Path):
    # The command rewrites the watcher's file in the guard's package and kills the watcher: the guard
    # starts a new one, which ran the rewritten file, outside the command's tree and containment.
    site = tmp_path / "site"
    shutil.copytree(REPO / "analyzer", site / "analyzer", ignore=shutil.ignore_patterns("__pycache__"))
    planted = tmp_path / "planted.txt"
    env = dict(os.environ, PYTHONPATH=str(site))
    code, out, err = run_guard(
        "--", sys.executable, "-c", KILL_THE_WATCHER, str(site / "analyzer"), str(planted),
        cwd=tmp_path, env=env,
    )
    assert "killed the watcher" in (tmp_path / "guard-logs" / "stdout.log").read_text(), (out, err)
    assert not planted.exists(), planted.read_text()


SPY = """
import sys
import analyzer.supervise.spawn as spawn
from analyzer import cli

before = {}
real_start = spawn.start

def start(*args, **kwargs):
    before["modules"] = set(sys.modules)
    return real_start(*args, **kwargs)

spawn.start = start
status = cli.main(sys.argv[1:])
# Built-in modules (gc on 3.9) come from the interpreter itself, not from a file anyone could change.
late = sorted(set(sys.modules) - before["modules"] - set(sys.builtin_module_names))
sys.stderr.write("LATE-IMPORTS:" + ",".join(late) + "\\n")
sys.exit(status)
"""


@pytest.mark.parametrize("outcome", ["exit", "timeout"])
def test_nothing_is_imported_after_the_command_started(tmp_path: Path, outcome: str):
    command = ["sh", "-c", "echo hi; exit 0"] if outcome == "exit" else ["sleep", "30"]
    proc = subprocess.run(
        [sys.executable, "-c", SPY, "run", "--timeout", "1s", "--kill-grace", "1s", "--format", "github",
         "--json", "r.json", "--summary", "s.md", "--github-output", "o.txt", "--", *command],
        capture_output=True, cwd=str(tmp_path), timeout=120,
        env=dict(os.environ, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(tmp_path / "gh-out")),
    )
    err = proc.stderr.decode()
    late = err.rsplit("LATE-IMPORTS:", 1)[1].strip()
    assert late == "", late


SCAN_SPY = """
import contextlib, io, sys
from analyzer import cli
from analyzer.gh.facts import facts_from_env  # noqa: F401 - what the guard imports before the command
from analyzer.guarded import GuardedRun  # noqa: F401
from analyzer.rules.loader import load_catalogue
from analyzer.supervise.guard import GuardOptions  # noqa: F401

load_catalogue(None)
cli._import_everything()
before = set(sys.modules)
engines, paths = sys.argv[1].split(","), sys.argv[2:]
for engine in engines:
    for fmt in ("json", "markdown", "github", "text"):
        with contextlib.redirect_stdout(io.StringIO()):
            cli.main(["--format", fmt, "--engine", engine, *paths])
late = sorted(set(sys.modules) - before - set(sys.builtin_module_names))
print("LATE-IMPORTS:" + ",".join(late))
"""


def test_a_scan_after_the_guards_imports_imports_nothing(tmp_path: Path):
    # The live scanner is forked from the guard once the command runs, and the final report is rendered
    # after it ran: any module a scan imports only when a log needs it must be in cli's list, or it
    # would be read from where the command could have written. A spread of the fixtures exercises the
    # scan's paths (candidates, tracebacks, tests, every renderer) on each engine this Python has.
    fixtures = sorted((REPO / "fixtures").rglob("*.log"))[::5]
    engines = "python,hyperscan" if importlib.util.find_spec("hyperscan") else "python"
    proc = subprocess.run(
        [sys.executable, "-c", SCAN_SPY, engines, *map(str, fixtures)],
        capture_output=True, cwd=str(tmp_path), timeout=600,
    )
    out = proc.stdout.decode()
    assert "LATE-IMPORTS:" in out, proc.stderr.decode()[-2000:]
    assert out.rsplit("LATE-IMPORTS:", 1)[1].strip() == ""


# -- the scanner process ----------------------------------------------------------------------------------

def _guarded(tmp_path: Path, argv: Sequence[str], **kwargs):
    from analyzer.guarded import GuardedRun
    from analyzer.supervise.guard import GuardOptions

    options = GuardOptions(argv=tuple(argv), log_dir=str(tmp_path / "logs"), echo=False)
    return GuardedRun(options, load_catalogue(), environ={}, **kwargs)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except OSError:
        return True


CRASH_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered"


@pytest.mark.parametrize("scan_process", [True, False])
def test_both_scanners_find_the_same_events_and_leave_nothing_running(tmp_path: Path, scan_process: bool):
    from analyzer import guarded

    prog = write_program(
        tmp_path,
        f"""
        import sys
        print("ok\\n" * 5000, end="", flush=True)
        print({WATCHDOG_LINE!r}, file=sys.stderr, flush=True)
        print({CRASH_LINE!r}, flush=True)
        """,
    )
    run = _guarded(tmp_path, [sys.executable, str(prog)], scan_process=scan_process)
    try:
        supervision = run.supervise()
        child = run._child
        assert (child is not None) == scan_process
        pid = child._field(guarded._PID_AT) if child is not None else None
        report = run.report(supervision)
    finally:
        run.close()
    where = [(Path(f.path).name, f.line) for f in report.findings]
    assert ("stderr.log", 1) in where and ("stdout.log", 5001) in where
    assert not [f for f in report.findings if f.kind is Kind.SCAN_INCOMPLETE]
    if pid is not None:
        _wait(lambda: _gone(pid))


def test_the_scanner_has_a_session_of_its_own_so_a_cpu_share_of_its_own(tmp_path: Path):
    # Autogroup scheduling shares the CPU between sessions first: a scanner in the guard's session halved
    # the pump's share and its own on a busy host (guard13). It leaves the guard's process group too.
    from analyzer import guarded

    run = _guarded(tmp_path, [sys.executable, "-c", "import time; time.sleep(0.5)"])
    try:
        supervision = run.supervise()
        pid = run._child._field(guarded._PID_AT)
        sessions = (os.getsid(pid), os.getpgid(pid))
        run.report(supervision)
    finally:
        run.close()
    assert sessions == (pid, pid) and os.getsid(0) != pid


def test_a_result_that_arrives_with_the_end_of_the_scanners_pipe_is_used(tmp_path: Path):
    # The scanner writes its result and exits, so the guard often reads the result and the pipe's end in
    # one poll; that result was dropped and the guard scanned both logs again (and, after a cancel,
    # reported them unscanned). Here the scanner is let finish and exit before the guard reads anything.
    from analyzer import guarded

    prog = write_program(tmp_path, f"print({CRASH_LINE!r}, flush=True)")
    run = _guarded(tmp_path, [sys.executable, str(prog)])
    try:
        supervision = run.supervise()
        child = run._child
        pid = child._field(guarded._PID_AT)
        guarded._FIELD.pack_into(child._shm, guarded._STATE_AT, guarded._FINISH)
        _wait(lambda: _gone(pid))
        report = run.report(supervision)
        assert run._logs == {}, "the guard scanned the logs itself: the scanner's result was lost"
    finally:
        run.close()
    crashes = [(Path(f.path).name, f.line) for f in report.findings if f.kind is Kind.CRASH]
    assert crashes == [("stdout.log", 1)]


ATTACK_THE_SCANNER = textwrap.dedent(
    """
    import os, sys, time
    guard = os.getppid()
    me = open(f"/proc/{guard}/cmdline", "rb").read()
    hit = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (guard, os.getpid()):
            continue
        try:
            if open(f"/proc/{entry}/cmdline", "rb").read() != me:
                continue
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:  # every pipe the scanner holds gets a forged frame and junk
            path = f"/proc/{entry}/fd/{fd}"
            try:
                if not os.readlink(path).startswith("pipe:"):
                    continue
                out = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                os.write(out, (40).to_bytes(4, "big") + b"x" * 72 + b"\\x01" * 17)
                os.close(out)
                hit += 1
            except OSError:
                pass
    print(f"pipes attacked: {hit}", flush=True)
    time.sleep(0.3)
    print(sys.argv[1], flush=True)
    """
)


def test_a_command_that_forges_frames_on_the_scanners_pipes_still_gets_its_crash_reported(tmp_path: Path):
    prog = tmp_path / "attack.py"
    prog.write_text(ATTACK_THE_SCANNER)
    code, out, err = run_guard("--json", "r.json", "--", sys.executable, str(prog), CRASH_LINE, cwd=tmp_path)
    assert code == 1, (out, err)
    log = (tmp_path / "guard-logs" / "stdout.log").read_text()
    if os.geteuid() == 0:
        assert "pipes attacked: 0" not in log  # the attack reached the scanner (root may open its fds)
    else:
        assert "pipes attacked: 0" in log  # the scanner is forked from a non-dumpable guard
    report = json.loads((tmp_path / "r.json").read_text())
    assert [f["line"] for f in report["findings"] if f["path"].endswith("stdout.log")] == [2]


def test_findings_of_stdout_and_stderr_are_ordered_by_when_their_lines_arrived(tmp_path: Path):
    prog = write_program(
        tmp_path,
        """
        import sys, time
        print("RuntimeError: CUDA error: an illegal memory access was encountered", file=sys.stderr)
        time.sleep(0.5)
        print("RuntimeError: CUDA error: out of memory", flush=True)
        """,
    )
    code, out, err = run_guard("--json", "r.json", "--", sys.executable, str(prog), cwd=tmp_path)
    assert code == 1, (out, err)
    findings = json.loads((tmp_path / "r.json").read_text())["findings"]
    assert [Path(f["path"]).name for f in findings] == ["stderr.log", "stdout.log"], findings


_MATCHING_LINE = b"Fatal Python error: Segmentation fault in a worker\n"


def test_a_signal_while_the_scan_catches_up_cuts_it_short_and_says_so(tmp_path: Path):
    marker = tmp_path / "printed"
    flood = (
        "import sys\n"
        # Every line a real match (a crash the scanner must confirm and fold in Python), so the scan
        # lags the pump however fast it skips innocent lines.
        f"block = {_MATCHING_LINE!r} * 2000\n"
        "for _ in range(1200):\n"
        "    sys.stdout.buffer.write(block)\n"
        "sys.stdout.flush()\n"
        f"open({str(marker)!r}, 'w').close()\n"
        # Still running when the cancel comes, however fast or busy the machine: the guard cannot
        # have finished (and scanned everything) on its own before the signal.
        "import time; time.sleep(120)\n"
    )
    guard = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "run", "--engine", "python", "--json", "r.json",
         "--", sys.executable, "-c", flood],
        cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        _wait(lambda: marker.exists() or guard.poll() is not None, timeout=120)
        guard.send_signal(signal.SIGINT)  # the runner's cancel, while the pure-Python scan is far behind
        guard.wait(60)
    finally:
        if guard.poll() is None:
            guard.kill()
            guard.wait()
    report = json.loads((tmp_path / "r.json").read_text())
    findings = report["findings"]
    cut = [f for f in findings if f["kind"] == "scan-incomplete" and f["path"].endswith("stdout.log")]
    # Cut short with what it had read, or (on a machine too busy to let the scanner answer in time)
    # reported as unscanned: either way the report says so, with the log's size.
    assert len(cut) == 1 and f"{len(_MATCHING_LINE) * 2000 * 1200:,} bytes" in cut[0]["message"], findings


def test_a_scan_still_behind_after_the_guards_own_timeout_is_cut_and_says_so(tmp_path: Path, monkeypatch):
    # A command that spams matching lines faster than the pure-Python scan confirms them, then hangs:
    # after --timeout ends it, the report must not wait past the job's backstop for the scan to catch
    # up. The bound is made small here; its size is README's minute for diagnosis.
    from analyzer import guarded
    from analyzer.supervise.guard import GuardOptions

    monkeypatch.setattr(guarded, "TIMED_OUT_SCAN_WAIT_S", 0.2)
    flood = (
        "import sys, time\n"
        f"block = {_MATCHING_LINE!r} * 2000\n"
        "for _ in range(1200):\n"
        "    sys.stdout.buffer.write(block)\n"
        "sys.stdout.flush()\n"
        "time.sleep(120)\n"
    )
    options = GuardOptions(argv=(sys.executable, "-c", flood), log_dir=str(tmp_path / "logs"), echo=False,
                           timeout_s=3.0, kill_grace_s=0.5)
    run = guarded.GuardedRun(options, load_catalogue(), engine="python", environ={})
    try:
        supervision = run.supervise()
        report = run.report(supervision)
    finally:
        run.close()
    assert supervision.command.timeout_reason == "wall"
    cut = [f for f in report.findings if f.kind is Kind.SCAN_INCOMPLETE and f.path.endswith("stdout.log")]
    assert len(cut) == 1 and f"{len(_MATCHING_LINE) * 2000 * 1200:,} bytes" in cut[0].message, report.findings

"""Where the guard's time goes between a clock running out and its exit (issue 8 item 6).

Runs ``python -m analyzer run --timeout T --kill-grace G -- python TREE`` where TREE is 16 hung Python
processes that ignore SIGTERM (red41's q01a), each round in a fresh process, and prints per round the
time of each stage after the clock ran out, measured inside the guard by wrapping its stage methods,
and the exit as the parent saw it (``time.monotonic`` is one clock for every process on Linux):

  late       from the clock running out (start + timeout) to the watch loop seeing it
  evidence   process table, py-spy dumps of every Python process (all at once), nvidia-smi
  diagnose   the hang finding built from the evidence
  tell       the early report handed over (written to disk)
  tree       the living tree read again before the signals (and inside sweep)
  end        SIGTERM, the kill grace, SIGKILL and its wait (its own tree walks included)
  sweep      the last look for survivors
  drain      closing the pumps (pipe drains)
  report     the scan's wait and the report built (``GuardedRun.report``)
  files      report.json, summary, outputs written
  console    the report (and warnings) on the console
  close      the live scan stopped, private files removed
  exit       from the last of these to the exit the parent sees

Usage: python bench/guard_stages.py [--rounds 5] [--timeout 5] [--kill-grace 3] [--processes 16]
       [--work idle|spin] [--threads 0] (each worker's busy loop / idle threads: CPU hogs, issue 8's
       "16 processes" goal measured with ``--timeout 1 --kill-grace 2 --rounds 10 --work spin``)
       [--set NAME=VALUE ...] (a guard constant for the run: STACKS_SHARE_S, PARALLEL_DUMPS, DUMP_EACH_S)
"stacks" is taken/listed plain dumps in stacks.txt (a block with no stack says why).
A timing script, not a test: numbers depend on the host's load, printed beside each round.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# argv: the number of workers, what each does ("idle": sleeps; "spin": a busy loop, as a stuck rank
# polling NCCL; the CPUs are the tree's), and how many threads each starts beside its main one.
TREE = textwrap.dedent("""
    import multiprocessing as mp, queue, signal, sys, threading, time
    def worker(n, how, threads):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for _ in range(threads):
            threading.Thread(target=threading.Event().wait, daemon=True).start()
        print(f"ready {n}", flush=True)
        if how == "spin":
            while True:
                pass
        [lambda: time.sleep(3600), lambda: threading.Event().wait(), lambda: queue.Queue().get()][n % 3]()
    if __name__ == "__main__":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        how, threads = sys.argv[2], int(sys.argv[3])
        procs = [mp.get_context("fork").Process(target=worker, args=(n, how, threads))
                 for n in range(int(sys.argv[1]))]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
""")

# Runs in the guard's process: wraps the stages, then the CLI as the program runs it.
CHILD = textwrap.dedent("""
    import json, os, sys, time
    from analyzer.supervise import early_cancel
    early_cancel.hold()
    from analyzer import cli, guarded
    from analyzer.supervise import guard
    for name, value in json.loads(os.environ.get("GUARD_CONSTANTS", "{}")).items():
        setattr(guard, name, value)  # --set NAME=VALUE: another share or cap, compared in one run
    marks = []
    def timed(owner, name, label):
        inner = getattr(owner, name)
        def wrapper(*args, **kwargs):
            start = time.monotonic()
            try:
                return inner(*args, **kwargs)
            finally:
                marks.append((label, start, time.monotonic()))
                with open(os.environ["STAGES_OUT"], "w") as handle:
                    json.dump(marks, handle)
        setattr(owner, name, wrapper)
    watch = guard._Run.watch
    def watched(run, *args, **kwargs):
        try:
            return watch(run, *args, **kwargs)
        finally:  # the clock ran out at started + timeout: how late the watch saw it
            if run.options.timeout_s is not None:
                marks.append(("late", run.started + run.options.timeout_s, time.monotonic()))
    guard._Run.watch = watched
    timed(guard._Run, "collect_evidence", "evidence")
    timed(guard.diagnosis, "diagnose_hang", "diagnose")
    timed(guard._Run, "tell", "tell")
    timed(guard._Run, "living_tree", "tree")
    timed(guard._Run, "end", "end")
    timed(guard._Run, "sweep", "sweep")
    timed(guard._Run, "close_pumps", "drain")
    timed(guarded.GuardedRun, "report", "report")
    timed(cli, "_write_report_files", "files")
    timed(cli, "_write_console_bounded", "console")
    timed(guarded.GuardedRun, "close", "close")
    status = cli._main_run(sys.argv[1:])
    cli._exit_now(status)
    sys.exit(status)
""")

STAGES = ("late", "evidence", "diagnose", "tell", "tree", "end", "sweep", "drain", "report", "files",
          "console", "close")
COLUMNS = (*STAGES, "exit", "between", "total")
DUMP_HEAD = re.compile(r"^=== pid \d+: ", re.M)
NO_STACK = re.compile(r"^\(py-spy: (?!.*native)", re.M)


def stacks_taken(log_dir: str) -> str:
    """"taken/dumped" from stacks.txt: plain dumps with a stack, of all the plain dumps it lists."""
    try:
        with open(os.path.join(log_dir, "stacks.txt"), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return "-"
    blocks = DUMP_HEAD.split(text)[1:]
    return f"{sum(1 for block in blocks if not NO_STACK.search(block))}/{len(blocks)}"


def one_round(args: argparse.Namespace, work: str, tree: str, repo: str = REPO) -> dict:
    stages_out = os.path.join(work, "stages.json")
    if os.path.exists(stages_out):
        os.unlink(stages_out)
    constants = dict(item.split("=", 1) for item in args.set)
    env = {**os.environ, "PYTHONPATH": repo, "STAGES_OUT": stages_out,
           "GUARD_CONSTANTS": json.dumps({name: json.loads(value) for name, value in constants.items()})}
    load = os.getloadavg()[0]
    started = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, "--log-dir", os.path.join(work, "logs"), "--json",
         os.path.join(work, "report.json"), "--timeout", str(args.timeout),
         "--kill-grace", str(args.kill_grace), "--", sys.executable, tree, str(args.processes),
         args.work, str(args.threads)],
        cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    exited = time.monotonic()
    with open(stages_out) as handle:
        marks = json.load(handle)
    seconds: dict = {}
    for label, start, end in marks:
        seconds[label] = seconds.get(label, 0.0) + end - start
    clock_out = min(start for _, start, _ in marks)  # the clock's end (late), else the first stage
    last = max(end for _, _, end in marks)
    seconds["exit"] = exited - last
    seconds["total"] = exited - clock_out
    seconds["between"] = seconds["total"] - sum(seconds.get(name, 0.0) for name in (*STAGES, "exit"))
    seconds["over_grace"] = seconds["total"] - args.kill_grace
    seconds["status"] = child.returncode
    seconds["load"] = load
    seconds["wall"] = exited - started
    seconds["stacks"] = stacks_taken(os.path.join(work, "logs"))
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--kill-grace", type=float, default=3.0)
    parser.add_argument("--processes", type=int, default=16, help="workers, beside their launcher")
    parser.add_argument("--work", choices=("idle", "spin"), default="idle",
                        help="what each worker does: sleep/wait, or a busy loop on the CPUs")
    parser.add_argument("--threads", type=int, default=0, help="threads each worker starts (idle ones)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a constant of analyzer.supervise.guard for this run (STACKS_SHARE_S=3)")
    parser.add_argument("--also", metavar="DIR", help="another checkout (say, main's) whose guard runs every"
                        " other round, so both see the same machine; each is summarised on its own")
    args = parser.parse_args()
    repos = [REPO, os.path.abspath(args.also)] if args.also else [REPO]
    rows: dict = {repo: [] for repo in repos}
    with tempfile.TemporaryDirectory(prefix="guard-stages-") as work:
        tree = os.path.join(work, "tree.py")
        with open(tree, "w") as handle:
            handle.write(TREE)
        print(" ".join(args.set) or "(the guard's own constants)")
        print("round load " + " ".join(f"{name:>8}" for name in (*COLUMNS, "+grace")) + "   stacks")
        for number in range(args.rounds):
            for which, repo in enumerate(repos):
                row = one_round(args, work, tree, repo)
                rows[repo].append(row)
                cells = " ".join(f"{row.get(name, float('nan')):8.2f}" for name in COLUMNS)
                print(f"{number:4d}{'ab'[which] if args.also else ' '} {row['load']:4.1f} {cells}"
                      f" {row['over_grace']:8.2f} {row['stacks']:>8}  (exit {row['status']})", flush=True)
    for which, repo in enumerate(repos):
        done = rows[repo]
        print(f"{'ab'[which] if args.also else ''} {repo}")
        print("median " + " ".join(f"{name}={statistics.median(r.get(name, 0.0) for r in done):.2f}"
                                   for name in (*STAGES, "exit", "between", "total", "over_grace")))
        over = sorted(row["over_grace"] for row in done)
        missed = sum(1 for value in over if value >= 1.0)
        print(f"clock-out to exit past the grace: min {over[0]:.2f} median {statistics.median(over):.2f}"
              f" max {over[-1]:.2f} s; {missed} of {len(over)} at or past the promise's 1 s"
              f" ({' '.join(f'{value:.2f}' for value in over)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Property: any mix of nonsense options to ``run`` is a one-line usage error (exit 2) before anything runs,
or a guarded run that ends with a verdict's status; never a traceback, never a hang (session 7 red team).

The guard runs in a subprocess (in process it would make pytest a subreaper and non-dumpable), so the
examples are fewer than the other fuzz families' (``GHG_FUZZ_EXAMPLES`` scales them too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import List, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = max(10, int(os.environ.get("GHG_FUZZ_EXAMPLES", "60")) // 4)
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
PREFIX = b"python -m analyzer: error: "

DURATIONS = ["0", "-1", "1e400", "nan", "inf", "-inf", "1s", "0.001", "5", "99999999999999999999", "",
             " ", "1h1m", "10m", "\n", "1e-9", "0x10", "\u0661", "\uff15s", "2ms", "1.5.5", "s", "-0"]
PATHS = ["{tmp}/r", "{tmp}/no/such/dir/r", "", "/dev/null", "/dev/full", "{tmp}", "{tmp}/fifo",
         "{tmp}/a\nb::add-mask::x", "/proc/self/mem", "{tmp}/\udcff"]
TEXTS = ["", "x", "crash,timeout", "hang-ish", "error=1,warning=2", "error=-1", "nonsense=3", "\x1b[31m",
         "::add-mask::x", "warning", "python", "hyperscan", "json", "github", "markdown", "text"]
OPTIONS = {
    "--timeout": DURATIONS, "--idle-timeout": DURATIONS, "--kill-grace": DURATIONS,
    "--abort-grace": DURATIONS, "--abort-on": TEXTS, "--log-dir": PATHS, "--json": PATHS,
    "--summary": PATHS, "--github-output": PATHS, "--format": TEXTS, "--fail-on": TEXTS,
    "--engine": TEXTS, "--annotation-slots": TEXTS, "--job-name": TEXTS,
}
pairs = st.sampled_from(sorted(OPTIONS)).flatmap(
    lambda name: st.tuples(st.just(name), st.sampled_from(OPTIONS[name]))
)


def run_guard(options: List[Tuple[str, str]], tmp: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "analyzer", "run", "--log-dir", os.path.join(tmp, "logs")]
    for name, value in options:
        argv += [name, value.format(tmp=tmp)]
    argv += ["--", sys.executable, "-c", "print('ok')"]
    env = dict(os.environ)
    env.pop("GITHUB_ACTIONS", None)
    # 60 s: a run with --timeout 5 and --kill-grace 5 of a command that exits at once ends in seconds.
    return subprocess.run([os.fsencode(a) for a in argv], capture_output=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)


@FUZZ
@given(st.lists(pairs, max_size=6))
def test_any_options_to_run_are_one_usage_error_or_a_run_with_a_verdict(options):
    with tempfile.TemporaryDirectory() as tmp:
        os.mkfifo(os.path.join(tmp, "fifo"))
        proc = run_guard(options, tmp)
    err = proc.stderr
    assert b"Traceback" not in err, err
    if proc.returncode == 2:
        assert proc.stdout == b"" and err.startswith(PREFIX) and err.count(b"\n") == 1, (options, err)
    else:
        assert proc.returncode in (0, 1), (options, proc.returncode, err)
        assert all(line.startswith(b"python -m analyzer: warning: ") for line in err.splitlines()), err

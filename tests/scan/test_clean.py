"""Line cleaning: what is stripped before matching, and that nothing the log holds can break it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.scan.clean import (
    advisory,
    clean_line,
    clean_speaking,
    split_segments,
    strip_controls,
    visible_excerpt,
)


def test_github_timestamp_and_bom_are_stripped():
    raw = b"\xef\xbb\xbf2024-01-09T18:41:23.1234567Z Fatal Python error: Aborted\n"
    assert clean_line(raw) == ("Fatal Python error: Aborted", None)


def test_timestamp_only_at_the_start_of_the_line():
    raw = b"at 2024-01-09T18:41:23.1234567Z the run ended\n"
    assert clean_line(raw)[0] == "at 2024-01-09T18:41:23.1234567Z the run ended"


def test_ansi_csi_and_osc_sequences_are_stripped():
    raw = (
        b"2024-01-09T18:41:23.1234567Z \x1b[1m\x1b[31mFAILED\x1b[0m tests/test_x.py::test_a"
        b" \x1b]8;;https://example.com\x07link\x1b]8;;\x07 \x1b]0;title\x1b\\done\x1b(B\r\n"
    )
    assert clean_line(raw) == ("FAILED tests/test_x.py::test_a link done", None)


def test_csi_sequences_in_caret_notation_are_stripped():
    # ray-project/ray#4568: Ray 0.x coloured the task's name, the paste shows ESC as "^["
    raw = b"ray.exceptions.RayTaskError: ^[[36mray_worker^[[39m (pid=25712, host=vcl-dl-2)\n"
    assert clean_line(raw) == ("ray.exceptions.RayTaskError: ray_worker (pid=25712, host=vcl-dl-2)", None)
    assert clean_line(b"x ^[ [31m and ^[x stay\n") == ("x ^[ [31m and ^[x stay", None)


def test_csi_sequences_in_rsyslog_octal_notation_are_stripped():
    # podman-container-tools/podman#10825: rsyslog stores ESC as "#033"; the syslog prefix goes too
    raw = b"Apr 17 15:57:31 runner01 gitlab-runner[1701482]: #033[0;33mWARNING: Job failed: exit code 137\n"
    assert clean_line(raw) == ("WARNING: Job failed: exit code 137", None)
    assert clean_line(b"issue #033 [31m and #0331 stay\n") == ("issue #033 [31m and #0331 stay", None)


def test_rank_prefix_is_stripped_and_returned():
    assert clean_line(b"[rank3]:Traceback (most recent call last):\n") == (
        "Traceback (most recent call last):", 3,
    )
    raw = b"2024-01-09T18:41:23.1234567Z \x1b[0m[rank12]: RuntimeError: boom"
    assert clean_line(raw) == ("RuntimeError: boom", 12)


def test_other_loggers_prefixes_are_stripped():
    # issue 7: anchored wordings must survive journald, Python logging, glog/c10 and NCCL prefixes
    cases = {
        b"Nov 29 17:59:56 host proc[12]: Traceback (most recent call last):":
            "Traceback (most recent call last):",
        b"[2024-01-09 18:41:23,123] [ERROR] Process Worker-1:": "Process Worker-1:",
        b"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)":
            "failed (exitcode: 1)",
        b"E0325 12:00:00.123 1234 file.cpp:12] Segmentation fault": "Segmentation fault",
        b"node1:534:1763 [3] NCCL WARN Cuda failure 'out of memory'":
            "NCCL WARN Cuda failure 'out of memory'",
        # CI log viewers (wordings: pytorch/pytorch#9137, #13618, modelscope/ms-swift#8307,
        # NVIDIA/nccl#1610, NVlabs/curobo#109)
        b"17:21:43 Segmentation fault (core dumped)": "Segmentation fault (core dumped)",
        # Jenkins' timestamper with two spaces (pytest-dev/pytest-xdist#998); a traceback keeps its indent
        b"13:33:50  [gw2] [ 50%] FAILED t.py::test_y": "[gw2] [ 50%] FAILED t.py::test_y",
        b'13:33:50    File "x.py", line 3, in f': '  File "x.py", line 3, in f',
        b"Nov 06 05:00:37 Segmentation fault (core dumped)": "Segmentation fault (core dumped)",
        b"2026-09-17 13:40:05 zsh: killed     python3 x.py": "zsh: killed     python3 x.py",
        b" 2025-02-18 12:54 Traceback (most recent call last):": "Traceback (most recent call last):",
        b"#9 31.55 Killed": "Killed",
        # pm2's log_date_format stamp as pm2 writes it before a line ("2022-11-16T13:12:10: ")
        b"2022-11-16T13:12:10: RuntimeError: CUDA error: an illegal memory access was encountered":
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        # a GitLab job log with FF_TIMESTAMPS: the stream's number, O or E, "+" on a continued line
        b"2024-06-11T14:25:33.123456Z 00O Segmentation fault (core dumped)":
            "Segmentation fault (core dumped)",
        b"2024-06-11T14:25:33.123456Z 01E+ Killed": "Killed",
        b"[18:41:23] Traceback (most recent call last):": "Traceback (most recent call last):",
        # jax-ml/jax#6921, NVIDIA/nccl#957
        b"2021-06-08 13:00:47.364628: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/client.cc:1981]"
        b" Execution of replica 0 failed: INTERNAL: CUDA_ERROR_ILLEGAL_ADDRESS":
            "Execution of replica 0 failed: INTERNAL: CUDA_ERROR_ILLEGAL_ADDRESS",
        # Markdown code in a paste (actions/runner#1473, modelscope/ms-swift#5884)
        b"`Killed`": "Killed",
        b"```Traceback (most recent call last):": "Traceback (most recent call last):",
        b"``[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog``": "[Rank 0] Watchdog",
        # a Kubernetes container log file (the CRI format: containerd's stamp, CRI-O's; a partial line)
        b"2024-01-15T10:30:45.123456789Z stderr F Segmentation fault (core dumped)":
            "Segmentation fault (core dumped)",
        b"2024-01-15T10:30:45.123456789+00:00 stdout F Killed": "Killed",
        b"2024-01-15T10:30:45Z stdout P Traceback (most recent call last):":
            "Traceback (most recent call last):",
        # loguru's default format (loguru/_defaults.py), a module's name and <module> as the function
        b"2024-01-09 18:41:23.123 | ERROR    | __main__:<module>:5 - _queue.Empty": "_queue.Empty",
        b"2024-01-09 18:41:23.123 | SUCCESS  | train:fit:88 - Killed": "Killed",
        # Hydra's job logging (hydra/conf/hydra/job_logging/default.yaml)
        b"[2024-01-09 18:41:23,123][__main__][ERROR] - Process Worker-1:": "Process Worker-1:",
        b"[2024-01-09 18:41:23,123][torch.distributed.elastic.multiprocessing.api][WARNING] - Killed":
            "Killed",
    }
    for raw, text in cases.items():
        assert clean_line(raw) == (text, None)
    # mpirun --tag-output's "[JOB,RANK]<stream>:" names the rank as torch's "[rankN]:" does (mpi25)
    assert clean_line(b"Fri Aug 11 12:31:45 2023[1,0]<stdout>:Traceback (most recent call last):") == (
        "Traceback (most recent call last):", 0)
    assert clean_line(b"[1,3]<stderr>:Segmentation fault (core dumped)") == (
        "Segmentation fault (core dumped)", 3)
    raw = b"[rank7]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog"
    assert clean_line(raw) == (
        "[Rank 7] Watchdog", 7,
    )
    assert clean_line(b"Nov 29 17:59:56 host proc[12]: [rank3]: _queue.Empty") == ("_queue.Empty", 3)
    raw = b"eap-llm-server-on-arc  | ERROR 11-08 11:01:30 [core.py:502] Traceback (most recent call last):"
    assert clean_line(raw) == ("Traceback (most recent call last):", None)
    # vLLM before v0.6 logged the file without brackets (vllm-project/vllm#5173, #12510)
    raw = b"ERROR 07-08 09:27:29 async_llm_engine.py:52] Traceback (most recent call last):"
    assert clean_line(raw) == ("Traceback (most recent call last):", None)
    raw = b"(EngineCore_DP0 pid=697344) Traceback (most recent call last):"
    assert clean_line(raw) == ("Traceback (most recent call last):", None)
    raw = b"[default0]:Traceback (most recent call last):"
    assert clean_line(raw) == ("Traceback (most recent call last):", None)
    raw = b"[80746] [rank0]:[E321 02:07:08.408 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog"
    assert clean_line(raw) == ("[Rank 0] Watchdog", 0)


def test_pytest_error_summary_behind_two_stamps_keeps_its_error():
    # A syslog stamp before GitHub's: the ISO stamp is then a bare date-time, whose logging level goes.
    for line in (b"Dec 05 01:50:10 2024-01-09T18:41:23.2330560Z ERROR t.py::test_store - OSError: refused",
                 b"Dec 05 01:50:10 2024-01-09T18:41:23.2330560Z ERROR tests/test_x.py - ImportError: no"):
        assert clean_line(line)[0].startswith("ERROR t")
    logged = b"2024-01-09 18:41:23,123 ERROR the store refused: OSError"
    assert clean_line(logged)[0] == "the store refused: OSError"


def test_the_prefix_that_names_a_process_is_returned_as_its_speaker():
    # vLLM v1's workers (vllm-project/vllm#14452), then its logger's own prefix
    raw = b"(VllmWorker rank=2 pid=825) ERROR 03-15 17:24:18 [multiproc_executor.py:375] ValueError: x"
    assert clean_speaking(raw) == ("ValueError: x", None, "(VllmWorker rank=2 pid=825")
    assert clean_speaking(b"(pid=4242, ip=10.0.0.3) Traceback (most recent call last):")[2] == "(pid=4242"
    assert clean_speaking(b"[default1]:Traceback (most recent call last):")[2] == "[default1]:"
    assert clean_speaking(b"[rank3]:Traceback (most recent call last):") == (
        "Traceback (most recent call last):", 3, "[rank3]:")
    # mpirun --tag-output, after --timestamp-output's date: the date differs line by line, the job does not
    raw = b"Tue Jan  9 18:41:23 2024[1,3]<stderr>:Traceback (most recent call last):"
    assert clean_speaking(raw)[2] == "[1,3]"
    # pdsh (DeepSpeed's multi-node launcher) names the node, then torch the rank on it
    raw = b"10.0.0.6: [rank3]:Traceback (most recent call last):"
    assert clean_speaking(raw) == ("Traceback (most recent call last):", 3, "10.0.0.6: [rank3]:")
    assert clean_speaking(b"gpu004: RuntimeError: x") == ("RuntimeError: x", None, "gpu004: ")
    # Determined names the trial (horovod/horovod#1678), horovodrun the rank (mpirun's tag without the job)
    raw = b"13047a84-9fa2-4afe-b5b4-6475139b76b3 || Tue Jan 21 03:44:59 2020[4]<stderr>:Segmentation fault"
    assert clean_speaking(raw) == ("Segmentation fault", 4, "13047a84-9fa2-4afe-b5b4-6475139b76b3[4]")
    raw = b"<>        [2021-12-07 10:43:01] 087c0ee7 || RuntimeError: x"  # the master's own stamp first
    assert clean_speaking(raw) == ("RuntimeError: x", None, "087c0ee7")
    # prefixes that do not name a process
    for raw in (b"ERROR 03-15 17:24:18 [core.py:398] ValueError: x", b"2024-01-09 18:41:23 ValueError: x",
                b"service  | ValueError: x"):
        assert clean_speaking(raw) == ("ValueError: x", None, None)
    assert clean_speaking(b"ValueError: x (pid=12)") == ("ValueError: x (pid=12)", None, None)
    # names that are not a host: an exception's, a logger's, an upper-case word
    for raw in (b"RuntimeError: x", b"Error: x", b"NCCL: x", b"cuda: x", b"gpu004:x"):
        assert clean_speaking(raw) == (raw.decode(), None, None)


def test_buildkite_stamps_are_stripped():
    # wordings13. Buildkite's stamp ends in "Z" (pytorch/pytorch#174081, #173546, vLLM's CI), then the
    # line as it was printed: a pytest section header, a vLLM process and logger prefix.
    raw = b"[2026-01-31T04:40:19Z] __________________ test_draft_model_correctness[False-args1] ____"
    assert clean_speaking(raw) == (raw[23:].decode(), None, None)
    raw = b"[2026-01-27T09:24:41Z] (EngineCore_DP0 pid=6819) ERROR 01-27 01:24:41 [dump_input.py:79] Dumping"
    assert clean_speaking(raw) == ("Dumping", None, "(EngineCore_DP0 pid=6819")
    # srun --label's task (NOAA-EMC/global-workflow#1301) names the process, zero-padded to the widest id,
    # and its rank (SLURM_PROCID) unless torch's own rank follows (mpi25)
    raw = b"0: slurmstepd: error: *** STEP 25981927.1 ON k65 CANCELLED AT 2023-04-13T18:23:49 ***"
    assert clean_speaking(raw) == (raw[3:].decode(), 0, "0")
    assert clean_speaking(b"07: [rank7]:Traceback (most recent call last):") == (
        "Traceback (most recent call last):", 7, "07[rank7]:")
    # ctest -V's test number looks the same ("2: Segmentation fault" is a death test's own output): a log
    # that shows ctest -V keeps it (the engine passes task_labels=False once it has seen CTEST_VERBOSE)
    kept = b"2: Segmentation fault"
    assert clean_speaking(kept, task_labels=False) == (kept.decode(), None, None)


def test_taskcluster_sources_and_stamps_are_stripped():
    # recall19. Firefox CI's run-task (mozilla/translations#1015, #1112: Z and +00:00 stamps), then the
    # program's own prefix; generic-worker's own lines (TaskRun.Log) and docker-worker's blank for the T
    raw = b"[task 2025-01-21T17:12:18.382Z] Traceback (most recent call last):"
    assert clean_speaking(raw) == ("Traceback (most recent call last):", None, None)
    raw = b"[task 2025-05-06T18:48:35.561+00:00] [train] Segmentation fault (core dumped)"
    assert clean_speaking(raw)[0] == "[train] Segmentation fault (core dumped)"
    raw = b"[task 2025-01-21T17:12:18.382Z] [2025-01-21 17:10:38] Killed"
    assert clean_speaking(raw)[0] == "Killed"
    for raw in (b"[taskcluster 2017-01-25T23:31:13.787Z] Killed",
                b"[taskcluster 2016-10-04 17:09:02.626Z] Killed",
                b"[fetches 2026-09-07T09:16:10.000Z] Killed"):
        assert clean_speaking(raw)[0] == "Killed"
    # a Markdown task list names a task without a stamp: its words stay
    for kept in (b"[Task 20: RevenueDoughnutComponent]", b"[task 20] Killed", b"[task 2025-01-21] Killed"):
        assert clean_speaking(kept)[0] == kept.decode()


def test_python_logging_dashed_formats_are_stripped():
    # the logging cookbook's "%(asctime)s - %(name)s - %(levelname)s - %(message)s", and transformers'
    # examples (run_glue_no_trainer.py: levelname before name, datefmt "%m/%d/%Y %H:%M:%S")
    assert clean_line(b"2024-01-09 18:41:23,123 - root - ERROR - Killed") == ("Killed", None)
    assert clean_line(b"01/09/2024 18:41:23 - ERROR - __main__ - Killed") == ("Killed", None)
    assert clean_line(b"step 3 - ERROR - x") == ("step 3 - ERROR - x", None)


def test_kubectl_prefix_names_the_pod_and_container():
    # kubectl logs --prefix (kubectl/pkg/cmd/logs/logs.go, addPrefixIfNeeded): "[pod/NAME/CONTAINER] "
    raw = b"[pod/trainer-0/pytorch] Traceback (most recent call last):"
    assert clean_speaking(raw) == ("Traceback (most recent call last):", None, "[pod/trainer-0/pytorch]")


def test_a_bare_stamp_before_a_message_is_not_taken_for_a_syslog_host():
    # moreutils ts (and CircleCI) put only "Mon DD HH:MM:SS " before the line; "CUDA error: " is the message
    for message in (b"CUDA error: an illegal memory access was encountered",
                    b"rocBLAS error: Could not initialize Tensile host: No devices found",
                    b"cuda error: out of memory"):
        assert clean_speaking(b"Dec 05 01:50:10 " + message)[0] == message.decode()
    for host in (b"gpu-node-3", b"DESKTOP-1A2B", b"host"):
        raw = b"Nov 29 17:59:56 " + host + b" kernel: Out of memory: Killed process 12 (python)"
        assert clean_speaking(raw)[0] == "Out of memory: Killed process 12 (python)"


def test_fatal_glog_prefix_and_lookalikes_are_kept():
    for raw in (b"F0000 00:00:1709942790.379654  501354 pjrt.cc:491] Check failed: ok",
                b"ERROR: test_x (mod.Class)", b"INFO: Found 1 test target...",
                b"test_hang.py::test_timeout PASSED"):
        assert clean_line(raw) == (raw.decode(), None)
    # pytest's failure mark is no logger's prefix, but what follows it is the line an exception printed
    assert clean_line(b"E       Failed: Timeout >2.0s") == ("Failed: Timeout >2.0s", None)


def test_rank_like_text_elsewhere_is_kept():
    assert clean_line(b"peer [rank3]: hung\n") == ("peer [rank3]: hung", None)


def test_nul_bytes_are_removed_even_inside_escapes():
    assert clean_line(b"Segmen\x00tation fault\x1b\x00[31m!\n") == ("Segmentation fault!", None)


def test_invalid_utf8_is_decoded_leniently():
    text, rank = clean_line(b"bad \xff\xfe bytes \xe2\x82 end\n")
    assert text == "bad \\xff\\xfe bytes \\xe2\\x82 end"
    assert rank is None


def test_carriage_returns_separate_segments_but_crlf_is_a_line_ending():
    text, _ = clean_line(b" 10%|#  |\r 50%|#####|\rFatal Python error: Aborted\r\n")
    assert text == " 10%|#  |\r 50%|#####|\rFatal Python error: Aborted"
    assert split_segments(text) == [" 10%|#  |", " 50%|#####|", "Fatal Python error: Aborted"]
    assert split_segments("plain") == ["plain"]


def test_strip_controls_keeps_every_newline():
    raw = b"a\x1b[31m\nb\x1b]0;x\nc\x00\n\x1b\n"
    assert strip_controls(raw).count(b"\n") == raw.count(b"\n")


def test_visible_excerpt_keeps_the_timestamp():
    assert visible_excerpt(b"2024-01-09T18:41:23.1234567Z boom\r\n") == "2024-01-09T18:41:23.1234567Z boom"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_break_cleaning(raw):
    text, rank = clean_line(raw)
    assert isinstance(text, str)
    assert rank is None or rank >= 0
    assert "\x00" not in text and "\x1b[" not in text.replace("\\x1b", "")
    assert strip_controls(raw).count(b"\n") == raw.count(b"\n")


ESCAPY = st.lists(
    st.sampled_from([b"\x1b[31m", b"\x1b[0m", b"\x1b]0;t\x07", b"\x1b", b"\x1b[", b"\n", b"\x00", b"ab"]),
    max_size=200,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(ESCAPY)
def test_line_by_line_stripping_equals_one_substitution(raw):
    from analyzer.scan import clean

    whole = clean._ANSI.sub(b"", raw.replace(b"\x00", b""))
    assert strip_controls(raw) == whole


@settings(max_examples=100, deadline=None)
@given(ESCAPY)
def test_a_densely_coloured_window_is_stripped_as_one_substitution_strips_it(raw):
    # Past 128 coloured lines strip_controls splits the whole window at the escapes and joins the rest:
    # the same bytes as a substitution only while the pattern captures no group.
    from analyzer.scan import clean

    window = b"".join(b"\x1b[32mPASSED\x1b[0m %d\n" % i for i in range(130)) + raw
    assert clean._ANSI.groups == 0
    assert strip_controls(window) == clean._ANSI.sub(b"", window.replace(b"\x00", b""))


@pytest.mark.parametrize("line_bytes, lines", [(20, 200), (600, 200), (2000, 40)])
def test_coloured_lines_dense_or_sparse_are_stripped_as_one_substitution_strips_them(line_bytes, lines):
    # Dense at the first escape: one split of the window; sparse there but past 64 coloured lines: the
    # edit of each line gives way to the split; fewer coloured lines: each is edited on its own.
    from analyzer.scan import clean

    raw = b"".join(b"%d \x1b[3%dmx\x1b]8;;u\x07\x00 " % (i, i % 8) + b"y" * line_bytes + b"\n"
                   for i in range(lines))
    assert strip_controls(raw) == clean._ANSI.sub(b"", raw.replace(b"\x00", b""))
    assert strip_controls(raw).count(b"\x1b") == 0


def test_many_coloured_lines_are_stripped_in_one_go_with_the_same_result():
    from analyzer.scan import clean

    raw = b"".join(b"%d \x1b[3%dmline\x1b[0m\x00 end\n" % (i, i % 8) for i in range(500))
    assert strip_controls(raw) == clean._ANSI.sub(b"", raw.replace(b"\x00", b""))
    assert strip_controls(raw).count(b"\x1b") == 0


def test_a_line_pasted_as_a_markdown_quote_loses_its_marks_and_a_prompt_keeps_its_own():
    # logan-connolly/mychef#56 and thisisartium/continuous-alignment-testing#53 quoted their CI output.
    assert clean_line(b"> Error: Process completed with exit code 137.") == (
        "Error: Process completed with exit code 137.", None
    )
    assert clean_line(b"> > FAILED tests/x.py::t - Failed: Timeout >10.0s")[0] == (
        "FAILED tests/x.py::t - Failed: Timeout >10.0s"
    )
    assert clean_line(b'>   File "train.py", line 3, in main')[0] == '  File "train.py", line 3, in main'
    assert clean_line(b"> `Killed`") == ("Killed", None)
    # a REPL's prompt, a redirection, a lone mark
    for raw in (b">>> import torch", b">/dev/null 2>&1", b">"):
        assert clean_line(raw) == (raw.decode(), None)


def test_a_failed_nix_builds_log_tail_loses_nixs_mark_and_indent_and_a_code_line_keeps_its_own():
    # google/flax#2554: nix-build's error lists the check phase's last lines as "       > LINE".
    assert clean_line(b"       > FAILED tests/checkpoints_test.py::CheckpointsTest::test_keep0")[0] == (
        "FAILED tests/checkpoints_test.py::CheckpointsTest::test_keep0"
    )
    assert clean_line(b"       > ================= 12 failed, 1050 passed in 42.08s ====")[0] == (
        "================= 12 failed, 1050 passed in 42.08s ===="
    )
    # a line indented otherwise keeps its text
    assert clean_line(b"        > 3")[0] == "        > 3"
    assert clean_line(b"      > 3")[0] == "      > 3"


@pytest.mark.parametrize("prefix", [b"[18:41:23] ", b"Nov 29 17:59:56 gpu-node-3 python3[1234]: ",
                                    b"[default0]:", b"[pod/trainer-0/main] ", b"[rank0]: "])
def test_a_nix_builds_log_tail_behind_a_collectors_prefix_loses_nixs_mark_too(prefix):
    line = b"       > FAILED tests/checkpoints_test.py::CheckpointsTest::test_keep0"
    assert clean_line(prefix + line)[0] == "FAILED tests/checkpoints_test.py::CheckpointsTest::test_keep0"
    # an indented line without a prefix in front is no Nix log line
    assert clean_line(b"    " + line)[0] == "    " + line.decode()


def test_a_line_pasted_as_markdown_emphasis_loses_its_markers_and_lookalikes_keep_theirs():
    # microsoft/Swin-Transformer#267 pasted its error line in italics.
    assert clean_line(b"_subprocess.CalledProcessError: Command died._") == (
        "subprocess.CalledProcessError: Command died.", None
    )
    assert clean_line(b"**Segmentation fault (core dumped)**") == ("Segmentation fault (core dumped)", None)
    # detectron2#1563: the error in bold, the rest of the line plain; a logger's level the same way
    assert clean_line(b"**RuntimeError: CUDA out of memory.** Tried to allocate 20.00 MiB") == (
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB", None
    )
    assert clean_line(b"**ERROR [06/09 11:05:25 d2.engine.train_loop]**: Exception during training:") == (
        "ERROR [06/09 11:05:25 d2.engine.train_loop]: Exception during training:", None
    )
    # HeyGem-Linux-Python-Hack#19: a whole traceback pasted as one bold span, its markers on its first and
    # last lines only
    assert clean_line(b"**Traceback (most recent call last):") == ("Traceback (most recent call last):", None)
    assert clean_line(b"_queue.Empty**") == ("_queue.Empty", None)
    # Markdown's hard line break (two blanks) or an editor's padding after a marker
    assert clean_line(b"_queue.Empty**  ") == ("_queue.Empty", None)
    assert clean_line(b"`Killed` \t") == ("Killed", None)
    assert clean_line(b"**Segmentation fault**   ") == ("Segmentation fault", None)
    assert clean_line(b"RuntimeError: DataLoader worker (pid(s) 1458) exited unexpectedly**") == (
        "RuntimeError: DataLoader worker (pid(s) 1458) exited unexpectedly", None
    )
    # a marker that does not touch a word, or a line with a second marker, is not a span's end
    for raw in (b"** Traceback", b"Empty **", b"***", b"glob: src/**/x.py and **"):
        assert clean_line(raw) == (raw.decode(), None)
    # pytest's report headers (one underscore a side for a long name), glibc's and glog's banners
    for raw in (b"_ TestX.test_y[p] _", b"____ test_y ____", b"*** Error in `python': double free ***",
                b"*** Check failure stack trace: ***", b"_", b"**", b"** Error ** stop", b"**x **"):
        assert clean_line(raw) == (raw.decode(), None)


def test_a_child_header_glued_after_a_pytest_v_s_node_id_is_matched_as_its_own_line():
    # pytest -v -s writes the id, then the test runs and a child continues the line (pytest 9.2.0 here)
    for glued, header in (
        (b"tests/test_x.py::test_y Process SpawnProcess-1:", "Process SpawnProcess-1:"),
        (b"test_m.py::TestC::test_y[cuda-2] Process ForkProcess-3:1:", "Process ForkProcess-3:1:"),
        (b"test_x.py::test_c Exception in thread loader:", "Exception in thread loader:"),
        (b"test_x.py::test_c Traceback (most recent call last):", "Traceback (most recent call last):"),
    ):
        assert clean_line(glued)[0] == header
    # the id alone, its outcome, or words that only start like a header stay as they are
    for kept in (b"tests/test_x.py::test_y PASSED", b"test_x.py::test_y Processing shard 3: done",
                 b"FAILED test_x.py::test_y - Process SpawnProcess-1: died", b"test_x.py::test_y "):
        assert clean_line(kept)[0] == kept.decode().rstrip()


@settings(max_examples=300, deadline=None)
@given(
    blanks=st.integers(min_value=1, max_value=8),
    rest=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40).filter(
        lambda t: not t[:1].isdigit() and t[:1] != " "
    ),
    head=st.sampled_from(["", "[rank0]: ", "Jan 09 10:00:00 ", "INFO:x:", "host1: ", "[gw0] ", "E   "]),
)
def test_indented_line_has_no_prefix_to_cut(blanks, rest, head):
    """clean_speaking skips the prefix search on a line whose blanks no digit follows: none of the
    prefixes it cuts may start so (the loggers' patterns, "[rankN]:", progress marks)."""
    from analyzer.scan import clean

    text = " " * blanks + head + rest
    assert clean._LOGGER_PREFIX.match(text) is None
    assert clean._RANK.match(text) is None


def test_a_shared_librarys_soname_is_no_pdsh_host():
    # glibc's dlerror names the library first: "libmlx5.so.1: undefined symbol: ..." is no node speaking
    line = b"libmlx5.so.1: undefined symbol: mlx5dv_reg_dmabuf_mr, version MLX5_1.25"
    assert clean_speaking(line) == (line.decode(), None, None)
    assert clean_speaking(b"gpu-node-3: Segmentation fault")[2] is not None


def test_advisory_records_are_info_and_warning_lines():
    assert advisory(b"host:205632:205772 [1] NCCL INFO dlvsym failed on mlx5dv_reg_dmabuf_mr - /lib/l")
    assert advisory(b"/usr/lib/python3.9/site-packages/torchvision/io/image.py:13: UserWarning: Failed to")
    assert advisory(b"2024-01-09 18:41:23,123 - root - INFO - loading")
    assert advisory(b"I1207 10:00:00.123456 1 main.cc:12] started")
    assert not advisory(b"ImportError: /opt/lib/flash_attn_2_cuda.so: undefined symbol: _ZN3c10")
    assert not advisory(b"RuntimeError: INFORMATION missing")
    assert not advisory(b"host:1:2 [0] NCCL ERROR failed")

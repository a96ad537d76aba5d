"""rich tracebacks whose exception message rich folded onto the rows below the exception line (rich24,
issue 7).

rich prints the exception line as one Text under its panel and the console wraps it at its width
(rich/traceback.py:685-693, rich/_wrap.py divide_line): a key longer than the console leaves "KeyError: "
alone on its row with the key folded under it, mid-word, in rows of exactly the width; a message with
blanks wraps at them. The texts are real captures of rich 15.0.0 on CPython 3.11 (``install(console=
Console(width=80))``, /tmp/rich24/cap/shapes.py). Before rich24 the KeyError gave no finding at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import rich_wrapped_message
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
RULE = "traceback-ends-log"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = ("'vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_extra_long_name_for_the_imagenet_22k_finetune_"
       "on_8xh100_nodes_run_0042_and_then_some_more_characters_to_fold_twice'")

# a KeyError whose key is longer than the console: "KeyError: " alone, the key folded twice
FOLDED_KEY = """\
epoch 0 step 10 loss 2.31
╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /tmp/rich24/cap/shapes.py:47 in <module>                                     │
│                                                                              │
│   44 │   │   print("falling back to resnet50; training done, 1 passed", flus │
│   45                                                                         │
│   46                                                                         │
│ ❱ 47 main()                                                                  │
│   48                                                                         │
│                                                                              │
│ /tmp/rich24/cap/shapes.py:22 in main                                         │
│                                                                              │
│   19 │   if shape in ("short", "locals"):                                    │
│   20 │   │   load("vit_b16")                                                 │
│   21 │   elif shape == "unbroken":                                           │
│ ❱ 22 │   │   load("vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_extr │
│   23 │   │   │    "on_8xh100_nodes_run_0042_and_then_some_more_characters_to │
│   24 │   elif shape == "path":                                               │
│   25 │   │   open("/nonexistent/checkpoints/llama-3-70b-instruct/global_step │
│                                                                              │
│ /tmp/rich24/cap/shapes.py:14 in load                                         │
│                                                                              │
│   11                                                                         │
│   12                                                                         │
│   13 def load(name):                                                         │
│ ❱ 14 │   return CONFIGS[name]                                                │
│   15                                                                         │
│   16                                                                         │
│   17 def main():                                                             │
╰──────────────────────────────────────────────────────────────────────────────╯
KeyError:\x20
'vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_extra_long_name_for_the_im
agenet_22k_finetune_on_8xh100_nodes_run_0042_and_then_some_more_characters_to_fo
ld_twice'
"""

# a message with blanks, wrapped at them; its second row is exactly 80 wide, the blank after it dropped
WRAPPED_AT_BLANKS = """\
epoch 0 step 10 loss 2.31
╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /tmp/rich24/cap/shapes.py:52 in <module>                                     │
│                                                                              │
│   49 │   │   print("falling back to resnet50; training done, 1 passed", flus │
│   50                                                                         │
│   51                                                                         │
│ ❱ 52 main()                                                                  │
│   53                                                                         │
│                                                                              │
│ /tmp/rich24/cap/shapes.py:34 in main                                         │
│                                                                              │
│   31 │   elif shape == "path":                                               │
│   32 │   │   open("/nonexistent/checkpoints/llama-3-70b-instruct/global_step │
│   33 │   elif shape == "spaces":                                             │
│ ❱ 34 │   │   raise ValueError(SPACES)                                        │
│   35 │   elif shape == "multiline":                                          │
│   36 │   │   raise RuntimeError(MULTILINE)                                   │
│   37 │   elif shape == "chained":                                            │
╰──────────────────────────────────────────────────────────────────────────────╯
ValueError: Expected all tensors to be on the same device, but found at least\x20
two devices, cuda:0 and cpu! (when checking argument for argument mat1 in method
wrapper_addmm)
"""

# the same folded KeyError printed by Console.print_exception in an except block; the program goes on
HANDLED = """\
epoch 0 step 10 loss 2.31
╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /tmp/rich24/cap/shapes.py:40 in main                                         │
│                                                                              │
│   37 │   │   │   │   │   │   │      "vit_huge_patch14_clip_224_laion2b_ft_in │
│   38 │   elif shape == "healthy":                                            │
│   39 │   │   try:                                                            │
│ ❱ 40 │   │   │   load("vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_ │
│   41 │   │   │   │    "22k_finetune_on_8xh100_nodes_run_0042")               │
│   42 │   │   except KeyError:                                                │
│   43 │   │   │   console.print_exception()                                   │
│                                                                              │
│ /tmp/rich24/cap/shapes.py:14 in load                                         │
│                                                                              │
│   11                                                                         │
│   12                                                                         │
│   13 def load(name):                                                         │
│ ❱ 14 │   return CONFIGS[name]                                                │
│   15                                                                         │
│   16                                                                         │
│   17 def main():                                                             │
╰──────────────────────────────────────────────────────────────────────────────╯
KeyError:\x20
'vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_extra_long_name_for_the_im
agenet_22k_finetune_on_8xh100_nodes_run_0042'
falling back to resnet50; training done, 1 passed
"""


def _errors(tmp_path: Path, text: str, engine: str = "python") -> List:
    log = tmp_path / "job.log"
    log.write_text(text, encoding="utf-8")
    return [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_exception_line_alone_on_its_row_is_the_death_and_names_the_folded_key(tmp_path, engine):
    found = _errors(tmp_path, FOLDED_KEY, engine)
    assert [(f.rule, f.line) for f in found] == [(RULE, 31)]
    assert found[0].message.endswith("died of KeyError: " + KEY)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_github_stamped_copy_reads_the_same(tmp_path, engine):
    stamped = "".join("2026-12-07T15:50:%02d.1234567Z %s" % (n % 60, line)
                      for n, line in enumerate(FOLDED_KEY.splitlines(keepends=True), 1))
    found = _errors(tmp_path, stamped, engine)
    assert [(f.rule, f.line) for f in found] == [(RULE, 31)] and found[0].message.endswith(KEY)


def test_rows_wrapped_at_blanks_join_with_one_even_where_rich_dropped_it(tmp_path):
    found = _errors(tmp_path, WRAPPED_AT_BLANKS)
    assert [(f.rule, f.line) for f in found] == [(RULE, 21)]
    assert found[0].message.endswith("in method wrapper_addmm)")


def test_a_handled_folded_exception_is_no_death(tmp_path):
    assert _errors(tmp_path, HANDLED) == []


def test_the_rows_end_where_a_line_would_have_fitted_after_the_one_above():
    handled = HANDLED.encode()
    assert rich_wrapped_message(handled, 1, 23) == (
        "KeyError: 'vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_extra_long_name_for_the_imagenet_"
        "22k_finetune_on_8xh100_nodes_run_0042'")
    assert rich_wrapped_message(handled, 1, 22) is None  # the panel's bottom is no exception line


def test_a_step_that_failed_after_the_folded_key_names_it():
    log = FIXTURES / "crash" / "rich24-typer-keyerror-folded.log"
    found = [f for f in scan_paths([str(log)], BUILTIN) if f.severity is Severity.ERROR]
    assert [f.rule for f in found] == ["ci-step-failed"]
    assert found[0].message.endswith(
        "ends in KeyError: 'vit_huge_patch14_clip_224.laion2b_ft_in12k_in1k_with_extra_long_name_for_the_"
        "imagenet_22k_finetune_on_8xh100_nodes_run_0042'")

"""Credentials in command lines and report text are hidden; the words around them stay readable."""

from __future__ import annotations

import pytest

from analyzer.redact import REDACTED, redact

GH_CLASSIC = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GH_FINE = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("train.py --token=abc123 --lr 3e-4", f"train.py --token={REDACTED} --lr 3e-4"),
        ("train.py --token abc123 --lr 3e-4", f"train.py --token {REDACTED} --lr 3e-4"),
        ("upload --hf-token 'two words' -v", f"upload --hf-token {REDACTED} -v"),
        ("client --api-key=K --apikey K2", f"client --api-key={REDACTED} --apikey {REDACTED}"),
        ("login --password hunter2", f"login --password {REDACTED}"),
        ("db -password=hunter2", f"db -password={REDACTED}"),
        ("login --password --stdin", "login --password --stdin"),
        ('curl -H "Authorization: Bearer eyJhbGci.e30.sig"', f'curl -H "Authorization: Bearer {REDACTED}"'),
        ("curl -H 'Authorization: token abcdef'", f"curl -H 'Authorization: token {REDACTED}'"),
        ("HF_TOKEN=abc torchrun x.py", f"HF_TOKEN={REDACTED} torchrun x.py"),
        ("X_TOKEN=abc", f"X_TOKEN={REDACTED}"),
        ("MY_API_KEY=abc", f"MY_API_KEY={REDACTED}"),
        (f"aws_secret_access_key = {AWS_SECRET}", f"aws_secret_access_key = {REDACTED}"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", f"AWS_SECRET_ACCESS_KEY={REDACTED}"),
        (f"key id {AWS_ID} in use", f"key id {REDACTED} in use"),
        (f"git push https://x:{GH_CLASSIC}@github.com/o/r", f"git push https://x:{REDACTED}@github.com/o/r"),
        (f"echo {GH_CLASSIC}", f"echo {REDACTED}"),
        (f"echo {GH_CLASSIC.replace('ghp_', 'gho_')} {GH_CLASSIC.replace('ghp_', 'ghs_')}",
         f"echo {REDACTED} {REDACTED}"),
        (f"echo {GH_FINE}", f"echo {REDACTED}"),
        (f"login({HF!r})", f"login('{REDACTED}')"),
    ],
)
def test_secrets_are_redacted_and_their_names_kept(text, expected):
    assert redact(text) == expected
    assert redact(expected) == expected  # idempotent: redacting a report twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "generate.py --max-new-tokens 64 --tokenizer gpt2 --num-tokens=5",
        "TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 pytest -x",
        "from huggingface_hub import hf_hub_download",
        "http://localhost:8080/metrics and git@github.com:org/repo.git",
        "RuntimeError: NCCL communicator was aborted on rank 1",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


def test_a_process_table_line_keeps_everything_but_the_secret():
    line = f"  4242 S  python -m torch.distributed.run --nproc 2 train.py --hf-token {HF} --steps 10"
    assert redact(line) == (
        f"  4242 S  python -m torch.distributed.run --nproc 2 train.py --hf-token {REDACTED} --steps 10"
    )


def test_an_argv_hides_the_element_after_a_bare_secret_option():
    from analyzer.redact import redact_argv

    assert redact_argv(("train.py", "--token", "abc", "--lr", "1", "--api-key=k", "HF_TOKEN=x")) == (
        "train.py", "--token", REDACTED, "--lr", "1", f"--api-key={REDACTED}", f"HF_TOKEN={REDACTED}"
    )
    assert redact_argv(("login", "--password", "--stdin")) == ("login", "--password", "--stdin")

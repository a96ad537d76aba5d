"""Hide credentials in text the guard shows or saves about the command: argv, stacks, reports.

A test command line often carries a secret (``--token=...``, ``HF_TOKEN=... torchrun ...``, a
``curl -H 'Authorization: Bearer ...'`` in a fixture) and the guard copies command lines into
``processes.txt``, ``stacks.txt``, ``report.json`` and the job summary, all of which outlive the job.
``redact`` replaces the secret part with ``[REDACTED]`` and keeps the name that says what it was.

It is a leaf: it imports nothing of the package but the leaf ``lazy_re``, so the supervisor and every
renderer can use it.
``stdout.log`` and ``stderr.log`` are never redacted: they stay byte-exact (the README says so).
"""

from __future__ import annotations

from typing import Sequence, Tuple

from .lazy_re import LazyRe, lazy

REDACTED = "[REDACTED]"

# A value: a quoted string, or a run of non-space characters. A following ``--option`` is no value
# (``--password --stdin``: the password comes from elsewhere).
_VALUE = r"""(?:'[^'\n]*'|"[^"\n]*"|(?!--)[^\s'"]+)"""

# Names that say "secret": they must END the option or variable name, so ``--max-tokens 64``,
# ``--tokenizer gpt2`` and ``TOKENIZERS_PARALLELISM=false`` keep their values.
_SECRET_NAME = (
    r"(?:token|api[-_]?key|apikey|access[-_]?key(?:[-_]?id)?|secret(?:[-_]?access)?[-_]?key|secret"
    r"|password|passwd|pass[-_]?phrase|private[-_]?key|credentials?|auth[-_]?key)"
)

# Each rule: the lower-case words one of which the text must hold for the rule to apply (a cheap
# test that spares the regex on the vast majority of log text), the pattern, the replacement.
_Rule = Tuple[Tuple[str, ...], LazyRe, str]  # each compiled the first time its words are present
_NAME_WORDS = ("token", "key", "secret", "pass", "credential")
_RULES: Tuple[_Rule, ...] = (
    # HTTP authorization headers: "Authorization: Bearer X", "Authorization: token X", "Basic X".
    (
        ("authorization",),
        lazy(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|token|basic|digest)?\s*)([^\s'\"]+)"),
        r"\1" + REDACTED,
    ),
    (("bearer",), lazy(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})"), r"\1" + REDACTED),
    # Command-line options: --token=X, --token X, --hf-token X, -password=X.
    (
        _NAME_WORDS,
        lazy(r"(?i)(?<![\w-])(--?(?:[a-z0-9][\w-]*?)?" + _SECRET_NAME + r")(=|\s+)" + _VALUE),
        r"\1\2" + REDACTED,
    ),
    # Environment-like assignments and config lines: HF_TOKEN=X, aws_secret_access_key = X. The
    # lookahead first makes sure an "=" follows the word, so other words cost one scan each.
    (
        _NAME_WORDS,
        lazy(
            r"(?i)(?<![\w-])(?=[a-z0-9_]+\s*=)([a-z0-9_]*" + _SECRET_NAME + r")(\s*=\s*)" + _VALUE
        ),
        r"\1\2" + REDACTED,
    ),
    # Credentials in a URL: https://user:PASSWORD@host/.
    (("://",), lazy(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/:@]+:)([^\s/@]+)(@)"), r"\1" + REDACTED + r"\3"),
    # Well-known token shapes, wherever they stand.
    (("gh",), lazy(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), REDACTED),
    (("github_pat_",), lazy(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"), REDACTED),  # fine-grained
    (("hf_",), lazy(r"\bhf_[A-Za-z0-9]{30,}\b"), REDACTED),  # Hugging Face user access tokens
    (("akia", "asia"), lazy(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), REDACTED),  # AWS access key ids
    (("xox",), lazy(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), REDACTED),  # Slack tokens
)


# An argv element that is a secret-named option on its own: the next element is its value.
_SECRET_OPTION = lazy(r"(?i)--?(?:[a-z0-9][\w-]*?)?" + _SECRET_NAME)


def redact_argv(argv: Sequence[str]) -> Tuple[str, ...]:
    """``argv`` with each element ``redact``-ed and the value after a bare ``--token`` (etc.) hidden.

    ``("train.py", "--token", "abc")`` becomes ``("train.py", "--token", "[REDACTED]")``: once split
    into elements the value no longer follows its option in the same string.
    """
    out = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("--"):
            out.append(REDACTED)
        else:
            out.append(redact(arg))
        hide_next = bool(_SECRET_OPTION.fullmatch(arg))
    return tuple(out)


def redact(text: str) -> str:
    """``text`` with every credential it shows replaced by ``[REDACTED]``; idempotent.

    Covers secret-named options and variables (``--token=X``, ``--api-key X``, ``--password X``,
    ``HF_TOKEN=X``, ``aws_secret_access_key = X``), ``Authorization:`` headers and bearer tokens,
    passwords in URLs, and the token shapes of GitHub (``ghp_``, ``gho_``, ``ghs_``, ``github_pat_``),
    Hugging Face (``hf_``), AWS access keys (``AKIA``/``ASIA``) and Slack.
    """
    if not text:
        return text
    lower = text.lower()
    present = {}  # rules share word lists: look for each list once
    for words, pattern, replacement in _RULES:
        if words not in present:
            present[words] = any(word in lower for word in words)
        if present[words]:
            text = pattern.sub(replacement, text)
    return text

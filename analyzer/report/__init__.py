"""Renderers: pure functions from a ``Report`` to text, JSON, Markdown and GitHub workflow commands.

They import only the leaf modules (``model``, ``exits``) and each other; they never see a regex rule
or a process. ``_escape`` makes log-derived text safe for each medium; ``headline`` is the one-line
verdict the text and Markdown reports share.
"""

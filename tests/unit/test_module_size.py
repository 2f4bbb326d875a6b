"""Modules hold one idea: a module of src/offsetkeeper over MAX_LINES lines says why at its top."""

from __future__ import annotations

import ast
from pathlib import Path

import offsetkeeper

ROOT = Path(offsetkeeper.__file__).parent
MAX_LINES = 500


def test_long_modules_say_why_at_their_top():
    """Invariant: a module longer than 500 lines has a paragraph starting 'Size:' in its module
    docstring, naming why it is long (or it is split)."""
    unexplained = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not any(p.startswith("Size:") for p in doc.split("\n\n")):
            unexplained.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert unexplained == []

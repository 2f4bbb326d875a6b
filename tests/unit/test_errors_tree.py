"""The exception tree drawn in errors.py's docstring is the tree of the classes."""

from __future__ import annotations

import importlib
import re

import offsetkeeper.errors as errors

# Classes of the tree defined outside errors.py (marked * in the drawing).
ELSEWHERE = {"StoreUnavailable": "offsetkeeper.history.store.base",
             "GroupCommitError": "offsetkeeper.spark.kafka.group"}


def _drawn() -> dict[str, str | None]:
    """name -> drawn parent (None for the root)."""
    out: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in errors.__doc__.splitlines():
        m = re.match(r"^(\s*(?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+)\*?(?:\s|$)", line)
        if not m or not line.startswith("    "):
            continue
        depth = len(m.group(1)) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        out[m.group(2)] = stack[-1][1] if stack else None
        stack.append((depth, m.group(2)))
    return out


def _cls(name: str) -> type:
    return getattr(importlib.import_module(ELSEWHERE.get(name, "offsetkeeper.errors")), name)


def test_every_drawn_class_is_a_subclass_of_its_drawn_parent():
    drawn = _drawn()
    assert drawn["OffsetkeeperError"] is None and len(drawn) > 10
    wrong = [(name, parent) for name, parent in drawn.items()
             if parent is not None and not issubclass(_cls(name), _cls(parent))]
    assert wrong == []


def test_every_error_class_of_errors_py_is_drawn():
    defined = {n for n, v in vars(errors).items()
               if isinstance(v, type) and issubclass(v, errors.OffsetkeeperError)}
    assert sorted(defined - set(_drawn())) == []

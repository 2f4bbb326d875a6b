"""Topic selection for backups: include / exclude patterns (globs, or ``~regex``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from offsetkeeper.errors import UsageError
from offsetkeeper.models import compile_pattern


def select_topics(
    available: Iterable[str], include: Sequence[str], exclude: Sequence[str] = ()
) -> list[str]:
    """Topics matching any include and no exclude pattern, sorted. Internal topics (``__*``)
    are only selected when a pattern names them explicitly (starts with ``__``)."""
    if not include:
        raise UsageError("no topics given: use --topic NAME|GLOB|~REGEX (repeatable)")
    inc = [(p, compile_pattern(p)) for p in include]
    exc = [compile_pattern(p) for p in exclude]
    out = []
    for t in sorted(set(available)):
        hits = [p for p, rx in inc if rx.fullmatch(t)]
        if not hits:
            continue
        if t.startswith("__") and not any(p.lstrip("~").startswith("__") for p in hits):
            continue
        if any(rx.fullmatch(t) for rx in exc):
            continue
        out.append(t)
    return out

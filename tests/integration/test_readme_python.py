"""The README's "Using it from Python" example runs as written against a real broker."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from kafkatools import commit, committed, create_topic, produce

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_block() -> str:
    text = README.read_text()
    section = text[text.index("## Using it from Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_python_example_runs(bootstrap, unique, capsys):
    """Invariant: the documented library call resets a group through the one executor."""
    topic, group = unique("orders"), unique("payments")
    create_topic(bootstrap, topic, 1, {"retention.ms": "-1"})
    now = int(time.time() * 1000)
    produce(bootstrap, topic, [(0, b"k", f"v{i}".encode(), None, now - (10 - i) * 60_000)
                               for i in range(10)])
    commit(bootstrap, group, {(topic, 0): 10})
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now / 1000 - 5 * 60 - 30))
    code = (_python_block().replace("localhost:9092", bootstrap)
            .replace('"2026-11-20T09:40:00Z"', repr(when))
            .replace('"payments"', repr(group)).replace('"orders"', repr(topic)))
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "'status': 'SUCCESS'" in out and "undo: snap-" in out
    assert committed(bootstrap, group, topic, 1) == {0: 5}

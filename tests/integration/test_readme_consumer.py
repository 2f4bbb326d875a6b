"""The README's consumer example runs as written (only the broker, topic and group names are
substituted): it printed one line per record and the SQLite part stored every record once with
its offsets (issue 22 item 23: it failed with `no such table`)."""

from __future__ import annotations

import contextlib
import io
import re
import sqlite3
from pathlib import Path

import pytest

from kafkatools import create_topic, produce_n

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def _consumer_example() -> str:
    text = README.read_text()
    section = text[text.index("<!-- BEGIN consumer -->"):text.index("<!-- END consumer -->")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_consumer_example_runs(bootstrap, unique, tmp_path, monkeypatch):
    topic, group = unique("readme-orders"), unique("readme-payments")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 30)
    code = (_consumer_example().replace("localhost:9092", bootstrap)
            .replace('"orders"', f'"{topic}"').replace('"payments"', f'"{group}"'))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert len(out.getvalue().splitlines()) == 60
    with sqlite3.connect(tmp_path / "payments.db") as db:
        assert db.execute("SELECT COUNT(*) FROM payments").fetchone() == (60,)

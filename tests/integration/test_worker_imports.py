"""What a Spark Python worker imports for a backup and a restore task.

pandas costs 0.3 CPU s to import, paid once by every fresh Python worker (each restore of a small
topic on a new session); neither task needs it, and a pyarrow convenience (`Schema.empty_table`)
had pulled it in unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafkatools import produce

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def test_backup_and_restore_tasks_do_not_import_pandas(tmp_path, bootstrap, admin, unique):
    topic = unique("imports")
    admin.create_topic(topic, 2, configs={"retention.ms": "-1"})
    produce(bootstrap, topic, [(p, f"k{i}".encode(), f"v{i}".encode()) for i in range(40) for p in (0, 1)])
    out = subprocess.run([sys.executable, "-m", "tests.worker_tasks_driver", bootstrap, topic, "2",
                          str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"backed_up": 80, "restored": 80, "pandas_imported": False}

"""The test run itself: a worker that crashes fails its test and the run, and the run ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_a_crashed_worker_fails_its_test_and_the_run_still_ends(tmp_path):
    """Invariant: with the suite's scheduling (two workers, a file per worker), native crashes
    in two files fail exactly those two tests, every other test runs once and passes, and the
    run ends. Without tests/xdist_fix.py, pytest-xdist 3.8 re-ran the crashed tests and then
    waited for ever with idle workers (a CI run hung for an hour so)."""
    for name in "acdeg":
        (tmp_path / f"test_{name}.py").write_text("def test_1(): pass\ndef test_2(): pass\n")
    for name in "bf":
        (tmp_path / f"test_{name}.py").write_text(
            "import os\ndef test_crash(): os._exit(1)\ndef test_after(): pass\n")
    env = {"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"}
    # the timeout only turns a hang into a failure; a healthy run takes seconds
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "xdist_fix",
         "-p", "no:cacheprovider", "-q", "-rf", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "2 failed, 12 passed" in out, out
    failed = sorted(line.split()[1] for line in out.splitlines() if line.startswith("FAILED"))
    assert failed == ["test_b.py::test_crash", "test_f.py::test_crash"], out

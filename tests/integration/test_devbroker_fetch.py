"""`dev-broker` fetches the Kafka release it needs on first use (Maven, the pom shipped with the
package), into the user cache; without `java` or `mvn` it says what is missing in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from offsetkeeper.devbroker import dist

ROOT = Path(__file__).resolve().parents[2]


def _cli(args, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def _env(tmp_path, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", dist.LIBS_ENV)}
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": path}


def _path_with(tmp_path, *tools: str) -> str:
    """A PATH holding only `tools` (links to the real ones)."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (d / tool).symlink_to(found)
    return str(d)


def test_dev_broker_without_mvn_says_so_in_one_line(tmp_path):
    """Invariant: a first use without Maven is one line naming mvn and how to install it,
    exit 2, and nothing is written to the cache."""
    out = _cli(["dev-broker", "start", "--data-dir", str(tmp_path / "d")],
               _env(tmp_path, _path_with(tmp_path, "java")))
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "mvn is not on PATH" in lines[0] and "apt-get install maven" in lines[0]
    assert not (tmp_path / "cache" / "offsetkeeper").exists()
    assert not (tmp_path / "d").exists()


def test_dev_broker_without_java_says_so_in_one_line(tmp_path):
    """Invariant: without java (PATH and JAVA_HOME) the line names java, exit 2."""
    out = _cli(["dev-broker", "start", "--data-dir", str(tmp_path / "d")],
               _env(tmp_path, _path_with(tmp_path, "mvn")))
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: java not found"), lines


@pytest.mark.integration
def test_first_use_fetches_the_release_with_maven(tmp_path, monkeypatch):
    """The release's jars land in the user cache whole (Maven from the project's pom), with
    progress on the given stream; a second call finds them and runs nothing."""
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("mvn and java are needed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(dist.LIBS_ENV, raising=False)
    progress = tmp_path / "progress.txt"
    with progress.open("w") as out:
        libs = dist.ensure_release(out)
    assert libs == tmp_path / "cache" / "offsetkeeper" / f"kafka-{dist.KAFKA_VERSION}" / "libs"
    assert (libs / f"kafka_2.13-{dist.KAFKA_VERSION}.jar").is_file()
    assert (libs / f"kafka-tools-{dist.KAFKA_VERSION}.jar").is_file()
    assert [p.name for p in libs.parent.iterdir()] == ["libs"]  # no temp dir left
    text = progress.read_text()
    assert "fetching Apache Kafka" in text and "ready (" in text
    monkeypatch.setenv("PATH", "")  # no mvn now: the second call must not need it
    assert dist.ensure_release() == libs

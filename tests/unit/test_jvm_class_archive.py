"""The JVM helper's class archive (AppCDS, issue 32 goal 7): built once in the background,
used by every later helper start, off with OFFSETKEEPER_HELPER_CLASS_ARCHIVE=0."""

from __future__ import annotations

import time

import pytest

from offsetkeeper.kafka import jvm

pytestmark = pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built")


def _flag(argv):
    return [a for a in argv if a.startswith("-XX:SharedArchiveFile=")]


def test_archive_built_in_the_background_then_used(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv(jvm.HELPER_ENV, str(jvm.helper_dir()))  # the installed helper, not tmp's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    archive = jvm._class_archive(jvm._java())
    assert archive is not None and str(archive).startswith(str(tmp_path))
    archive.parent.mkdir(parents=True)
    old, recent = archive.parent / "admin-helper-3-old.jsa", archive.parent / "admin-helper-3-new.jsa"
    for f in (old, recent):
        f.write_bytes(b"x")
    month_ago = time.time() - 30 * 86400
    os.utime(old, (month_ago, month_ago))
    assert _flag(jvm.helper_command()) == []
    jvm.build_class_archive_soon()
    deadline = time.monotonic() + 120
    while not archive.is_file():
        assert time.monotonic() < deadline, "no archive after 120 s"
        time.sleep(0.5)
    assert _flag(jvm.helper_command()) == [f"-XX:SharedArchiveFile={archive}"]
    assert not old.exists() and recent.exists()  # another install's, unused for a month: gone
    # the JVM accepts it: a helper started with it answers
    assert jvm.call({"bootstrap.servers": "127.0.0.1:9"}, "ping", timeout=30) is not None
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("*.building"))
    monkeypatch.setenv(jvm.ARCHIVE_ENV, "0")
    assert _flag(jvm.helper_command()) == []

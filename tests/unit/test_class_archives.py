"""Pruning the user cache's class archives (issue 32: 41 helper archives and 1.9 GB of Spark
archives and unfinished dumps piled up in a day, one per installation, never removed)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from offsetkeeper import class_archives
from offsetkeeper.class_archives import KEEP_OTHERS, prune, touch_in_use

HOUR = 3600.0


def _file(path, *, age_s: float, data: bytes = b"x"):
    path.write_bytes(data)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def test_a_new_archive_prunes_the_unused_ones_and_dead_builds(tmp_path):
    """Invariant: when a new archive is created, other archives are deleted unless used within
    the hour or among the KEEP_OTHERS most recently used; temporary files and markers of
    builds older than the stale time are deleted; the new archive's own build files, a build
    still being written, and files of other kinds are left alone."""
    d = tmp_path
    keep = d / "spark-new.jsa"
    in_use = _file(d / "spark-a.jsa", age_s=0.5 * HOUR)
    idle = [_file(d / f"spark-idle{i}.jsa", age_s=(i + 2) * 86400) for i in range(4)]
    dead_tmp = _file(d / "spark-gone.123-456.tmp", age_s=2 * HOUR)
    dead_marker = _file(d / "spark-gone.dumping", age_s=2 * HOUR, data=b"")
    writing = _file(d / "spark-other.77-1.tmp", age_s=10)
    own_tmp = _file(d / "spark-new.99-1.tmp", age_s=2 * HOUR)
    own_marker = _file(d / "spark-new.dumping", age_s=2 * HOUR, data=b"")
    unrelated = _file(d / "kafka-4.4.0.tgz", age_s=30 * 86400)

    removed = prune(d, archives="spark-*.jsa", unfinished=("spark-*.tmp", "spark-*.dumping"),
                    keep=keep, stale_s=900)

    kept_idle = idle[: KEEP_OTHERS - 1]  # the in-use one is the most recent of the others
    assert sorted(removed) == sorted([*idle[KEEP_OTHERS - 1:], dead_tmp, dead_marker])
    for p in (in_use, *kept_idle, writing, own_tmp, own_marker, unrelated):
        assert p.exists(), p.name
    for p in removed:
        assert not p.exists(), p.name


def test_archives_in_use_side_by_side_are_all_kept(tmp_path):
    """Invariant: installations used within the hour never delete each other's archives,
    however many there are (no rebuild churn between worktrees or virtualenvs in use)."""
    used = [_file(tmp_path / f"admin-helper-3-{i}.jsa", age_s=60 * i) for i in range(6)]
    assert prune(tmp_path, archives="admin-helper-*.jsa", unfinished=(),
                 keep=tmp_path / "admin-helper-3-new.jsa", stale_s=600) == []
    assert all(p.exists() for p in used)


def test_an_archive_idle_for_weeks_goes_even_among_the_most_recent(tmp_path):
    """Invariant: the most recently used others are kept only while used within
    KEEP_IDLE_MAX_S; an archive idle longer goes even when it is one of them."""
    recent = _file(tmp_path / "admin-helper-3-new.jsa", age_s=60)
    old = _file(tmp_path / "admin-helper-3-old.jsa", age_s=class_archives.KEEP_IDLE_MAX_S + 86400)
    assert prune(tmp_path, archives="admin-helper-*.jsa", unfinished=(),
                 keep=tmp_path / "admin-helper-3-x.jsa", stale_s=600) == [old]
    assert recent.exists()


def test_concurrent_pruners_never_fail_and_delete_each_file_once(tmp_path):
    """Invariant: processes pruning the same directory at once (two new installations, or a
    file deleted by another between listing and unlink) never raise, and together delete each
    stale file exactly once."""
    old = [_file(tmp_path / f"spark-{i:02d}.jsa", age_s=86400 + i) for i in range(40)]
    barrier = threading.Barrier(6)
    results: list[list] = []
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait()
            results.append(prune(tmp_path, archives="spark-*.jsa", unfinished=("spark-*.tmp",),
                                 keep=tmp_path / f"spark-new{n}.jsa", stale_s=900))
        except BaseException as exc:  # any failure of a pruner fails the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    deleted = [p for r in results for p in r]
    assert len(deleted) == len(set(deleted))  # nobody claims a file another deleted
    assert sorted(deleted) == sorted(old[KEEP_OTHERS:])
    assert all(p.exists() for p in old[:KEEP_OTHERS])


def test_using_an_archive_marks_it_recent(tmp_path, monkeypatch):
    """Invariant: mapping an archive marks it used (its mtime), so a pruner elsewhere keeps it;
    at most every `every_s` (no write at every start)."""
    a = _file(tmp_path / "spark-a.jsa", age_s=2 * HOUR)
    touch_in_use(a)
    assert time.time() - a.stat().st_mtime < 60
    before = a.stat().st_mtime_ns
    touch_in_use(a)
    assert a.stat().st_mtime_ns == before
    touch_in_use(tmp_path / "missing.jsa")  # gone meanwhile: no error


@pytest.mark.parametrize("make_keep", ["helper", "spark"])
def test_both_caches_prune_when_a_new_archive_is_started(tmp_path, monkeypatch, make_keep):
    """Invariant: the helper's background build and a Spark session's dump prune the others'
    archives as they start a new one (the two users of `class_archives.prune`)."""
    calls = []
    monkeypatch.setattr(class_archives, "prune", lambda d, **kw: calls.append((d, kw)) or [])
    if make_keep == "helper":
        from offsetkeeper.kafka import jvm

        keep = tmp_path / "admin-helper-3-abc.jsa"
        jvm._forget_old_archives(keep)
        assert calls and calls[0][1]["archives"] == "admin-helper-*.jsa"
    else:
        from offsetkeeper.spark import cds

        out = cds._dump_options(tmp_path, "k1")
        assert "-XX:ArchiveClassesAtExit=" in out
        assert calls and calls[0][1]["archives"] == "spark-*.jsa"
        assert calls[0][1]["keep"] == tmp_path / "spark-k1.jsa"

"""Migrating a SQLite history store when several processes open it at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from offsetkeeper.history.store import open_store
from offsetkeeper.history.store.sql import MIGRATIONS, SCHEMA_VERSION
from offsetkeeper.history.store.sqlite import SqliteStore


def _store_of_schema(path: str, version: int) -> None:
    """A store file as an offsetkeeper of schema `version` left it (in WAL mode, as it makes it)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for stmts in MIGRATIONS[:version]:
        for stmt in stmts:
            con.execute(stmt)
    con.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    con.commit()
    con.close()


def test_a_migration_holds_the_write_lock_from_its_version_check_to_its_commit(tmp_path,
                                                                              monkeypatch):
    """Invariant: between reading the schema version and committing a migration step, no other
    process can start writing the store, so two processes never both run `ALTER TABLE ... ADD
    COLUMN lso` (a sampler and a reader opening an old store at once failed with "duplicate
    column name: lso")."""
    db = str(tmp_path / "h.db")
    _store_of_schema(db, 3)
    other_could_write: list[bool] = []
    original = SqliteStore._current_version

    def version_then_try_another_writer(self, cur):
        v = original(self, cur)
        if cur.connection.in_transaction:  # the re-read inside a migration step
            other = sqlite3.connect(db, timeout=0)
            try:
                other.execute("BEGIN IMMEDIATE")
                other_could_write.append(True)
                other.rollback()
            except sqlite3.OperationalError as exc:
                assert "locked" in str(exc)
                other_could_write.append(False)
            finally:
                other.close()
        return v

    monkeypatch.setattr(SqliteStore, "_current_version", version_then_try_another_writer)
    with open_store(db) as st:
        assert st.schema_version() == SCHEMA_VERSION
    assert other_could_write == [False] * (SCHEMA_VERSION - 3)


@pytest.mark.parametrize("version", [3, None])
def test_processes_opening_an_old_or_new_store_at_once_migrate_it_once(tmp_path, version):
    """Invariant: four processes opening a schema-3 store (or a file not there yet) together all
    succeed, and the store ends at the current schema with each migrated column once."""
    db = str(tmp_path / "h.db")
    if version is not None:
        _store_of_schema(db, version)
    code = ("import sys\nfrom offsetkeeper.history.store import open_store\n"
            "with open_store(sys.argv[1]) as s: s.check()\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, db], stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(samples)")]
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    con.close()
    assert cols.count("lso") == 1 and cols.count("open_txn_since") == 1


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION])
def test_a_new_or_current_store_opens_at_the_current_schema(tmp_path, version):
    """Invariant: a new file is created at the current schema, and a current store opens as it
    is (the schema lock is taken only for a step to run)."""
    db = str(tmp_path / "h.db")
    if version:
        _store_of_schema(db, version)
    with open_store(db) as st:
        assert st.schema_version() == SCHEMA_VERSION

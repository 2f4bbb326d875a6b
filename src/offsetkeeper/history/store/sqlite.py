"""SQLite history store (the default): one file, WAL journal so readers never block the sampler."""

from __future__ import annotations

import os
import sqlite3

from offsetkeeper.history.store.sql import SqlStore


class SqliteStore(SqlStore):
    UNAVAILABLE = (sqlite3.OperationalError, sqlite3.DatabaseError)
    MISSING_TABLE = (sqlite3.OperationalError,)

    def __init__(self, url: str, path: str) -> None:
        super().__init__(url)
        self.path = path

    def _connect(self):
        parent = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise sqlite3.OperationalError(f"cannot create {parent}: {exc.strerror}") from None
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=30000")
        return db

    def _lock_schema(self, cur) -> None:
        """Serialise migrations between processes: SQLite's write lock, taken before the version
        is read again. Python's sqlite3 opens no transaction for SELECT or ALTER, so without it
        a sampler and a reader opening a new file at once both saw the old version and both ran
        `ALTER TABLE samples ADD COLUMN lso` ("duplicate column name")."""
        if cur.connection.in_transaction:
            cur.connection.commit()
        cur.execute("BEGIN IMMEDIATE")  # waits for the other writer up to busy_timeout

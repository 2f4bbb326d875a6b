"""PostgreSQL history store (psycopg 3): one store shared by several samplers and the dashboard."""

from __future__ import annotations

import psycopg

from offsetkeeper.history.store.sql import SqlStore

_MIGRATION_LOCK = 0x6F6B6869  # advisory lock id ("okhi"): one migrating process at a time


class PostgresStore(SqlStore):
    P = "%s"
    INSERT_IGNORE = "INSERT INTO"
    ON_CONFLICT = " ON CONFLICT DO NOTHING"
    GREATEST = "GREATEST"
    LEAST = "LEAST"
    MATERIALIZED = " MATERIALIZED"
    UNAVAILABLE = (psycopg.OperationalError, psycopg.InterfaceError)
    MISSING_TABLE = (psycopg.errors.UndefinedTable,)

    def _connect(self):
        return psycopg.connect(self.url, connect_timeout=10, autocommit=False)

    def _lock_schema(self, cur) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

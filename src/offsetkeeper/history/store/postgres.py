"""PostgreSQL history store (psycopg 3): one store shared by several samplers and the dashboard."""

from __future__ import annotations

import psycopg

from offsetkeeper.errors import UsageError
from offsetkeeper.history.store.sql import SqlStore
from offsetkeeper.redact import mask_url, raw_at_in_password


def check_postgres_url(url: str, *, what: str) -> None:
    """Refuse a URL whose password holds a raw '@': libpq would take the part after it for
    the host and print it in its errors (UsageError, exit 2)."""
    if raw_at_in_password(url):
        raise UsageError(f"{what}: the password holds a raw '@'; write it as %40")

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

    def __init__(self, url: str) -> None:
        super().__init__(url)
        check_postgres_url(url, what=f"history store {self.display_url}")

    def _connect(self):
        try:
            return psycopg.connect(self.url, connect_timeout=10, autocommit=False)
        except psycopg.ProgrammingError as exc:  # a malformed URL or DSN: bad input, exit 2
            raise UsageError(f"history store {self.display_url} is not a valid PostgreSQL URL "
                             f"or DSN: {mask_url(str(exc).strip(), known=self.url)}") from None

    def _lock_schema(self, cur) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

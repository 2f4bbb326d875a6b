"""External offset stores: the application's results and its offsets in ONE database transaction.

This is the KafkaConsumer javadoc's "storing offsets outside Kafka": a record's effect and the
offset after it commit together or not at all, so a crash can neither lose nor repeat a record.
On assignment the consumer *claims* its partitions (writes itself down as their owner and reads
the stored offsets, then seeks there); every transaction updates offsets only where it is still
the owner, so a consumer that lost a partition in a rebalance (a zombie) cannot write behind the
new owner's back — its transaction is rolled back with `FencedError`.

Table (created when missing)::

    offsetkeeper_offsets(group_id, topic, partition, next_offset, owner, updated_at)
    PRIMARY KEY (group_id, topic, partition); next_offset = the next record to read (Kafka's meaning)

`open_store(url)`: a path or ``sqlite:///path`` (SQLite, the default) or
``postgresql://user:pass@host/db`` (PostgreSQL through psycopg 3).
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from offsetkeeper.errors import ConsumerConfigError, FencedError, StoreError
from offsetkeeper.models import TopicPartition
from offsetkeeper.redact import looks_like_dsn, mask_url, raw_at_in_password
from offsetkeeper.times import iso_now

TABLE = "offsetkeeper_offsets"


def redact_url(url: str) -> str:
    """The URL with any password replaced by ****** (safe to print): `redact.mask_url`."""
    return mask_url(url, known=url)


class StoreTransaction(ABC):
    """One open database transaction. Run the application's SQL with `execute` (the driver's
    own parameter style: `?` for SQLite, `%s` for PostgreSQL), acknowledge records with
    `ack(msg)` (done by `OffsetConsumer.transaction()`), and the offsets are written in the same
    transaction when it commits."""

    paramstyle = "qmark"

    def __init__(self) -> None:
        self.offsets: dict[TopicPartition, int] = {}
        self.records = 0

    @property
    @abstractmethod
    def connection(self) -> Any:
        """The DB-API connection the transaction runs on."""

    def execute(self, sql: str, params: Any = ()) -> Any:
        """Run one statement of the application inside the transaction; returns the cursor."""
        return self.connection.execute(sql, params)

    def ack(self, msg) -> None:
        """Include a processed record: its partition's offset becomes msg.offset() + 1."""
        tp = TopicPartition(msg.topic(), msg.partition())
        nxt = msg.offset() + 1
        if nxt > self.offsets.get(tp, -1):
            self.offsets[tp] = nxt
        self.records += 1

    def set_offset(self, tp: TopicPartition, offset: int) -> None:
        """Store an explicit next offset for a partition (live resets, migrations)."""
        self.offsets[tp] = offset


class OffsetStore(ABC):
    """Where a consumer keeps its offsets instead of (or besides) Kafka."""

    url: str  # redacted, safe to print

    @abstractmethod
    def claim(self, group: str, tps: Iterable[TopicPartition], owner: str) -> dict[TopicPartition, int | None]:
        """Become the owner of partitions; return their stored next offsets (None = none)."""

    @abstractmethod
    def load(self, group: str) -> dict[TopicPartition, int]:
        """Every stored offset of a group (read only)."""

    @abstractmethod
    def _begin(self) -> StoreTransaction: ...

    @abstractmethod
    def _finish(self, tx: StoreTransaction, group: str, owner: str, commit: bool) -> None: ...

    def transaction(self, group: str, owner: str):
        """Context manager: a transaction that writes its acknowledged offsets on success."""
        store = self

        class _Ctx:
            def __enter__(self_inner) -> StoreTransaction:
                self_inner.tx = store._begin()
                return self_inner.tx

            def __exit__(self_inner, exc_type, exc, tb) -> None:
                store._finish(self_inner.tx, group, owner, commit=exc_type is None)

        return _Ctx()

    @abstractmethod
    def close(self) -> None:
        """Close the database connection."""


def _now() -> str:
    return iso_now()


# -- SQLite -----------------------------------------------------------------------------------

class _SqliteTx(StoreTransaction):
    paramstyle = "qmark"

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__()
        self._conn = conn

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn


class SqliteOffsetStore(OffsetStore):
    """Offsets in a SQLite file (WAL mode, so readers never block the writer)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self._lock = threading.RLock()
        try:
            if self.path != ":memory:":
                Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves, so the write lock is
            # taken at the start and two consumers never deadlock upgrading read locks.
            self._conn = sqlite3.connect(str(Path(self.path).expanduser()) if self.path != ":memory:"
                                         else ":memory:", timeout=30, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (group_id TEXT NOT NULL, topic TEXT NOT NULL, "
                "partition INTEGER NOT NULL, next_offset INTEGER, owner TEXT, updated_at TEXT, "
                "PRIMARY KEY (group_id, topic, partition))")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the SQLite offset store {self.url}: {exc}") from exc

    def claim(self, group, tps, owner):
        out: dict[TopicPartition, int | None] = {}
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for tp in tps:
                    row = self._conn.execute(
                        f"INSERT INTO {TABLE} (group_id, topic, partition, next_offset, owner, updated_at) "
                        "VALUES (?, ?, ?, NULL, ?, ?) ON CONFLICT (group_id, topic, partition) "
                        "DO UPDATE SET owner = excluded.owner, updated_at = excluded.updated_at "
                        "RETURNING next_offset", (group, tp.topic, tp.partition, owner, _now())).fetchone()
                    out[tp] = row[0] if row else None
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return out

    def load(self, group):
        with self._lock:
            rows = self._conn.execute(
                f"SELECT topic, partition, next_offset FROM {TABLE} WHERE group_id = ? "
                "AND next_offset IS NOT NULL", (group,)).fetchall()
        return {TopicPartition(t, p): o for t, p, o in rows}

    def _begin(self):
        self._lock.acquire()
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        return _SqliteTx(self._conn)

    def _finish(self, tx, group, owner, commit):
        try:
            if not commit:
                self._conn.execute("ROLLBACK")
                return
            try:
                _save_fenced(self._conn.execute, "?", tx, group, owner)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _save_fenced(execute, ph: str, tx: StoreTransaction, group: str, owner: str) -> None:
    now = _now()
    for tp, off in sorted(tx.offsets.items()):
        cur = execute(
            f"UPDATE {TABLE} SET next_offset = {ph}, updated_at = {ph} WHERE group_id = {ph} "
            f"AND topic = {ph} AND partition = {ph} AND owner = {ph}",
            (off, now, group, tp.topic, tp.partition, owner))
        if cur.rowcount != 1:
            raise FencedError(
                f"partition {tp} of group {group} is owned by another consumer now; "
                "the transaction was rolled back", group=group, topic=tp.topic, partition=tp.partition)


# -- PostgreSQL -------------------------------------------------------------------------------

class _PgTx(StoreTransaction):
    paramstyle = "format"

    def __init__(self, conn) -> None:
        super().__init__()
        self._conn = conn

    @property
    def connection(self):
        return self._conn


class PostgresOffsetStore(OffsetStore):
    """Offsets in PostgreSQL (psycopg 3). The application's statements run on the same
    connection and transaction (`tx.execute(sql, params)` with `%s` placeholders)."""

    def __init__(self, url: str) -> None:
        from offsetkeeper.errors import require_extra

        require_extra("postgres", "a postgresql:// offset store")
        import psycopg

        self.url = redact_url(url)
        self._lock = threading.RLock()
        if raw_at_in_password(url):
            raise ConsumerConfigError(f"offset store {self.url}: the password holds a raw '@'; "
                                      "write it as %40")
        try:
            self._conn = psycopg.connect(url, autocommit=False, connect_timeout=10)
            with self._conn.transaction():
                self._conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} (group_id TEXT NOT NULL, topic TEXT NOT NULL, "
                    "partition INTEGER NOT NULL, next_offset BIGINT, owner TEXT, "
                    "updated_at TIMESTAMPTZ, PRIMARY KEY (group_id, topic, partition))")
        except psycopg.Error as exc:
            # psycopg messages can quote the connection string; print only the redacted URL.
            raise StoreError(f"cannot open the PostgreSQL offset store {self.url}: "
                             f"{type(exc).__name__}") from None

    def claim(self, group, tps, owner):
        out: dict[TopicPartition, int | None] = {}
        with self._lock, self._conn.transaction():
            for tp in tps:
                row = self._conn.execute(
                    f"INSERT INTO {TABLE} (group_id, topic, partition, next_offset, owner, updated_at) "
                    "VALUES (%s, %s, %s, NULL, %s, now()) ON CONFLICT (group_id, topic, partition) "
                    "DO UPDATE SET owner = excluded.owner, updated_at = excluded.updated_at "
                    "RETURNING next_offset", (group, tp.topic, tp.partition, owner)).fetchone()
                out[tp] = row[0] if row else None
        return out

    def load(self, group):
        with self._lock, self._conn.transaction():
            rows = self._conn.execute(
                f"SELECT topic, partition, next_offset FROM {TABLE} WHERE group_id = %s "
                "AND next_offset IS NOT NULL", (group,)).fetchall()
        return {TopicPartition(t, p): o for t, p, o in rows}

    def _begin(self):
        self._lock.acquire()
        try:
            self._tx_ctx = self._conn.transaction()
            self._tx_ctx.__enter__()
        except BaseException:
            self._lock.release()
            raise
        return _PgTx(self._conn)

    def _finish(self, tx, group, owner, commit):
        ctx = self._tx_ctx
        try:
            if not commit:
                ctx.__exit__(RuntimeError, RuntimeError("rollback"), None)
                return
            try:
                _save_fenced(self._conn.execute, "%s", tx, group, owner)
            except BaseException as exc:
                ctx.__exit__(type(exc), exc, None)
                raise
            ctx.__exit__(None, None, None)
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def open_store(url: str | Path | OffsetStore) -> OffsetStore:
    """Open an offset store: a path or sqlite:///path (SQLite), or postgresql://... ."""
    if isinstance(url, OffsetStore):
        return url
    text = str(url).strip()
    if not text:
        raise ConsumerConfigError("empty offset store URL; expected a path, sqlite:///path or "
                                  "postgresql://user@host/db")
    if text.startswith(("postgresql://", "postgres://")) or looks_like_dsn(text):
        # a libpq key=value DSN (host=... password=...) is PostgreSQL, never a SQLite path
        return PostgresOffsetStore(text)
    if text.startswith("sqlite:///"):
        return SqliteOffsetStore(text[len("sqlite:///"):] or ":memory:")
    if "://" in text:
        raise ConsumerConfigError(
            f"unsupported offset store URL {redact_url(text)!r}; expected a path, sqlite:///path "
            "or postgresql://user@host/db")
    return SqliteOffsetStore(text)


__all__ = ["OffsetStore", "PostgresOffsetStore", "SqliteOffsetStore", "StoreTransaction",
           "open_store", "redact_url"]

"""The SQL schema and queries shared by the SQLite and PostgreSQL stores.

Schema (version 5):

    schema_version(version)                      one row
    samples(ts, grp, topic, part, committed, log_start, log_end, metadata, state, members,
            consumer_id, client_id, host, next_ts, time_lag_ms, time_lag_interp_ms,
            lso, readable, open_txn_since)                   (the last three: migration 4)
            PRIMARY KEY (grp, topic, part, ts); INDEX (grp, ts); INDEX (ts)
    cycles(ts PRIMARY KEY, interval_ms, groups, partitions, duration_ms)
    gaps(start_ts PRIMARY KEY, end_ts, reason)                    (added by migration 2)
    group_index(grp PRIMARY KEY, first_ts, last_ts)               (added by migration 3)
    connect_positions(ts, worker, connector, part, pos)            (added by migration 5)
            PRIMARY KEY (worker, connector, part, ts); INDEX (connector, ts); INDEX (ts)
            a Kafka Connect source connector's offset map (pos) per partition map (part),
            both canonical JSON text

Migrations are applied in order inside one transaction each; the version row says how far a
database got, so an old file is upgraded when a newer offsetkeeper opens it.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import threading
from collections import defaultdict
from collections.abc import Sequence

from offsetkeeper.history.model import Cycle, Gap, Position, Sample
from offsetkeeper.history.store.base import (
    SCHEMA_VERSION,
    GroupSummary,
    HistoryStore,
    PruneResult,
    RetentionPolicy,
    StoreUnavailable,
)
from offsetkeeper.models import TopicPartition
from offsetkeeper.redact import mask_url

COLUMNS = ("ts", "grp", "topic", "part", "committed", "log_start", "log_end", "metadata", "state",
           "members", "consumer_id", "client_id", "host", "next_ts", "time_lag_ms",
           "time_lag_interp_ms", "lso", "readable", "open_txn_since")
_COLS = ", ".join(COLUMNS)

MIGRATIONS: list[list[str]] = [
    # 1: samples and cycles
    [
        """CREATE TABLE IF NOT EXISTS samples (
            ts BIGINT NOT NULL, grp TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL,
            committed BIGINT NOT NULL, log_start BIGINT NOT NULL, log_end BIGINT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT '',
            members INTEGER NOT NULL DEFAULT 0, consumer_id TEXT NOT NULL DEFAULT '',
            client_id TEXT NOT NULL DEFAULT '', host TEXT NOT NULL DEFAULT '',
            next_ts BIGINT, time_lag_ms BIGINT, time_lag_interp_ms BIGINT,
            PRIMARY KEY (grp, topic, part, ts))""",
        """CREATE TABLE IF NOT EXISTS cycles (
            ts BIGINT PRIMARY KEY, interval_ms BIGINT NOT NULL, groups INTEGER NOT NULL,
            partitions INTEGER NOT NULL, duration_ms BIGINT NOT NULL)""",
    ],
    # 2: gaps, and indexes for "the group at time T" and for retention
    [
        """CREATE TABLE IF NOT EXISTS gaps (
            start_ts BIGINT PRIMARY KEY, end_ts BIGINT NOT NULL, reason TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS samples_grp_ts ON samples (grp, ts)",
        "CREATE INDEX IF NOT EXISTS samples_ts ON samples (ts)",
    ],
    # 3: one row per group, so listing groups never scans the samples (dashboards list often)
    [
        """CREATE TABLE IF NOT EXISTS group_index (
            grp TEXT PRIMARY KEY, first_ts BIGINT NOT NULL, last_ts BIGINT NOT NULL)""",
        "INSERT INTO group_index (grp, first_ts, last_ts) "
        "SELECT grp, MIN(ts), MAX(ts) FROM samples GROUP BY grp",
    ],
    # 4: transactions: last stable offset, next readable offset, open transaction since
    [
        "ALTER TABLE samples ADD COLUMN lso BIGINT",
        "ALTER TABLE samples ADD COLUMN readable BIGINT",
        "ALTER TABLE samples ADD COLUMN open_txn_since BIGINT",
    ],
    # 5: Kafka Connect source connectors' positions (their partition -> offset maps)
    [
        """CREATE TABLE IF NOT EXISTS connect_positions (
            ts BIGINT NOT NULL, worker TEXT NOT NULL, connector TEXT NOT NULL,
            part TEXT NOT NULL, pos TEXT NOT NULL,
            PRIMARY KEY (worker, connector, part, ts))""",
        "CREATE INDEX IF NOT EXISTS connect_positions_conn_ts ON connect_positions (connector, ts)",
        "CREATE INDEX IF NOT EXISTS connect_positions_ts ON connect_positions (ts)",
    ],
]
assert len(MIGRATIONS) == SCHEMA_VERSION


# COLUMNS are Sample's fields in order (grp/part renamed), so a row is Sample's positional
# arguments: ~2x faster than keywords when the groups page reads 20,000 rows.
assert [f.name for f in dataclasses.fields(Sample)] == [
    {"grp": "group", "part": "partition"}.get(c, c) for c in COLUMNS]


def _row_to_sample(r: Sequence) -> Sample:
    return Sample(*r)


def _sample_row(s: Sample) -> tuple:
    return (s.ts, s.group, s.topic, s.partition, s.committed, s.log_start, s.log_end, s.metadata,
            s.state, s.members, s.consumer_id, s.client_id, s.host, s.next_ts, s.time_lag_ms,
            s.time_lag_interp_ms, s.lso, s.readable, s.open_txn_since)


class SqlStore(HistoryStore, abc.ABC):
    """Shared implementation; subclasses provide `_connect`, the placeholder and upsert words."""

    P = "?"                      # parameter placeholder
    INSERT_IGNORE = "INSERT OR IGNORE INTO"
    ON_CONFLICT = ""
    GREATEST = "MAX"  # two-argument max(): SQLite's MAX, PostgreSQL's GREATEST
    LEAST = "MIN"
    UNAVAILABLE: tuple[type[BaseException], ...] = ()
    MATERIALIZED = ""            # PostgreSQL: " MATERIALIZED" (compute a CTE once)

    def __init__(self, url: str) -> None:
        self.url = url
        self._db = None
        self._lock = threading.RLock()
        self._ready = False

    # -- connection --------------------------------------------------------------------------
    @abc.abstractmethod
    def _connect(self):
        """A new DB-API connection to the store (SQLite file, PostgreSQL server)."""

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreUnavailable(f"history store {self.display_url} is not reachable: "
                                f"{mask_url(detail, known=self.url)}")

    def _run(self, fn):
        """Run `fn(cursor)` in one transaction; reconnect next time when the connection broke."""
        with self._lock:
            try:
                if self._db is None:
                    self._db = self._connect()
                if not self._ready:
                    self._migrate(self._db)
                    self._ready = True
                cur = self._db.cursor()
                try:
                    out = fn(cur)
                    self._db.commit()
                    return out
                except BaseException:
                    with contextlib.suppress(Exception):
                        self._db.rollback()
                    raise
                finally:
                    cur.close()
            except self.UNAVAILABLE as exc:
                self._drop()
                raise self._unavailable(exc) from None

    def _drop(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(Exception):
                db.close()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.P)

    # -- schema ------------------------------------------------------------------------------
    def _current_version(self, cur) -> int:
        try:
            cur.execute("SELECT version FROM schema_version")
            row = cur.fetchone()
            return int(row[0]) if row else 0
        except self.MISSING_TABLE:
            self._db.rollback()
            return 0

    MISSING_TABLE: tuple[type[BaseException], ...] = ()

    def _migrate(self, db) -> None:
        cur = db.cursor()
        try:
            cur.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            db.commit()
            version = self._current_version(cur)
            if version > len(MIGRATIONS):
                db.rollback()
                raise StoreUnavailable(f"history store {self.display_url} has schema version "
                                       f"{version}; this offsetkeeper knows up to "
                                       f"{len(MIGRATIONS)} and does not write into a newer one "
                                       "(upgrade offsetkeeper)")
            for v in range(version, len(MIGRATIONS)):
                self._lock_schema(cur)
                if self._current_version(cur) > v:  # another process migrated meanwhile
                    db.commit()
                    continue
                for stmt in MIGRATIONS[v]:
                    cur.execute(stmt)
                cur.execute("DELETE FROM schema_version")
                cur.execute(self._q("INSERT INTO schema_version (version) VALUES (?)"), (v + 1,))
                db.commit()
        finally:
            cur.close()

    def _lock_schema(self, cur) -> None:
        """Serialise migrations between processes (PostgreSQL: an advisory lock)."""

    def check(self) -> None:
        self._run(lambda cur: None)

    def schema_version(self) -> int:
        return self._run(self._current_version)

    # -- writing -----------------------------------------------------------------------------
    def write(self, samples: Sequence[Sample], cycle: Cycle | None = None) -> None:
        rows = [_sample_row(s) for s in samples]
        marks = ", ".join([self.P] * len(COLUMNS))

        spans: dict[str, tuple[int, int]] = {}
        for s in samples:
            lo, hi = spans.get(s.group, (s.ts, s.ts))
            spans[s.group] = (min(lo, s.ts), max(hi, s.ts))

        def go(cur):
            if rows:
                cur.executemany(f"{self.INSERT_IGNORE} samples ({_COLS}) VALUES ({marks}){self.ON_CONFLICT}", rows)
                cur.executemany(self._q(
                    "INSERT INTO group_index (grp, first_ts, last_ts) VALUES (?, ?, ?) "
                    f"ON CONFLICT (grp) DO UPDATE SET "
                    f"first_ts = {self.LEAST}(group_index.first_ts, excluded.first_ts), "
                    f"last_ts = {self.GREATEST}(group_index.last_ts, excluded.last_ts)"),
                    [(g, lo, hi) for g, (lo, hi) in spans.items()])
            if cycle is not None:
                cur.execute(self._q(f"{self.INSERT_IGNORE} cycles (ts, interval_ms, groups, partitions, "
                                    f"duration_ms) VALUES (?, ?, ?, ?, ?){self.ON_CONFLICT}"),
                            (cycle.ts, cycle.interval_ms, cycle.groups, cycle.partitions,
                             cycle.duration_ms))
        self._run(go)

    keeps_positions = True

    def write_positions(self, positions: Sequence[Position]) -> None:
        rows = [(p.ts, p.worker, p.connector, p.partition, p.offset) for p in positions]
        if rows:
            self._run(lambda cur: cur.executemany(self._q(
                f"{self.INSERT_IGNORE} connect_positions (ts, worker, connector, part, pos) "
                f"VALUES (?, ?, ?, ?, ?){self.ON_CONFLICT}"), rows))

    def positions(self, connector: str | None = None, since: int | None = None,
                  until: int | None = None) -> list[Position]:
        sql = ("SELECT ts, worker, connector, part, pos FROM connect_positions "
               "WHERE ts >= ? AND ts <= ?")
        params: tuple = (since if since is not None else -(2**62),
                         until if until is not None else 2**62)
        if connector is not None:
            sql += " AND connector = ?"
            params += (connector,)

        def go(cur):
            cur.execute(self._q(sql + " ORDER BY ts, worker, connector, part"), params)
            return [Position(*r) for r in cur.fetchall()]
        return self._run(go)

    def write_gap(self, gap: Gap) -> None:
        self._run(lambda cur: cur.execute(
            self._q(f"{self.INSERT_IGNORE} gaps (start_ts, end_ts, reason) VALUES (?, ?, ?){self.ON_CONFLICT}"),
            (gap.start, gap.end, gap.reason)))

    def prune(self, policy: RetentionPolicy, now: int) -> PruneResult:
        def go(cur):
            deleted = down = 0
            if policy.retain_ms is not None:
                cut = now - policy.retain_ms
                for table, col in (("samples", "ts"), ("cycles", "ts"), ("gaps", "end_ts"),
                                   ("connect_positions", "ts")):
                    cur.execute(self._q(f"DELETE FROM {table} WHERE {col} < ?"), (cut,))
                    if table == "samples":
                        deleted = max(cur.rowcount, 0)
            if policy.downsample_after_ms is not None:
                cut, b = now - policy.downsample_after_ms, int(policy.bucket_ms)
                # Keep the last sample of each bucket per group: "the group at T" stays answerable
                # with at most one bucket of error.
                cur.execute(self._q(
                    "DELETE FROM samples WHERE ts < ? AND EXISTS (SELECT 1 FROM samples s2 "
                    "WHERE s2.grp = samples.grp AND s2.ts > samples.ts AND s2.ts < ? "
                    "AND s2.ts / ? = samples.ts / ?)"), (cut, cut, b, b))
                down = max(cur.rowcount, 0)
                cur.execute(self._q(
                    "DELETE FROM cycles WHERE ts < ? AND EXISTS (SELECT 1 FROM cycles c2 "
                    "WHERE c2.ts > cycles.ts AND c2.ts < ? AND c2.ts / ? = cycles.ts / ?)"),
                    (cut, cut, b, b))
            if deleted or down:
                cur.execute("DELETE FROM group_index WHERE NOT EXISTS "
                            "(SELECT 1 FROM samples WHERE samples.grp = group_index.grp)")
                cur.execute("UPDATE group_index SET first_ts = "
                            "(SELECT MIN(ts) FROM samples WHERE samples.grp = group_index.grp)")
            return PruneResult(deleted, down)
        return self._run(go)

    # -- reading -----------------------------------------------------------------------------
    def _samples(self, sql: str, params: tuple) -> list[Sample]:
        def go(cur):
            cur.execute(self._q(sql), params)
            return [_row_to_sample(r) for r in cur.fetchall()]
        return self._run(go)

    def groups(self) -> list[GroupSummary]:
        def go(cur):
            cur.execute("SELECT grp, first_ts, last_ts FROM group_index")
            return sorted((GroupSummary(r[0], r[1], r[2]) for r in cur.fetchall()),
                          key=lambda g: (-g.last_ts, g.group))
        return self._run(go)

    def at(self, group: str, ts: int) -> list[Sample]:
        return self._samples(
            f"SELECT {_COLS} FROM samples WHERE grp = ? AND ts = "
            "(SELECT MAX(ts) FROM samples WHERE grp = ? AND ts <= ?) ORDER BY topic, part",
            (group, group, ts))

    def recent(self, group: str, cycles: int) -> list[Sample]:
        return self._samples(
            f"SELECT {_COLS} FROM samples WHERE grp = ? AND ts >= COALESCE((SELECT MIN(ts) FROM "
            "(SELECT DISTINCT ts FROM samples WHERE grp = ? ORDER BY ts DESC LIMIT ?) r), 0) "
            "ORDER BY ts, topic, part", (group, group, int(cycles)))

    # Groups per recent_many statement: well under SQLite's and PostgreSQL's parameter limits,
    # and few statements for a dashboard of thousands of groups.
    MANY_CHUNK = 500

    def recent_many(self, groups: Sequence[str], cycles: int) -> dict[str, list[Sample]]:
        """One statement per MANY_CHUNK groups: per group, the ts of its N-th newest cycle (an
        index range on samples_grp_ts, newest first) bounds an index range read of its samples."""
        out: dict[str, list[Sample]] = {}
        self._recent_rows(groups, cycles, COLUMNS,
                          lambda r: out.setdefault(r[1], []).append(_row_to_sample(r)))
        return out

    def committed_points_many(self, groups: Sequence[str], cycles: int
                              ) -> dict[str, dict[tuple[str, int], list[tuple[int, int]]]]:
        """The same rows as `recent_many`, four columns only (no Sample built): the long
        look-back of `lag status`' rewind rule costs a tuple per row."""
        out: dict[str, dict[tuple[str, int], list[tuple[int, int]]]] = {}

        def each(r) -> None:
            out.setdefault(r[1], {}).setdefault((r[2], r[3]), []).append((r[0], r[4]))
        self._recent_rows(groups, cycles, ("ts", "grp", "topic", "part", "committed"), each)
        return out

    # Not part of the versioned schema: created on first use by a sampler that notifies.
    _NOTIFY_TABLE = ("CREATE TABLE IF NOT EXISTS notify_state (grp TEXT PRIMARY KEY, "
                     "status TEXT NOT NULL, ts BIGINT NOT NULL)")

    def notify_state(self) -> dict[str, str]:
        def go(cur):
            cur.execute(self._NOTIFY_TABLE)
            cur.execute("SELECT grp, status FROM notify_state")
            return {r[0]: r[1] for r in cur.fetchall()}
        return self._run(go)

    def save_notify_state(self, group: str, status: str) -> None:
        import time

        def go(cur):
            cur.execute(self._NOTIFY_TABLE)
            cur.execute(self._q("DELETE FROM notify_state WHERE grp = ?"), (group,))
            cur.execute(self._q("INSERT INTO notify_state (grp, status, ts) VALUES (?, ?, ?)"),
                        (group, status, int(time.time() * 1000)))
        self._run(go)

    def committed_peaks_many(self, groups: Sequence[str], cycles: int
                             ) -> dict[str, dict[tuple[str, int], int]]:
        """Per group and partition, the highest committed offset of its last `cycles` cycles:
        one aggregate in the database, no row reaches Python."""
        out: dict[str, dict[tuple[str, int], int]] = {}

        def each(r) -> None:
            out.setdefault(r[0], {})[(r[1], r[2])] = r[3]
        self._recent_rows(groups, cycles, ("grp", "topic", "part", "MAX(s.committed)"), each,
                          group_by="s.grp, s.topic, s.part")
        return out

    def _recent_rows(self, groups: Sequence[str], cycles: int, columns: Sequence[str],
                     each, *, group_by: str | None = None) -> None:
        names = list(dict.fromkeys(groups))
        cols = ", ".join(c if "(" in c else f"s.{c}" for c in columns)
        tail = f"GROUP BY {group_by}" if group_by else "ORDER BY s.grp, s.ts, s.topic, s.part"
        n = max(1, int(cycles))

        def go(cur) -> None:
            for i in range(0, len(names), self.MANY_CHUNK):
                chunk = names[i:i + self.MANY_CHUNK]
                marks = ", ".join(["?"] * len(chunk))
                # The group list goes through group_index (one row per group), so an unknown name
                # costs nothing; a group with fewer than N cycles starts at its first sample.
                # The cut-off per group first (a materialised CTE: otherwise PostgreSQL runs the
                # correlated subquery once per sample row of a hash join — measured 2x slower
                # than one query per group), then an index range read per group.
                cur.execute(self._q(
                    f"WITH c AS{self.MATERIALIZED} (SELECT w.grp AS grp, COALESCE((SELECT DISTINCT "
                    "x.ts FROM samples x WHERE x.grp = w.grp ORDER BY x.ts DESC LIMIT 1 OFFSET ?), "
                    f"w.first_ts) AS since FROM group_index w WHERE w.grp IN ({marks})) "
                    f"SELECT {cols} FROM c JOIN samples s ON s.grp = c.grp AND s.ts >= c.since "
                    f"{tail}"),
                    (n - 1, *chunk))
                for r in cur:  # row by row: no list of 20,000 tuples beside the samples
                    each(r)
        if names:
            self._run(go)

    def series(self, group: str, topic: str | None = None, since: int | None = None,
               until: int | None = None) -> list[Sample]:
        sql = f"SELECT {_COLS} FROM samples WHERE grp = ? AND ts >= ? AND ts <= ?"
        params: tuple = (group, since if since is not None else -(2**62), until if until is not None else 2**62)
        if topic is not None:
            sql += " AND topic = ?"
            params += (topic,)
        return self._samples(sql + " ORDER BY ts, topic, part", params)

    def cycles(self, since: int | None = None, until: int | None = None) -> list[Cycle]:
        def go(cur):
            cur.execute(self._q("SELECT ts, interval_ms, groups, partitions, duration_ms FROM cycles "
                                "WHERE ts >= ? AND ts <= ? ORDER BY ts"),
                        (since if since is not None else -(2**62), until if until is not None else 2**62))
            return [Cycle(*r) for r in cur.fetchall()]
        return self._run(go)

    def gaps(self, since: int | None = None, until: int | None = None) -> list[Gap]:
        def go(cur):
            cur.execute(self._q("SELECT start_ts, end_ts, reason FROM gaps WHERE end_ts >= ? AND "
                                "start_ts <= ? ORDER BY start_ts"),
                        (since if since is not None else -(2**62), until if until is not None else 2**62))
            return [Gap(*r) for r in cur.fetchall()]
        return self._run(go)

    def log_end_points(self, since: int) -> dict[TopicPartition, list[tuple[int, int]]]:
        def go(cur):
            cur.execute(self._q("SELECT DISTINCT topic, part, ts, log_end FROM samples WHERE ts >= ? "
                                "ORDER BY ts"), (since,))
            out: dict[TopicPartition, list[tuple[int, int]]] = defaultdict(list)
            for t, p, ts, end in cur.fetchall():
                out[TopicPartition(t, p)].append((ts, end))
            return dict(out)
        return self._run(go)

"""History stores chosen by URL: `open_store(url)`.

    path or sqlite:///path        SQLite file (the default; WAL, many readers while one writes)
    postgresql://user@host/db     PostgreSQL (psycopg 3): one store for many samplers + dashboard
    host=... dbname=...           the same as a libpq key=value DSN
    redis://host:6379/0[?prefix=] Redis (sorted sets per group; layout in store/redis.py)
    memory://                     in-process only (the exporter without a store; tests)
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

from offsetkeeper.errors import UsageError, require_extra
from offsetkeeper.history.store.base import (
    SCHEMA_VERSION,
    GroupSummary,
    HistoryStore,
    PruneResult,
    RetentionPolicy,
    StoreUnavailable,
    redact_url,
)
from offsetkeeper.redact import looks_like_dsn

ENV_VAR = "OFFSETKEEPER_HISTORY_STORE"

__all__ = ["ENV_VAR", "SCHEMA_VERSION", "GroupSummary", "HistoryStore", "PruneResult",
           "RetentionPolicy", "StoreUnavailable", "default_store_url", "open_store", "redact_url",
           "resolve_store_url"]


def default_store_url() -> str:
    return str(Path(user_data_dir("offsetkeeper")) / "history.db")


def resolve_store_url(value: str | None, *, configured: str | None = None) -> str:
    """The store to use: the flag, else $OFFSETKEEPER_HISTORY_STORE, else `configured` (the
    config file's, for `offsetkeeper ui`), else the default SQLite file. One rule for every
    command, so `ui` reads what `history record` writes without being told."""
    return value or os.environ.get(ENV_VAR) or configured or default_store_url()


def open_store(url: str | None = None, *, check: bool = True, create: bool = True) -> HistoryStore:
    """Open the store named by `url` (see module doc); with `check`, connect and migrate now.
    Without `create` (a read), a SQLite file that does not exist is a UsageError and nothing
    is created: a read has no side effects.

    Raises UsageError for a malformed URL (exit 2) and StoreUnavailable when it cannot be
    reached (exit 1).
    """
    url = resolve_store_url(url)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if not scheme and looks_like_dsn(url):
        scheme = "postgresql"  # a libpq key=value DSN (host=... password=...), never a file name
    if scheme in ("", "sqlite", "file"):
        from offsetkeeper.history.store.sqlite import SqliteStore

        path = url.split("://", 1)[1] if scheme else url
        if not path.strip():
            raise UsageError(f"history store '{url}' names no file (expected PATH or sqlite:///PATH)")
        if not create and not os.path.exists(os.path.expanduser(path)):
            raise UsageError(f"history store {os.path.expanduser(path)} does not exist: no samples "
                             "yet (offsetkeeper history record --store "
                             "PATH writes it; --store / $OFFSETKEEPER_HISTORY_STORE name "
                             "another)")
        store: HistoryStore = SqliteStore(url, os.path.expanduser(path))
    elif scheme in ("postgresql", "postgres"):
        require_extra("postgres", "a postgresql:// history store")
        from offsetkeeper.history.store.postgres import PostgresStore

        store = PostgresStore(url)
    elif scheme in ("redis", "rediss", "unix"):
        require_extra("redis", "a redis:// history store")
        from offsetkeeper.history.store.redis import RedisStore

        store = RedisStore(url)
    elif scheme == "memory":
        from offsetkeeper.history.store.memory import MemoryStore

        store = MemoryStore(url)
    else:
        raise UsageError(f"history store '{redact_url(url)}' has an unknown scheme '{scheme}' "
                         "(expected a path, sqlite://, postgresql://, redis:// or memory://)")
    if check:
        store.check()
    return store

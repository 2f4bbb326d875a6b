"""Redis history store (the store seeds/000 names). Layout, under a prefix P
(default `offsetkeeper:history`, set with `?prefix=` in the URL):

    P:meta              hash  {schema_version}
    P:groups            zset  group -> ts of its latest cycle
    P:g:<group>         zset  one member per cycle of the group, score = ts; the member is JSON
                              {"ts", "state", "members", "p": [[topic, partition, committed,
                              log_start, log_end, metadata, consumer_id, client_id, host,
                              next_ts, time_lag_ms, time_lag_interp_ms, lso, readable,
                              open_txn_since], ...]}   (the last three: version 4; older
                              members have 12 items and read as None there)
    P:cycles            zset  JSON {ts, interval_ms, groups, partitions, duration_ms}, score = ts
    P:gaps              zset  JSON {start, end, reason}, score = start

One member per group per cycle keeps writes to one ZADD per group (pipelined) and makes "the
group at T" a single ZREVRANGEBYSCORE. Members are deterministic JSON, so rewriting a buffered
cycle is a no-op.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from offsetkeeper.errors import UsageError
from offsetkeeper.history.model import Cycle, Gap, Sample
from offsetkeeper.history.store.base import (
    SCHEMA_VERSION,
    GroupSummary,
    HistoryStore,
    PruneResult,
    RetentionPolicy,
    StoreUnavailable,
    redact_url,
)
from offsetkeeper.models import TopicPartition

DEFAULT_PREFIX = "offsetkeeper:history"


def _encode(ts: int, samples: Sequence[Sample]) -> str:
    first = samples[0]
    return json.dumps({"ts": ts, "state": first.state, "members": first.members, "p": [
        [s.topic, s.partition, s.committed, s.log_start, s.log_end, s.metadata, s.consumer_id,
         s.client_id, s.host, s.next_ts, s.time_lag_ms, s.time_lag_interp_ms, s.lso,
         s.readable, s.open_txn_since] for s in samples]},
        separators=(",", ":"), sort_keys=True)


def _decode(group: str, raw: bytes | str) -> list[Sample]:
    d = json.loads(raw)
    return [Sample(ts=d["ts"], group=group, topic=p[0], partition=p[1], committed=p[2],
                   log_start=p[3], log_end=p[4], metadata=p[5], state=d["state"],
                   members=d["members"], consumer_id=p[6], client_id=p[7], host=p[8],
                   next_ts=p[9], time_lag_ms=p[10], time_lag_interp_ms=p[11],
                   lso=_at(p, 12), readable=_at(p, 13), open_txn_since=_at(p, 14))
            for p in d["p"]]


def _at(p: list, i: int):
    return p[i] if len(p) > i else None


class RedisStore(HistoryStore):
    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        query = parse_qsl(parts.query)
        self.prefix = dict(query).get("prefix", DEFAULT_PREFIX)
        rest = urlencode([(k, v) for k, v in query if k != "prefix"])
        try:
            self.r = redis.Redis.from_url(urlunsplit(parts._replace(query=rest)),
                                          socket_timeout=10, socket_connect_timeout=5)
        except ValueError as exc:
            raise UsageError(f"history store '{redact_url(url)}' is not a valid Redis URL: {exc}") from None
        self._ready = False

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def _call(self, fn):
        try:
            if not self._ready:
                self._migrate()
                self._ready = True
            return fn()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(f"history store {self.display_url} is not reachable: "
                                   f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        except redis.ResponseError as exc:
            raise StoreUnavailable(f"history store {self.display_url} refused a request: {exc}") from None

    def _migrate(self) -> None:
        v = int(self.r.hget(self._k("meta"), "schema_version") or 0)
        if v > SCHEMA_VERSION:
            raise StoreUnavailable(f"history store {self.display_url} has schema version {v}; "
                                   f"this offsetkeeper knows up to {SCHEMA_VERSION}")
        # Versions 1-3 have the same layout in Redis (gaps and the group index were SQL additions).
        self.r.hset(self._k("meta"), "schema_version", SCHEMA_VERSION)

    def check(self) -> None:
        self._call(lambda: self.r.ping())

    def schema_version(self) -> int:
        return self._call(lambda: int(self.r.hget(self._k("meta"), "schema_version") or 0))

    def close(self) -> None:
        self.r.close()

    # -- writing -----------------------------------------------------------------------------
    def write(self, samples: Sequence[Sample], cycle: Cycle | None = None) -> None:
        by: dict[tuple[str, int], list[Sample]] = defaultdict(list)
        for s in samples:
            by[(s.group, s.ts)].append(s)

        def go():
            pipe = self.r.pipeline(transaction=False)
            for (group, ts), ss in by.items():
                pipe.zadd(self._k("g", group), {_encode(ts, ss): ts})
                pipe.zadd(self._k("groups"), {group: ts}, gt=True)
            if cycle is not None:
                pipe.zadd(self._k("cycles"), {json.dumps(_cycle_dict(cycle), sort_keys=True): cycle.ts})
            pipe.execute()
        self._call(go)

    def write_gap(self, gap: Gap) -> None:
        self._call(lambda: self.r.zadd(self._k("gaps"), {json.dumps(
            {"start": gap.start, "end": gap.end, "reason": gap.reason}, sort_keys=True): gap.start}))

    def prune(self, policy: RetentionPolicy, now: int) -> PruneResult:
        def go():
            deleted = down = 0
            for g in [m.decode() for m in self.r.zrange(self._k("groups"), 0, -1)]:
                key = self._k("g", g)
                if policy.retain_ms is not None:
                    deleted += self.r.zremrangebyscore(key, "-inf", f"({now - policy.retain_ms}")
                if policy.downsample_after_ms is not None:
                    cut, b = now - policy.downsample_after_ms, policy.bucket_ms
                    old = self.r.zrangebyscore(key, "-inf", f"({cut}", withscores=True)
                    last: dict[int, bytes] = {}
                    for member, score in old:  # ascending: the last one per bucket wins
                        last[int(score) // b] = member
                    drop = [m for m, score in old if last[int(score) // b] != m]
                    if drop:
                        down += self.r.zrem(key, *drop)
                if self.r.zcard(key) == 0:
                    self.r.zrem(self._k("groups"), g)
            if policy.retain_ms is not None:
                cut = f"({now - policy.retain_ms}"
                self.r.zremrangebyscore(self._k("cycles"), "-inf", cut)
                self.r.zremrangebyscore(self._k("gaps"), "-inf", cut)
            return PruneResult(deleted, down)
        return self._call(go)

    # -- reading -----------------------------------------------------------------------------
    def groups(self) -> list[GroupSummary]:
        def go():
            listed = [(m.decode(), int(last)) for m, last in
                      self.r.zrange(self._k("groups"), 0, -1, withscores=True)]
            pipe = self.r.pipeline(transaction=False)
            for g, _ in listed:
                pipe.zrange(self._k("g", g), 0, 0, withscores=True)
            firsts = pipe.execute() if listed else []
            out = [GroupSummary(g, int(first[0][1]) if first else last, last)
                   for (g, last), first in zip(listed, firsts, strict=True)]
            return sorted(out, key=lambda x: (-x.last_ts, x.group))
        return self._call(go)

    def at(self, group: str, ts: int) -> list[Sample]:
        raw = self._call(lambda: self.r.zrevrangebyscore(self._k("g", group), ts, "-inf", start=0, num=1))
        return _decode(group, raw[0]) if raw else []

    def recent(self, group: str, cycles: int) -> list[Sample]:
        raw = self._call(lambda: self.r.zrevrange(self._k("g", group), 0, max(0, cycles - 1)))
        return [s for m in reversed(raw) for s in _decode(group, m)]

    def recent_many(self, groups: Sequence[str], cycles: int) -> dict[str, list[Sample]]:
        """One pipelined round trip: a ZREVRANGE of the last N cycle members per group."""
        names = list(dict.fromkeys(groups))
        if not names:
            return {}

        def go():
            pipe = self.r.pipeline(transaction=False)
            for g in names:
                pipe.zrevrange(self._k("g", g), 0, max(0, cycles - 1))
            return pipe.execute()
        out = {}
        for g, raw in zip(names, self._call(go), strict=True):
            if raw:
                out[g] = [s for m in reversed(raw) for s in _decode(g, m)]
        return out

    def series(self, group: str, topic: str | None = None, since: int | None = None,
               until: int | None = None) -> list[Sample]:
        raw = self._call(lambda: self.r.zrangebyscore(
            self._k("g", group), since if since is not None else "-inf",
            until if until is not None else "+inf"))
        # members of one cycle share a score; Redis orders those by their bytes, not by
        # partition: order as every store does (ts, topic, partition)
        out = sorted((s for m in raw for s in _decode(group, m)),
                     key=lambda s: (s.ts, s.topic, s.partition))
        return [s for s in out if s.topic == topic] if topic is not None else out

    def cycles(self, since: int | None = None, until: int | None = None) -> list[Cycle]:
        raw = self._call(lambda: self.r.zrangebyscore(
            self._k("cycles"), since if since is not None else "-inf", until if until is not None else "+inf"))
        return [Cycle(**json.loads(m)) for m in raw]

    def gaps(self, since: int | None = None, until: int | None = None) -> list[Gap]:
        raw = self._call(lambda: self.r.zrangebyscore(self._k("gaps"), "-inf",
                                                      until if until is not None else "+inf"))
        gaps = [Gap(**json.loads(m)) for m in raw]
        return [g for g in gaps if since is None or g.end >= since]

    def log_end_points(self, since: int) -> dict[TopicPartition, list[tuple[int, int]]]:
        pts: dict[TopicPartition, set[tuple[int, int]]] = defaultdict(set)
        for g in self.groups():
            if g.last_ts < since:
                continue
            for s in self.series(g.group, since=since):
                pts[s.tp].add((s.ts, s.log_end))
        return {tp: sorted(v) for tp, v in pts.items()}


def _cycle_dict(c: Cycle) -> dict:
    return {"ts": c.ts, "interval_ms": c.interval_ms, "groups": c.groups,
            "partitions": c.partitions, "duration_ms": c.duration_ms}

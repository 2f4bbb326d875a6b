"""Spark Structured Streaming checkpoints for the dashboard: read-only, through ops.streaming.

Only checkpoints from the configuration (`ui.checkpoints`) or `offsetkeeper ui --checkpoint`
are read: the browser names one by its index, never by a path. A checkpoint that is missing,
corrupt or whose cluster cannot be reached is shown with its error, never as a failed page.

Resetting a checkpoint is left to `offsetkeeper streaming reset` (the pages show the command):
Spark holds no lock in a checkpoint, and the only guard the CLI has — no batch file written in
the last two minutes — cannot tell a stopped query from a running one that is idle. Only the
operator can vouch that the query is stopped; a button in a shared web page cannot.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.ops.itemerr import guarded
from offsetkeeper.times import iso_ms
from offsetkeeper.web.backups import shown


@dataclass(frozen=True)
class CheckpointEntry:
    """A configured checkpoint: its name, location, the cluster its lag is measured on, and
    which of the query's sources is the Kafka one (None: the only one)."""

    name: str
    location: str
    cluster: str | None = None
    source: int | None = None


def entry_from_flag(value: str) -> CheckpointEntry:
    """`--checkpoint [NAME=]PATH`: a name before '=' unless that part looks like a path or URL
    (`s3://b/dt=1` is a path); without one, the last part of the path names it."""
    value = value.strip()
    name, sep, path = value.partition("=")
    if not sep or "/" in name or ":" in name or not name:
        name, path = "", value
    if not path:
        raise UsageError(f"--checkpoint '{value}' names no path (expected [NAME=]PATH)")
    return CheckpointEntry(name or _basename(path), path)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def entries(configured, flags: tuple[str, ...], clusters: list[str]) -> tuple[CheckpointEntry, ...]:
    """The checkpoints to show: the config file's (`ui.checkpoints`), then `--checkpoint`s.
    UsageError for a cluster that is not configured or a name given twice."""
    out = [CheckpointEntry(c.name or _basename(c.path), c.path, c.cluster, c.source)
           for c in configured]
    out += [entry_from_flag(f) for f in flags]
    seen: set[str] = set()
    for e in out:
        if not e.location.strip():
            raise UsageError(f"checkpoint '{e.name}' has an empty path")
        if e.cluster is not None and e.cluster not in clusters:
            raise UsageError(f"checkpoint '{e.name}': cluster '{e.cluster}' is not configured "
                             f"(clusters: {', '.join(clusters) or 'none'})")
        if e.name in seen:
            raise UsageError(f"checkpoint name '{e.name}' is given twice: name them "
                             "(ui.checkpoints[].name, or --checkpoint NAME=PATH)")
        seen.add(e.name)
    return tuple(out)


@dataclass(frozen=True)
class TopicLag:
    topic: str
    partitions: int
    lag: int | None


@dataclass(frozen=True)
class CheckpointLine:
    """One row of the checkpoints page; `error` says why the rest is (partly) missing."""

    index: int
    name: str
    location: str            # as shown: a password in a URL replaced
    cluster: str
    status: str              # OK (caught up), LAGGING, STALLED (lag, no batch lately),
    #                          PENDING (a batch planned, not committed), UNKNOWN, ERROR
    query_id: str | None = None
    latest_batch: int | None = None
    last_committed_batch: int | None = None
    pending_batch: int | None = None
    last_change: str | None = None
    total_lag: int | None = None
    topics: list[TopicLag] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class CheckpointDetail:
    line: CheckpointLine
    batch: int | None                 # the batch whose end offsets are the position
    position_from: str                # "offsets/N (committed)" or the initial offsets
    batch_time: str | None            # the batch's planning time (batchTimestampMs), UTC
    partitions: list[dict] = field(default_factory=list)
    resets: list[str] = field(default_factory=list)   # offsetkeeper resets kept in it
    commands: dict[str, str] = field(default_factory=dict)


def _iso_ms(ms) -> str | None:
    return iso_ms(ms) if isinstance(ms, int | float) and ms > 0 else None


def _line(index: int, e: CheckpointEntry, cluster: str, view, rows, error) -> CheckpointLine:
    if view is None:
        return CheckpointLine(index, e.name, shown(e.location), cluster, "ERROR", error=error)
    st = view.state
    topics: dict[str, list] = {}
    for r in rows or []:
        topics.setdefault(r.topic, []).append(r.lag)
    per_topic = [TopicLag(t, len(lags), None if any(x is None for x in lags) else sum(lags))
                 for t, lags in sorted(topics.items())]
    total = None if rows is None or any(t.lag is None for t in per_topic) \
        else sum(t.lag for t in per_topic)
    status = _status(error, st, total)
    return CheckpointLine(index, e.name, shown(e.location), cluster, status, st.query_id,
                          st.last_planned, st.last_committed, st.pending,
                          view.summary()["last_change_iso"], total, per_topic, error)


def _status(error, st, total_lag: int | None, *, now: float | None = None) -> str:
    """OK only when the query has read everything: a stopped query with records waiting is
    not OK. STALLED: records wait and no batch file was written within the window the CLI
    uses to call a query alive (stopped, or stuck); LAGGING: records wait, batches still run."""
    import time

    from offsetkeeper.ops.streaming import DEFAULT_ALIVE_WINDOW_S

    if error:
        return "ERROR"
    if st.pending is not None:
        return "PENDING"
    if total_lag is None:
        return "UNKNOWN"
    if total_lag <= 0:
        return "OK"
    now = time.time() if now is None else now
    if st.newest_change_s is None or now - st.newest_change_s >= DEFAULT_ALIVE_WINDOW_S:
        return "STALLED"
    return "LAGGING"


def _read(admin_of, e: CheckpointEntry, *, time_lag: bool):
    """(view, position rows, error): the checkpoint first, then the cluster, so a cluster
    that cannot be reached still leaves the checkpoint's own facts on the page. Whatever goes
    wrong (a corrupt or hostile file, fsspec without the filesystem's package such as s3fs, an
    unknown URL scheme) is this checkpoint's row, never a failed page."""
    from offsetkeeper.ops import streaming as ops

    def load():
        try:
            return ops.load_view(e.location, source=e.source)
        except (ImportError, ValueError) as exc:
            # fsspec: an unknown URL scheme (ValueError), or a filesystem whose package is not
            # installed, e.g. s3fs (ImportError).
            raise StoreError(f"cannot open checkpoint {e.location}: {exc}") from exc

    view, err = guarded(load, None, what=f"checkpoint {e.name!r}", known=e.location)
    if view is None:
        return None, None, err
    got, err = guarded(lambda: ops.checkpoint_positions(admin_of(), e.location, source=e.source,
                                                        time_lag=time_lag), None,
                       what=f"checkpoint {e.name!r}", known=e.location)
    return view, (None if got is None else got[1]), err


def list_checkpoints(entries_: tuple[CheckpointEntry, ...], admin_for, default_cluster: str
                     ) -> list[CheckpointLine]:
    """Every configured checkpoint with batch, query id and lag (no time lag: that reads a
    record per partition); `admin_for(cluster)` gives the cluster's admin."""
    out = []
    for i, e in enumerate(entries_):
        cluster = e.cluster or default_cluster
        view, rows, err = _read(lambda c=cluster: admin_for(c), e, time_lag=False)
        out.append(_line(i, e, cluster, view, rows, err))
    return out


def entry_at(entries_: tuple[CheckpointEntry, ...], index: str) -> CheckpointEntry:
    """The configured checkpoint at `index` (the browser never sends a path)."""
    if not index.isdigit() or int(index) >= len(entries_):
        raise UsageError(f"checkpoint #{index} is not configured")
    return entries_[int(index)]


def checkpoint_detail(entries_: tuple[CheckpointEntry, ...], index: str, admin_for,
                      default_cluster: str) -> CheckpointDetail:
    """One checkpoint per partition: its offset, log start/end, lag and time lag; the batch
    the offsets came from; the resets offsetkeeper kept in it; the CLI commands to change it."""
    e = entry_at(entries_, index)
    i = int(index)
    cluster = e.cluster or default_cluster
    view, rows, err = _read(lambda: admin_for(cluster), e, time_lag=True)
    line = _line(i, e, cluster, view, rows, err)
    commands = _commands(e, cluster)
    if view is None:
        return CheckpointDetail(line, None, "", None, commands=commands)
    st = view.state
    if view.committed is not None:
        batch, frm = st.last_committed, f"offsets/{st.last_committed} (committed)"
        btime = _iso_ms(view.committed.metadata.get("batchTimestampMs"))
    else:
        batch, frm, btime = None, f"sources/{view.source}/0 (the query's starting offsets; " \
                                  "no batch committed yet)", None
    parts = []
    if rows is not None:
        parts = [{"topic": r.topic, "partition": r.partition, "offset": r.position,
                  "pending_offset": r.pending_offset, "log_start": r.log_start,
                  "log_end": r.log_end, "lag": r.lag, "time_lag_s": r.time_lag_s} for r in rows]
    else:  # the cluster could not be read: the checkpoint's offsets alone
        parts = [{"topic": r["topic"], "partition": r["partition"],
                  "offset": r["committed_offset"], "pending_offset": r["pending_offset"],
                  "log_start": None, "log_end": None, "lag": None, "time_lag_s": None}
                 for r in view.rows()]
    from offsetkeeper.ops.streaming import checkpoint_resets

    resets = checkpoint_resets(e.location)
    return CheckpointDetail(line, batch, frm, btime, parts, resets, commands)


def _commands(e: CheckpointEntry, cluster: str) -> dict[str, str]:
    loc = shlex.quote(shown(e.location))
    c = f" --cluster {shlex.quote(cluster)}" if cluster != "default" else " -b BOOTSTRAP"
    src = f" --source {e.source}" if e.source is not None else ""
    return {"lag": f"offsetkeeper streaming lag {loc}{src}{c}",
            "reset": f"offsetkeeper streaming reset {loc} --by-duration PT30M{src}{c}"
                     "   # any reset target; plan only: stop the query, then add --execute",
            "rollback": f"offsetkeeper streaming rollback {loc} latest"
                        "   # undo the last reset: dry run; add --execute"}

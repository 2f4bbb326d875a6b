"""`commits ...`: the `__consumer_offsets` log as a commit history.

`scan_commits` decodes the log (from the cluster or a backup of it) on Spark into a history
directory; the other operations read that directory: a group's commits, its offsets as of a
time, its generations, and the Spark reports over every group.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from offsetkeeper.config import Connection
from offsetkeeper.errors import OffsetkeeperError, UnknownGroupError, UsageError
from offsetkeeper.offsetlog.analytics import COLUMNS, Report
from offsetkeeper.offsetlog.scan import OFFSETS_TOPIC, ScanSummary
from offsetkeeper.progress import ProgressFn, no_progress

__all__ = ["CommitReport", "Generations", "Report", "ScanRequest", "ScanSummary", "commit_report",
           "commits_at", "group_commits", "group_generations", "history_of", "scan_commits"]


@dataclass(frozen=True)
class ScanRequest:
    """`commits scan`: where to read the log (the cluster of `connection`, or `backup` =
    DEST/BACKUP_ID of a backup of the topic) and where to write the history."""

    out: str
    topic: str = OFFSETS_TOPIC
    connection: Connection | None = None
    backup: str | None = None
    group: str | None = None             # only the partition holding this group
    master: str | None = None
    spark_conf: tuple[str, ...] = ()     # KEY=VALUE
    config: str | None = None            # the config file (its spark.warm); None: the default


def scan_commits(req: ScanRequest, *, progress: ProgressFn = no_progress) -> ScanSummary:
    """Decode the log on Spark and write the commit history to `req.out`."""
    from offsetkeeper.offsetlog.scan import KafkaSource, ScanConfig, backup_source, run_scan
    from offsetkeeper.spark.session import parse_conf_pairs

    if req.backup:
        source = backup_source(req.backup, req.topic)
    elif req.connection is not None:
        source = KafkaSource(req.connection, req.topic)
    else:
        raise UsageError("commits scan needs a cluster connection or --backup")
    from offsetkeeper.config import load_config_file
    from offsetkeeper.storage import absolute

    cfg = ScanConfig(source=source, out=absolute(req.out), group=req.group, master=req.master,
                     spark_conf=parse_conf_pairs(list(req.spark_conf)),
                     spark_warm=load_config_file(req.config).spark.warm)
    return run_scan(cfg, progress=progress)


@contextmanager
def history_of(history: str | None, connection: Connection | None, *, group: str | None = None,
               topic: str = OFFSETS_TOPIC, master: str | None = None,
               spark_conf: tuple[str, ...] = ()) -> Iterator[str]:
    """The commit history to query: `history` (a `commits scan --out` directory) when given,
    else `topic` (`__consumer_offsets`) of the cluster of `connection` scanned now (only the
    partition holding `group` when one is given) into a temporary directory that is removed
    afterwards. Exactly one of the two: both or neither is a UsageError."""
    import shutil
    import tempfile

    if history and connection is not None:
        raise UsageError("give either --history DIR (a history written by 'commits scan') or a "
                         "cluster to read now (-b/--bootstrap-server, --cluster), not both")
    if history:
        yield history
        return
    if connection is None:
        raise UsageError("give --history DIR (a history written by 'commits scan --out DIR') or "
                         "a cluster to read now (-b/--bootstrap-server, --cluster)")
    tmp = tempfile.mkdtemp(prefix="offsetkeeper-commits-")
    try:
        scan_commits(ScanRequest(out=tmp, topic=topic, connection=connection, group=group,
                                 master=master, spark_conf=spark_conf))
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _time(text: str | None, flag: str) -> int | None:
    from offsetkeeper.times import parse_time

    return parse_time(text, what=flag) if text else None


def group_commits(history: str, group: str, *, since: str | None = None,
                  until: str | None = None) -> list[dict]:
    """A group's commits in log order with the change per partition (`since`/`until`: ISO-8601,
    UTC when no zone)."""
    from offsetkeeper.offsetlog.commit_history import show_group

    return show_group(history, group, since_ms=_time(since, "--since"),
                      until_ms=_time(until, "--until"))


def commits_at(history: str, group: str, time: str) -> list[dict]:
    """The group's committed offsets as of `time`, replayed from the log; OffsetkeeperError when
    it had committed nothing by then."""
    from offsetkeeper.offsetlog.commit_history import at_rows, offsets_at

    rows = at_rows(offsets_at(history, group, _time(time, "--time")))
    if not rows:
        raise OffsetkeeperError(f"group '{group}' had committed nothing by {time}", group=group)
    return rows


@dataclass(frozen=True)
class Generations:
    """A group's generations (`members` False: one row per member and generation, or per
    membership event of consumer, share and streams groups) or its members (`members` True)."""

    members: bool
    rows: list[dict]


def group_generations(history: str, group: str, *, members: bool = False) -> Generations:
    """Generations or members of a group from the history; UnknownGroupError when it has none."""
    from offsetkeeper.offsetlog.commit_history import generation_rows
    from offsetkeeper.offsetlog.membership import member_rows, membership_rows

    if members:
        rows = member_rows(history, group)
        if not rows:
            raise UnknownGroupError(f"group '{group}' has no consumer, share or streams group "
                                    f"members in the history in {history}", group=group)
        return Generations(True, rows)
    # a group that migrated between protocols has both: merged by time
    rows = sorted(generation_rows(history, group) + membership_rows(history, group),
                  key=lambda r: r["time"] or 0)
    if not rows:
        raise UnknownGroupError(f"group '{group}' has no group metadata in the history in "
                                f"{history}", group=group)
    return Generations(False, rows)


@dataclass(frozen=True)
class CommitReport:
    report: Report
    columns: list[str]
    rows: list[dict]


def commit_report(report: Report | str, history: str, *, group: str | None = None,
                  master: str | None = None) -> CommitReport:
    """One Spark report over the commit history (rate, rewinds, topics, expired, rebalances)."""
    from offsetkeeper.offsetlog.analytics import run_report

    kind = Report(report)
    return CommitReport(kind, COLUMNS[kind], run_report(kind, history, group=group, master=master))

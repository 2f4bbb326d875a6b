"""Analytics over a scanned commit history, on Spark.

- rate: commits per group (count, partitions, first/last commit, commits per minute)
- rewinds: REWIND events — a partition's committed offset went backwards (Burrow's rule), in log
  order, tombstones excluded (a commit after a deletion starts afresh)
- topics: groups per topic (with how many still hold a live offset on it)
- expired: groups whose every offset ended in a tombstone (expired or deleted), or whose group
  metadata was deleted last
- rebalances: rebalances per group and hour — a new generation first seen in that hour (its
  current-state timestamp, else the record time); for consumer (KIP-848), share and streams
  groups a new group epoch (offsetlog/membership.py), with the members it had then
"""

from __future__ import annotations

from enum import StrEnum

from offsetkeeper.offsetlog.scan import load_summary
from offsetkeeper.storage import join


class Report(StrEnum):
    rate = "rate"
    rewinds = "rewinds"
    topics = "topics"
    expired = "expired"
    rebalances = "rebalances"


COLUMNS: dict[Report, list[str]] = {
    Report.rate: ["group", "commits", "partitions", "first_commit", "last_commit", "commits_per_minute"],
    Report.rewinds: ["group", "topic", "partition", "time", "from_offset", "to_offset", "delta"],
    Report.topics: ["topic", "groups", "live_groups"],
    Report.expired: ["group", "reason", "partitions", "last_commit", "last_record"],
    Report.rebalances: ["group", "hour", "rebalances", "generations", "max_members"],
}


def _commits(spark, out: str, group: str | None):
    from pyspark.sql import functions as F

    df = spark.read.parquet(join(out, "commits"))
    return df.where(F.col("group") == group) if group else df


def _groups(spark, out: str, group: str | None):
    from pyspark.sql import functions as F

    df = spark.read.parquet(join(out, "groups"))
    return df.where(F.col("group") == group) if group else df


def commit_rate(spark, out: str, group: str | None = None) -> list[dict]:
    from pyspark.sql import functions as F

    c = _commits(spark, out, group).where(~F.col("tombstone"))
    rows = (c.groupBy("group").agg(
        F.count("*").alias("commits"),
        F.countDistinct("topic", "partition").alias("partitions"),
        F.min("commit_timestamp").alias("first"), F.max("commit_timestamp").alias("last"))
        .orderBy(F.desc("commits"), "group").collect())
    out_rows = []
    for r in rows:
        minutes = (r["last"] - r["first"]) / 60_000
        out_rows.append({"group": r["group"], "commits": r["commits"], "partitions": r["partitions"],
                         "first_commit": r["first"], "last_commit": r["last"],
                         "commits_per_minute": round(r["commits"] / minutes, 3) if minutes > 0 else None})
    return out_rows


def rewinds(spark, out: str, group: str | None = None) -> list[dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # Tombstones stay in the window: a commit right after one has no previous offset (its
    # `prev` is the tombstone's null offset), so it starts afresh, as `commits show` labels it.
    c = _commits(spark, out, group)
    w = Window.partitionBy("group", "topic", "partition").orderBy("source_partition", "source_offset")
    rows = (c.withColumn("prev", F.lag("offset").over(w))
            .where(~F.col("tombstone") & (F.col("offset") < F.col("prev")))
            .orderBy("group", "commit_timestamp", "topic", "partition").collect())
    return [{"group": r["group"], "topic": r["topic"], "partition": r["partition"],
             "time": r["commit_timestamp"], "from_offset": r["prev"], "to_offset": r["offset"],
             "delta": r["offset"] - r["prev"]} for r in rows]


def _last_per_partition(spark, out: str, group: str | None):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("group", "topic", "partition").orderBy(
        F.desc("source_partition"), F.desc("source_offset"))
    return (_commits(spark, out, group).withColumn("rn", F.row_number().over(w))
            .where(F.col("rn") == 1).drop("rn"))


def groups_per_topic(spark, out: str, group: str | None = None) -> list[dict]:
    from pyspark.sql import functions as F

    last = _last_per_partition(spark, out, group)
    rows = (last.groupBy("topic").agg(
        F.countDistinct("group").alias("groups"),
        F.countDistinct(F.when(~F.col("tombstone"), F.col("group"))).alias("live_groups"))
        .orderBy(F.desc("groups"), "topic").collect())
    return [r.asDict() for r in rows]


def expired_groups(spark, out: str, group: str | None = None) -> list[dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    last = _last_per_partition(spark, out, group)
    offsets = (last.groupBy("group").agg(
        F.count("*").alias("partitions"),
        F.sum(F.when(F.col("tombstone"), 0).otherwise(1)).alias("live"),
        F.max("commit_timestamp").alias("last_commit"),
        F.max("record_timestamp").alias("last_record"))
        .where(F.col("live") == 0))
    rows = {r["group"]: {"group": r["group"], "reason": "offsets expired or deleted",
                         "partitions": r["partitions"], "last_commit": r["last_commit"],
                         "last_record": r["last_record"]} for r in offsets.collect()}
    w = Window.partitionBy("group").orderBy(F.desc("source_partition"), F.desc("source_offset"))
    deleted = (_groups(spark, out, group).withColumn("rn", F.row_number().over(w))
               .where((F.col("rn") == 1) & F.col("tombstone")).collect())
    deleted += _deleted_epoch_groups(spark, out, group)
    for r in deleted:
        entry = rows.setdefault(r["group"], {"group": r["group"], "partitions": 0,
                                             "last_commit": None, "last_record": r["record_timestamp"]})
        entry["reason"] = "group deleted" if "reason" not in entry else entry["reason"] + "; group deleted"
    return sorted(rows.values(), key=lambda r: r["group"])


def _deleted_epoch_groups(spark, out: str, group: str | None) -> list:
    """Consumer, share and streams groups whose last group-epoch record is a tombstone."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from offsetkeeper.offsetlog.membership import GROUP_METADATA, read_coordinator

    if not read_coordinator(out, group, GROUP_METADATA):  # none, or a scan from before
        return []
    c = spark.read.parquet(join(out, "coordinator")).where(
        F.col("record_type").isin(*GROUP_METADATA))
    if group:
        c = c.where(F.col("group") == group)
    w = Window.partitionBy("group").orderBy(F.desc("source_partition"), F.desc("source_offset"))
    return (c.withColumn("rn", F.row_number().over(w))
            .where((F.col("rn") == 1) & F.col("tombstone")).collect())


def rebalances_per_hour(spark, out: str, group: str | None = None) -> list[dict]:
    from pyspark.sql import functions as F

    g = _groups(spark, out, group).where(~F.col("tombstone"))
    t = F.coalesce(F.col("current_state_timestamp"), F.col("record_timestamp"))
    firsts = g.groupBy("group", "generation").agg(
        F.min(t).alias("t"), F.max(F.size(F.coalesce("members", F.array()))).alias("members"))
    # Hours as epoch-millisecond buckets: no dependence on the session time zone.
    rows = (firsts.withColumn("hour", F.floor(F.col("t") / 3_600_000) * 3_600_000)
            .groupBy("group", "hour").agg(
                F.count("*").alias("rebalances"),
                F.array_sort(F.collect_list("generation")).alias("generations"),
                F.max("members").alias("max_members"))
            .orderBy("group", "hour").collect())
    out_rows = [{"group": r["group"], "hour": int(r["hour"]),
                 "rebalances": r["rebalances"],
                 "generations": ",".join(str(x) for x in r["generations"]),
                 "max_members": r["max_members"]} for r in rows]
    return sorted(out_rows + _epoch_rebalances(out, group), key=lambda r: (r["group"], r["hour"]))


def _epoch_rebalances(out: str, group: str | None) -> list[dict]:
    """New group epochs of consumer, share and streams groups per group and hour."""
    from offsetkeeper.offsetlog.membership import rebalance_events

    buckets: dict[tuple[str, int], list[dict]] = {}
    for e in rebalance_events(out, group):
        buckets.setdefault((e["group"], e["time"] // 3_600_000 * 3_600_000), []).append(e)
    return [{"group": g, "hour": hour, "rebalances": len(es),
             "generations": ",".join(str(x) for x in sorted(e["generation"] for e in es)),
             "max_members": max(e["members"] for e in es)}
            for (g, hour), es in buckets.items()]


_REPORTS = {Report.rate: commit_rate, Report.rewinds: rewinds, Report.topics: groups_per_topic,
            Report.expired: expired_groups, Report.rebalances: rebalances_per_hour}


def run_report(report: Report, out: str, *, group: str | None = None, master: str | None = None,
               spark=None) -> list[dict]:
    """Run one analytics report over the commit history in `out` (starts Spark if needed)."""
    load_summary(out)
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(master, app_name=f"offsetkeeper-commits-{report}")
    return _REPORTS[report](spark, out, group)

"""`offsetkeeper history record|show|at|plot|export|report`."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    connection,
    duration_option,
)
from offsetkeeper.cli.output import (
    OutputFormat,
    plural,
    render_json,
    render_rows,
    say,
)
from offsetkeeper.errors import UsageError
from offsetkeeper.times import iso_ms

app = typer.Typer(help="Offset history: record samples of committed offsets and lag, read them "
                  "back, plot and report.", no_args_is_help=True)

StoreOpt = Annotated[str | None, typer.Option(
    "--store", envvar="OFFSETKEEPER_HISTORY_STORE", show_default=False,
    help="History store URL: a SQLite path, postgresql://..., redis://... "
         "[default: ~/.local/share/offsetkeeper/history.db].")]
GroupArg = Annotated[str, typer.Argument(metavar="GROUP", help="Consumer group.", show_default=False)]
SinceOpt = Annotated[str | None, typer.Option("--since", help="Start: ISO-8601 time or a duration "
                                              "ago (6h, 30m).", show_default=False)]
UntilOpt = Annotated[str | None, typer.Option("--until", help="End: ISO-8601 time or a duration "
                                              "ago [default: now].", show_default=False)]


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is now (not the one at set-up time)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


class _IsoFormatter(logging.Formatter):
    """Log times written like every other time: ISO-8601 UTC, milliseconds, Z."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return iso_ms(record.created * 1000) or ""


def setup_logging() -> None:
    """One line per event on stderr, UTC timestamps (the sampler's log)."""
    logger = logging.getLogger("offsetkeeper.history")
    if not any(getattr(h, "_offsetkeeper", False) for h in logger.handlers):
        h = _StderrHandler()
        h.setFormatter(_IsoFormatter("%(asctime)s %(levelname)s %(message)s"))
        h._offsetkeeper = True  # type: ignore[attr-defined]
        logger.addHandler(h)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _range(since: str | None, until: str | None) -> tuple[int | None, int | None]:
    from offsetkeeper.history.timeparse import parse_when

    lo = parse_when(since, what="--since") if since else None
    hi = parse_when(until, what="--until") if until else None
    if lo is not None and hi is not None and lo > hi:
        raise UsageError(f"--since {since} is after --until {until}")
    return lo, hi


GroupAllowOpt = Annotated[list[str] | None, typer.Option(
    "--group-allow", metavar="REGEX", show_default=False,
    help="Metrics: only groups whose name fully matches one of these (repeatable).")]
GroupDenyOpt = Annotated[list[str] | None, typer.Option(
    "--group-deny", metavar="REGEX", show_default=False,
    help="Metrics: no series for groups whose name fully matches one of these (repeatable).")]
TopicAllowOpt = Annotated[list[str] | None, typer.Option(
    "--topic-allow", metavar="REGEX", show_default=False,
    help="Metrics: only partitions of topics fully matching one of these (repeatable).")]
TopicDenyOpt = Annotated[list[str] | None, typer.Option(
    "--topic-deny", metavar="REGEX", show_default=False,
    help="Metrics: leave out partitions of topics fully matching one of these (repeatable).")]


def metric_filter(group_allow, group_deny, topic_allow, topic_deny):
    """The exporter's allow/deny lists (UsageError naming the option for a bad regex)."""
    from offsetkeeper.history.exporter import MetricFilter

    return MetricFilter.parse(group_allow=group_allow or (), group_deny=group_deny or (),
                              topic_allow=topic_allow or (), topic_deny=topic_deny or ())


def sampler_config(group, all_groups, interval, retain, time_lag, window):
    """Build a SamplerConfig from the shared record/exporter options (UsageError on bad values)."""
    from offsetkeeper.history.sample_cycle import SampleScope
    from offsetkeeper.history.sampler import SamplerConfig
    from offsetkeeper.history.store import RetentionPolicy
    from offsetkeeper.history.timeparse import parse_duration_ms

    groups = tuple(dict.fromkeys(g.strip() for g in group or [] if g.strip()))
    if groups and all_groups:
        raise UsageError("--group and --all-groups are mutually exclusive")
    if not groups and not all_groups:
        raise UsageError("no group given: use --group GROUP (repeatable) or --all-groups")
    if window < 2:
        raise UsageError(f"--window {window} is too small (expected at least 2 samples)")
    # 'forever' keeps every sample at full resolution (no deletion, no thinning).
    retention = None if retain.strip().lower() == "forever" else \
        RetentionPolicy(retain_ms=parse_duration_ms(retain, what="--retain"))
    return SamplerConfig(
        scope=SampleScope(groups=groups, all_groups=all_groups),
        interval_ms=parse_duration_ms(interval, what="--interval"), time_lag=time_lag,
        retention=retention, window=window)


@app.command("record")
def record(
    group: Annotated[list[str] | None, typer.Option("--group", "-g", help="Group to sample (repeatable).",
                                                    show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every group of the cluster.")] = False,
    interval: Annotated[str, duration_option("--interval", help="Time between cycles.")] = "30s",
    store: StoreOpt = None,
    once: Annotated[bool, typer.Option("--once", help="One cycle, then exit (for cron); exit 1 "
                                       "when the cluster or the store fails.")] = False,
    retain: Annotated[str, duration_option("--retain", help="Delete samples older than this; "
                                           "older than 1 day are thinned to one per 5 minutes "
                                           "('forever': keep every sample).",
                                           words=("forever",))] = "30d",
    time_lag: Annotated[bool, typer.Option("--time-lag/--no-time-lag", help="Fetch the next record's "
                                           "timestamp of each lagging partition (exact time lag).")] = True,
    exporter: Annotated[str | None, typer.Option("--exporter", metavar="HOST:PORT", show_default=False,
                                                 help="Also serve Prometheus metrics here.")] = None,
    window: Annotated[int, typer.Option("--window", help="Samples per status window (exporter).")] = 10,
    group_allow: GroupAllowOpt = None, group_deny: GroupDenyOpt = None,
    topic_allow: TopicAllowOpt = None, topic_deny: TopicDenyOpt = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None,
) -> None:
    """Sample committed offsets, log start/end and time lag of groups into the history store,
    every --interval until SIGTERM/SIGINT (or once).

    Example: offsetkeeper history record --all-groups --interval 30s --store /var/lib/ok/history.db
    """
    from offsetkeeper.history.service import record as run_record

    cfg = sampler_config(group, all_groups, interval, retain, time_lag, window)
    filt = metric_filter(group_allow, group_deny, topic_allow, topic_deny)
    if exporter:
        from offsetkeeper.netaddr import parse_listen

        parse_listen(exporter, option="--exporter", example="127.0.0.1:9308")
    conn = connection(bootstrap, command_config, cluster, config)
    setup_logging()
    summary = run_record(conn, store, cfg, once=once, listen=exporter, metric_filter=filt)
    if once and summary.last is not None:
        say(f"stored {plural(summary.last.samples, 'sample')} of "
            f"{plural(summary.last.groups, 'group')} in {summary.store}")
        # groups the principal may not read (ACLs): one line each, and a partial failure
        from offsetkeeper.kafka.errors import is_denied

        denied = {g: e for g, e in summary.last.group_errors.items() if is_denied(e)}
        for g, e in denied.items():
            say(f"group {g}: {e}", style="bold red", prefix="error:")
        if denied:
            raise typer.Exit(1)


@app.command("show")
def show(
    group: GroupArg,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.",
                                              show_default=False)] = None,
    since: SinceOpt = "6h", until: UntilOpt = None, store: StoreOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Committed offset, log end, lag, time lag (exact and interpolated) and consumption rate of
    a group over time, one row per partition per sample.

    Example: offsetkeeper history show payments --topic orders --since 6h -o csv
    """
    from offsetkeeper.history.read import SHOW_COLUMNS, show_rows
    from offsetkeeper.history.store import open_store

    lo, hi = _range(since, until)
    with open_store(store) as st:
        rows = show_rows(st, group, topic=topic, since=lo, until=hi)
    render_rows(rows, SHOW_COLUMNS, output)


@app.command("at")
def at(
    group: GroupArg,
    when: Annotated[str, typer.Option("--time", help="ISO-8601 time (UTC when no zone) or a "
                                      "duration ago.", show_default=False)],
    store: StoreOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """The committed offsets a group had at a time: its latest sample at or before it, with the
    sample's age.

    Example: offsetkeeper history at payments --time 2026-11-20T09:40:00Z
    """
    from offsetkeeper.history import read
    from offsetkeeper.history.store import open_store
    from offsetkeeper.history.timeparse import parse_when

    ts = parse_when(when, what="--time")
    with open_store(store) as st:
        res = read.at(st, group, ts)
    render_rows(res.rows(), read.AT_COLUMNS, output)


@app.command("plot")
def plot(
    group: GroupArg,
    out: Annotated[str, typer.Option("--out", help="PNG file to write (path or fsspec URL).",
                                     show_default=False)],
    since: SinceOpt = "24h", until: UntilOpt = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.",
                                              show_default=False)] = None,
    store: StoreOpt = None,
) -> None:
    """Plot lag and time lag per topic over time as a PNG (gaps shaded).

    Example: offsetkeeper history plot payments --since 24h --out lag.png
    """
    from offsetkeeper.history.plot import plot_history
    from offsetkeeper.history.store import open_store

    if not out.lower().endswith(".png"):
        raise UsageError(f"--out {out} must be a .png file")
    lo, hi = _range(since, until)
    with open_store(store) as st:
        n = plot_history(st, group, out, since=lo, until=hi, topic=topic)
    say(f"plotted {plural(n, 'sample')} to {out}")


@app.command("export")
def export(
    to: Annotated[str, typer.Option("--to", help="Directory (or fsspec URL) for Parquet files, "
                                    "one per day.", show_default=False)],
    since: SinceOpt = None, until: UntilOpt = None,
    group: Annotated[list[str] | None, typer.Option("--group", "-g", help="Only these groups.",
                                                    show_default=False)] = None,
    store: StoreOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Export samples as Parquet partitioned by day (DIR/day=YYYY-MM-DD/samples.parquet).

    Example: offsetkeeper history export --to /data/offset-history --since 30d
    """
    from offsetkeeper.history.spark_report import export_parquet
    from offsetkeeper.history.store import open_store

    lo, hi = _range(since, until)
    with open_store(store) as st:
        res = export_parquet(st, to, since=lo, until=hi, groups=group or ())
    if output is OutputFormat.json:
        render_json({"days": list(res.days), "rows": res.rows, "files": list(res.files)})
    else:
        render_rows([{"day": d} for d in res.days], ["day"], output)
        say(f"exported {plural(res.rows, 'sample')} to {to}")


@app.command("report")
def report(
    source: Annotated[str, typer.Option("--from", help="Directory written by 'history export'.",
                                        show_default=False)],
    master: Annotated[str | None, typer.Option("--master", help="Spark master [default: local[*]].",
                                               show_default=False)] = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Per group and day on Spark: p50/p99/max lag and time lag, commit rate, REWIND events.

    Example: offsetkeeper history report --from /data/offset-history -o csv
    """
    from offsetkeeper.history.spark_report import REPORT_COLUMNS, daily_report
    from offsetkeeper.spark.session import get_spark

    spark = get_spark(master)
    rows = daily_report(spark, source)
    if not rows:
        raise UsageError(f"history report: {source} holds no samples")
    render_rows(rows, REPORT_COLUMNS, output)

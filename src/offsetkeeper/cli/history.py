"""`offsetkeeper history record|show|at|plot|export|report`."""

from __future__ import annotations

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
from offsetkeeper.errors import require_extra
from offsetkeeper.ops.history import SamplerSettings, TimeRange

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


ConnectUrlOpt = Annotated[list[str] | None, typer.Option(
    "--connect-url", metavar="URL", show_default=False,
    help="Kafka Connect worker, http[s]://[user:password@]host:port: its source connectors' "
         "positions are sampled too (repeatable, one per Connect cluster).")]


ConnectUserOpt = Annotated[str | None, typer.Option(
    "--connect-user", envvar="OFFSETKEEPER_CONNECT_USER", metavar="USER", show_default=False,
    help="Basic auth user of the --connect-url workers.")]
ConnectPasswordOpt = Annotated[str | None, typer.Option(
    "--connect-password", envvar="OFFSETKEEPER_CONNECT_PASSWORD", metavar="PASSWORD",
    show_default=False, help="Basic auth password (prefer the env var "
    "OFFSETKEEPER_CONNECT_PASSWORD).")]
ConnectCaOpt = Annotated[str | None, typer.Option(
    "--connect-ca", metavar="FILE", show_default=False,
    help="CA certificates (PEM) for https workers.")]
ConnectInsecureOpt = Annotated[bool, typer.Option(
    "--connect-insecure", help="Do not verify the workers' TLS certificates.")]


def sampler_settings(group, all_groups, interval, retain, time_lag, window, group_allow,
                     group_deny, topic_allow, topic_deny, connect_url=None,
                     connect_auth=(None, None, None, False)) -> SamplerSettings:
    """The shared record/exporter options as the operations layer takes them
    (`connect_auth`: --connect-user, --connect-password, --connect-ca, --connect-insecure)."""
    user, password, ca, insecure = connect_auth
    return SamplerSettings(groups=tuple(group or ()), all_groups=all_groups, interval=interval,
                           retain=retain, time_lag=time_lag, window=window,
                           connect_urls=tuple(connect_url or ()), connect_user=user,
                           connect_password=password, connect_ca=ca,
                           connect_verify=not insecure,
                           group_allow=tuple(group_allow or ()), group_deny=tuple(group_deny or ()),
                           topic_allow=tuple(topic_allow or ()), topic_deny=tuple(topic_deny or ()))


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
    connect_url: ConnectUrlOpt = None, connect_user: ConnectUserOpt = None,
    connect_password: ConnectPasswordOpt = None, connect_ca: ConnectCaOpt = None,
    connect_insecure: ConnectInsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None,
) -> None:
    """Sample committed offsets, log start/end and time lag of groups into the history store,
    every --interval until SIGTERM/SIGINT (or once). With --connect-url, also Kafka Connect
    source connectors' positions (sink connectors' groups are sampled as consumer groups).

    Example: offsetkeeper history record --all-groups --interval 30s --store /var/lib/ok/history.db
    """
    from offsetkeeper.ops.history import RecordRequest, record_history

    req = RecordRequest(sampler_settings(group, all_groups, interval, retain, time_lag, window,
                                         group_allow, group_deny, topic_allow, topic_deny,
                                         connect_url, (connect_user, connect_password,
                                                       connect_ca, connect_insecure)),
                        store=store, once=once, exporter=exporter, log_to_stderr=True)
    outcome = record_history(connection(bootstrap, command_config, cluster, config), req)
    summary = outcome.summary
    if once and summary.last is not None:
        say(f"stored {plural(summary.last.samples, 'sample')} of "
            f"{plural(summary.last.groups, 'group')} in {summary.store}")
        # groups the principal may not read (ACLs): one line each, and a partial failure
        for g, e in outcome.denied.items():
            say(f"group {g}: {e}", style="bold red", prefix="error:")
        if outcome.denied:
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
    from offsetkeeper.ops.history import SHOW_COLUMNS, history_rows

    rows = history_rows(group, store=store, topic=topic, window=TimeRange(since, until))
    render_rows(rows, SHOW_COLUMNS, output)


@app.command("positions")
def positions(
    connector: Annotated[str | None, typer.Argument(
        metavar="CONNECTOR", help="Kafka Connect source connector (default: all).",
        show_default=False)] = None,
    since: SinceOpt = "6h", until: UntilOpt = None, store: StoreOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Kafka Connect source connectors' positions over time, as `history record --connect-url`
    sampled them: one row per partition map per sample (maps as canonical JSON).

    Example: offsetkeeper history positions file-source --since 1h -o json
    """
    from offsetkeeper.ops.history import POSITION_COLUMNS, history_positions

    rows = history_positions(connector, store=store, window=TimeRange(since, until))
    render_rows(rows, POSITION_COLUMNS, output)


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
    from offsetkeeper.ops.history import AT_COLUMNS, history_at

    render_rows(history_at(group, when, store=store).rows(), AT_COLUMNS, output)


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
    require_extra("plots", "history plot")
    from offsetkeeper.ops.history import plot_history

    n = plot_history(group, out, store=store, topic=topic, window=TimeRange(since, until))
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
    from offsetkeeper.ops.history import export_history

    res = export_history(to, store=store, groups=group or (), window=TimeRange(since, until))
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
    require_extra("spark", "history report")
    from offsetkeeper.ops.history import REPORT_COLUMNS, history_report

    render_rows(history_report(source, master=master), REPORT_COLUMNS, output)

"""`offsetkeeper commits scan|show|at|generations|rate|rewinds|topics|expired|rebalances`:
the `__consumer_offsets` log as a commit history."""

from __future__ import annotations

from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    RemoteOpt,
    connection,
    spark_location,
)
from offsetkeeper.cli.output import OutputFormat, render_json, render_rows, say
from offsetkeeper.cli.progress import progress_bar
from offsetkeeper.errors import UsageError, require_extra

app = typer.Typer(help="Decode __consumer_offsets into a commit history (Spark) and query it.",
                  no_args_is_help=True)

HistoryOpt = Annotated[str | None, typer.Option(
    "--history", "-H", envvar="OFFSETKEEPER_COMMIT_HISTORY", metavar="DIR",
    help="Commit history directory written by 'commits scan --out DIR' [default: read the "
    "cluster's __consumer_offsets now, given -b/--bootstrap-server or --cluster].",
    show_default=False)]
GroupArg = Annotated[str | None, typer.Argument(
    metavar="GROUP", help="Consumer group (or --group).", show_default=False)]
GroupOpt = Annotated[str | None, typer.Option("--group", "-g", metavar="GROUP",
                                              help="Consumer group (or the GROUP argument).",
                                              show_default=False)]
GroupFilterOpt = Annotated[str | None, typer.Option("--group", "-g", metavar="GROUP",
                                                    help="Only this group.", show_default=False)]
MasterOpt = Annotated[str | None, typer.Option("--master", metavar="URL",
                                               help="Spark master [default: local[*]].", show_default=False)]
TopicOpt = Annotated[str, typer.Option("--topic", "-t", help="Topic holding the records.")]
ConfOpt = Annotated[list[str] | None, typer.Option(
    "--conf", metavar="KEY=VALUE", help="Spark configuration (repeatable).", show_default=False)]

_CLUSTER_PARAMS = ("bootstrap", "command_config", "cluster", "config")


def _one_group(arg: str | None, opt: str | None) -> str:
    if arg is not None and opt is not None and arg != opt:
        raise UsageError(f"two groups given ('{arg}' and --group '{opt}'): give one")
    group = arg if arg is not None else opt
    if group is None:
        raise UsageError("missing the group: give it as GROUP or --group GROUP")
    return group


def _query_source(ctx: typer.Context, history: str | None, *, group: str | None,
                  master: str | None, remote: str | None, conf: list[str] | None):
    """The history a query reads (`ops.commits.history_of`): --history, or the cluster the
    connection options name, read now. A cluster from the environment or the config file
    yields to --history, a cluster on the command line to $OFFSETKEEPER_COMMIT_HISTORY; both
    on the command line are refused (exit 2)."""
    from offsetkeeper.ops.commits import history_of

    def typed_here(name: str) -> bool:
        # by name: Typer carries its own copy of Click, whose ParameterSource is another enum
        return getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"

    p = ctx.params
    typed = [n for n in _CLUSTER_PARAMS if p.get(n) is not None and typed_here(n)]
    if typed and history and not typed_here("history"):
        history = None  # the command line wins over $OFFSETKEEPER_COMMIT_HISTORY
    conn = None
    if not history or typed:
        try:
            conn = connection(p.get("bootstrap"), p.get("command_config"), p.get("cluster"),
                              p.get("config"))
        except UsageError as exc:
            if history:
                raise
            raise UsageError("give --history DIR (a history written by 'commits scan --out DIR') "
                             "or a cluster to read now (-b/--bootstrap-server, --cluster)") from exc
    topic = p.get("topic") or "__consumer_offsets"
    if history and typed_here("topic"):
        raise UsageError("--topic names the topic to read from the cluster; a --history was "
                         "scanned already: give one")
    return history_of(history, conn, group=group, topic=topic,
                      master=spark_location(master, remote), spark_conf=tuple(conf or ()))


@app.command("scan")
def scan(
    out: Annotated[str, typer.Option("--out", "-O", metavar="DIR",
                                     help="Directory for the commit history (Parquet + scan.json).")],
    topic: TopicOpt = "__consumer_offsets",
    backup: Annotated[str | None, typer.Option(
        "--backup", metavar="DEST/BACKUP_ID", help="Read a backup of the topic made by 'backup run' "
        "instead of the cluster.", show_default=False)] = None,
    group: GroupFilterOpt = None,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Read __consumer_offsets on Spark, decode it in Arrow batches, write the commit history.

    With --group only the partition holding that group is read. Unknown record types and
    versions are counted and skipped; malformed records are counted with samples.

    Example: offsetkeeper commits scan -b localhost:9092 --out /data/commit-history
    """
    require_extra("spark", "commits scan")
    from offsetkeeper.ops.commits import ScanRequest, scan_commits

    conn = None if backup else connection(bootstrap, command_config, cluster, config)
    req = ScanRequest(out=out, topic=topic, connection=conn, backup=backup, group=group,
                      master=spark_location(master, remote), spark_conf=tuple(conf or ()),
                      config=str(config) if config else None)
    with progress_bar(output) as progress:
        s = scan_commits(req, progress=progress)
    if output is OutputFormat.json:
        render_json(s.__dict__ | {"skipped": [k.__dict__ for k in s.skipped]})
        return
    rows = [{"field": k, "value": v} for k, v in [
        ("source", s.source), ("group", s.group), ("source partitions", s.source_partitions),
        ("records", s.records), ("offset commits", s.offset_commits),
        ("offset tombstones", s.offset_tombstones), ("group metadata", s.group_metadata),
        ("group tombstones", s.group_tombstones),
        ("consumer/share/streams group records",
         ", ".join(f"{k}: {n}" for k, n in sorted(s.coordinator_records.items())) or 0),
        ("skipped (unknown)", ", ".join(f"{k.part} v{k.version}: {k.count}" for k in s.skipped) or 0),
        ("malformed", s.errors),
        ("pending (open transaction)", s.pending_records), ("seconds", s.seconds),
        ("history", out)]]
    render_rows(rows, ["field", "value"], output, title="commit history scan")
    for sample in s.error_samples:
        say(f"malformed record: {sample}")
    if s.stable_offsets:
        say(f"{s.pending_records} record(s) follow an open transaction (partition(s) "
            f"{', '.join(f'{p} from offset {o}' for p, o in s.stable_offsets.items())}): shown as "
            "pending, never used as a reset target; scan again once the transaction ended")


# The queries take the same options as `commits scan` (and Kafka's tools): the history they
# read, or the cluster to read now, and where Spark runs.
@app.command("show")
def show(
    ctx: typer.Context,
    group: GroupArg = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO-8601 start (UTC when no zone).",
                                              show_default=False)] = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO-8601 end (UTC when no zone).",
                                              show_default=False)] = None,
    group_opt: GroupOpt = None, history: HistoryOpt = None, topic: TopicOpt = "__consumer_offsets",
    master: MasterOpt = None, remote: RemoteOpt = None, conf: ConfOpt = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """A group's commits in log order, with the change per partition (REWIND when it went back).

    Example: offsetkeeper commits show payments --history /data/commit-history --since 2026-11-20T09:00:00Z
    """
    require_extra("spark", "commits show")
    from offsetkeeper.ops.commits import group_commits

    group = _one_group(group, group_opt)
    with _query_source(ctx, history, group=group, master=master, remote=remote, conf=conf) as h:
        rows = group_commits(h, group, since=since, until=until)
    render_rows(rows, ["time", "topic", "partition", "offset", "change", "metadata", "leader_epoch",
                       "source_offset", "pending"], output, title=f"commits of group {group}" if output is OutputFormat.table else None)


@app.command("at")
def at(
    ctx: typer.Context,
    group: GroupArg = None,
    time: Annotated[str | None, typer.Option("--time", "-T", help="ISO-8601 time (UTC when no zone).",
                                             show_default=False)] = None,
    group_opt: GroupOpt = None, history: HistoryOpt = None, topic: TopicOpt = "__consumer_offsets",
    master: MasterOpt = None, remote: RemoteOpt = None, conf: ConfOpt = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """The group's committed offsets as of a time, replayed exactly from the log.

    Example: offsetkeeper commits at payments --history /data/commit-history --time 2026-11-20T09:40:00Z
    """
    require_extra("spark", "commits at")
    from offsetkeeper.ops.commits import commits_at

    group = _one_group(group, group_opt)
    if time is None:
        raise UsageError("missing option --time/-T (an ISO-8601 time, UTC when no zone)")
    with _query_source(ctx, history, group=group, master=master, remote=remote, conf=conf) as h:
        rows = commits_at(h, group, time)
    render_rows(rows, ["group", "topic", "partition", "offset", "committed_at", "metadata",
                       "leader_epoch", "status"], output)


@app.command("generations")
def generations(
    ctx: typer.Context,
    group: GroupArg = None,
    members: Annotated[bool, typer.Option(
        "--members", help="One row per member (consumer, share and streams groups): joined, "
        "left, first and last member epoch, subscription, assignment.")] = False,
    group_opt: GroupOpt = None, history: HistoryOpt = None, topic: TopicOpt = "__consumer_offsets",
    master: MasterOpt = None, remote: RemoteOpt = None, conf: ConfOpt = None,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """A group's generations: members, their subscriptions and assignments, per rebalance.

    Classic groups: one row per member per generation. Consumer (KIP-848), share and streams
    groups: their membership history, one row per event (group epoch, member joined, new
    subscription, new assignment and member epoch, target assignment, member left).

    Example: offsetkeeper commits generations payments --history /data/commit-history
    """
    require_extra("spark", "commits generations")
    from offsetkeeper.ops.commits import group_generations

    group = _one_group(group, group_opt)
    with _query_source(ctx, history, group=group, master=master, remote=remote, conf=conf) as h:
        gens = group_generations(h, group, members=members)
    if gens.members:
        render_rows(gens.rows, ["member", "client", "host", "joined", "left", "first_epoch",
                                "last_epoch", "assignments", "subscribed", "assigned"], output)
        return
    render_rows(gens.rows, ["time", "generation", "state", "member", "client", "host", "subscribed",
                       "assigned"], output)


def _report(name: str, help_text: str, example: str) -> None:
    def command(ctx: typer.Context, group: GroupFilterOpt = None, history: HistoryOpt = None,
                topic: TopicOpt = "__consumer_offsets", master: MasterOpt = None, remote: RemoteOpt = None, conf: ConfOpt = None,
                bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
                cluster: ClusterOpt = None, config: ConfigOpt = None,
                output: OutputOpt = OutputFormat.table) -> None:
        require_extra("spark", f"commits {name}")
        from offsetkeeper.ops.commits import commit_report

        with _query_source(ctx, history, group=group, master=master, remote=remote,
                           conf=conf) as h:
            report = commit_report(name, h, group=group, master=spark_location(master, remote))
        render_rows(report.rows, report.columns, output)
        if not report.rows and output is OutputFormat.table:
            say(f"no {name} found")
    command.__doc__ = f"{help_text} (Spark).\n\nExample: {example}"
    app.command(name)(command)


_report("rate", "Commits per group: count, partitions, first/last commit, commits per minute",
        "offsetkeeper commits rate --history /data/commit-history")
_report("rewinds", "REWIND events: a partition's committed offset went backwards",
        "offsetkeeper commits rewinds --history /data/commit-history -g payments")
_report("topics", "Groups per topic, and how many still hold a live offset on it",
        "offsetkeeper commits topics --history /data/commit-history")
_report("expired", "Groups whose offsets all expired or were deleted, or whose metadata was deleted",
        "offsetkeeper commits expired --history /data/commit-history")
_report("rebalances", "Rebalances (new generations; new group epochs of consumer, share and "
        "streams groups) per group and hour",
        "offsetkeeper commits rebalances --history /data/commit-history -g payments")

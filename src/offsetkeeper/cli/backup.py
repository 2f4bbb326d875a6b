"""`offsetkeeper backup run` and `offsetkeeper backups list|describe|validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    OutputOpt,
    RemoteOpt,
    duration_option,
    spark_location,
)
from offsetkeeper.cli.output import OutputFormat, plural, render_json, render_rows, say
from offsetkeeper.cli.progress import progress_bar
from offsetkeeper.cli.quiet import native_output_to_log
from offsetkeeper.errors import UsageError, require_extra
from offsetkeeper.times import ms_of_iso

backup_app = typer.Typer(help="Back topics up to Parquet with a manifest (Spark).", no_args_is_help=True)
backups_app = typer.Typer(help="List, describe and validate backups.", no_args_is_help=True)

DestOpt = Annotated[
    str | None,
    typer.Option("--dest", "-d", envvar="OFFSETKEEPER_BACKUP_DEST", metavar="PATH|URL",
                 help="Backup destination: a directory or URL holding backups.", show_default=False),
]
MasterOpt = Annotated[
    str | None,
    typer.Option("--master", metavar="URL", help="Spark master [default: local[*]].", show_default=False),
]
ConfPairsOpt = Annotated[
    list[str] | None,
    typer.Option("--conf", metavar="KEY=VALUE", help="Spark configuration KEY=VALUE (repeatable).", show_default=False),
]


@backup_app.command("run")
def run(
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", "-t", metavar="PATTERN", help="Topic to back up: NAME, GLOB or ~REGEX (repeatable).",
        show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", metavar="PATTERN", help="Topics to leave out: NAME, GLOB or ~REGEX (repeatable).",
        show_default=False)] = None,
    dest: DestOpt = None,
    backup_id: Annotated[str | None, typer.Option(
        "--id", metavar="ID", help="Backup id; running the same id again appends what is new.",
        show_default=False)] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", "-f", metavar="FILE", help="YAML file with source, topics, destination, backup_id, spark.",
        show_default=False)] = None,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfPairsOpt = None,
    max_records_per_task: Annotated[int | None, typer.Option(
        "--max-records-per-task", min=1, metavar="N",
        help="Split partitions into Spark tasks of at most this many offsets [default: 500000].",
        show_default=False)] = None,
    follow: Annotated[bool, typer.Option(
        "--follow", help="Keep the backup current: an increment every --interval until "
                         "SIGTERM/SIGINT (docs/backup.md).")] = False,
    interval: Annotated[float | None, duration_option(
        "--interval", help="With --follow: time between the starts of increments [default: 1m].",
        seconds=True, minimum_s=1)] = None,
    max_records_per_increment: Annotated[int | None, typer.Option(
        "--max-records-per-increment", min=1, metavar="N",
        help="With --follow: at most N offsets per increment, shared fairly by the partitions "
             "(the rest follows at once) [default: no limit].", show_default=False)] = None,
    metrics_listen: Annotated[str | None, typer.Option(
        "--metrics-listen", metavar="HOST:PORT",
        help="With --follow: serve the backup's lag as Prometheus metrics on /metrics "
             "(port 0: any free port).", show_default=False)] = None,
    max_failures: Annotated[int | None, typer.Option(
        "--max-failures", min=1, metavar="N", show_default=False,
        help="With --follow: stop (exit 1) after N failed increments in a row [default: 5].")] = None,
    bootstrap: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None,
    config: ConfigOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Back up topics: Parquet (zstd) per topic/partition plus a manifest, written last.

    The end offset of every partition is fixed when the run starts (a snapshot); the committed
    offsets of every group with offsets on these topics are captured with it. With --follow the
    same id gets an increment every --interval (one Spark session, idle intervals write
    nothing), resumable after a kill: a killed increment is redone by the next one.

    Example: offsetkeeper backup run -b localhost:9092 -t 'orders*' --dest /backups --id nightly

    Example: offsetkeeper backup run -b localhost:9092 -t orders --dest /backups --id nightly --remote sc://localhost:15002

    Example: offsetkeeper backup run -b localhost:9092 -t 'orders*' --dest /backups --id live --follow --interval 30s --metrics-listen 127.0.0.1:9309
    """
    require_extra("spark", "backup run")
    from offsetkeeper.ops.backup import BackupRequest, run_backup

    req = BackupRequest(
        file=file, config=config, bootstrap_server=bootstrap, command_config=command_config,
        cluster=cluster, include=tuple(topic or ()), exclude=tuple(exclude or ()), destination=dest,
        backup_id=backup_id, master=spark_location(master, remote), spark_conf=tuple(conf or ()),
        max_records_per_task=max_records_per_task)
    if follow:
        _follow(req, output, interval=60.0 if interval is None else interval,
                max_offsets=max_records_per_increment, metrics_listen=metrics_listen,
                max_failures=5 if max_failures is None else max_failures)
        return
    for value, flag in ((interval, "--interval"), (max_records_per_increment,
                        "--max-records-per-increment"), (metrics_listen, "--metrics-listen"),
                        (max_failures, "--max-failures")):
        if value is not None:
            raise UsageError(f"{flag} needs --follow (it sets how a followed backup runs)")
    with native_output_to_log(), progress_bar(output) as on_progress:
        result = run_backup(req, progress=on_progress)
    if output is OutputFormat.json:
        render_json(result.summary())
        return
    s = result.summary()
    s["gaps"] = len(s["gaps"])
    s["timings"] = ", ".join(f"{k} {v}s" for k, v in s["timings"].items())
    rows = [{"field": k, "value": v} for k, v in s.items()]
    render_rows(rows, ["field", "value"], output, title=f"backup {result.backup_id} run {result.run}")
    for t, p, g in result.gaps:
        say(f"{t}:{p}: offsets [{g.start}, {g.end}) were removed by retention before they could "
            "be read (recorded as a gap)", style="bold yellow", prefix="warning:")


def _follow(req, output: OutputFormat, *, interval: float, max_offsets: int | None,
            metrics_listen: str | None, max_failures: int) -> None:
    """`backup run --follow`: one line per recorded or failed increment (JSON lines with -o
    json), no progress display; exit 1 when it stopped after --max-failures failures."""
    import json
    import sys
    import threading

    from offsetkeeper.ops.backup import follow_backup

    as_json = output is OutputFormat.json

    def on_increment(inc) -> None:
        if as_json:
            sys.stdout.write(json.dumps(inc.as_dict()) + "\n")
            sys.stdout.flush()
        elif inc.error:
            say(f"increment {inc.run} failed at {inc.finished_at}: {inc.error} (retrying)",
                style="bold yellow", prefix="warning:")
        else:
            behind = "" if inc.behind is None else f"; {inc.behind:,} offsets behind"
            sys.stdout.write(f"{inc.finished_at} run {inc.run}: {plural(inc.records, 'record')} "
                             f"from {plural(inc.partitions, 'partition')}, "
                             f"{inc.bytes_written:,} bytes in {inc.seconds:.1f} s{behind}\n")
            sys.stdout.flush()

    def on_listen(url: str) -> None:
        say(f"serving metrics on {url}")

    with native_output_to_log():
        summary = follow_backup(req, interval_s=interval, max_offsets=max_offsets,
                                metrics_listen=metrics_listen, max_failures=max_failures,
                                stop=threading.Event(), on_increment=on_increment,
                                on_listen=on_listen)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict()) + "\n")
    elif summary.exit_code:
        say(f"stopped after {max_failures} failed increments in a row: {summary.last_error}",
            style="bold red", prefix="error:")
    else:
        sys.stdout.write(f"stopped: {plural(summary.recorded, 'increment')} recorded "
                         f"({plural(summary.records, 'record')}), backup at run "
                         f"{summary.last_run}\n")
    if summary.exit_code:
        raise typer.Exit(summary.exit_code)


@backups_app.command("list")
def list_(dest: DestOpt = None, output: OutputOpt = OutputFormat.table) -> None:
    """List the backups under a destination (one with an unreadable manifest is a row with its
    error).

    Example: offsetkeeper backups list --dest /backups
    """
    from offsetkeeper.ops.backup import follow_state, list_backups

    entries = list_backups(dest)
    rows = []
    for e in entries:
        m = e.manifest
        rows.append({"backup_id": e.backup_id, "runs": len(m.runs), "topics": len(m.topics),
                     "partitions": sum(len(t.partitions) for t in m.topics),
                     "records": m.record_count, "groups": len(m.groups),
                     "updated_at": ms_of_iso(m.updated_at),
                     "follow": follow_state(dest, e.backup_id), "error": None}
                    if m is not None else
                    {"backup_id": e.backup_id, "runs": None, "topics": None, "partitions": None,
                     "records": None, "groups": None, "updated_at": None,
                     "follow": follow_state(dest, e.backup_id), "error": e.error})
    render_rows(rows, ["backup_id", "runs", "topics", "partitions", "records", "groups",
                       "updated_at", "follow", "error"], output)
    bad = [e for e in entries if e.manifest is None]
    if bad:
        say(f"{len(bad)} backup(s) with an unreadable manifest (first: {bad[0].backup_id}); "
            "see the error column", style="bold yellow", prefix="warning:")


@backups_app.command("describe")
def describe(
    backup_id: Annotated[str, typer.Argument(help="Backup id.")],
    dest: DestOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Show a backup: per partition the offset range, records, timestamps, checksum and gaps.

    Timestamps are shown as ISO-8601 UTC. With --output json the whole manifest is printed
    (timestamps as epoch ms, each with its ISO-8601 string beside it in a key ending `_iso`).

    Example: offsetkeeper backups describe nightly --dest /backups
    """
    from offsetkeeper.ops.backup import describe_backup

    m = describe_backup(dest, backup_id)
    if output is OutputFormat.json:
        render_json(_manifest_json(m.model_dump(mode="json")))
        return
    rows = [{"topic": t.name, "partition": p.partition, "start_offset": p.start_offset,
             "end_offset": p.end_offset, "records": p.record_count,
             "first_timestamp": p.first_timestamp, "last_timestamp": p.last_timestamp,
             "checksum": p.checksum, "runs": len(p.segments),
             "gaps": [f"{g.start}-{g.end - 1}" for g in p.gaps]}
            for t in m.topics for p in t.partitions]
    render_rows(rows, ["topic", "partition", "start_offset", "end_offset", "records",
                       "first_timestamp", "last_timestamp", "checksum", "runs", "gaps"], output,
                title=f"backup {m.backup_id}: {plural(m.record_count, 'record')}, "
                      f"{plural(len(m.runs), 'run')}, "
                      f"updated {m.updated_at}")
    if output is OutputFormat.table:
        grows = [{"group": g.group, "topic": o.topic, "partition": o.partition, "offset": o.offset}
                 for g in m.groups for o in g.offsets]
        if grows:
            render_rows(grows, ["group", "topic", "partition", "offset"], output,
                        title="committed offsets captured with the data")
        for t in m.topics:
            if t.configs:
                render_rows([{"config": k, "value": v} for k, v in t.configs.items()],
                            ["config", "value"], output, title=f"topic {t.name} configs")


@backups_app.command("validate")
def validate(
    backup_id: Annotated[str, typer.Argument(help="Backup id.")],
    dest: DestOpt = None,
    deep: Annotated[bool, typer.Option(
        "--deep", help="Re-read every file and recompute counts and checksums (Spark).")] = False,
    master: MasterOpt = None,
    conf: ConfPairsOpt = None,
    output: OutputOpt = OutputFormat.table,
) -> None:
    """Check a backup: the manifest and that every file exists; --deep re-reads the data.

    Exits 1 and names the partition, run or file when anything does not match.

    Example: offsetkeeper backups validate nightly --dest /backups --deep
    """
    require_extra("spark", "backups validate")
    from offsetkeeper.errors import StoreError
    from offsetkeeper.ops.backup import validate_backup

    with native_output_to_log():
        report = validate_backup(dest, backup_id, deep=deep, master=master, spark_conf=tuple(conf or ()))
    if output is OutputFormat.json:
        render_json(report.as_dict())
    else:
        render_rows([{"where": p.where, "problem": p.message} for p in report.problems],
                    ["where", "problem"], output) if report.problems else None
        if output is OutputFormat.table and report.ok:
            say(
                f"backup {backup_id} is valid ({'deep' if deep else 'quick'}: "
                f"{plural(report.files_checked, 'file')}, {plural(report.partitions_checked, 'partition')}"
                + (f", {plural(report.records_checked, 'record')} re-read" if deep else "") + ")")
        for n in report.unfinished_runs:
            say(f"data/run={n} holds an increment that did not finish: not part of the backup; "
                "the next run of this id replaces it", prefix="note:")
    if not report.ok:
        first = report.problems[0]
        raise StoreError(f"backup {backup_id} failed validation: {len(report.problems)} "
                         f"problem(s), first: {first}")


def _manifest_json(d: dict) -> dict:
    """The manifest as JSON output: its ISO times as epoch ms with `<name>_iso` beside them."""
    from offsetkeeper.cli.output import with_iso

    def walk(v):
        if isinstance(v, list):
            return [walk(x) for x in v]
        if not isinstance(v, dict):
            return v
        out = {}
        for k, x in v.items():
            ms = ms_of_iso(x) if k.endswith("_at") else None
            out[k] = ms if ms is not None else walk(x)
        return out

    return with_iso(walk(d), ["first_timestamp", "last_timestamp", "created_at", "updated_at",
                              "captured_at", "started_at", "finished_at"])

"""`offsetkeeper zk export`: ZooKeeper-era consumer offsets (Kafka < 0.9)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from offsetkeeper.cli.output import OutputFormat, plural, render_rows, say
from offsetkeeper.errors import require_extra

app = typer.Typer(help="ZooKeeper-era consumer offsets: export them (migrate with "
                  "'offsets reset --from-zookeeper').", no_args_is_help=True)

ZookeeperOpt = Annotated[str, typer.Option(
    "--zookeeper", "-z", envvar="OFFSETKEEPER_ZOOKEEPER", metavar="HOST:PORT[/chroot]",
    help="ZooKeeper connect string, with the chroot Kafka used if any.")]


@app.command("export")
def export(
    zookeeper: ZookeeperOpt,
    group: Annotated[list[str] | None, typer.Option(
        "--group", "-g", metavar="GROUP", help="Group (repeatable) [default: every group under /consumers].",
        show_default=False)] = None,
    output: Annotated[OutputFormat, typer.Option(
        "--output", "-o", case_sensitive=False,
        help="table, json, or csv in the reset file format (group,topic,partition,offset; no header).")]
        = OutputFormat.table,
) -> None:
    """Read /consumers/GROUP/offsets/TOPIC/PARTITION from ZooKeeper.

    The csv output is the --from-file format of 'offsets reset'. Nodes that do not hold an
    offset are reported on stderr and make the exit code 1.

    Example: offsetkeeper zk export --zookeeper zk1:2181/kafka -g payments -o csv > payments.csv
    """
    require_extra("zk", "zk export")
    from offsetkeeper.ops.zk import ZkExportRequest, export_zk_offsets

    result = export_zk_offsets(ZkExportRequest(zookeeper, tuple(group or ())))
    if output is OutputFormat.csv:
        # The --from-file writer's quoting (RFC 4180, plus a leading '#' or whitespace quoted),
        # so `offsets reset --from-file` reads every name back exactly.
        for line in result.reset_file_lines():
            sys.stdout.write(line + "\n")
    else:
        render_rows(result.rows(), ["group", "topic", "partition", "offset"], output)
    for g, ids in sorted(result.live.items()):
        if ids:
            say(f"group {g} has {plural(len(ids), 'live consumer')} in ZooKeeper; its offsets may "
                "still move", style="bold yellow", prefix="warning:")
    for p in result.problems:
        say(f"{p.path}: {p.reason}", style="bold red", prefix="error:")
    if result.problems:
        raise typer.Exit(1)

"""What `share-groups` and `streams-groups` have in common: the connection through Kafka's Java
admin client, the `--state` filter of `list`, the GROUP arguments of `describe`, and the
options of `reset-offsets` (targets, --execute, --no-snapshot, --export, --script). One
definition each, so the two commands cannot drift apart."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from offsetkeeper.cli.common import connection, group_ids
from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops.groups import helper_command


def connect(bootstrap, command_config, cluster, config) -> KafkaAdmin:
    """The admin facade, after checking Java and the helper are there (one line, exit 1)."""
    helper_command()
    return KafkaAdmin(connection(bootstrap, command_config, cluster, config))


def states_option(states: list[str]):
    """`--state S,...` of a `list` command, naming the states the group type has."""
    return Annotated[str | None, typer.Option(
        "--state", help="Only groups in these states, comma-separated: " + ",".join(states))]


def parse_states(text: str | None, states: list[str], kind: str) -> set[str] | None:
    """The lower-case states of `--state` (None: every state); an unknown one is bad input."""
    if not text:
        return None
    wanted = {s.strip().lower().replace("_", "") for s in text.split(",") if s.strip()}
    bad = sorted(wanted - set(states))
    if bad:
        raise UsageError(f"--state '{bad[0]}' is not a {kind} group state (expected "
                         f"{', '.join(states)})")
    return wanted


def describe_ids(groups: list[str] | None, all_groups: bool, kind: str, list_all) -> list[str]:
    """The groups a `describe` names, or (--all-groups) every group `list_all()` returns."""
    ids = group_ids(groups, option="GROUP")
    if all_groups and ids:
        raise UsageError("give GROUP names or --all-groups, not both")
    if all_groups:
        return list_all()
    if not ids:
        raise UsageError(f"no group given: name one or more {kind} groups, or use --all-groups")
    return ids


GroupsArg = Annotated[list[str] | None, typer.Argument(help="Group ids.", show_default=False)]
AllGroupsOpt = Annotated[bool, typer.Option("--all-groups", help="Describe every group of "
                                            "this type.")]
MembersOpt = Annotated[bool, typer.Option("--members", help="Members and their assignments.")]
StateViewOpt = Annotated[bool, typer.Option("--state", help="State, coordinator, epochs, member "
                                            "count.")]

# -- reset-offsets -------------------------------------------------------------------------------
GroupOpt = Annotated[str, typer.Option("--group", "-g", help="The group.")]
TopicsOpt = Annotated[list[str] | None, typer.Option(
    "--topic", "-t", metavar="TOPIC[:P,...]", help="TOPIC or TOPIC:P[,P...] (repeatable).")]
ToCurrentOpt = Annotated[bool, typer.Option("--to-current", help="The current offset (the log "
                                            "end where there is none); clamps out-of-range ones.")]
ShiftByOpt = Annotated[int | None, typer.Option("--shift-by", help="Move the current offset by ±N.")]
FromFileOpt = Annotated[Path | None, typer.Option(
    "--from-file", help="CSV topic,partition,offset or group,topic,partition,offset (no header).")]
ExecuteOpt = Annotated[bool, typer.Option("--execute", help="Apply the plan (default: dry run).")]
NoSnapshotOpt = Annotated[bool, typer.Option("--no-snapshot", help="Do not snapshot the group "
                                             "before --execute.")]
ExportOpt = Annotated[Path | None, typer.Option("--export", help="Write the plan as CSV for "
                                                "--from-file.")]

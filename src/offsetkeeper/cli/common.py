"""Options and helpers every command shares (connection flags, output format, errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from offsetkeeper.cli.output import OutputFormat
from offsetkeeper.config import Connection
from offsetkeeper.kafka.connect import resolve_connection

BootstrapOpt = Annotated[
    str | None,
    typer.Option("--bootstrap-server", "-b", envvar="OFFSETKEEPER_BOOTSTRAP_SERVER",
                 help="Kafka bootstrap servers, HOST:PORT[,HOST:PORT].", show_default=False),
]
CommandConfigOpt = Annotated[
    Path | None,
    typer.Option("--command-config", help="Client properties file (SASL, SSL, client.id ...), "
                 "as for kafka-consumer-groups.sh.", show_default=False),
]
ClusterOpt = Annotated[
    str | None,
    typer.Option("--cluster", help="Named cluster from the config file.", show_default=False),
]
RemoteOpt = Annotated[
    str | None,
    typer.Option("--remote", metavar="sc://HOST:PORT",
                 help="Run the Spark jobs on this Spark Connect server instead of a local session "
                 "[default: $SPARK_REMOTE].", show_default=False),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", envvar="OFFSETKEEPER_CONFIG",
                 help="YAML config file [default: ~/.config/offsetkeeper/config.yaml].",
                 show_default=False),
]


class Duration:
    """A duration option (`2h`, `30s`, `1d2h`, `500ms`, `PT2H`, `P1DT2H`): checked while the
    command line is parsed, so a bad value is one line and exit 2 before anything connects.

    The value stays the text the user typed (the library parses it again with the same
    `offsetkeeper.times.parse_duration_ms`); `words` are extra values the option allows
    (`forever` for --retain). With `seconds=True` the value becomes float seconds, and a bare
    number still means seconds (`--deadline 300` as before).
    """

    def __init__(self, option: str, *, words: tuple[str, ...] = (), seconds: bool = False,
                 minimum_s: float | None = None, maximum_s: float | None = None,
                 allow_zero: bool = False) -> None:
        self.option, self.words, self.seconds = option, words, seconds
        self.minimum_s, self.maximum_s, self.allow_zero = minimum_s, maximum_s, allow_zero

    def __call__(self, value: Any) -> Any:
        from offsetkeeper.errors import UsageError
        from offsetkeeper.times import format_duration_ms, parse_duration_ms

        if not isinstance(value, str):
            return value  # a default
        name = self.option
        if value.strip().lower() in self.words:
            return value.strip().lower()
        text = value.strip()
        if self.seconds and text.replace(".", "", 1).isascii() and text.replace(".", "", 1).isdigit():
            text = f"{text}s"
        try:
            ms = parse_duration_ms(text if self.seconds else value, what=name,
                                   allow_zero=self.allow_zero or self.minimum_s == 0)
        except UsageError as exc:
            if not self.words:
                raise
            raise UsageError(f"{exc.message} (or {' or '.join(self.words)})") from None
        if self.minimum_s is not None and ms < self.minimum_s * 1000:
            raise UsageError(f"{name} {value!r} is shorter than {format_duration_ms(int(self.minimum_s * 1000))}")
        if self.maximum_s is not None and ms > self.maximum_s * 1000:
            raise UsageError(f"{name} {value!r} is longer than {format_duration_ms(int(self.maximum_s * 1000))}")
        return ms / 1000 if self.seconds else value


def duration_option(*names: str, help: str, **kw: Any) -> Any:
    """A `typer.Option` taking a duration (see `Duration`), shown as DURATION in help."""
    return typer.Option(*names, parser=Duration(names[0], **kw), metavar="DURATION",
                        help=help + " Durations: 2h, 30s, 1d2h, 500ms, PT2H, P1DT2H.")


# Reset targets that mean the same for a consumer group and a streaming checkpoint.
ToEarliestOpt = Annotated[bool, typer.Option("--to-earliest", help="Log start.")]
ToLatestOpt = Annotated[bool, typer.Option("--to-latest", help="Log end.")]
ToOffsetOpt = Annotated[str | None, typer.Option("--to-offset", help="Absolute offset N.")]
ToDatetimeOpt = Annotated[str | None, typer.Option(
    "--to-datetime", help="ISO-8601 time, UTC when no zone: first record at/after it.")]
ByDurationOpt = Annotated[str | None, duration_option(
    "--by-duration", help="Back from now: first record at/after now minus this.", allow_zero=True)]
OutputOpt = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", case_sensitive=False, help="Output format."),
]


def group_ids(values: list[str] | None, *, option: str = "--group") -> list[str]:
    """Group ids as given (never split on commas: Kafka allows them), duplicates dropped;
    an empty id is bad input."""
    from offsetkeeper.errors import UsageError
    from offsetkeeper.models import check_names

    ids = list(dict.fromkeys(values or []))
    if "" in ids:
        raise UsageError(f"{option} '' is empty (expected a consumer group id)")
    check_names(ids, what=f"{option}")
    return ids


def spark_location(master: str | None, remote: str | None) -> str | None:
    """The Spark master from ``--master`` / ``--remote`` / SPARK_REMOTE (exit 2 when bad)."""
    from offsetkeeper.ops.spark import spark_location as location

    return location(master, remote)


def _load_config(path: Path | None):
    from offsetkeeper.config import load_config_file

    return load_config_file(path)


def _no_config_needed(bootstrap: str | None, cluster: str | None, config: Path | None) -> bool:
    """True when --bootstrap-server names the cluster and there is no config file to read or
    check (none named, none at the default path): the config file's models (pydantic, YAML,
    ~0.15 s of CPU at every start) are then not loaded at all."""
    import os

    from offsetkeeper.config.paths import CONFIG_ENV, DEFAULT_CONFIG_PATH

    return (bool(bootstrap) and not cluster and config is None and not os.environ.get(CONFIG_ENV)
            and not DEFAULT_CONFIG_PATH.expanduser().exists())


# The options this command was given that a printed follow-up command (an undo hint) needs to
# reach the same cluster and store: a hint must run as pasted ("no cluster given" otherwise).
_HINT_OPTIONS: dict[str, str] = {}


def connection(
    bootstrap: str | None, command_config: Path | None, cluster: str | None, config: Path | None
) -> Connection:
    """Resolve the cluster to talk to from the shared connection options."""
    conn = resolve_connection(
        bootstrap_server=bootstrap,
        command_config=command_config,
        cluster=cluster,
        config=None if _no_config_needed(bootstrap, cluster, config) else _load_config(config),
    )
    given = {"--bootstrap-server": conn.bootstrap_servers if bootstrap else None,
             "--command-config": str(Path(command_config).resolve()) if command_config else None,
             "--cluster": cluster, "--config": str(Path(config).resolve()) if config else None}
    _HINT_OPTIONS.update({k: v for k, v in given.items() if v})
    return conn


def forget_hint_options() -> None:
    """Start a command with no remembered options (tests run many commands in one process)."""
    _HINT_OPTIONS.clear()


def remember_hint_option(flag: str, value: str | None) -> None:
    """Carry `flag value` into printed follow-up commands (e.g. --store of the snapshot)."""
    if value:
        _HINT_OPTIONS[flag] = value


def hint_options() -> str:
    """The remembered options, shell-quoted, to append to a printed command."""
    import shlex

    return "".join(f" {flag} {shlex.quote(v)}" for flag, v in _HINT_OPTIONS.items())

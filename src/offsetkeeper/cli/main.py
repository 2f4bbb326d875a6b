"""The `offsetkeeper` command: a thin layer that parses options, calls the library, renders.

Errors: an `OffsetkeeperError` is one line on stderr and its exit code (2 bad input, 1 failed
operation); anything else is caught too and reported as one line with exit 1 — a Python
traceback reaches the user only with `--verbose`, which also shows librdkafka's own log lines.
Click's usage errors (unknown option, missing value ...) leave the command tree as such an
error too, one line written by `cli/usage.py` (imported only then), with the facts the parser
hooks here leave on them.

Size: what every start runs lives here (the command table, value coercion, parser hooks):
each module more is imported, or compiled, by every command.
"""

from __future__ import annotations

import enum
import gc
import logging
import os
import pathlib
import re
import sys
import traceback
import types
import typing
from typing import Annotated, Any

import typer

from offsetkeeper.errors import OffsetkeeperError, UsageError


def _new_app() -> typer.Typer:
    root = typer.Typer(
        name="offsetkeeper",
        help="See, move, back up and restore Kafka consumer offsets — safely.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,
    )
    root.callback()(_root)
    return root


VERBOSE_ENV = "OFFSETKEEPER_VERBOSE"
_state = {"verbose": False}


def _version(value: bool) -> None:
    if value:
        from offsetkeeper import __version__

        sys.stdout.write(f"offsetkeeper {__version__}\n")
        raise typer.Exit()


def _root(
    verbose: Annotated[bool, typer.Option(
        "--verbose", help="Show debug logs (including librdkafka's) and a traceback on errors.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_version, help="Print the version and exit.")] = False,
) -> None:
    """See, move, back up and restore Kafka consumer offsets — safely.

    Example: offsetkeeper --verbose groups list -b localhost:9092
    """
    if verbose:
        _state["verbose"] = True
        _configure_logging(True)


# Every command: (name, module, attribute, kind, its help's first paragraph). A command's module
# is imported when that command runs (or its --help is asked), so `offsetkeeper --help` and
# `--version` import no subcommand (nor pydantic, confluent_kafka ...); `kind` is "group" (a
# Typer app), "command" (a function) or "register" (a function that adds the command to an app).
# The help column is what the root's --help lists; tests/unit/test_startup.py checks it against
# the commands themselves.
_COMMANDS: tuple[tuple[str, str, str, str, str], ...] = (
    ("exporter", "offsetkeeper.cli.exporter", "run", "command",
     "Serve consumer-group lag, time lag and status as Prometheus metrics (kafka-lag-exporter's "
     "metric names), sampling the cluster every --interval until SIGTERM/SIGINT."),
    ("demo", "offsetkeeper.cli.devbroker", "register_demo", "register",
     "Start a local broker, create data and groups, and walk through inspection, reset, "
     "rollback, backup and restore."),
    ("ui", "offsetkeeper.cli.ui", "run", "command",
     "Serve the dashboard: groups, lag over time, the reset wizard, snapshots, backups, "
     "streaming checkpoints."),
    ("groups", "offsetkeeper.cli.groups", "app", "group",
     "List, describe and delete consumer groups."),
    ("offsets", "offsetkeeper.cli.offsets", "app", "group",
     "Show log offsets; reset or delete committed offsets (dry run by default)."),
    ("snapshots", "offsetkeeper.cli.snapshots", "app", "group",
     "Offset snapshots: create, list, show, diff, verify, rollback, delete."),
    ("backup", "offsetkeeper.cli.backup", "backup_app", "group",
     "Back topics up to Parquet with a manifest (Spark)."),
    ("backups", "offsetkeeper.cli.backup", "backups_app", "group",
     "List, describe and validate backups."),
    ("restore", "offsetkeeper.cli.restore", "restore_app", "group",
     "Restore a backup to a cluster with an exact offset mapping (Spark)."),
    ("mapping", "offsetkeeper.cli.restore", "mapping_app", "group",
     "Show and look up source -> target offset mappings."),
    ("dev-broker", "offsetkeeper.cli.devbroker", "app", "group",
     "Run a local Apache Kafka cluster (KRaft) for development and demos."),
    ("history", "offsetkeeper.cli.history", "app", "group",
     "Offset history: record samples of committed offsets and lag, read them back, plot and "
     "report."),
    ("lag", "offsetkeeper.cli.lag", "app", "group",
     "Consumer lag and status (OK/WARN/ERR, STOP/STALL/REWIND per partition)."),
    ("streaming", "offsetkeeper.cli.streaming", "app", "group",
     "Spark streaming checkpoints with Kafka offsets: show, lag, reset (dry run by default), "
     "roll back, commit to a consumer group."),
    ("lab", "offsetkeeper.cli.lab", "app", "group",
     "Experiments against a real cluster (delivery guarantees)."),
    ("commits", "offsetkeeper.cli.commits", "app", "group",
     "Decode __consumer_offsets into a commit history (Spark) and query it."),
    ("zk", "offsetkeeper.cli.zk", "app", "group",
     "ZooKeeper-era consumer offsets: export them (migrate with 'offsets reset "
     "--from-zookeeper')."),
    ("live-key", "offsetkeeper.cli.live", "app", "group",
     "Signing keys for live resets (offsets reset --live)."),
    ("share-groups", "offsetkeeper.cli.share_groups", "app", "group",
     "List, describe and reset share groups (KIP-932; needs Java)."),
    ("streams-groups", "offsetkeeper.cli.streams_groups", "app", "group",
     "List and describe streams groups (KIP-1071; needs Java)."),
    ("connect", "offsetkeeper.cli.connect", "app", "group",
     "Kafka Connect connectors' offsets: list, show, export/import, reset (dry run by "
     "default), roll back."),
    ("mm2", "offsetkeeper.cli.mm2", "app", "group",
     "MirrorMaker 2: its checkpoints as a failover would use them."),
    ("spark-server", "offsetkeeper.cli.spark_server", "app", "group",
     "The warm local Spark Connect server: backup run, restore run and commits scan start it "
     "on first use and attach to it (skipping the Spark session start); status, stop, or start "
     "it ahead."),
)


def _add(target: typer.Typer, name: str, module: str, attr: str, kind: str) -> None:
    import importlib

    obj = getattr(importlib.import_module(module), attr)
    if kind == "group":
        target.add_typer(obj, name=name)
    elif kind == "command":
        target.command(name)(obj)
    else:
        obj(target)


_full: list[typer.Typer] = []


def _full_app() -> typer.Typer:
    """The app with every command registered (imports every command module)."""
    if not _full:
        full = _new_app()
        for name, module, attr, kind, _ in _COMMANDS:
            _add(full, name, module, attr, kind)
        _full.append(full)
    return _full[0]


def __getattr__(name: str) -> Any:
    # `app` (the whole Typer app, for code that walks it) is built on first use only
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- one manner for every command ---------------------------------------------------------------

# Words shown for option values whose declaration names none (instead of `<str>`, `<int range>`).
_WORDS = {
    "bootstrap": "HOST:PORT[,...]", "cluster": "NAME", "store": "PATH|URL",
    "snapshot_store": "PATH|URL", "group": "GROUP", "groups": "GROUP", "topic": "TOPIC",
    "description": "TEXT", "master": "URL", "conf": "KEY=VALUE", "output": "table|json|csv",
}
_ASCII_INT = re.compile(r"[-+]?[0-9]+")


def _base_annotation(param: Any) -> Any:
    """int for `int`, `int | None` and `list[int]`; the annotation itself otherwise."""
    ann = param.type_descriptor.annotation
    for _ in range(2):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if typing.get_origin(ann) in (list, tuple, typing.Union, types.UnionType) and len(args) == 1:
            ann = args[0]
    return ann


def _word(param: Any) -> str:
    desc = param.type_descriptor
    if desc.is_choice and desc.choices is not None:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if param.name in _WORDS:
        return _WORDS[param.name]
    if _base_annotation(param) in (int, float):
        return "N"
    if desc.is_path:
        return "PATH"
    return (param.name or "value").upper().replace("_", "-")


_MISS = object()


class _Coercion:
    """A parameter's runtime value coercion (Typer's `RuntimeParam` contract).

    Typer coerces every value through a pydantic TypeAdapter it builds per parameter: importing
    pydantic and building the adapters cost ~0.1 s at every start, more than the rest of
    `groups list`. The values a command line holds nearly always are plain: text for a str
    option, a flag, a choice, a path, an integer within its range, a Duration, a default. Those
    are converted here to what Typer's adapter returns for them (tests/unit/test_cli_coercion.py
    compares the two over every parameter of the command tree); any other value — and every
    value Typer would refuse, so its error message stays Typer's own — goes to Typer's runtime
    parameter, built only then.

    Integer parameters accept ASCII digits only (Typer's pydantic coercion takes `1_000` and ` 5`).
    """

    def __init__(self, param: Any) -> None:
        self.descriptor = param.type_descriptor
        self.ascii_ints = _base_annotation(param) is int
        self._typer: Any = None

    @property
    def parameter_info(self) -> Any:
        return self.descriptor.parameter_info

    @property
    def annotation(self) -> Any:
        return self.descriptor.annotation

    def typer_param(self) -> Any:
        """Typer's own runtime parameter (imports pydantic)."""
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self.descriptor)
        return self._typer

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.ascii_ints:
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, str) and not _ASCII_INT.fullmatch(v):
                    # One line, exit 2 (not Click's three-line usage error): like every bad input.
                    name = (getattr(param, "opts", None) or [None])[0] or (param.name or "").upper()
                    raise UsageError(f"{name} {v!r} is not an integer (ASCII digits only)")
        fast = self.fast(value, param, ctx)
        if fast is not _MISS:
            return fast
        try:
            return self.typer_param().coerce(value, param=param, ctx=ctx)
        except typer.BadParameter as exc:
            exc.bad_value = value  # Typer's message may not name it; the one-line error does
            raise

    def fast(self, value: Any, param: Any, ctx: Any) -> Any:
        """What Typer's coercion returns for `value`, or _MISS when Typer is to decide."""
        multi = param.multiple or param.nargs == -1
        if value is None:  # as Typer: no value is None, or () for a multi-value parameter
            return () if multi else None
        ann, info = self.descriptor.annotation, self.descriptor.parameter_info
        if self.descriptor.file_annotation is not None:
            return _MISS
        if typing.get_origin(ann) is list and len(typing.get_args(ann)) == 1:
            if not isinstance(value, (list, tuple)):
                return _MISS
            items = [self._leaf(typing.get_args(ann)[0], info, v, param, ctx) for v in value]
            return _MISS if any(x is _MISS for x in items) else items
        if multi or typing.get_origin(ann) is not None:
            return _MISS
        return self._leaf(ann, info, value, param, ctx)

    @staticmethod
    def _leaf(ann: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
        try:
            if info.parser is not None:
                return info.parser(value)
            if isinstance(ann, type) and issubclass(ann, enum.Enum):
                from typer._param_types import coerce_cli_choice

                return coerce_cli_choice(value, choices=list(ann), case_sensitive=info.case_sensitive,
                                         ctx=ctx)
            if ann is str or ann is bool:
                return value if type(value) is ann else _MISS
            if ann is int:
                if type(value) is str and _ASCII_INT.fullmatch(value) and len(value) < 19:
                    value = int(value)
                if type(value) is not int or info.clamp or (
                        info.min is not None and value < info.min) or (
                        info.max is not None and value > info.max):
                    return _MISS
                return value
            if isinstance(ann, type) and issubclass(ann, pathlib.Path) and info.path_type is None:
                from typer._param_types import coerce_cli_path

                path = ann(value) if type(value) is str and value else value
                if not isinstance(path, ann):
                    return _MISS
                return coerce_cli_path(path, info, path_type=ann, param=param, ctx=ctx)
        except Exception:  # Typer's coercion then decides, with its own error
            return _MISS
        return _MISS


def _own_coercion(param: Any) -> Any:
    if param is not None and hasattr(param, "type_descriptor") and not isinstance(
            param._runtime_param, _Coercion):
        param._runtime_param = _Coercion(param)
    return param


def _click_exceptions() -> Any:
    """Click's exceptions module as Typer uses it (its own copy of Click, or Click itself)."""
    return sys.modules[typer.BadParameter.__module__]


def _harden_parsing(cmd: Any) -> None:
    """Give `cmd` (one command or group, not its children) the stricter parser and, for a
    group, the record of a command name that was not found (for cli/usage.py's line)."""
    if "make_parser" not in vars(cmd):
        def make_parser(ctx: Any, _made: Any = cmd.make_parser) -> Any:
            return _strict(_made(ctx), ctx)

        cmd.make_parser = make_parser
    if hasattr(cmd, "resolve_command") and "resolve_command" not in vars(cmd):
        def resolve_command(ctx: Any, args: list[str], _made: Any = cmd.resolve_command) -> Any:
            try:
                return _made(ctx, args)
            except _click_exceptions().UsageError as exc:
                # Click's "No such command" is a bare UsageError (NoSuchCommand from Click 8.4)
                if type(exc) is _click_exceptions().UsageError and args:
                    exc.command_name = args[0]
                raise

        cmd.resolve_command = resolve_command


def _strict(parser: Any, ctx: Any) -> Any:
    """`parser`, stricter: an option that takes one value, given twice with two different
    values, is bad input (Click keeps the last one silently: `--to-offset 5 --to-offset 6`
    would reset to 6); and its errors carry the command's context (Click's parser raises some
    without one, which could then not name the command)."""
    options = {id(o): o for o in (*getattr(parser, "_long_opt", {}).values(),
                                  *getattr(parser, "_short_opt", {}).values())}
    for option in options.values():
        if option.action == "store":
            option.process = _once(option)
    parse = parser.parse_args

    def parse_args(args: list[str]) -> Any:
        try:
            return parse(args=args)
        except _click_exceptions().UsageError as exc:
            if exc.ctx is None:
                exc.ctx = ctx
            raise

    parser.parse_args = parse_args
    return parser


def _once(option: Any) -> Any:
    def process(value: Any, state: Any, _process: Any = option.process) -> None:
        before = state.opts.get(option.dest, _MISS)
        if before is not _MISS and before != value:
            name = max(option._long_opts or option._short_opts, key=len)
            exc = _click_exceptions().BadOptionUsage(name, f"option {name!r} given twice")
            exc.given_twice = (before, value)
            raise exc
        _process(value, state)

    return process


def _harden(cmd: Any) -> None:
    if "get_help_option" not in vars(cmd):  # --help: an option Click makes when first asked
        def get_help_option(ctx: Any, _made: Any = cmd.get_help_option) -> Any:
            return _own_coercion(_made(ctx))

        cmd.get_help_option = get_help_option
    _harden_parsing(cmd)
    for param in cmd.params:
        if not hasattr(param, "type_descriptor"):
            continue
        _own_coercion(param)
        if param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = _word(param)
        if param.param_type_name == "argument":
            # An argument's name already is its word; Typer would add `<list[str]>` after it.
            param.display_type_rich = lambda ctx: None
    for sub in getattr(cmd, "commands", {}).values():
        _harden(sub)


def command() -> Any:
    """The click command tree of the app, with word metavars and strict integer parsing."""
    cmd = typer.main.get_command(_full_app())
    _harden(cmd)
    return cmd


def _load(name: str) -> Any:
    """The click command `name` of the root, hardened (imports its module only)."""
    for entry_name, module, attr, kind, _ in _COMMANDS:
        if entry_name == name:
            single = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False,
                                 add_completion=False)
            _add(single, name, module, attr, kind)
            cmd = typer.main.get_command(single)
            if kind == "group":  # a Typer with one sub-app is a group holding it
                cmd = cmd.commands[name]
            _harden(cmd)
            return cmd
    return None


def lazy_command() -> Any:
    """The root command as `main` runs it: the same tree as `command()`, each command's module
    imported only when that command is resolved (the root's --help lists them from _COMMANDS)."""
    root = typer.main.get_command(_new_app())
    _harden(root)
    base = type(root)

    class _Lazy(base):  # type: ignore[misc, valid-type]
        # Every usage error of the whole tree passes through these two (the root parses its
        # options in make_context; each subcommand is parsed and run inside invoke): Click's
        # exceptions leave here as one-line OffsetkeeperErrors, which `main` prints.
        def make_context(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().make_context(*args, **kwargs)
            except _click_exceptions().ClickException as exc:
                from offsetkeeper.cli.usage import translate

                raise translate(exc) from exc

        def invoke(self, ctx: Any) -> Any:
            try:
                return super().invoke(ctx)
            except _click_exceptions().ClickException as exc:
                from offsetkeeper.cli.usage import translate

                raise translate(exc) from exc

        def list_commands(self, ctx: Any) -> list[str]:
            return [e[0] for e in _COMMANDS]

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if cmd_name not in self.commands:
                cmd = _load(cmd_name)
                if cmd is None:
                    return None
                self.commands[cmd_name] = cmd
            return self.commands[cmd_name]

        def format_commands(self, ctx: Any, formatter: Any) -> None:
            limit = formatter.width - 6 - max(len(e[0]) for e in _COMMANDS)
            rows = [(e[0], typer.core.TyperCommand(e[0], help=e[4]).get_short_help_str(limit))
                    for e in _COMMANDS]
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    root.__class__ = _Lazy
    return root


def _configure_logging(verbose: bool) -> None:
    """librdkafka's log lines go to the `offsetkeeper.librdkafka` logger: on stderr only with
    --verbose (never mixed into output otherwise)."""
    root = logging.getLogger("offsetkeeper")
    for h in [h for h in root.handlers if getattr(h, "_offsetkeeper", False)]:
        root.removeHandler(h)
    handler: logging.Handler = logging.StreamHandler(sys.stderr) if verbose else logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler._offsetkeeper = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    root.propagate = False


def _verbose(argv: list[str] | None) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return _state["verbose"] or "--verbose" in args or os.environ.get(VERBOSE_ENV) == "1"


def _exit_after_spark_connect(code: int) -> None:
    """End a process that used a Spark Connect session at once: tearing down what the Connect
    client imported (grpc, pandas, pyarrow; their threads and objects) takes 0.1-0.3 s after
    the command's work is done. Exit handlers still run and the output is flushed."""
    if "pyspark.sql.connect.session" not in sys.modules:
        return
    import atexit
    import contextlib

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turn every error into one line on stderr and an exit code."""
    if argv is not None:  # a caller running commands in its own process (tests)
        _run(argv)
        return
    # The program itself. Python's cyclic GC runs every 700 new container objects: importing a
    # command's modules and building a 1,600-row plan made 150 collections, 20-90 ms of a
    # command's CPU, and the objects of a command live until it ends, so collecting that often
    # frees nothing. At exit the interpreter's last collection walks every object once more
    # (~20 ms of `groups list`): they are frozen out of it, as the process ends anyway
    # (atexit handlers and each object's own finalizer still run).
    gc.set_threshold(50_000, *gc.get_threshold()[1:])
    try:
        _run(None)
    finally:
        gc.freeze()


def _run(argv: list[str] | None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # nothing else to parse: no command tree to build
        from offsetkeeper import __version__

        sys.stdout.write(f"offsetkeeper {__version__}\n")
        sys.exit(0)
    _state["verbose"] = False
    _configure_logging(_verbose(argv))
    # options remembered by an earlier command of this process (tests run many); a first command
    # has none, and importing cli.common (pydantic, YAML) here would slow `--help` down
    common = sys.modules.get("offsetkeeper.cli.common")
    if common is not None:
        common.forget_hint_options()
    try:
        lazy_command()(args=argv, prog_name="offsetkeeper")
    except OffsetkeeperError as exc:
        from offsetkeeper.cli.output import say

        if _verbose(argv) and not isinstance(exc.__cause__,
                                             _click_exceptions().ClickException):  # not a bug
            traceback.print_exc()
        say(exc.message, style="bold red", prefix="error:")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        from offsetkeeper.cli.output import say

        say("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # `offsetkeeper groups list | head -1`: the reader left; that is not an error to report.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except SystemExit as exc:
        if argv is None and (exc.code is None or isinstance(exc.code, int)):
            _exit_after_spark_connect(exc.code or 0)
        raise
    except Exception as exc:
        if _verbose(argv):
            traceback.print_exc()
        from offsetkeeper.cli.output import say
        from offsetkeeper.redact import mask_url

        detail = mask_url(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
        say(f"unexpected {type(exc).__name__}{': ' + detail if detail else ''} "
            "(run again with --verbose for the traceback)", style="bold red", prefix="error:")
        sys.exit(1)


if __name__ == "__main__":
    main()

"""The `offsetkeeper` command: a thin layer that parses options, calls the library, renders.

Errors: an `OffsetkeeperError` is one line on stderr and its exit code (2 bad input, 1 failed
operation); anything else is caught too and reported as one line with exit 1 — a Python
traceback reaches the user only with `--verbose`, which also shows librdkafka's own log lines.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import traceback
import types
import typing
from typing import Annotated, Any

import typer

from offsetkeeper.cli.output import say
from offsetkeeper.errors import OffsetkeeperError, UsageError

root = typer.Typer(
    name="offsetkeeper",
    help="See, move, back up and restore Kafka consumer offsets — safely.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)

VERBOSE_ENV = "OFFSETKEEPER_VERBOSE"
_state: dict[str, Any] = {"verbose": False, "only": None}


def _version(value: bool) -> None:
    if value:
        from offsetkeeper import __version__

        sys.stdout.write(f"offsetkeeper {__version__}\n")
        raise typer.Exit()


@root.callback()
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


# Each command's module, and how it is added to the root: a Typer group (`add_typer`), a
# command function (`command`), or a registration function given the root (`hook`).
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "groups": ("offsetkeeper.cli.groups", "app", "typer"),
    "offsets": ("offsetkeeper.cli.offsets", "app", "typer"),
    "snapshots": ("offsetkeeper.cli.snapshots", "app", "typer"),
    "backup": ("offsetkeeper.cli.backup", "backup_app", "typer"),
    "backups": ("offsetkeeper.cli.backup", "backups_app", "typer"),
    "restore": ("offsetkeeper.cli.restore", "restore_app", "typer"),
    "mapping": ("offsetkeeper.cli.restore", "mapping_app", "typer"),
    "dev-broker": ("offsetkeeper.cli.devbroker", "app", "typer"),
    "history": ("offsetkeeper.cli.history", "app", "typer"),
    "lag": ("offsetkeeper.cli.lag", "app", "typer"),
    "exporter": ("offsetkeeper.cli.exporter", "run", "command"),
    "streaming": ("offsetkeeper.cli.streaming", "app", "typer"),
    "demo": ("offsetkeeper.cli.devbroker", "register_demo", "hook"),
    "lab": ("offsetkeeper.cli.lab", "app", "typer"),
    "ui": ("offsetkeeper.cli.ui", "run", "command"),
    "commits": ("offsetkeeper.cli.commits", "app", "typer"),
    "zk": ("offsetkeeper.cli.zk", "app", "typer"),
    "live-key": ("offsetkeeper.cli.live", "app", "typer"),
    "share-groups": ("offsetkeeper.cli.share_groups", "app", "typer"),
    "streams-groups": ("offsetkeeper.cli.streams_groups", "app", "typer"),
}


def _register(names: typing.Iterable[str] | None = None) -> None:
    """Add commands to the root (all when `names` is None). Imported here so each module owns
    its commands, and a run of one command imports that command's module only (`main`)."""
    import importlib

    for name in _COMMANDS if names is None else names:
        if name in _registered:
            continue
        _registered.add(name)
        module, attr, how = _COMMANDS[name]
        obj = getattr(importlib.import_module(module), attr)
        if how == "typer":
            root.add_typer(obj, name=name)
        elif how == "command":
            root.command(name)(obj)
        else:
            obj(root)
    # the order of _COMMANDS in --help, whichever command registered first
    order = {n: i for i, n in enumerate(_COMMANDS)}
    root.registered_groups.sort(key=lambda g: order.get(g.name or "", 0))
    root.registered_commands.sort(key=lambda c: order.get(c.name or "", 0))


_registered: set[str] = set()


def __getattr__(name: str) -> Any:
    # `app`: the root with every command (tests and tools walk it); `main` registers lazily
    if name == "app":
        _register()
        return root
    raise AttributeError(f"module 'offsetkeeper.cli.main' has no attribute {name!r}")
_LEAN_ENV = "OFFSETKEEPER_CLI_ALL_COMMANDS"  # "1": register every command even for one


def _command_named(argv: list[str] | None) -> str | None:
    """The command a command line runs (`groups` of `--verbose groups list`), when it names
    one the root knows and asks for nothing that needs the others (the root's --help); ""
    for --version (no command needed)."""
    args = sys.argv[1:] if argv is None else argv
    for a in args:
        if a == "--version":
            return ""
        if a in ("-h", "--help"):
            return None
        if not a.startswith("-"):
            return a if a in _COMMANDS else None
    return None


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


class _AsciiInts:
    """Runtime coercion of an integer parameter that accepts ASCII digits only (Typer's
    pydantic coercion takes `1_000` and ` 5`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str) and not _ASCII_INT.fullmatch(v):
                # One line, exit 2 (not Click's three-line usage error): like every bad input.
                name = (getattr(param, "opts", None) or [None])[0] or (param.name or "").upper()
                raise UsageError(f"{name} {v!r} is not an integer (ASCII digits only)")
        return self.inner.coerce(value, param=param, ctx=ctx)


def _harden(cmd: Any) -> None:
    for param in cmd.params:
        if not hasattr(param, "type_descriptor"):
            continue
        if _base_annotation(param) is int and not isinstance(param.get_runtime_param(), _AsciiInts):
            param._runtime_param = _AsciiInts(param.get_runtime_param())
        if param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = _word(param)
        if param.param_type_name == "argument":
            # An argument's name already is its word; Typer would add `<list[str]>` after it.
            param.display_type_rich = lambda ctx: None
    for sub in getattr(cmd, "commands", {}).values():
        _harden(sub)


def command() -> Any:
    """The click command tree of the app (every command, or those `main` needs), with word
    metavars and strict integer parsing."""
    _register(_state["only"])
    cmd = typer.main.get_command(root)
    _harden(cmd)
    return cmd


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


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turn every error into one line on stderr and an exit code.

    A command line that names one command registers that command only: `groups list` need not
    import backup, restore, the dashboard and Spark's planning (issue 32: 1 s of imports)."""
    _state["verbose"] = False
    _configure_logging(_verbose(argv))
    try:
        one = _command_named(argv)
        lean = one is not None and os.environ.get(_LEAN_ENV) != "1"
        _state["only"] = ([one] if one else []) if lean else None
        try:
            cmd = command()
        finally:
            _state["only"] = None
        cmd(args=argv, prog_name="offsetkeeper")
    except OffsetkeeperError as exc:
        if _verbose(argv):
            traceback.print_exc()
        say(exc.message, style="bold red", prefix="error:")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # `offsetkeeper groups list | head -1`: the reader left; that is not an error to report.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except SystemExit:
        raise
    except Exception as exc:
        if _verbose(argv):
            traceback.print_exc()
        from offsetkeeper.redact import mask_url

        detail = mask_url(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
        say(f"unexpected {type(exc).__name__}{': ' + detail if detail else ''} "
            "(run again with --verbose for the traceback)", style="bold red", prefix="error:")
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Click's usage errors as one line: the command, what was wrong, what was expected.

Click (the copy Typer ships, or Click itself) prints a usage error as three lines — the usage,
a "Try --help" line, "Error: ..." — and Typer may draw them in a Rich box. offsetkeeper reports
every bad input the same way: one line on stderr, exit 2, e.g.

    error: offsetkeeper offsets reset: no such option '--to-earlist' (did you mean
    '--to-earliest', '--to-latest' or '--to-history'?); see 'offsetkeeper offsets reset --help'

(one line; wrapped here). `cli.main` hands every Click exception of the command tree to
`translate` and prints the `OffsetkeeperError` it returns the way it prints every error. Its
parser hooks (`cli.main._harden_parsing`) leave on Click's exceptions the facts Click does not
keep: the command's context, the command name that was not found (`command_name`), an
option's two values (`given_twice`), the bad value (`bad_value`). Imported only when a
command line is wrong.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import typer

from offsetkeeper.errors import OffsetkeeperError, UsageError

# Click's exceptions module as Typer uses it (its own copy of Click, or Click itself)
_exceptions = sys.modules[typer.BadParameter.__module__]
_UsageError = _exceptions.UsageError


class _Absent(Exception):
    """Stands for an exception class this Click version does not have: nothing is one."""


def _click(name: str) -> Any:
    return getattr(_exceptions, name, _Absent)


def translate(exc: Exception) -> OffsetkeeperError:
    """The error to report for Click's exception `exc`: a usage error is bad input (exit 2), in
    one line naming the command, the bad value and what was expected; any other keeps Click's
    exit code (a file Click could not open: 1)."""
    if isinstance(exc, _UsageError):
        try:
            return UsageError(one_line(exc))
        except Exception:  # a Click this module does not know: its own message, still one line
            return UsageError(_clause(exc.format_message()))
    fmt = getattr(exc, "format_message", None)
    err = OffsetkeeperError(_clause(fmt() if fmt else str(exc)))
    err.exit_code = getattr(exc, "exit_code", 1)
    return err


def one_line(exc: Any) -> str:
    """`offsetkeeper CMD: what was wrong (what was expected); see 'offsetkeeper CMD --help'`."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "offsetkeeper"
    line = f"{path}: {_what(exc, ctx)}"
    helps = list(getattr(ctx, "help_option_names", None) or [])
    return line + (f"; see '{path} {max(helps, key=len)}'" if helps else "")


def _what(exc: Any, ctx: Any) -> str:
    import difflib

    if isinstance(exc, _click("NoArgsIsHelpError")):
        return f"missing command (expected one of {', '.join(_commands(ctx))})"
    name = getattr(exc, "command_name", None)  # set where a command name was not found
    if name is not None:
        near = difflib.get_close_matches(name, _commands(ctx))
        return (f"no such command {name!r} "
                + (f"(did you mean {_either(near)}?)" if near
                   else f"(expected one of {', '.join(_commands(ctx))})"))
    if isinstance(exc, _click("NoSuchOption")):
        return _no_such_option(exc, ctx)
    if isinstance(exc, _click("MissingParameter")) and exc.param is not None:
        kind = getattr(exc, "param_type", None) or exc.param.param_type_name
        if kind == "argument":
            return f"missing argument {_word(exc.param)}"
        return f"missing option {_name(exc.param)}" + (
            f" {exc.param.metavar}" if exc.param.metavar else "")
    if isinstance(exc, _click("BadParameter")):
        return _bad_value(exc)
    if isinstance(exc, _click("BadOptionUsage")):
        twice = getattr(exc, "given_twice", None)
        if twice is not None:
            if _secret(exc.option_name):
                return f"option {exc.option_name!r} given twice with two values (it takes one)"
            return (f"option {exc.option_name!r} given twice, {_shown(twice[0])} and then "
                    f"{_shown(twice[1])} (it takes one value)")
        param = _param(ctx, exc.option_name)
        wants = param is not None and not getattr(param, "is_flag", True) and param.metavar
        return _clause(exc.message) + (f" (expected {param.metavar})" if wants else "")
    message = exc.format_message()
    extra = re.fullmatch(r"Got unexpected extra argument(?:s|\(s\))? \((.*)\)", message)
    if extra is not None and ctx is not None:
        takes = [_word(p) for p in ctx.command.params
                 if p.param_type_name == "argument"]
        return (f"unexpected extra argument {extra.group(1)!r} (expected "
                + (f"only {' '.join(takes)}" if takes else "options only, no arguments") + ")")
    return _clause(message)


def _no_such_option(exc: Any, ctx: Any) -> str:
    text = f"no such option {exc.option_name!r}"
    near = [p for p in (exc.possibilities or []) if p != exc.option_name]
    if near:
        return f"{text} (did you mean {_either(near[:3])}?)"
    if ctx is not None and hasattr(ctx.command, "list_commands"):  # a group
        return (f"{text} (a command's options go after its name: "
                f"{ctx.command_path} COMMAND {exc.option_name} ...)")
    return text


def _bad_value(exc: Any) -> str:
    """`invalid value for --opt: 'x' (why)`; the value is named when Typer's message does not."""
    hint = exc.param_hint
    if hint is not None:
        name = hint if isinstance(hint, str) else "/".join(hint)
    elif exc.param is not None:
        name = _name(exc.param)
    else:
        return f"invalid value: {_clause(exc.message)}"
    if _secret(name):
        return f"invalid value for {name}"
    detail = _clause(exc.message)
    value = getattr(exc, "bad_value", None)
    if isinstance(value, str) and repr(value) not in detail:
        detail = f"{_shown(value)} ({detail})"
    return f"invalid value for {name}: {_masked(detail)}"


# `user:password@` in a value such as a bootstrap address `user:pw@host:9092` (which has no
# scheme, so the `mask_url` every OffsetkeeperError message goes through leaves it)
_USERINFO = r"[^,\s/@'\"]*:[^,\s/@'\"]*@"


def _masked(text: str) -> str:
    from offsetkeeper.redact import MASK

    return re.sub(_USERINFO, f"{MASK}@", text)


def _shown(value: Any) -> str:
    """`value` quoted for the line, a password in it masked."""
    return repr(_masked(str(value)))


def _secret(option: str) -> bool:
    """An option whose values are never shown (`--connect-password`)."""
    from offsetkeeper.redact import is_secret_key

    return is_secret_key(option)


def _name(param: Any) -> str:
    """An option's longest name (`--output` for `-o`/`--output`), an argument's word."""
    if param.param_type_name == "option" and param.opts:
        return max(param.opts, key=len)
    return _word(param)


def _word(param: Any) -> str:
    """An argument's word as help shows it (`DEST/BACKUP_ID`)."""
    return param.metavar or (param.name or "value").upper()


def _param(ctx: Any, option: str) -> Any:
    for param in ctx.command.params if ctx is not None else ():
        if option in getattr(param, "opts", ()) or option in getattr(param, "secondary_opts", ()):
            return param
    return None


def _commands(ctx: Any) -> list[str]:
    command = getattr(ctx, "command", None)
    return list(command.list_commands(ctx)) if hasattr(command, "list_commands") else []


def _either(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _clause(message: str) -> str:
    """Click's or pydantic's sentence as a clause of our line: one line, no pydantic prefix, no
    final period, lower-case start (unless the word is an acronym like ISO)."""
    text = " ".join(str(message).split())
    text = text.removeprefix("Value error, ").rstrip(".")
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        text = text[0].lower() + text[1:]
    return text

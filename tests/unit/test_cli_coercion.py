"""The command line's own value coercion (cli/main.py `_Coercion`) returns exactly what Typer's
pydantic coercion returns, for every parameter of the command tree (issue 32: importing
pydantic for Typer's adapters cost ~0.1 s at every start)."""

from __future__ import annotations

import enum
import pathlib

import pytest
import typer

from offsetkeeper.cli.main import _MISS, _Coercion, command

TEXTS = ["", "x", " a b ", "ä→✓", "--x", "1", "[a/b]", "a,b"]
INTS = ["0", "7", "007", "-3", "+5", "123456789012345678", "1234567890123456789", 0, 5, -1]
PATHS = ["x", "a/b", "./x/", "~/x", "-", " x", "/tmp", "/nonexistent/dir/file", ""]
DURATIONS = ["2h", "30s", "500ms", "PT2H", "300", "0", "forever", "bogus", 30.0]


def _ctx():
    return typer.core.TyperCommand("x").make_context("x", [], resilient_parsing=True)


def _params():
    def walk(cmd, path):
        for p in [*cmd.params, cmd.get_help_option(_ctx())]:
            if isinstance(getattr(p, "_runtime_param", None), _Coercion):
                yield " ".join(path) + " " + p.name, p
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, (*path, name))

    return list(walk(command(), ()))


def _samples(coercion: _Coercion, param) -> list:
    ann, info = coercion.annotation, coercion.parameter_info
    leaf = ann.__args__[0] if getattr(ann, "__origin__", None) is list else ann
    if info.parser is not None:
        values = list(DURATIONS)
    elif isinstance(leaf, type) and issubclass(leaf, enum.Enum):
        values = [*leaf, *(m.value for m in leaf), *(str(m.value).upper() for m in leaf), "bogus"]
    elif leaf is int:
        values = list(INTS)
        if info.min is not None:
            values += [info.min, info.min - 1, str(info.min), str(info.min - 1)]
        if info.max is not None:
            values += [info.max, info.max + 1, str(info.max + 1)]
    elif leaf is bool:
        values = [True, False]
    elif isinstance(leaf, type) and issubclass(leaf, pathlib.Path):
        values = [*PATHS, pathlib.Path("x")]
    else:
        values = list(TEXTS)
    values.append(param.default)
    if leaf is not ann:  # a list: as Click hands over several values
        values = [(), tuple(v for v in values if isinstance(v, str))[:3], ["x"]]
    return [None, *values]


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # an error is an outcome to compare
        return "error", f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize(("where", "param"), _params(), ids=lambda x: x if isinstance(x, str) else "")
def test_own_coercion_returns_what_typer_returns(where, param):
    """Invariant: for every value the command line converts without Typer (`fast`), the result
    (value and type) is the one Typer's pydantic coercion returns; every value the fast path
    leaves to Typer gets Typer's own result or error."""
    coercion: _Coercion = param._runtime_param
    ctx = _ctx()
    for value in _samples(coercion, param):
        fast = _outcome(lambda v=value: coercion.fast(v, param, ctx))
        typer_says = _outcome(lambda v=value: coercion.typer_param().coerce(v, param=param, ctx=ctx))
        if fast == ("ok", _MISS):
            continue
        assert fast[0] == "ok", (where, value, fast)
        assert typer_says[0] == "ok", (where, value, typer_says)
        assert (type(fast[1]), fast[1]) == (type(typer_says[1]), typer_says[1]), (where, value)


def test_plain_values_need_no_typer_coercion():
    """The values a command line usually holds are all converted without Typer's coercion
    (which imports pydantic): text, flags, choices, paths, integers, durations, defaults."""
    by_kind = {}
    for where, param in _params():
        coercion = param._runtime_param
        by_kind.setdefault(repr(coercion.annotation) + str(coercion.parameter_info.parser is not None),
                           (where, param))
    ctx = _ctx()
    missed = []
    for where, param in by_kind.values():
        coercion = param._runtime_param
        for value in [v for v in _samples(coercion, param)
                      if v not in ("bogus", "", "+5", "1234567890123456789", " x", "007")
                      and not (isinstance(v, (int, str)) and _out_of_range(coercion, v))]:
            if _outcome(lambda v=value, c=coercion, p=param: c.typer_param().coerce(v, param=p, ctx=ctx))[0] != "ok":
                continue
            if coercion.fast(value, param, ctx) is _MISS:
                missed.append((where, value))
    assert missed == []
    assert len(by_kind) >= 8, sorted(by_kind)


def _out_of_range(coercion: _Coercion, v) -> bool:
    info = coercion.parameter_info
    try:
        n = int(v)
    except (TypeError, ValueError):
        return False
    return (info.min is not None and n < info.min) or (info.max is not None and n > info.max)

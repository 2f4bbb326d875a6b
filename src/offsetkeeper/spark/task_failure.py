"""Spark task failures carried to the driver as typed values, not as exception text.

A task that raises makes Spark print 60–110 lines of JVM and Python traceback, retry the task,
and hand the driver one long string to parse. Instead, backup and restore tasks run under
`guarded`: an exception inside the task becomes a `TaskFailure` row (the error class, one
sentence, topic/partition) returned like any result; the driver turns the first one back into
the matching `OffsetkeeperError` with `raise_failures`. Deterministic failures (a corrupt file,
an unknown property) are not retried, and Spark logs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from offsetkeeper import errors as E


@dataclass(frozen=True)
class TaskFailure:
    """One failed unit of a Spark task: what failed and why, in one sentence."""

    kind: str                    # the OffsetkeeperError subclass to raise on the driver
    message: str
    topic: str | None = None
    partition: int | None = None

    @classmethod
    def from_exception(cls, exc: BaseException, *, context: str = "") -> TaskFailure:
        if isinstance(exc, E.OffsetkeeperError):
            kind = type(exc).__name__ if hasattr(E, type(exc).__name__) else _nearest(exc)
            msg, topic, partition = exc.message, exc.topic, exc.partition
        else:
            kind, topic, partition = "", None, None
            msg = one_line(exc)
            if context and context not in msg:
                msg = f"{context}: {msg}"
        return cls(kind, msg, topic, partition)

    def error(self, default: type[E.OffsetkeeperError]) -> E.OffsetkeeperError:
        cls = getattr(E, self.kind, None) if self.kind else None
        if not (isinstance(cls, type) and issubclass(cls, E.OffsetkeeperError)):
            cls = default
        try:
            return cls(self.message, topic=self.topic, partition=self.partition)
        except TypeError:  # a subclass with other required arguments
            return default(self.message, topic=self.topic, partition=self.partition)


def _nearest(exc: E.OffsetkeeperError) -> str:
    for base in type(exc).__mro__:
        if hasattr(E, base.__name__):
            return base.__name__
    return "OffsetkeeperError"


def one_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's text, prefixed by its type when unnamed."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    name = type(exc).__name__
    return (f"{name}: {text}" if text and not isinstance(exc, OSError | RuntimeError) else text or name)[:500]


def guarded(task: Callable[..., Iterable[Any]], cfg: Any, specs: Iterator[str], *,
            context: Callable[[str], str] | None = None) -> Iterator[Any]:
    """Run `task(cfg, [spec])` for each spec of a Spark partition; an exception becomes a
    TaskFailure row (and the partition's remaining specs are not started)."""
    out: list[Any] = []
    for spec in specs:
        try:
            out.extend(task(cfg, iter([spec])))
        except Exception as exc:
            out.append(TaskFailure.from_exception(exc, context=context(spec) if context else ""))
            break
    yield from out


def raise_failures(rows: list[Any], default: type[E.OffsetkeeperError], *,
                   suffix: str = "") -> list[Any]:
    """The successful rows; raises the first TaskFailure as an error (others are counted)."""
    failures = [r for r in rows if isinstance(r, TaskFailure)]
    if not failures:
        return rows
    first = failures[0]
    more = f" ({len(failures) - 1} more task(s) failed)" if len(failures) > 1 else ""
    err = first.error(default)
    err.message = f"{first.message}{more}{suffix}"
    err.args = (err.message,)
    raise err

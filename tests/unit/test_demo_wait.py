"""The demo's wait (demo/context.py, wait_until): no fixed clock — it lasts while the awaited
answer or a log changes, and a wait that stood still fails the demo naming the logs to read."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from offsetkeeper.demo.context import DemoContext, Runner, wait_until


def _ctx(tmp_path: Path) -> DemoContext:
    console = Console(file=open(tmp_path / "out.txt", "w"))  # noqa: SIM115 - closed with tmp
    return DemoContext(run=Runner(console, {}), console=console, prod="", work=tmp_path, env={},
                       spark=False, keep=False, stack=ExitStack())


def test_a_wait_that_makes_progress_outlasts_the_idle_limit(tmp_path):
    """Each not-yet answer differs from the last: the wait goes on past `idle` until done."""
    ctx = _ctx(tmp_path)
    answers = iter([*range(8), True])
    assert wait_until(ctx, "counting", lambda: next(answers), idle=0.5)
    assert ctx.run.failures == []


def test_a_wait_that_stands_still_fails_and_names_the_log(tmp_path):
    """The same answer and an unchanged log for `idle` seconds: the demo fails, saying what it
    waited for, the last answer and the log to read."""
    ctx = _ctx(tmp_path)
    log = tmp_path / "worker.log"
    log.write_text("started\n")
    assert not wait_until(ctx, "the worker", lambda: "2 members", logs=(log,), idle=0.5)
    [failure] = ctx.run.failures
    assert "the worker: not reached" in failure and str(log) in failure
    assert "'2 members'" in failure

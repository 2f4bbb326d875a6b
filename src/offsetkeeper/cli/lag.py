"""`offsetkeeper lag status`: Burrow-style consumer status from the history store."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from offsetkeeper.cli.common import OutputOpt
from offsetkeeper.cli.history import StoreOpt
from offsetkeeper.cli.output import OutputFormat, plural, render_json, render_rows, say
from offsetkeeper.ops.history import FailOn

app = typer.Typer(help="Consumer lag and status (OK/WARN/ERR, STOP/STALL/REWIND per partition).",
                  no_args_is_help=True)


@app.command("status")
def status(
    groups: Annotated[list[str] | None, typer.Argument(metavar="[GROUP]...", help="Groups to judge.",
                                                       show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every group in the store.")] = False,
    window: Annotated[int, typer.Option("--window", help="Samples per window (Burrow's intervals).")] = 10,
    allowed_lag: Annotated[int, typer.Option("--allowed-lag", help="Lag that never counts as a "
                                             "problem.")] = 0,
    rewind_lookback: Annotated[int, typer.Option(
        "--rewind-lookback", help="Samples looked back for a rewind: REWIND holds until the "
        "partition passes its offset from before the rewind.")] = 60,
    partitions: Annotated[bool, typer.Option("--partitions", help="One row per partition.")] = False,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 on ERR (default), also on "
                                            "WARN (warn), or on WARN and on INCOMPLETE groups "
                                            "(lag, not enough samples yet: incomplete).")] = FailOn.err,
    store: StoreOpt = None, output: OutputOpt = OutputFormat.table,
) -> None:
    """Judge consumer groups from their last --window samples the way Burrow does (without its
    false alarms on idle topics); exit 1 when any group is ERR, else 3 when any group has no
    verdict yet (INCOMPLETE: lag, and fewer than --window samples), else 0.

    Example: offsetkeeper lag status payments --window 10 || page-oncall
    """
    from offsetkeeper.ops.history import lag_status

    verdicts = lag_status(groups or (), all_groups=all_groups, window=window,
                        allowed_lag=allowed_lag, fail_on=fail_on, store=store,
                        rewind_lookback=rewind_lookback)
    result, failing = verdicts.groups, verdicts.failing
    if output is OutputFormat.json:
        render_json([g.as_dict() for g in result])
    else:
        render_rows(verdicts.rows(partitions=partitions), verdicts.columns(partitions=partitions),
                    output)
    if output is OutputFormat.table:
        counts = Counter(str(g.status) for g in result)
        say(f"{plural(len(result), 'group')}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
            + (f"; exit 1 (--fail-on {fail_on})" if failing else
               f"; exit 3: no verdict yet for {plural(len(verdicts.undecided), 'group')} "
               f"(fewer than {window} samples)" if verdicts.undecided else ""))
    if verdicts.exit_code:
        raise typer.Exit(verdicts.exit_code)

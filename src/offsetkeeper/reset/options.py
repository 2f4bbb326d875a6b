"""How a change of offsets is executed, as the user asked: the one options object every
offset-changing operation carries (reset, delete, rollback, share and streams group resets,
commit-to-group, connector resets through groups, restore's group commits).

The operations layer takes it in its request and the executor takes it as it is inside
`reset.apply.ApplyOptions` (which adds only what a run has: the snapshot function made from the
store named here, the progress callback, a live reset's channel, the snapshot's description);
nothing copies its fields into another object on the way down.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ExecuteOptions:
    """How the executor runs (shared by every offset-changing operation)."""

    max_concurrent: int = 100
    retries: int = 5
    # Overall deadline of the run: groups not finished by then fail with a clear message, so a
    # run against a sick cluster ends instead of retrying for many minutes.
    deadline_s: float | None = 300.0
    # Take a snapshot of the groups about to change, first. The snapshot store: a path or
    # fsspec URL; None = $OFFSETKEEPER_SNAPSHOT_STORE, the config file's `snapshots.store`,
    # else the default directory (resolved by the operations layer, which makes the snapshot
    # function; the executor knows no store).
    snapshot: bool = True
    snapshot_store: str | None = None
    config_path: Path | None = None
    # A member-less group in state "unknown" counts as inactive (brokers without states).
    allow_unknown_state: bool = False
    # Retries back off exponentially with full jitter between 0 and
    # min(backoff_max_s, backoff_base_s * 2**attempt).
    backoff_base_s: float = 0.2
    backoff_max_s: float = 5.0
    # Read every changed group back and compare it with the plan.
    verify: bool = True

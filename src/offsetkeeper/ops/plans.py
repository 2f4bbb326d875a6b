"""The plan book: plan -> show -> confirm with the plan's fingerprint -> execute.

The dashboard previews a change in one request and executes it in another. Between the two the
planned change (`ops.reset.PlannedChange`, made by `prepare_reset` or `prepare_rollback`, the
steps the command line runs) waits here under an unguessable id. Confirming names the id and
the plan's fingerprint; the book hands the change out at most once, within 15 minutes, and only
when the fingerprint is the one shown, and `execute_planned` runs it through the one executor.
The executor re-reads group states and offsets, so a plan confirmed later than it was previewed
cannot act on stale facts: a group that gained members or whose offsets moved is refused,
exactly as with the command line.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

from offsetkeeper.errors import UsageError
from offsetkeeper.ops.reset import PlannedChange

PLAN_TTL_S = 15 * 60
MAX_PLANS = 200


@dataclass
class PlanEntry:
    """A planned change waiting for the user's confirmation, on one cluster."""

    cluster: str
    change: PlannedChange
    created: float = field(default_factory=time.monotonic)

    @property
    def plan(self):
        return self.change.plan

    @property
    def kind(self) -> str:
        return self.change.kind

    @property
    def notes(self) -> tuple[str, ...]:
        return self.change.notes

    @property
    def description(self) -> str:
        return self.change.description


class PlanBook:
    """Planned changes by an unguessable id; each is handed out at most once, within 15 min."""

    def __init__(self) -> None:
        self._plans: dict[str, PlanEntry] = {}
        self._lock = threading.Lock()

    def put(self, cluster: str, change: PlannedChange) -> tuple[str, PlanEntry]:
        """Keep `change` for confirmation; returns its id and entry."""
        pid = secrets.token_urlsafe(16)
        entry = PlanEntry(cluster, change)
        with self._lock:
            self._expire()
            if len(self._plans) >= MAX_PLANS:
                oldest = min(self._plans, key=lambda k: self._plans[k].created)
                del self._plans[oldest]
            self._plans[pid] = entry
        return pid, entry

    def take(self, pid: str, cluster: str, fingerprint: str) -> PlanEntry:
        """The entry confirmed with its `fingerprint` (removed from the book). An unknown,
        expired or already executed id, another cluster, or a fingerprint that is not the
        plan's is refused (exit 2) and the entry, if any, stays."""
        with self._lock:
            self._expire()
            entry = self._plans.get(pid)
            if entry is None or entry.cluster != cluster:
                raise UsageError("this plan is unknown, expired or already executed: preview it "
                                 "again")
            if not fingerprint:
                raise UsageError("confirm the plan with its fingerprint (the form sends it)")
            if not secrets.compare_digest(str(fingerprint), entry.change.fingerprint):
                raise UsageError(f"fingerprint {str(fingerprint)[:40]!r} is not the plan's: "
                                 "preview it again")
            del self._plans[pid]
            return entry

    def _expire(self) -> None:
        now = time.monotonic()
        for k in [k for k, e in self._plans.items() if now - e.created > PLAN_TTL_S]:
            del self._plans[k]

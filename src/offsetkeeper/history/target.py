"""`offsets reset --to-history T`: the committed offsets a group had at T, from the history store.

Returns a `FromOffsets` for the one reset executor (plan, notes, snapshot, --execute). Notes per
partition say which sample was used and flag what an operator should look at: the sample is
older than two sampling intervals, T falls in a recorded gap, or the partition had no commit at
T (it then keeps its latest sampled offset, so the reset does not move it unexpectedly).
"""

from __future__ import annotations

from collections.abc import Sequence

from offsetkeeper.errors import UsageError
from offsetkeeper.history.store import open_store
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.targets import FromOffsets
from offsetkeeper.times import iso_ms, parse_when


def history_target(when: str, *, store_url: str | None = None, groups: Sequence[str] = (),
                   all_groups: bool = False) -> FromOffsets:
    """Offsets of `groups` (or every group in the store) at time `when` (ISO-8601 or a duration ago)."""
    ts = parse_when(when, what="--to-history")
    if not groups and not all_groups:
        raise UsageError("--to-history needs --group GROUP (repeatable) or --all-groups")
    with open_store(store_url) as store:
        names = list(dict.fromkeys(groups)) or [g.group for g in store.groups()]
        offsets: dict[str | None, dict[TopicPartition, int]] = {}
        notes: dict[str | None, dict[TopicPartition, str]] = {}
        for g in names:
            then = store.at(g, ts)
            if not then:
                if all_groups and not groups:
                    continue
                hist = store.series(g)
                raise UsageError(
                    f"history store {store.display_url} has no sample of group '{g}' at or before "
                    f"{iso_ms(ts)}" + (f"; its history starts at {iso_ms(hist[0].ts)}" if hist else ""))
            sample_ts = then[0].ts
            age_s = (ts - sample_ts) / 1000
            base = f"history sample of {iso_ms(sample_ts)} ({age_s:.1f}s before the time)"
            cyc = store.cycles(since=sample_ts, until=sample_ts)
            if cyc and ts - sample_ts > 2 * cyc[0].interval_ms:
                base += f"; older than two sampling intervals ({cyc[0].interval_ms / 1000:g}s)"
            gaps = [x for x in store.gaps(since=sample_ts, until=ts) if x.start <= ts <= x.end]
            if gaps:
                base += f"; the time falls in a gap ({gaps[0].reason})"
            offsets[g] = {s.tp: s.committed for s in then}
            notes[g] = {s.tp: base for s in then}
            for s in store.latest(g):
                if s.tp not in offsets[g]:
                    offsets[g][s.tp] = s.committed
                    notes[g][s.tp] = (f"no commit at {iso_ms(ts)}; kept at the latest sampled "
                                      f"offset ({iso_ms(s.ts)})")
    if not offsets:
        raise UsageError(f"history store has no samples of any group at or before {iso_ms(ts)}")
    return FromOffsets(offsets=offsets, source=f"history at {iso_ms(ts)}", notes=notes)

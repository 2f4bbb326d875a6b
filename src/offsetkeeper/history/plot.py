"""`history plot`: lag and time lag per topic over time as a PNG (matplotlib, Agg backend)."""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

from offsetkeeper.errors import UsageError
from offsetkeeper.history.model import Gap, Sample
from offsetkeeper.storage import write_bytes_atomic


def _plain(text: str) -> str:
    """Names are data: keep matplotlib from reading `$...$` in them as math."""
    return text.replace("$", r"\$")


def time_axis(lo_ms: int, hi_ms: int) -> tuple[str, str]:
    """(strftime format of every tick label, x-axis label) for a time range: one format for
    all ticks, so a label is never a bare day number beside a clock time (matplotlib's concise
    formatter printed `30, 03:29, 30`). Within one UTC day the date goes into the axis label."""
    lo, hi = (datetime.fromtimestamp(x / 1000, UTC) for x in (lo_ms, hi_ms))
    span_s = (hi_ms - lo_ms) / 1000
    if lo.date() == hi.date():
        return ("%H:%M:%S" if span_s < 600 else "%H:%M"), f"time (UTC) on {lo:%Y-%m-%d}"
    if span_s <= 31 * 86400:
        return "%m-%d %H:%M", f"time (UTC), {lo:%Y-%m-%d} to {hi:%Y-%m-%d}"
    return "%Y-%m-%d", "date (UTC)"


def render_png(samples: Sequence[Sample], *, title: str, gaps: Sequence[Gap] = ()) -> bytes:
    """Two panels sharing the time axis: summed lag per topic, and max time lag per topic."""
    fig = _figure(samples, title=title, gaps=gaps)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _figure(samples: Sequence[Sample], *, title: str, gaps: Sequence[Gap] = ()):
    if not samples:
        raise UsageError("nothing to plot: no samples in the time range")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure

    lag: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    tlag: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for s in samples:
        lag[s.topic][s.ts] += s.lag
        tlag[s.topic][s.ts] = max(tlag[s.topic][s.ts], s.time_lag_s)

    def t(ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, UTC)

    fig = Figure(figsize=(10, 6), dpi=100)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for topic in sorted(lag):
        xs = sorted(lag[topic])
        ax1.plot([t(x) for x in xs], [lag[topic][x] for x in xs], marker=".", label=_plain(topic))
        ax2.plot([t(x) for x in xs], [tlag[topic][x] for x in xs], marker=".", label=_plain(topic))
    lo, hi = min(s.ts for s in samples), max(s.ts for s in samples)
    for g in gaps:
        if g.end >= lo and g.start <= hi:
            for ax in (ax1, ax2):
                ax.axvspan(t(max(g.start, lo)), t(min(g.end, hi)), color="grey", alpha=0.25)
    ax1.set_ylabel("lag (records)")
    ax2.set_ylabel("time lag (s)")
    fmt, xlabel = time_axis(lo, hi)
    ax2.set_xlabel(xlabel)
    ax1.set_title(_plain(title))
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    ax1.legend(loc="upper left", fontsize="small")
    locator = mdates.AutoDateLocator(tz=UTC)
    ax2.xaxis.set_major_locator(locator)
    ax2.xaxis.set_major_formatter(mdates.DateFormatter(fmt, tz=UTC))
    if fmt.startswith("%m"):
        fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def plot_history(store, group: str, out: str, *, since: int | None = None,
                 until: int | None = None, topic: str | None = None) -> int:
    """Write the PNG for `group` to `out` (path or fsspec URL); returns the samples plotted."""
    samples = store.series(group, topic=topic, since=since, until=until)
    if not samples:
        from offsetkeeper.history.read import _known

        _known(store, group)
        raise UsageError(f"no samples of group '{group}' in the time range to plot")
    png = render_png(samples, title=f"consumer group {group}", gaps=store.gaps(since, until))
    write_bytes_atomic(out, png, what="plot")
    return len(samples)

"""Charts drawn on the server as SVG: no JavaScript chart library, nothing fetched at run time.

Pure functions: points in, markup out. Every number is formatted by us and every label passes
through `escape`, so a chart can be inserted into a page as-is (Jinja2 `Markup`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from html import escape

from markupsafe import Markup

from offsetkeeper.tables import printable

Point = tuple[float, float]  # (x, y): x is epoch milliseconds for time charts


def _scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    if hi == lo:
        return (a + b) / 2
    return a + (v - lo) * (b - a) / (hi - lo)


def downsample(points: Sequence[Point], max_points: int) -> list[Point]:
    """At most `max_points` points, keeping the maximum of each bucket (a lag peak must stay
    visible when a week is drawn in a few hundred pixels) and the last point."""
    if len(points) <= max_points or max_points < 2:
        return list(points)
    size = len(points) / (max_points - 1)
    out: list[Point] = []
    for i in range(max_points - 1):
        bucket = points[int(i * size):max(int((i + 1) * size), int(i * size) + 1)]
        out.append(max(bucket, key=lambda p: p[1]))
    out.append(points[-1])
    return out


def sparkline(values: Sequence[float], *, width: int = 120, height: int = 24,
              label: str = "") -> Markup:
    """A small line of `values` (oldest first) with the last value marked; empty values give an
    empty placeholder of the same size so table rows line up."""
    return _sparkline(tuple(values), width, height, printable(label))


@lru_cache(maxsize=8192)
def _sparkline(values: tuple[float, ...], width: int, height: int, label: str) -> Markup:
    # Cached: between sampling cycles the groups page draws the same lines again.
    w, h = width, height
    title = f"<title>{escape(label)}</title>" if label else ""
    if not values:
        return Markup(f'<svg class="spark" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
                      f'role="img" aria-label="no history">{title}</svg>')
    lo, hi = min(values), max(values)
    lo = min(lo, 0.0)
    n = len(values)
    pts = [(_scale(i, 0, max(n - 1, 1), 1, w - 3), _scale(v, lo, hi, h - 2, 2))
           for i, v in enumerate(values)]
    if n == 1:
        pts = [(1.0, pts[0][1]), (w - 3.0, pts[0][1])]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    lx, ly = pts[-1]
    return Markup(
        f'<svg class="spark" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="{escape(label or "trend")}">{title}'
        f'<polyline fill="none" stroke="#3b6ea5" stroke-width="1.5" points="{path}"/>'
        f'<circle cx="{lx:.1f}" cy="{ly:.1f}" r="2" fill="#c0392b"/></svg>')


def _fmt_time(ms: float, span_ms: float) -> str:
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%H:%M" if span_ms <= 36 * 3600_000 else "%m-%d %H:%M")


def human_duration(v: float | None) -> str:
    """Seconds as people read them: 45s, 2.5m, 1.2h, 3d (the group header and the time-lag
    chart's axis use this one function, so both speak the same unit)."""
    if v is None:
        return "-"
    for size, suffix in ((86400, "d"), (3600, "h"), (60, "m")):
        if abs(v) >= size:
            return f"{v / size:.1f}".removesuffix(".0") + suffix
    return f"{v:.0f}s"


# Axis steps: offsets and lag are whole numbers (1, 2, 5 x 10^k); durations step in units a
# clock has (seconds, minutes, hours, days).
_DURATION_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                   21600, 43200, 86400)


def axis_step(vmax: float, *, duration: bool = False) -> float:
    """The value between grid lines when a chart's axis shows 0, step and 2 x step >= vmax."""
    need = max(vmax / 2, 1)
    if duration:
        for st in _DURATION_STEPS:
            if st >= need:
                return st
        days = need / 86400
    else:
        days = need
    mag = 10 ** max(0, len(str(int(days))) - 1)
    for m in (1, 2, 5, 10):
        if m * mag >= days:
            return m * mag * (86400 if duration else 1)
    return 10 * mag * (86400 if duration else 1)  # pragma: no cover - the loop always returns


def _fmt_num(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:.1f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.0f}k"
    if v != int(v):
        return f"{v:.1f}"
    return str(int(v))


def time_chart(points: Sequence[Point], *, title: str, unit: str = "",
               since_ms: float | None = None, until_ms: float | None = None,
               width: int = 640, height: int = 180, css_class: str = "chart") -> Markup:
    """A line chart of (epoch ms, value) points with a time axis (UTC) and a value axis from 0.

    The value axis has whole-number ticks (offsets and lag are counts); with
    `unit="duration"` the values are seconds and the ticks read 30s, 5m, 2h.

    `since_ms`/`until_ms` fix the time range (so 1h/24h/7d charts show their whole window even
    when samples cover part of it). No points: a framed chart saying so.
    """
    title = printable(title)  # names in labels escaped as everywhere else (bidi, control)
    left, right, top, bottom = 56, 16, 22, 24
    pw, ph = width - left - right, height - top - bottom
    pts = downsample(sorted(points), max(2, pw // 2))
    t0 = since_ms if since_ms is not None else (pts[0][0] if pts else 0)
    t1 = until_ms if until_ms is not None else (pts[-1][0] if pts else 1)
    if t1 <= t0:
        t1 = t0 + 1
    duration = unit == "duration"
    step = axis_step(max((p[1] for p in pts), default=0.0), duration=duration)
    vmax = 2 * step
    fmt = human_duration if duration else _fmt_num
    shown_unit = "" if duration else unit
    parts = [f'<svg class="{escape(css_class)}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
             f"<title>{escape(title)}</title>",
             f'<text x="{left}" y="14" class="chart-title">{escape(title)}'
             f'{escape(" (" + shown_unit + ")") if shown_unit else ""}</text>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafbfc" '
             f'stroke="#ccd"/>']
    for frac in (0.0, 0.5, 1.0):
        y = top + ph - frac * ph
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                     f'stroke="#e3e6ea"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" '
                     f'class="chart-axis">{escape(fmt(vmax * frac))}</text>')
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + frac * pw
        anchor = "start" if frac == 0 else "end" if frac == 1 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="{anchor}" '
                     f'class="chart-axis">{escape(_fmt_time(t0 + frac * (t1 - t0), t1 - t0))}'
                     "</text>")
    if not pts:
        parts.append(f'<text x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle" '
                     'class="chart-empty">no samples in this range</text>')
    else:
        xy = [(_scale(t, t0, t1, left, left + pw), _scale(v, 0, vmax, top + ph, top))
              for t, v in pts]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        parts.append(f'<polyline class="chart-line" fill="none" stroke="#3b6ea5" '
                     f'stroke-width="1.5" points="{path}"/>')
        if len(xy) == 1:
            parts.append(f'<circle cx="{xy[0][0]:.1f}" cy="{xy[0][1]:.1f}" r="3" fill="#3b6ea5"/>')
    parts.append("</svg>")
    return Markup("".join(parts))

"""Task reports: one small JSON file per range read, for progress displays and manifests."""

from __future__ import annotations

import json

from offsetkeeper.records.ranges import OffsetRange


def report_name(r: OffsetRange) -> str:
    return f"{r.topic}-{r.partition}-{r.start}-{r.end}.json"


def write_report(path: str, r: OffsetRange, *, count: int, first: int | None, last: int | None,
                 gaps: list[tuple[int, int]], first_ts: int | None = None,
                 last_ts: int | None = None) -> None:
    """Write one task's report (atomically) into the directory or URL `path`."""
    from offsetkeeper.storage import join, write_bytes_atomic

    data = json.dumps({"topic": r.topic, "partition": r.partition, "start": r.start, "end": r.end,
                       "records": count, "first_offset": first, "last_offset": last,
                       "first_timestamp": first_ts, "last_timestamp": last_ts,
                       "gaps": [list(g) for g in gaps]}).encode()
    write_bytes_atomic(join(path, report_name(r)), data, what="task report")


def read_reports(path: str) -> list[dict]:
    """All task reports in `path` (one per range; retried tasks overwrite their own)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(path)
    if not fs.exists(root):
        return []
    out = []
    for f in fs.ls(root, detail=False):
        if f.endswith(".json"):
            try:
                with fs.open(f, "rb") as fh:
                    out.append(json.loads(fh.read()))
            except (OSError, ValueError):
                continue
    return out

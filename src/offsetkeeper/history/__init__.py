"""Offset history: sample committed offsets into a store, read them back, judge consumer status.

    sample_cycle.py  one sampling cycle (batched reads through KafkaAdmin + next-record timestamps)
    sampler.py       the long-running loop (gaps, bounded buffer, clean stop, retention)
    store/         HistoryStore backends chosen by URL: SQLite, PostgreSQL, Redis, memory
    status.py      Burrow-style status (OK/WARN/ERR/STOP/STALL/REWIND), pure
    timelag.py     time lag: exact and interpolated, pure, never NaN
    exporter.py    Prometheus metrics with kafka-lag-exporter's names
    plot.py        lag / time-lag PNGs (matplotlib Agg)
    spark_report.py  Parquet export by day and the daily report on Spark
    target.py      `offsets reset --to-history T`: a FromOffsets built from the store
    read.py        rows for `history show` / `history at` / `lag status`
"""

from offsetkeeper.history.model import Cycle, Gap, Sample
from offsetkeeper.history.status import GroupStatus, PartitionStatus, Status, evaluate_status
from offsetkeeper.history.store import HistoryStore, open_store

__all__ = [
    "Cycle",
    "Gap",
    "GroupStatus",
    "HistoryStore",
    "PartitionStatus",
    "Sample",
    "Status",
    "evaluate_status",
    "open_store",
]

"""The backup manifest (format version 1): typed model, atomic save, load, list, and records.

Layout of one backup (docs/design.md)::

    DEST/BACKUP_ID/
      manifest.json                                   written last, atomically
      data/run=N/topic=T/partition=P/part-*.parquet   records of run N (zstd Parquet)

Offsets in the manifest follow Kafka: ranges are ``[start_offset, end_offset)`` and
``end_offset`` is a position (the log end fixed when the run started), never ``start + count``.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from offsetkeeper.backup import checksum as ck
from offsetkeeper.errors import NotFoundError, StoreError, UsageError
from offsetkeeper.storage import write_bytes_atomic
from offsetkeeper.times import iso_now

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"

# The record schema of the backup files and of read_backup_records (Spark DDL).
RECORD_DDL = (
    "topic string, partition int, offset long, timestamp long, timestamp_type int, "
    "key binary, value binary, headers array<struct<key:string,value:binary>>, leader_epoch int"
)
RECORD_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
                  "headers", "leader_epoch")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# A manifest is input: a backup may come from another team, an object store others write to,
# or an attacker. Every number is bounded to what Kafka can hold, every path stays inside the
# backup, and nesting and size are checked before the JSON is parsed.
MAX_OFFSET = 2**63 - 1
MAX_PARTITION = 2**31 - 1
# Kafka has no hard per-topic limit, but no cluster serves a million partitions of one topic: a
# restore would try to create them.
MAX_PARTITION_COUNT = 1_000_000
MAX_MANIFEST_BYTES = 256 * 1024 * 1024
MAX_MANIFEST_DEPTH = 32  # a manifest nests 7 deep; the JSON parser would recurse far deeper
_FILE_RE = re.compile(r"data/[A-Za-z0-9._=/-]{1,1000}")
_BACKUP_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]
Count = Annotated[int, Field(ge=0, le=MAX_OFFSET)]


def check_data_file(rel: str) -> str:
    """A data file path of a segment: relative to the backup directory, under ``data/``, no
    ``..`` or empty parts (a manifest naming another backup's files, or /etc/passwd, is refused)."""
    parts = rel.split("/")
    if not _FILE_RE.fullmatch(rel) or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"data file {rel[:120]!r} is not a path inside the backup's data/ "
                         "directory")
    return rel


class Gap(_Model):
    """Offsets ``[start, end)`` that could not be read (lost to retention during the backup)."""

    start: Offset
    end: Offset
    reason: str = "log start moved past these offsets (retention or delete_records)"


class Segment(_Model):
    """What one run backed up of one partition."""

    run: Count
    start_offset: Offset
    end_offset: Offset
    record_count: Count
    checksum: str = ck.ZERO
    first_offset: Offset | None = None
    last_offset: Offset | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    gaps: list[Gap] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # relative to the backup directory

    _files = field_validator("files")(classmethod(lambda cls, v: [check_data_file(f) for f in v]))


class PartitionEntry(_Model):
    """One partition over all runs: ``[start_offset, end_offset)`` and its totals."""

    partition: int = Field(ge=0, le=MAX_PARTITION)
    start_offset: Offset
    end_offset: Offset
    record_count: Count = 0
    checksum: str = ck.ZERO
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    gaps: list[Gap] = Field(default_factory=list)
    segments: list[Segment] = Field(default_factory=list)

    def recompute_totals(self) -> None:
        """Derive the totals from the segments (count, checksum, timestamps, gaps, range)."""
        segs = sorted(self.segments, key=lambda s: s.start_offset)
        self.segments = segs
        self.record_count = sum(s.record_count for s in segs)
        self.checksum = ck.add(*(s.checksum for s in segs)) if segs else ck.ZERO
        if segs:
            self.start_offset = segs[0].start_offset
            self.end_offset = max(s.end_offset for s in segs)
        with_data = [s for s in segs if s.record_count]
        self.first_timestamp = with_data[0].first_timestamp if with_data else None
        self.last_timestamp = with_data[-1].last_timestamp if with_data else None
        self.gaps = [g for s in segs for g in s.gaps]


class TopicEntry(_Model):
    name: str
    partition_count: int = Field(ge=0, le=MAX_PARTITION_COUNT)
    configs: dict[str, str] = Field(default_factory=dict)  # non-default values only
    partitions: list[PartitionEntry] = Field(default_factory=list)

    _name = field_validator("name")(classmethod(lambda cls, v: check_topic_name(v)))

    def partition(self, p: int) -> PartitionEntry | None:
        return next((e for e in self.partitions if e.partition == p), None)

    @property
    def record_count(self) -> int:
        return sum(p.record_count for p in self.partitions)


_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


def check_topic_name(name: str) -> str:
    """A legal Kafka topic name (it also names directories of the backup: no '/', no '..')."""
    if not _TOPIC_RE.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"topic {name!r} is not a valid Kafka topic name")
    return name


class GroupOffset(_Model):
    topic: str
    partition: int = Field(ge=0, le=MAX_PARTITION)
    offset: int = Field(ge=0, le=MAX_OFFSET)  # the offset of the NEXT record the group reads
    metadata: str = ""

    _topic = field_validator("topic")(classmethod(lambda cls, v: check_topic_name(v)))


class GroupOffsets(_Model):
    """The committed offsets of one consumer group on the backed-up topics."""

    group: str
    captured_at: str
    run: int
    offsets: list[GroupOffset] = Field(default_factory=list)


class RunInfo(_Model):
    run: int
    started_at: str
    finished_at: str
    record_count: int
    partitions: int


class SourceInfo(_Model):
    bootstrap_servers: str
    cluster_id: str = ""


class Manifest(_Model):
    """Everything a backup holds, except the records themselves."""

    format_version: int = FORMAT_VERSION
    backup_id: str

    _backup_id = field_validator("backup_id")(classmethod(lambda cls, v: _check_id_value(v)))
    created_at: str
    updated_at: str
    source: SourceInfo
    isolation_level: str = "read_committed"
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    runs: list[RunInfo] = Field(default_factory=list)
    topics: list[TopicEntry] = Field(default_factory=list)
    groups: list[GroupOffsets] = Field(default_factory=list)

    @model_validator(mode="after")
    def _no_duplicates(self) -> Manifest:
        """A group, a topic, or a group's partition listed twice would be used silently."""
        seen_t: set[str] = set()
        for t in self.topics:
            if t.name in seen_t:
                raise ValueError(f"topic {t.name!r} is listed twice")
            seen_t.add(t.name)
            ps = [p.partition for p in t.partitions]
            if len(ps) != len(set(ps)):
                raise ValueError(f"a partition of topic {t.name!r} is listed twice")
        seen_g: set[str] = set()
        for g in self.groups:
            if g.group in seen_g:
                raise ValueError(f"group {g.group!r} is listed twice")
            seen_g.add(g.group)
            tps = [(o.topic, o.partition) for o in g.offsets]
            if len(tps) != len(set(tps)):
                dup = next(tp for tp in tps if tps.count(tp) > 1)
                raise ValueError(f"group {g.group!r} lists {dup[0]}:{dup[1]} twice")
        return self

    def topic(self, name: str) -> TopicEntry | None:
        return next((t for t in self.topics if t.name == name), None)

    @property
    def record_count(self) -> int:
        return sum(t.record_count for t in self.topics)

    @property
    def last_run(self) -> int:
        seg_runs = (s.run for t in self.topics for p in t.partitions for s in p.segments)
        return max((*(r.run for r in self.runs), *seg_runs), default=0)

    def files(self) -> list[str]:
        """Every data file (relative to the backup directory), in topic/partition/run order."""
        return [f for t in self.topics for p in t.partitions for s in p.segments for f in s.files]

    def end_offsets(self) -> dict[tuple[str, int], int]:
        return {(t.name, p.partition): p.end_offset for t in self.topics for p in t.partitions}

    def group_offsets(self) -> dict[str, dict[tuple[str, int], int]]:
        """group -> (topic, partition) -> committed offset, as captured with the data."""
        return {g.group: {(o.topic, o.partition): o.offset for o in g.offsets} for g in self.groups}


now_iso = iso_now


# -- locations ---------------------------------------------------------------------------------
def _fs(url: str):
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as exc:  # s3:// without s3fs ...: a setup problem, said as one
        from offsetkeeper.redact import mask_url

        raise StoreError(f"cannot open {mask_url(url, known=url)}: a filesystem package is "
                         f"missing ({str(exc)[:200]})") from exc
    except ValueError as exc:
        from offsetkeeper.redact import mask_url

        raise StoreError(f"cannot open {mask_url(url, known=url)}: "
                         f"{mask_url(str(exc)[:200], known=url)}") from exc
    return fs, path


def join(base: str, *parts: str) -> str:
    """Join a local path or URL with relative parts."""
    if "://" in base:
        return posixpath.join(base.rstrip("/"), *parts)
    return posixpath.join(base, *parts)


def backup_dir(destination: str, backup_id: str) -> str:
    validate_backup_id(backup_id)
    return join(destination, backup_id)


def validate_backup_id(backup_id: str) -> None:
    if not _BACKUP_ID_RE.fullmatch(backup_id or ""):
        raise UsageError(f"backup id {str(backup_id)[:80]!r} is invalid: use letters, digits, "
                         "'.', '_', '-' (at most 200, not starting with '.', '_' or '-')")


def _check_id_value(v: str) -> str:
    if not _BACKUP_ID_RE.fullmatch(v):
        raise ValueError(f"backup id {v[:80]!r} is invalid (letters, digits, '.', '_', '-')")
    return v


def json_depth(data: bytes | str, limit: int) -> int:
    """How deep `data` nests JSON arrays and objects, counted up to `limit` + 1 without parsing
    it (string contents are skipped), so a hostile file cannot make the parser recurse."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    stripped = re.sub(rb'"(?:[^"\\]|\\.)*"', b"", raw)
    depth = deepest = 0
    for ch in re.findall(rb"[\[\]{}]", stripped):
        if ch in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        else:
            depth -= 1
    return deepest


# -- save / load -------------------------------------------------------------------------------
def save_manifest(destination: str, manifest: Manifest) -> str:
    """Write the manifest atomically (temp file + rename); returns its location."""
    base = backup_dir(destination, manifest.backup_id)
    write_bytes_atomic(join(base, MANIFEST_NAME), manifest.model_dump_json(indent=2).encode(),
                       fsync=True, what="backup manifest")
    return join(base, MANIFEST_NAME)


def parse_manifest(text: str | bytes, *, where: str = "manifest") -> Manifest:
    """A manifest from its JSON text; StoreError naming the first thing wrong. Nesting is
    bounded before parsing; numbers, paths and ids are checked by the model."""
    if json_depth(text, MAX_MANIFEST_DEPTH) > MAX_MANIFEST_DEPTH:
        raise StoreError(f"{where} nests deeper than {MAX_MANIFEST_DEPTH} levels; not a manifest")
    try:
        raw: Any = json.loads(text)
    except ValueError as exc:  # int_max_str_digits included: a 5,000-digit number
        raise StoreError(f"{where} is not valid JSON: {str(exc)[:200]}") from None
    except RecursionError:
        raise StoreError(f"{where} nests too deeply; not a manifest") from None
    if not isinstance(raw, dict):
        raise StoreError(f"{where} must hold a JSON object")
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        raise StoreError(f"{where} has format_version {version!r}; this offsetkeeper reads {FORMAT_VERSION}")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        msg = msg[:1].lower() + msg[1:300]
        raise StoreError(f"{where}: " + (f"field '{loc}' {msg}" if loc else msg)) from None


def load_manifest(destination: str, backup_id: str) -> Manifest:
    """Load DEST/BACKUP_ID/manifest.json; StoreError when it is missing or corrupt."""
    from offsetkeeper.storage import is_local, read_regular_file

    where = join(backup_dir(destination, backup_id), MANIFEST_NAME)
    fs, path = _fs(where)
    try:
        text = read_regular_file(fs, path, local=is_local(fs), limit=MAX_MANIFEST_BYTES,
                                 what=where)
    except FileNotFoundError:
        raise NotFoundError(f"backup '{backup_id}' not found: {where} does not exist") from None
    except OSError as exc:
        raise StoreError(f"cannot read {where}: {exc.strerror or exc}") from None
    return parse_manifest(text, where=where)


def manifest_exists(destination: str, backup_id: str) -> bool:
    fs, path = _fs(join(backup_dir(destination, backup_id), MANIFEST_NAME))
    return fs.exists(path)


@dataclass(frozen=True)
class BackupEntry:
    """One backup under a destination: its manifest, or (manifest None) why it cannot be read."""

    backup_id: str
    manifest: Manifest | None = None
    error: str | None = None


def list_backups(destination: str) -> list[BackupEntry]:
    """Every backup under `destination` (directories holding a manifest.json), by id. A manifest
    that cannot be read (corrupt, a newer format, an invalid id) is listed with its error,
    never hidden: it is a backup someone may count on."""
    fs, root = _fs(destination)
    if not fs.exists(root):
        raise StoreError(f"backup destination {destination} does not exist")
    out = []
    for entry in sorted(fs.ls(root, detail=False)):
        name = posixpath.basename(entry.rstrip("/"))
        if fs.exists(posixpath.join(entry, MANIFEST_NAME)):
            try:
                out.append(BackupEntry(name, load_manifest(destination, name)))
            except (StoreError, UsageError) as exc:  # NotFoundError: deleted meanwhile
                out.append(BackupEntry(name, error=exc.message))
            except Exception as exc:  # one unreadable backup never hides the others
                out.append(BackupEntry(name, error=f"cannot be read ({type(exc).__name__})"))
    return out


# -- records -----------------------------------------------------------------------------------
def read_backup_records(spark: SparkSession, destination: str, backup_id: str,
                        manifest: Manifest | None = None) -> DataFrame:
    """The records of a backup as a DataFrame with the record schema (incl. topic, partition).

    Only the files the manifest lists are read (a run that did not finish is ignored).
    Sort by (topic, partition, offset) for source order.
    """
    m = manifest or load_manifest(destination, backup_id)
    base = backup_dir(destination, backup_id)
    files = [join(base, f) for f in m.files()]
    if not files:
        return spark.createDataFrame([], RECORD_DDL)
    df = (
        spark.read.schema(f"{RECORD_DDL}, run int")
        .option("basePath", join(base, "data"))
        .parquet(*files)
    )
    return df.select(*RECORD_COLUMNS)

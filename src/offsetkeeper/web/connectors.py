"""Kafka Connect connectors and MirrorMaker 2 reports for the dashboard: read-only, through
ops.connect and ops.mm2 (what `connect list` and `mm2 status` show).

Only workers and MM2 flows from the configuration (`ui.connect`, `ui.mm2`) or the `ui` flags
(`--connect-url`, `--mm2`) are read: the browser never names a URL. A worker that does not
answer, or a cluster that cannot be reached, is one line on the page, never a failed page.
Changing connectors' offsets is left to `offsetkeeper connect reset` (dry run, snapshot,
read-back): the pages show the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.errors import UsageError
from offsetkeeper.ops import connect as ops_connect
from offsetkeeper.ops.itemerr import guarded

# A worker that does not answer costs a page this long at most (per request; the pages read
# the workers one after the other).
WORKER_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class WorkerEntry:
    """A configured Connect worker: its name, REST target (secrets inside, never rendered)
    and the Kafka cluster its sink connectors consume from (None: the default one)."""

    name: str
    target: object = field(repr=False)  # ops.connect.ConnectTarget
    cluster: str | None = None

    @property
    def display_url(self) -> str:
        return self.target.display_url


@dataclass(frozen=True)
class Mm2Entry:
    """A configured MirrorMaker 2 flow: the source alias, the target cluster (where the
    checkpoints are), and optionally the source cluster."""

    name: str
    source_alias: str
    target: str | None = None
    source: str | None = None


def _worker_flag(value: str) -> tuple[str, str]:
    """`--connect-url [NAME=]URL`: a name before '=' unless that part holds ':' or '/'."""
    value = value.strip()
    name, sep, url = value.partition("=")
    if not sep or ":" in name or "/" in name or not name:
        name, url = "", value
    return name, url


def worker_entries(configured, flags: tuple[str, ...], clusters: list[str]
                   ) -> tuple[WorkerEntry, ...]:
    """The workers to show: the config file's (`ui.connect`), then `--connect-url`s. UsageError
    for a malformed URL (masked), a cluster that is not configured or a name given twice."""
    raw = [(c.name, c.url, c.username, c.password, c.ca_file, c.verify, c.cluster)
           for c in configured]
    raw += [(*_worker_flag(f), None, None, None, True, None) for f in flags]
    out, seen = [], set()
    for name, url, user, password, ca, verify, cluster in raw:
        target = ops_connect.connect_target(url, username=user, password=password, ca_file=ca,
                                            verify=verify)
        name = name or _host_port(target.url)
        if cluster is not None and cluster not in clusters:
            raise UsageError(f"Connect worker '{name}': cluster '{cluster}' is not configured "
                             f"(clusters: {', '.join(clusters) or 'none'})")
        if name in seen:
            raise UsageError(f"Connect worker name '{name}' is given twice: name them "
                             "(ui.connect[].name, or --connect-url NAME=URL)")
        seen.add(name)
        out.append(WorkerEntry(name, target, cluster))
    return tuple(out)


def _host_port(url: str) -> str:
    from urllib.parse import urlsplit

    p = urlsplit(url)
    return p.hostname + (f":{p.port}" if p.port else "") if p.hostname else url


def _mm2_flag(value: str) -> Mm2Entry:
    """`--mm2 ALIAS[,target=CLUSTER][,source=CLUSTER][,name=NAME]`."""
    alias, *rest = [p.strip() for p in value.split(",")]
    kw: dict[str, str] = {}
    for part in rest:
        key, sep, val = part.partition("=")
        if not sep or key not in ("target", "source", "name") or not val or key in kw:
            raise UsageError(f"--mm2 '{value}': '{part}' is not target=CLUSTER, source=CLUSTER "
                             "or name=NAME (expected ALIAS[,target=CLUSTER][,source=CLUSTER]"
                             "[,name=NAME])")
        kw[key] = val
    return Mm2Entry(kw.get("name", ""), alias, kw.get("target"), kw.get("source"))


def mm2_entries(configured, flags: tuple[str, ...], clusters: list[str],
                default: str) -> tuple[Mm2Entry, ...]:
    """The MM2 flows to report on: the config file's (`ui.mm2`), then `--mm2`s. UsageError for
    an alias that is not one, an unknown cluster or a name given twice."""
    items = [Mm2Entry(c.name or "", c.source_alias, c.target, c.source) for c in configured]
    items += [_mm2_flag(f) for f in flags]
    out, seen = [], set()
    for e in items:
        if not e.source_alias or "." in e.source_alias or "," in e.source_alias:
            raise UsageError(f"MM2 source alias {e.source_alias!r} is not a cluster alias "
                             "(expected e.g. A)")
        for what, c in (("target", e.target), ("source", e.source)):
            if c is not None and c not in clusters:
                raise UsageError(f"MM2 flow from {e.source_alias}: {what} cluster '{c}' is not "
                                 f"configured (clusters: {', '.join(clusters) or 'none'})")
        name = e.name or f"{e.source_alias}->{e.target or default}"
        if name in seen:
            raise UsageError(f"MM2 flow name '{name}' is given twice: name them "
                             "(ui.mm2[].name, or --mm2 ALIAS,name=NAME)")
        seen.add(name)
        out.append(Mm2Entry(name, e.source_alias, e.target, e.source))
    return tuple(out)


# -- reading ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class WorkerBlock:
    """One worker on the Connectors page: its connectors, or the one line saying why not."""

    index: int
    name: str
    url: str            # masked
    cluster: str
    connectors: list = field(default_factory=list)   # ops.connect.ConnectorView
    error: str | None = None
    cluster_error: str | None = None  # sink connectors shown without log end and lag: why

    def as_dict(self) -> dict:
        return {"index": self.index, "worker": self.name, "url": self.url,
                "cluster": self.cluster, "error": self.error, "cluster_error": self.cluster_error,
                "connectors": [_connector_json(v) for v in self.connectors]}


def _connector_json(v) -> dict:
    d = v.as_dict()
    d["source_offsets"] = [{"partition": e.describe_partition(), "offset": e.describe_offset()}
                           for e in v.offsets] if v.type != "sink" else []
    return d


def list_workers(workers: tuple[WorkerEntry, ...], admin_of, default_cluster: str
                 ) -> list[WorkerBlock]:
    """Every configured worker's connectors with offsets (sink connectors: log end and lag on
    the worker's cluster); a worker or cluster that fails is that block's error."""
    out = []
    for i, w in enumerate(workers):
        cluster = w.cluster or default_cluster

        def read(w=w, cluster=cluster):
            client = ops_connect.connect_client(w.target, timeout=WORKER_TIMEOUT_S)
            admin, admin_err = guarded(lambda: admin_of(cluster), None, what=f"cluster {cluster}")
            return ops_connect.list_connectors(client, admin), admin_err

        (views, admin_err), err = guarded(read, ([], None), what=f"Connect worker {w.name}",
                                          known=w.target.url)
        out.append(WorkerBlock(i, w.name, w.display_url, cluster, views, err, admin_err))
    return out


@dataclass(frozen=True)
class Mm2GroupLine:
    """One group of an MM2 flow: what a failover would do to it, summed over partitions."""

    group: str
    partitions: int
    max_checkpoint_age_s: float | None
    reread: int | None          # records a failover would re-read past the checkpoints
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mm2Block:
    """One MM2 flow on the MM2 page: per group and partition (`mm2 status`), or its error."""

    index: int
    name: str
    source_alias: str
    target: str
    source: str | None
    groups: list[Mm2GroupLine] = field(default_factory=list)
    rows: list = field(default_factory=list)   # ops.mm2.MM2Row
    skipped_records: int = 0
    error: str | None = None

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {"index": self.index, "name": self.name, "source_alias": self.source_alias,
                "target": self.target, "source": self.source, "error": self.error,
                "skipped_records": self.skipped_records,
                "groups": [asdict(g) for g in self.groups],
                "rows": [r.as_dict() for r in self.rows]}


def _group_lines(rows) -> list[Mm2GroupLine]:
    by: dict[str, list] = {}
    for r in rows:
        by.setdefault(r.group, []).append(r)
    out = []
    for g, rs in by.items():
        real = [r for r in rs if r.partition >= 0]
        ages = [r.checkpoint_age_s for r in real if r.checkpoint_age_s is not None]
        rereads = [r.reread_past_checkpoint for r in real]
        out.append(Mm2GroupLine(
            g, len(real), max(ages) if ages else None,
            sum(rereads) if real and None not in rereads else None,
            tuple(dict.fromkeys(r.note for r in rs if r.note))))
    return out


def mm2_reports(flows: tuple[Mm2Entry, ...], admin_of, default_cluster: str) -> list[Mm2Block]:
    """`mm2 status` of every configured flow; a flow whose cluster fails is that block's error."""
    from offsetkeeper.ops import mm2 as ops_mm2

    out = []
    for i, f in enumerate(flows):
        target = f.target or default_cluster

        def read(f=f, target=target):
            source = admin_of(f.source) if f.source else None
            return ops_mm2.mm2_status(admin_of(target), f.source_alias, source_admin=source)

        report, err = guarded(read, None, what=f"MM2 flow {f.name}")
        rows = list(report.rows) if report is not None else []
        out.append(Mm2Block(i, f.name, f.source_alias, target, f.source, _group_lines(rows), rows,
                            report.skipped_records if report is not None else 0, err))
    return out

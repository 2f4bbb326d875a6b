"""Reading ZooKeeper-era offsets with kazoo, and a reset target that migrates them into Kafka.

Layout written by Kafka's old (0.8) high-level consumer:

    /consumers/<group>/offsets/<topic>/<partition>   the committed offset, decimal ASCII
    /consumers/<group>/ids/<consumer id>             ephemeral: one per live consumer
    /consumers/<group>/owners/<topic>/<partition>    which consumer owns the partition

The stored offset is the next offset to read (the old consumer committed its fetch position),
the same meaning as a Kafka-stored committed offset, so it is migrated 1:1.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass, field

from offsetkeeper.errors import (
    GroupActiveError,
    OffsetkeeperError,
    StoreError,
    UnknownGroupError,
    UsageError,
)
from offsetkeeper.models import TopicPartition, offset_problem
from offsetkeeper.reset.targets import FromOffsets

CONSUMERS = "/consumers"
_HOST = r"[A-Za-z0-9_.\-\[\]:]+:\d{1,5}"
_ADDRESS = re.compile(rf"^{_HOST}(,{_HOST})*(/[^\s]*)?$")


@dataclass(frozen=True)
class ZkOffset:
    """One committed offset stored in ZooKeeper."""

    group: str
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class ZkProblem:
    """A node that does not hold what the layout promises (reported, not migrated)."""

    group: str
    path: str
    reason: str


@dataclass
class ZkExport:
    """Everything read for some groups."""

    offsets: list[ZkOffset] = field(default_factory=list)
    problems: list[ZkProblem] = field(default_factory=list)
    live: dict[str, list[str]] = field(default_factory=dict)  # group -> live consumer ids

    def rows(self) -> list[dict]:
        return [{"group": o.group, "topic": o.topic, "partition": o.partition, "offset": o.offset}
                for o in self.offsets]

    def reset_file_lines(self) -> list[str]:
        """The offsets in the --from-file format of `offsets reset` (group,topic,partition,offset;
        no header), quoted by the same writer so that every name reads back exactly."""
        from offsetkeeper.reset.parse import csv_line

        return [csv_line([o.group, o.topic, str(o.partition), str(o.offset)]) for o in self.offsets]


def parse_address(text: str) -> str:
    """Validate `HOST:PORT[,HOST:PORT...][/chroot]` (kazoo's hosts string)."""
    text = (text or "").strip()
    if not _ADDRESS.match(text):
        raise UsageError(f"--zookeeper '{text}' is not HOST:PORT[,HOST:PORT][/chroot], "
                         "e.g. zk1:2181/kafka")
    slash = text.find("/")
    chroot = text[slash:] if slash >= 0 else ""
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise UsageError(f"--zookeeper '{text}': the chroot must look like /path (no trailing or double '/')")
    return text


class _Client:
    """A started kazoo client (read-only), stopped on exit."""

    def __init__(self, address: str, timeout: float) -> None:
        self.address = address
        self.timeout = timeout

    def __enter__(self):
        from offsetkeeper.errors import require_extra

        require_extra("zk", "offsets reset --from-zookeeper")
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError

        # kazoo logs each failed connection attempt; the outcome is reported here, in one sentence.
        logging.getLogger("kazoo.client").setLevel(logging.ERROR)
        self.zk = KazooClient(hosts=self.address, timeout=self.timeout, read_only=True)
        try:
            with warnings.catch_warnings():
                # A chroot that does not exist is answered below ("no consumer offsets").
                warnings.simplefilter("ignore", UserWarning)
                self.zk.start(timeout=self.timeout)
        except KazooTimeoutError:
            self.zk.close()
            raise OffsetkeeperError(f"cannot connect to ZooKeeper at {self.address} within "
                                    f"{self.timeout:g} s; check the address and that it is running") from None
        return self.zk

    def __exit__(self, *exc) -> None:
        self.zk.stop()
        self.zk.close()


def _children(zk, path: str) -> list[str]:
    from kazoo.exceptions import NoNodeError

    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def _read_group(zk, group: str, export: ZkExport) -> bool:
    """Add one group's offsets to `export`; False when the group has no offsets node."""
    from kazoo.exceptions import NoNodeError

    base = f"{CONSUMERS}/{group}/offsets"
    if not zk.exists(base):
        return False
    export.live[group] = _children(zk, f"{CONSUMERS}/{group}/ids")
    for topic in _children(zk, base):
        for part in _children(zk, f"{base}/{topic}"):
            path = f"{base}/{topic}/{part}"
            if not (part.isascii() and part.isdigit()) or len(part) > 10 or int(part) >= 2**31:
                export.problems.append(ZkProblem(group, path, f"partition {part[:40]!r} is not a "
                                                 "partition number (0 <= p < 2^31)"))
                continue
            try:
                data, _stat = zk.get(path)
            except NoNodeError:  # removed while we read: nothing to migrate
                continue
            text = (data or b"").decode("utf-8", "replace").strip()
            if not (text.isascii() and text.lstrip("-").isdigit()):
                export.problems.append(ZkProblem(group, path, f"holds {text[:40]!r}, not an offset"))
                continue
            if len(text.lstrip("-")) > 19:
                # never int() it: Python refuses 4,300+ digits with a ValueError that used to
                # end the whole export; one node is one problem
                export.problems.append(ZkProblem(group, path, f"holds a {len(text)}-digit number "
                                                 "(valid offsets are 0 <= offset < 2^63)"))
                continue
            if (problem := offset_problem(int(text))) is not None:
                export.problems.append(ZkProblem(group, path, f"holds {problem} "
                                                 "(valid offsets are 0 <= offset < 2^63)"))
                continue
            export.offsets.append(ZkOffset(group, topic, int(part), int(text)))
    return True


def read_zk_offsets(address: str, groups: list[str] | tuple[str, ...] = (), *,
                    timeout: float = 10.0) -> ZkExport:
    """Offsets of `groups` (all groups under /consumers when empty) with their live consumers.

    A named group without offsets is an error; so is finding no offsets at all.
    """
    address = parse_address(address)
    for g in groups:
        if not g or "/" in g:
            raise UsageError(f"group '{g}' cannot be a ZooKeeper node name (empty or holds '/')")
    export = ZkExport()
    with _Client(address, timeout) as zk:
        names = list(dict.fromkeys(groups)) or _children(zk, CONSUMERS)
        for g in names:
            if not _read_group(zk, g, export) and groups:
                raise UnknownGroupError(f"group '{g}' has no offsets in ZooKeeper at {address} "
                                        f"({CONSUMERS}/{g}/offsets does not exist)", group=g)
    if not export.offsets and not export.problems:
        raise UnknownGroupError(f"no consumer offsets found under {CONSUMERS} in ZooKeeper at {address}")
    return export


def from_zookeeper(address: str, groups: list[str] | tuple[str, ...], *, timeout: float = 10.0) -> FromOffsets:
    """A reset target holding the ZooKeeper offsets of `groups`, for the one executor.

    Refuses (GroupActiveError) while a group's old consumers are alive: their ephemeral nodes
    under /consumers/<group>/ids exist, and they would keep committing to ZooKeeper.
    """
    if not groups:
        raise UsageError("--from-zookeeper needs --group GROUP (repeatable)")
    export = read_zk_offsets(address, groups, timeout=timeout)
    for g, ids in export.live.items():
        if ids:
            raise GroupActiveError(
                f"group '{g}' still has {len(ids)} live ZooKeeper consumer(s) "
                f"({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}); stop them and run again",
                group=g)
    if export.problems:
        p = export.problems[0]
        raise StoreError(f"ZooKeeper node {p.path} of group '{p.group}' {p.reason}"
                         + (f" (and {len(export.problems) - 1} more)" if len(export.problems) > 1 else ""),
                         group=p.group)
    offsets: dict[str | None, dict[TopicPartition, int]] = {}
    for o in export.offsets:
        offsets.setdefault(o.group, {})[TopicPartition(o.topic, o.partition)] = o.offset
    notes = {g: {tp: "from ZooKeeper" for tp in tps} for g, tps in offsets.items()}
    return FromOffsets(offsets=offsets, source=f"zookeeper {address}", notes=notes)

"""`zk export`: ZooKeeper-era consumer offsets (Kafka < 0.9), read for a migration.

The migration itself is a reset target (`TargetKind.FROM_ZOOKEEPER`, ops.targets).
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.zk.offsets import ZkExport, read_zk_offsets

__all__ = ["ZkExport", "ZkExportRequest", "export_zk_offsets"]


@dataclass(frozen=True)
class ZkExportRequest:
    """Which ZooKeeper (HOST:PORT[,...][/chroot]) and which groups (empty: every group under
    /consumers)."""

    zookeeper: str
    groups: tuple[str, ...] = ()


def export_zk_offsets(req: ZkExportRequest) -> ZkExport:
    """The groups' offsets, the nodes that do not hold one (`problems`), and per group the live
    consumers registered in ZooKeeper (their offsets may still move)."""
    return read_zk_offsets(req.zookeeper, req.groups)

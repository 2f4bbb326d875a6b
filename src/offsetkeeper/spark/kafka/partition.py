"""The input partition of the batch and the streaming reader: one task's offset range (small and
picklable; a module of its own so both readers import it without importing each other)."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition


class KafkaInputPartition(InputPartition):
    """One task: read ``[start, end)`` of one Kafka partition."""

    def __init__(self, index: int, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__(index)
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

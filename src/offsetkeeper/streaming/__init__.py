"""Spark Structured Streaming checkpoints with Kafka offsets: read, show, lag, reset, roll back.

`checkpoint` is the pure model of the files (``metadata``, ``offsets/N``, ``commits/N``,
``sources/``); `store` reads and writes them in a local path or fsspec URL; `ops` holds one
function per user operation (show, lag, plan/execute a reset, rollback, commit to a group).
Works on checkpoints of the ``offsetkeeper-kafka`` source and of Spark's JVM Kafka source.
"""

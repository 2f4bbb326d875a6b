"""Kafka records below the domain: offset ranges (`ranges`), the plain range reader into Arrow
batches (`read`) and task reports (`reports`). The ``offsetkeeper-kafka`` data source, backup,
restore and the sink build on it; it imports no Spark and no domain package."""

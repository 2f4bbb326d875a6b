"""The data pipeline on Apache Spark (PySpark): Kafka data source, sessions, and task failures
carried to the driver as typed values (`task_failure`, used by backup and restore tasks)."""
